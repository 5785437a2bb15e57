"""TableBuilder's shortcuts for the usual batch (one hour, one value per hive column) must give
exactly what the general path (Arrow kernels + grouping) gives."""

from __future__ import annotations

from datetime import datetime, timezone

import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from stream_edge.sinks.core.datalake import records as records_module
from stream_edge.sinks.core.datalake.records import TableBuilder

HOUR = 3_600_000
TIME = ["year", "month", "day", "hour"]


def build(builder: TableBuilder, values: list):
    offsets = list(range(len(values)))
    table = pa.Table.from_pylist(values)  # the sink's buffers hand the builder typed Arrow tables
    return builder.build(table, offsets, [0] * len(values), [None] * len(values), "t", 0)


def summary(parts):
    return [(p.hive_path, p.partition_values, p.table.to_pylist()) for p in parts]


def general_path(hive_columns, values):
    """The same build with both shortcuts switched off."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(records_module, "_single_hour_parts", lambda ts: None)
        patch.setattr(records_module, "_constant_value", lambda array: (False, None))
        return summary(build(TableBuilder(hive_columns, "ts"), values))


def test_one_hour_batch_gets_the_hour_of_its_rows():
    base = int(datetime(2024, 2, 29, 23, 0, tzinfo=timezone.utc).timestamp() * 1000)
    values = [{"ts": base + i * 1000, "v": i} for i in range(100)]
    [part] = build(TableBuilder(TIME, "ts"), values)
    assert part.hive_path == "year=2024/month=02/day=29/hour=23"
    assert part.table.column("hour").to_pylist() == [23] * 100
    assert part.table.schema.field("year").type == pa.int32()


def test_batch_crossing_an_hour_is_split_in_offset_order():
    base = int(datetime(2024, 12, 31, 23, 59, tzinfo=timezone.utc).timestamp() * 1000)
    values = [{"ts": base + i * 20_000, "v": i} for i in range(6)]  # 23:59:00 .. 00:00:40
    parts = build(TableBuilder(TIME, "ts"), values)
    assert [p.hive_path for p in parts] == ["year=2024/month=12/day=31/hour=23", "year=2025/month=01/day=01/hour=00"]
    assert [p.table.column("v").to_pylist() for p in parts] == [[0, 1, 2], [3, 4, 5]]


@pytest.mark.parametrize("values", [
    [{"ts": 1, "site": "a/b"}, {"ts": 2, "site": "a/b"}],
    [{"ts": 1, "site": None}, {"ts": 2, "site": None}],
    [{"ts": 1, "site": 7}, {"ts": 2, "site": 7}],
    [{"ts": 1, "site": True}, {"ts": 2, "site": True}],
    [{"ts": 1, "site": ""}, {"ts": 2, "site": None}],  # both the default partition
    [{"ts": 1, "site": 0.0}, {"ts": 2, "site": -0.0}],  # equal floats, different paths
    [{"ts": -1, "site": "x"}, {"ts": 0, "site": "x"}],  # either side of the epoch
])
def test_constant_shortcut_agrees_with_grouping(values):
    hive = ["year", "month", "day", "hour", "site"]
    assert summary(build(TableBuilder(hive, "ts"), values)) == general_path(hive, values)


@settings(max_examples=150, deadline=None)
@given(
    start=st.integers(min_value=-5 * 365 * 24 * HOUR, max_value=50 * 365 * 24 * HOUR),
    steps=st.lists(st.integers(min_value=0, max_value=2 * HOUR), min_size=1, max_size=30),
    sites=st.lists(st.sampled_from(["a", "b", None, ""]), min_size=1, max_size=30),
)
def test_shortcuts_never_change_the_result(start, steps, sites):
    values, ts = [], start
    for i, step in enumerate(steps):
        ts += step
        values.append({"ts": ts, "site": sites[i % len(sites)], "i": i})
    hive = ["year", "month", "day", "hour", "site"]
    assert summary(build(TableBuilder(hive, "ts"), values)) == general_path(hive, values)
