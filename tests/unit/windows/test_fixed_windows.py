"""Tumbling and hopping windows on hand-made sequences.

Every expected output below was also produced by quixstreams 3.28.1 for the same input.
"""

from __future__ import annotations

import logging

import pytest

from stream_edge.dataframe.windows.aggregations import Collect, Count, Max, Mean, Min, Reduce, Sum

from .conftest import hopping, run_engine, tumbling

EVENTS = [("a", 1, 1), ("a", 5, 2), ("b", 12, 3), ("a", 11, 4), ("a", 3, 5), ("a", 25, 1)]


def test_tumbling_sum_final_emits_each_window_once_when_its_key_moves_past_it():
    assert run_engine(tumbling(10, 0, Sum()), EVENTS, "final") == [
        [], [], [], [("a", 0, 10, 3)], [], [("a", 10, 20, 4)]]


def test_tumbling_sum_current_emits_every_update_and_drops_late_messages():
    assert run_engine(tumbling(10, 0, Sum()), EVENTS, "current") == [
        [("a", 0, 10, 1)], [("a", 0, 10, 3)], [("b", 10, 20, 3)], [("a", 10, 20, 4)], [], [("a", 20, 30, 1)]]


def test_event_time_is_per_key_other_keys_do_not_close_windows():
    events = [("a", 1, 1), ("b", 15, 1), ("a", 3, 5), ("a", 4, 5)]
    assert run_engine(tumbling(10, 0, Sum()), events, "final") == [[], [], [], []]
    assert run_engine(tumbling(10, 0, Sum()), events, "current")[3] == [("a", 0, 10, 11)]


def test_grace_boundary_tumbling():
    # [0, 10) with grace 5 closes when the key's event time reaches 15, not 14
    events = [("k", 9, 1), ("k", 14, 1), ("k", 2, 1), ("k", 15, 1), ("k", 8, 1)]
    assert run_engine(tumbling(10, 5, Count()), events, "final") == [
        [], [], [], [("k", 0, 10, 2)], []]
    assert run_engine(tumbling(10, 5, Count()), events, "current") == [
        [("k", 0, 10, 1)], [("k", 10, 20, 1)], [("k", 0, 10, 2)], [("k", 10, 20, 2)], []]


def test_late_message_is_dropped_and_reported():
    late = []
    engine = tumbling(10, 0, Sum())
    engine.on_late = lambda ts, start, end, late_by: late.append((ts, start, end, late_by))
    run_engine(engine, [("k", 10, 1), ("k", 3, 2)], "final")
    assert late == [(3, 0, 10, 7)]


def test_tumbling_mean_is_a_float_and_collect_orders_by_timestamp():
    events = [("a", 10, 5), ("a", 3, 2), ("a", 7, 4), ("a", 3, 3), ("a", 25, 1), ("a", 30, 7)]
    assert run_engine(tumbling(10, 0, Mean()), events, "current") == [
        [("a", 10, 20, 5.0)], [], [], [], [("a", 20, 30, 1.0)], [("a", 30, 40, 7.0)]]
    assert run_engine(tumbling(10, 0, Collect()), events, "final") == [
        [], [], [], [], [("a", 10, 20, [5])], [("a", 20, 30, [1])]]
    ordered = [("a", 8, "x"), ("a", 2, "y"), ("a", 5, "z"), ("a", 2, "w"), ("a", 10, "end")]
    assert run_engine(tumbling(10, 0, Collect()), ordered, "final")[-1] == [("a", 0, 10, ["y", "w", "z", "x"])]


def test_hopping_min_current_updates_every_open_window_oldest_first():
    events = [("a", 10, 5), ("a", 3, 2), ("a", 7, 4), ("a", 3, 3), ("a", 25, 1), ("a", 30, 7)]
    assert run_engine(hopping(10, 4, 0, Min()), events, "current") == [
        [("a", 4, 14, 5), ("a", 8, 18, 5)], [], [("a", 4, 14, 4)], [],
        [("a", 16, 26, 1), ("a", 20, 30, 1), ("a", 24, 34, 1)], [("a", 24, 34, 1), ("a", 28, 38, 7)]]


def test_hopping_reduce_final_with_grace_and_partially_late_message():
    events = [("a", 10, 5), ("a", 3, 2), ("a", 7, 4), ("a", 3, 3), ("a", 25, 1), ("a", 30, 7)]
    engine = hopping(10, 4, 2, Reduce(lambda agg, v: agg + v, lambda v: v * 10))
    assert run_engine(engine, events, "final") == [
        [], [], [], [], [("a", 0, 10, 27), ("a", 4, 14, 54), ("a", 8, 18, 50)], [("a", 16, 26, 10)]]


def test_max_and_timestamps_on_exact_boundaries():
    events = [("k", 0, 3), ("k", 9, 7), ("k", 10, 1), ("k", 20, 0)]
    assert run_engine(tumbling(10, 0, Max()), events, "final") == [
        [], [], [("k", 0, 10, 7)], [("k", 10, 20, 1)]]


def test_many_keys_are_independent():
    keys = [f"key-{i}".encode() for i in range(500)]
    events = [(key, ts, 1) for ts in (1, 2, 11, 12, 25) for key in keys]
    out = run_engine(tumbling(10, 0, Count()), events, "final")
    emitted = [result for batch in out for result in batch]
    assert sorted(emitted) == sorted([(key, 0, 10, 2) for key in keys] + [(key, 10, 20, 2) for key in keys])
    # each key's first window closes on that key's first message at 11, not before
    assert out[2 * len(keys)] == [(keys[0], 0, 10, 2)]


def test_key_state_round_trips_through_its_json_form():
    import orjson

    engine = hopping(10, 5, 0, Mean())
    ks = engine.new_key_state()
    engine.process_current(ks, 4, 7)
    restored = engine.load_key_state(orjson.loads(orjson.dumps(engine.dump_key_state(ks))))
    assert engine.process_final(restored, 6, 16) == engine.process_final(ks, 6, 16) == [(0, 10, 4.0), (5, 15, 4.0)]


@pytest.mark.parametrize("agg,expected", [(Sum(), 6), (Count(), 3), (Mean(), 2.0), (Min(), 1), (Max(), 3)])
def test_each_aggregation(agg, expected):
    events = [("k", 1, 1), ("k", 2, 2), ("k", 3, 3), ("k", 10, 0)]
    assert run_engine(tumbling(10, 0, agg), events, "final")[-1] == [("k", 0, 10, expected)]


def test_none_values_are_skipped_by_the_numeric_aggregations():
    events = [("k", 1, None), ("k", 2, 5), ("k", 3, None)]
    assert run_engine(tumbling(10, 0, Count()), events, "current") == [
        [("k", 0, 10, 0)], [("k", 0, 10, 1)], [("k", 0, 10, 1)]]
    assert run_engine(tumbling(10, 0, Sum()), events, "current")[0] == [("k", 0, 10, 0)]
    assert run_engine(tumbling(10, 0, Mean()), events, "current") == [
        [("k", 0, 10, None)], [("k", 0, 10, 5.0)], [("k", 0, 10, 5.0)]]
    assert run_engine(tumbling(10, 0, Min()), events + [("k", 4, 3)], "current")[-1] == [("k", 0, 10, 3)]
    assert run_engine(tumbling(10, 0, Collect()), events + [("k", 14, 3)], "final")[-1] == [
        ("k", 0, 10, [None, 5, None])]


def test_batch_replay_gives_the_rows_final_emits():
    from stream_edge.dataframe.windows.replay import replay

    rows = replay([(k, ts, v) for k, ts, v in EVENTS] + [(None, 30, 1)], kind="tumbling", duration_ms=10,
                  aggregation="sum")
    assert rows == [{"key": "a", "start": 0, "end": 10, "value": 3}, {"key": "a", "start": 10, "end": 20, "value": 4}]
    hop = replay([("k", 3, 1), ("k", 12, 1)], kind="hopping", duration_ms=10, step_ms=5, aggregation="count")
    assert hop == [{"key": "k", "start": 0, "end": 10, "value": 1}]


def test_batch_replay_partition_closing_strategy():
    from stream_edge.dataframe.windows.replay import replay

    rows = replay([(b"a", 1, 1), (b"b", 2, 2), (b"b", 12, 3), (b"a", 5, 9)], kind="tumbling", duration_ms=10,
                  aggregation="sum", closing_strategy="partition")
    assert rows == [{"key": b"a", "start": 0, "end": 10, "value": 1}, {"key": b"b", "start": 0, "end": 10, "value": 2}]
