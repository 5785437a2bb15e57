"""validate: the example spec passes on good sensor tables (Iceberg and Delta) and writes Data Docs;
bad rows are reported by expectation, column and unexpected count; severity, mostly, since and
where behave as documented; a spec naming a missing column fails clearly."""

from __future__ import annotations

import json
import uuid
from datetime import datetime, timezone
from pathlib import Path

import pytest
from lh_testkit import BASE_TS, HOUR_MS, REPO

from lakehouse.delta_tables import DeltaTable
from lakehouse.iceberg_tables import IcebergTable
from lakehouse.quality import DataQualityError, ValidateOptions, run_validate
from lakehouse.quality_spec import QualitySpecError

pytestmark = [pytest.mark.integration, pytest.mark.spark]

EXAMPLE_SPEC = REPO / "pipelines" / "quality" / "sensor_readings.json"
COLUMNS = [("sensor", "string"), ("ts_ms", "bigint"), ("temperature", "double"), ("humidity", "double"),
           ("year", "int"), ("month", "int"), ("day", "int"), ("hour", "int")]
SCHEMA = ", ".join(f"{name} {ty}" for name, ty in COLUMNS)
PARTITIONS = ["year", "month", "day", "hour"]
SENSORS = ("sensor-a", "sensor-b", "sensor-c", "sensor-d")


def demo_rows(n: int = 40, hours: int = 2) -> list[tuple]:
    """Readings shaped like the demo's (pipelines/demo.py), spread over ``hours`` hours of 2026-01-01."""
    rows = []
    for i in range(n):
        hour = i % hours
        rows.append((SENSORS[i % len(SENSORS)], BASE_TS + hour * HOUR_MS + i * 1000, 20.0 + (i % 7) * 0.5,
                     40.0 + i % 10, 2026, 1, 1, hour))
    return rows


# Three rows break the example spec: a NULL sensor, an unknown sensor reading 999 degrees, and a
# second copy of the first reading.
GOOD = demo_rows()
BAD = [(None, BASE_TS + HOUR_MS + 900_000, 21.0, 45.0, 2026, 1, 1, 1),
       ("sensor-z", BASE_TS + HOUR_MS + 901_000, 999.0, 45.0, 2026, 1, 1, 1),
       GOOD[0]]


@pytest.fixture(scope="module")
def tables(spark):
    """(Iceberg table in the embedded catalog with GOOD rows, Delta table with GOOD + BAD rows)."""
    namespace = f"gxq_{uuid.uuid4().hex[:10]}"
    iceberg = IcebergTable(spark, f"embedded.{namespace}.sensor_readings")
    iceberg.create(COLUMNS, PARTITIONS)
    spark.createDataFrame(GOOD, SCHEMA).writeTo(iceberg.identifier).append()
    delta = DeltaTable(spark, f"{namespace}.sensor_readings")
    delta.create(COLUMNS, PARTITIONS)
    spark.createDataFrame(GOOD + BAD, SCHEMA).write.format("delta").mode("append").save(delta.location)
    yield iceberg, delta
    for statement in (f"DROP TABLE IF EXISTS {iceberg.sql_name}", f"DROP NAMESPACE IF EXISTS embedded.`{namespace}`",
                      f"DROP TABLE IF EXISTS spark_catalog.`{namespace}`.`sensor_readings`",
                      f"DROP DATABASE IF EXISTS spark_catalog.`{namespace}`"):
        try:
            spark.sql(statement)
        except Exception as exc:  # noqa: BLE001 - clean-up must not hide the tests' own result
            print(f"clean-up failed: {statement}: {exc}")


def write_spec(folder: Path, expectations: list[dict]) -> str:
    path = folder / "spec.json"
    path.write_text(json.dumps({"expectations": expectations}))
    return str(path)


def test_example_spec_passes_on_good_iceberg_and_delta_rows_and_writes_data_docs(spark, tables, tmp_path):
    iceberg, delta = tables
    docs = tmp_path / "data-docs"

    on_iceberg = run_validate(spark, ValidateOptions(table=iceberg.identifier, spec_path=str(EXAMPLE_SPEC),
                                                     data_docs_dir=str(docs)))
    assert not on_iceberg.failed and on_iceberg.failures == [] and on_iceberg.warnings == []
    assert on_iceberg.rows == 40
    # columns_exist over 8 columns counts as 8 expectations, plus 9 other entries.
    assert (on_iceberg.passed, on_iceberg.total) == (17, 17)
    assert [r.label for r in on_iceberg.results[:2]] == ["columns_exist(sensor)", "columns_exist(ts_ms)"]
    row_count = next(r for r in on_iceberg.results if r.type == "row_count_between")
    assert row_count.observed_value == 40 and row_count.expectation == "expect_table_row_count_to_be_between"

    # The Delta table's good rows only (the WHERE drops every bad row but the duplicate's original).
    on_delta = run_validate(spark, ValidateOptions(table=delta.identifier, table_format="delta",
                                                   spec_path=str(EXAMPLE_SPEC), where="sensor = 'sensor-b'", data_docs_dir=docs.as_uri()))
    assert not on_delta.failed and (on_delta.passed, on_delta.total) == (17, 17)
    assert on_delta.rows == 10 and on_delta.filter == "where sensor = 'sensor-b'"

    for report in (on_iceberg, on_delta):
        page = Path(report.data_docs_page)
        assert page.is_file() and page.suffix == ".html" and docs in page.parents
        assert report.data_docs_index == str(docs / "index.html")
        summary = report.summary_line()
        assert summary.startswith(f"validate {report.table} ({report.table_format}): passed, rows ")
        assert "expectations 17/17 passed" in summary and f"data docs {page}" in summary
    # One site for both tables: the index links the pages of both runs.
    index = (docs / "index.html").read_text()
    for report in (on_iceberg, on_delta):
        assert str(Path(report.data_docs_page).relative_to(docs)) in index
    page = Path(on_iceberg.data_docs_page).read_text()
    assert iceberg.identifier in page and "values must never be null" in page


def test_bad_rows_are_reported_by_expectation_column_and_unexpected_count(spark, tables):
    _, delta = tables
    report = run_validate(spark, ValidateOptions(table=delta.identifier, table_format="delta",
                                                 spec_path=str(EXAMPLE_SPEC)))

    assert report.failed and report.rows == 43
    assert {r.label: r.unexpected_count for r in report.failures} == {
        "not_null(sensor)": 1, "between(temperature)": 1, "unique(sensor,ts_ms)": 2}
    null_check = next(r for r in report.failures if r.type == "not_null")
    assert (null_check.expectation, null_check.column, null_check.element_count) == (
        "expect_column_values_to_not_be_null", "sensor", 43)
    between = next(r for r in report.failures if r.type == "between")
    assert between.column == "temperature" and between.examples == [999.0]
    # The unknown sensor is a warning in the spec: reported, not failing.
    assert [(r.label, r.unexpected_count, r.severity) for r in report.warnings] == [("in_set(sensor)", 1, "warning")]
    assert (report.passed, report.total) == (13, 17)
    assert report.data_docs_page is None and report.data_docs_index is None

    summary = report.summary_line()
    assert f"validate {delta.identifier} (delta): FAILED, rows 43, expectations 13/17 passed" in summary
    assert ("failed: not_null(sensor) [1 unexpected], between(temperature) [1 unexpected], "
            "unique(sensor,ts_ms) [2 unexpected], warnings: in_set(sensor) [1 unexpected]") in summary
    error = report.error()
    assert isinstance(error, DataQualityError)
    assert str(error).startswith(f"3 of 17 expectations failed on {delta.identifier}: ")
    assert "FAILED not_null(sensor): 1 unexpected of 43 rows (2.33%)" in str(error)
    assert "\n" not in str(error) and "\n" not in summary


def test_since_selects_recent_partitions_and_only_critical_failures_fail(spark, tables, tmp_path):
    iceberg, _ = tables
    spec = write_spec(tmp_path, [
        {"type": "row_count_between", "min": 20, "max": 20},
        {"type": "between", "column": "hour", "min": 1, "max": 1},
        # 8 of the 20 humidity values (47, 49) lie outside 40..45: passes with mostly 0.25, not without.
        {"type": "between", "column": "humidity", "min": 40, "max": 45, "mostly": 0.25},
        {"type": "between", "column": "humidity", "min": 40, "max": 45, "severity": "info"},
        {"type": "between", "column": "temperature", "max": 20, "severity": "warning"},
    ])
    report = run_validate(spark, ValidateOptions(table=iceberg.identifier, spec_path=spec,
                                                 since=datetime(2026, 1, 1, 1, 30, tzinfo=timezone.utc)))
    assert report.rows == 20 and report.filter == "since 2026-01-01T01:30:00+00:00"
    assert not report.failed
    assert [r.success for r in report.results] == [True, True, True, False, False]
    assert [(r.label, r.severity, r.unexpected_count) for r in report.warnings] == [
        ("between(humidity)", "info", 8), ("between(temperature)", "warning", 17)]
    assert "passed, rows 20 (since 2026-01-01T01:30:00+00:00), expectations 3/5 passed, warnings: " \
           "between(humidity) [8 unexpected], between(temperature) [17 unexpected]" in report.summary_line()


def test_a_missing_column_fails_clearly_whatever_the_severity(spark, tables, tmp_path):
    iceberg, _ = tables
    spec = write_spec(tmp_path, [
        {"type": "columns_exist", "columns": ["sensor", "no_such_column"], "severity": "info"},
        {"type": "not_null", "column": "no_such_column", "severity": "warning"},
    ])
    report = run_validate(spark, ValidateOptions(table=iceberg.identifier, spec_path=spec, where="hour = 0"))
    assert report.rows == 20
    assert [(r.label, r.success) for r in report.results] == [
        ("columns_exist(sensor)", True), ("columns_exist(no_such_column)", False), ("not_null(no_such_column)", False)]
    # A check that cannot be evaluated fails the run even at warning severity; a missing column
    # reported by an info-level columns_exist does not.
    assert report.failed
    (broken,) = report.failures
    assert broken.label == "not_null(no_such_column)" and "no_such_column" in broken.error
    assert [r.label for r in report.warnings] == ["columns_exist(no_such_column)"]
    assert "failed: not_null(no_such_column) [error]" in report.summary_line()


def test_bad_spec_missing_table_and_remote_docs_folder_fail_before_validation(spark, tables, tmp_path):
    iceberg, _ = tables
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"expectations": [{"type": "between", "column": "temperature", "min": "cold"}]}))
    with pytest.raises(QualitySpecError, match=r"bad\.json: expectations\[0\] \(between\): field 'min'"):
        run_validate(spark, ValidateOptions(table=iceberg.identifier, spec_path=str(bad)))
    with pytest.raises(ValueError, match="does not exist"):
        run_validate(spark, ValidateOptions(table=f"{iceberg.catalog}.{iceberg.namespace}.missing",
                                            spec_path=str(EXAMPLE_SPEC)))
    with pytest.raises(ValueError, match="data_docs_dir must be a local folder"):
        run_validate(spark, ValidateOptions(table=iceberg.identifier, spec_path=str(EXAMPLE_SPEC),
                                            data_docs_dir="s3://bucket/docs"))
