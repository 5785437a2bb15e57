"""The one-sort sliding plan (``lakehouse.window_presorted``) against the edge's engines.

Streams whose records are never more than grace behind their group's event time must give the
edge's windows with ``late`` = 0; any other stream must be reported (``late`` > 0: the caller then
runs the exact plan).
"""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from lakehouse.window_recompute import WindowSpec
from tests.unit.lakehouse.test_window_native_parity import (ORDER, RAW, build_rows, edge_rows, same,
                                                            without_closed_window_records)

pytestmark = pytest.mark.spark

AGGS = st.sampled_from(["sum", "count", "mean", "min", "max"])


def _frame(spark, rows: list[tuple], floats: bool):
    value_type = "double" if floats else "bigint"
    return spark.createDataFrame(rows, f"key string, ts bigint, value {value_type}, __order_0 int, __order_1 bigint")


def _collect(df) -> list[tuple]:
    return sorted((r.key, r.window_start, r.window_end, r.value) for r in df.collect())


def sliding_rows(spark, rows: list[tuple], spec: WindowSpec, floats: bool) -> tuple[list[tuple], int, int]:
    from pyspark.sql import Observation

    from lakehouse.window_presorted import presorted_sliding_windows

    seen = Observation("presorted_test")
    got = _collect(presorted_sliding_windows(_frame(spark, rows, floats), spec, "__order_1", ["__order_0", "key"],
                                             seen))
    return got, int(seen.get["groups"] or 0), int(seen.get["late"] or 0)


def in_time_order(rows: list[tuple], grace: int) -> list[tuple]:
    """Records moved up to at most ``grace`` behind their group's event time (clean groups)."""
    latest: dict[tuple[str, int], int] = {}
    out = []
    for key, ts, value, partition, offset in rows:
        now = max(latest.get((key, partition), 0), ts)
        ts = max(ts, now - grace)
        latest[(key, partition)] = now
        out.append((key, ts, value, partition, offset))
    return out


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(raw=RAW, duration=st.integers(1, 30), grace=st.integers(0, 20), aggregation=AGGS,
       origin=st.sampled_from([0, 1000]), tidy=st.booleans(), floats=st.booleans())
def test_presorted_sliding_equals_the_edge_for_clean_groups(spark, raw, duration, grace, aggregation, origin, tidy,
                                                            floats):
    spec = WindowSpec("sliding", duration, grace, None, aggregation)
    rows = build_rows(raw, origin, floats, spread=False)
    if tidy:
        rows = in_time_order(without_closed_window_records(rows, duration, grace), grace)
    got, groups, late = sliding_rows(spark, rows, spec, floats)
    expected = edge_rows(rows, spec)
    assert groups == len({(r[0], r[3]) for r in rows})
    assert late == late_records(rows, grace, 2 * duration + grace)
    if late == 0:
        assert same(got, expected), f"{spec.describe()}:\n{got}\n{expected}"
    if tidy and origin == 1000:
        assert late == 0


def late_records(rows: list[tuple], grace: int, near_zero: int) -> int:
    """Records more than ``grace`` behind their group's event time when they arrive (offset order),
    or at most ``near_zero``."""
    latest: dict[tuple[str, int], int] = {}
    late = 0
    for key, ts, _value, partition, _offset in sorted(rows, key=lambda r: (r[3], r[4])):
        now = max(latest.get((key, partition), 0), ts)
        late += ts <= now - grace - 1 or ts <= near_zero
        latest[(key, partition)] = now
    return late


def test_presorted_sliding_reports_a_late_record(spark):
    # key b: ts 1025 arrives after 1031 (grace 5): 6 ms behind -> late; key a is in order
    rows = [("a", 1000, 1, 0, 0), ("a", 1005, 2, 0, 1), ("a", 1040, 3, 0, 2), ("a", 1040, 4, 0, 3),
            ("a", 1090, 1, 0, 4)]
    spec = WindowSpec("sliding", 10, 5, None, "sum")
    got, groups, late = sliding_rows(spark, rows, spec, floats=False)
    assert (groups, late) == (1, 0)
    assert got == edge_rows(rows, spec) == [("a", 990, 1000, 1), ("a", 995, 1005, 3), ("a", 1030, 1040, 7)]
    behind = rows + [("b", 1000, 1, 1, 0), ("b", 1031, 2, 1, 1), ("b", 1025, 5, 1, 2), ("b", 1060, 1, 1, 3)]
    _, groups, late = sliding_rows(spark, behind, spec, floats=False)
    assert (groups, late) == (2, 1)
