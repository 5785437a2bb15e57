"""Crash tests: the job runs as its own driver process and is SIGKILLed mid-job (Python and JVM);
the next run completes the work with no lost and no duplicated rows."""

from __future__ import annotations

from datetime import timedelta

import pytest
from chispa import assert_df_equality
from lh_testkit import run_job, sensor_records

from lakehouse.compaction import CompactOptions, run_compact
from lakehouse.register import RegisterOptions, run_register

pytestmark = [pytest.mark.integration, pytest.mark.spark]


def rows(spark, target):
    if target.kind != "delta":
        spark.sql(f"REFRESH TABLE {target.sql_name()}")
    return spark.table(target.sql_name()).select("seq", "ts_ms", "sensor", "value")


def expected(spark, lake):
    return spark.createDataFrame([(r["seq"], r["ts_ms"], r["sensor"], r["value"]) for r in lake.records],
                                 "seq bigint, ts_ms bigint, sensor string, value double")


def assert_exactly_once(spark, target, lake):
    actual = rows(spark, target)
    assert actual.count() == actual.select("seq").distinct().count() == len(lake.records)
    assert_df_equality(actual, expected(spark, lake), ignore_row_order=True, ignore_nullable=True)


@pytest.mark.parametrize("kind, point", [("rest", "register.before-commit"),
                                         ("embedded", "register.after-commit"),
                                         ("delta", "register.after-commit")])
def test_register_killed_mid_job_then_rerun(spark, edge_lake, make_target, kind, point):
    lake = edge_lake()
    target = make_target(kind)
    lake.write(sensor_records(24, 0))
    run_register(spark, RegisterOptions(source=lake.uri, table=target.name, table_format=target.table_format))
    lake.write(sensor_records(30, 100), partition=1)
    lake.write(sensor_records(10, 200), partition=0)

    run_job(["register", "--source", lake.uri, "--table", target.name, "--format", target.table_format],
            target.env, pause_at=point)
    if kind == "embedded":
        # Compaction runs before the next register and deletes the replaced edge files -- also
        # those of the batch whose done marker the killed run never wrote.
        run_compact(spark, CompactOptions(table=target.name, retention=timedelta(0),
                                          orphan_retention=timedelta(0), allow_unsafe_retention=True))

    report = run_register(spark, RegisterOptions(source=lake.uri, table=target.name,
                                                 table_format=target.table_format))
    # Killed before its commit: this run commits the pending batch; after it: nothing to add.
    assert report.extra["files added"] == (8 if point == "register.before-commit" else 0)
    assert_exactly_once(spark, target, lake)
    again = run_register(spark, RegisterOptions(source=lake.uri, table=target.name,
                                                table_format=target.table_format))
    assert again.extra["files added"] == 0


@pytest.mark.parametrize("kind", ["embedded", "delta"])
def test_compact_killed_while_rewriting_then_rerun(spark, edge_lake, make_target, kind):
    lake = edge_lake(hive_columns=("year", "month", "day", "hour"))
    target = make_target(kind)
    for commit in range(6):
        lake.write(sensor_records(200, commit * 1000, hours=2))
        run_register(spark, RegisterOptions(source=lake.uri, table=target.name, table_format=target.table_format))

    # Killed about a second into the rewrite (Spark jobs writing the new files).
    run_job(["compact", "--table", target.name, "--format", target.table_format],
            target.env, kill_after=("rewriting" if kind != "delta" else "optimizing", 1.0))
    assert_exactly_once(spark, target, lake)

    report = run_compact(spark, CompactOptions(
        table=target.name, table_format=target.table_format, retention=timedelta(0),
        orphan_retention=timedelta(0), allow_unsafe_retention=True))
    assert report.files_after == 2
    assert_exactly_once(spark, target, lake)
