"""The Airflow DAG runs the real jobs: Airflow (its own venv) -> SparkSubmitOperator ->
spark-submit pipelines/jobs/{register,compact}.py -> Iceberg table in the real REST catalog,
with edge files written by the real data-lake sink as input."""

from __future__ import annotations

import json
import os
import zipfile
import subprocess
import uuid
from pathlib import Path
from types import SimpleNamespace

import jinja2
import pytest

from infra.local import spark_cds
from stream_edge.sinks.core.datalake.sink import DataLakeSink

REPO = Path(__file__).resolve().parents[3]
TS = 1_767_263_200_000  # 2026-01-01T10:26:40Z: inside the first data interval tested below
SINCE = "{{ (data_interval_start - macros.timedelta(seconds=%d)).isoformat() }}"


def _airflow_python() -> Path:
    venv = os.environ.get("STREAMLAKE_AIRFLOW_VENV") or str(
        Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "streaming-lakehouse" / "venv-airflow")
    python = Path(venv) / "bin" / "python"
    assert python.exists(), f"Airflow is not installed at {venv}; run './dev test' (it installs Airflow once)"
    return python


def _airflow_env(tmp_path: Path, extra: dict[str, str]) -> dict[str, str]:
    # SPARK_HOME stays: the DAG hands it to its jobs (the suite's is the one its class-data archive maps)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AIRFLOW", "PYSPARK"))}
    env.update({
        "AIRFLOW_HOME": str(tmp_path / "airflow"),
        "AIRFLOW__CORE__DAGS_FOLDER": str(REPO / "pipelines" / "airflow"),
        "AIRFLOW__CORE__LOAD_EXAMPLES": "False",
        "AIRFLOW_CONN_SPARK_DEFAULT": json.dumps({"conn_type": "spark", "host": "local[2]"}),
        "LAKEHOUSE_HOME": str(REPO),
        # the jobs run with Spark's SQL defaults, as deployed (not the suite's tiny-data settings)
        "SPARK_SUBMIT_OPTS": spark_cds.deployed_jvm_opts(os.environ.get("SPARK_SUBMIT_OPTS", "")),
    })
    env.update(extra)
    return env


def _write_edge_files(root: Path, batches: int, per_batch: int) -> int:
    """Edge files written by the real sink: one committed file per flush, two hour partitions."""
    sink = DataLakeSink(table_name="readings", storage_url=root.as_uri(), hive_columns=["year", "month", "day", "hour"],
                        timestamp_column="ts_ms")
    sink.setup()
    offset = 0
    for _ in range(batches):
        for i in range(per_batch):
            value = {"sensor": f"s{i % 3}", "ts_ms": TS + (i % 2) * 3_600_000, "reading": float(i)}
            sink.add(value, b"k", value["ts_ms"], [], "readings", 0, offset)
            offset += 1
        sink.flush("readings", 0)
    return offset


def _parse_dags(tmp_path: Path, configs: list[tuple[dict[str, str], str]]) -> list[dict]:
    """Each ``(extra environment, DAG variable)`` parsed as Airflow would (the file run afresh with
    that environment); one Airflow interpreter for all of them (importing Airflow is the cost)."""
    code = ("import json, os, runpy, sys\n"
            "base = dict(os.environ)\n"
            "for extra, name in json.loads(sys.argv[2]):\n"
            "    os.environ.clear(); os.environ.update(base, **extra)\n"
            "    d = runpy.run_path(sys.argv[1])[name]\n"
            "    print(json.dumps({'dag_id': d.dag_id, "
            "'timeouts': {t.task_id: t.execution_timeout.total_seconds() / 60 for t in d.tasks}, "
            "'tasks': {t.task_id: sorted(t.downstream_task_ids) for t in d.tasks}, "
            "'apps': {t.task_id: t.application for t in d.tasks}, "
            "'py_files': {t.task_id: t.py_files for t in d.tasks}, "
            "'jars': {t.task_id: [t.jars, t.driver_class_path] for t in d.tasks}, "
            "'args': {t.task_id: t.application_args for t in d.tasks}}))\n")
    dag_file = str(REPO / "pipelines" / "airflow" / "lakehouse_dag.py")
    result = subprocess.run([str(_airflow_python()), "-c", code, dag_file, json.dumps(configs)],
                            env=_airflow_env(tmp_path, {}), capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr[-3000:]
    parsed = [json.loads(line) for line in result.stdout.splitlines() if line.startswith('{"dag_id"')]
    assert len(parsed) == len(configs), result.stdout[-3000:]
    return parsed


@pytest.mark.integration
def test_dag_parses_into_register_then_windows_and_a_daily_maintenance_dag(tmp_path) -> None:
    windows = {"LAKEHOUSE_WINDOWS_OUTPUT": "lake.db.temp_1m",
               "LAKEHOUSE_WINDOWS_ARGS": "--duration 1m --value-column 'temperature'"}
    keyed = {"LAKEHOUSE_KEYED_TABLE": "lake.db.devices", "LAKEHOUSE_UPSERT_ARGS": "--cdc debezium"}
    (parsed, no_py_files, with_jars, maintenance, delta, with_windows, delta_windows, with_keyed,
     keyed_maintenance) = _parse_dags(tmp_path, [
        (windows, "dag"),
        ({"LAKEHOUSE_PY_FILES": ""}, "dag"),
        ({"LAKEHOUSE_SPARK_JARS": "/j/iceberg.jar,/j/delta.jar", "SPARK_DIST_CLASSPATH": "/j/delta.jar"}, "dag"),
        ({"LAKEHOUSE_TASK_TIMEOUT_MINUTES": "30"}, "maintenance_dag"),
        ({"LAKEHOUSE_FORMAT": "delta", "LAKEHOUSE_TABLE": "db.readings", "LAKEHOUSE_RETENTION": "10d"},
         "maintenance_dag"),
        (windows, "maintenance_dag"),
        ({"LAKEHOUSE_WINDOWS_OUTPUT": "db.temp_1m", "LAKEHOUSE_WINDOWS_ARGS": "--output-format delta --duration 1m"},
         "maintenance_dag"),
        ({**windows, **keyed}, "dag"),
        (keyed, "maintenance_dag"),
    ])
    assert parsed["dag_id"] == "lakehouse"
    assert parsed["tasks"] == {"register": ["windows"], "windows": []}
    assert parsed["apps"]["register"] == str(REPO / "pipelines" / "jobs" / "register.py")
    assert parsed["args"]["windows"][-6:] == ["--output", "lake.db.temp_1m", "--duration", "1m",
                                              "--value-column", "temperature"]
    assert all(minutes == 120.0 for minutes in parsed["timeouts"].values())
    assert parsed["args"]["register"][-2:] == ["--since", SINCE % 86400]  # the data interval's partitions
    # the project's code goes to the executors: a zip of the three packages, built from the checkout
    zips = set(parsed["py_files"].values())
    assert zips == {str(REPO / ".local" / "dist" / "lakehouse-jobs.zip")}
    with zipfile.ZipFile(zips.pop()) as archive:
        names = set(archive.namelist())
    assert {"lakehouse/windows/native.py", "pipelines/jobs/windows.py", "stream_edge/dataframe/windows/replay.py",
            "pipelines/quality/sensor_readings.json"} <= names
    assert no_py_files["py_files"] == {"register": None}
    # the runtime jars: --jars for a cluster's executors; on a local master, the driver's class path
    # minus what SPARK_DIST_CLASSPATH already gives it (templates rendered against the task's connection)
    jars = with_jars["jars"]["register"]

    def render(template: str | None, master: str) -> str:
        connection = SimpleNamespace(get=lambda conn_id: SimpleNamespace(host=master if conn_id == "spark_default"
                                                                         else None))
        return jinja2.Template(template or "").render(conn=connection)

    assert [render(t, "spark://10.0.0.5:7077") for t in jars] == ["/j/iceberg.jar,/j/delta.jar", ""]
    assert [render(t, "local[2]") for t in jars] == ["", "/j/iceberg.jar"]

    assert maintenance["dag_id"] == "lakehouse_maintenance"
    assert maintenance["tasks"] == {"compact": ["rewrite_manifests"], "rewrite_manifests": ["expire_snapshots"],
                                    "expire_snapshots": ["remove_orphan_files"], "remove_orphan_files": []}
    assert set(maintenance["timeouts"].values()) == {30.0}
    assert maintenance["args"]["compact"][-1] == "--no-cleanup"  # each clean-up step is its own task
    assert maintenance["apps"]["rewrite_manifests"] == str(REPO / "pipelines" / "jobs" / "maintain.py")
    assert maintenance["args"]["rewrite_manifests"][-2:] == ["--action", "rewrite-manifests"]
    assert maintenance["args"]["expire_snapshots"][-4:] == ["--action", "expire-snapshots", "--retention", "7d"]
    assert delta["tasks"] == {"compact": ["vacuum"], "vacuum": []}
    assert delta["args"]["vacuum"] == ["--table", "db.readings", "--format", "delta", "--action", "vacuum",
                                       "--retention", "10d"]
    # the windows output, committed to every hour, gets the same clean-up steps after the table's
    assert with_windows["tasks"] == {
        **maintenance["tasks"], "remove_orphan_files": ["rewrite_manifests_windows"],
        "rewrite_manifests_windows": ["expire_snapshots_windows"],
        "expire_snapshots_windows": ["remove_orphan_files_windows"], "remove_orphan_files_windows": []}
    assert with_windows["args"]["expire_snapshots_windows"] == [
        "--table", "lake.db.temp_1m", "--format", "iceberg", "--action", "expire-snapshots", "--retention", "7d"]
    assert delta_windows["tasks"]["remove_orphan_files"] == ["vacuum_windows"]
    assert delta_windows["args"]["vacuum_windows"][:4] == ["--table", "db.temp_1m", "--format", "delta"]
    # a keyed table: the interval's changes merged once registered, its delete files compacted daily
    assert with_keyed["tasks"] == {"register": ["upsert"], "upsert": ["windows"], "windows": []}
    assert with_keyed["apps"]["upsert"] == str(REPO / "pipelines" / "jobs" / "upsert.py")
    assert with_keyed["args"]["upsert"] == ["--source", "lake.db.sensor_readings", "--table", "lake.db.devices",
                                            "--cdc", "debezium"]
    assert keyed_maintenance["tasks"] == {
        **maintenance["tasks"], "remove_orphan_files": ["compact_deletes_keyed"],
        "compact_deletes_keyed": ["rewrite_manifests_keyed"], "rewrite_manifests_keyed": ["expire_snapshots_keyed"],
        "expire_snapshots_keyed": ["remove_orphan_files_keyed"], "remove_orphan_files_keyed": []}
    assert keyed_maintenance["args"]["compact_deletes_keyed"] == [
        "--table", "lake.db.devices", "--format", "iceberg", "--action", "compact-deletes"]


@pytest.mark.integration
def test_quality_spec_makes_the_dag_write_audit_publish(tmp_path) -> None:
    parsed, unaudited = _parse_dags(tmp_path, [
        ({"LAKEHOUSE_WINDOWS_OUTPUT": "lake.db.temp_1m", "LAKEHOUSE_QUALITY_SPEC": "/etc/lakehouse/readings.json"},
         "dag"),
        ({"LAKEHOUSE_QUALITY_SPEC": "/s.json", "LAKEHOUSE_INTERVAL_LOOKBACK": "", "LAKEHOUSE_AUDIT": "0",
          "LAKEHOUSE_WINDOWS_OUTPUT": "lake.db.w"}, "dag"),
    ])
    assert parsed["tasks"] == {"register": ["validate"], "validate": ["publish"], "publish": ["windows"],
                               "windows": []}
    branch = "audit_{{ data_interval_start.strftime('%Y%m%dT%H%M') }}"
    assert parsed["args"]["register"][-2:] == ["--audit", branch]
    # register and validate cover the same partitions: those of the data interval (lookback 1d)
    assert parsed["args"]["validate"][4:8] == ["--spec", "/etc/lakehouse/readings.json", "--since", SINCE % 86400]
    assert parsed["args"]["register"][-4:-2] == ["--since", SINCE % 86400]
    assert parsed["args"]["validate"][-2:] == ["--branch", branch]
    assert parsed["args"]["publish"] == ["--table", "lake.db.sensor_readings", "--branch", branch]
    assert unaudited["tasks"] == {"register": ["windows"], "windows": ["validate"], "validate": []}
    assert "--since" not in unaudited["args"]["validate"] and "--branch" not in unaudited["args"]["validate"]
    assert "--since" not in unaudited["args"]["register"]


def _catalog(services_env: dict[str, str]):
    """The REST catalog the DAG's jobs wrote to, read with pyiceberg (no Spark JVM of the test's own)."""
    from pyiceberg.catalog import load_catalog

    return load_catalog("check", type="rest", uri=services_env["ICEBERG_REST_URI"])


def _read(catalog, table: str, ref: str = "main") -> list[dict]:
    """The rows of ``table`` at branch ``ref``, freshly loaded from the catalog."""
    loaded = catalog.load_table(table)
    snapshot = loaded.snapshot_by_name(ref)
    assert snapshot is not None, f"{table} has no branch {ref!r}"
    return loaded.scan(snapshot_id=snapshot.snapshot_id).to_arrow().to_pylist()


def _rows(catalog, table: str, ref: str) -> int:
    return len(_read(catalog, table, ref))


def _airflow(env: dict, *args: str, timeout: float = 1500) -> tuple[int, str]:
    airflow = str(_airflow_python().with_name("airflow"))
    run = subprocess.run([airflow, *args], env=env, capture_output=True, text=True, timeout=timeout)
    return run.returncode, run.stdout + run.stderr


@pytest.mark.integration
@pytest.mark.timeout(2400)  # two DAG runs of four and two spark-submit jobs; on 2 cores shared with the suite
def test_dag_publishes_a_passing_interval_and_holds_back_a_failing_one(tmp_path, services_env) -> None:
    lake = tmp_path / "lake"
    rows = _write_edge_files(lake, batches=2, per_batch=40)
    namespace = f"af_{uuid.uuid4().hex[:8]}"
    spec = tmp_path / "readings.json"
    spec.write_text(json.dumps({"expectations": [
        {"type": "not_null", "column": "sensor"}, {"type": "between", "column": "reading", "min": 0, "max": 39},
        {"type": "in_set", "column": "sensor", "values": ["s0", "s1", "s2"]}]}))
    env = _airflow_env(tmp_path, {
        "LAKE_SOURCE": (lake / "readings").as_uri(),
        "LAKEHOUSE_TABLE": f"lake.{namespace}.readings",
        "LAKEHOUSE_FORMAT": "iceberg",
        "LAKEHOUSE_WINDOWS_OUTPUT": f"lake.{namespace}.reading_sums",
        "LAKEHOUSE_WINDOWS_ARGS": "--duration 1h --aggregation sum --value-column reading --key-column sensor "
                                  "--timestamp-column ts_ms --order-by ts_ms",
        "LAKEHOUSE_QUALITY_SPEC": str(spec),
        "LAKEHOUSE_INTERVAL_LOOKBACK": "1h",  # interval 10:00 -> partitions ending after 09:00
        "ICEBERG_REST_URI": services_env["ICEBERG_REST_URI"],
        "LAKEHOUSE_LOCAL_DIR": str(tmp_path / "lakehouse"),
    })
    env.pop("LAKEHOUSE_CATALOG", None)
    code, output = _airflow(env, "db", "migrate", timeout=300)
    assert code == 0, output[-3000:]
    table = f"{namespace}.readings"

    code, output = _airflow(env, "dags", "test", "lakehouse", "2026-01-01T10:00:00+00:00")
    assert code == 0, output[-5000:]
    assert "expectations 3/3 passed" in output and "main fast-forwarded to branch audit_20260101T1000" in output
    catalog = _catalog(services_env)
    assert _rows(catalog, table, "main") == rows
    hour = TS - TS % 3_600_000
    sums = {(r["key"], r["window_start"]): r["value"] for r in _read(catalog, f"{namespace}.reading_sums")}
    assert sums[("s0", hour)] == 2 * sum(float(i) for i in range(0, 40, 6))

    # the next interval brings a reading of 500: validate fails, publish and windows never run
    sink = DataLakeSink(table_name="readings", storage_url=lake.as_uri(), hive_columns=["year", "month", "day", "hour"],
                        timestamp_column="ts_ms")
    sink.setup()
    sink.add({"sensor": "s1", "ts_ms": TS + 1, "reading": 500.0}, b"k", TS + 1, [], "readings", 0, rows)
    # and a (valid) reading for hour 08, before the interval's lookback: not this run's partition
    sink.add({"sensor": "s2", "ts_ms": TS - 2 * 3_600_000, "reading": 1.0}, b"k", TS, [], "readings", 0, rows + 1)
    sink.flush("readings", 0)
    code, output = _airflow(env, "dags", "test", "lakehouse", "2026-01-01T11:00:00+00:00")
    assert "expectations 2/3 passed" in output, output[-5000:]
    assert "main fast-forwarded" not in output
    assert _rows(catalog, table, "main") == rows  # main unchanged
    branch = _rows(catalog, table, "audit_20260101T1100")
    assert branch == rows + 1  # kept for inspection; the hour-08 file was outside the interval's scope
    quarantined = _read(catalog, f"{table}_quarantine")
    assert [(r["sensor"], r["reading"], list(r["_failed_checks"])) for r in quarantined] == [
        ("s1", 500.0, ["between(reading)"])]
