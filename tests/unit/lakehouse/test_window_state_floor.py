"""The per-group window state of a full run, taken from the records above the floor the windows
pass observes (``state_floor``, ``stale_groups`` of ``fixed_event_times``), equals the state built
from every record (``build_state``); the observed figures equal a plain Python computation.

Random streams as in the parity test (several keys over two partitions, one key on both, late
records), so some runs have stale groups (a group's last record in offset order lies more than
``grace + duration`` behind its event time): then the observation says so and the job scans every
record for the state, as before.
"""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from lakehouse.window_native import native_fixed_windows
from lakehouse.window_recompute import WindowSpec
from lakehouse.window_state import build_state, full_state
from tests.unit.lakehouse.test_window_native_parity import ORDER, RAW, build_rows

pytestmark = pytest.mark.spark

GROUP = ["__order_0", "key"]
SCHEMA = "key string, ts bigint, value bigint, __order_0 int, __order_1 bigint"


def expected_observations(rows: list[tuple], bound: int) -> tuple[int, int, int]:
    """(groups, state_floor, stale_groups) computed record by record."""
    groups: dict[tuple[int, str], list[tuple]] = {}
    for row in rows:
        groups.setdefault((row[3], row[0]), []).append(row)
    floors, stale = [], 0
    for records in groups.values():
        newest = max(r[1] for r in records)
        floor = max(0, newest) - bound
        last = max(records, key=lambda r: r[4])
        floors.append(floor)
        stale += last[1] <= floor or newest <= floor
    return len(groups), min(floors), stale


def state_rows(state, group: list[str] = GROUP) -> list[tuple]:
    """The state's rows, comparable: records sorted within each group."""
    out = []
    for row in state.collect():
        records = sorted(tuple(r) for r in (row["records"] or []))
        out.append((*(row[c] for c in group), row["latest"], tuple(row["last"]), tuple(records)))
    return sorted(out)


@settings(max_examples=6, deadline=None, suppress_health_check=[HealthCheck.too_slow])  # ~4.6 CPU-s each
@given(raw=RAW, duration=st.integers(2, 30), hop=st.booleans(), grace=st.integers(0, 20),
       origin=st.sampled_from([0, 5, 1000]))
def test_state_from_the_observed_floor_equals_the_state_of_every_record(spark, raw, duration, hop, grace, origin):
    from pyspark.sql import Observation

    spec = WindowSpec("hopping" if hop else "tumbling", duration, grace, max(1, duration // 3) if hop else None,
                      "sum")
    rows = build_rows(raw, origin, floats=False)
    data = spark.createDataFrame(rows, SCHEMA)
    bound = grace + duration
    observed = Observation("state_floor_test")
    native_fixed_windows(data, spec, ORDER, GROUP, observed).write.format("noop").mode("overwrite").save()
    metrics = observed.get
    groups, floor, stale = expected_observations(rows, bound)
    assert (metrics["groups"], metrics["state_floor"], metrics["stale_groups"]) == (groups, floor, stale)
    expected = state_rows(build_state(data, GROUP, ORDER, bound))
    assert state_rows(full_state(data, GROUP, ORDER, bound)) == expected
    if stale == 0:  # what the job does then: the state from the records above the floor only
        assert state_rows(full_state(data, GROUP, ORDER, bound, floor)) == expected


def test_a_late_last_record_makes_its_group_stale(spark):
    """Key a's last record (offset 2) is older than its group's floor: the records above the floor
    would miss it as the group's last, so the observation reports the group stale."""
    from pyspark.sql import Observation

    rows = [("a", 1000, 1, 0, 0), ("a", 1100, 2, 0, 1), ("a", 1010, 3, 0, 2), ("b", 1100, 1, 1, 0)]
    spec = WindowSpec("tumbling", 20, 5)
    observed = Observation("state_floor_stale")
    data = spark.createDataFrame(rows, SCHEMA)
    native_fixed_windows(data, spec, ORDER, GROUP, observed).write.format("noop").mode("overwrite").save()
    assert (observed.get["groups"], observed.get["state_floor"], observed.get["stale_groups"]) == (2, 1075, 1)


@settings(max_examples=6, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(raw=RAW, duration=st.integers(2, 30), hop=st.booleans(), grace=st.integers(0, 20),
       origin=st.sampled_from([0, 5, 1000]), nulls=st.lists(st.integers(0, 59), max_size=3))
def test_the_loops_figures_equal_a_record_by_record_count(spark, raw, duration, hop, grace, origin, nulls):
    """What the JVM loop counts into its accumulator (:class:`lakehouse.window_loop.LoopFigures`):
    groups, the state's floor and stale groups as computed record by record, every row read, the
    rows without a value as skipped, and as many windows as rows came out."""
    from lakehouse.window_loop import loop_figures, loop_windows

    spec = WindowSpec("hopping" if hop else "tumbling", duration, grace, max(1, duration // 3) if hop else None,
                      "sum")
    rows = build_rows(raw, origin, floats=False)
    skipped = sorted({i for i in nulls if i < len(rows)})
    with_nulls = [(k, ts, None if i in skipped else v, p, o) for i, (k, ts, v, p, o) in enumerate(rows)]
    complete = [r for i, r in enumerate(rows) if i not in skipped]
    figures = loop_figures(spark)
    windows = loop_windows(spark.createDataFrame(with_nulls, SCHEMA), spec, ORDER, GROUP, figures).collect()
    counted = figures.get
    assert (counted["rows"], counted["skipped"], counted["windows"]) == (len(rows), len(skipped), len(windows))
    if complete:
        groups, floor, stale = expected_observations(complete, grace + duration)
        assert (counted["groups"], counted["state_floor"], counted["stale_groups"]) == (groups, floor, stale)
    else:
        assert (counted["groups"], counted["state_floor"], counted["stale_groups"]) == (0, None, 0)


@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(raw=RAW, duration=st.integers(2, 30), hop=st.booleans(), grace=st.integers(0, 20),
       origin=st.sampled_from([0, 5, 1000]), closing=st.sampled_from(["key", "partition"]), floats=st.booleans(),
       shared_hash=st.booleans())
def test_state_gathered_by_the_loop_equals_the_state_of_every_record(spark, raw, duration, hop, grace, origin,
                                                                      closing, floats, shared_hash):
    """The JVM loop's window state (gathered while it computes the windows, per key or per
    partition, groups sharing a hash too) holds the rows ``build_state`` gives."""
    from pyspark.sql import types as T

    from lakehouse.window_recompute import compute_windows

    spec = WindowSpec("hopping" if hop else "tumbling", duration, grace, max(1, duration // 3) if hop else None,
                      "sum", closing)
    rows = build_rows(raw, origin, floats=floats)
    data = spark.createDataFrame(rows, SCHEMA.replace("value bigint", "value double") if floats else SCHEMA)
    group = ["__order_0"] if closing == "partition" else GROUP
    hashed = data.selectExpr("*", "CAST(0 AS BIGINT) AS __gh") if shared_hash else data
    bound = grace + duration
    windows, note = compute_windows(hashed, spec, ORDER, group, T.DoubleType() if floats else T.LongType(), "native",
                                    "on", state_bound=bound)
    windows.write.format("noop").mode("overwrite").save()
    assert note.loop_state is not None
    gathered = note.loop_state.frame(spark)
    assert gathered is not None
    assert gathered.columns == build_state(data, group, ORDER, bound).columns
    assert state_rows(gathered, group) == state_rows(build_state(data, group, ORDER, bound), group)


def test_a_state_too_large_to_gather_is_left_to_the_table_scan(spark):
    """More records than the task may gather: no rows (the job then reads the state from the table)."""
    from lakehouse.window_loop import loop_state, loop_windows

    rows = [("a", 1000 + i, i, 0, i) for i in range(20)]
    data = spark.createDataFrame(rows, SCHEMA)
    spec = WindowSpec("tumbling", 100, 5)
    state = loop_state(data, GROUP, ORDER, 105, task_cap=10)
    assert state is not None
    loop_windows(data, spec, ORDER, GROUP, state=state).write.format("noop").mode("overwrite").save()
    assert state.frame(spark) is None
    fits = loop_state(data, GROUP, ORDER, 105, task_cap=20)
    loop_windows(data, spec, ORDER, GROUP, state=fits).write.format("noop").mode("overwrite").save()
    assert fits is not None and fits.frame(spark).count() == 1
