"""The quick-start demo: the whole pipeline on one laptop, on embedded defaults.

Run it with ``./dev demo`` (it sets up everything it needs). Steps, each printed as it runs:

1. start the local services (Kafka KRaft, Iceberg REST catalog, S3) unless they already run;
2. produce synthetic sensor readings to a Kafka topic (four sensors; ``sensor-d`` then falls silent);
3. run the edge service (``pipelines.edge_service``: stream_edge + the data-lake sink) which writes
   Hive-partitioned Parquet into a local lake and reports the silent sensor on ``stream-timeouts``;
4. ``lakehouse register``: add the edge files to an Iceberg table in the embedded catalog;
5. ``lakehouse compact``: bin-pack the small files;
6. ``lakehouse windows``: recompute 1-minute mean temperatures per sensor in Spark, with the edge's
   window semantics, into a second table;
7. ``lakehouse validate``: check the table against ``pipelines/quality/sensor_readings.json`` with
   Great Expectations (Data Docs in the demo folder);
8. ``lakehouse sql``: query both tables.

Options: ``--records N`` (default 4,000), ``--dir DIR`` (default ``.local/demo``),
``--keep-services`` (leave the services running; by default the demo stops what it started).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import sys
import threading
import time
import uuid
from pathlib import Path

from infra.local import services

SENSORS = ["sensor-a", "sensor-b", "sensor-c", "sensor-d"]
SILENT = "sensor-d"
SILENCE_MS = 4000


def _step(message: str) -> None:
    print(f"[demo] {message}", flush=True)


class DemoFailed(RuntimeError):
    """A demo step did not produce what it should have."""


def _readings(records: int, sensors: list[str], start_ms: int, seed: int) -> list[tuple[bytes, bytes]]:
    rng = random.Random(seed)
    out = []
    for i in range(records):
        sensor = sensors[i % len(sensors)]
        value = {"sensor": sensor, "ts_ms": start_ms + i * 2000,
                 "temperature": round(20 + rng.gauss(0, 2), 2), "humidity": round(rng.uniform(30, 60), 1)}
        out.append((sensor.encode(), json.dumps(value).encode()))
    return out


def _produce(bootstrap: str, topic: str, messages: list[tuple[bytes, bytes]]) -> None:
    from confluent_kafka import Producer

    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 20})
    for key, value in messages:
        producer.produce(topic, key=key, value=value)
        producer.poll(0)
    if producer.flush(30):
        raise DemoFailed(f"some demo records were not delivered to {topic}")


def _create_topics(bootstrap: str, *names: str) -> None:
    from confluent_kafka.admin import AdminClient, NewTopic

    admin = AdminClient({"bootstrap.servers": bootstrap})
    futures = admin.create_topics([NewTopic(n, num_partitions=2, replication_factor=1) for n in names])
    for future in futures.values():
        future.result(30)


def _lake_rows(table_root: Path) -> int:
    import pyarrow.dataset as ds

    files = [p for p in table_root.rglob("*.parquet") if not any(part.startswith(("_", ".")) for part in p.relative_to(table_root).parts)]
    return sum(ds.dataset(str(f)).count_rows() for f in files)


def _timeout_events(bootstrap: str, topic: str) -> list[dict]:
    from confluent_kafka import Consumer

    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": f"demo-{uuid.uuid4().hex[:6]}",
                         "auto.offset.reset": "earliest", "enable.auto.commit": False})
    consumer.subscribe([topic])
    events: list[dict] = []
    try:
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline and not events:
            events += [json.loads(m.value()) for m in consumer.consume(100, timeout=1.0) if m.error() is None]
    finally:
        consumer.close()
    return events


def run_edge(env: dict[str, str], topic: str, timeout_topic: str, workdir: Path,
             late: list[tuple[bytes, bytes]], records: int) -> Path:
    """Run the edge service while ``late`` readings trickle in, until every record is committed."""
    from pipelines.edge_service import EdgeConfig, build_app

    config = EdgeConfig.from_env({
        "KAFKA_BOOTSTRAP": env["KAFKA_BOOTSTRAP"], "EDGE_INPUT_TOPIC": topic,
        "Quix__Consumer_Group": f"demo-edge-{topic}", "EDGE_STATE_DIR": str(workdir / "state"),
        "LAKE_STORAGE_URL": (workdir / "lake").as_uri(), "EDGE_COMMIT_INTERVAL": "1",
        "EDGE_STREAM_TIMEOUT_MS": str(SILENCE_MS), "EDGE_TIMEOUT_TOPIC": timeout_topic,
    })
    table_root = workdir / "lake" / config.prefix / config.table
    app, side_producer = build_app(config)
    failure: list[BaseException] = []

    def serve() -> None:
        try:
            with side_producer:
                app.run()
        except BaseException as exc:  # noqa: BLE001 - reported by the main thread
            failure.append(exc)

    thread = threading.Thread(target=serve, name="edge", daemon=True)
    thread.start()
    # The other sensors keep publishing for longer than the silence threshold, in small bursts.
    bursts = 12
    for i in range(bursts):
        _produce(env["KAFKA_BOOTSTRAP"], topic, late[i * len(late) // bursts:(i + 1) * len(late) // bursts])
        time.sleep(2 * SILENCE_MS / 1000 / bursts)
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and not failure:
        if table_root.exists() and _lake_rows(table_root) >= records:
            break
        time.sleep(0.5)
    app.stop()
    thread.join(60)
    if failure:
        raise DemoFailed(f"the edge failed: {failure[0]}") from failure[0]
    written = _lake_rows(table_root)
    if written != records:
        raise DemoFailed(f"the edge committed {written} of {records} records to {table_root}")
    return table_root


def lakehouse(*argv: str) -> None:
    from pipelines.cli import main as lakehouse_main

    _step("$ lakehouse " + " ".join(a if " " not in a else repr(a) for a in argv))
    code = lakehouse_main(list(argv))
    if code != 0:
        raise DemoFailed(f"'lakehouse {argv[0]}' exited with {code}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="demo", description=__doc__.split("\n\n")[0])
    parser.add_argument("--records", type=int, default=4000, help="readings to produce (default 4000)")
    parser.add_argument("--dir", type=Path, default=Path(".local/demo"), help="demo working folder")
    parser.add_argument("--keep-services", action="store_true", help="leave the local services running")
    args = parser.parse_args(argv)
    if args.records < len(SENSORS):
        parser.error(f"--records must be at least {len(SENSORS)}")

    t0 = time.monotonic()
    workdir = args.dir.resolve()
    shutil.rmtree(workdir, ignore_errors=True)
    workdir.mkdir(parents=True)
    _step("starting local services (Kafka KRaft, Iceberg REST, S3)...")
    env = services.up()
    started = [s for s in env.pop("_STARTED").split(",") if s]
    try:
        run_id = uuid.uuid4().hex[:6]
        topic, timeout_topic = f"sensor-readings-{run_id}", f"stream-timeouts-{run_id}"
        _create_topics(env["KAFKA_BOOTSTRAP"], topic, timeout_topic)
        start_ms = (int(time.time() * 1000) - args.records * 2000) // 1000 * 1000
        first = args.records // 2
        _step(f"producing {first} readings from {len(SENSORS)} sensors to {topic}")
        _produce(env["KAFKA_BOOTSTRAP"], topic, _readings(first, SENSORS, start_ms, seed=1))
        rest = _readings(args.records - first, [s for s in SENSORS if s != SILENT], start_ms + first * 2000, seed=2)
        _step(f"running the edge (stream_edge + data-lake sink, silence threshold {SILENCE_MS} ms) while "
              f"{len(rest)} more readings arrive from every sensor but {SILENT}, which has gone silent")
        table_root = run_edge(env, topic, timeout_topic, workdir, rest, args.records)
        files = sum(1 for _ in table_root.rglob("*.parquet"))
        _step(f"the edge committed {args.records} records in {files} Parquet files under {table_root}")
        events = _timeout_events(env["KAFKA_BOOTSTRAP"], timeout_topic)
        _step(f"silence events on {timeout_topic}: {events}")
        # The silent sensor fires first; the others can only follow once the demo's feed has ended.
        if not events or events[0].get("stream") != SILENT:
            raise DemoFailed(f"expected the first stream_timeout event to be for {SILENT}; got {events}")

        # The batch side, on the embedded Iceberg catalog (no server needed).
        os.environ["LAKEHOUSE_LOCAL_DIR"] = str(workdir / "lakehouse")
        common = ["--embedded-catalog", "--quiet"]
        table = "lake.demo.sensor_readings"
        lakehouse("register", "--source", table_root.as_uri(), "--table", table, *common)
        lakehouse("compact", "--table", table, "--target-file-size", "64MB", *common)
        windows = "lake.demo.temperature_1m"
        lakehouse("windows", "--table", table, "--output", windows, "--duration", "1m",
                  "--value-column", "temperature", "--timestamp-column", "ts_ms", *common)
        spec = Path(__file__).resolve().parent / "quality" / "sensor_readings.json"
        lakehouse("validate", "--table", table, "--spec", str(spec), "--data-docs-dir", str(workdir / "data-docs"),
                  *common)
        lakehouse("sql", "SELECT sensor, count(*) AS readings, round(avg(temperature), 2) AS avg_temp, "
                  "min(from_unixtime(ts_ms / 1000)) AS first_seen, max(from_unixtime(ts_ms / 1000)) AS last_seen "
                  f"FROM {table} GROUP BY sensor ORDER BY sensor", *common)
        lakehouse("sql", f"SELECT hour, count(*) AS readings FROM {table} GROUP BY hour ORDER BY hour", *common)
        lakehouse("sql", "SELECT cast(key AS string) AS sensor, count(*) AS minutes, round(min(value), 2) AS coolest, "
                  f"round(max(value), 2) AS warmest FROM {windows} GROUP BY key ORDER BY sensor", *common)
        _step(f"done in {time.monotonic() - t0:.0f}s: Kafka -> edge -> lake -> Iceberg -> windows -> validate -> SQL "
              f"(demo folder {workdir})")
    except DemoFailed as exc:
        print(f"[demo] FAILED: {exc}", file=sys.stderr)
        return 1
    finally:
        if started and not args.keep_services:
            services.down(started)
    return 0


if __name__ == "__main__":
    sys.exit(main())
