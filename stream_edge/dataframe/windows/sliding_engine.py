"""Sliding windows over one key's in-memory window state (pure Python).

The algorithm of the v3 reference (``quixstreams.dataframe.windows.sliding``): every message at
``t`` owns a *left* window ``[t - duration, t]`` (start clamped at 0) and a *right* window
``[t + 1, t + 1 + duration]``; a backward scan over the key's windows starting at ``t + 1`` and
ending at ``t - 2 * duration`` creates or updates exactly the windows whose content changes, so
the cost is that of a hopping window with a 1 ms step without its redundancy.

One deliberate difference from quixstreams 3.28.1: windows are deleted only once they can no
longer seed a newer window (start <= max closed start - duration). 3.28.1 also deletes windows
below the one that seeded the current message, which loses messages from later windows when
out-of-order messages arrive within the grace period (a brute-force recomputation disagrees).
For streams ordered per key both produce identical results (checked on random streams).

Only windows that end at one of their own messages (``max_ts == end``) are results: right
windows are bookkeeping that seed the left windows of later messages. A key's state is
``[latest, last_expired_start, windows, order, collected, last_deleted_start]`` where ``windows`` maps
``(start, end) -> [max_ts, stored]`` and ``order`` keeps the keys sorted.

Example::

    >>> from stream_edge.dataframe.windows.aggregations import Sum
    >>> engine = SlidingWindowEngine(duration_ms=10, grace_ms=0, aggregation=Sum())
    >>> ks = engine.new_key_state()
    >>> engine.process_current(ks, 1, 10), engine.process_current(ks, 2, 15)
    ([(0, 10, 1)], [(5, 15, 3)])
    >>> engine.process_final(ks, 4, 30)
    [(5, 15, 3)]
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right, insort
from typing import Any, List, Optional

from .aggregations import MISSING, Aggregation
from .fixed_engine import LateCallback, WindowResult, ignore_late
from .rules import EVENT_TIME_START, closing_lag_ms, sliding_start, validate_time_window

__all__ = ("SlidingWindowEngine",)

_EMPTY: List[WindowResult] = []
_LATEST, _EXPIRED, _WINDOWS, _ORDER, _COLLECTED, _DELETED = range(6)
_INF = float("inf")


class SlidingWindowEngine:
    """Sliding windows ``[start, end]`` (both ends inclusive, ``end - start == duration``)."""

    def __init__(self, duration_ms: int, grace_ms: int, aggregation: Aggregation,
                 on_late: Optional[LateCallback] = None) -> None:
        validate_time_window(duration_ms, grace_ms)
        self.duration_ms = duration_ms
        self.grace_ms = grace_ms
        self.aggregation = aggregation
        self.on_late = on_late or ignore_late
        # the rule book's closing lag: a window starting at or below ``latest - lag`` is closed
        self._closed_lag = closing_lag_ms("sliding", duration_ms, grace_ms)
        self._collects = aggregation.collects
        # collect() keeps the values once per key, not once per window
        self._aggregate = _no_aggregate if self._collects else aggregation.aggregate

    @staticmethod
    def new_key_state() -> list:
        return [EVENT_TIME_START, None, {}, [], [], None]

    @staticmethod
    def dump_key_state(ks: list) -> list:
        """JSON-ready form: ``[latest, last_expired, [[start, end, max_ts, stored]...], collected, last_deleted]``."""
        windows = ks[_WINDOWS]
        return [ks[_LATEST], ks[_EXPIRED], [[s, e] + windows[(s, e)] for s, e in ks[_ORDER]],
                ks[_COLLECTED], ks[_DELETED]]

    @staticmethod
    def load_key_state(data: list) -> list:
        windows = {(s, e): [max_ts, stored] for s, e, max_ts, stored in data[2]}
        return [data[0], data[1], windows, sorted(windows), [list(p) for p in data[3]], data[4]]

    # -- one message -------------------------------------------------------------------------
    def _set(self, ks: list, start: int, end: int, max_ts: int, stored: Any) -> None:
        windows = ks[_WINDOWS]
        key = (start, end)
        if key not in windows:
            insort(ks[_ORDER], key)
        windows[key] = [max_ts, stored]

    def _update(self, ks: list, value: Any, timestamp: int) -> Optional[tuple]:
        """Apply one message; return ``(updated, max_expired_start, max_deleted_start)`` or ``None`` when late."""
        duration = self.duration_ms
        latest = ks[_LATEST]
        if timestamp > latest:
            latest = timestamp
        max_expired_start = latest - self._closed_lag
        max_deleted_start = max_expired_start - duration
        left_start = sliding_start(timestamp, duration)
        left_end = timestamp
        on_late = self.on_late
        if timestamp <= max_expired_start:
            on_late(timestamp, left_start, left_end, max_expired_start + duration + 1 - timestamp)
            return None
        ks[_LATEST] = latest
        aggregate = self._aggregate
        windows = ks[_WINDOWS]
        order = ks[_ORDER]
        right_start = timestamp + 1
        right_end = right_start + duration
        right_exists = False
        starts = {left_start}
        updated = []  # (start, end, stored) of result windows, newest first
        lo = bisect_left(order, (max(0, left_start - duration),))
        hi = bisect_right(order, (right_start, _INF))
        left_done = False
        for index in range(hi - 1, lo - 1, -1):
            start, end = key = order[index]
            max_ts, stored = windows[key]
            starts.add(start)
            if start == right_start:
                right_exists = True
            elif end > left_end:
                # a window reaching past the message: seed the message's right window from the
                # first one that holds a newer message, then add the message to it
                if not right_exists and max_ts > timestamp:
                    self._set(ks, right_start, right_end, max_ts, _copy(stored))
                    right_exists = True
                if start > max_expired_start:
                    if timestamp > max_ts:
                        max_ts = timestamp
                    stored = aggregate(stored, value, timestamp)
                    windows[key] = [max_ts, stored]
                    if end == max_ts:
                        updated.append((start, end, stored))
                else:
                    on_late(timestamp, start, end, max_expired_start + duration + 1 - timestamp)
            elif end == left_end:
                # the message's left window exists already; the previous message's right
                # window starts right after that message
                backfill = max_ts + 1
                if backfill not in starts and max_ts < timestamp:
                    self._set(ks, backfill, backfill + duration, timestamp, aggregate(MISSING, value, timestamp))
                if start > max_expired_start:
                    stored = aggregate(stored, value, timestamp)
                    windows[key] = [timestamp, stored]
                    updated.append((start, end, stored))
                else:
                    on_late(timestamp, start, end, max_expired_start + duration + 1 - timestamp)
                left_done = True
                break
            else:
                # the newest window ending before the message: it seeds the left window
                backfill = max_ts + 1
                if backfill not in starts and backfill + duration >= timestamp:
                    self._set(ks, backfill, backfill + duration, timestamp,
                              None if self._collects else aggregate(MISSING, value, timestamp))
                seed = _copy(stored) if left_start <= max_ts else MISSING
                stored = aggregate(seed, value, timestamp)
                self._set(ks, left_start, left_end, timestamp, stored)
                updated.append((left_start, left_end, stored))
                left_done = True
                break
        if not left_done and left_start > max_expired_start:
            stored = aggregate(MISSING, value, timestamp)
            self._set(ks, left_start, left_end, timestamp, stored)
            updated.append((left_start, left_end, stored))
        if self._collects:
            insort(ks[_COLLECTED], [timestamp, value], key=_pair_timestamp)
        return updated, max_expired_start, max_deleted_start

    def _expire(self, ks: list, max_expired_start: int, max_deleted_start: int) -> List[WindowResult]:
        """Result windows newly closed (start in ``(last_expired, max_expired_start]``), oldest first."""
        order = ks[_ORDER]
        windows = ks[_WINDOWS]
        last_expired = ks[_EXPIRED]
        lo = 0 if last_expired is None else bisect_right(order, (last_expired, _INF))
        hi = bisect_right(order, (max_expired_start, _INF))
        results = _EMPTY
        if hi > lo:
            results = []
            for index in range(lo, hi):
                start, end = key = order[index]
                max_ts, stored = windows[key]
                if max_ts == end:
                    results.append((start, end, self._value(ks, start, end, stored)))
            # the expiration index: windows starting at or before it are never emitted again
            ks[_EXPIRED] = order[hi - 1][0]
        # drop windows that can no longer seed a newer one; the deletion index mirrors the
        # expiration index (a window created later below it is kept, as in Quix Streams)
        last_deleted = ks[_DELETED]
        lo = 0 if last_deleted is None else bisect_right(order, (last_deleted, _INF))
        hi = bisect_right(order, (max_deleted_start, _INF))
        if hi > lo:
            for key in order[lo:hi]:
                del windows[key]
            newest_deleted = order[hi - 1][0]
            del order[lo:hi]
            if newest_deleted:
                ks[_DELETED] = newest_deleted
        if self._collects:
            collected = ks[_COLLECTED]
            keep = bisect_left(collected, max_deleted_start, key=_pair_timestamp)
            if keep:
                del collected[:keep]
        return results

    def _value(self, ks: list, start: int, end: int, stored: Any) -> Any:
        if not self._collects:
            return self.aggregation.emit(stored)
        collected = ks[_COLLECTED]
        lo = bisect_left(collected, start, key=_pair_timestamp)
        hi = bisect_right(collected, end, key=_pair_timestamp)
        return [pair[1] for pair in collected[lo:hi]]

    def process_final(self, ks: list, value: Any, timestamp: int) -> List[WindowResult]:
        """Add one message; return the sliding windows of this key it closed, oldest first."""
        step = self._update(ks, value, timestamp)
        if step is None:
            return _EMPTY
        return self._expire(ks, step[1], step[2])

    def process_current(self, ks: list, value: Any, timestamp: int) -> List[WindowResult]:
        """Add one message; return the result windows it created or updated, oldest first."""
        step = self._update(ks, value, timestamp)
        if step is None:
            return _EMPTY
        updated, max_expired_start, max_deleted_start = step
        self._expire(ks, max_expired_start, max_deleted_start)
        result = self.aggregation.emit
        return [(start, end, result(stored)) for start, end, stored in reversed(updated)]


def _no_aggregate(stored: Any, value: Any, timestamp: int) -> None:
    return None


def _pair_timestamp(pair: list) -> int:
    return pair[0]


def _copy(stored: Any) -> Any:
    # stored values are JSON-like; lists (mean, collect, reducers) must not be shared by windows
    if type(stored) is list:
        return [_copy(item) for item in stored]
    if type(stored) is dict:
        return {k: _copy(v) for k, v in stored.items()}
    return stored
