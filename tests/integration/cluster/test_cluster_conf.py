"""On a cluster, spark-submit's configuration is the one the jobs run with: the session builder
adds its small-machine defaults (2 shuffle partitions, ...) for local masters only, and never
over a ``--conf`` given to spark-submit."""

from __future__ import annotations

import os
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from cluster_kit import REPO, deployed_submit_opts, executor_java_options

from lakehouse.session import cached_spark_jars

pytestmark = pytest.mark.integration


#: A ``SET`` runs no task: with no executor asked for up front, the cluster starts none. Each one
#: it would start anyway fetches the runtime jars (~700 MB with the AWS SDK bundle) before the
#: driver is done (~7 CPU-s an executor, four in this test); the driver's configuration, which is
#: what the test reads, is the same.
NO_EXECUTORS_UNTIL_A_TASK = ("--conf", "spark.dynamicAllocation.enabled=true",
                             "--conf", "spark.dynamicAllocation.initialExecutors=0",
                             "--conf", "spark.dynamicAllocation.minExecutors=0")


def submit_sql(master: str, query: str, tmp_path: Path, *conf: str) -> str:
    """``spark-submit --master <master> [--conf ...] pipelines/jobs/sql.py <query>``; its stdout.

    A cluster gets the runtime jars with ``--jars``; a local master has them on the driver's class
    path already (as ``./dev bootstrap``'s spark-defaults give them), where ``--jars`` would only
    copy them into the session's work folder."""
    env = dict(os.environ, LAKEHOUSE_CATALOG="embedded", ICEBERG_REST_URI="", LAKEHOUSE_LOCAL_DIR=str(tmp_path),
               PYSPARK_PYTHON=sys.executable, PYSPARK_DRIVER_PYTHON=sys.executable, SPARK_LOCAL_IP="127.0.0.1",
               SPARK_SUBMIT_OPTS=deployed_submit_opts())
    for key in ("SPARK_MASTER", "LAKEHOUSE_SPARK_MASTER"):
        env.pop(key, None)
    jars = [] if master.startswith("local") else ["--jars", ",".join(cached_spark_jars())]
    args = [str(Path(sys.executable).with_name("spark-submit")), "--master", master, *jars,
            "--conf", "spark.executor.memory=512m", *executor_java_options(), *conf,
            "pipelines/jobs/sql.py", query, "--embedded-catalog", "--quiet"]
    proc = subprocess.run(args, cwd=REPO, env=env, capture_output=True, text=True, timeout=600)
    problems = "\n".join(line for line in proc.stderr.splitlines() if " INFO " not in line)
    assert proc.returncode == 0, proc.stdout[-2000:] + problems[-3000:]
    return proc.stdout


def first_row(printed: str) -> list[str]:
    """The first data row of the sql command's psql-style table."""
    lines = printed.splitlines()
    rule = next(i for i, line in enumerate(lines) if line.startswith("---"))
    return [cell.strip() for cell in lines[rule + 1].split("|")]


def test_spark_submit_conf_is_what_the_job_runs_with(spark_cluster, tmp_path):
    query = "SET spark.sql.shuffle.partitions"
    # three independent submissions (each its own driver and folder), run side by side
    for name in ("given", "cluster", "local"):
        (tmp_path / name).mkdir()
    runs = {"given": (spark_cluster, ("--conf", "spark.sql.shuffle.partitions=8", *NO_EXECUTORS_UNTIL_A_TASK)),
            "cluster": (spark_cluster, NO_EXECUTORS_UNTIL_A_TASK), "local": ("local[2]", ())}
    with ThreadPoolExecutor(len(runs)) as pool:
        futures = {name: pool.submit(submit_sql, master, query, tmp_path / name, *conf)
                   for name, (master, conf) in runs.items()}
        printed = {name: future.result() for name, future in futures.items()}
    assert first_row(printed["given"]) == ["spark.sql.shuffle.partitions", "8"]
    # Spark's own default: the 2 of local runs is not forced on a cluster
    assert first_row(printed["cluster"])[1] == "200"
    assert first_row(printed["local"])[1] == "2"
