"""Kafka -> Iceberg: the edge next to what a data team would deploy instead, in one run.

    ./dev bench lake_ingest                          # 2,000,000 readings, every contender
    ./dev bench lake_ingest --records 300000 --only edge-datalake,spark
    ./dev bench lake_ingest --kill-records 200000    # also exactly-once under kill -9
    ./dev bench lake_ingest --scale                  # also two edge instances vs one
    ./dev bench lake_ingest --only edge-datalake --edge-root /tmp/before --no-save   # an older edge
    ./dev bench lake_ingest --freshness              # produce -> visible, 20,000 rows/s, 60 s each

One 24-partition topic of N JSON sensor readings (``bench/lake_ingest_data.py``) is produced once;
each contender lands it in its own table of the project's Iceberg REST catalog:

- ``edge-datalake``: the edge (``bench/lake_ingest_edge.py``) with ``DataLakeSink`` (Hive
  ``year/month/day/hour``), then ``lakehouse register`` (Spark) adds the files to the catalog;
  then the same worker once more with the sink registering each checkpoint itself
  (``register_in_catalog``), reported in its notes (rows/s to visible, CPU, RSS);
- ``edge-iceberg``: the edge with ``IcebergSink`` straight into the catalog;
- ``spark``: Spark Structured Streaming (``infra/local/spark_kafka_ingest.py``, ``local[2]``,
  ``availableNow``, checkpoint location);
- ``kafka-connect``: a Kafka Connect 4.3.1 distributed worker with Apache Iceberg's sink connector
  (``infra/local/kafka_connect_service.py``), restarted fresh for the run (its RSS peak is this run's).

Per contender: rows/s from the first record consumed (Spark: the query start; Connect: the
connector's submission) until the last row is committed and visible in the table; CPU seconds per
million rows of every process of the contender (JVMs included); peak RSS (the largest sum over
its process tree, sampled every 0.1 s, and the kernel's per-process peak); then every table is
compared row for row (same ids once each, same values, same partition values where the table has
them). ``--freshness`` measures instead, per contender, the time from produce to visible in the
table at a steady rate (``bench/lake_ingest_freshness.py``). Figures go to
``bench/results/lake_ingest.json`` (``./dev bench report``); each part keeps the other's figures.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path
from typing import Callable, Dict, List, Optional

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from confluent_kafka.admin import AdminClient, NewTopic  # noqa: E402

from infra.local import services  # noqa: E402
from infra.local.kafka_connect_service import KafkaConnect, iceberg_sink_config, rest  # noqa: E402
from lake_ingest_data import BASE_MS, ensure_topic  # noqa: E402
from lake_ingest_freshness import FRESH_CONTENDERS, run_freshness  # noqa: E402
from lake_ingest_meter import Meter, tree  # noqa: E402
from results import RESULTS_DIR, save  # noqa: E402

PY = sys.executable
CONTENDERS = ("edge-datalake", "edge-iceberg", "spark", "kafka-connect")
DATA_COLUMNS = ["id", "sensor", "ts_ms", "temp", "hum"]
HIVE = ["year", "month", "day", "hour"]
NAMESPACE = "bench_lake"


class Run(dict):
    """One contender's figures: name, rows, seconds, cpu, rss_mb, table, has_partitions."""

    @property
    def rows_per_s(self) -> float:
        return self["rows"] / self["seconds"] if self["seconds"] else 0.0

    @property
    def cpu_per_m(self) -> float:
        return self["cpu"] / self["rows"] * 1e6 if self["rows"] else 0.0


def catalog(env: Dict[str, str]):
    from pyiceberg.catalog import load_catalog

    return load_catalog("bench", type="rest", uri=env["ICEBERG_REST_URI"])


def visible_rows(env: Dict[str, str], table: str) -> int:
    snap = catalog(env).load_table(table).current_snapshot()
    return int(snap.summary["total-records"]) if snap is not None and snap.summary else 0


def metered(cmd: List[str], env: Dict[str, str], cwd: Path = ROOT) -> tuple:
    """Run ``cmd`` to its end under a Meter; returns (stdout, meter, cpu seconds of the tree)."""
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=cwd, env=env)
    with Meter(proc.pid) as meter:
        out, err = proc.communicate()
    if proc.returncode != 0:
        raise RuntimeError(f"{cmd[:3]} failed ({proc.returncode}):\n{err[-3000:]}")
    return out, meter, meter.cpu_seconds


def last_json(text: str) -> dict:
    return json.loads([line for line in text.splitlines() if line.startswith("{")][-1])


def edge_cmd(env, topic, group, sink, table, storage="", commit_interval=5.0) -> List[str]:
    cmd = [PY, str(ROOT / "bench" / "lake_ingest_edge.py"), "--bootstrap", env["KAFKA_BOOTSTRAP"],
           "--topic", topic, "--group", group, "--sink", sink, "--table", table,
           "--commit-interval", str(commit_interval)]
    if storage:
        cmd += ["--storage", storage]
    if sink == "iceberg":
        cmd += ["--catalog-uri", env["ICEBERG_REST_URI"]]
    return cmd


def run_edge_datalake(env, topic, n, tag, work: Path, args) -> Run:
    lake = work / "lake"
    table = f"{NAMESPACE}.edge_datalake_{tag}"
    out, meter, cpu = metered(edge_cmd(env, topic, f"bench-lake-{tag}", "datalake", "readings",
                                        lake.as_uri(), args.commit_interval), env)
    done = last_json(out)
    registered = time.time()
    reg_out, reg_meter, reg_cpu = metered(
        [str(ROOT / ".venv" / "bin" / "lakehouse"), "register", "--source", (lake / "readings").as_uri(),
         "--table", f"lake.{table}", "--catalog-uri", env["ICEBERG_REST_URI"], "--quiet"],
        dict(env, LAKEHOUSE_LOCAL_DIR=str(work / "lakehouse")))
    visible = time.time()
    # The same worker with the sink registering each checkpoint itself (register_in_catalog): rows
    # are visible when the last checkpoint is committed.
    inline_ns = f"{NAMESPACE}_inline_{tag}"
    in_out, in_meter, in_cpu = metered(edge_cmd(env, topic, f"bench-lake-inline-{tag}", "datalake", "readings",
                                                 (work / "lake-inline").as_uri(), args.commit_interval)
                                        + ["--catalog-uri", env["ICEBERG_REST_URI"], "--register-namespace", inline_ns],
                                        env)
    inline = last_json(in_out)
    inline_rows = visible_rows(env, f"{inline_ns}.readings")
    return Run(name="edge-datalake", rows=n, seconds=(done["done_ms"] - done["first_ms"]) / 1000,
               seconds_visible=(done["done_ms"] - done["first_ms"]) / 1000 + (visible - registered),
               cpu=cpu, cpu_register=reg_cpu, rss_mb=meter.peak_rss_mb, rss_register_mb=reg_meter.peak_rss_mb,
               seconds_inline=(inline["done_ms"] - inline["first_ms"]) / 1000, cpu_inline=in_cpu,
               rss_inline_mb=in_meter.peak_rss_mb, rows_inline=inline_rows, table=table, has_partitions=True)


def run_edge_iceberg(env, topic, n, tag, work: Path, args) -> Run:
    table = f"{NAMESPACE}.edge_iceberg_{tag}"
    out, meter, cpu = metered(edge_cmd(env, topic, f"bench-lake-ice-{tag}", "iceberg", table,
                                        commit_interval=args.commit_interval), env)
    done = last_json(out)
    return Run(name="edge-iceberg", rows=n, seconds=(done["done_ms"] - done["first_ms"]) / 1000, cpu=cpu,
               rss_mb=meter.peak_rss_mb, table=table, has_partitions=False)


def spark_cmd(topic: str, table: str, checkpoint: Path) -> List[str]:
    return [PY, "-m", "infra.local.spark_kafka_ingest", "--topic", topic, "--table", table,
            "--checkpoint", str(checkpoint)]


def run_spark(env, topic, n, tag, work: Path, args) -> Run:
    table = f"{NAMESPACE}.spark_{tag}"
    started = time.time()
    out, meter, cpu = metered(spark_cmd(topic, table, work / "spark-checkpoint"),
                              dict(env, LAKEHOUSE_LOCAL_DIR=str(work / "lakehouse")))
    done = last_json(out)
    return Run(name="spark", rows=n, seconds=(done["done_ms"] - done["started_ms"]) / 1000,
               seconds_wall=time.time() - started, cpu=cpu, rss_mb=meter.peak_rss_mb, table=table,
               has_partitions=True)


def create_connect_table(env, table: str) -> None:
    from pyiceberg.schema import Schema
    from pyiceberg.types import DoubleType, LongType, NestedField, StringType

    cat = catalog(env)
    try:
        cat.create_namespace(NAMESPACE)
    except Exception:  # noqa: BLE001 - exists
        pass
    cat.create_table(table, Schema(
        NestedField(1, "id", LongType()), NestedField(2, "sensor", StringType()), NestedField(3, "ts_ms", LongType()),
        NestedField(4, "temp", DoubleType()), NestedField(5, "hum", DoubleType())))


def restart_connect() -> KafkaConnect:
    services.down(["kafka-connect"])
    services.up(["kafka-connect"])
    return KafkaConnect()


def run_connect(env, topic, n, tag, work: Path, args, kill_after: Optional[float] = None) -> Run:
    table = f"{NAMESPACE}.connect_{tag}"
    create_connect_table(env, table)
    control = f"bench-lake-control-{tag}"
    admin = AdminClient({"bootstrap.servers": env["KAFKA_BOOTSTRAP"]})
    admin.create_topics([NewTopic(control, 1, 1)])[control].result(timeout=30)
    worker = restart_connect()
    pid = worker.pid()
    connector = f"bench-lake-{tag}"
    kills = 0
    with Meter(pid) as meter:
        started = time.time()
        rest(f"{worker.url}/connectors/{connector}/config", "PUT",
             iceberg_sink_config(topic, table, env["ICEBERG_REST_URI"], control, tasks=2,
                                 commit_interval_ms=int(args.commit_interval * 1000)))
        deadline = started + args.timeout
        while time.time() < deadline:
            time.sleep(0.5)
            if kill_after is not None and not kills and time.time() - started > kill_after:
                os.kill(worker.pid(), signal.SIGKILL)  # the worker JVM
                kills += 1
                worker.stop()
                worker = KafkaConnect()
                services.up(["kafka-connect"])
                meter.pid = worker.pid()
            if visible_rows(env, table) >= n:
                break
        seconds = time.time() - started
        meter.sample()
    cpu = meter.cpu_seconds
    rest(f"{worker.url}/connectors/{connector}", "DELETE")
    return Run(name="kafka-connect", rows=n, seconds=seconds, cpu=cpu, rss_mb=meter.peak_rss_mb, table=table,
               has_partitions=False, kills=kills)


RUNNERS: Dict[str, Callable[..., Run]] = {"edge-datalake": run_edge_datalake, "edge-iceberg": run_edge_iceberg,
                                          "spark": run_spark, "kafka-connect": run_connect}


def table_content(env, table: str, partitions: bool):
    import pyarrow.compute as pc

    cols = DATA_COLUMNS + (HIVE if partitions else [])
    data = catalog(env).load_table(table).scan(selected_fields=tuple(cols)).to_arrow()
    return data.sort_by("id") if data.num_rows else data, pc


def check_ids(env, table: str, n: int) -> Dict[str, int]:
    """Duplicates and missing ids of a table that should hold ids 0..n-1 once each."""
    import pyarrow.compute as pc

    ids = catalog(env).load_table(table).scan(selected_fields=("id",)).to_arrow().column("id")
    distinct = pc.count_distinct(ids).as_py()
    inside = pc.sum(pc.and_(pc.greater_equal(ids, 0), pc.less(ids, n))).as_py() or 0
    return {"rows": len(ids), "duplicates": len(ids) - distinct, "missing": n - min(distinct, inside)}


def compare(env, runs: List[Run], n: int) -> List[str]:
    """Row-for-row comparison of every table with the first; returns one line per table."""
    import pyarrow as pa

    lines, reference, ref_parts = [], None, None
    for run in runs:
        data, pc = table_content(env, run["table"], run["has_partitions"])
        ids = check_ids(env, run["table"], n)
        same = "-"
        if reference is None:
            reference = data.select(DATA_COLUMNS)
            same = "reference"
        else:
            mine = data.select(DATA_COLUMNS)
            try:  # the same values; nullability and field ids may differ between writers
                mine = mine.cast(reference.schema)
            except (pa.ArrowInvalid, pa.ArrowTypeError, ValueError) as exc:
                same = f"DIFFERENT TYPES ({exc})"
            if same == "-":
                same = "identical" if mine.equals(reference) else "DIFFERENT"
        if run["has_partitions"]:
            expected_hour = pc.divide(pc.subtract(data.column("ts_ms"), pa.scalar(BASE_MS)), pa.scalar(3_600_000))
            parts_ok = (pc.all(pc.equal(data.column("hour"), pc.cast(expected_hour, pa.int32()))).as_py()
                        and pc.all(pc.equal(data.column("day"), 5)).as_py())
            if ref_parts is None:
                ref_parts = data.select(HIVE)
            parts = ("same partition values" if parts_ok and data.select(HIVE).equals(ref_parts)
                     else "PARTITION VALUES DIFFER")
        else:
            parts = "no partition columns"
        lines.append(f"  {run['name']:<15} {ids['rows']:>10,} rows, {ids['duplicates']} duplicate(s), "
                     f"{ids['missing']} missing; values {same}; {parts}")
    return lines


def kill9(env, name: str, topic: str, n: int, tag: str, work: Path, args) -> Dict[str, int]:
    """Kill -9 the contender's processing process mid-run, restart until caught up, count ids."""
    if name == "kafka-connect":
        run = run_connect(env, topic, n, f"k{tag}", work, args, kill_after=kill_after(args, name))
        return dict(check_ids(env, run["table"], n), kills=run["kills"])
    kills = 0
    if name in ("edge-datalake", "edge-iceberg"):
        sink = "datalake" if name == "edge-datalake" else "iceberg"
        table = f"{NAMESPACE}.kill_{sink}_{tag}"
        cmd = edge_cmd(env, topic, f"bench-kill-{sink}-{tag}", sink, "readings" if sink == "datalake" else table,
                       (work / "kill-lake").as_uri() if sink == "datalake" else "", args.commit_interval)
        cwd_env = env
    else:
        table = f"{NAMESPACE}.kill_spark_{tag}"
        cmd = spark_cmd(topic, table, work / "kill-spark-checkpoint")
        cwd_env = dict(env, LAKEHOUSE_LOCAL_DIR=str(work / "lakehouse"))
    while True:
        proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, cwd=ROOT,
                                env=cwd_env)
        if kills == 0:
            time.sleep(kill_after(args, name))
            if proc.poll() is None:
                # The edge process, or the Spark driver JVM (the python front of pyspark then exits).
                victim = next((p for p in tree(proc.pid) if _is_java(p)), proc.pid) if name == "spark" else proc.pid
                os.kill(victim, signal.SIGKILL)
                kills += 1
                try:
                    proc.wait(timeout=60)
                except subprocess.TimeoutExpired:
                    proc.kill()
                    proc.wait()
                continue
        out, _ = proc.communicate()
        if proc.returncode == 0:
            break
    if name == "edge-datalake":
        subprocess.run([str(ROOT / ".venv" / "bin" / "lakehouse"), "register", "--source",
                        (work / "kill-lake" / "readings").as_uri(), "--table", f"lake.{table}",
                        "--catalog-uri", env["ICEBERG_REST_URI"], "--quiet"], check=True, cwd=ROOT,
                       env=dict(env, LAKEHOUSE_LOCAL_DIR=str(work / "lakehouse")), capture_output=True)
    return dict(check_ids(env, table, n), kills=kills)


def _is_java(pid: int) -> bool:
    try:
        return os.path.basename(os.readlink(f"/proc/{pid}/exe")).startswith("java")
    except OSError:
        return False


def scaling(env, topic: str, n: int, tag: str, work: Path, args) -> Dict[str, float]:
    """One edge instance vs two in one consumer group (datalake sink, same table): rows/s and ids."""
    figures = {}
    for count in (1, 2):
        lake = work / f"scale-{count}"
        cmds = [edge_cmd(env, topic, f"bench-scale-{count}-{tag}", "datalake", "readings", lake.as_uri(),
                         args.commit_interval) + ["--shared-group"] for _ in range(count)]
        procs = [subprocess.Popen(c, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, cwd=ROOT, env=env)
                 for c in cmds]
        outs = [last_json(p.communicate()[0]) for p in procs]
        # To the last record processed: with two instances, when each may stop is known only from
        # the group's committed offsets (up to a commit interval later), which is not processing.
        first, last = min(o["first_ms"] for o in outs if o["first_ms"]), max(o["last_ms"] for o in outs)
        figures[count] = n / ((last - first) / 1000)
        table = f"{NAMESPACE}.scale{count}_{tag}"
        subprocess.run([str(ROOT / ".venv" / "bin" / "lakehouse"), "register", "--source",
                        (lake / "readings").as_uri(), "--table", f"lake.{table}",
                        "--catalog-uri", env["ICEBERG_REST_URI"], "--quiet"], check=True, cwd=ROOT,
                       env=dict(env, LAKEHOUSE_LOCAL_DIR=str(work / "lakehouse")), capture_output=True)
        figures[f"ids{count}"] = check_ids(env, table, n)  # type: ignore[assignment]
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--records", type=int, default=2_000_000)
    parser.add_argument("--only", default="", help=f"comma-separated subset of {CONTENDERS} "
                        f"(--freshness: of {FRESH_CONTENDERS}); default all")
    parser.add_argument("--commit-interval", type=float, default=5.0, help="edge checkpoints and Connect commits (s)")
    parser.add_argument("--kill-records", type=int, default=0, help="also kill -9 each contender on a topic this size")
    parser.add_argument("--kill-after", type=float, default=0.0,
                        help="seconds after start to kill -9 (default: about mid-run of 2M, per contender)")
    parser.add_argument("--no-throughput", action="store_true", help="only the kill -9 and scaling parts")
    parser.add_argument("--scale", action="store_true", help="also two edge instances vs one")
    parser.add_argument("--timeout", type=float, default=900.0)
    parser.add_argument("--no-save", action="store_true")
    fresh = parser.add_argument_group("freshness (bench/lake_ingest_freshness.py)")
    fresh.add_argument("--freshness", action="store_true", help="only the freshness part")
    fresh.add_argument("--fresh-seconds", type=float, default=60.0, help="steady phase per contender (s)")
    fresh.add_argument("--fresh-rate", type=int, default=20_000, help="rows/s of the steady phase")
    fresh.add_argument("--fresh-poll", type=float, default=0.5, help="catalog poll interval (s)")
    fresh.add_argument("--fresh-warmup", type=float, default=300.0, help="max wait for the first visible row (s)")
    fresh.add_argument("--register-every", type=float, default=30.0,
                       help="edge-datalake: start lakehouse register every N s (back to back if a run is longer)")
    fresh.add_argument("--spark-trigger", default="5 seconds", help="Spark's processing-time trigger")
    parser.add_argument("--edge-root", default="",
                        help="run the edge from another checkout (e.g. git worktree add /tmp/before <commit>)")
    args = parser.parse_args()
    only = [c.strip() for c in args.only.split(",") if c.strip()] or \
        list(FRESH_CONTENDERS if args.freshness else CONTENDERS)
    wanted = ["kafka-connect"] if "kafka-connect" in only or args.kill_records else []
    services.up(None)  # the default set first: Kafka Connect needs the broker (a clean clone has none running)
    env = dict(os.environ, **services.up(wanted or None))
    env.pop("_STARTED", None)
    if args.edge_root:
        env["LAKE_INGEST_EDGE_ROOT"] = str(Path(args.edge_root).resolve())
    tag = uuid.uuid4().hex[:6]
    work = Path(os.environ.get("TMPDIR", "/tmp")) / f"lake-ingest-{tag}"
    work.mkdir(parents=True)
    if args.freshness:
        results = run_freshness(sys.modules[__name__], env, only, tag, work, args)
        bars = [(f"freshness {q} s", name, r[f"{q}_s"]) for name, r in results.items() for q in ("p50", "p99")
                if f"{q}_s" in r]
        if not args.no_save and bars:
            save_merged(bars, args.fresh_rate, args.fresh_seconds)
        return
    n = args.records
    topic = ensure_topic(env["KAFKA_BOOTSTRAP"], n)
    runs: List[Run] = []
    for name in only if not args.no_throughput else ():
        print(f"{name}: landing {n:,} readings ...", file=sys.stderr, flush=True)
        runs.append(RUNNERS[name](env, topic, n, tag, work, args))
    if runs:
        report(env, runs, n)
    bars = []
    for run in runs:
        bars += [("rows/s (thousands)", run["name"], run.rows_per_s / 1000),
                 ("CPU s per M rows", run["name"], run.cpu_per_m), ("peak RSS MB", run["name"], run["rss_mb"])]
    if args.kill_records:
        kill_topic = ensure_topic(env["KAFKA_BOOTSTRAP"], args.kill_records)
        print(f"\nexactly once under kill -9 ({args.kill_records:,} readings):")
        for name in only:
            print(f"{name}: kill -9 run ...", file=sys.stderr, flush=True)
            result = kill9(env, name, kill_topic, args.kill_records, tag, work, args)
            print(f"  {name:<15} {result['kills']} kill(s) after {kill_after(args, name):.0f} s: {result['rows']:,} rows, "
                  f"{result['duplicates']} duplicate(s), {result['missing']} missing", flush=True)
    if args.scale:
        figures = scaling(env, topic, n, tag, work, args)
        print(f"\ntwo edge instances vs one: {figures[1]:,.0f} -> {figures[2]:,.0f} rows/s "
              f"({figures[2] / figures[1]:.2f}x); ids {figures['ids1']} / {figures['ids2']}")
        bars += [("rows/s (thousands)", "edge-datalake x2", figures[2] / 1000)]
    if not args.no_save and len(runs) == len(CONTENDERS):
        save_merged(bars, records=n)


def save_merged(bars: list, rate: int = 0, seconds: float = 0.0, records: int = 0) -> None:
    """Save this part's bars to ``lake_ingest.json``, keeping the other part's (throughput/freshness)."""
    path = RESULTS_DIR / "lake_ingest.json"
    old = json.loads(path.read_text()) if path.exists() else {"bars": [], "title": ""}
    fresh_part = bars[0][0].startswith("freshness")
    measured = {series for _, series, _ in bars}  # a freshness run of a subset keeps the others' figures
    kept = [(b["group"], b["series"], b["value"]) for b in old["bars"]
            if b["group"].startswith("freshness") != fresh_part or (fresh_part and b["series"] not in measured)]
    title = old.get("title", "").split(";")[0] or "Kafka -> Iceberg: edge vs Spark SS vs Kafka Connect"
    if records:
        title = f"Kafka -> Iceberg, {records:,} JSON readings: edge vs Spark SS vs Kafka Connect"
    fresh_note = next((t for t in old.get("title", "").split(";")[1:] if "freshness" in t), "")
    if rate:
        fresh_note = f" freshness at {rate:,} rows/s for {seconds:.0f} s"
    merged = sorted(kept + bars, key=lambda bar: bar[0].startswith("freshness"))  # throughput groups first
    save("lake_ingest", title + (f";{fresh_note}" if fresh_note else ""), "mixed", merged)


KILL_AFTER = {"edge-datalake": 8.0, "edge-iceberg": 15.0, "spark": 50.0, "kafka-connect": 12.0}


def kill_after(args: argparse.Namespace, name: str) -> float:
    return args.kill_after or KILL_AFTER[name]


def report(env, runs: List[Run], n: int) -> None:
    print(f"\nKafka -> Iceberg, {n:,} JSON readings, 24 partitions ({os.cpu_count()} cores, shared)")
    print(f"{'contender':<15} {'rows/s':>10} {'CPU s/M rows':>13} {'peak RSS MB':>12}  notes")
    for run in runs:
        notes = ""
        if run["name"] == "edge-datalake":
            notes = (f"+ lakehouse register: {run['rows'] / run['seconds_visible']:,.0f} rows/s to visible, "
                     f"register {run['cpu_register']:.1f} CPU s, {run['rss_register_mb']:.0f} MB; "
                     f"registering inline: {run['rows'] / run['seconds_inline']:,.0f} rows/s to visible "
                     f"({run['rows_inline']:,} rows), {run['cpu_inline'] / run['rows'] * 1e6:.1f} CPU s/M, "
                     f"{run['rss_inline_mb']:.0f} MB")
        elif run["name"] == "spark":
            notes = f"query only; {run['rows'] / run['seconds_wall']:,.0f} rows/s with the JVM start"
        print(f"{run['name']:<15} {run.rows_per_s:>10,.0f} {run.cpu_per_m:>13.1f} {run['rss_mb']:>12.0f}  {notes}")
    print("\ntables:")
    for line in compare(env, runs, n):
        print(line)


if __name__ == "__main__":
    main()
