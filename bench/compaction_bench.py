"""Compaction benchmark: many small edge files -> register -> aggregation query -> compact -> query.

The edge files are written by the real ``DataLakeSink`` (``stream_edge``), one flush per
simulated checkpoint, each flush writing one small file into every hourly partition; they are
registered in place into an Iceberg table (embedded catalog by default), then compacted with
the ``compact`` job. Prints the file counts, the compaction wall time and the time of a typical
aggregation query before and after (median of ``--repeat`` runs, after one warm-up run).

    ./dev bench compaction_bench                          # ~2,000 files, ~10M rows (reference size)
    ./dev bench compaction_bench --files 200 --rows 200000  # quick run while developing
    ./dev bench compaction_bench --catalog rest           # Iceberg through the local REST server
    ./dev bench compaction_bench --cluster                # the jobs on the local Spark standalone cluster

Targets: >= 20x fewer files and >= 3x faster query after compaction.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

QUERY = ("SELECT sensor, hour, count(*) AS n, avg(value) AS mean, max(value) AS peak "
         "FROM {table} GROUP BY sensor, hour ORDER BY sensor, hour")
BASE_TS = 1_767_225_600_000  # 2026-01-01T00:00:00Z
HOUR_MS = 3_600_000


def write_edge_files(base: Path, files: int, rows: int, partitions: int) -> Path:
    """Write ``files`` small files (``partitions`` hours x commits) through the real sink."""
    from stream_edge.sinks.core.datalake import DataLakeSink

    commits = max(1, files // partitions)
    per_file = max(1, rows // (commits * partitions))
    sink = DataLakeSink("sensor_readings", storage_url=base.as_uri(), s3_prefix="time-series",
                        hive_columns=["year", "month", "day", "hour"], timestamp_column="ts_ms",
                        fsync=False)
    sink.setup()
    offset = 0
    started = time.monotonic()
    for commit in range(commits):
        for part in range(partitions):
            hour_ts = BASE_TS + part * HOUR_MS
            for i in range(per_file):
                seq = offset
                sink.add({"ts_ms": hour_ts + (seq % HOUR_MS), "sensor": f"sensor-{seq % 200:03d}",
                          "value": (seq % 1000) * 0.25, "seq": seq}, None, hour_ts, [], "sensors", 0, offset)
                offset += 1
        sink.flush("sensors", 0)
        if (commit + 1) % max(1, commits // 10) == 0:
            print(f"  edge: {commit + 1}/{commits} commits, {offset:,} rows "
                  f"({time.monotonic() - started:.0f}s)", flush=True)
    return base / "time-series" / "sensor_readings"


def time_query(spark, table: str, repeat: int) -> tuple[float, int]:
    spark.sql(f"REFRESH TABLE {table}")
    spark.sql(QUERY.format(table=table)).collect()  # warm-up: planning caches, JIT
    times = []
    rows = 0
    for _ in range(repeat):
        started = time.monotonic()
        rows = len(spark.sql(QUERY.format(table=table)).collect())
        times.append(time.monotonic() - started)
    return statistics.median(times), rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--files", type=int, default=2000, help="small edge files to write (default 2000)")
    parser.add_argument("--rows", type=int, default=10_000_000, help="rows in total (default 10M)")
    parser.add_argument("--partitions", type=int, default=20, help="hourly partitions (default 20)")
    parser.add_argument("--target-file-size", default="128MB", help="compaction target (default 128MB)")
    parser.add_argument("--repeat", type=int, default=3, help="query runs to take the median of (default 3)")
    parser.add_argument("--catalog", choices=("embedded", "rest"), default="embedded")
    parser.add_argument("--cluster", action="store_true",
                        help="run the jobs on the loopback Spark standalone cluster (./dev services up "
                             "spark-master spark-worker-1 spark-worker-2, started if needed) instead of local[*]")
    parser.add_argument("--workdir", help="where the lake and warehouse go (default: a temp folder, removed)")
    args = parser.parse_args(argv)
    import logging
    logging.basicConfig(level=logging.WARNING, format="%(asctime)s %(name)s: %(message)s", datefmt="%H:%M:%S")
    logging.getLogger("lakehouse").setLevel(logging.INFO)  # the jobs' progress lines
    if args.files < 1 or args.rows < args.files or args.partitions < 1:
        parser.error("need --files >= 1, --rows >= --files and --partitions >= 1")
    partitions = min(args.partitions, args.files)

    from lakehouse.compaction import CompactOptions, run_compact
    from lakehouse.register import RegisterOptions, run_register
    from lakehouse.session import SparkSettings, build_spark
    from pipelines.cli import parse_size

    work = Path(args.workdir or tempfile.mkdtemp(prefix="compaction-bench-"))
    work.mkdir(parents=True, exist_ok=True)
    print(f"compaction bench: {args.files:,} files, {args.rows:,} rows, {partitions} partitions, "
          f"catalog {args.catalog}, work dir {work}; load avg {os.getloadavg()[0]:.1f}", flush=True)
    try:
        t0 = time.monotonic()
        root = write_edge_files(work / "lake", args.files, args.rows, partitions)
        print(f"edge files written in {time.monotonic() - t0:.1f}s", flush=True)

        env = dict(os.environ)
        if args.catalog == "embedded":
            env.pop("ICEBERG_REST_URI", None)
            env["ICEBERG_WAREHOUSE"] = (work / "warehouse").as_uri()
        else:
            from infra.local import services
            env.update(services.up(["iceberg-rest"]))
        if args.cluster:
            from infra.local import services
            cluster = services.up(["spark-master", "spark-worker-1", "spark-worker-2"])
            env["LAKEHOUSE_SPARK_MASTER"] = cluster["SPARK_CLUSTER_MASTER"]
            print(f"Spark master: {env['LAKEHOUSE_SPARK_MASTER']} (2 workers, 1 core and 1g each)", flush=True)
        settings = SparkSettings.from_env(env=env, catalog_name="bench", local_dir=str(work / "spark"),
                                          app_name="compaction-bench")
        spark = build_spark(settings)
        table = f"bench.bench_{int(time.time())}.sensor_readings"

        t0 = time.monotonic()
        reg = run_register(spark, RegisterOptions(source=root.as_uri(), table=table, table_format="iceberg"))
        print(f"registered in {time.monotonic() - t0:.1f}s: {reg.summary_line()}", flush=True)

        q_before, groups = time_query(spark, table, args.repeat)
        print(f"query before compaction: {q_before:.2f}s ({groups} groups)", flush=True)

        t0 = time.monotonic()
        comp = run_compact(spark, CompactOptions(table=table, table_format="iceberg",
                                                 target_file_size=parse_size(args.target_file_size),
                                                 cleanup=False))
        compact_s = time.monotonic() - t0
        print(f"compacted in {compact_s:.1f}s: {comp.summary_line()}", flush=True)

        q_after, groups_after = time_query(spark, table, args.repeat)
        assert groups_after == groups, "the query result changed shape after compaction"
        print(f"query after compaction: {q_after:.2f}s ({groups_after} groups)", flush=True)

        ratio_files = comp.files_before / max(1, comp.files_after)
        ratio_query = q_before / max(q_after, 1e-9)
        print()
        print(f"files before/after:      {comp.files_before:,} -> {comp.files_after:,} ({ratio_files:.1f}x fewer; target >= 20x)")
        print(f"rows before/after:       {comp.rows_before:,} -> {comp.rows_after:,}")
        print(f"compaction wall time:    {compact_s:.1f}s (rewrite + verification)")
        print(f"aggregation query:       {q_before:.2f}s -> {q_after:.2f}s ({ratio_query:.1f}x faster; target >= 3x)")
        print(f"query: {QUERY.format(table='<table>')}")
        spark.stop()
    finally:
        if not args.workdir:
            shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
