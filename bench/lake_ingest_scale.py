"""Scaling of ``bench/lake_ingest.py --scale``: two edge instances vs one, Kafka Connect with two tasks vs one.

    ./dev bench lake_ingest --scale                      # 10,000,000 readings (start-up well under 10%)
    ./dev bench lake_ingest --scale --records 200000     # a quick check of the mode (start-up dominates)

On the same topic, each variant lands every reading in a fresh common table, measured like the
throughput runs (``VisibleClock``: start to every row visible; CPU and peak RSS over all of the
variant's processes):

- ``edge-datalake x1`` / ``x2``: one / two edge processes in one consumer group, ``DataLakeSink``
  registering each checkpoint in the same table (the registrar's ledger keeps them apart);
- ``kafka-connect-hardened, 1 task`` / ``2 tasks``: the hardened connector on a fresh worker.

What limits both on 2 cores is read from the same run: the broker's CPU seconds during it, its
share of the machine (CPU seconds / (wall seconds x cores)) and of the CPU the run cost (broker +
contender). ``start-up`` is the time to the first record processed (the edge) or to the first rows
visible (Connect, which includes its first commit interval: an upper bound), and its share of the
run is printed so a run too short to show scaling is visible as such.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any, Dict, List

from lake_ingest_data import ensure_topic
from lake_ingest_visible import create_lake_table


def edge_variant(li: Any, env: Dict[str, str], topic: str, n: int, tag: str, work: Path, args: Any,
                 count: int) -> Any:
    namespace = f"{li.NAMESPACE}_{tag}s{count}"
    table = f"{namespace}.readings"
    create_lake_table(li.catalog(env), table)
    cmds = [li.inline_edge_cmd(env, topic, f"bench-scale-{count}-{tag}", namespace, work / f"scale-lake-{count}",
                               args.commit_interval) + ["--shared-group"] for _ in range(count)]
    run = li.run_processes(f"edge-datalake x{count}", cmds, env, table, n, work, args)
    firsts = [d["first_ms"] for d in run["done"] if d["first_ms"]]
    run["startup_s"] = (min(firsts) / 1000 - run["started"]) if firsts else 0.0
    return run


def connect_variant(li: Any, env: Dict[str, str], topic: str, n: int, tag: str, work: Path, args: Any,
                    tasks: int) -> Any:
    run = li.run_connect("kafka-connect-hardened", env, topic, n, f"{tag}t{tasks}", work, args, tasks=tasks)
    run["name"] = f"kafka-connect-hardened, {tasks} task{'s' if tasks > 1 else ''}"
    # start-up: the worker's start to its tasks running (run_connect), as the edge's to its first batch
    return run


def run_scaling(li: Any, env: Dict[str, str], tag: str, work: Path, args: Any) -> List[Any]:
    """Every variant in turn on one topic of ``args.records``; prints and returns the runs."""
    n = args.records
    topic = ensure_topic(env["KAFKA_BOOTSTRAP"], n)
    runs: List[Any] = []
    for count in (1, 2):
        print(f"edge-datalake x{count}: landing {n:,} readings ...", file=sys.stderr, flush=True)
        runs.append(edge_variant(li, env, topic, n, tag, work, args, count))
    for tasks in (1, 2):
        print(f"kafka-connect-hardened, {tasks} task(s): landing {n:,} readings ...", file=sys.stderr, flush=True)
        runs.append(connect_variant(li, env, topic, n, tag, work, args, tasks))
    print_scaling(runs, n)
    ids = [li.check_ids(env, run["table"], n) for run in runs]
    for run, found in zip(runs, ids):
        print(f"  {run['name']:<30} {found['rows']:,} rows, {found['duplicates']} duplicate(s), "
              f"{found['missing']} missing")
    if not args.no_save and all(run["seconds"] and not found["missing"] for run, found in zip(runs, ids)):
        from results import save

        bars = [(metric, run["name"], value(run)) for run in runs for metric, value in (
            ("rows/s to visible (thousands)", lambda r: r.rows_per_s / 1000),
            ("start-up s", lambda r: r["startup_s"]), ("CPU s per M rows", lambda r: r.cpu_per_m),
            ("peak RSS MB", lambda r: r["rss_mb"]), ("broker CPU s", lambda r: r["broker_cpu"]))]
        save("lake_ingest_scale", f"scaling, {n:,} readings to visible: edge processes 1 and 2, Connect tasks 1 and 2",
             "mixed", bars)
    return runs


def print_scaling(runs: List[Any], n: int) -> None:
    cores = os.cpu_count() or 1
    print(f"\nscaling, {n:,} readings to visible ({cores} cores; load average {os.getloadavg()[0]:.1f} at the end)")
    print(f"{'variant':<30} {'rows/s':>9} {'x':>5} {'seconds':>8} {'start-up s':>10} {'start-up %':>10} "
          f"{'CPU s/M':>8} {'RSS MB':>7} {'broker CPU s':>12} {'broker % machine':>16} {'broker % of run CPU':>19}")
    base: Dict[str, float] = {}
    for run in runs:
        kind = run["name"].split(" ")[0].rstrip(",")
        speed = run.rows_per_s
        base.setdefault(kind, speed)
        seconds = run["seconds"] or float("nan")
        print(f"{run['name']:<30} {speed:>9,.0f} {speed / base[kind] if base[kind] else 0:>5.2f} {seconds:>8.1f} "
              f"{run['startup_s']:>10.1f} {100 * run['startup_s'] / seconds:>10.1f} {run.cpu_per_m:>8.1f} "
              f"{run['rss_mb']:>7.0f} {run['broker_cpu']:>12.1f} {100 * run['broker_cpu'] / (seconds * cores):>16.1f} "
              f"{100 * run['broker_cpu'] / ((run['broker_cpu'] + run['cpu']) or 1):>19.1f}")
