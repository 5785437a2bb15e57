"""One batch run of the lakehouse jobs, as a separate driver process: register -> windows -> sql.

The Spark master comes from the environment (``LAKEHOUSE_SPARK_MASTER``: ``local[2]`` or the
standalone cluster), like every job; the tests run this script once per master and compare what
it prints (one JSON document on the last stdout line).

    python pipeline_job.py SOURCE NAMESPACE [--kill-pid PID]

``--kill-pid``: SIGKILL that process group (a worker and its executor) as soon as a stage of the
windows job is running, from a thread of this driver, and report the stage it hit.
"""

from __future__ import annotations

import argparse
import io
import json
import os
import signal
import threading
import time

from lakehouse.register import RegisterOptions, run_register
from lakehouse.session import SparkSettings, build_spark
from lakehouse.sql_query import run_sql
from lakehouse.windows import WindowRecomputeOptions, WindowSpec, run_window_recompute

SPECS = {
    "tumbling": WindowSpec.parse("tumbling", "1s", grace="200ms", aggregation="mean"),
    "hopping": WindowSpec.parse("hopping", "2s", step="500ms", aggregation="max", closing="partition"),
}


def killer(spark, pid: int, found: dict) -> threading.Thread:
    """A thread that kills ``pid``'s process group while a stage of job group ``windows`` runs."""
    tracker = spark.sparkContext.statusTracker()

    def watch() -> None:
        deadline = time.monotonic() + 600
        while time.monotonic() < deadline and not found.get("stop"):
            for job_id in tracker.getJobIdsForGroup("windows"):
                job = tracker.getJobInfo(job_id)
                if job is not None and job.status == "RUNNING":
                    stages = [s for s in job.stageIds
                              if (info := tracker.getStageInfo(s)) is not None and info.numActiveTasks > 0]
                    if stages:
                        os.killpg(pid, signal.SIGKILL)
                        found.update(job=job_id, stages=stages)
                        return
            time.sleep(0.02)

    thread = threading.Thread(target=watch, daemon=True)
    thread.start()
    return thread


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("source")
    parser.add_argument("namespace")
    parser.add_argument("--kill-pid", type=int)
    args = parser.parse_args()
    spark = build_spark(SparkSettings.from_env(app_name="cluster-test"))
    out: dict = {"master": spark.sparkContext.master}
    table = f"{args.namespace}.readings"
    out["register"] = run_register(spark, RegisterOptions(source=args.source, table=table)).summary_line()
    found: dict = {}
    thread = killer(spark, args.kill_pid, found) if args.kill_pid else None
    spark.sparkContext.setJobGroup("windows", "windows recompute")
    out["windows"] = {}
    for name, spec in SPECS.items():
        report = run_window_recompute(spark, WindowRecomputeOptions(
            table=table, output=f"{args.namespace}.w_{name}", value_column="temp", window=spec))
        out["windows"][name] = {"path": report.path, "windows": report.windows,
                                "rows": sorted([r.key.hex(), r.window_start, r.window_end, r.value]
                                               for r in spark.table(f"{args.namespace}.w_{name}").collect())}
    found["stop"] = True
    if thread is not None:
        thread.join()
    out["killed"] = {k: v for k, v in found.items() if k != "stop"}
    printed = io.StringIO()
    run_sql(spark, f"SELECT CAST(key AS STRING) AS sensor, count(*) AS windows, round(avg(value), 6) AS avg_mean "
                   f"FROM {args.namespace}.w_tumbling GROUP BY 1 ORDER BY 1", out=printed)
    out["sql"] = printed.getvalue()
    out["raw_rows"] = spark.table(table).count()
    spark.stop()
    print(json.dumps(out), flush=True)


if __name__ == "__main__":
    main()
