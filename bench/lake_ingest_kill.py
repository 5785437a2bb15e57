"""kill -9 runs of ``bench/lake_ingest.py --kill``: rows lost, told apart from rows late, N runs per contender.

    ./dev bench lake_ingest --kill                                   # 2M readings, 3 runs per contender
    ./dev bench lake_ingest --kill --kill-runs 5 --only kafka-connect-hardened,edge-datalake
    ./dev bench lake_ingest --kill --records 200000 --kill-after 4 --kill-runs 1 --late-wait 60   # a quick check
    ./dev bench lake_ingest --kill --kill-at commit --only kafka-connect-defaults,kafka-connect-hardened

Each run lands the topic in a fresh common table (fresh consumer group, lake folder, checkpoint)
under :class:`~lake_ingest_visible.VisibleClock`, kills the contender's processing process with
SIGKILL ``--kill-after`` seconds after its start (the edge process; the Spark driver JVM; the
Kafka Connect worker JVM), starts it again and lets it catch up. Then:

- **on time**: the rows visible once the table holds every row, or once its row count has not
  changed for ``settle`` seconds after the restart (Connect: after its tasks run again): three
  commit rounds, at least 120 s (a Connect round can last its interval plus the 30 s commit
  timeout: ``kafka-connect-defaults`` 990 s, ``kafka-connect-hardened`` 120 s);
- **late**: rows that became visible after that stall, within ``--late-wait`` more seconds;
- **lost**: ids still missing at the end; **duplicates**: ids seen more than once.

A run with lost or late rows keeps the peer's log: the Connect worker's log of the run (from its
restart before the run) or the processes' stderr, copied to ``<work>/kill-logs``. A run where the
contender finished before the kill is reported as such (no kill happened: raise ``--records`` or
lower ``--kill-after``).
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Dict, List

from infra.local.kafka_connect_service import HARDENED_COMMIT_TIMEOUT_MS
from lake_ingest_connect import ConnectRun, commit_interval
from lake_ingest_data import ensure_topic
from lake_ingest_meter import tree
from lake_ingest_visible import VisibleClock, create_lake_table

KILL_AFTER = {"edge-datalake": 4.0, "edge-iceberg": 7.0, "spark": 15.0,
              "kafka-connect-defaults": 12.0, "kafka-connect-hardened": 12.0}


def kill_after(args: Any, name: str) -> float:
    return args.kill_after or KILL_AFTER[name]


def settle_seconds(name: str, args: Any) -> float:
    """How long an unchanged row count after the restart counts as a stall: three commit rounds,
    at least two minutes. A Connect round can last its interval plus the commit timeout."""
    if name.startswith("kafka-connect"):
        interval = commit_interval(name, args) + HARDENED_COMMIT_TIMEOUT_MS / 1000
    elif name == "spark":
        interval = 10.0  # availableNow: one micro-batch after another, no interval of its own
    else:
        interval = args.commit_interval
    return max(120.0, 3 * interval)


def _is_java(pid: int) -> bool:
    try:
        return os.path.basename(os.readlink(f"/proc/{pid}/exe")).startswith("java")
    except OSError:
        return False


def settle(clock: VisibleClock, restarted: float, stall: float, late_wait: float) -> Dict[str, Any]:
    """Wait for every row, or a stall of ``stall`` s after ``restarted``; then up to ``late_wait`` s more."""
    while clock.all_visible is None and time.time() - max(clock.last_change(), restarted) < stall:
        time.sleep(0.5)
    on_time, stalled = clock.rows, clock.all_visible is None
    stalled_after = time.time() - (clock.started or time.time())
    if stalled:
        clock.wait(late_wait)
    return {"on_time": on_time, "late": clock.rows - on_time, "stalled": stalled,
            "seconds": clock.seconds, "stalled_after_s": stalled_after if stalled else None}


def process_cmd(li: Any, name: str, env: Dict[str, str], topic: str, table: str, run_tag: str,
                work: Path, args: Any) -> tuple:
    """(command, environment) of a process contender's run."""
    if name == "edge-datalake":
        namespace = table.rsplit(".", 1)[0]
        return li.inline_edge_cmd(env, topic, f"bench-kill-{run_tag}", namespace, work / f"kill-lake-{run_tag}",
                                  args.commit_interval), env
    if name == "edge-iceberg":
        return li.edge_cmd(env, topic, f"bench-kill-{run_tag}", "iceberg", table,
                           commit_interval=args.commit_interval), env
    return li.spark_cmd(topic, table, work / f"kill-spark-{run_tag}"), li.spark_env(env, work)


def run_process(li: Any, name: str, env: Dict[str, str], topic: str, n: int, run_tag: str, work: Path,
                args: Any, clock_of) -> Dict[str, Any]:
    table = (f"{li.NAMESPACE}_{run_tag}.readings" if name == "edge-datalake"
             else f"{li.NAMESPACE}.kill_{name.replace('-', '_')}_{run_tag}")
    create_lake_table(li.catalog(env), table)
    cmd, cmd_env = process_cmd(li, name, env, topic, table, run_tag, work, args)
    clock = clock_of(table)
    logs: List[Path] = []
    kills, restarted = 0, time.time()
    for attempt in range(2):
        logs.append(work / f"kill-{name}-{run_tag}-{attempt}.log")
        proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=open(logs[-1], "w"), cwd=li.ROOT,
                                env=cmd_env)
        if attempt == 0:
            time.sleep(kill_after(args, name))
            killed_at = time.time() - clock.started
            if proc.poll() is None:
                # The edge process, or the Spark driver JVM (pyspark's Python front then exits).
                victim = next((p for p in tree(proc.pid) if _is_java(p)), proc.pid) if name == "spark" else proc.pid
                os.kill(victim, signal.SIGKILL)
                kills += 1
            try:
                proc.wait(timeout=60)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
            if not kills:
                break  # it finished before the kill
            restarted = time.time()
            continue
        try:
            proc.wait(timeout=args.timeout)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        if proc.returncode != 0:
            print(f"  {name}: the restarted process failed ({proc.returncode}); log {logs[-1]}", file=sys.stderr)
    result = settle(clock, restarted, settle_seconds(name, args), args.late_wait)
    clock.stop()
    return dict(result, kills=kills, table=table, logs=logs, killed_at=killed_at)


def run_connect(li: Any, name: str, env: Dict[str, str], topic: str, n: int, run_tag: str, work: Path,
                args: Any, clock_of) -> Dict[str, Any]:
    table = f"{li.NAMESPACE}.kill_{name.replace('-', '_')}_{run_tag}"
    create_lake_table(li.catalog(env), table)
    connect = ConnectRun(name, env, topic, table, run_tag, args)
    clock = clock_of(table)
    try:
        control_start = connect.control_end()
        clock.started = connect.submit()
        if args.kill_at == "commit":
            connect.wait_for_commit_round(control_start, args.timeout)
        else:
            time.sleep(kill_after(args, name))
        killed_at = time.time() - clock.started
        restarted = time.time()
        if clock.all_visible is None:  # a kill after every row is visible proves nothing
            restarted = connect.kill_worker()
        result = settle(clock, restarted, settle_seconds(name, args), args.late_wait)
        result.update(status=connect.status())
    finally:
        clock.stop()
        connect.finish()
    return dict(result, kills=connect.kills, table=table, logs=[], connect=connect, killed_at=killed_at)


def run_kills(li: Any, env: Dict[str, str], names: List[str], tag: str, work: Path, args: Any) -> Dict[str, list]:
    """``args.kill_runs`` kill -9 runs of every contender of ``names``; prints and returns the results."""
    n = args.records
    topic = ensure_topic(env["KAFKA_BOOTSTRAP"], n)
    saved = work / "kill-logs"
    results: Dict[str, list] = {}

    def clock_of(table: str) -> VisibleClock:
        clock = VisibleClock(li.catalog(env), table, n)
        clock.start_clock()
        return clock

    for name in names:
        results[name] = []
        for i in range(args.kill_runs):
            run_tag = f"{tag}k{i}{name.split('-')[-1][:3]}"
            when = ("in its first commit round" if args.kill_at == "commit" and name.startswith("kafka-connect")
                    else f"after {kill_after(args, name):g} s")
            print(f"{name}: kill -9 run {i + 1}/{args.kill_runs} {when} ...", file=sys.stderr, flush=True)
            runner = run_connect if name.startswith("kafka-connect") else run_process
            result = runner(li, name, env, topic, n, run_tag, work, args, clock_of)
            result.update(li.check_ids(env, result["table"], n))
            if result["missing"] or result["late"]:
                folder = saved / f"{name}-{i + 1}"
                if "connect" in result:
                    result["logs"] = [result["connect"].save_log(folder)]
                else:
                    folder.mkdir(parents=True, exist_ok=True)
                    result["logs"] = [Path(shutil.copy(log, folder)) for log in result["logs"]]
            result.pop("connect", None)
            results[name].append(result)
    print_kills(results, n, args)
    if not args.no_save:
        save_kills(results, n, args)
    return results


def save_kills(results: Dict[str, list], n: int, args: Any) -> None:
    """``bench/results/lake_ingest_kill_<time|commit>.json``: per contender and run, the rows on
    time, late, lost and duplicated, and exactly how the kill was provoked."""
    from results import save

    bars = [(f"{kind}, run {i}", name, r[key]) for name, runs in results.items() for i, r in enumerate(runs, 1)
            for kind, key in (("on time", "on_time"), ("late", "late"), ("lost", "missing"),
                              ("duplicates", "duplicates"))]
    how = {name: {"signal": "SIGKILL of " + ("the Connect worker JVM" if name.startswith("kafka-connect") else
                                              "the Spark driver JVM" if name == "spark" else "the edge process"),
                  "when": ("once its first commit round was under way (the coordinator's START_COMMIT and a "
                           "task's answer on the control topic)" if args.kill_at == "commit"
                           and name.startswith("kafka-connect") else f"{kill_after(args, name):g} s after its start"),
                  "killed at s": [round(r["killed_at"], 1) for r in runs], "kills": [r["kills"] for r in runs],
                  "every row visible after s": [round(r["seconds"], 1) for r in runs],
                  "stall before counting late s": settle_seconds(name, args), "late wait s": args.late_wait}
           for name, runs in results.items()}
    save(f"lake_ingest_kill_{args.kill_at}", f"kill -9 mid-run, {n:,} readings, {args.kill_runs} runs per contender",
         "rows", bars, runs=args.kill_runs, extra={"how each kill was provoked": how})


def print_kills(results: Dict[str, list], n: int, args: Any) -> None:
    print(f"\nkill -9 mid-run, {n:,} readings ({os.cpu_count()} cores; load average {os.getloadavg()[0]:.1f} "
          f"at the end); late = visible only after a stall of settle s, lost = never visible within "
          f"--late-wait {args.late_wait:g} s more")
    print(f"{'contender':<23} {'run':>3} {'kills':>5} {'killed at s':>11} {'all visible s':>13} {'on time':>10} "
          f"{'late':>8} {'lost':>8} {'dupl.':>6}  notes")
    for name, runs in results.items():
        for i, r in enumerate(runs, 1):
            notes = "" if r["kills"] else "finished before the kill: no kill"
            if r["stalled"]:
                notes += (f"stalled: no change for {settle_seconds(name, args):g} s, declared at "
                          f"{r['stalled_after_s']:.0f} s, then {args.late_wait:g} s more")
            if r.get("status") and any(t.get("state") != "RUNNING" for t in r["status"].get("tasks", [])):
                notes += f"; tasks {[t.get('state') for t in r['status'].get('tasks', [])]}"
            if r["logs"] and (r["missing"] or r["late"]):
                notes += f"; logs {', '.join(str(p) for p in r['logs'])}"
            print(f"{name:<23} {i:>3} {r['kills']:>5} {r['killed_at']:>11.1f} {r['seconds']:>13.1f} "
                  f"{r['on_time']:>10,} {r['late']:>8,} {r['missing']:>8,} {r['duplicates']:>6,}  {notes}")
