"""The quick-start demo: the whole pipeline on one laptop, on embedded defaults.

Run it with ``./dev demo`` (it sets up everything it needs). Steps, each printed as it runs:

1. start the local services (Kafka KRaft, Iceberg REST catalog, S3) unless they already run;
2. produce realistic sensor traffic (``pipelines/demo_feed.py``: 24 sensors with jitter,
   out-of-order and late readings, a few malformed records; three sensors fall silent halfway);
3. run the edge with a user pipeline (``pipelines/demo_pipeline.py``): malformed records go to
   the application's dead-letter topic (the quarantine: original bytes, the reason in headers),
   valid ones get a derived field and a per-sensor sequence number (keyed state), are written to the lake by the data-lake sink (Hive-partitioned Parquet; silent sensors
   reported on a side topic) and averaged per sensor and minute in a tumbling window;
   a progress line shows what the edge has done;
4. ``lakehouse register``: add the edge files to an Iceberg table in the embedded catalog;
5. ``lakehouse compact``: bin-pack the small files;
6. ``lakehouse windows``: recompute 1-minute mean temperatures per sensor in Spark, with the edge's
   window semantics, into a second table;
7. ``lakehouse validate``: check the table against ``pipelines/quality/sensor_readings.json`` with
   Great Expectations (Data Docs in the demo folder);
8. ``lakehouse sql``: query both tables; then a keyed table: a device registry topic (updates,
   decommissions as tombstones; ``pipelines/demo_registry.py``) landed by the edge as a changelog,
   ``lakehouse register``-ed and mirrored by ``lakehouse upsert`` into ``lake.demo.devices``
   (checked against a replay of the registry), joined with the readings in SQL;
9. a report: records in, rows in the lake, quarantined records, silent sensors, windows,
   expectations passed/failed and where the Data Docs are; each figure is checked against what
   the feed sent, and the demo fails if one does not add up.

Options: ``--records N`` (default 4,000), ``--dir DIR`` (default ``.local/demo``),
``--keep-services`` (leave the services running; by default the demo stops what it started).
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import re
import shutil
import sys
import threading
import time
import traceback
import uuid
from dataclasses import dataclass, field
from typing import Any, Callable
from pathlib import Path

from infra.local import services
from pipelines.demo_feed import DemoFeed, sensors_reported
from pipelines.demo_registry import DeviceRegistry, land_registry
from pipelines.demo_screen import filtered_stderr
from pipelines.demo_pipeline import LateReadings

# Silence is measured on the edge's clock (when records arrive), so a processing stall longer
# than the threshold looks like silence: 10 s keeps a loaded laptop or CI machine clear of that.
SILENCE_MS = 10_000


def _step(message: str) -> None:
    print(f"[demo] {message}", flush=True)


class DemoFailed(RuntimeError):
    """A demo step did not produce what it should have."""


# The demo's own clients log warnings only (librdkafka's informational lines are noise here).
_QUIET = {"log_level": 4}


def _produce(bootstrap: str, topic: str, messages: list[tuple[bytes, bytes, int]]) -> None:
    from confluent_kafka import Producer

    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 20, **_QUIET})
    for key, value, timestamp in messages:
        producer.produce(topic, key=key, value=value, timestamp=timestamp)
        producer.poll(0)
    if producer.flush(30):
        raise DemoFailed(f"some demo records were not delivered to {topic}")


def _create_topics(bootstrap: str, *names: str) -> None:
    from confluent_kafka.admin import AdminClient, NewTopic

    admin = AdminClient({"bootstrap.servers": bootstrap, **_QUIET})
    futures = admin.create_topics([NewTopic(n, num_partitions=2, replication_factor=1) for n in names])
    for future in futures.values():
        future.result(30)


def _lake_rows(table_root: Path) -> int:
    """Rows in the published Parquet files (staging folders, which the sink creates and removes
    while it runs, are skipped)."""
    import pyarrow.parquet as pq

    rows = 0
    for folder, dirs, files in os.walk(table_root):
        dirs[:] = [d for d in dirs if not d.startswith(("_", "."))]
        for name in files:
            if name.endswith(".parquet") and not name.startswith(("_", ".")):
                try:
                    rows += pq.ParquetFile(os.path.join(folder, name)).metadata.num_rows
                except FileNotFoundError:  # replaced by a newer commit meanwhile
                    continue
    return rows


def _read_topic(bootstrap: str, topic: str, idle: float = 3.0,
                decode: Callable[[Any], dict] = lambda m: json.loads(m.value())) -> list[dict]:
    """Every record of ``topic`` (``decode``d: JSON values by default), read until ``idle`` seconds
    bring nothing new."""
    from confluent_kafka import Consumer

    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": f"demo-{uuid.uuid4().hex[:6]}",
                         "auto.offset.reset": "earliest", "enable.auto.commit": False, **_QUIET})
    consumer.subscribe([topic])
    records: list[dict] = []
    try:
        last = time.monotonic()
        while time.monotonic() - last < idle:
            batch = [m for m in consumer.consume(500, timeout=0.5) if m.error() is None]
            if batch:
                records += [decode(m) for m in batch]
                last = time.monotonic()
    finally:
        consumer.close()
    return records


@dataclass
class DemoTopics:
    """The demo run's topics (unique per run, so runs never mix)."""

    run_id: str = field(default_factory=lambda: uuid.uuid4().hex[:6])

    @property
    def readings(self) -> str:
        return f"sensor-readings-{self.run_id}"

    @property
    def silence(self) -> str:
        return f"stream-timeouts-{self.run_id}"

    @property
    def quarantine(self) -> str:
        return f"sensor-quarantine-{self.run_id}"

    @property
    def windows(self) -> str:
        return f"temperature-1m-{self.run_id}"


class _Progress:
    """A RunObserver printing a progress line every ``every`` seconds (from the edge's thread)."""

    def __init__(self, total: int, table_root: Path, every: float = 3.0) -> None:
        from stream_edge.processing.observer import RunObserver

        outer = self

        class Observer(RunObserver):
            def on_batch(self, messages, processed, seconds):
                outer.processed += processed
                outer.maybe_print()

            def on_checkpoint(self, seconds, offsets):
                outer.maybe_print()

        self.observer = Observer()
        self.total, self.table_root, self.every = total, table_root, every
        self.processed = 0
        self._next = time.monotonic() + every

    def maybe_print(self) -> None:
        if time.monotonic() >= self._next:
            self._next = time.monotonic() + self.every
            _step(f"edge: {self.processed:,}/{self.total:,} records processed, "
                  f"{_lake_rows(self.table_root):,} rows committed to the lake")


def dead_letter(msg: Any) -> dict:
    """A record of the dead-letter topic as the report reads it: the error headers the runtime
    added (stage, source topic/partition/offset, exception), the problem (the reason's first
    part, see ``MalformedReading``) and the original bytes."""
    from stream_edge.processing.dead_letter import HEADER_PREFIX

    headers = {k[len(HEADER_PREFIX):]: v.decode() for k, v in (msg.headers() or []) if k.startswith(HEADER_PREFIX)}
    reason = headers.get("exception.message", "")
    return {"problem": reason.split(": ", 1)[0], "error": reason, "exception": headers.get("exception.class.name"),
            "topic": headers.get("topic"), "partition": int(headers.get("partition", -1)),
            "offset": int(headers.get("offset", -1)), "raw": msg.value()}


def run_edge(env: dict[str, str], topics: DemoTopics, workdir: Path, feed: DemoFeed, late: Any = None) -> Path:
    """Run the demo pipeline on the edge while the second phase of the feed arrives, until every
    valid record is committed to the lake; ``late`` (a ``LateReadings``) counts the readings the
    window drops as late."""
    from pipelines.demo_pipeline import build
    from pipelines.edge_service import EdgeConfig
    from stream_edge import Application

    edge_env = {
        "KAFKA_BOOTSTRAP": env["KAFKA_BOOTSTRAP"], "EDGE_INPUT_TOPIC": topics.readings,
        "LAKE_STORAGE_URL": (workdir / "lake").as_uri(), "EDGE_STREAM_TIMEOUT_MS": str(SILENCE_MS),
        "EDGE_TIMEOUT_TOPIC": topics.silence, "DEMO_WINDOWS_TOPIC": topics.windows,
    }
    config = EdgeConfig.from_env(edge_env)
    table_root = workdir / "lake" / config.prefix / config.table
    app = Application(broker_address=env["KAFKA_BOOTSTRAP"], consumer_group=f"demo-edge-{topics.run_id}",
                      auto_offset_reset="earliest", commit_interval=1.0, state_dir=str(workdir / "state"),
                      dead_letter_topic=topics.quarantine)
    build(app, edge_env, late)
    progress = _Progress(feed.records, table_root)
    app.add_run_observer(progress.observer)
    failure: list[BaseException] = []

    def serve() -> None:
        try:
            app.run()
        except BaseException as exc:  # noqa: BLE001 - reported by the main thread
            failure.append(exc)

    thread = threading.Thread(target=serve, name="edge", daemon=True)
    thread.start()
    try:
        # The silent sensors' last readings are in the first phase: once the edge has read it, the
        # active sensors keep publishing, in small bursts, for longer than the silence threshold.
        first, second = feed.phases()
        deadline = time.monotonic() + 180
        while time.monotonic() < deadline and not failure and progress.processed < len(first):
            time.sleep(0.2)
        bursts = 12
        for i in range(bursts):
            burst = second[i * len(second) // bursts:(i + 1) * len(second) // bursts]
            _produce(env["KAFKA_BOOTSTRAP"], topics.readings, burst)
            time.sleep(1.5 * SILENCE_MS / 1000 / bursts)
        deadline = time.monotonic() + 180
        while time.monotonic() < deadline and not failure and _lake_rows(table_root) < feed.valid:
            time.sleep(0.5)
    finally:
        # Whatever happened, the edge stops (and closes its clients) before the services do.
        app.stop()
        thread.join(60)
    if failure:
        raise DemoFailed(f"the edge failed: {failure[0]}") from failure[0]
    written = _lake_rows(table_root)
    if written != feed.valid:
        raise DemoFailed(f"the edge committed {written} of the {feed.valid} valid records to {table_root}")
    _step(f"edge: {progress.processed:,}/{feed.records:,} records processed, {written:,} rows in the lake")
    return table_root


class _Tee(io.TextIOBase):
    """Writes to the real stdout and keeps a copy (the jobs' summary lines feed the report)."""

    def __init__(self, out) -> None:
        self.out, self.copy = out, io.StringIO()

    def write(self, text: str) -> int:
        self.copy.write(text)
        return self.out.write(text)

    def flush(self) -> None:
        self.out.flush()


def lakehouse(*argv: str) -> str:
    """Run one ``lakehouse`` command in this process; returns what it printed."""
    from pipelines.cli import main as lakehouse_main

    _step("$ lakehouse " + " ".join(a if " " not in a else repr(a) for a in argv))
    tee = _Tee(sys.stdout)
    with contextlib.redirect_stdout(tee):
        code = lakehouse_main(list(argv))
    if code != 0:
        raise DemoFailed(f"'lakehouse {argv[0]}' exited with {code}")
    return tee.copy.getvalue()


@dataclass
class DemoReport:
    """What the demo checks and prints at the end."""

    records_in: int
    malformed_sent: int
    valid_sent: int
    late_sent: int
    lake_rows: int
    quarantined: list
    silence: dict
    silent_sensors: list
    edge_windows: int
    late_dropped: int
    batch_windows: int
    expectations_passed: int
    expectations_total: int
    data_docs: Path

    def problems(self) -> list[str]:
        """Every figure that does not add up (empty: the run is accounted for)."""
        out = []
        if self.lake_rows != self.valid_sent:
            out.append(f"the lake holds {self.lake_rows} rows, the feed sent {self.valid_sent} valid records")
        if len(self.quarantined) != self.malformed_sent:
            out.append(f"{len(self.quarantined)} records quarantined, the feed sent {self.malformed_sent} malformed")
        foreign = [q for q in self.quarantined if not str(q.get("exception", "")).endswith("MalformedReading")]
        if foreign:
            out.append(f"{len(foreign)} records dead-lettered for another reason, e.g. {foreign[0]['error']!r}")
        for sensor in self.silent_sensors:
            if self.silence.get(sensor) != 1:
                out.append(f"{sensor} went silent and was reported {self.silence.get(sensor, 0)} time(s), not once")
        repeated = sorted(s for s, n in self.silence.items() if n > 1)
        if repeated:
            out.append(f"reported more than once: {repeated}")
        if self.expectations_passed != self.expectations_total:
            out.append(f"expectations {self.expectations_passed}/{self.expectations_total} passed")
        return out

    def lines(self) -> list[str]:
        reasons: dict = {}
        for q in self.quarantined:
            reasons[q["problem"]] = reasons.get(q["problem"], 0) + 1
        return [
            f"records in:          {self.records_in:,} ({self.valid_sent:,} valid, {self.malformed_sent} malformed, "
            f"{self.late_sent} delivered late)",
            f"rows in the lake:    {self.lake_rows:,} (every valid record, late ones included)",
            f"quarantined:         {len(self.quarantined)} on the quarantine topic "
            f"({', '.join(f'{n} x {r}' for r, n in sorted(reasons.items()))})",
            f"silent sensors:      {', '.join(f'{s} (x{self.silence.get(s, 0)})' for s in self.silent_sensors)}",
            f"windows:             {self.edge_windows} closed by the edge (1 min, grace 5 s; {self.late_dropped} late "
            f"readings dropped), "
            f"{self.batch_windows} recomputed in Spark",
            f"expectations:        {self.expectations_passed}/{self.expectations_total} passed",
            f"data docs:           {self.data_docs / 'index.html'}",
        ]


def _figure(pattern: str, text: str, what: str) -> re.Match:
    match = re.search(pattern, text)
    if match is None:
        raise DemoFailed(f"could not read {what} from the job's output")
    return match


def _keyed_table(bootstrap: str, topics: DemoTopics, workdir: Path, feed: DemoFeed, start_ms: int, readings: str,
                 common: list[str]) -> int:
    """The device registry: produced, landed by the edge with tombstones, registered, mirrored
    into ``lake.demo.devices`` by ``lakehouse upsert``, checked against its replay, joined with the
    readings; returns the devices in the table."""
    registry = DeviceRegistry(feed.names, seed=1, start_ms=start_ms)
    topic = f"device-registry-{topics.run_id}"
    _create_topics(bootstrap, topic)
    _produce(bootstrap, topic, registry.messages())  # type: ignore[arg-type]  # tombstones: value None
    _step(f"device registry: {len(registry.changes)} changes to {topic} (registrations, firmware updates, "
          "decommissions as tombstones, a re-registration); the edge lands them with the Kafka metadata")
    root = land_registry(bootstrap, topic, workdir / "registry-lake", f"demo-registry-{topics.run_id}",
                         len(registry.changes))
    lakehouse("register", "--source", root.as_uri(), "--table", "lake.demo.devices_changelog", *common)
    out = lakehouse("upsert", "--source", "lake.demo.devices_changelog", "--table", "lake.demo.devices",
                    "--key-column", "sensor", *common)
    devices = int(_figure(r"rows \d+ -> (\d+)", out, "the keyed table's rows").group(1))
    from pyspark.sql import SparkSession

    spark = SparkSession.getActiveSession()  # the jobs ran in this process
    got = {r["sensor"]: {k: r[k] for k in ("sensor", "site", "model", "firmware")}
           for r in spark.table("lake.demo.devices").collect()} if spark is not None else {}
    expected = registry.expected()
    if devices != len(expected) or (spark is not None and got != expected):
        raise DemoFailed(f"lake.demo.devices holds {devices} devices, not the registry's replay ({len(expected)})")
    lakehouse("sql", "SELECT d.site, count(DISTINCT d.sensor) AS devices, count(*) AS readings, "
              f"round(avg(r.temperature), 2) AS avg_temp FROM {readings} r JOIN lake.demo.devices d "
              "ON r.sensor = d.sensor GROUP BY d.site ORDER BY d.site", *common)
    _step(f"keyed table lake.demo.devices: {devices} devices, as the registry's replay "
          f"({len(registry.changes) - devices} changes superseded or deleted)")
    return devices


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="demo", description=__doc__.split("\n\n")[0])
    parser.add_argument("--records", type=int, default=4000, help="readings to produce (default 4000)")
    parser.add_argument("--dir", type=Path, default=Path(".local/demo"), help="demo working folder")
    parser.add_argument("--keep-services", action="store_true", help="leave the local services running")
    args = parser.parse_args(argv)
    if args.records < 200:
        parser.error("--records must be at least 200")

    t0 = time.monotonic()
    workdir = args.dir.resolve()
    shutil.rmtree(workdir, ignore_errors=True)
    workdir.mkdir(parents=True)
    _step("starting local services (Kafka KRaft, Iceberg REST, S3)...")
    env = services.up()
    started = [s for s in env.pop("_STARTED").split(",") if s]
    # The steps' stderr (Spark's JVM's too) without the JVM's boot notice: pipelines/demo_screen.py.
    screen = contextlib.ExitStack()
    try:
        screen.enter_context(filtered_stderr())
        topics = DemoTopics()
        bootstrap = env["KAFKA_BOOTSTRAP"]
        _create_topics(bootstrap, topics.readings, topics.silence, topics.quarantine, topics.windows)
        start_ms = (int(time.time() * 1000) - args.records * 200) // 1000 * 1000
        feed = DemoFeed(records=args.records, start_ms=start_ms, seed=1)
        first, second = feed.phases()
        _step(f"producing {len(first):,} readings from {feed.sensors} sensors to {topics.readings} "
              f"(jitter, out-of-order and late readings, {feed.malformed} malformed records in the whole feed)")
        _produce(bootstrap, topics.readings, first)
        _step(f"running the edge (pipelines/demo_pipeline.py: quarantine, keyed state, 1-minute window, data-lake "
              f"sink with a {SILENCE_MS} ms silence threshold) while {len(second):,} more readings arrive; "
              f"{', '.join(feed.silent_sensors)} have gone silent")
        late = LateReadings()
        table_root = run_edge(env, topics, workdir, feed, late)
        _step(f"edge: {late.summary()}")
        files = sum(1 for _ in table_root.rglob("*.parquet"))
        _step(f"the edge committed {feed.valid:,} records in {files} Parquet files under {table_root}")
        silence = sensors_reported(_read_topic(bootstrap, topics.silence))
        quarantined = _read_topic(bootstrap, topics.quarantine, decode=dead_letter)
        edge_windows = len(_read_topic(bootstrap, topics.windows))

        # The batch side, on the embedded Iceberg catalog (no server needed).
        os.environ["LAKEHOUSE_LOCAL_DIR"] = str(workdir / "lakehouse")
        common = ["--embedded-catalog", "--quiet"]
        table = "lake.demo.sensor_readings"
        lakehouse("register", "--source", table_root.as_uri(), "--table", table, *common)
        lakehouse("compact", "--table", table, "--target-file-size", "64MB", *common)
        windows = "lake.demo.temperature_1m"
        out = lakehouse("windows", "--table", table, "--output", windows, "--duration", "1m", "--grace", "5s",
                        "--value-column", "temperature", "--timestamp-column", "ts_ms", *common)
        batch_windows = int(_figure(r"-> (\d+) windows", out, "the window count").group(1))
        spec = Path(__file__).resolve().parent / "quality" / "sensor_readings.json"
        docs = workdir / "data-docs"
        out = lakehouse("validate", "--table", table, "--spec", str(spec), "--data-docs-dir", str(docs), *common)
        passed = _figure(r"expectations (\d+)/(\d+) passed", out, "the expectations")
        lakehouse("sql", "SELECT sensor, count(*) AS readings, max(seq) AS last_seq, round(avg(temperature), 2) "
                  "AS avg_temp, min(from_unixtime(ts_ms / 1000)) AS first_seen, max(from_unixtime(ts_ms / 1000)) "
                  f"AS last_seen FROM {table} GROUP BY sensor ORDER BY readings, sensor LIMIT 6", *common)
        lakehouse("sql", "SELECT cast(key AS string) AS sensor, count(*) AS minutes, round(min(value), 2) AS coolest, "
                  f"round(max(value), 2) AS warmest FROM {windows} GROUP BY key ORDER BY sensor LIMIT 6", *common)
        _keyed_table(bootstrap, topics, workdir, feed, start_ms, table, common)
        report = DemoReport(
            records_in=feed.records, malformed_sent=feed.malformed, valid_sent=feed.valid, late_sent=feed.late,
            lake_rows=_lake_rows(table_root), quarantined=quarantined, silence=silence,
            silent_sensors=feed.silent_sensors, edge_windows=edge_windows, late_dropped=late.total,
            batch_windows=batch_windows,
            expectations_passed=int(passed.group(1)), expectations_total=int(passed.group(2)), data_docs=docs)
        _step("report")
        for line in report.lines():
            print(f"  {line}", flush=True)
        problems = report.problems()
        if problems:
            raise DemoFailed("; ".join(problems))
        _step(f"done in {time.monotonic() - t0:.0f}s: Kafka -> edge -> lake -> Iceberg -> windows -> validate -> SQL "
              f"(demo folder {workdir})")
    except DemoFailed as exc:
        if exc.__cause__ is not None:  # a failing step's error in full (the jobs print their own)
            traceback.print_exception(exc.__cause__, file=sys.stderr)
        print(f"[demo] FAILED: {exc}", file=sys.stderr)
        return 1
    finally:
        screen.close()  # what the steps wrote is on the screen before stderr is restored
        if started and not args.keep_services:
            services.down(started)
    return 0


if __name__ == "__main__":
    sys.exit(main())
