"""Helpers of the cluster tests: the Kafka-like rows, the expected windows and the pipeline runner."""

from __future__ import annotations

import json
import math
import os
import random
import shlex
import subprocess
import sys
from pathlib import Path

from infra.local import spark_cds

REPO = Path(__file__).resolve().parents[3]
JOB = Path(__file__).with_name("pipeline_job.py")
CLUSTER = ("spark-master", "spark-worker-1", "spark-worker-2")
BASE = 1_767_225_600_000  # 2026-01-01T00:00:00Z


def deployed_submit_opts() -> str:
    """The suite's driver JVM flags (``SPARK_SUBMIT_OPTS``, set in tests/conftest.py) without its
    tiny-data SQL settings: the cluster tests run the jobs with Spark's SQL defaults, as deployed."""
    return spark_cds.deployed_jvm_opts(os.environ.get("SPARK_SUBMIT_OPTS", ""))


def executor_java_options() -> list[str]:
    """``--conf`` giving the cluster's executors the short-JVM flags the tests' drivers run with:
    spark-submit passes ``SPARK_SUBMIT_OPTS`` to the driver only."""
    flags = deployed_submit_opts()
    return ["--conf", f"spark.executor.extraJavaOptions={flags}"] if flags else []


def kafka_like_rows(n: int, keys: int = 4, partitions: int = 2, seed: int = 5) -> list[tuple]:
    """(key, ts, partition, offset, temp): a key stays on one partition; mostly rising event time
    with late and out-of-order records."""
    rng = random.Random(seed)
    offsets = [0] * partitions
    rows = []
    for i in range(n):
        key = f"sensor-{rng.randrange(keys)}"
        partition = int(key[-1]) % partitions
        ts = BASE + i * 40 + rng.choice([0, 0, 0, -300, -1500, 120])
        rows.append((key.encode(), ts, partition, offsets[partition], round(rng.uniform(-5, 35), 2)))
        offsets[partition] += 1
    return rows


def run_pipeline(services_env: dict[str, str], master: str, source: str, namespace: str,
                 kill_pid: int | None = None) -> dict:
    """Run ``pipeline_job.py`` with ``LAKEHOUSE_SPARK_MASTER=master``; its JSON result."""
    env = dict(os.environ, LAKEHOUSE_SPARK_MASTER=master, LAKEHOUSE_CATALOG="lake",
               ICEBERG_REST_URI=services_env["ICEBERG_REST_URI"], ICEBERG_WAREHOUSE=services_env["ICEBERG_WAREHOUSE"],
               S3_ENDPOINT=services_env["S3_ENDPOINT"], AWS_ACCESS_KEY_ID=services_env["AWS_ACCESS_KEY_ID"],
               AWS_SECRET_ACCESS_KEY=services_env["AWS_SECRET_ACCESS_KEY"], AWS_REGION=services_env["AWS_REGION"],
               PYTHONPATH=str(REPO), LAKEHOUSE_LOCAL_DIR=str(REPO / ".local" / "cluster-tests"),
               SPARK_SUBMIT_OPTS=deployed_submit_opts())
    env.pop("SPARK_MASTER", None)
    if executor_java_options():
        env["PYSPARK_SUBMIT_ARGS"] = shlex.join([*executor_java_options(), "pyspark-shell"])
    args = [sys.executable, str(JOB), source, f"lake.{namespace}"]
    if kill_pid:
        args += ["--kill-pid", str(kill_pid)]
    proc = subprocess.run(args, cwd=REPO, env=env, capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, f"pipeline on {master} failed:\n{proc.stderr[-4000:]}"
    return json.loads(proc.stdout.strip().splitlines()[-1])


def expected_windows(rows: list[tuple]) -> dict[str, list[tuple]]:
    """Per window spec of ``pipeline_job.SPECS``: what the edge emits (each partition in offset order
    through its engines), keys as hex like the job prints them."""
    from pipeline_job import SPECS

    from stream_edge.dataframe.windows.replay import replay

    result = {}
    for name, spec in SPECS.items():
        got = []
        for partition in sorted({r[2] for r in rows}):
            ordered = sorted((r for r in rows if r[2] == partition), key=lambda r: r[3])
            got += [(w["key"].hex(), w["start"], w["end"], w["value"]) for w in replay(
                [(r[0], r[1], r[4]) for r in ordered], kind=spec.kind, duration_ms=spec.duration_ms,
                grace_ms=spec.grace_ms, step_ms=spec.step_ms, aggregation=spec.aggregation,
                closing_strategy=spec.closing)]
        result[name] = sorted(got)
    return result


def same_rows(a: list, b: list) -> bool:
    """Equal window rows; float values within a relative 1e-9 (Spark and the edge add the same
    numbers in different orders)."""
    if len(a) != len(b):
        return False
    for x, y in zip(a, b):
        if tuple(x[:3]) != tuple(y[:3]):
            return False
        if not math.isclose(x[3], y[3], rel_tol=1e-9, abs_tol=1e-9):
            return False
    return True
