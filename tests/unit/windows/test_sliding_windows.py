"""Sliding windows on hand-made sequences (each expected output also produced by quixstreams 3.28.1)."""

from __future__ import annotations

import orjson

from stream_edge.dataframe.windows.aggregations import Collect, Count, Reduce, Sum

from .conftest import run_engine, sliding


def listing() -> Reduce:
    return Reduce(lambda agg, v: agg + [v], lambda v: [v])


def test_current_emits_the_left_window_of_each_message():
    events = [("a", 10, 1), ("a", 15, 2), ("a", 30, 4), ("a", 12, 8), ("a", 31, 16), ("a", 60, 32)]
    assert run_engine(sliding(10, 0, listing()), events, "current") == [
        [("a", 0, 10, [1])], [("a", 5, 15, [1, 2])], [("a", 20, 30, [4])], [],
        [("a", 21, 31, [4, 16])], [("a", 50, 60, [32])]]


def test_final_emits_windows_once_event_time_passes_end_plus_grace():
    events = [("a", 10, 1), ("a", 15, 2), ("a", 30, 4), ("a", 12, 8), ("a", 31, 16), ("a", 60, 32), ("a", 100, 64)]
    assert run_engine(sliding(10, 0, listing()), events, "final") == [
        [], [("a", 0, 10, [1])], [("a", 5, 15, [1, 2])], [], [("a", 20, 30, [4])], [("a", 21, 31, [4, 16])],
        [("a", 50, 60, [32])]]
    assert run_engine(sliding(10, 5, listing()), events, "final") == [
        [], [], [("a", 0, 10, [1]), ("a", 5, 15, [1, 2])], [], [], [("a", 20, 30, [4]), ("a", 21, 31, [4, 16])],
        [("a", 50, 60, [32])]]


def test_out_of_order_message_updates_every_window_holding_it():
    events = [("a", 10, 1), ("a", 20, 2), ("a", 15, 4), ("a", 12, 8), ("a", 20, 16), ("a", 11, 32), ("a", 100, 64)]
    assert run_engine(sliding(10, 0, listing()), events, "current") == [
        [("a", 0, 10, [1])],
        [("a", 10, 20, [1, 2])],
        [("a", 5, 15, [1, 4]), ("a", 10, 20, [1, 2, 4])],
        [("a", 2, 12, [1, 8]), ("a", 10, 20, [1, 2, 4, 8])],
        [("a", 10, 20, [1, 2, 4, 8, 16])],
        [("a", 1, 11, [1, 32]), ("a", 10, 20, [1, 2, 4, 8, 16, 32])],
        [("a", 90, 100, [64])]]


def test_windows_near_zero_are_clamped_and_collect_orders_by_timestamp():
    events = [("a", 10, 5), ("a", 3, 2), ("a", 7, 4), ("a", 3, 3), ("a", 25, 1), ("a", 30, 7)]
    assert run_engine(sliding(10, 2, Collect()), events, "final") == [
        [], [], [], [], [("a", 0, 3, [2, 3]), ("a", 0, 7, [2, 3, 4]), ("a", 0, 10, [2, 3, 4, 5])],
        [("a", 15, 25, [1])]]


def test_late_message_is_dropped_and_reported():
    late = []
    engine = sliding(10, 0, Sum())
    engine.on_late = lambda ts, start, end, late_by: late.append((ts, start, end, late_by))
    assert run_engine(engine, [("k", 30, 1), ("k", 19, 1), ("k", 20, 1)], "current") == [
        [("k", 20, 30, 1)], [], [("k", 20, 30, 2)]]  # [10, 20] was already closed: never created
    assert late == [(19, 9, 19, 11)]


def test_keys_are_independent_and_state_round_trips():
    engine = sliding(10, 0, Count())
    events = [(key, ts, "v") for ts in (5, 8, 30) for key in (b"x", b"y")]
    out = run_engine(engine, events, "final")
    assert out[4] == [(b"x", 0, 5, 1), (b"x", 0, 8, 2)]
    assert out[5] == [(b"y", 0, 5, 1), (b"y", 0, 8, 2)]
    ks = engine.new_key_state()
    for ts in (5, 8, 12):
        engine.process_current(ks, "v", ts)
    restored = engine.load_key_state(orjson.loads(orjson.dumps(engine.dump_key_state(ks))))
    assert engine.process_current(restored, "v", 14) == engine.process_current(ks, "v", 14) == [(4, 14, 4)]
