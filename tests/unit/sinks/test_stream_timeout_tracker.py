"""StreamTimeoutTracker: every clause of the ts-datalake-sink contract, with a controllable clock."""

from __future__ import annotations

import logging
import threading
import time

import pytest

from stream_edge.sinks.core.stream_timeout_tracker import (
    StreamTimeoutTracker,
    default_check_interval_ms,
)

LOGGER_NAME = "test.stream_timeout_tracker"


class FakeClock:
    def __init__(self, now: float = 1_000_000.0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now

    def advance(self, ms: float) -> None:
        self.now += ms


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
def fired() -> list:
    return []


def make(clock, fired, timeout_ms=1000, **kw) -> StreamTimeoutTracker:
    return StreamTimeoutTracker(timeout_ms, fired.append, clock=clock,
                                logger=logging.getLogger(LOGGER_NAME), **kw)


# -- enabling ---------------------------------------------------------------------------------

@pytest.mark.parametrize("timeout", [None, 0, -1, -60_000, 1.5, "1000", True])
def test_disabled_unless_positive_int_threshold(timeout, fired):
    tracker = StreamTimeoutTracker(timeout, fired.append)
    assert tracker.enabled is False


@pytest.mark.parametrize("callback", [None, 42, "callback"])
def test_disabled_unless_callable(callback):
    tracker = StreamTimeoutTracker(1000, callback)
    assert tracker.enabled is False


def test_disabled_means_no_dict_no_thread_and_no_effect(clock):
    before = {t.ident for t in threading.enumerate()}
    tracker = StreamTimeoutTracker(None, print, clock=clock)
    assert tracker._entries is None and tracker._lock is None
    tracker.start()
    assert tracker._thread is None and not tracker.running
    assert {t.ident for t in threading.enumerate()} == before
    tracker.touch(b"a")
    clock.advance(10**9)
    assert tracker.check_now() == 0
    assert len(tracker) == 0 and b"a" not in tracker
    tracker.stop()  # harmless


def test_enabled_with_positive_int_and_callable(clock, fired):
    tracker = make(clock, fired)
    assert tracker.enabled is True
    assert tracker.stream_timeout_ms == 1000


# -- firing -----------------------------------------------------------------------------------

def test_fires_once_when_silent_for_at_least_threshold(clock, fired):
    tracker = make(clock, fired, timeout_ms=1000)
    tracker.touch(b"sensor-a")
    clock.advance(999)
    assert tracker.check_now() == 0 and fired == []
    clock.advance(1)  # exactly the threshold: "at least" fires
    assert tracker.check_now() == 1
    assert fired == [b"sensor-a"]
    clock.advance(10_000)
    assert tracker.check_now() == 0  # evicted: no second fire for the same silence
    assert fired == [b"sensor-a"]


def test_only_the_silent_key_fires(clock, fired):
    tracker = make(clock, fired, timeout_ms=1000)
    tracker.touch("sensor-a")
    tracker.touch("sensor-b")
    for _ in range(5):
        clock.advance(300)
        tracker.touch("sensor-b")
        tracker.check_now()
    assert fired == ["sensor-a"]
    assert "sensor-b" in tracker and "sensor-a" not in tracker


def test_touch_resets_the_baseline(clock, fired):
    tracker = make(clock, fired, timeout_ms=1000)
    tracker.touch(1)
    clock.advance(900)
    tracker.touch(1)
    clock.advance(900)
    assert tracker.check_now() == 0
    clock.advance(100)
    assert tracker.check_now() == 1 and fired == [1]


@pytest.mark.parametrize("key", [b"sensor-a", b"\xff\x00raw", "sensor-a", 42, ("tuple", 1)])
def test_key_is_passed_raw(clock, fired, key):
    tracker = make(clock, fired)
    tracker.touch(key)
    clock.advance(1000)
    tracker.check_now()
    assert fired == [key]
    assert type(fired[0]) is type(key)


def test_bytes_and_str_keys_are_distinct_streams(clock, fired):
    tracker = make(clock, fired)
    tracker.touch(b"a")
    tracker.touch("a")
    assert len(tracker) == 2
    clock.advance(1000)
    tracker.check_now()
    assert fired == [b"a", "a"]


def test_none_keys_are_skipped(clock, fired):
    tracker = make(clock, fired)
    tracker.touch(None)
    assert len(tracker) == 0
    clock.advance(5000)
    assert tracker.check_now() == 0 and fired == []


def test_unhashable_key_is_skipped_with_one_warning(clock, fired, caplog):
    tracker = make(clock, fired)
    with caplog.at_level(logging.WARNING, logger=LOGGER_NAME):
        tracker.touch({"id": 1})
        tracker.touch({"id": 2})
    assert len(tracker) == 0
    assert len([r for r in caplog.records if "unhashable" in r.getMessage()]) == 1


def test_fires_in_silence_order(clock, fired):
    tracker = make(clock, fired, timeout_ms=1000)
    for key in ("c", "a", "b"):
        tracker.touch(key)
        clock.advance(10)
    tracker.touch("c")  # c is now the most recent
    clock.advance(1000)
    assert tracker.check_now() == 3
    assert fired == ["a", "b", "c"]


def test_key_fires_again_after_publishing_again(clock, fired):
    tracker = make(clock, fired, timeout_ms=1000)
    tracker.touch(b"k")
    clock.advance(1000)
    tracker.check_now()
    tracker.touch(b"k")  # fresh stream, new baseline
    clock.advance(999)
    assert tracker.check_now() == 0
    clock.advance(1)
    assert tracker.check_now() == 1
    assert fired == [b"k", b"k"]


# -- order: evict, callback, log --------------------------------------------------------------

def test_entry_is_evicted_before_the_callback_and_logged_after(clock, caplog):
    events = []
    logger = logging.getLogger(LOGGER_NAME)

    def callback(key):
        events.append(("callback", key, key in tracker, [r.getMessage() for r in caplog.records]))

    tracker = StreamTimeoutTracker(1000, callback, clock=clock, logger=logger)
    tracker.touch(b"sensor-a")
    clock.advance(1500)
    with caplog.at_level(logging.INFO, logger=LOGGER_NAME):
        tracker.check_now()
    (_, key, still_tracked, logs_before_callback), = events
    assert key == b"sensor-a"
    assert still_tracked is False            # 1. evicted first
    assert logs_before_callback == []        # 3. the INFO line comes after the callback
    assert [r.getMessage() for r in caplog.records] == [
        "Stream 'sensor-a' timed out (silence 1500 ms >= threshold 1000 ms)"
    ]


def test_info_line_exact_text_and_level(clock, fired, caplog):
    tracker = make(clock, fired, timeout_ms=60_000)
    tracker.touch("sensor-a")
    clock.advance(60_012.7)
    with caplog.at_level(logging.INFO, logger=LOGGER_NAME):
        tracker.check_now()
    (record,) = caplog.records
    assert record.levelno == logging.INFO
    assert record.name == LOGGER_NAME
    assert record.getMessage() == "Stream 'sensor-a' timed out (silence 60012 ms >= threshold 60000 ms)"


def test_info_line_for_int_and_undecodable_bytes_keys(clock, fired, caplog):
    tracker = make(clock, fired, timeout_ms=1000)
    tracker.touch(7)
    tracker.touch(b"\xffx")
    clock.advance(1000)
    with caplog.at_level(logging.INFO, logger=LOGGER_NAME):
        tracker.check_now()
    assert [r.getMessage() for r in caplog.records] == [
        "Stream '7' timed out (silence 1000 ms >= threshold 1000 ms)",
        "Stream '\ufffdx' timed out (silence 1000 ms >= threshold 1000 ms)",
    ]
    assert fired == [7, b"\xffx"]


def test_raising_callback_is_logged_swallowed_and_does_not_refire(clock, caplog):
    calls = []

    def callback(key):
        calls.append(key)
        raise RuntimeError("producer unavailable")

    tracker = StreamTimeoutTracker(1000, callback, clock=clock, logger=logging.getLogger(LOGGER_NAME))
    tracker.touch(b"a")
    tracker.touch(b"b")
    clock.advance(1000)
    with caplog.at_level(logging.INFO, logger=LOGGER_NAME):
        assert tracker.check_now() == 2  # no exception escapes; both keys were processed
    assert calls == [b"a", b"b"]
    errors = [r for r in caplog.records if r.levelno == logging.ERROR]
    assert len(errors) == 2 and errors[0].exc_info[0] is RuntimeError
    assert "on_stream_timeout callback failed for stream 'a'" in errors[0].getMessage()
    infos = [r.getMessage() for r in caplog.records if r.levelno == logging.INFO]
    assert infos[0] == "Stream 'a' timed out (silence 1000 ms >= threshold 1000 ms)"
    clock.advance(10_000)
    tracker.check_now()
    assert calls == [b"a", b"b"]  # counted as fired: no second call in the same silence
    tracker.touch(b"a")  # publishes again -> fires again on its next silence
    clock.advance(1000)
    tracker.check_now()
    assert calls == [b"a", b"b", b"a"]


def test_callback_may_touch_the_tracker(clock):
    tracker = None

    def callback(key):
        tracker.touch(("re", key))

    tracker = StreamTimeoutTracker(1000, callback, clock=clock)
    tracker.touch("k")
    clock.advance(1000)
    assert tracker.check_now() == 1
    assert ("re", "k") in tracker


# -- TTL safety sweep -------------------------------------------------------------------------

def test_ttl_sweep_evicts_at_3x_without_firing_and_warns(clock, fired, caplog):
    tracker = make(clock, fired, timeout_ms=1000)
    tracker.touch(b"old-1")
    tracker.touch(b"old-2")
    clock.advance(2000)
    tracker.touch(b"due")
    clock.advance(1000)  # old-*: 3000 ms = 3x threshold; due: 1000 ms
    tracker.touch(b"fresh")
    with caplog.at_level(logging.INFO, logger=LOGGER_NAME):
        assert tracker.check_now() == 1
    assert fired == [b"due"]
    assert len(tracker) == 1 and b"fresh" in tracker
    warnings = [r for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == 1
    message = warnings[0].getMessage()
    assert "TTL sweep evicted 2 stream(s) without firing" in message
    assert "3000 ms" in message and "'old-1'" in message and "'old-2'" in message


def test_just_under_3x_still_fires(clock, fired, caplog):
    tracker = make(clock, fired, timeout_ms=1000)
    tracker.touch("k")
    clock.advance(2999)
    with caplog.at_level(logging.WARNING, logger=LOGGER_NAME):
        tracker.check_now()
    assert fired == ["k"] and caplog.records == []


def test_ttl_warning_names_at_most_ten_keys(clock, fired, caplog):
    tracker = make(clock, fired, timeout_ms=10)
    for i in range(25):
        tracker.touch(i)
    clock.advance(30)
    with caplog.at_level(logging.WARNING, logger=LOGGER_NAME):
        tracker.check_now()
    (warning,) = caplog.records
    assert "evicted 25 stream(s)" in warning.getMessage() and "and 15 more" in warning.getMessage()
    assert fired == [] and len(tracker) == 0


# -- check interval and the background thread -------------------------------------------------

@pytest.mark.parametrize("timeout, expected", [
    (1, 100), (499, 100), (500, 100), (505, 101), (2_000, 400), (5_000, 1000), (60_000, 1000),
    (10**9, 1000),
])
def test_check_interval_formula(timeout, expected, fired):
    assert default_check_interval_ms(timeout) == expected
    assert StreamTimeoutTracker(timeout, fired.append).check_interval_ms == expected


def test_check_interval_override(fired):
    assert StreamTimeoutTracker(60_000, fired.append, check_interval_ms=5).check_interval_ms == 5
    for fallback in (0, -5, 2.5, True, "10"):  # as Quix Streams 3.28.1: anything else is the default
        assert StreamTimeoutTracker(60_000, fired.append, check_interval_ms=fallback).check_interval_ms == 1000


def test_idle_thread_exits_and_the_next_touch_restarts_it():
    done = threading.Event()
    # a timeout of 1 s: the restarted thread's first check may come late on a loaded machine, and
    # a key older than 3 timeouts by then is evicted by the TTL sweep without firing (its contract)
    tracker = StreamTimeoutTracker(1000, lambda key: done.set(), check_interval_ms=5, idle_exit_cycles=2,
                                   thread_name="silence-check")
    tracker.start()
    assert tracker._timer_thread.name == "silence-check"
    for _ in range(3000):
        if tracker._timer_thread is None:
            break
        threading.Event().wait(0.01)
    assert tracker._timer_thread is None  # exited after 2 checks of an empty tracker
    tracker.touch(b"a")
    assert tracker.running
    assert done.wait(10)
    tracker.stop()
    tracker.touch(b"b")
    assert not tracker.running  # stopped: touch() does not restart it


def test_now_ms_and_the_now_ms_hook(fired):
    tracker = StreamTimeoutTracker(1000, fired.append)
    tracker._now_ms = lambda: 5_000
    tracker.touch("a")
    tracker.touch("b", now_ms=5_500)
    assert tracker.check_now(now_ms=5_999) == 0
    assert tracker.check_now(now_ms=6_000) == 1 and fired == ["a"]
    tracker._now_ms = lambda: 6_500
    assert tracker.check_now() == 1 and fired == ["a", "b"]


def test_background_thread_fires_without_any_flush():
    fired = threading.Event()
    keys = []

    def callback(key):
        keys.append(key)
        fired.set()

    # 1 s threshold (TTL 3 s): a loaded machine may delay the thread, never into the TTL sweep.
    tracker = StreamTimeoutTracker(1000, callback, check_interval_ms=10)
    tracker.start()
    try:
        assert tracker.running
        thread = tracker._thread
        assert thread.daemon is True
        tracker.start()  # idempotent: same thread
        assert tracker._thread is thread
        tracker.touch(b"quiet")
        assert fired.wait(20), "background check never fired"
        assert keys == [b"quiet"]
    finally:
        tracker.stop()
    assert not tracker.running
    assert not thread.is_alive()


def test_stop_is_idempotent_and_restartable(fired):
    tracker = StreamTimeoutTracker(1000, fired.append, check_interval_ms=10)
    tracker.stop()
    tracker.start()
    tracker.stop()
    tracker.stop()
    tracker.start()
    assert tracker.running
    tracker.stop()
    assert not tracker.running


def test_background_thread_survives_a_failing_check(caplog):
    calls = []

    def clock():
        calls.append(1)
        if len(calls) == 2:
            raise RuntimeError("clock broke")
        return time.monotonic() * 1000

    tracker = StreamTimeoutTracker(1000, print, check_interval_ms=5, clock=clock, idle_exit_cycles=1000,
                                   logger=logging.getLogger(LOGGER_NAME))
    with caplog.at_level(logging.ERROR, logger=LOGGER_NAME):
        tracker.start()
        deadline = time.monotonic() + 10
        while len(calls) < 4 and time.monotonic() < deadline:
            time.sleep(0.01)
        tracker.stop()
    assert len(calls) >= 4  # kept checking after the failure
    assert any("Stream timeout check failed" in r.getMessage() for r in caplog.records)


# -- cost structure (not timing): the idle check only looks at the head ------------------------

def test_idle_check_reads_only_the_oldest_entry(clock, fired):
    tracker = make(clock, fired, timeout_ms=1000)

    for i in range(10_000):
        tracker.touch(i)
        clock.advance(0.01)
    reads = []
    real_getitem = type(tracker._entries).__getitem__

    class Spy(type(tracker._entries)):
        def __getitem__(self, key):
            reads.append(key)
            return real_getitem(self, key)

    spied = Spy(tracker._entries)
    tracker._entries = spied
    assert tracker.check_now() == 0
    assert reads == [0]


def test_concurrent_touch_and_background_checks_fire_each_key_exactly_once():
    fired = []
    lock = threading.Lock()

    def callback(key):
        with lock:
            fired.append(key)

    clock = FakeClock(0.0)
    tracker = StreamTimeoutTracker(20, callback, check_interval_ms=1, clock=clock)
    tracker.start()  # checks run on the daemon thread while this thread touches
    try:
        for i in range(20_000):
            tracker.touch(i % 500)  # every key is touched every 5 ms of clock time
            if i % 100 == 99:
                clock.advance(1)
    finally:
        tracker.stop()
    assert fired == []  # nobody was silent for 20 ms while publishing
    clock.advance(25)
    assert tracker.check_now() == 500
    assert sorted(fired) == list(range(500)) and len(tracker) == 0


def test_a_revoked_partition_s_keys_are_forgotten_and_never_fire_here():
    fired, now = [], [0.0]
    tracker = StreamTimeoutTracker(stream_timeout_ms=1000, on_stream_timeout=fired.append,
                                   clock=lambda: now[0])
    tracker.touch(b"a", ("t", 0))
    tracker.touch(b"b", ("t", 1))
    tracker.touch(b"c", ("t", 1))
    assert tracker.forget_partition(("t", 1)) == 2 and b"b" not in tracker and len(tracker) == 1
    now[0] = 1500.0
    tracker.check_now()
    assert fired == [b"a"]  # the keys of partition 1 are reported by the partition's new owner
    tracker.touch(b"b", ("t", 0))  # a key can move: its latest partition counts
    assert tracker.forget_partition(("t", 1)) == 0 and b"b" in tracker
