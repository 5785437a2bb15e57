"""The presorted/bucketed window plans (``lakehouse.window_presorted``) against the edge's engines.

Clean groups (no record more than grace behind its group's event time) get their windows from the
one-sort plan; dirty groups must be reported (``dirty`` observation) and left out, and the
bucketed fixed-window plan must equal the edge for every stream, dirty groups included.
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
    return got, int(seen.get["groups"] or 0), int(seen.get["dirty"] or 0)


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
    got, groups, dirty = sliding_rows(spark, rows, spec, floats)
    expected = edge_rows(rows, spec)
    assert groups == len({(r[0], r[3]) for r in rows})
    if dirty == 0:
        assert same(got, expected), f"{spec.describe()}:\n{got}\n{expected}"
    else:  # the clean groups' windows are exact, the dirty groups' are left out
        clean_keys = {r[0] for r in got}
        assert same(got, [w for w in expected if w[0] in clean_keys])
    if tidy and origin == 1000:
        assert dirty == 0


def test_presorted_sliding_reports_a_late_record_and_leaves_its_group_out(spark):
    # key b: ts 1025 arrives after 1031 (grace 5): 6 ms behind, so b is dirty; key a is in order
    rows = [("a", 1000, 1, 0, 0), ("a", 1005, 2, 0, 1), ("a", 1040, 3, 0, 2), ("a", 1040, 4, 0, 3),
            ("a", 1090, 1, 0, 4), ("b", 1000, 1, 1, 0), ("b", 1031, 2, 1, 1), ("b", 1025, 5, 1, 2),
            ("b", 1060, 1, 1, 3)]
    spec = WindowSpec("sliding", 10, 5, None, "sum")
    got, groups, dirty = sliding_rows(spark, rows, spec, floats=False)
    assert (groups, dirty) == (2, 1)
    assert got == [w for w in edge_rows(rows, spec) if w[0] == "a"]
    assert got == [("a", 990, 1000, 1), ("a", 995, 1005, 3), ("a", 1030, 1040, 7)]


def fixed_rows(spark, rows: list[tuple], spec: WindowSpec, floats: bool) -> tuple[list[tuple], int, int]:
    from pyspark.sql import Observation

    from lakehouse.window_presorted import bucketed_fixed_windows

    seen = Observation("bucketed_test")
    got = _collect(bucketed_fixed_windows(_frame(spark, rows, floats), spec, ORDER, "__order_1",
                                          ["__order_0", "key"], seen))
    return got, int(seen.get["groups"] or 0), int(seen.get["dirty"] or 0)


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(raw=RAW, duration=st.integers(2, 30), windows_per_step=st.sampled_from([1, 2, 3, 5]),
       grace=st.integers(0, 20), aggregation=AGGS, origin=st.sampled_from([0, 5, 1000]), tidy=st.booleans(),
       floats=st.booleans())
def test_bucketed_fixed_windows_equal_the_edge(spark, raw, duration, windows_per_step, grace, aggregation, origin,
                                               tidy, floats):
    step = duration if windows_per_step == 1 else max(1, duration // windows_per_step)
    duration = step * windows_per_step
    spec = WindowSpec("tumbling" if windows_per_step == 1 else "hopping", duration, grace,
                      None if windows_per_step == 1 else step, aggregation)
    rows = build_rows(raw, origin, floats, spread=False)
    if tidy:
        rows = in_time_order(rows, 0)
    got, groups, dirty = fixed_rows(spark, rows, spec, floats)
    expected = edge_rows(rows, spec)
    assert groups == len({(r[0], r[3]) for r in rows})
    assert same(got, expected), f"{spec.describe()} ({dirty} dirty groups):\n{got}\n{expected}"
    if tidy:
        assert dirty == 0


def test_bucketed_fixed_windows_send_a_group_with_a_late_record_to_the_exact_plan(spark):
    # tumbling 10 ms, grace 2: key b's 1004 arrives after 1013 closed [1000, 1010) -> dropped there
    rows = [("a", 1000, 1, 0, 0), ("a", 1004, 2, 0, 1), ("a", 1013, 3, 0, 2), ("a", 1030, 4, 0, 3),
            ("b", 1000, 1, 1, 0), ("b", 1013, 2, 1, 1), ("b", 1004, 5, 1, 2), ("b", 1030, 1, 1, 3)]
    spec = WindowSpec("tumbling", 10, 2, None, "sum")
    got, groups, dirty = fixed_rows(spark, rows, spec, floats=False)
    assert (groups, dirty) == (2, 1)
    assert got == edge_rows(rows, spec) == [("a", 1000, 1010, 3), ("a", 1010, 1020, 3),
                                            ("b", 1000, 1010, 1), ("b", 1010, 1020, 2)]
