"""Airflow DAG ``lakehouse``: register new edge files, compact, recompute windows, validate.

The pipeline of docs/design.md, ``register -> compact -> windows -> validate``; the last two tasks
exist when their settings are given (``LAKEHOUSE_WINDOWS_OUTPUT``, ``LAKEHOUSE_QUALITY_SPEC``).

Each task is a ``spark-submit pipelines/jobs/<job>.py ...`` run by Airflow's SparkSubmitOperator,
so Airflow only schedules; the jobs are the same ones people run with ``lakehouse <job>``.

Install: put this file (or a symlink to it) in Airflow's dags folder, and give the worker the
environment below. Nothing else changes between a laptop and production.

==========================  ==============================================================
variable                    meaning (default)
==========================  ==============================================================
LAKEHOUSE_HOME              checkout of this project on the worker (the folder above pipelines/)
LAKEHOUSE_SPARK_SUBMIT      spark-submit to run (``$LAKEHOUSE_HOME/.venv/bin/spark-submit``)
LAKEHOUSE_PYTHON            Python of the jobs (``$LAKEHOUSE_HOME/.venv/bin/python``)
LAKEHOUSE_SPARK_CONN_ID     Airflow connection holding the Spark master (``spark_default``)
LAKEHOUSE_SPARK_JARS        comma-separated runtime jars (the project's jar cache)
LAKE_SOURCE                 edge table root, e.g. ``s3://lake/data-lake/time-series/sensor_readings``
LAKEHOUSE_TABLE             target table (``lake.db.sensor_readings``)
LAKEHOUSE_FORMAT            ``iceberg`` or ``delta`` (``iceberg``)
LAKEHOUSE_SCHEDULE          cron or preset (``@hourly``)
LAKEHOUSE_COMPACT_SINCE     compact partitions newer than this age (``2d``)
LAKEHOUSE_WINDOWS_OUTPUT    table for the windows job's results (unset: no windows task)
LAKEHOUSE_WINDOWS_ARGS      its window options, e.g. ``--duration 1m --value-column temperature``
LAKEHOUSE_QUALITY_SPEC      expectations spec for the validate job (unset: no validate task)
LAKEHOUSE_VALIDATE_SINCE    validate partitions newer than this age (``2d``; empty: the whole table)
LAKEHOUSE_DATA_DOCS_DIR     where validate writes Great Expectations Data Docs (optional)
ICEBERG_REST_URI, ICEBERG_WAREHOUSE, ICEBERG_TOKEN, ICEBERG_CREDENTIAL, LAKEHOUSE_CATALOG,
S3_ENDPOINT, AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, AWS_REGION, LAKEHOUSE_LOCAL_DIR
                            passed through to the jobs (see ``lakehouse.session``)
==========================  ==============================================================
"""

from __future__ import annotations

import glob
import os
import shlex
from datetime import datetime, timedelta
from pathlib import Path

from airflow.providers.apache.spark.operators.spark_submit import SparkSubmitOperator
from airflow.sdk import DAG, chain

PASS_THROUGH = (
    "ICEBERG_REST_URI", "ICEBERG_WAREHOUSE", "ICEBERG_TOKEN", "ICEBERG_CREDENTIAL", "LAKEHOUSE_CATALOG",
    "S3_ENDPOINT", "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_REGION", "LAKEHOUSE_LOCAL_DIR",
)


def _home() -> Path:
    env = os.environ.get("LAKEHOUSE_HOME")
    return Path(env) if env else Path(__file__).resolve().parents[2]


def _jars() -> str:
    env = os.environ.get("LAKEHOUSE_SPARK_JARS")
    if env:
        return env
    cache = os.environ.get("STREAMLAKE_JAR_CACHE") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "streaming-lakehouse", "jars")
    return ",".join(sorted(glob.glob(os.path.join(cache, "spark", "*.jar"))))


def _job_env(home: Path, python: str) -> dict[str, str]:
    # The jobs' own Spark (pyspark from the project venv), not Airflow's pyspark-client.
    spark_home = os.environ.get("SPARK_HOME") or next(
        iter(glob.glob(str(home / ".venv" / "lib" / "python3*" / "site-packages" / "pyspark"))), "")
    env = {"SPARK_HOME": spark_home, "PYSPARK_PYTHON": python, "PYSPARK_DRIVER_PYTHON": python,
           "PYTHONPATH": str(home)}
    env.update({k: os.environ[k] for k in PASS_THROUGH if os.environ.get(k)})
    return env


def build_dag() -> DAG:
    """The DAG, configured from the environment at parse time."""
    home = _home()
    python = os.environ.get("LAKEHOUSE_PYTHON") or str(home / ".venv" / "bin" / "python")
    table = os.environ.get("LAKEHOUSE_TABLE", "lake.db.sensor_readings")
    table_format = os.environ.get("LAKEHOUSE_FORMAT", "iceberg")
    common = dict(
        conn_id=os.environ.get("LAKEHOUSE_SPARK_CONN_ID", "spark_default"),
        spark_binary=os.environ.get("LAKEHOUSE_SPARK_SUBMIT") or str(home / ".venv" / "bin" / "spark-submit"),
        jars=_jars() or None,
        env_vars=_job_env(home, python),
        conf={"spark.ui.enabled": "false"},
    )
    with DAG(
        dag_id="lakehouse",
        description="register edge files in the lakehouse table, compact it, recompute windows, validate",
        schedule=os.environ.get("LAKEHOUSE_SCHEDULE", "@hourly"),
        start_date=datetime(2026, 1, 1),
        catchup=False,
        max_active_runs=1,  # the jobs are idempotent, but two at once would only contend
        default_args={"retries": 2, "retry_delay": timedelta(minutes=2)},
        tags=["lakehouse"],
    ) as dag:
        register = SparkSubmitOperator(
            task_id="register",
            name="lakehouse-register",
            application=str(home / "pipelines" / "jobs" / "register.py"),
            application_args=["--source", os.environ.get("LAKE_SOURCE", (home / ".local" / "lake").as_uri()),
                              "--table", table, "--format", table_format],
            **common,
        )
        compact = SparkSubmitOperator(
            task_id="compact",
            name="lakehouse-compact",
            application=str(home / "pipelines" / "jobs" / "compact.py"),
            application_args=["--table", table, "--format", table_format,
                              "--since", os.environ.get("LAKEHOUSE_COMPACT_SINCE", "2d")],
            **common,
        )
        tasks = [register, compact]
        windows_output = os.environ.get("LAKEHOUSE_WINDOWS_OUTPUT")
        if windows_output:
            tasks.append(SparkSubmitOperator(
                task_id="windows",
                name="lakehouse-windows",
                application=str(home / "pipelines" / "jobs" / "windows.py"),
                application_args=["--table", table, "--format", table_format, "--output", windows_output,
                                  *shlex.split(os.environ.get("LAKEHOUSE_WINDOWS_ARGS", ""))],
                **common,
            ))
        spec = os.environ.get("LAKEHOUSE_QUALITY_SPEC")
        if spec:
            docs = os.environ.get("LAKEHOUSE_DATA_DOCS_DIR")
            since = os.environ.get("LAKEHOUSE_VALIDATE_SINCE", "2d")
            tasks.append(SparkSubmitOperator(
                task_id="validate",
                name="lakehouse-validate",
                application=str(home / "pipelines" / "jobs" / "validate.py"),
                application_args=["--table", table, "--format", table_format, "--spec", spec,
                                  *(["--since", since] if since else []),
                                  *(["--data-docs-dir", docs] if docs else [])],
                **common,
            ))
        chain(*tasks)
    return dag


dag = build_dag()
