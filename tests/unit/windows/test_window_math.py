from datetime import timedelta

import pytest

from stream_edge.dataframe.windows import math as wm
from stream_edge.dataframe.windows.base import get_window_ranges


def test_tumbling_ranges_are_aligned_to_the_duration():
    assert wm.window_ranges(0, 10) == [(0, 10)]
    assert wm.window_ranges(9, 10) == [(0, 10)]
    assert wm.window_ranges(10, 10) == [(10, 20)]
    assert wm.tumbling_start(1_700_000_000_123, 1000) == 1_700_000_000_000


def test_hopping_ranges_newest_first_and_never_negative():
    assert wm.window_ranges(25, 10, 5) == [(25, 35), (20, 30)]
    assert wm.window_ranges(3, 10, 4) == [(0, 10)]
    assert wm.window_ranges(10, 10, 4) == [(8, 18), (4, 14)]
    assert list(get_window_ranges(10, 10, 4)) == [(4, 14), (8, 18)]  # oldest first, as Quix 3.28.1


def test_durations_accept_timedelta_rounded_to_the_millisecond():
    assert wm.to_ms(timedelta(seconds=1)) == 1000
    assert wm.to_ms(timedelta(microseconds=1500)) == 2
    assert wm.to_ms(timedelta(microseconds=1499)) == 1
    assert wm.to_ms(250) == 250
    with pytest.raises(TypeError):
        wm.to_ms(1.5)


@pytest.mark.parametrize("duration,grace,step,error", [
    (0, 0, None, ValueError), (10, -1, None, ValueError), (10, 0, 10, ValueError),
    (10, 0, 0, ValueError), ("10", 0, None, TypeError),
])
def test_invalid_window_parameters_are_rejected(duration, grace, step, error):
    with pytest.raises(error):
        wm.validate_time_window(duration, grace, step)


def test_fixed_window_closes_when_key_event_time_reaches_end_plus_grace():
    # window [0, 10) with 5 ms grace: open at event time 14, closed at 15
    assert not wm.fixed_is_closed(0, latest=14, duration_ms=10, grace_ms=5)
    assert wm.fixed_is_closed(0, latest=15, duration_ms=10, grace_ms=5)
    assert wm.fixed_max_expired_start(15, 10, 5) == 0


def test_sliding_window_closes_after_end_plus_grace_and_late_rule():
    # window [5, 15] with 2 ms grace: closed only when event time passes 17
    assert not wm.sliding_is_closed(5, latest=17, duration_ms=10, grace_ms=2)
    assert wm.sliding_is_closed(5, latest=18, duration_ms=10, grace_ms=2)
    # a message is late when it fits no open window: t < latest - duration - grace
    assert not wm.sliding_is_late(8, latest=20, duration_ms=10, grace_ms=2)
    assert wm.sliding_is_late(7, latest=20, duration_ms=10, grace_ms=2)
