"""The window rule book (``stream_edge.dataframe.windows.rules``): each rule gives the same answer
as a Python value and, evaluated by Spark SQL's arithmetic, as the SQL text it yields."""

from datetime import timedelta

import pytest

from stream_edge.dataframe.windows import rules
from stream_edge.dataframe.windows.base import get_window_ranges
from stream_edge.dataframe.windows.rules import Sql, WindowSpec


def test_tumbling_ranges_are_aligned_to_the_duration():
    assert rules.window_ranges(0, 10) == [(0, 10)]
    assert rules.window_ranges(9, 10) == [(0, 10)]
    assert rules.window_ranges(10, 10) == [(10, 20)]
    assert rules.window_start(1_700_000_000_123, 1000) == 1_700_000_000_000
    assert rules.window_start(-3, 10) == -10  # Python's floor, as the edge computes it


def test_hopping_ranges_newest_first_never_negative_and_bounded_by_the_oldest_start():
    assert rules.window_ranges(25, 10, 5) == [(25, 35), (20, 30)]
    assert rules.window_ranges(3, 10, 4) == [(0, 10)]
    assert rules.window_ranges(10, 10, 4) == [(8, 18), (4, 14)]
    assert list(get_window_ranges(10, 10, 4)) == [(4, 14), (8, 18)]  # oldest first, as Quix 3.28.1
    for ts in range(0, 120):
        ranges = rules.window_ranges(ts, 30, 7)
        assert ranges[0][0] == rules.window_start(ts, 7) and ranges[-1][0] == rules.oldest_start(ts, 30, 7)


def test_durations_accept_timedelta_rounded_to_the_millisecond_and_text():
    assert rules.to_ms(timedelta(seconds=1)) == 1000
    assert rules.to_ms(timedelta(microseconds=1500)) == 2
    assert rules.to_ms(timedelta(microseconds=1499)) == 1
    assert rules.to_ms(250) == 250
    with pytest.raises(TypeError):
        rules.to_ms(1.5)
    assert rules.parse_duration_ms("1h") == 3_600_000 and rules.parse_duration_ms(" 250 ") == 250
    with pytest.raises(ValueError, match="grace: not a duration: '1 week'"):
        rules.parse_duration_ms("1 week", "grace")


@pytest.mark.parametrize("duration,grace,step,error", [
    (0, 0, None, ValueError), (10, -1, None, ValueError), (10, 0, 10, ValueError),
    (10, 0, 0, ValueError), ("10", 0, None, TypeError),
])
def test_invalid_window_parameters_are_rejected_by_the_edge_and_the_spec(duration, grace, step, error):
    with pytest.raises(error):
        rules.validate_time_window(duration, grace, step)
    with pytest.raises(error):
        WindowSpec("hopping" if step is not None else "tumbling", duration, grace, step)


def test_fixed_window_closes_when_the_event_time_reaches_end_plus_grace():
    # window [0, 10) with 5 ms grace: open at event time 14, closed at 15
    spec = WindowSpec("tumbling", 10, 5)
    assert rules.closed_upto(14, spec) < 0 <= rules.closed_upto(15, spec)


def test_sliding_window_closes_after_end_plus_grace_and_the_late_rule():
    spec = WindowSpec("sliding", 10, 2)
    # window [5, 15] with 2 ms grace: closed only when event time passes 17
    assert rules.closed_upto(17, spec) < 5 <= rules.closed_upto(18, spec)
    assert rules.sliding_emitted_upto(18, spec) == 15
    # a message is late when it fits no open window: t <= latest - duration - grace - 1
    assert 8 > rules.closed_upto(20, spec) >= 7


@pytest.mark.spark
def test_rules_as_sql_are_the_rules_as_python(spark):
    """Every rule on times, as SQL evaluated by Spark, equals its Python value (negative times too)."""
    spec_fixed, spec_sliding = WindowSpec("hopping", 30, 4, 7), WindowSpec("sliding", 10, 3)
    cases = {
        "start": lambda t: rules.window_start(t, 7),
        "oldest": lambda t: rules.oldest_start(t, 30, 7),
        "event": lambda t: rules.event_time(t),
        "closed": lambda t: rules.closed_upto(t, spec_fixed),
        "sliding_closed": lambda t: rules.closed_upto(t, spec_sliding),
        "emitted": lambda t: rules.sliding_emitted_upto(t, spec_sliding),
        "sliding_start": lambda t: rules.sliding_start(t, 10),
        "at_most": lambda t: rules.at_most(t, 5),
        "late": lambda t: t <= rules.closed_upto(t + 14, spec_sliding),
    }
    times = list(range(-40, 60, 3))
    frame = spark.createDataFrame([(t,) for t in times], "t bigint")
    got = frame.selectExpr("t", *[f"{rule(Sql('t'))} AS {name}" for name, rule in cases.items()]).collect()
    assert [tuple(r) for r in sorted(got)] == [(t, *(rule(t) for rule in cases.values())) for t in times]
