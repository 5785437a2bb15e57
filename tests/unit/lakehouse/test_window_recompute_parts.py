"""The Spark-free parts of the windows job: window definitions and the per-group computation."""

from __future__ import annotations

import math

import pyarrow as pa
import pytest

from lakehouse.windows.definition import WindowSpec, parse_duration_ms
from lakehouse.windows.engine import windows_of_group
from stream_edge.dataframe.windows.replay import replay


@pytest.mark.parametrize("text, ms", [("250ms", 250), ("1s", 1000), ("5m", 300_000), ("2h", 7_200_000),
                                      ("1d", 86_400_000), ("1500", 1500), (40, 40)])
def test_durations(text, ms):
    assert parse_duration_ms(text) == ms


@pytest.mark.parametrize("bad", ["", "1.5s", "-1s", "1w", "s"])
def test_bad_duration_is_named(bad):
    with pytest.raises(ValueError, match="grace: not a duration"):
        parse_duration_ms(bad, "grace")


@pytest.mark.parametrize("kwargs, message", [
    (dict(kind="session", duration="1s"), "window kind"),
    (dict(kind="tumbling", duration="0"), "Window size cannot be smaller than 1ms"),
    (dict(kind="hopping", duration="10s"), "0 < step < duration"),
    (dict(kind="hopping", duration="10s", step="10s"), "step size must be smaller than duration"),
    (dict(kind="tumbling", duration="10s", step="5s"), "hopping windows only"),
    (dict(kind="sliding", duration="10s", closing="partition"), "per key only"),
    (dict(kind="tumbling", duration="1s", aggregation="median"), "aggregation"),
    (dict(kind="tumbling", duration="1s", closing="topic"), "closing"),
])
def test_invalid_windows_are_refused(kwargs, message):
    with pytest.raises(ValueError, match=message):
        WindowSpec.parse(**kwargs)


def records_frame(rows):
    columns = list(zip(*rows))
    return pa.table({name: list(values) for name, values in zip(["key", "ts", "value", "__order_0", "__order_1"],
                                                                  columns)})


def test_group_is_replayed_in_offset_order_not_row_order():
    # offsets 0..4 of one key; the late record (offset 3, ts 100) is dropped by the edge because
    # the window [0, 1000) closed when ts 2500 arrived at offset 2.
    ordered = [(b"k", 100, 1.0, 0, 0), (b"k", 900, 3.0, 0, 1), (b"k", 2500, 5.0, 0, 2),
               (b"k", 100, 100.0, 0, 3), (b"k", 3100, 7.0, 0, 4)]
    shuffled = [ordered[i] for i in (4, 2, 0, 3, 1)]
    result = windows_of_group(records_frame(shuffled), WindowSpec.parse("tumbling", "1s"), ["__order_0", "__order_1"])
    assert result.to_pylist() == [
        {"key": b"k", "window_start": 0, "window_end": 1000, "value": 2.0},
        {"key": b"k", "window_start": 2000, "window_end": 3000, "value": 5.0},
    ]


@pytest.mark.parametrize("spec", [
    WindowSpec.parse("tumbling", "1s", grace="200ms", aggregation="sum"),
    WindowSpec.parse("hopping", "1s", step="250ms", aggregation="max"),
    WindowSpec.parse("sliding", "1s", aggregation="count"),
    WindowSpec.parse("tumbling", "1s", aggregation="mean", closing="partition"),
])
def test_group_result_is_the_edge_replay(spec):
    rows = [(f"k{i % 3}", 1_000 + (i * 397) % 5_000, float(i), 0, i) for i in range(60)]
    result = windows_of_group(records_frame(rows), spec, ["__order_0", "__order_1"])
    expected = replay([(k, ts, v) for k, ts, v, _, _ in rows], kind=spec.kind, duration_ms=spec.duration_ms,
                      grace_ms=spec.grace_ms, step_ms=spec.step_ms, aggregation=spec.aggregation,
                      closing_strategy=spec.closing)
    assert len(expected) > 0
    assert result.to_pylist() == [
        {"key": r["key"], "window_start": r["start"], "window_end": r["end"], "value": r["value"]} for r in expected]


def test_group_keeps_the_edges_nan_rule_and_the_declared_types():
    rows = [("k", 1000, math.nan, 0, 0), ("k", 1200, 2.0, 0, 1), ("k", 2500, 4.0, 0, 2), ("k", 2600, math.nan, 0, 3),
            ("k", 4000, 0.0, 0, 4)]
    schema = pa.schema([("key", pa.string()), ("window_start", pa.int64()), ("window_end", pa.int64()),
                        ("value", pa.float64())])
    result = windows_of_group(records_frame(rows), WindowSpec.parse("tumbling", "1s", aggregation="min"),
                              ["__order_0", "__order_1"], schema)
    assert result.schema == schema
    values = result.column("value").to_pylist()
    assert math.isnan(values[0]) and values[1] == 4.0  # a first NaN stays, a later one is ignored
