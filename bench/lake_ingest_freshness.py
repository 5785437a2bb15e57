"""Freshness of ``bench/lake_ingest.py --freshness``: produce time to visible in the table, per contender.

    ./dev bench lake_ingest --freshness                         # 60 s at 20,000 rows/s per contender
    ./dev bench lake_ingest --freshness --fresh-seconds 30 --only edge-iceberg,kafka-connect

Each contender runs continuously on its own fresh 24-partition topic (the edge with ``--follow``;
Spark Structured Streaming with a processing-time trigger; the Connect worker with its commit
interval; ``edge-datalake`` is the edge plus ``lakehouse register`` run on a schedule, and
``edge-datalake-inline`` the data-lake sink registering each commit itself). A warm-up trickle
(negative ids) runs until the first row is visible, so JVM start-up is not counted; then a paced
producer sends ``--fresh-rate`` readings per second for ``--fresh-seconds``, each stamped with its
produce time in ``ts_ms``. A poller loads the table every ``--fresh-poll`` seconds; for every new
snapshot it reads the ``id, ts_ms`` columns of the data files that snapshot added, and each row's
latency is the time the poller first saw the snapshot minus ``ts_ms`` (so the figures include up
to one poll interval). p50/p99/max over every steady-phase row; rows not visible within the drain
time are reported as missing.
"""

from __future__ import annotations

import os
import signal
import subprocess
import threading
import time
from pathlib import Path
from typing import Any, Callable, Dict, List, Optional

import orjson

from lake_ingest_data import PARTITIONS, SENSORS

FRESH_CONTENDERS = ("edge-datalake", "edge-datalake-inline", "edge-iceberg", "spark", "kafka-connect")


def stamped(i: int, now_ms: int) -> tuple:
    """(partition, key, JSON value) of steady-phase reading ``i`` produced at ``now_ms``."""
    sensor = (i * 7) % SENSORS if i >= 0 else (-i) % SENSORS
    value: Dict[str, Any] = {"id": i, "sensor": f"sensor-{sensor:03d}", "ts_ms": now_ms, "temp": 20.0 + (i % 100) / 10,
             "hum": 50.0 + (i % 50) / 10}
    return sensor % PARTITIONS, value["sensor"].encode(), orjson.dumps(value)


class PacedProducer:
    """Sends readings at ``rate`` per second in 10 ms slices, each stamped with its produce time."""

    def __init__(self, bootstrap: str, topic: str) -> None:
        from confluent_kafka import Producer

        self.topic = topic
        self.producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5,
                                  "queue.buffering.max.messages": 500_000})
        self.sent = 0

    def send(self, i: int) -> None:
        partition, key, value = stamped(i, int(time.time() * 1000))
        while True:
            try:
                self.producer.produce(self.topic, value, key, partition=partition)
                return
            except BufferError:
                self.producer.poll(0.05)

    def trickle(self, until: Callable[[], bool], timeout: float) -> bool:
        """Warm-up: one reading per partition-ish (negative ids) every second until ``until()``."""
        deadline, k = time.time() + timeout, 0
        while time.time() < deadline:
            for _ in range(PARTITIONS):
                k += 1
                self.send(-k)
            self.producer.flush(5)
            if until():
                return True
            time.sleep(1.0)
        return False

    def steady(self, rate: int, seconds: float) -> int:
        """``rate`` readings/s for ``seconds``; returns how many were sent (ids 0..n-1)."""
        start, i = time.time(), 0
        while True:
            elapsed = time.time() - start
            if elapsed >= seconds:
                break
            due = int(elapsed * rate) + 1
            while i < due:
                self.send(i)
                i += 1
            self.producer.poll(0)
            time.sleep(0.01)
        self.producer.flush(30)
        self.sent = i
        return i


class Poller(threading.Thread):
    """Watches a table's snapshots; records (id, ts_ms, visible_ms) of the rows each one added."""

    def __init__(self, catalog: Any, table: str, interval: float) -> None:
        super().__init__(daemon=True)
        self.catalog, self.table, self.interval = catalog, table, interval
        self.seen_snapshots: set = set()
        self.ids: List[Any] = []
        self.latencies: List[Any] = []
        self.rows = 0
        self.steady_rows = 0
        self.commits = 0
        self.errors: List[str] = []
        self._halt = threading.Event()

    def stop(self) -> None:
        self._halt.set()
        self.join(timeout=30)

    def run(self) -> None:
        while not self._halt.is_set():
            try:
                self.poll()
            except Exception as exc:  # noqa: BLE001 - table not created yet, a catalog hiccup
                if "NoSuchTable" not in type(exc).__name__ and len(self.errors) < 5:
                    self.errors.append(f"{type(exc).__name__}: {exc}")
            self._halt.wait(self.interval)

    def poll(self) -> None:
        import pyarrow.compute as pc
        import pyarrow.parquet as pq
        from pyiceberg.manifest import ManifestEntryStatus

        table = self.catalog.load_table(self.table)
        seen_ms = int(time.time() * 1000)
        new, snapshot = [], table.current_snapshot()
        while snapshot is not None and snapshot.snapshot_id not in self.seen_snapshots:
            new.append(snapshot)
            parent = snapshot.parent_snapshot_id
            snapshot = table.snapshot_by_id(parent) if parent is not None else None
        for snap in reversed(new):
            self.seen_snapshots.add(snap.snapshot_id)
            added = 0
            for manifest in snap.manifests(table.io):
                if manifest.added_snapshot_id != snap.snapshot_id:
                    continue
                for entry in manifest.fetch_manifest_entry(table.io):
                    if entry.status != ManifestEntryStatus.ADDED:
                        continue
                    with table.io.new_input(entry.data_file.file_path).open() as handle:
                        data = pq.read_table(handle, columns=["id", "ts_ms"])
                    steady = data.filter(pc.greater_equal(data.column("id"), 0))
                    self.ids.append(steady.column("id").to_numpy())
                    self.latencies.append(seen_ms - steady.column("ts_ms").to_numpy())
                    added += data.num_rows
                    self.steady_rows += steady.num_rows
            if added:
                self.rows += added
                self.commits += 1

    def summary(self, sent: int) -> Dict[str, Any]:
        import numpy as np

        lat = np.concatenate(self.latencies) if self.latencies else np.array([], dtype=np.int64)
        ids = np.concatenate(self.ids) if self.ids else np.array([], dtype=np.int64)
        distinct = int(np.unique(ids).size)
        out: Dict[str, Any] = {"sent": sent, "visible": int(ids.size), "missing": sent - distinct,
                               "duplicates": int(ids.size) - distinct, "commits": self.commits}
        if lat.size:
            out.update(p50_s=float(np.percentile(lat, 50)) / 1000, p99_s=float(np.percentile(lat, 99)) / 1000,
                       max_s=float(lat.max()) / 1000)
        return out


def _stop_group(proc: subprocess.Popen, grace: float = 30.0) -> None:
    """SIGTERM the process group this bench started (its JVMs included), then SIGKILL."""
    if proc.poll() is not None:
        return
    try:
        os.killpg(proc.pid, signal.SIGTERM)
        proc.wait(timeout=grace)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
    except ProcessLookupError:
        pass


class Contender:
    """A running contender: ``start()`` then ``stop()``; ``table`` is what the poller watches."""

    def __init__(self, name: str, table: str, procs: Optional[List[subprocess.Popen]] = None,
                 schedule: str = "", on_stop: Optional[Callable[[], None]] = None) -> None:
        self.name, self.table, self.procs, self.schedule = name, table, procs or [], schedule
        self._on_stop = on_stop

    def exited(self) -> bool:
        """Whether a process of the contender has ended (it should run until stopped)."""
        return any(proc.poll() is not None for proc in self.procs)

    def stop(self) -> None:
        if self._on_stop is not None:
            self._on_stop()
        for proc in self.procs:
            _stop_group(proc)


def _spawn(cmd: List[str], env: Dict[str, str], cwd: Path, log: Path) -> subprocess.Popen:
    return subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=open(log, "ab"), cwd=cwd, env=env,
                            start_new_session=True)


def register_loop(cmd: List[str], env: Dict[str, str], cwd: Path, every: float, log: Path) -> Callable[[], None]:
    """Run ``cmd`` (``lakehouse register``) every ``every`` s, back to back when a run takes longer;
    returns a function that stops the loop (and a run in progress)."""
    stop = threading.Event()
    current: Dict[str, subprocess.Popen] = {}

    def loop() -> None:
        while not stop.is_set():
            began = time.time()
            current["p"] = _spawn(cmd, env, cwd, log)
            current["p"].wait()
            stop.wait(max(0.0, every - (time.time() - began)))

    thread = threading.Thread(target=loop, daemon=True)
    thread.start()

    def halt() -> None:
        stop.set()
        if "p" in current:
            _stop_group(current["p"])
        thread.join(timeout=60)

    return halt


def measure(contender: Contender, producer: PacedProducer, poller: Poller, rate: int, seconds: float,
            warmup_timeout: float, drain: float) -> Dict[str, Any]:
    """Warm up, send the steady phase, wait for it to be visible; the figures of one contender."""
    poller.start()
    try:
        if not producer.trickle(lambda: poller.rows > 0 or contender.exited(), warmup_timeout) or contender.exited():
            return {"error": f"no row visible within {warmup_timeout:.0f} s of warm-up (process exited: "
                             f"{contender.exited()}); see the contender's log; {poller.errors[:2]}"}
        warm_commits = poller.commits
        sent = producer.steady(rate, seconds)
        deadline = time.time() + drain
        while time.time() < deadline and poller.steady_rows < sent:
            time.sleep(0.5)
        time.sleep(poller.interval * 2)
    finally:
        try:
            poller.stop()
        finally:
            contender.stop()
    out = poller.summary(sent)
    out.update(commits=poller.commits - warm_commits, schedule=contender.schedule, rate=rate, seconds=seconds)
    return out


def print_table(results: Dict[str, Dict[str, Any]], rate: int, seconds: float, poll: float) -> None:
    print(f"\nfreshness: produce -> visible in the table, {rate:,} rows/s for {seconds:.0f} s "
          f"(poll every {poll:g} s, included)")
    print(f"{'contender':<21} {'p50 s':>7} {'p99 s':>7} {'max s':>7} {'commits':>8} {'missing':>8}  schedule")
    for name, r in results.items():
        if "error" in r:
            print(f"{name:<21} {r['error']}")
            continue
        print(f"{name:<21} {r.get('p50_s', float('nan')):>7.2f} {r.get('p99_s', float('nan')):>7.2f} "
              f"{r.get('max_s', float('nan')):>7.2f} {r['commits']:>8} {r['missing']:>8}  {r['schedule']}")


def start(name: str, li: Any, env: Dict[str, str], topic: str, tag: str, work: Path, args: Any) -> Contender:
    """Start contender ``name`` on ``topic``; ``li`` is ``bench/lake_ingest.py`` (its helpers)."""
    ns = li.NAMESPACE
    log = work / f"fresh-{name}.log"
    root = li.ROOT
    if name in ("edge-datalake", "edge-datalake-inline"):
        lake = work / f"fresh-lake-{name}"
        inline = name.endswith("inline")
        table = f"fresh_{'inline' if inline else 'datalake'}_{tag}"
        cmd = li.edge_cmd(env, topic, f"fresh-{name}-{tag}", "datalake", table, lake.as_uri(),
                          args.commit_interval) + ["--follow"]
        if inline:
            cmd += ["--catalog-uri", env["ICEBERG_REST_URI"], "--register-namespace", ns]
            return Contender(name, f"{ns}.{table}", [_spawn(cmd, env, root, log)],
                             f"edge checkpoint {args.commit_interval:g} s, the sink registers once per checkpoint")
        proc = _spawn(cmd, env, root, log)
        reg = [str(root / ".venv" / "bin" / "lakehouse"), "register", "--source", (lake / table).as_uri(),
               "--table", f"lake.{ns}.{table}", "--catalog-uri", env["ICEBERG_REST_URI"], "--quiet"]
        halt = register_loop(reg, dict(env, LAKEHOUSE_LOCAL_DIR=str(work / "lakehouse")), root,
                             args.register_every, log)
        return Contender(name, f"{ns}.{table}", [proc], f"edge checkpoint {args.commit_interval:g} s + "
                         f"lakehouse register every {args.register_every:g} s (back to back if longer)", halt)
    if name == "edge-iceberg":
        table = f"{ns}.fresh_iceberg_{tag}"
        li.create_lake_table(li.catalog(env), table)
        cmd = li.edge_cmd(env, topic, f"fresh-ice-{tag}", "iceberg", table,
                          commit_interval=args.commit_interval) + ["--follow"]
        return Contender(name, table, [_spawn(cmd, env, root, log)],
                         f"edge checkpoint {args.commit_interval:g} s (one append for all partitions)")
    if name == "spark":
        table = f"{ns}.fresh_spark_{tag}"
        li.create_lake_table(li.catalog(env), table)
        cmd = li.spark_cmd(topic, table, work / "fresh-spark-checkpoint") + ["--trigger", args.spark_trigger]
        proc = _spawn(cmd, dict(env, LAKEHOUSE_LOCAL_DIR=str(work / "lakehouse")), root, log)
        return Contender(name, table, [proc], f"processing-time trigger {args.spark_trigger}")
    if name == "kafka-connect":
        from confluent_kafka.admin import AdminClient, NewTopic

        table = f"{ns}.fresh_connect_{tag}"
        li.create_lake_table(li.catalog(env), table)
        control = f"fresh-control-{tag}"
        admin = AdminClient({"bootstrap.servers": env["KAFKA_BOOTSTRAP"]})  # kept until the result is in
        admin.create_topics([NewTopic(control, 1, 1)])[control].result(timeout=30)
        li.services.up(["kafka-connect"])  # the running worker if any (no restart: RSS is not measured here)
        worker = li.KafkaConnect()
        connector = f"fresh-{tag}"
        li.rest(f"{worker.url}/connectors/{connector}/config", "PUT",
                li.iceberg_sink_config(topic, table, env["ICEBERG_REST_URI"], control, tasks=2, hive_columns=True,
                                       commit_interval_ms=int(args.commit_interval * 1000)))
        return Contender(name, table, [], f"connector commit interval {args.commit_interval:g} s, 2 tasks, "
                         "hardened (both offset resets earliest, own control topic)",
                         lambda: li.rest(f"{worker.url}/connectors/{connector}", "DELETE"))
    raise ValueError(f"unknown contender {name!r}; one of {FRESH_CONTENDERS}")


def run_freshness(li: Any, env: Dict[str, str], names: List[str], tag: str, work: Path,
                  args: Any) -> Dict[str, Dict[str, Any]]:
    """Every contender of ``names`` in turn on its own topic; prints and returns the figures."""
    from confluent_kafka.admin import AdminClient, NewTopic

    admin = AdminClient({"bootstrap.servers": env["KAFKA_BOOTSTRAP"]})
    results: Dict[str, Dict[str, Any]] = {}
    for name in names:
        topic = f"bench-lake-fresh-{name}-{tag}"
        admin.create_topics([NewTopic(topic, PARTITIONS, 1)])[topic].result(timeout=30)
        print(f"{name}: freshness, {args.fresh_rate:,} rows/s for {args.fresh_seconds:g} s ...", flush=True,
              file=__import__("sys").stderr)
        contender = start(name, li, env, topic, tag, work, args)
        poller = Poller(li.catalog(env), contender.table, args.fresh_poll)
        drain = max(120.0, 3 * args.register_every) if name == "edge-datalake" else 120.0
        results[name] = measure(contender, PacedProducer(env["KAFKA_BOOTSTRAP"], topic), poller, args.fresh_rate,
                                args.fresh_seconds, args.fresh_warmup, drain)
        admin.delete_topics([topic])
    print_table(results, args.fresh_rate, args.fresh_seconds, args.fresh_poll)
    return results
