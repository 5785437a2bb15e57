"""Keyed-table benchmark: ``lakehouse upsert`` vs a hand-written ``MERGE INTO`` vs pyiceberg's ``Table.upsert``.

A changelog table (the edge's shape: the value's fields and the ``_kafka_*`` columns) first holds
``--rows`` inserts, one per key; ``lakehouse upsert`` creates the keyed table from it, once per
merge mode. Then, ``--runs`` times (default 3), a fresh batch of ``--changes`` changes arrives (90%
updates of existing keys, 10% inserts of new keys, plus 5% deletes as tombstones), and each
contender is timed merging it, in the same session (the order reversed every other run); the
medians are the figures:

* ``lakehouse upsert`` (the job: incremental read, set-aside check, last change per key, the
  merge on a branch with its bookmark, the fast-forward), per merge mode;
* a hand-written ``MERGE INTO`` of the same changes deduplicated beforehand (cached, not timed),
  into a copy of the same table, same mode;
* merge-on-read only, the least plan: a hand-written ``DELETE`` of the changed keys (broadcast)
  and ``INSERT`` of the upserts, the same deduplicated changes, into a third copy (what the job's
  exactness and bookkeeping cost is the job over it);
* pyiceberg's ``Table.upsert`` of the first batch's deduplicated upserts plus ``Table.delete`` of
  its deleted keys (as its docs advise: one Arrow table, unique keys), into a fresh table of the
  base rows, in a process of its own (its peak RSS measured alone), ``--pyiceberg-runs`` times
  (default ``--runs``), unless ``--skip-pyiceberg``.

Then reads: ``--rounds`` more merge rounds into the default mode's table, a full scan of it (every
column, deletes applied), against the same rows written fresh (compacted), and after ``lakehouse
maintain --action compact-deletes``. Every table is compared by value with a replay computed here
in numpy (the base rows, then each change in Kafka order; deleted keys absent): row count and the
sum of a 64-bit hash of every row; a difference exits 1 and saves nothing.

    ./dev bench upsert_bench                                   # 10M rows, 1M changes, 3 runs (reference size)
    ./dev bench upsert_bench --rows 200000 --changes 20000 --runs 1    # quick run

Goals: upsert <= 1.25x the hand-written MERGE (same mode); the default mode >= 10x faster than
pyiceberg; after 10 rounds a full scan <= 1.5x the compacted rows', <= 1.1x after maintain.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

PARTITIONS = 4
TS = 1_767_225_600_000
FINGERPRINT = "count(1) AS n, sum(CAST(xxhash64(key, name, level, value) AS DECIMAL(38, 0))) AS h"
MODES = ("merge-on-read", "copy-on-write")


# -- the data and its replay (numpy: independent of the job's Spark code) -------------------------
def base_values(ids):
    """The base row of each key id: name, level, value (a pure function of the id)."""
    import numpy as np

    return (np.char.add("n", (ids % 97).astype(str)), (ids % 1000).astype(np.int32), ids.astype(np.float64) * 0.5)


def make_changes(rows: int, changes: int, seed: int, start_id: int = 0):
    """(ids, deleted, level, value) of the changes, in Kafka order: 90% updates, 10% inserts of new
    ids, 5% more as deletes of existing ids, shuffled."""
    import numpy as np

    rng = np.random.default_rng(seed)
    updates = rng.integers(0, rows, int(changes * 0.9))
    inserts = np.arange(start_id, start_id + changes - len(updates))
    deletes = rng.integers(0, rows, int(changes * 0.05))
    ids = np.concatenate([updates, inserts, deletes])
    deleted = np.concatenate([np.zeros(len(updates) + len(inserts), bool), np.ones(len(deletes), bool)])
    order = rng.permutation(len(ids))
    ids, deleted = ids[order], deleted[order]
    level = rng.integers(0, 1_000_000, len(ids)).astype(np.int32)
    value = rng.random(len(ids))
    return ids.astype(np.int64), deleted, level, value


def last_per_key(ids, *columns):
    """The last change of each id (the changes in Kafka order: a key's partition is fixed)."""
    import numpy as np

    reversed_ids = ids[::-1]
    _, first = np.unique(reversed_ids, return_index=True)
    keep = len(ids) - 1 - first
    return (ids[keep], *(c[keep] for c in columns))


def key_strings(ids):
    import numpy as np

    return np.char.add("k", np.char.zfill(ids.astype(str), 10))


def replay_table(rows: int, batches: list):
    """The keyed table a replay gives: the base rows, then every batch of changes in order."""
    import numpy as np
    import pyarrow as pa

    alive = np.ones(rows + sum(len(b[0]) for b in batches), bool)
    alive[rows:] = False
    name = np.empty(len(alive), dtype=object)
    level = np.zeros(len(alive), np.int32)
    value = np.zeros(len(alive), np.float64)
    base = np.arange(rows)
    name[:rows], level[:rows], value[:rows] = base_values(base)
    for ids, deleted, lv, vl in batches:
        last_ids, last_deleted, last_level, last_value = last_per_key(ids, deleted, lv, vl)
        alive[last_ids] = ~last_deleted
        level[last_ids], value[last_ids] = last_level, last_value
        name[last_ids] = np.char.add("u", (last_level % 89).astype(str))
    keep = np.flatnonzero(alive)
    return pa.table({"key": key_strings(keep), "name": name[keep].astype(str), "level": level[keep],
                     "value": value[keep]})


def changelog_arrow(ids, deleted, level, value, first_offset: int):
    import numpy as np
    import pyarrow as pa

    keys = key_strings(ids)
    names = np.char.add("u", (level % 89).astype(str))
    return pa.table({
        "name": pa.array(np.where(deleted, None, names), pa.string()),
        "level": pa.array(level, pa.int32(), mask=deleted), "value": pa.array(value, pa.float64(), mask=deleted),
        "_kafka_topic": pa.array(["devices"] * len(ids), pa.string()),
        "_kafka_partition": pa.array((ids % PARTITIONS).astype(np.int32)),
        "_kafka_offset": pa.array(np.arange(first_offset, first_offset + len(ids), dtype=np.int64)),
        "_kafka_timestamp": pa.array(np.full(len(ids), TS, np.int64)),
        "_kafka_key": pa.array([k.encode() for k in keys], pa.binary()),
        "_kafka_tombstone": pa.array(deleted)})


# -- Spark side ---------------------------------------------------------------------------------
def fingerprint(spark, sql: str) -> tuple[int, int]:
    row = spark.sql(f"SELECT {FINGERPRINT} FROM ({sql})").first()
    return int(row.n), int(row.h or 0)


def timed(action) -> float:
    started = time.monotonic()
    action()
    return time.monotonic() - started


def scan_seconds(spark, table: str, repeat: int = 3) -> float:
    spark.sql(f"REFRESH TABLE {table}")
    query = f"SELECT {FINGERPRINT} FROM {table}"
    spark.sql(query).collect()  # warm-up
    return statistics.median(timed(lambda: spark.sql(query).collect()) for _ in range(repeat))


def append_changes(spark, source: str, arrow) -> None:
    spark.createDataFrame(arrow).writeTo(source).append()


def data_files(spark, table: str) -> int:
    return int(spark.sql(f"SELECT count(*) FROM {table}.data_files").first()[0])


def _steps(phases: dict[str, float]) -> str:
    return " ".join(f"{step} {seconds:.2f}" for step, seconds in phases.items())


LEAST = "DELETE + INSERT merge-on-read"


def hand_merge(spark, table: str, dedup_view: str) -> None:
    spark.sql(f"""MERGE INTO {table} t USING {dedup_view} s ON t.key = s.key
        WHEN MATCHED AND s.deleted THEN DELETE
        WHEN MATCHED THEN UPDATE SET t.name = s.name, t.level = s.level, t.value = s.value
        WHEN NOT MATCHED AND NOT s.deleted THEN INSERT (key, name, level, value) VALUES (s.key, s.name, s.level, s.value)""")


def hand_replace(spark, table: str, dedup_view: str) -> None:
    """The least plan of a merge-on-read upsert: the changed keys' rows deleted (the keys
    broadcast, as ``lakehouse upsert`` does for an increment it holds in memory), the upserts
    inserted; two commits, no branch."""
    spark.conf.set("spark.sql.autoBroadcastJoinThreshold", str(256 * 2**20))
    try:
        spark.sql(f"DELETE FROM {table} t WHERE EXISTS (SELECT 1 FROM {dedup_view} s WHERE t.key = s.key)")
    finally:
        spark.conf.unset("spark.sql.autoBroadcastJoinThreshold")
    spark.sql(f"INSERT INTO {table} SELECT key, name, level, value FROM {dedup_view} WHERE NOT deleted")


def pyiceberg_child(work: Path) -> int:
    """Run pyiceberg's upsert alone (its own process, so its peak RSS is its own)."""
    import pyarrow.compute as pc
    import pyarrow.parquet as pq
    from pyiceberg.catalog import load_catalog
    from pyiceberg.expressions import In

    base = pq.read_table(work / "py_base.parquet")
    dedup = pq.read_table(work / "py_dedup.parquet")
    # the local REST catalog (and its S3 warehouse): pyiceberg's SQL catalog needs SQLAlchemy,
    # which the project does not install
    catalog = load_catalog("bench", type="rest", uri=os.environ["ICEBERG_REST_URI"])
    namespace = f"upsert_bench_{os.getpid()}"
    catalog.create_namespace_if_not_exists(namespace)
    table = catalog.create_table(f"{namespace}.devices", schema=base.schema)
    table.append(base)
    upserts = dedup.filter(pc.invert(dedup["deleted"])).drop_columns(["deleted"])
    deleted = dedup.filter(dedup["deleted"])["key"].to_pylist()
    rss0 = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    started = time.monotonic()
    table.upsert(upserts, join_cols=["key"])
    if deleted:
        table.delete(In("key", deleted))
    seconds = time.monotonic() - started
    result = table.scan().to_arrow()
    out = {"seconds": seconds, "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
           "rss_before_mb": rss0 / 1024}
    pq.write_table(result, work / "py_result.parquet")
    catalog.purge_table(f"{namespace}.devices")
    catalog.drop_namespace(namespace)
    print("PYICEBERG " + json.dumps(out), flush=True)
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, default=10_000_000, help="keys in the table (default 10M)")
    parser.add_argument("--changes", type=int, default=1_000_000, help="changes merged (default 1M)")
    parser.add_argument("--rounds", type=int, default=10, help="merge rounds before the read test (default 10)")
    parser.add_argument("--round-changes", type=int, help="changes per read-test round (default --changes / 10)")
    parser.add_argument("--runs", type=int, default=3,
                        help="merge runs, each a fresh batch of --changes; medians are reported (default 3)")
    parser.add_argument("--pyiceberg-runs", type=int,
                        help="runs of pyiceberg's Table.upsert of the first batch (default --runs)")
    parser.add_argument("--skip-pyiceberg", action="store_true", help="leave pyiceberg's Table.upsert out")
    parser.add_argument("--memory", default="6g", help="the local Spark's memory (driver = executor), shared by the "
                        "upsert and the hand-written MERGE; the default 2g ran the hand MERGE out of heap at 10M")
    parser.add_argument("--workdir", help="where the warehouse goes (default: a temp folder, removed)")
    parser.add_argument("--no-save", action="store_true", help="print only (bench/results/upsert_bench.json untouched)")
    parser.add_argument("--pyiceberg-child", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.pyiceberg_child:
        return pyiceberg_child(Path(args.pyiceberg_child))
    import logging

    import numpy as np
    import pyarrow as pa
    import pyarrow.parquet as pq

    logging.basicConfig(level=logging.WARNING, format="%(asctime)s %(name)s: %(message)s", datefmt="%H:%M:%S")
    from lakehouse.maintenance import MaintainOptions, run_maintain
    from lakehouse.session import SparkSettings, build_spark
    from lakehouse.upsert import UpsertOptions, run_upsert

    work = Path(args.workdir or tempfile.mkdtemp(prefix="upsert-bench-"))
    work.mkdir(parents=True, exist_ok=True)
    round_changes = args.round_changes or max(1, args.changes // 10)
    print(f"upsert bench: {args.rows:,} rows, {args.changes:,} changes (+5% deletes), {args.rounds} rounds of "
          f"{round_changes:,}; Spark memory {args.memory}; work dir {work}; load avg {os.getloadavg()[0]:.1f}", flush=True)
    failures: list[str] = []
    try:
        env = dict(os.environ)
        env.pop("ICEBERG_REST_URI", None)
        env["ICEBERG_WAREHOUSE"] = (work / "warehouse").as_uri()
        settings = SparkSettings.from_env(env=env, catalog_name="bench", local_dir=str(work / "spark"),
                                          app_name="upsert-bench")
        settings.extra_conf["spark.driver.memory"] = args.memory
        spark = build_spark(settings)
        ns = f"bench.b{int(time.time())}"
        source = f"{ns}.devices_changelog"
        spark.sql(f"CREATE NAMESPACE IF NOT EXISTS {ns}")
        base_ids = np.arange(args.rows)
        names, levels, values = base_values(base_ids)
        base = pa.table({"name": pa.array(names.astype(str)), "level": pa.array(levels), "value": pa.array(values),
                         "_kafka_topic": pa.array(["devices"] * args.rows, pa.string()),
                         "_kafka_partition": pa.array((base_ids % PARTITIONS).astype(np.int32)),
                         "_kafka_offset": pa.array(base_ids.astype(np.int64)),
                         "_kafka_timestamp": pa.array(np.full(args.rows, TS, np.int64)),
                         "_kafka_key": pa.array([k.encode() for k in key_strings(base_ids)], pa.binary()),
                         "_kafka_tombstone": pa.array(np.zeros(args.rows, bool))})
        t0 = time.monotonic()
        spark.createDataFrame(base).writeTo(source).using("iceberg").create()
        print(f"changelog with {args.rows:,} inserts written in {time.monotonic() - t0:.1f}s", flush=True)
        tables = {mode: f"{ns}.devices_{mode.replace('-', '_')}" for mode in MODES}
        hands = {mode: f"{tables[mode]}_hand" for mode in MODES}
        least = f"{tables['merge-on-read']}_least"  # the hand-written DELETE + INSERT
        for mode in MODES:
            version = 3 if mode == "merge-on-read" else 2
            seconds = timed(lambda: run_upsert(spark, UpsertOptions(source=source, table=tables[mode], merge_mode=mode,
                                                                   format_version=version), progress=lambda _l: None))
            props = ", ".join(f"'{k}' = '{v}'" for k, v in spark.sql(f"SHOW TBLPROPERTIES {tables[mode]}").collect()
                              if k.startswith(("write.", "format-version")))
            spark.sql(f"CREATE TABLE {hands[mode]} USING iceberg TBLPROPERTIES ({props}) AS SELECT * FROM {tables[mode]}")
            if mode == "merge-on-read":
                spark.sql(f"CREATE TABLE {least} USING iceberg TBLPROPERTIES ({props}) AS SELECT * FROM {tables[mode]}")
            print(f"{mode}: keyed table created by the first upsert run in {seconds:.1f}s", flush=True)

        # --runs merge runs: each appends a fresh batch of changes, then every contender merges it
        # (the upsert first in even runs, the hand MERGE first in odd ones); medians are reported
        batches: list = []
        offset, next_id = args.rows, args.rows
        runs: dict[str, list[float]] = {}
        phases: dict[str, list[dict[str, float]]] = {mode: [] for mode in MODES}
        dedup = None
        for run in range(args.runs):
            ids, deleted, level, value = make_changes(args.rows, args.changes, seed=1 + run, start_id=next_id)
            next_id += args.changes
            batches.append((ids, deleted, level, value))
            append_changes(spark, source, changelog_arrow(ids, deleted, level, value, offset))
            offset += len(ids)
            last_ids, last_deleted, last_level, last_value = last_per_key(ids, deleted, level, value)
            batch_dedup = pa.table({"key": key_strings(last_ids), "name": np.char.add("u", (last_level % 89).astype(str)),
                                    "level": last_level, "value": last_value, "deleted": last_deleted})
            dedup = dedup if dedup is not None else batch_dedup  # pyiceberg merges the first batch
            cached = spark.createDataFrame(batch_dedup).cache()
            cached.createOrReplaceTempView("dedup")
            spark.table("dedup").count()  # deduplicated beforehand: not timed
            expected = replay_table(args.rows, batches)
            spark.createDataFrame(expected).createOrReplaceTempView("replay")
            want = fingerprint(spark, "SELECT * FROM replay")
            for mode in MODES:
                report = []
                contenders = [
                    (f"upsert {mode}", lambda: report.append(run_upsert(
                        spark, UpsertOptions(source=source, table=tables[mode]), progress=lambda _l: None))),
                    (f"MERGE INTO {mode}", lambda: hand_merge(spark, hands[mode], "dedup"))]
                if mode == "merge-on-read":
                    contenders.append((LEAST, lambda: hand_replace(spark, least, "dedup")))
                for name, action in (contenders if run % 2 == 0 else contenders[::-1]):
                    runs.setdefault(name, []).append(timed(action))
                phases[mode].append(report[0].phases)
                for name in (tables[mode], hands[mode], *([least] if mode == "merge-on-read" else [])):
                    got = fingerprint(spark, f"SELECT * FROM {name}")
                    if got != want:
                        failures.append(f"{name} after run {run + 1}: {got} != replay {want}")
                print(f"run {run + 1} {mode}: upsert {runs[f'upsert {mode}'][-1]:.1f}s "
                      f"({report[0].summary_line()}; steps {_steps(report[0].phases)}); hand MERGE "
                      f"{runs[f'MERGE INTO {mode}'][-1]:.1f}s", flush=True)
            cached.unpersist()
        times: dict[str, float] = {name: statistics.median(values) for name, values in runs.items()}

        pyiceberg: dict = {}
        if not args.skip_pyiceberg:
            base_rows = pa.table({"key": key_strings(base_ids), "name": names.astype(str), "level": levels,
                                  "value": values})
            pq.write_table(base_rows, work / "py_base.parquet")
            pq.write_table(dedup, work / "py_dedup.parquet")
            spark.createDataFrame(replay_table(args.rows, batches[:1])).createOrReplaceTempView("replay_first")
            want_first = fingerprint(spark, "SELECT * FROM replay_first")
            from infra.local import services

            child_env = dict(os.environ, **services.up(["iceberg-rest", "s3"]))
            child_env.pop("_STARTED", None)
            py_runs: list[dict] = []
            for run in range(args.pyiceberg_runs or args.runs):
                child = subprocess.run([sys.executable, __file__, "--pyiceberg-child", str(work)],
                                       capture_output=True, text=True, env=child_env)
                line = next((x for x in child.stdout.splitlines() if x.startswith("PYICEBERG ")), None)
                if line is None:
                    failures.append(f"pyiceberg upsert failed: {child.stderr[-2000:]}")
                    break
                py_runs.append(json.loads(line[len("PYICEBERG "):]))
                result = pq.read_table(work / "py_result.parquet")
                spark.createDataFrame(result).createOrReplaceTempView("py_result")
                got = fingerprint(spark, "SELECT * FROM py_result")
                if got != want_first:
                    failures.append(f"pyiceberg result: {got} != replay {want_first}")
                print(f"pyiceberg Table.upsert + delete, run {run + 1}: {py_runs[-1]['seconds']:.1f}s, peak RSS "
                      f"{py_runs[-1]['peak_rss_mb']:.0f} MB", flush=True)
            if py_runs:
                times["pyiceberg Table.upsert"] = statistics.median(r["seconds"] for r in py_runs)
                pyiceberg = {"seconds": times["pyiceberg Table.upsert"],
                             "peak_rss_mb": max(r["peak_rss_mb"] for r in py_runs)}

        # reads: rounds of merges into the default mode's table, then scans
        table = tables["merge-on-read"]
        for number in range(args.rounds):
            r_ids, r_deleted, r_level, r_value = make_changes(args.rows, round_changes, seed=100 + number,
                                                              start_id=next_id)
            next_id += round_changes
            batches.append((r_ids, r_deleted, r_level, r_value))
            append_changes(spark, source, changelog_arrow(r_ids, r_deleted, r_level, r_value, offset))
            offset += len(r_ids)
            run_upsert(spark, UpsertOptions(source=source, table=table), progress=lambda _l: None)
        expected = replay_table(args.rows, batches)
        spark.createDataFrame(expected).createOrReplaceTempView("replay_rounds")
        want_rounds = fingerprint(spark, "SELECT * FROM replay_rounds")
        if fingerprint(spark, f"SELECT * FROM {table}") != want_rounds:
            failures.append(f"{table} after {args.rounds} rounds differs from the replay")
        deletes = spark.sql(f"SELECT count(*) FROM {table}.delete_files").first()[0]
        files_rounds = data_files(spark, table)
        scan_rounds = scan_seconds(spark, table)
        compacted = f"{table}_fresh"
        spark.sql(f"CREATE TABLE {compacted} USING iceberg AS SELECT * FROM {table}")
        files_fresh = data_files(spark, compacted)
        scan_fresh = scan_seconds(spark, compacted)
        maintain = run_maintain(spark, MaintainOptions(table=table, action="compact-deletes"))
        files_maintained = data_files(spark, table)
        scan_maintained = scan_seconds(spark, table)
        if fingerprint(spark, f"SELECT * FROM {table}") != want_rounds:
            failures.append(f"{table} after maintain differs from the replay")
        print(f"reads after {args.rounds} rounds ({files_rounds} data files, {deletes} delete files): "
              f"{scan_rounds:.2f}s; the same rows compacted ({files_fresh} data files): {scan_fresh:.2f}s; after "
              f"maintain ({files_maintained} data files): {scan_maintained:.2f}s ({maintain.summary_line()})",
              flush=True)
        spark.stop()
    finally:
        if not args.workdir:
            shutil.rmtree(work, ignore_errors=True)
    if failures:
        print("FAILED (nothing saved):\n  " + "\n  ".join(failures))
        return 1
    mor, cow = times["upsert merge-on-read"], times["upsert copy-on-write"]
    print(f"\nmedians of {args.runs} run(s)")
    for mode in MODES:
        ratio = times[f"upsert {mode}"] / times[f"MERGE INTO {mode}"]
        median_steps = {step: statistics.median(p.get(step, 0.0) for p in phases[mode]) for step in phases[mode][0]}
        print(f"{mode}: upsert {times[f'upsert {mode}']:.1f}s vs hand MERGE {times[f'MERGE INTO {mode}']:.1f}s "
              f"= {ratio:.2f}x (goal <= 1.25x); upsert's steps {_steps(median_steps)}")
    print(f"merge-on-read: upsert {mor:.1f}s vs the least plan, a hand DELETE + INSERT, {times[LEAST]:.1f}s = "
          f"{mor / times[LEAST]:.2f}x (what exactness and bookkeeping cost)")
    if "pyiceberg Table.upsert" in times:
        print(f"pyiceberg Table.upsert {times['pyiceberg Table.upsert']:.1f}s = "
              f"{times['pyiceberg Table.upsert'] / mor:.1f}x the default mode's upsert (goal >= 10x)")
    print(f"scan after {args.rounds} rounds / compacted = {scan_rounds / scan_fresh:.2f}x (goal <= 1.5x); "
          f"after maintain / compacted = {scan_maintained / scan_fresh:.2f}x (goal <= 1.1x)")
    print("every output equal to the replay by value (row count and row hashes)")
    if not args.no_save:
        from bench.results import save

        size = f"{args.rows:,} rows, {args.changes:,} changes"
        bars = [(f"merge {size}", series, seconds) for series, seconds in times.items()]
        bars += [("full scan", f"after {args.rounds} rounds", scan_rounds), ("full scan", "compacted", scan_fresh),
                 ("full scan", "after maintain", scan_maintained)]
        save("upsert_bench", f"keyed table: {size}; reads after {args.rounds} rounds", "s", bars, runs=args.runs,
             goals={"upsert / hand MERGE": "<= 1.25x", "pyiceberg / upsert (default mode)": ">= 10x",
                    "scan after rounds / compacted": "<= 1.5x", "scan after maintain / compacted": "<= 1.1x"},
             extra={"runs": args.runs, "each_run": {name: [round(t, 2) for t in values] for name, values in runs.items()},
                    "upsert_steps": {mode: [{k: round(v, 2) for k, v in p.items()} for p in phases[mode]] for mode in MODES},
                    "data_files": {"after rounds": files_rounds, "compacted": files_fresh, "after maintain": files_maintained},
                    "ratios": {"merge-on-read upsert/MERGE": round(mor / times["MERGE INTO merge-on-read"], 2),
                               "merge-on-read upsert/hand DELETE+INSERT": round(mor / times[LEAST], 2),
                               "copy-on-write upsert/MERGE": round(cow / times["MERGE INTO copy-on-write"], 2),
                               "pyiceberg/upsert": (round(times["pyiceberg Table.upsert"] / mor, 1)
                                                    if "pyiceberg Table.upsert" in times else None),
                               "scan rounds/compacted": round(scan_rounds / scan_fresh, 2),
                               "scan maintained/compacted": round(scan_maintained / scan_fresh, 2)},
                    "pyiceberg_peak_rss_mb": round(pyiceberg.get("peak_rss_mb", 0)),
                    "delete_files_after_rounds": int(deletes)})
    return 0


if __name__ == "__main__":
    sys.exit(main())
