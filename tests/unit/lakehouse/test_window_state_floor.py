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

from lakehouse.windows.native import native_fixed_windows
from lakehouse.windows.definition import Grouping, WindowSpec
from lakehouse.windows.state import build_state, full_state
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
    native_fixed_windows(data, Grouping(spec, ORDER, GROUP), observed).write.format("noop").mode("overwrite").save()
    metrics = observed.get
    groups, floor, stale = expected_observations(rows, bound)
    assert (metrics["groups"], metrics["state_floor"], metrics["stale_groups"]) == (groups, floor, stale)
    expected = state_rows(build_state(data, Grouping(spec, ORDER, GROUP)))
    assert state_rows(full_state(data, Grouping(spec, ORDER, GROUP))) == expected
    if stale == 0:  # what the job does then: the state from the records above the floor only
        assert state_rows(full_state(data, Grouping(spec, ORDER, GROUP), floor)) == expected


def test_a_late_last_record_makes_its_group_stale(spark):
    """Key a's last record (offset 2) is older than its group's floor: the records above the floor
    would miss it as the group's last, so the observation reports the group stale."""
    from pyspark.sql import Observation

    rows = [("a", 1000, 1, 0, 0), ("a", 1100, 2, 0, 1), ("a", 1010, 3, 0, 2), ("b", 1100, 1, 1, 0)]
    spec = WindowSpec("tumbling", 20, 5)
    observed = Observation("state_floor_stale")
    data = spark.createDataFrame(rows, SCHEMA)
    native_fixed_windows(data, Grouping(spec, ORDER, GROUP), observed).write.format("noop").mode("overwrite").save()
    assert (observed.get["groups"], observed.get["state_floor"], observed.get["stale_groups"]) == (2, 1075, 1)
