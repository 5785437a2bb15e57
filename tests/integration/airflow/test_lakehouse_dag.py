"""The Airflow DAG runs the real jobs: Airflow (its own venv) -> SparkSubmitOperator ->
spark-submit pipelines/jobs/{register,compact}.py -> Iceberg table in the real REST catalog,
with edge files written by the real data-lake sink as input."""

from __future__ import annotations

import json
import os
import subprocess
import uuid
from pathlib import Path

import pytest

from stream_edge.sinks.core.datalake.sink import DataLakeSink

REPO = Path(__file__).resolve().parents[3]
TS = 1_763_800_000_000  # 2025-11-22T08:26:40Z


def _airflow_python() -> Path:
    venv = os.environ.get("STREAMLAKE_AIRFLOW_VENV") or str(
        Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "streaming-lakehouse" / "venv-airflow")
    python = Path(venv) / "bin" / "python"
    assert python.exists(), f"Airflow is not installed at {venv}; run './dev test' (it installs Airflow once)"
    return python


def _airflow_env(tmp_path: Path, extra: dict[str, str]) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AIRFLOW", "PYSPARK", "SPARK_HOME"))}
    env.update({
        "AIRFLOW_HOME": str(tmp_path / "airflow"),
        "AIRFLOW__CORE__DAGS_FOLDER": str(REPO / "pipelines" / "airflow"),
        "AIRFLOW__CORE__LOAD_EXAMPLES": "False",
        "AIRFLOW_CONN_SPARK_DEFAULT": json.dumps({"conn_type": "spark", "host": "local[2]"}),
        "LAKEHOUSE_HOME": str(REPO),
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


def _parse_dag(tmp_path: Path, extra: dict[str, str]) -> dict:
    code = ("import json, runpy, sys; d = runpy.run_path(sys.argv[1])['dag']; "
            "print(json.dumps({'dag_id': d.dag_id, "
            "'tasks': {t.task_id: sorted(t.downstream_task_ids) for t in d.tasks}, "
            "'apps': {t.task_id: t.application for t in d.tasks}, "
            "'args': {t.task_id: t.application_args for t in d.tasks}}))")
    dag_file = str(REPO / "pipelines" / "airflow" / "lakehouse_dag.py")
    result = subprocess.run([str(_airflow_python()), "-c", code, dag_file], env=_airflow_env(tmp_path, extra),
                            capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr[-3000:]
    return json.loads(result.stdout.strip().splitlines()[-1])


@pytest.mark.integration
def test_dag_parses_into_register_then_compact(tmp_path) -> None:
    parsed = _parse_dag(tmp_path, {})
    assert parsed["dag_id"] == "lakehouse"
    assert parsed["tasks"] == {"register": ["compact"], "compact": []}
    assert parsed["apps"]["register"] == str(REPO / "pipelines" / "jobs" / "register.py")


@pytest.mark.integration
def test_windows_and_validate_tasks_follow_when_configured(tmp_path) -> None:
    parsed = _parse_dag(tmp_path, {"LAKEHOUSE_WINDOWS_OUTPUT": "lake.db.temp_1m",
                                   "LAKEHOUSE_WINDOWS_ARGS": "--duration 1m --value-column 'temperature'",
                                   "LAKEHOUSE_QUALITY_SPEC": "/etc/lakehouse/readings.json"})
    assert parsed["tasks"] == {"register": ["compact"], "compact": ["windows"], "windows": ["validate"],
                               "validate": []}
    assert parsed["args"]["windows"][-6:] == ["--output", "lake.db.temp_1m", "--duration", "1m",
                                              "--value-column", "temperature"]
    assert parsed["args"]["validate"][4:8] == ["--spec", "/etc/lakehouse/readings.json", "--since", "2d"]
    assert parsed["apps"]["validate"] == str(REPO / "pipelines" / "jobs" / "validate.py")
    whole_table = _parse_dag(tmp_path, {"LAKEHOUSE_QUALITY_SPEC": "/s.json", "LAKEHOUSE_VALIDATE_SINCE": ""})
    assert whole_table["tasks"] == {"register": ["compact"], "compact": ["validate"], "validate": []}
    assert "--since" not in whole_table["args"]["validate"]


@pytest.mark.integration
def test_dag_run_registers_compacts_recomputes_windows_and_validates(tmp_path, services_env, spark) -> None:
    lake = tmp_path / "lake"
    rows = _write_edge_files(lake, batches=3, per_batch=40)
    namespace = f"af_{uuid.uuid4().hex[:8]}"
    spec = tmp_path / "readings.json"
    spec.write_text(json.dumps({"expectations": [
        {"type": "not_null", "column": "sensor"}, {"type": "between", "column": "reading", "min": 0, "max": 39},
        {"type": "in_set", "column": "sensor", "values": ["s0", "s1", "s2"]}]}))
    env = _airflow_env(tmp_path, {
        "LAKE_SOURCE": (lake / "readings").as_uri(),
        "LAKEHOUSE_TABLE": f"lake.{namespace}.readings",
        "LAKEHOUSE_FORMAT": "iceberg",
        "LAKEHOUSE_COMPACT_SINCE": "1000d",
        "LAKEHOUSE_WINDOWS_OUTPUT": f"lake.{namespace}.reading_sums",
        "LAKEHOUSE_WINDOWS_ARGS": "--duration 1h --aggregation sum --value-column reading --key-column sensor "
                                  "--timestamp-column ts_ms --order-by ts_ms",
        "LAKEHOUSE_QUALITY_SPEC": str(spec),
        "LAKEHOUSE_VALIDATE_SINCE": "1000d",
        "ICEBERG_REST_URI": services_env["ICEBERG_REST_URI"],
        "LAKEHOUSE_LOCAL_DIR": str(tmp_path / "lakehouse"),
    })
    env.pop("LAKEHOUSE_CATALOG", None)
    airflow = str(_airflow_python().with_name("airflow"))
    migrate = subprocess.run([airflow, "db", "migrate"], env=env, capture_output=True, text=True, timeout=300)
    assert migrate.returncode == 0, migrate.stderr[-3000:]
    run = subprocess.run([airflow, "dags", "test", "lakehouse"], env=env, capture_output=True, text=True,
                         timeout=900)
    output = run.stdout + run.stderr
    assert run.returncode == 0, output[-5000:]
    assert all(task in output for task in ("register", "compact", "windows", "validate"))
    assert "expectations 3/3 passed" in output

    table = f"rest.{namespace}.readings"
    assert spark.sql(f"SELECT count(*) FROM {table}").collect()[0][0] == rows
    by_sensor = {r[0]: r[1] for r in spark.sql(f"SELECT sensor, count(*) FROM {table} GROUP BY sensor").collect()}
    assert by_sensor == {"s0": 42, "s1": 39, "s2": 39}
    # 3 flushes x 2 hour partitions = 6 edge files; compaction leaves one per partition.
    live_files = spark.sql(f"SELECT count(*) FROM {table}.files").collect()[0][0]
    assert live_files == 2
    # Hour windows per sensor, ordered by ts_ms: the first hour closes when the second begins.
    hour = TS - TS % 3_600_000
    sums = {(r.key, r.window_start, r.window_end): r.value
            for r in spark.table(f"rest.{namespace}.reading_sums").collect()}
    expected: dict = {}
    for i in range(0, 40, 2):  # the even readings are in the first hour, in each of the 3 batches
        key = (f"s{i % 3}", hour, hour + 3_600_000)
        expected[key] = expected.get(key, 0.0) + 3 * float(i)
    assert sums == expected
