"""Each DataFrame -> DataFrame step of the lakehouse jobs on a few rows, compared with chispa
(schema and rows): input preparation, the incremental run's reordered keys, the fixed windows'
partial rows and windows, and the audit's row-level violations."""

from __future__ import annotations

import pytest
from chispa import assert_df_equality

from lakehouse.audit import violation
from lakehouse.quality_spec import ExpectationSpec
from lakehouse.windows.definition import Grouping, WindowRecomputeOptions, WindowSpec
from lakehouse.windows.incremental import reordered_keys
from lakehouse.windows.native import fixed_event_times, fixed_window_parts, native_fixed_windows
from lakehouse.windows.plan import prepare_input
from lakehouse.windows.state import build_state

pytestmark = pytest.mark.spark

ORDER = ["__order_0", "__order_1"]
GROUP = ["__order_0", "key"]
RECORDS = "key string, ts bigint, value bigint, __order_0 int, __order_1 bigint"


def test_prepare_input_renames_converts_event_time_and_drops_null_keys(spark):
    raw = spark.createDataFrame(
        [("a", "2026-01-01 00:00:01.5", 3.0, 0, 7), (None, "2026-01-01 00:00:02", 1.0, 0, 8)],
        "_kafka_key string, at string, temp double, _kafka_partition int, _kafka_offset bigint",
    ).selectExpr("_kafka_key", "to_timestamp(at) AS event_time", "temp", "_kafka_partition", "_kafka_offset")
    options = WindowRecomputeOptions(table="t", output="o", value_column="temp", timestamp_column="event_time",
                                     window=WindowSpec.parse("tumbling", "1s"))
    expected = spark.createDataFrame([("a", 1_767_225_601_500, 3.0, 0, 7)],
                                     "key string, ts bigint, value double, __order_0 int, __order_1 bigint")
    assert_df_equality(prepare_input(raw, options), expected, ignore_nullable=True)


def test_reordered_keys_are_the_keys_of_groups_with_records_between_old_ones(spark):
    old = spark.createDataFrame([("a", 1000, 1, 0, 0), ("a", 3000, 1, 0, 2), ("b", 500, 1, 1, 0)], RECORDS)
    new = spark.createDataFrame([("a", 2500, 1, 0, 1), ("b", 4000, 1, 1, 5), ("c", 100, 1, 1, 6)], RECORDS)
    grouping = Grouping(WindowSpec.parse("tumbling", 1000, grace=200), ORDER, GROUP)
    got = reordered_keys(build_state(old, grouping), new, grouping)
    assert_df_equality(got, spark.createDataFrame([("a",)], "key string"), ignore_nullable=True)


def test_fixed_window_parts_and_windows(spark):
    # tumbling 10 ms, no grace: ts 25 closes [0, 10) and [10, 20); ts 5 arrives after it: late
    data = spark.createDataFrame([("a", 3, 1, 0, 0), ("a", 12, 2, 0, 1), ("a", 25, 4, 0, 2), ("a", 5, 8, 0, 3),
                                  ("a", 31, 16, 0, 4)], RECORDS)
    spec = WindowSpec.parse("tumbling", 10, aggregation="sum")
    grouping = Grouping(spec, ORDER, GROUP)
    parts = fixed_window_parts(fixed_event_times(data, grouping), grouping).drop("__gh")
    expected_parts = spark.createDataFrame([(0, "a", 0, 0, 1), (0, "a", 10, 10, 2), (0, "a", 20, 20, 4)],
                                           "__order_0 int, key string, __first bigint, __last bigint, __sum bigint")
    assert_df_equality(parts, expected_parts, ignore_row_order=True, ignore_nullable=True)
    windows = native_fixed_windows(data, grouping).drop("__gh")
    expected = spark.createDataFrame([("a", 0, 10, 1), ("a", 10, 20, 2), ("a", 20, 30, 4)],
                                     "key string, window_start bigint, window_end bigint, value bigint")
    assert_df_equality(windows, expected, ignore_row_order=True, ignore_nullable=True)


def test_audit_violations_flag_the_rows_that_break_each_check(spark):
    df = spark.createDataFrame([(1, "s-1", 20.0), (2, None, 30.0), (3, "s-3", 900.0), (3, "s-4", 10.0)],
                               "seq int, sensor string, value double")
    checks = {
        "not_null": ExpectationSpec(0, "not_null", column="sensor"),
        "between": ExpectationSpec(1, "between", column="value", min=0, max=100),
        "unique": ExpectationSpec(2, "unique", column="seq"),
        "regex": ExpectationSpec(3, "regex", column="sensor", pattern="^s-[0-3]$"),
    }
    flagged = df.select("seq", "sensor", *[violation(e, df).alias(name) for name, e in checks.items()])
    expected = spark.createDataFrame(
        [(1, "s-1", False, False, False, False), (2, None, True, False, False, False),
         (3, "s-3", False, True, True, False), (3, "s-4", False, False, True, True)],
        "seq int, sensor string, not_null boolean, between boolean, unique boolean, regex boolean")
    assert_df_equality(flagged, expected, ignore_row_order=True, ignore_nullable=True)
    assert violation(ExpectationSpec(4, "row_count_between", min=1), df) is None
