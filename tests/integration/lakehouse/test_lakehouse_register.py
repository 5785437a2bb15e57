"""register: edge files written by the real DataLakeSink into Iceberg (REST server and embedded
catalog, in place) and Delta; idempotent; new files; schema evolution; files of a refused type set
aside without holding up the rest."""

from __future__ import annotations

import re
import shutil
from datetime import datetime, timezone

import pytest
from chispa import assert_df_equality

from lakehouse.register import RegisterOptions, run_register

from lh_testkit import BASE_TS, HOUR_MS, TABLE_KINDS, EdgeLake, sensor_records

pytestmark = [pytest.mark.integration, pytest.mark.spark]

COLUMNS = ["seq", "ts_ms", "sensor", "value", "year", "month", "day", "hour"]


def expected_df(spark, records, columns=COLUMNS):
    """What the table must hold: each record once, with its UTC time partition values."""
    rows = []
    for r in records:
        moment = datetime.fromtimestamp(r["ts_ms"] / 1000, tz=timezone.utc)
        full = dict(r, year=moment.year, month=moment.month, day=moment.day, hour=moment.hour)
        rows.append(tuple(full.get(c) for c in columns))
    actual_types = {"seq": "bigint", "ts_ms": "bigint", "sensor": "string", "value": "double", "year": "int",
                    "month": "int", "day": "int", "hour": "int", "unit": "string"}
    schema = ", ".join(f"{c} {actual_types[c]}" for c in columns)
    return spark.createDataFrame(rows, schema)


def table_df(spark, target, columns=COLUMNS):
    spark.sql(f"REFRESH TABLE {target.sql_name()}") if target.kind != "delta" else None
    return spark.table(target.sql_name()).select(*columns)


def register(spark, lake: EdgeLake, target, **kwargs):
    return run_register(spark, RegisterOptions(source=lake.uri, table=target.name,
                                               table_format=target.table_format, **kwargs))


@pytest.mark.parametrize("kind", TABLE_KINDS)
def test_register_creates_table_from_edge_files_and_is_idempotent(spark, edge_lake, make_target, kind):
    lake = edge_lake()
    lake.write(sensor_records(40, 0), partition=0)
    lake.write(sensor_records(30, 1000), partition=1)
    target = make_target(kind)

    first = register(spark, lake, target)
    assert first.extra["files added"] == len(lake.data_files()) == 8  # 2 commits x 2 hours x 2 sensors
    assert first.rows_after == 70
    assert_df_equality(table_df(spark, target), expected_df(spark, lake.records),
                       ignore_row_order=True, ignore_nullable=True)
    # Hostile partition value ('/' in the sensor name) came back exactly.
    assert {r.sensor for r in table_df(spark, target).collect()} == {"s-1", "s/2"}

    second = register(spark, lake, target)
    assert second.extra["files added"] == 0
    assert (second.files_before, second.rows_before) == (second.files_after, second.rows_after)
    assert table_df(spark, target).count() == 70

    if target.table_format == "iceberg":
        # In place: the table references the edge's own files, no copy.
        paths = {r.file_path for r in spark.sql(f"SELECT file_path FROM {target.name}.data_files").collect()}
        assert paths == {f"file://{p}" for p in lake.data_files()}


@pytest.mark.parametrize("kind", TABLE_KINDS)
def test_register_adds_new_commits_and_new_nullable_columns(spark, edge_lake, make_target, kind):
    lake = edge_lake()
    lake.write(sensor_records(20, 0))
    target = make_target(kind)
    register(spark, lake, target)

    newer = [dict(r, unit="C") for r in sensor_records(10, 500)]
    lake.write(newer)
    report = register(spark, lake, target)
    assert report.extra["rows added"] == 10
    columns = COLUMNS + ["unit"]
    expected = expected_df(spark, [dict(r, unit=None) for r in lake.records[:20]] + newer, columns)
    assert_df_equality(table_df(spark, target, columns), expected, ignore_row_order=True, ignore_nullable=True)


@pytest.mark.parametrize("kind", ["embedded", "delta"])
def test_register_sets_aside_an_incompatible_type_change(spark, edge_lake, make_target, kind):
    lake = edge_lake()
    lake.write(sensor_records(10, 0))
    target = make_target(kind)
    register(spark, lake, target)

    # A second writer (its own sink, its own commit log) wrote 'value' as text into the same
    # table layout; the sink cannot see the conflict, the register job must refuse it.
    other = edge_lake()
    other.write([dict(r, value=f"{r['value']} C") for r in sensor_records(4, 900)])
    stray = other.data_files()[0]
    dest = lake.root / stray.relative_to(other.root)
    dest.parent.mkdir(parents=True, exist_ok=True)
    shutil.copy(stray, dest.with_name("part-other-writer.parquet"))

    lake.write(sensor_records(3, 500))  # the edge's own next commit, compatible
    report = register(spark, lake, target)  # the stray file is set aside, the rest registers
    assert report.extra["files set aside"] == 1 and report.extra["rows added"] == 3
    assert re.search(r"part-other-writer\.parquet: column 'value' has type string.*double", report.problem)
    assert table_df(spark, target).count() == 13
    assert register(spark, lake, target).extra["files set aside"] == 1  # refused again, nothing added
    assert table_df(spark, target).count() == 13


def test_register_since_limits_to_recent_partitions(spark, edge_lake, make_target):
    lake = edge_lake()
    lake.write(sensor_records(12, 0, hours=3))
    target = make_target("embedded")
    since = datetime.fromtimestamp((BASE_TS + 2 * HOUR_MS) / 1000, tz=timezone.utc)  # the third hour

    report = register(spark, lake, target, since=since)
    assert report.rows_after == 4
    assert {r.hour for r in table_df(spark, target).collect()} == {2}
    report = register(spark, lake, target)  # the older partitions now
    assert report.rows_after == 12


def test_delta_file_stats_match_a_scan(spark, tmp_path):
    """The reports' (files, rows, bytes) of a Delta table through delta-spark's public API: rows
    less what a deletion vector hides, and a file written without statistics still counted."""
    from lakehouse.delta_tables import DeltaTable

    table = DeltaTable(spark, f"delta.`{tmp_path / 'stats'}`")
    table.create([("id", "bigint"), ("part", "string")], ["part"])
    spark.sql(f"ALTER TABLE {table.sql_name} SET TBLPROPERTIES ('delta.enableDeletionVectors' = 'true')")
    spark.range(0, 100).selectExpr("id", "CAST(id % 2 AS STRING) AS part") \
        .write.format("delta").mode("append").save(table.location)

    def scanned():
        return spark.read.format("delta").load(table.location).count()

    files, rows, size = table.file_stats()
    detail = table.detail()
    assert (files, rows, size) == (detail.numFiles, 100, detail.sizeInBytes) and files >= 2
    listed = table.file_partitions()
    assert len(listed) == files and sum(f["size"] for f in listed) == size
    assert sorted(f["partition"]["part"] for f in listed) == ["0", "1"]
    spark.sql(f"DELETE FROM {table.sql_name} WHERE id < 10")  # a deletion vector, the file kept
    assert table.file_stats()[1] == scanned() == 90
    key = "spark.databricks.delta.stats.collect"
    spark.conf.set(key, "false")
    try:
        spark.range(100, 130).selectExpr("id", "'x' AS part").write.format("delta").mode("append").save(table.location)
    finally:
        spark.conf.unset(key)
    before = files
    files, rows, _ = table.file_stats()
    assert files == table.detail().numFiles > before
    assert rows == scanned() == 120
    assert table.version() == 4 and table.uuid() == str(table.detail().id)
    assert table.partition_columns() == list(table.detail().partitionColumns) == ["part"]


def test_iceberg_file_stats_come_from_the_snapshot_totals_and_match_the_metadata_table(spark, unique_name):
    """The reports' (files, rows, bytes) of an Iceberg table: the snapshot summary's running totals
    after appends and a rewrite; with delete files (merge-on-read) the ``data_files`` table instead."""
    from lakehouse.iceberg_tables import IcebergTable, data_file_totals, quote_ident

    table = IcebergTable(spark, f"embedded.{unique_name('stats')}.t")
    table.create([("id", "bigint"), ("part", "string")], ["part"])
    assert table.file_stats() == (0, 0, 0)  # created, no snapshot yet

    def metadata_table():
        row = spark.sql(f"SELECT count(*) AS n, coalesce(sum(record_count), 0) AS r, "
                        f"coalesce(sum(file_size_in_bytes), 0) AS b FROM {quote_ident(table.identifier + '.data_files')}"
                        ).collect()[0]
        return int(row.n), int(row.r), int(row.b)

    for start in (0, 100):
        spark.range(start, start + 100).selectExpr("id", "CAST(id % 2 AS STRING) AS part").writeTo(table.sql_name).append()
    summary = dict(table.py_table().current_snapshot().summary.additional_properties)
    assert data_file_totals(summary) is not None  # served from the totals
    assert table.file_stats() == metadata_table() and table.file_stats()[:2] == (4, 200)
    spark.sql(f"CALL embedded.system.rewrite_data_files(table => '{table.identifier.split('.', 1)[1]}', "
              "options => map('rewrite-all', 'true'))")
    assert table.file_stats() == metadata_table() and table.file_stats()[:2] == (2, 200)

    spark.sql(f"ALTER TABLE {table.sql_name} SET TBLPROPERTIES ('write.delete.mode' = 'merge-on-read')")
    spark.sql(f"DELETE FROM {table.sql_name} WHERE id < 10")  # a position delete file, data files kept
    summary = dict(table.py_table().current_snapshot().summary.additional_properties)
    assert int(summary["total-delete-files"]) >= 1 and data_file_totals(summary) is None
    assert table.file_stats() == metadata_table() and table.file_stats()[:2] == (2, 200)
