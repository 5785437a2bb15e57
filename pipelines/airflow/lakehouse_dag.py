"""Airflow DAGs ``lakehouse`` (hourly) and ``lakehouse_maintenance`` (daily).

``lakehouse``: with a quality spec on an Iceberg table, write-audit-publish per data interval,
``register --audit audit_<interval> -> validate --branch -> publish -> windows`` (a failing
interval stops before publish: main never sees its rows; the branch and the quarantine table keep
them); without a spec, ``register -> windows``. ``register`` and ``validate`` are scoped to the
run's data interval: the partitions whose time range ends after ``data_interval_start`` minus
``LAKEHOUSE_INTERVAL_LOOKBACK`` (the same bound for both, so every row a run registers is a row
it validates; a backfill of an old interval validates that interval, not "the last two days").
``windows`` runs incrementally from the source snapshot its output records. With
``LAKEHOUSE_KEYED_TABLE``, ``upsert`` merges the table's new changes (it is then a changelog: the
edge lands it with the Kafka metadata) into that keyed table, after the interval is published.
``lakehouse_maintenance``: Iceberg ``compact -> rewrite_manifests -> expire_snapshots ->
remove_orphan_files``; Delta ``compact -> vacuum`` (``compact`` bin-packs only, each clean-up step is
its own task); with ``LAKEHOUSE_WINDOWS_OUTPUT``, the same clean-up steps for the windows output
after them (``*_windows``); with ``LAKEHOUSE_KEYED_TABLE``, ``compact_deletes_keyed`` (its delete
files and small files rewritten) and the same clean-up steps for it (``*_keyed``). Every task has an
``execution_timeout``.

The jobs' Python code (``lakehouse``, ``pipelines``, ``stream_edge``) is shipped to the executors
with ``--py-files`` (a zip the DAG builds next to the checkout when the sources change), so the
python-engine window path runs on executors that have only what spark-submit gives them.

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
LAKEHOUSE_SPARK_JARS        comma-separated runtime jars (the project's jar cache): ``--jars`` on a
                            cluster, the driver's class path on a ``local[...]`` master
LAKE_SOURCE                 edge table root, e.g. ``s3://lake/data-lake/time-series/sensor_readings``
LAKEHOUSE_TABLE             target table (``lake.db.sensor_readings``)
LAKEHOUSE_FORMAT            ``iceberg`` or ``delta`` (``iceberg``)
LAKEHOUSE_SCHEDULE          cron or preset (``@hourly``)
LAKEHOUSE_COMPACT_SINCE     compact partitions newer than this age (``2d``)
LAKEHOUSE_WINDOWS_OUTPUT    table for the windows job's results (unset: no windows task)
LAKEHOUSE_WINDOWS_ARGS      its window options, e.g. ``--duration 1m --value-column temperature``
LAKEHOUSE_QUALITY_SPEC      expectations spec for the validate job (unset: no validate task)
LAKEHOUSE_KEYED_TABLE       keyed table the upsert job keeps from LAKEHOUSE_TABLE's changes (unset: no
                            upsert task)
LAKEHOUSE_UPSERT_ARGS       its options, e.g. ``--cdc debezium`` or ``--key-column device``
LAKEHOUSE_AUDIT             ``0``: validate after the windows instead of write-audit-publish (``1``)
LAKEHOUSE_TASK_TIMEOUT_MINUTES  execution_timeout of every task (``120``)
LAKEHOUSE_MAINTENANCE_SCHEDULE  schedule of lakehouse_maintenance (``@daily``)
LAKEHOUSE_INTERVAL_LOOKBACK register/validate partitions ending after interval start minus this
                            (``1d``; set it to the edge's lateness bound; empty: the whole lake/table)
LAKEHOUSE_PY_FILES          comma-separated --py-files (default: ``$LAKEHOUSE_HOME/.local/dist/
                            lakehouse-jobs.zip``, built from the checkout; empty: ship nothing)
LAKEHOUSE_RETENTION         maintenance: snapshot/vacuum retention (``7d``)
LAKEHOUSE_DATA_DOCS_DIR     where validate writes Great Expectations Data Docs (optional)
ICEBERG_REST_URI, ICEBERG_WAREHOUSE, ICEBERG_TOKEN, ICEBERG_CREDENTIAL, LAKEHOUSE_CATALOG,
AWS_ENDPOINT_URL_S3, AWS_ENDPOINT_URL, S3_ENDPOINT, AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY,
AWS_SESSION_TOKEN, AWS_REGION, AWS_DEFAULT_REGION, LAKEHOUSE_LOCAL_DIR
                            passed through to the jobs (see ``lakehouse.session``; the S3
                            precedence is ``stream_edge.lake.s3_settings``, as the edge's)
==========================  ==============================================================

Secrets (``SECRETS``: the catalog token and credential, the S3 keys and token) are never in the DAG: not in
a task's templated ``env_vars`` (which Airflow renders, stores and shows as "Rendered Template";
it masks ``*_SECRET_*`` and ``*_TOKEN`` by name, but not ``ICEBERG_CREDENTIAL``) nor in the
serialized DAG. spark-submit's process inherits them from the worker's environment when the task
runs, and :class:`LakehouseSparkSubmit` registers their values with Airflow's log masker first.
"""

from __future__ import annotations

import functools
import glob
import os
import re
import shlex
import tempfile
import zipfile
from datetime import datetime, timedelta
from pathlib import Path
from typing import Mapping

from airflow.providers.apache.spark.operators.spark_submit import SparkSubmitOperator
from airflow.sdk import DAG, chain

PASS_THROUGH = ("ICEBERG_REST_URI", "ICEBERG_WAREHOUSE", "LAKEHOUSE_CATALOG", "AWS_ENDPOINT_URL_S3", "AWS_ENDPOINT_URL",
                "S3_ENDPOINT", "AWS_REGION", "AWS_DEFAULT_REGION", "LAKEHOUSE_LOCAL_DIR")
#: read from the worker's environment at run time, never put in a templated field (module docstring)
SECRETS = ("ICEBERG_TOKEN", "ICEBERG_CREDENTIAL", "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN")


def runtime_secrets(environ: Mapping[str, str]) -> dict[str, str]:
    """The secrets of ``SECRETS`` that ``environ`` sets (the worker's, when the task runs)."""
    return {name: environ[name] for name in SECRETS if environ.get(name)}


def _mask_in_airflow_logs(value: str) -> None:
    """Register ``value`` with Airflow's secrets masker (its module moved between versions)."""
    import importlib

    for module in ("airflow.sdk.log", "airflow.sdk.execution_time.secrets_masker",
                   "airflow.utils.log.secrets_masker"):
        try:
            importlib.import_module(module).mask_secret(value)
            return
        except (ImportError, AttributeError):
            continue


class LakehouseSparkSubmit(SparkSubmitOperator):
    """SparkSubmitOperator that registers the worker's ``SECRETS`` with Airflow's log masker when
    the task runs. The job gets them as spark-submit's process inherits the worker's environment
    (the hook starts it with that environment plus ``env_vars``); none is in ``env_vars``, so no
    rendered field, serialized DAG or logged command line carries them."""

    def execute(self, context: object) -> None:
        for value in runtime_secrets(os.environ).values():
            _mask_in_airflow_logs(value)
        return super().execute(context)


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


#: the packages the jobs import on executors (the python-engine window path runs edge code there)
PY_PACKAGES = ("lakehouse", "pipelines", "stream_edge")


def build_code_zip(home: Path, target: Path) -> Path:
    """Zip the project's Python packages for ``--py-files``; rebuilt only when a source is newer.

    Written to a temporary name and renamed, so a parse racing another one never ships half a zip.
    """
    sources = [Path(d) / f for pkg in PY_PACKAGES for d, _, files in os.walk(home / pkg)
               if "__pycache__" not in d for f in files if f.endswith((".py", ".json"))]
    newest = max((p.stat().st_mtime for p in sources), default=0.0)
    if target.exists() and target.stat().st_mtime >= newest:
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=".lakehouse-jobs-", suffix=".zip", dir=target.parent)
    with os.fdopen(fd, "wb") as handle, zipfile.ZipFile(handle, "w", zipfile.ZIP_DEFLATED) as archive:
        for path in sorted(sources):
            archive.write(path, path.relative_to(home).as_posix())
    os.replace(tmp, target)
    return target


@functools.lru_cache(maxsize=None)
def _py_files(home: Path) -> str | None:
    env = os.environ.get("LAKEHOUSE_PY_FILES")
    if env is not None:
        return env or None
    return str(build_code_zip(home, home / ".local" / "dist" / "lakehouse-jobs.zip"))


def _lookback_seconds() -> int | None:
    text = os.environ.get("LAKEHOUSE_INTERVAL_LOOKBACK", "1d").strip()
    if not text:
        return None
    match = re.fullmatch(r"(\d+)\s*([smhdw])", text)
    if not match:
        raise ValueError(f"LAKEHOUSE_INTERVAL_LOOKBACK={text!r}: expected an age such as 6h, 1d, 0s")
    return int(match.group(1)) * {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 604800}[match.group(2)]


def interval_since() -> list[str]:
    """``--since <data_interval_start - lookback>`` (templated), or nothing for the whole table."""
    seconds = _lookback_seconds()
    if seconds is None:
        return []
    return ["--since", "{{ (data_interval_start - macros.timedelta(seconds=%d)).isoformat() }}" % seconds]


def _job_env(home: Path, python: str) -> dict[str, str]:
    # The jobs' own Spark (pyspark from the project venv), not Airflow's pyspark-client.
    spark_home = os.environ.get("SPARK_HOME") or next(
        iter(glob.glob(str(home / ".venv" / "lib" / "python3*" / "site-packages" / "pyspark"))), "")
    env = {"SPARK_HOME": spark_home, "PYSPARK_PYTHON": python, "PYSPARK_DRIVER_PYTHON": python,
           "PYTHONPATH": str(home)}
    env.update({k: os.environ[k] for k in PASS_THROUGH if os.environ.get(k)})
    return env


#: the audit branch of one DAG run: one per data interval, so a failed interval stays out of main
AUDIT_BRANCH = "audit_{{ data_interval_start.strftime('%Y%m%dT%H%M') }}"


def _timeout() -> timedelta:
    return timedelta(minutes=float(os.environ.get("LAKEHOUSE_TASK_TIMEOUT_MINUTES", "120")))


def jar_args(conn_id: str, jars: str, dist_classpath: str = "") -> dict[str, str | None]:
    """``jars`` and ``driver_class_path`` of a task, templated on its connection's master.

    A ``local[...]`` master runs the executor in the driver's JVM: the jars belong on the driver's
    class path (those not already on it through ``SPARK_DIST_CLASSPATH``); shipped with ``--jars``,
    the executor would copy every one (~670 MB) into a scratch folder at each job. Any other
    master ships them with ``--jars``, as its executors need them. Example (rendered when the task
    runs): ``jar_args("spark_default", "/j/a.jar,/j/b.jar", "/j/b.jar")["driver_class_path"]`` is
    ``"{% if (conn.get('spark_default').host or '').startswith('local') %}/j/a.jar{% endif %}"``.
    """
    if not jars:
        return {"jars": None, "driver_class_path": None}
    local = "(conn.get(%r).host or '').startswith('local')" % conn_id
    on_path = set(dist_classpath.split(":"))
    classpath = ":".join(jar for jar in jars.split(",") if jar not in on_path)
    return {"jars": "{% if " + local + " %}{% else %}" + jars + "{% endif %}",
            "driver_class_path": "{% if " + local + " %}" + classpath + "{% endif %}" if classpath else None}


def _common(home: Path) -> dict:
    python = os.environ.get("LAKEHOUSE_PYTHON") or str(home / ".venv" / "bin" / "python")
    conn_id = os.environ.get("LAKEHOUSE_SPARK_CONN_ID", "spark_default")
    return dict(
        conn_id=conn_id,
        spark_binary=os.environ.get("LAKEHOUSE_SPARK_SUBMIT") or str(home / ".venv" / "bin" / "spark-submit"),
        **jar_args(conn_id, _jars(), os.environ.get("SPARK_DIST_CLASSPATH", "")),
        py_files=_py_files(home),
        env_vars=_job_env(home, python),
        conf={"spark.ui.enabled": "false"},
        execution_timeout=_timeout(),
    )


def _job(home: Path, job: str, args: list[str]) -> SparkSubmitOperator:
    return LakehouseSparkSubmit(task_id=job, name=f"lakehouse-{job}",
                               application=str(home / "pipelines" / "jobs" / f"{job}.py"),
                               application_args=args, **_common(home))


def build_dag() -> DAG:
    """The hourly DAG, configured from the environment at parse time.

    With a quality spec and an Iceberg table (and ``LAKEHOUSE_AUDIT`` not ``0``), write-audit-
    publish: ``register --audit <branch> -> validate --branch -> publish -> windows``; a failed
    validation fails the run before publish, so ``main`` (and the windows read from it) never
    see the interval's rows. Otherwise ``register -> windows -> validate``. Compaction and the
    snapshot clean-up run in the daily ``lakehouse_maintenance`` DAG.
    """
    home = _home()
    table = os.environ.get("LAKEHOUSE_TABLE", "lake.db.sensor_readings")
    table_format = os.environ.get("LAKEHOUSE_FORMAT", "iceberg")
    spec = os.environ.get("LAKEHOUSE_QUALITY_SPEC")
    audit = bool(spec) and table_format == "iceberg" and os.environ.get("LAKEHOUSE_AUDIT", "1") != "0"
    with DAG(
        dag_id="lakehouse",
        description="register edge files (audited: validate, then publish), recompute windows incrementally",
        schedule=os.environ.get("LAKEHOUSE_SCHEDULE", "@hourly"),
        start_date=datetime(2026, 1, 1),
        catchup=False,
        max_active_runs=1,  # the jobs are idempotent, but two at once would only contend
        default_args={"retries": 2, "retry_delay": timedelta(minutes=2), "execution_timeout": _timeout()},
        tags=["lakehouse"],
    ) as dag:
        register = _job(home, "register", [
            "--source", os.environ.get("LAKE_SOURCE", (home / ".local" / "lake").as_uri()),
            "--table", table, "--format", table_format, *interval_since(),
            *(["--audit", AUDIT_BRANCH] if audit else [])])
        tasks = [register]
        validate = None
        if spec:
            docs = os.environ.get("LAKEHOUSE_DATA_DOCS_DIR")
            validate = _job(home, "validate", [
                "--table", table, "--format", table_format, "--spec", spec,
                *interval_since(), *(["--data-docs-dir", docs] if docs else []),
                *(["--branch", AUDIT_BRANCH] if audit else [])])
            if audit:
                validate.retries = 0  # a failed suite is an answer, not a glitch
                publish = _job(home, "publish", ["--table", table, "--branch", AUDIT_BRANCH])
                publish.retries = 0
                tasks += [validate, publish]
        keyed = os.environ.get("LAKEHOUSE_KEYED_TABLE")
        if keyed:  # the interval's changes, once published, merged into the keyed table
            tasks.append(_job(home, "upsert", ["--source", table, "--table", keyed,
                                               *shlex.split(os.environ.get("LAKEHOUSE_UPSERT_ARGS", ""))]))
        windows_output = os.environ.get("LAKEHOUSE_WINDOWS_OUTPUT")
        if windows_output:
            tasks.append(_job(home, "windows", ["--table", table, "--format", table_format, "--output", windows_output,
                                                *shlex.split(os.environ.get("LAKEHOUSE_WINDOWS_ARGS", ""))]))
        if validate is not None and not audit:
            tasks.append(validate)
        chain(*tasks)
    return dag


def windows_output_format(output: str, windows_args: str) -> str:
    """The windows job's output format, as the job resolves it (``lakehouse.tables.resolve_format``):
    ``--output-format`` among its arguments, else ``delta`` for a ``delta.`path``` name, else
    ``iceberg``. Example: ``windows_output_format("lake.db.temp_1m", "--duration 1m")`` is ``"iceberg"``."""
    args = shlex.split(windows_args)
    for i, arg in enumerate(args):
        if arg == "--output-format" and i + 1 < len(args):
            return args[i + 1]
        if arg.startswith("--output-format="):
            return arg.split("=", 1)[1]
    return "delta" if output.strip().startswith("delta.`") else "iceberg"


def _maintenance_tasks(home: Path, table: str, table_format: str, retention: str, suffix: str = "") -> list:
    """One table's clean-up steps: Iceberg ``rewrite_manifests -> expire_snapshots ->
    remove_orphan_files``, Delta ``vacuum``; task ids end with ``suffix``."""
    common = ["--table", table, "--format", table_format]
    actions = (["rewrite-manifests", "expire-snapshots", "remove-orphan-files"] if table_format == "iceberg"
               else ["vacuum"])
    if suffix == "_keyed":  # a keyed table's merges leave delete files: rewritten first
        actions.insert(0, "compact-deletes")
    return [LakehouseSparkSubmit(
        task_id=action.replace("-", "_") + suffix, name=f"lakehouse-maintain-{action}",
        application=str(home / "pipelines" / "jobs" / "maintain.py"),
        application_args=[*common, "--action", action,
                          *(["--retention", retention] if action in ("expire-snapshots", "vacuum") else [])],
        **_common(home)) for action in actions]


def build_maintenance_dag() -> DAG:
    """The daily DAG ``lakehouse_maintenance``: compaction (bin-packing, verified) of the recent
    partitions, then each clean-up step as its own task: Iceberg ``rewrite_manifests ->
    expire_snapshots -> remove_orphan_files``, Delta ``vacuum``; then, with
    ``LAKEHOUSE_WINDOWS_OUTPUT`` set, the same clean-up steps for the windows job's output (each
    hourly run commits to it: ``*_windows`` tasks). The windows' state table expires its own old
    snapshots as it is written (lakehouse/windows/state.py)."""
    home = _home()
    table = os.environ.get("LAKEHOUSE_TABLE", "lake.db.sensor_readings")
    table_format = os.environ.get("LAKEHOUSE_FORMAT", "iceberg")
    retention = os.environ.get("LAKEHOUSE_RETENTION", "7d")
    windows_output = os.environ.get("LAKEHOUSE_WINDOWS_OUTPUT")
    with DAG(
        dag_id="lakehouse_maintenance",
        description="compact, rewrite manifests, expire snapshots, remove orphan files (Iceberg) / vacuum (Delta)",
        schedule=os.environ.get("LAKEHOUSE_MAINTENANCE_SCHEDULE", "@daily"),
        start_date=datetime(2026, 1, 1),
        catchup=False,
        max_active_runs=1,
        default_args={"retries": 2, "retry_delay": timedelta(minutes=5), "execution_timeout": _timeout()},
        tags=["lakehouse"],
    ) as dag:
        common = ["--table", table, "--format", table_format]
        tasks = [_job(home, "compact", [*common, "--since", os.environ.get("LAKEHOUSE_COMPACT_SINCE", "2d"),
                                        "--no-cleanup"])]
        tasks += _maintenance_tasks(home, table, table_format, retention)
        if windows_output:
            output_format = windows_output_format(windows_output, os.environ.get("LAKEHOUSE_WINDOWS_ARGS", ""))
            tasks += _maintenance_tasks(home, windows_output, output_format, retention, suffix="_windows")
        keyed = os.environ.get("LAKEHOUSE_KEYED_TABLE")
        if keyed:
            tasks += _maintenance_tasks(home, keyed, "iceberg", retention, suffix="_keyed")
        chain(*tasks)
    return dag


dag = build_dag()
maintenance_dag = build_maintenance_dag()
