"""The job chain over Spark Connect against classic Spark: the same jobs, the same input, by value.

The chain is the one ``tests/integration/lakehouse/test_jobs_over_connect.py`` runs, each job a
``lakehouse`` process of its own as a scheduler runs them::

    register --audit   (the edge's files into a new Iceberg table, on an audit branch)
    validate --branch  (expectations on the branch)
    publish            (main fast-forwarded to the branch)
    sql                (per sensor: count, sum, min and max of the values, to Parquet)
    windows            (tumbling 1 s means per sensor, the windows job's automatic engine)
    sql-windows        (every window row, to Parquet)

*classic*: each process starts its own local Spark driver (``local[2]``, what ``lakehouse`` does
without ``SPARK_REMOTE``). *connect*: each process is a thin client of the local Spark Connect
server (``./dev services up spark-connect``, also ``local[2]``) with ``SPARK_REMOTE`` set. Both
use the same Iceberg REST catalog; each chain gets a lake written by the real ``DataLakeSink``
from the same records (the same values; a lake is registered once) and tables of its own.

``--pairs`` alternating pairs (classic first in even pairs, connect first in odd ones). After
every pair the two chains' outputs are compared **by value**: the registered table and the
windows table (read back with pyiceberg), both SQL outputs (Parquet, read with pyarrow); floats
within 1e-9 relative. Any difference: printed, exit 1, nothing saved. Printed: each step's time
per mode (median over the pairs), each pair's totals and the median of the pairs' ratios
connect/classic; and, outside the chain, a ``lakehouse sql "SELECT 1"`` per mode: what each step's
process pays before its job's work (the interpreter and the session: a JVM for classic, a gRPC
channel for connect), so that each step's own work can be told from it. Target: <= 1.3. Figures go to ``bench/results/job_chain_connect.json``.

    ./dev services up && ./dev services up spark-connect
    ./dev bench job_chain_connect                      # 400,000 records, 5 pairs
    ./dev bench job_chain_connect --records 50000 --pairs 1
"""

from __future__ import annotations

import argparse
import json
import math
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any, Dict, List, Tuple

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from results import median_spread, save  # noqa: E402

MODES = ("classic", "connect")
STEPS = ("register", "validate", "publish", "sql", "windows", "sql-windows")
#: ``lakehouse sql "SELECT 1"``: a process's fixed cost (interpreter, session), not part of the chain
START = "SELECT 1"
BASE_TS = 1_767_225_600_000  # 2026-01-01T00:00:00Z
SENSORS = 20
TOLERANCE = 1e-9


def services_env() -> Dict[str, str]:
    """The local services' addresses (``.local/services.env``); a missing one is an error saying
    how to start it."""
    path = REPO / ".local" / "services.env"
    env = dict(line.split("=", 1) for line in path.read_text().splitlines() if "=" in line) if path.exists() else {}
    for key, how in (("ICEBERG_REST_URI", "./dev services up"), ("SPARK_CONNECT_URL", "./dev services up spark-connect")):
        if not env.get(key):
            raise SystemExit(f"job_chain_connect: {key} is not set in {path}: run {how}")
    return env


def records(n: int) -> List[dict]:
    """``n`` sensor readings: 20 sensors, event time +2 ms per record with one in ten 700 ms late."""
    return [{"ts_ms": BASE_TS + i * 2 - (700 if i % 10 == 9 else 0), "sensor": f"s-{i % SENSORS}",
             "value": round((i * 37 % 1000) * 0.125 - 40, 3), "seq": i} for i in range(n)]


def write_lake(root: Path, rows: List[dict], commits: int = 4) -> str:
    """The edge's lake of ``rows``, written by the real ``DataLakeSink`` in ``commits`` commits."""
    from stream_edge.sinks.core.datalake import DataLakeSink

    sink = DataLakeSink("sensor_readings", storage_url=root.as_uri(), s3_prefix="time-series",
                        hive_columns=["year", "month", "day", "hour"], timestamp_column="ts_ms")
    sink.setup()
    size = math.ceil(len(rows) / commits)
    for offset in range(0, len(rows), size):
        for i, record in enumerate(rows[offset:offset + size]):
            sink.add(record, record["sensor"], record["ts_ms"], [], "sensors", 0, offset + i)
        sink.flush("sensors", 0)
    return (root / "time-series" / "sensor_readings").as_uri()


def chain(namespace: str, lake: str, work: Path, n: int) -> List[Tuple[str, List[str]]]:
    """The chain's steps: (name, ``lakehouse`` arguments)."""
    table, windows = f"rest.{namespace}.sensor_readings", f"rest.{namespace}.value_1s"
    spec = work / "spec.json"
    spec.write_text(json.dumps({"expectations": [
        {"type": "not_null", "column": "sensor"},
        {"type": "row_count_between", "min": n, "max": n}]}))
    return [
        ("register", ["register", "--source", lake, "--table", table, "--audit", "audit_1"]),
        ("validate", ["validate", "--table", table, "--spec", str(spec), "--branch", "audit_1"]),
        ("publish", ["publish", "--table", table, "--branch", "audit_1"]),
        ("sql", ["sql", f"SELECT sensor, count(*) AS n, sum(value) AS total, min(value) AS low, max(value) AS high "
                        f"FROM {table} GROUP BY sensor", "--output", str(work / "sensors.parquet")]),
        ("windows", ["windows", "--table", table, "--output", windows, "--duration", "1s", "--aggregation", "mean",
                     "--value-column", "value", "--key-column", "sensor", "--timestamp-column", "ts_ms",
                     "--order-by", "seq", "--partition-column", "sensor"]),
        ("sql-windows", ["sql", f"SELECT key, window_start, window_end, value FROM {windows}",
                         "--output", str(work / "windows.parquet")]),
    ]


def run_chain(mode: str, rows: List[dict], env: Dict[str, str], scratch: Path) -> Tuple[Dict[str, float], Dict[str, Any]]:
    """One chain in ``mode``: each step's seconds, and what it left (for the comparison)."""
    namespace = f"chain_{mode}_{uuid.uuid4().hex[:8]}"
    work = scratch / namespace
    work.mkdir(parents=True)
    lake = write_lake(work / "lake", rows)
    job_env = {k: v for k, v in os.environ.items() if k not in ("SPARK_REMOTE", "SPARK_CONNECT_MODE_ENABLED")}
    job_env.update(LAKEHOUSE_CATALOG="rest", ICEBERG_REST_URI=env["ICEBERG_REST_URI"],
                   ICEBERG_WAREHOUSE=env["ICEBERG_WAREHOUSE"], LAKEHOUSE_LOCAL_DIR=str(work / "spark"),
                   PYTHONUNBUFFERED="1", TZ="UTC")
    if mode == "connect":
        job_env["SPARK_REMOTE"] = env["SPARK_CONNECT_URL"]
    seconds: Dict[str, float] = {}
    # START first: what a process pays before any job's work (the session), outside the chain's total
    for step, args in [(START, ["sql", "SELECT 1"]), *chain(namespace, lake, work, len(rows))]:
        started = time.monotonic()
        proc = subprocess.run([sys.executable, "-m", "pipelines.cli", *args], cwd=REPO, env=job_env,
                              capture_output=True, text=True)
        seconds[step] = time.monotonic() - started
        if proc.returncode != 0:
            raise SystemExit(f"job_chain_connect: {mode} {step} failed (exit {proc.returncode}):\n"
                             f"{proc.stderr[-4000:]}")
        if mode == "connect" and "Spark Connect" not in proc.stderr:
            raise SystemExit(f"job_chain_connect: connect {step} did not run over Spark Connect:\n{proc.stderr[-2000:]}")
    print(f"  {mode:8s} " + "  ".join(f"{s} {seconds[s]:.1f}s" for s in STEPS) +
          f"  = {sum(seconds[s] for s in STEPS):.1f}s  ({START} {seconds[START]:.1f}s)", flush=True)
    return seconds, {"namespace": namespace, "work": work}


def read_back(env: Dict[str, str], left: Dict[str, Any]) -> Dict[str, List[tuple]]:
    """Every table the chain wrote, as sorted rows."""
    import pyarrow.parquet as pq
    from pyiceberg.catalog import load_catalog

    catalog = load_catalog("rest", type="rest", uri=env["ICEBERG_REST_URI"], warehouse=env["ICEBERG_WAREHOUSE"])
    out = {}
    for name in ("sensor_readings", "value_1s"):
        arrow = catalog.load_table(f"{left['namespace']}.{name}").scan().to_arrow()
        out[name] = sorted(tuple(_plain(v) for v in row.values()) for row in arrow.to_pylist())
    for name in ("sensors", "windows"):
        table = pq.read_table(left["work"] / f"{name}.parquet")
        out[f"sql {name}"] = sorted(tuple(_plain(v) for v in row.values()) for row in table.to_pylist())
    return out


def _plain(value: Any) -> Any:
    return value.isoformat() if hasattr(value, "isoformat") else value


def differences(a: Dict[str, List[tuple]], b: Dict[str, List[tuple]]) -> List[str]:
    """What differs between two chains' outputs (empty when equal by value)."""
    found = []
    for name in a:
        if len(a[name]) != len(b[name]):
            found.append(f"{name}: {len(a[name])} rows against {len(b[name])}")
            continue
        if not a[name]:
            found.append(f"{name}: no rows")
        for row_a, row_b in zip(a[name], b[name]):
            if not all(_same(x, y) for x, y in zip(row_a, row_b)):
                found.append(f"{name}: {row_a} against {row_b}")
                break
    return found


def _same(x: Any, y: Any) -> bool:
    if isinstance(x, float) and isinstance(y, float):
        return (math.isnan(x) and math.isnan(y)) or math.isclose(x, y, rel_tol=TOLERANCE, abs_tol=TOLERANCE)
    return x == y


def drop(env: Dict[str, str], left: Dict[str, Any]) -> None:
    """The chain's tables and namespace out of the shared REST catalog (its files stay in scratch)."""
    from pyiceberg.catalog import load_catalog

    catalog = load_catalog("rest", type="rest", uri=env["ICEBERG_REST_URI"], warehouse=env["ICEBERG_WAREHOUSE"])
    for table in catalog.list_tables(left["namespace"]):
        catalog.drop_table(table)
    catalog.drop_namespace(left["namespace"])


def net_of_start(seconds: Dict[str, float]) -> float:
    """One chain's time net of its steps' process starts (each step pays about one ``SELECT 1``).

    >>> net_of_start({START: 2.0, **{step: 5.0 for step in STEPS}}) == len(STEPS) * 3.0
    True
    """
    return sum(seconds[s] for s in STEPS) - len(STEPS) * seconds[START]


def main(argv: List[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--records", type=int, default=400_000, help="sensor readings in the lake (default 400,000)")
    parser.add_argument("--pairs", type=int, default=5, help="alternating classic/connect pairs (default 5)")
    parser.add_argument("--keep", action="store_true", help="keep the chains' tables and scratch folders")
    args = parser.parse_args(argv)
    env = services_env()
    rows = records(args.records)
    scratch = Path(tempfile.mkdtemp(prefix="job_chain_connect_"))
    print(f"job_chain_connect: {args.records:,} records, {args.pairs} pairs, Spark Connect at "
          f"{env['SPARK_CONNECT_URL']}; load average {os.getloadavg()[0]:.1f}", flush=True)
    times: Dict[str, List[Dict[str, float]]] = {mode: [] for mode in MODES}
    ratios: List[float] = []
    net_ratios: List[float] = []  # the same, each chain net of its steps' process starts
    try:
        for pair in range(args.pairs):
            order = MODES if pair % 2 == 0 else MODES[::-1]
            print(f"pair {pair + 1}/{args.pairs} ({' first, '.join(order)} second; "
                  f"load average {os.getloadavg()[0]:.1f})", flush=True)
            outputs, totals = {}, {}
            for mode in order:
                seconds, left = run_chain(mode, rows, env, scratch)
                times[mode].append(seconds)
                totals[mode] = sum(seconds[s] for s in STEPS)
                outputs[mode] = read_back(env, left)
                if not args.keep:
                    drop(env, left)
            found = differences(outputs["classic"], outputs["connect"])
            if found:
                print("job_chain_connect: the chains' outputs differ; nothing saved:\n  " + "\n  ".join(found))
                return 1
            ratios.append(totals["connect"] / totals["classic"])
            net_ratios.append(net_of_start(times["connect"][-1]) / net_of_start(times["classic"][-1]))
            print(f"  outputs equal by value ({', '.join(f'{k} {len(v):,} rows' for k, v in outputs['classic'].items())});"
                  f" connect/classic {ratios[-1]:.2f}", flush=True)
    finally:
        if not args.keep:
            shutil.rmtree(scratch, ignore_errors=True)
    if not ratios:
        return 0
    print("\nstep          classic (median)   connect (median)")
    medians = {mode: {step: statistics.median(t[step] for t in times[mode]) for step in (START, *STEPS)}
               for mode in MODES}
    for step in STEPS:
        print(f"{step:12s} {medians['classic'][step]:12.1f} s {medians['connect'][step]:15.1f} s")
    totals = {mode: statistics.median(sum(t[s] for s in STEPS) for t in times[mode]) for mode in MODES}
    ratio = statistics.median(ratios)
    print(f"{'chain':12s} {totals['classic']:12.1f} s {totals['connect']:15.1f} s")
    print(f"{START:12s} {medians['classic'][START]:12.1f} s {medians['connect'][START]:15.1f} s   (each step's "
          "process pays about this before its job's work)")
    print(f"\nconnect/classic: median of {len(ratios)} pairs {ratio:.2f} "
          f"({', '.join(f'{r:.2f}' for r in ratios)}); target <= 1.3: {'met' if ratio <= 1.3 else 'NOT met'}")
    net_ratio = statistics.median(net_ratios)
    print(f"connect/classic net of each step's process start ({len(STEPS)} x {START}): median {net_ratio:.2f} "
          f"({', '.join(f'{r:.2f}' for r in net_ratios)}): a warm server against a cold driver JVM per step "
          "counts in the first figure, not in this one")
    bars = [(step, mode, medians[mode][step]) for step in STEPS for mode in MODES]
    bars += [("chain", mode, *median_spread([sum(t[s] for s in STEPS) for t in times[mode]])) for mode in MODES]
    bars += [(START, mode, medians[mode][START]) for mode in MODES]
    net = {mode: round(statistics.median(net_of_start(t) for t in times[mode]), 1) for mode in MODES}
    path = save("job_chain_connect", f"register -> validate -> publish -> sql -> windows -> sql, {args.records:,} "
                f"records, median of {len(ratios)} pairs: connect/classic {ratio:.2f}", "s", bars, runs=len(ratios),
                extra={"connect/classic, chain": {"median": round(ratio, 2), "pairs": [round(r, 2) for r in ratios]},
                       "connect/classic, net of process start": {"median": round(net_ratio, 2),
                                                                 "pairs": [round(r, 2) for r in net_ratios]},
                       f"chain net of its {len(STEPS)} process starts, s": net})
    print(f"saved {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
