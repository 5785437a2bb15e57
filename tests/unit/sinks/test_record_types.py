"""The per-record check (``ColumnTypes``): the schema policy, and the shape cache never letting a
record through that the full check would refuse."""

from __future__ import annotations

import datetime as dt

import pyarrow as pa
import pytest

from stream_edge.sinks.record_types import ColumnTypes, SchemaConflictError


def refused(types: ColumnTypes, *records) -> list:
    """Offsets of the records the check refuses (the others are accepted, in order)."""
    out = []
    for offset, record in enumerate(records):
        try:
            types.check(record, "t", 0, offset)
        except SchemaConflictError as exc:
            assert exc.offset == offset and exc.topic == "t" and exc.partition == 0
            out.append(offset)
    return out


def test_a_refused_record_changes_nothing():
    types = ColumnTypes()
    assert refused(types, {"a": 1}, {"a": 1, "new": "x", "bad": None, 3: 1}) == [1]
    assert types.types == {"a": pa.int64()}  # 'new' was not adopted with the refused record


def test_the_shape_cache_still_bounds_ints():
    types = ColumnTypes()
    assert refused(types, *[{"v": i} for i in range(10)], {"v": 2 ** 63}, {"v": 2 ** 62}, {"v": -(2 ** 63) - 1}) \
        == [10, 12]


def test_widening_clears_the_cache_so_inexact_ints_are_refused_after():
    types = ColumnTypes()
    assert refused(types, {"v": 1}, {"v": 1.5}) == []  # not written yet, exact: the column is double
    assert types.types["v"] == pa.float64()
    assert refused(types, {"v": 2}, {"v": 2 ** 60}) == [1]  # the cached (v: int) shape must not skip this


def test_an_inexact_int_forbids_the_widening():
    types = ColumnTypes()
    assert refused(types, {"v": 2 ** 60}, {"v": 0.5}) == [1]
    assert types.types["v"] == pa.int64()


def test_committed_columns_keep_their_type_but_promote():
    types = ColumnTypes()
    types.adopt(pa.schema([pa.field("small", pa.int32()), pa.field("f", pa.float32()), pa.field("n", pa.int64()),
                           pa.field("s", pa.large_string())]))
    assert refused(types, {"small": 1}, {"small": 2 ** 40}, {"f": 1.5}, {"n": 1.5}, {"s": "text"}, {"s": 1}) \
        == [3, 5]
    assert types.types["small"] == pa.int64() and types.types["f"] == pa.float64()


def test_an_int32_column_is_bounded_even_for_a_cached_shape():
    types = ColumnTypes()
    types.adopt(pa.schema([pa.field("small", pa.int32())]))
    for i in range(5):
        types.check({"small": i}, "t", 0, i)
    types.check({"small": 2 ** 40}, "t", 0, 5)
    assert types.types["small"] == pa.int64()  # promoted, not let through to an int32 conversion


def test_other_classes_are_checked_against_the_column_by_arrow():
    types = ColumnTypes()
    moment = dt.datetime(2026, 1, 5, tzinfo=dt.timezone.utc)
    assert refused(types, {"at": moment}, {"at": moment}, {"at": "2026-01-05"}) == [2]


def test_timestamp_column_range_and_type():
    types = ColumnTypes(timestamp_column="ts")
    assert refused(types, {"ts": 1_767_571_200_000}, {"ts": 1_767_571_200_000.5}, {"ts": 10 ** 17}, {"ts": "x"},
                   {"ts": None}, {"other": 1}) == [2, 3]


@pytest.mark.parametrize("value", [{"h": {"a": 1}}, {"h": [1]}])
def test_hive_value_columns_hold_scalars(value):
    assert refused(ColumnTypes(hive_value_columns=["h"]), value) == [0]


def test_the_compiled_check_refuses_what_the_full_check_refuses():
    types = ColumnTypes(timestamp_column="ts")
    good = [{"ts": 1_767_571_200_000 + i, "v": i, "s": "x", "f": 0.5, "b": True, "n": None} for i in range(300)]
    assert refused(types, *good) == []
    assert types._quick is not None  # the usual shape has its compiled check
    first = good[0]
    assert refused(types, dict(first, ts=10 ** 17), dict(first, v=2 ** 63), dict(first, s=1), dict(first, f="x"),
                   dict(first, b=1), dict(first, n=[1]), dict(first, extra={"a": 1})) == [0, 1, 2, 3, 4]
    assert types.types["n"] == pa.list_(pa.int64()) and "extra" in types.types  # new columns: accepted
