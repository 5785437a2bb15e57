"""Tumbling and hopping windows over one key's in-memory window state (pure Python).

A key's state is a two-item list ``[latest, windows]``: the key's event time (largest timestamp
seen, starting at 0 as in Quix Streams) and ``{start: stored}`` for its open windows. The store
layer keeps these lists in memory between checkpoints and persists them; the Spark recompute
drives the same engine over a sorted event list.

Example::

    >>> from stream_edge.dataframe.windows.aggregations import Sum
    >>> engine = FixedWindowEngine(duration_ms=10, grace_ms=0, step_ms=None, aggregation=Sum())
    >>> ks = engine.new_key_state()
    >>> engine.process_current(ks, 5, 3), engine.process_final(ks, 1, 12)
    ([(0, 10, 5)], [(0, 10, 5)])
"""

from __future__ import annotations

from heapq import heappop, heappush
from typing import Any, Callable, List, Optional, Tuple

from .aggregations import MISSING, Aggregation
from .rules import EVENT_TIME_START, closing_lag_ms, validate_time_window, window_ranges, window_start

__all__ = ("FixedWindowEngine", "EarlyExpiringWindowEngine", "WindowResult", "LateCallback", "UpdateCallback",
           "ignore_late")

#: ``(start, end, value)`` of one window
WindowResult = Tuple[int, int, Any]
#: ``on_late(timestamp, start, end, late_by_ms)``
LateCallback = Callable[[int, int, int, int], None]
#: ``callback(stored, value, timestamp) -> bool``: True expires the window at once (early expiration)
UpdateCallback = Callable[[Any, Any, int], bool]

_EMPTY: List[WindowResult] = []


def ignore_late(timestamp: int, start: int, end: int, late_by_ms: int) -> None:
    """The default :data:`LateCallback` of the time-window engines: a late record is dropped silently."""
    return None


class FixedWindowEngine:
    """Tumbling (``step_ms=None``) or hopping windows ``[start, start + duration)``."""

    __slots__ = ("duration_ms", "grace_ms", "step_ms", "aggregation", "on_late", "_aggregate", "_result", "_closed_lag")

    def __init__(self, duration_ms: int, grace_ms: int, step_ms: Optional[int], aggregation: Aggregation,
                 on_late: Optional[LateCallback] = None) -> None:
        validate_time_window(duration_ms, grace_ms, step_ms)
        self.duration_ms = duration_ms
        self.grace_ms = grace_ms
        self.step_ms = step_ms
        self.aggregation = aggregation
        self.on_late = on_late or ignore_late
        self._aggregate = aggregation.aggregate
        self._result = aggregation.emit
        # the rule book's closing lag: a window starting at or below ``latest - lag`` is closed
        self._closed_lag = closing_lag_ms("tumbling" if step_ms is None else "hopping", duration_ms, grace_ms)

    @staticmethod
    def new_key_state() -> list:
        return [EVENT_TIME_START, {}]

    @staticmethod
    def dump_key_state(ks: list) -> list:
        """JSON-ready form of a key state: ``[latest, [[start, stored], ...]]``."""
        return [ks[0], [[start, stored] for start, stored in ks[1].items()]]

    @staticmethod
    def load_key_state(data: list) -> list:
        return [data[0], {start: stored for start, stored in data[1]}]

    def _update(self, ks: list, value: Any, timestamp: int, updated: Optional[list]) -> int:
        """Add the message to its open windows; return the key's max closed window start."""
        duration = self.duration_ms
        latest = ks[0]
        if timestamp > latest:
            latest = ks[0] = timestamp
        max_expired_start = latest - self._closed_lag
        windows = ks[1]
        aggregate = self._aggregate
        step = self.step_ms
        if step is None:
            # tumbling: exactly one window, no list building on the hot path
            start = window_start(timestamp, duration)
            if start <= max_expired_start:
                self.on_late(timestamp, start, start + duration, latest - self.grace_ms - timestamp)
            else:
                stored = windows.get(start, MISSING)
                stored = windows[start] = aggregate(stored, value, timestamp)
                if updated is not None:
                    updated.append((start, start + duration, self._result(stored)))
            return max_expired_start
        for start, end in reversed(window_ranges(timestamp, duration, step)):
            if start <= max_expired_start:
                self.on_late(timestamp, start, end, latest - self.grace_ms - timestamp)
                continue
            stored = windows[start] = aggregate(windows.get(start, MISSING), value, timestamp)
            if updated is not None:
                updated.append((start, end, self._result(stored)))
        return max_expired_start

    def _expire(self, ks: list, max_expired_start: int) -> List[WindowResult]:
        windows = ks[1]
        closed = None
        for start in windows:
            if start <= max_expired_start:
                if closed is None:
                    closed = [start]
                else:
                    closed.append(start)
        if closed is None:
            return _EMPTY
        if len(closed) > 1:
            closed.sort()
        duration = self.duration_ms
        result = self._result
        return [(start, start + duration, result(windows.pop(start))) for start in closed]

    def process_final(self, ks: list, value: Any, timestamp: int) -> List[WindowResult]:
        """Add one message; return the windows of this key it closed, oldest first."""
        if self.step_ms is None:
            # tumbling fast path (the common case): one window, and nothing to close while the
            # key's only window is the one just updated
            duration = self.duration_ms
            latest = ks[0]
            if timestamp > latest:
                latest = ks[0] = timestamp
            max_expired_start = latest - self._closed_lag
            start = window_start(timestamp, duration)
            windows = ks[1]
            if start > max_expired_start:
                windows[start] = self._aggregate(windows.get(start, MISSING), value, timestamp)
                if len(windows) == 1:
                    return _EMPTY
            else:
                self.on_late(timestamp, start, start + duration, latest - self.grace_ms - timestamp)
            return self._expire(ks, max_expired_start)
        return self._expire(ks, self._update(ks, value, timestamp, None))

    def process_current(self, ks: list, value: Any, timestamp: int) -> List[WindowResult]:
        """Add one message; return every window it updated, oldest first (closed ones are dropped)."""
        updated: list = []
        self._expire(ks, self._update(ks, value, timestamp, updated))
        return updated

    # -- "partition" closing strategy -------------------------------------------------------------
    @staticmethod
    def new_partition_state(key_states: Any) -> list:
        """``[latest, heap of (start, key)]`` of a partition, from all its ``(key, ks)`` pairs.

        The partition's event time is the largest of its keys' event times.
        """
        latest, heap = EVENT_TIME_START, []
        for key, ks in key_states:
            latest = max(latest, ks[0])
            for start in ks[1]:
                heap.append((start, key))
        heap.sort()
        return [latest, heap]

    def process_partition(self, pstate: list, key: Any, ks: list, value: Any, timestamp: int, final: bool,
                          key_state: Callable[[Any], list]) -> List[Tuple[Any, int, int, Any]]:
        """Add one message with event time tracked per *partition*: any key's message closes every
        key's windows once ``end + grace`` is reached. Returns ``(key, start, end, value)`` rows:
        the closed windows of all keys (``final``) or this message's updated windows."""
        duration = self.duration_ms
        if timestamp > ks[0]:
            ks[0] = timestamp
        latest = pstate[0]
        if timestamp > latest:
            latest = pstate[0] = timestamp
        max_expired_start = latest - self._closed_lag
        windows = ks[1]
        heap = pstate[1]
        updated: list = []
        for start, end in reversed(window_ranges(timestamp, duration, self.step_ms)):
            if start <= max_expired_start:
                self.on_late(timestamp, start, end, latest - self.grace_ms - timestamp)
                continue
            stored = windows.get(start, MISSING)
            if stored is MISSING:
                heappush(heap, (start, key))
            stored = windows[start] = self._aggregate(stored, value, timestamp)
            if not final:
                updated.append((key, start, end, self._result(stored)))
        closed: list = []
        result = self._result
        while heap and heap[0][0] <= max_expired_start:
            start, owner = heappop(heap)
            stored = key_state(owner)[1].pop(start, MISSING)
            if stored is not MISSING:
                closed.append((owner, start, start + duration, result(stored)))
        return closed if final else updated



class EarlyExpiringWindowEngine(FixedWindowEngine):
    """Tumbling or hopping windows with Quix's early expiration callbacks.

    For each window of a message (oldest first, late ones skipped): ``before_update(stored, value,
    timestamp)`` returning True expires the window as it is, without the message; otherwise the
    message is aggregated and ``after_update(stored, value, timestamp)`` returning True expires
    the window with it. An expired window is deleted (a later message starts it anew). ``final()``
    emits the windows closed by event time, then the early-expired ones; ``current()`` emits the
    updated windows that were not expired. ``stored`` is :data:`MISSING` for a new window.

    Example::

        >>> from stream_edge.dataframe.windows.aggregations import Sum
        >>> engine = EarlyExpiringWindowEngine(10, 0, None, Sum(), after_update=lambda s, v, t: s >= 5)
        >>> ks = engine.new_key_state()
        >>> engine.process_final(ks, 2, 1), engine.process_final(ks, 3, 2), engine.process_final(ks, 1, 3)
        ([], [(0, 10, 5)], [])
    """

    __slots__ = ("before_update", "after_update")

    def __init__(self, duration_ms: int, grace_ms: int, step_ms: Optional[int], aggregation: Aggregation,
                 on_late: Optional[LateCallback] = None, before_update: Optional[UpdateCallback] = None,
                 after_update: Optional[UpdateCallback] = None) -> None:
        super().__init__(duration_ms, grace_ms, step_ms, aggregation, on_late)
        self.before_update = before_update
        self.after_update = after_update

    def _process(self, ks: list, value: Any, timestamp: int, final: bool) -> List[WindowResult]:
        # as in Quix, the key's event time advances only when the message leaves an updated window
        # behind: a message whose windows were all expired early leaves it as it was
        latest = ks[0]
        if timestamp > latest:
            latest = timestamp
        max_expired_start = latest - self._closed_lag
        windows = ks[1]
        before, after, result = self.before_update, self.after_update, self._result
        early: List[WindowResult] = []
        updated: List[WindowResult] = []
        kept = False
        for start, end in reversed(window_ranges(timestamp, self.duration_ms, self.step_ms)):
            if start <= max_expired_start:
                self.on_late(timestamp, start, end, latest - self.grace_ms - timestamp)
                continue
            stored = windows.get(start, MISSING)
            if before is not None and before(stored, value, timestamp):
                windows.pop(start, None)
                early.append((start, end, result(stored)))
                continue
            stored = windows[start] = self._aggregate(stored, value, timestamp)
            if after is not None and after(stored, value, timestamp):
                del windows[start]
                early.append((start, end, result(stored)))
                continue
            kept = True
            if not final:
                updated.append((start, end, result(stored)))
        if kept and latest > ks[0]:
            ks[0] = latest
        closed = self._expire_after_marker(ks, max_expired_start)
        if not final:
            return updated
        return closed + early if early else closed

    @staticmethod
    def new_key_state() -> list:
        """``[latest, windows, last closed start]``: a window reopened at or before the last start
        closed by event time (possible once early expiration holds the event time back) is dropped
        unemitted when it closes, as in Quix."""
        return [EVENT_TIME_START, {}, -1]

    @staticmethod
    def dump_key_state(ks: list) -> list:
        return [ks[0], [[start, stored] for start, stored in ks[1].items()], ks[2]]

    @staticmethod
    def load_key_state(data: list) -> list:
        return [data[0], {start: stored for start, stored in data[1]}, data[2] if len(data) > 2 else -1]

    def _expire_after_marker(self, ks: list, max_expired_start: int) -> List[WindowResult]:
        closed = self._expire(ks, max_expired_start)
        if not closed:
            return closed
        marker = ks[2]
        if closed[0][0] <= marker:
            closed = [row for row in closed if row[0] > marker]
        if closed:
            ks[2] = closed[-1][0]
        return closed

    def process_final(self, ks: list, value: Any, timestamp: int) -> List[WindowResult]:
        """Add one message; return the windows it closed (by event time, then early), oldest first."""
        return self._process(ks, value, timestamp, True)

    def process_current(self, ks: list, value: Any, timestamp: int) -> List[WindowResult]:
        """Add one message; return the windows it updated and did not expire, oldest first."""
        return self._process(ks, value, timestamp, False)

    def process_partition(self, *args: Any, **kwargs: Any) -> Any:
        raise ValueError("before_update/after_update work with the default closing_strategy='key' only")
