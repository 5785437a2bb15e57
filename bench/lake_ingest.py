"""Kafka -> Iceberg: the edge next to what a data team would deploy instead, one finish line for all.

    ./dev bench lake_ingest                          # 10,000,000 readings, every contender, 3 rounds
    ./dev bench lake_ingest --records 300000 --runs 1 --only edge-datalake,spark
    ./dev bench lake_ingest --kill                   # kill -9 each contender, 3 runs each (lake_ingest_kill.py)
    ./dev bench lake_ingest --scale                  # two edge instances vs one, Connect 2 tasks vs 1, 10M
    ./dev bench lake_ingest --only edge-datalake --edge-root /tmp/before --no-save   # an older edge
    ./dev bench lake_ingest --freshness              # produce -> visible, 20,000 rows/s, 60 s each

One 24-partition topic of N JSON sensor readings (``bench/lake_ingest_data.py``, each message
stamped with its event time) is produced once; each contender lands it in its own table of the
project's Iceberg REST catalog, every table created beforehand by the bench with the same schema
and partition spec (``bench/lake_ingest_visible.py``: the readings plus ``year/month/day/hour`` of
the event time, identity-partitioned: one partition per hour):

- ``edge-datalake``: the edge (``bench/lake_ingest_edge.py``) with ``DataLakeSink`` registering
  each checkpoint's files in the table itself (``register_in_catalog``); its time to committed
  Parquet comes from a second run without registration and is reported as its own column;
- ``edge-iceberg``: the edge with ``IcebergSink`` (the records given ``year/month/day/hour``);
- ``spark``: Spark Structured Streaming (``infra/local/spark_kafka_ingest.py``, ``local[2]``,
  ``availableNow``, checkpoint location, fanout writer);
- ``kafka-connect-defaults`` and ``kafka-connect-hardened``: a Kafka Connect 4.3.1 worker with
  Apache Iceberg's sink connector, as shipped and as Iceberg's own tests run it
  (``bench/lake_ingest_connect.py``).

The finish line is the same for all: the clock starts when the contender's process starts (Kafka
Connect: when its worker is restarted for the run, the connector submitted once it answers) and stops at the first poll
of :class:`~lake_ingest_visible.VisibleClock` (every 0.25 s, the table's current snapshot's
``total-records`` through pyiceberg) that sees every row. Per contender: rows/s to visible, with
and without its start-up (the edge: its process start to its first batch; Spark: its JVM start;
Connect: the worker's start to its tasks running); CPU
seconds per million rows of every process of the contender (JVMs and their start-up included;
the broker, the catalog and S3 excluded), the broker's CPU seconds during the run; peak RSS (the
largest sum over the contender's processes, sampled every 0.1 s). Then every table's shape and
content are compared (same columns and spec, ids once each, same values, same partition values).
Each contender runs ``--runs`` times (3 by default; rounds interleaved, each into a fresh table);
the figures are the medians with their spread, checked against one goal per metric (:data:`GOALS`),
and go to ``bench/results/lake_ingest.json`` (``./dev bench report``) when every contender ran.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
import uuid
from pathlib import Path
from typing import Any, Callable, Dict, List, Optional

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from edge_venv import edge_python  # noqa: E402
from infra.local import services  # noqa: E402
from infra.local.kafka_connect_service import KafkaConnect, iceberg_sink_config, rest  # noqa: E402,F401
from lake_ingest_connect import CONNECT_CONTENDERS, ConnectRun, hardened_tasks  # noqa: E402
from lake_ingest_data import BASE_MS, PARTITIONS, ensure_topic  # noqa: E402
from lake_ingest_freshness import FRESH_CONTENDERS, run_freshness  # noqa: E402
from lake_ingest_meter import Meter, tree_cpu  # noqa: E402
from lake_ingest_visible import DATA_COLUMNS, HIVE, VisibleClock, create_lake_table, table_shape  # noqa: E402,F401
from results import median_spread, save  # noqa: E402

PY = sys.executable
#: the edge contenders' interpreter: the edge as users install it (bench/edge_venv.py), set by main()
EDGE_PY = PY
CONTENDERS = ("edge-datalake", "edge-iceberg", "spark") + CONNECT_CONTENDERS
NAMESPACE = "bench_lake"
EDGE_METADATA_COLUMNS = ("_timestamp", "_key")  # IcebergSink always adds them (Quix Streams' columns)


class Run(dict):
    """One contender's figures: name, rows, seconds (to visible; 0: never all), cpu, rss_mb, table."""

    @property
    def rows_per_s(self) -> float:
        return self["rows"] / self["seconds"] if self["seconds"] else 0.0

    @property
    def rows_per_s_net(self) -> float:
        """Rows/s with the contender's start-up (to its first record, or Connect's tasks running) left out."""
        net = self["seconds"] - self.get("startup_s", 0.0)
        return self["rows"] / net if self["seconds"] and net > 0 else 0.0

    @property
    def cpu_per_m(self) -> float:
        return self["cpu"] / self["rows"] * 1e6 if self["rows"] else 0.0


def catalog(env: Dict[str, str]):
    from pyiceberg.catalog import load_catalog

    return load_catalog("bench", type="rest", uri=env["ICEBERG_REST_URI"])


def broker_pid() -> int:
    pid = services.Kafka().pid()
    if pid is None:
        raise RuntimeError("the Kafka broker is not running")
    return pid


def last_json(text: str) -> dict:
    return json.loads([line for line in text.splitlines() if line.startswith("{")][-1])


def edge_cmd(env, topic, group, sink, table, storage="", commit_interval=5.0) -> List[str]:
    cmd = [EDGE_PY, str(ROOT / "bench" / "lake_ingest_edge.py"), "--bootstrap", env["KAFKA_BOOTSTRAP"],
           "--topic", topic, "--group", group, "--sink", sink, "--table", table,
           "--commit-interval", str(commit_interval)]
    if storage:
        cmd += ["--storage", storage]
    if sink == "iceberg":
        cmd += ["--catalog-uri", env["ICEBERG_REST_URI"], "--hive-fields"]
    return cmd


def inline_edge_cmd(env, topic, group, namespace, lake: Path, commit_interval: float) -> List[str]:
    """The edge with ``DataLakeSink`` registering each checkpoint in ``namespace.readings``."""
    return edge_cmd(env, topic, group, "datalake", "readings", lake.as_uri(), commit_interval) + [
        "--catalog-uri", env["ICEBERG_REST_URI"], "--register-namespace", namespace]


def spark_cmd(topic: str, table: str, checkpoint: Path) -> List[str]:
    return [PY, "-m", "infra.local.spark_kafka_ingest", "--topic", topic, "--table", table,
            "--checkpoint", str(checkpoint)]


def spark_env(env: Dict[str, str], work: Path) -> Dict[str, str]:
    return dict(env, LAKEHOUSE_LOCAL_DIR=str(work / "lakehouse"))


def run_processes(name: str, cmds: List[List[str]], env: Dict[str, str], table: str, n: int, work: Path,
                  args: argparse.Namespace) -> Run:
    """Start ``cmds`` (one contender's processes), clocked from their start to every row visible."""
    clock = VisibleClock(catalog(env), table, n)
    logs = [work / f"{name}-{i}.log" for i in range(len(cmds))]
    broker, broker_before = broker_pid(), tree_cpu(broker_pid())
    started = time.time()
    clock.start_clock(started)
    procs = [subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=open(log, "w"), text=True, cwd=ROOT, env=env)
             for cmd, log in zip(cmds, logs)]
    try:
        with Meter([p.pid for p in procs]) as meter:
            outs = [p.communicate(timeout=args.timeout)[0] for p in procs]
            clock.wait(max(1.0, args.timeout - (time.time() - started)))
            meter.sample()
    finally:
        clock.stop()
        for proc in procs:
            if proc.poll() is None:
                proc.kill()
    broker_cpu = tree_cpu(broker) - broker_before
    for proc, log in zip(procs, logs):
        if proc.returncode != 0:
            raise RuntimeError(f"{name} failed ({proc.returncode}); log {log}:\n{log.read_text()[-3000:]}")
    done = [last_json(out) for out in outs]
    return Run(name=name, rows=n, cpu=meter.cpu_seconds, rss_mb=meter.peak_rss_mb, broker_cpu=broker_cpu,
               table=table, started=started, done=done, **clock.figures())


def run_edge_datalake(env, topic, n, tag, work: Path, args) -> Run:
    namespace = f"{NAMESPACE}_{tag}"
    table = f"{namespace}.readings"
    create_lake_table(catalog(env), table)
    run = run_processes("edge-datalake", [inline_edge_cmd(env, topic, f"bench-lake-{tag}", namespace,
                                                          work / f"lake-{tag}", args.commit_interval)], env, table, n,
                        work, args)
    run["startup_s"] = edge_startup(run)
    # Committed Parquet, the same worker without registration: a second, labelled column.
    parquet = run_processes("edge-datalake-parquet", [edge_cmd(env, topic, f"bench-lake-pq-{tag}", "datalake",
                                                               "readings", (work / f"lake-pq-{tag}").as_uri(),
                                                               args.commit_interval)],
                            env, table, 0, work, args)
    run.update(seconds_parquet=parquet["done"][0]["done_ms"] / 1000 - parquet["started"],
               cpu_parquet=parquet["cpu"], rss_parquet_mb=parquet["rss_mb"])
    return run


def run_edge_iceberg(env, topic, n, tag, work: Path, args) -> Run:
    table = f"{NAMESPACE}.edge_iceberg_{tag}"
    create_lake_table(catalog(env), table)
    run = run_processes("edge-iceberg", [edge_cmd(env, topic, f"bench-lake-ice-{tag}", "iceberg", table,
                                                  commit_interval=args.commit_interval)], env, table, n, work, args)
    run["startup_s"] = edge_startup(run)
    return run


def edge_startup(run: Run) -> float:
    """The edge's start-up: its process start to its first batch of records."""
    firsts = [d["first_ms"] for d in run["done"] if d.get("first_ms")]
    return min(firsts) / 1000 - run["started"] if firsts else 0.0


def run_spark(env, topic, n, tag, work: Path, args) -> Run:
    table = f"{NAMESPACE}.spark_{tag}"
    create_lake_table(catalog(env), table)
    run = run_processes("spark", [spark_cmd(topic, table, work / f"spark-checkpoint-{tag}")], spark_env(env, work),
                        table, n, work, args)
    run["jvm_start_s"] = run["startup_s"] = run["done"][0]["started_ms"] / 1000 - run["started"]
    return run


def run_connect(name: str, env, topic, n, tag, work: Path, args, tasks: Optional[int] = None) -> Run:
    table = f"{NAMESPACE}.{name.replace('-', '_')}_{tag}"
    create_lake_table(catalog(env), table)
    connect = ConnectRun(name, env, topic, table, tag, args, tasks)
    clock = VisibleClock(catalog(env), table, n)
    broker, broker_before = broker_pid(), tree_cpu(broker_pid())
    try:
        clock.start_clock(connect.started)  # the worker's start is inside the clock
        connect.submit()
        running = connect.wait_running(args.timeout)
        clock.wait(max(1.0, args.timeout - (time.time() - connect.started)))
    finally:
        clock.stop()
        connect.finish()
    run = Run(name=name, rows=n, cpu=connect.meter.cpu_seconds, rss_mb=connect.meter.peak_rss_mb,
              broker_cpu=tree_cpu(broker) - broker_before, table=table, tasks=connect.config.get("tasks.max", "1"),
              startup_s=running - connect.started, **clock.figures())
    if not run["seconds"]:
        run["log"] = str(connect.save_log(work / "logs"))
    return run


RUNNERS: Dict[str, Callable[..., Run]] = {
    "edge-datalake": run_edge_datalake, "edge-iceberg": run_edge_iceberg, "spark": run_spark,
    **{name: (lambda *a, _name=name, **k: run_connect(_name, *a, **k)) for name in CONNECT_CONTENDERS}}


def check_ids(env, table: str, n: int) -> Dict[str, int]:
    """Duplicates and missing ids of a table that should hold ids 0..n-1 once each."""
    import pyarrow.compute as pc

    ids = catalog(env).load_table(table).scan(selected_fields=("id",)).to_arrow().column("id")
    distinct = pc.count_distinct(ids).as_py()
    inside = pc.sum(pc.and_(pc.greater_equal(ids, 0), pc.less(ids, n))).as_py() or 0
    return {"rows": len(ids), "duplicates": len(ids) - distinct, "missing": n - min(distinct, inside)}


def partitions_right(data: Any) -> bool:
    """Whether every row's ``year/month/day/hour`` are its ``ts_ms``'s (UTC; the data is 2026-01-05)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    hour = pc.cast(pc.divide(pc.subtract(data.column("ts_ms"), pa.scalar(BASE_MS)), pa.scalar(3_600_000)), pa.int32())
    return all(pc.all(pc.equal(data.column(c), v)).as_py() for c, v in (("year", 2026), ("month", 1), ("day", 5))) \
        and pc.all(pc.equal(data.column("hour"), hour)).as_py()


def compare(env, runs: List[Run], n: int) -> List[str]:
    """Shape and row-for-row content of every table against the first; one line per table."""
    import pyarrow as pa

    cat = catalog(env)
    lines: List[str] = []
    reference: Any = None
    ref_shape: Any = None
    for run in runs:
        columns, spec = table_shape(cat, run["table"])
        shape = ([c for c in columns if c[0] not in EDGE_METADATA_COLUMNS], spec)
        extra = [c for c, _ in columns if c in EDGE_METADATA_COLUMNS]
        data = cat.load_table(run["table"]).scan(selected_fields=tuple(DATA_COLUMNS + HIVE)).to_arrow()
        data = data.sort_by("id") if data.num_rows else data
        ids = check_ids(env, run["table"], n)
        if reference is None:
            reference, ref_shape, same, same_shape = data, shape, "reference", "reference shape"
        else:
            same_shape = "same shape" if shape == ref_shape else f"DIFFERENT SHAPE {shape}"
            try:  # the same values; nullability and field ids may differ between writers
                same = "identical" if data.cast(reference.schema).equals(reference) else "DIFFERENT"
            except (pa.ArrowInvalid, pa.ArrowTypeError, ValueError) as exc:
                same = f"DIFFERENT TYPES ({exc})"
        parts = "partition values right" if data.num_rows and partitions_right(data) else "PARTITION VALUES WRONG"
        lines.append(f"  {run['name']:<23} {ids['rows']:>10,} rows, {ids['duplicates']} duplicate(s), "
                     f"{ids['missing']} missing; values {same}; {parts}; {same_shape}"
                     + (f" (+ the sink's {', '.join(extra)})" if extra else ""))
    lines.append(f"  shape: {', '.join(f'{c} {t}' for c, t in ref_shape[0])}; "
                 f"partitioned by {', '.join(f'{t}({c})' for c, t in ref_shape[1])}" if ref_shape else "")
    return lines


def print_round(env, runs: List[Run], n: int) -> None:
    """A later round: its figures and each table's ids (the full comparison is the first round's)."""
    for run in runs:
        ids = check_ids(env, run["table"], n)
        print(f"  {run['name']:<23} {run.rows_per_s:>9,.0f} rows/s ({run.rows_per_s_net:,.0f} net of a "
              f"{run.get('startup_s', 0.0):.1f} s start-up), {run.cpu_per_m:.1f} CPU s/M, {run['rss_mb']:.0f} MB; "
              f"{ids['rows']:,} rows, {ids['duplicates']} duplicate(s), {ids['missing']} missing")


def report(env, runs: List[Run], n: int) -> None:
    print(f"\nKafka -> Iceberg, {n:,} JSON readings, {PARTITIONS} partitions, to visible in the catalog "
          f"({os.cpu_count()} cores; load average {os.getloadavg()[0]:.1f} at the end)")
    print(f"{'contender':<23} {'rows/s':>9} {'rows/s net':>10} {'seconds':>8} {'start-up s':>10} {'CPU s/M rows':>12} "
          f"{'peak RSS MB':>11} {'broker CPU s':>12} {'to Parquet rows/s':>17}  notes")
    for run in runs:
        parquet = "-"
        notes = f"first rows visible after {run['first_visible_s'] or 0:.1f} s, {run['snapshots']} snapshots"
        if run["name"] == "edge-datalake":
            parquet = f"{n / run['seconds_parquet']:,.0f}"
            notes += (f"; to Parquet (a run without registration): {run['seconds_parquet']:.1f} s, "
                      f"{run['cpu_parquet'] / n * 1e6:.1f} CPU s/M, {run['rss_parquet_mb']:.0f} MB")
        elif run["name"] == "spark":
            notes += f"; JVM start {run['jvm_start_s']:.1f} s"
        elif run["name"].startswith("kafka-connect"):
            notes += f"; {run['tasks']} task(s)"
        if not run["seconds"]:
            notes += f"; NOT ALL VISIBLE within the timeout: {run['visible']:,} rows, log {run.get('log', '-')}"
        print(f"{run['name']:<23} {run.rows_per_s:>9,.0f} {run.rows_per_s_net:>10,.0f} {run['seconds']:>8.1f} "
              f"{run.get('startup_s', 0.0):>10.1f} {run.cpu_per_m:>12.1f} "
              f"{run['rss_mb']:>11.0f} {run['broker_cpu']:>12.1f} {parquet:>17}  {notes}")
    print("\ntables:")
    for line in compare(env, runs, n):
        print(line)


#: one stated goal per metric: the edge (edge-datalake) against the peers (spark, kafka-connect-*)
GOALS = {"rows/s": "at least 1.5x the better peer's", "CPU s per M rows": "at most a third of the lower peer's",
         "peak RSS MB": "at most half of the lower peer's"}
PEERS = ("spark",) + CONNECT_CONTENDERS


def throughput_bars(rounds: List[List[Run]]) -> List[tuple]:
    """``(metric, contender, median, low, high)`` over the rounds, for every contender and metric."""
    metrics: Dict[str, Callable[[Run], float]] = {
        "rows/s to visible, start-up included (thousands)": lambda r: r.rows_per_s / 1000,
        "rows/s to visible, start-up excluded (thousands)": lambda r: r.rows_per_s_net / 1000,
        "start-up s": lambda r: r.get("startup_s", 0.0),
        "CPU s per M rows": lambda r: r.cpu_per_m, "peak RSS MB": lambda r: r["rss_mb"]}
    bars: List[tuple] = []
    for metric, value in metrics.items():
        for i, run in enumerate(rounds[0]):
            bars.append((metric, run["name"], *median_spread([value(one[i]) for one in rounds])))
    return bars


def goal_check(bars: list) -> Dict[str, str]:
    """The edge's medians against each goal (``met``/``NOT met``, with the ratio)."""
    median = {(b[0], b[1]): b[2] for b in bars}
    out: Dict[str, str] = {}
    for metric, key, best, want in (
            ("rows/s", "rows/s to visible, start-up included (thousands)", max, lambda x: x >= 1.5),
            ("rows/s net of start-up", "rows/s to visible, start-up excluded (thousands)", max, lambda x: x >= 1.5),
            ("CPU s per M rows", "CPU s per M rows", min, lambda x: x <= 1 / 3),
            ("peak RSS MB", "peak RSS MB", min, lambda x: x <= 0.5)):
        peers = [v for (m, name), v in median.items() if m == key and name in PEERS]
        edge = median.get((key, "edge-datalake"))
        if peers and edge is not None and best(peers):
            ratio = edge / best(peers)
            out[metric] = f"{ratio:.2f} of the {'better' if best is max else 'lower'} peer: " + (
                "met" if want(ratio) else "NOT met")
    return out


def parse_args(argv: Optional[List[str]] = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    parser.add_argument("--records", type=int, default=0,
                        help="readings (default 10,000,000, where start-up does not dominate; --kill: 2,000,000)")
    parser.add_argument("--runs", type=int, default=3, help="rounds of every contender (the figures: medians)")
    parser.add_argument("--only", default="", help=f"comma-separated subset of {CONTENDERS} "
                        f"(--freshness: of {FRESH_CONTENDERS}); default all")
    parser.add_argument("--commit-interval", type=float, default=5.0, help="the edge's checkpoint interval (s)")
    parser.add_argument("--connect-commit-interval", type=float, default=10.0,
                        help="kafka-connect-hardened: the coordinator's commit interval (s)")
    parser.add_argument("--timeout", type=float, default=900.0, help="per contender: max wait for every row (s)")
    parser.add_argument("--no-save", action="store_true")
    parser.add_argument("--edge-root", default="",
                        help="run the edge from another checkout (e.g. git worktree add /tmp/before <commit>)")
    parser.add_argument("--edge-python", choices=("product", "dev"), default="product",
                        help="the edge's interpreter: a venv with only the edge's extras, as users install "
                             "it (product, bench/edge_venv.py), or the development venv (dev: pandas and "
                             "the lakehouse side importable, ~40 MB more RSS)")
    kill = parser.add_argument_group("kill -9 (bench/lake_ingest_kill.py)")
    kill.add_argument("--kill", action="store_true", help="only the kill -9 runs")
    kill.add_argument("--kill-runs", type=int, default=3, help="runs per contender")
    kill.add_argument("--kill-after", type=float, default=0.0,
                      help="seconds after the start to kill -9 (default: per contender, about mid-run of 2M)")
    kill.add_argument("--kill-at", choices=("time", "commit"), default="time",
                      help="Kafka Connect: kill after --kill-after s (time) or in its first commit round (commit)")
    kill.add_argument("--late-wait", type=float, default=900.0,
                      help="after a stall, how long more to wait for late rows before counting the rest lost (s)")
    scale = parser.add_argument_group("scaling (bench/lake_ingest_scale.py)")
    scale.add_argument("--scale", action="store_true", help="only: two edge instances vs one, Connect 2 tasks vs 1")
    fresh = parser.add_argument_group("freshness (bench/lake_ingest_freshness.py)")
    fresh.add_argument("--freshness", action="store_true", help="only the freshness part")
    fresh.add_argument("--fresh-seconds", type=float, default=60.0, help="steady phase per contender (s)")
    fresh.add_argument("--fresh-rate", type=int, default=20_000, help="rows/s of the steady phase")
    fresh.add_argument("--fresh-poll", type=float, default=0.5, help="catalog poll interval (s)")
    fresh.add_argument("--fresh-warmup", type=float, default=300.0, help="max wait for the first visible row (s)")
    fresh.add_argument("--register-every", type=float, default=30.0,
                       help="edge-datalake: start lakehouse register every N s (back to back if a run is longer)")
    fresh.add_argument("--spark-trigger", default="5 seconds", help="Spark's processing-time trigger")
    args = parser.parse_args(argv)
    args.records = args.records or (2_000_000 if args.kill else 10_000_000)
    if args.runs < 1:
        parser.error("--runs must be at least 1")
    known = FRESH_CONTENDERS if args.freshness else CONTENDERS
    args.only = [c.strip() for c in args.only.split(",") if c.strip()] or list(known)
    unknown = [c for c in args.only if c not in known]
    if unknown:
        parser.error(f"unknown contender(s) {unknown}; one of {known}")
    return args


def main(argv: Optional[List[str]] = None) -> None:
    args = parse_args(argv)
    wanted = ["kafka-connect"] if any(c.startswith("kafka-connect") for c in args.only) or args.scale else []
    services.up(None)  # the default set first: Kafka Connect needs the broker (a clean clone has none running)
    env = dict(os.environ, **services.up(wanted or None))
    env.pop("_STARTED", None)
    if args.edge_root:
        env["LAKE_INGEST_EDGE_ROOT"] = str(Path(args.edge_root).resolve())
    global EDGE_PY
    EDGE_PY = str(edge_python()) if args.edge_python == "product" else PY
    print(f"edge contenders run on {EDGE_PY}", file=sys.stderr)
    tag = uuid.uuid4().hex[:6]
    work = Path(os.environ.get("TMPDIR", "/tmp")) / f"lake-ingest-{tag}"
    work.mkdir(parents=True)
    print(f"work folder (logs): {work}", file=sys.stderr)
    this = sys.modules[__name__]
    if args.freshness:
        results = run_freshness(this, env, args.only, tag, work, args)
        bars = [(f"freshness {q} s", name, r[f"{q}_s"]) for name, r in results.items() for q in ("p50", "p99")
                if f"{q}_s" in r]
        if not args.no_save and bars:
            save("lake_ingest_freshness", f"produce -> visible at {args.fresh_rate:,} rows/s for "
                 f"{args.fresh_seconds:.0f} s (p50, p99)", "s", bars)
        return
    if args.kill:
        from lake_ingest_kill import run_kills

        run_kills(this, env, args.only, tag, work, args)
        return
    if args.scale:
        from lake_ingest_scale import run_scaling

        run_scaling(this, env, tag, work, args)
        return
    n = args.records
    topic = ensure_topic(env["KAFKA_BOOTSTRAP"], n)
    rounds: List[List[Run]] = []
    for number in range(args.runs):  # interleaved: every contender once per round
        runs: List[Run] = []
        for name in args.only:
            print(f"round {number + 1}/{args.runs}, {name}: landing {n:,} readings ...", file=sys.stderr, flush=True)
            runs.append(RUNNERS[name](env, topic, n, f"{tag}r{number}", work, args))
        if number == 0:
            report(env, runs, n)
        else:
            print_round(env, runs, n)
        rounds.append(runs)
    headline = throughput_bars(rounds)
    goals = goal_check(headline)
    print(f"\nmedians of {args.runs} run(s) (low - high):")
    for metric, name, median, low, high in headline:
        print(f"  {metric:<50} {name:<23} {median:>10,.1f}  ({low:,.1f} - {high:,.1f})")
    for metric, verdict in goals.items():
        print(f"  goal, {metric} ({GOALS.get(metric, GOALS['rows/s'])}): {verdict}")
    if not args.no_save and len(args.only) == len(CONTENDERS):
        save("lake_ingest", f"Kafka -> Iceberg, {n:,} JSON readings, to visible: edge vs Spark SS vs Kafka Connect, "
             f"median of {args.runs} runs", "mixed", headline, runs=args.runs, goals=GOALS,
             extra={"goal check (edge-datalake)": goals, "kafka-connect-hardened tasks.max": hardened_tasks(),
                    "connect worker start": "inside the clock (from the worker's restart)"})


if __name__ == "__main__":
    main()
