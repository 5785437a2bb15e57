"""register and compact with the edge lake on S3 (the real local S3 server): Iceberg through the
REST catalog (Iceberg's S3FileIO) and the embedded catalog (S3A), and Delta."""

from __future__ import annotations

from datetime import timedelta

import pytest
from chispa import assert_df_equality
from lh_testkit import sensor_records

from lakehouse.compaction import CompactOptions, run_compact
from lakehouse.register import RegisterOptions, run_register
from stream_edge.sinks.core.datalake import DataLakeSink

pytestmark = [pytest.mark.integration, pytest.mark.spark]


@pytest.fixture()
def s3_lake(s3_bucket, services_env):
    """A fresh bucket holding an edge table written by the real sink; returns (uri, records)."""
    bucket = s3_bucket
    sink = DataLakeSink("sensor_readings", storage_url=f"s3://{bucket}", s3_prefix="time-series",
                        hive_columns=["year", "month", "day", "hour", "sensor"], timestamp_column="ts_ms",
                        s3_endpoint_url=services_env["S3_ENDPOINT"])
    sink.setup()
    records = []
    for commit in range(3):
        batch = sensor_records(20, commit * 100)
        for offset, record in enumerate(batch):
            sink.add(record, None, record["ts_ms"], [], "sensors", 0, commit * 100 + offset)
        sink.flush("sensors", 0)
        records.extend(batch)
    return f"s3://{bucket}/time-series/sensor_readings", records


@pytest.mark.parametrize("kind", ["rest", "embedded", "delta"])
def test_register_and_compact_an_edge_lake_on_s3(spark, s3_lake, make_target, kind):
    uri, records = s3_lake
    target = make_target(kind)
    report = run_register(spark, RegisterOptions(source=uri, table=target.name, table_format=target.table_format))
    assert report.extra["files added"] == 12 and report.rows_after == 60
    expected = spark.createDataFrame([(r["seq"], r["sensor"], r["value"]) for r in records],
                                     "seq bigint, sensor string, value double")
    actual = spark.table(target.sql_name()).select("seq", "sensor", "value")
    assert_df_equality(actual, expected, ignore_row_order=True, ignore_nullable=True)

    if target.table_format == "iceberg":  # in place: the table points at the objects in the bucket
        paths = [r.file_path for r in spark.sql(f"SELECT file_path FROM {target.name}.data_files").collect()]
        assert all(p.startswith(uri.replace("s3://", "s3a://")) for p in paths)
        compacted = run_compact(spark, CompactOptions(table=target.name, retention=timedelta(days=7)))
        assert (compacted.files_before, compacted.files_after) == (12, 4)
        assert_df_equality(spark.table(target.sql_name()).select("seq", "sensor", "value"), expected,
                           ignore_row_order=True, ignore_nullable=True)
    assert run_register(spark, RegisterOptions(source=uri, table=target.name,
                                               table_format=target.table_format)).extra["files added"] == 0
