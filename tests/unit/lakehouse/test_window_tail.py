"""The tail groups' records of an incremental run, from one pass over the state and the new
records (``lakehouse.windows.tail``): the same groups and closed floors as the join-based split
(``split_groups``), and the figures the summary job used to collect, observed instead."""

from __future__ import annotations

import pytest

from lakehouse.windows.definition import Grouping, WindowSpec
from lakehouse.windows.state import build_state
from lakehouse.windows.tail import tail_records

pytestmark = pytest.mark.spark

ORDER = ["__order_0", "__order_1"]
GROUP = ["__order_0", "key"]
GROUPING = Grouping(WindowSpec.parse("tumbling", 1000, grace=200), ORDER, GROUP)  # closing lag 1200 ms
RECORDS = "key string, ts bigint, value bigint, __order_0 int, __order_1 bigint"


def collected(records) -> list[tuple]:
    """The rows, run once (the observation counts every run: a sorted comparison samples first)."""
    assert records.columns == ["key", "ts", "value", "__order_0", "__order_1", "__gh", "__closed_floor"]
    return sorted(tuple(row) for row in records.drop("__gh").collect())


def test_tail_records_keep_the_tail_groups_records_above_their_closed_floor(spark):
    old = spark.createDataFrame([("a", 1000, 1, 0, 0), ("a", 3000, 1, 0, 2), ("b", 500, 1, 1, 0)], RECORDS)
    # a: a record between its old ones (reordered); b: a tail; c: a new group; d: only an
    # incomplete record (counted, never windowed)
    new = spark.createDataFrame([("a", 2500, 1, 0, 1), ("b", 4000, 2, 1, 5), ("c", 100, 3, 1, 6),
                                 ("d", None, 4, 1, 7)], RECORDS)
    state = build_state(old, GROUPING)
    complete = "ts IS NOT NULL AND value IS NOT NULL"  # the SQL condition the job passes
    records, seen = tail_records(state, new, complete, GROUPING)
    assert collected(records) == [("b", 500, 1, 1, 0, -700), ("b", 4000, 2, 1, 5, -700), ("c", 100, 3, 1, 6, None)]
    assert {k: seen.get[k] for k in ("new_rows", "changed", "reordered")} == \
        {"new_rows": 4, "changed": 3, "reordered": 1}


def test_a_group_whose_state_holds_no_open_record_still_gets_its_closed_floor(spark):
    from pyspark.sql import functions as F

    old = spark.createDataFrame([("a", 1000, 1, 0, 0)], RECORDS)
    state = build_state(old, GROUPING).withColumn("records", F.lit(None).cast("array<struct<key: string, "
                                                                                       "ts: bigint, value: bigint, "
                                                                                       "__order_0: int, __order_1: "
                                                                                       "bigint>>"))
    new = spark.createDataFrame([("a", -500, 1, 0, 1), ("a", 2000, 2, 0, 2)], RECORDS)
    complete = "ts IS NOT NULL AND value IS NOT NULL"  # the SQL condition the job passes
    records, seen = tail_records(state, new, complete, GROUPING)
    assert collected(records) == [("a", 2000, 2, 0, 2, -200)]
    assert (seen.get["changed"], seen.get["reordered"]) == (1, 0)
