"""EarlyExpiringWindowEngine (pure): what before_update/after_update do to windows and event time."""

from stream_edge.dataframe.windows.aggregations import MISSING, Sum
from stream_edge.dataframe.windows.fixed_engine import EarlyExpiringWindowEngine


def test_before_update_expires_the_window_without_the_message():
    engine = EarlyExpiringWindowEngine(10, 0, None, Sum(), before_update=lambda s, v, t: v == 99)
    ks = engine.new_key_state()
    assert engine.process_final(ks, 1, 1) == []
    assert engine.process_final(ks, 99, 2) == [(0, 10, 1)]   # emitted as it was; 99 dropped
    assert engine.process_final(ks, 2, 3) == []              # the window starts anew
    assert engine.process_final(ks, 5, 12) == [(0, 10, 2)]


def test_before_update_on_a_new_window_emits_the_empty_aggregate_and_keeps_event_time():
    seen = []
    engine = EarlyExpiringWindowEngine(10, 0, 5, Sum(), before_update=lambda s, v, t: seen.append(s) or True)
    ks = engine.new_key_state()
    assert engine.process_final(ks, 7, 6) == [(0, 10, 0), (5, 15, 0)]
    assert seen == [MISSING, MISSING] and ks[0] == 0  # no window updated: event time unchanged


def test_after_update_expires_with_the_message_and_current_skips_it():
    engine = EarlyExpiringWindowEngine(10, 0, 5, Sum(), after_update=lambda s, v, t: s >= 10)
    ks = engine.new_key_state()
    assert engine.process_current(ks, 4, 6) == [(0, 10, 4), (5, 15, 4)]
    assert engine.process_current(ks, 6, 7) == []  # both reached 10: expired, not emitted as updates
    assert ks[1] == {}


def test_reopened_window_below_the_last_closed_start_is_never_emitted():
    engine = EarlyExpiringWindowEngine(10, 3, 5, Sum(), before_update=lambda s, v, t: v == 0)
    ks = engine.new_key_state()
    engine.process_final(ks, 1, 206)
    assert engine.process_final(ks, 0, 219) == [(200, 210, 1), (205, 215, 1), (210, 220, 0), (215, 225, 0)]
    assert ks[0] == 206 and ks[2] == 205
    engine.process_final(ks, 16, 210)      # not late: the event time stayed at 206
    assert 205 in ks[1]
    assert engine.process_final(ks, 1, 240) == [(210, 220, 16)]  # 205 dropped unemitted, as in Quix
    assert engine.load_key_state(engine.dump_key_state(ks)) == ks
