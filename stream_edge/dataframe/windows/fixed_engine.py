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

from typing import Any, Callable, List, Optional, Tuple

from .aggregations import MISSING, Aggregation
from .math import validate_time_window, window_ranges

__all__ = ("FixedWindowEngine", "WindowResult", "LateCallback")

#: ``(start, end, value)`` of one window
WindowResult = Tuple[int, int, Any]
#: ``on_late(timestamp, start, end, late_by_ms)``
LateCallback = Callable[[int, int, int, int], None]

_EMPTY: List[WindowResult] = []


def _ignore_late(timestamp: int, start: int, end: int, late_by_ms: int) -> None:
    return None


class FixedWindowEngine:
    """Tumbling (``step_ms=None``) or hopping windows ``[start, start + duration)``."""

    __slots__ = ("duration_ms", "grace_ms", "step_ms", "aggregation", "on_late", "_aggregate", "_result")

    def __init__(self, duration_ms: int, grace_ms: int, step_ms: Optional[int], aggregation: Aggregation,
                 on_late: Optional[LateCallback] = None) -> None:
        validate_time_window(duration_ms, grace_ms, step_ms)
        self.duration_ms = duration_ms
        self.grace_ms = grace_ms
        self.step_ms = step_ms
        self.aggregation = aggregation
        self.on_late = on_late or _ignore_late
        self._aggregate = aggregation.aggregate
        self._result = aggregation.result

    @staticmethod
    def new_key_state() -> list:
        return [0, {}]

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
        max_expired_start = latest - self.grace_ms - duration
        windows = ks[1]
        aggregate = self._aggregate
        step = self.step_ms
        if step is None:
            # tumbling: exactly one window, no list building on the hot path
            start = timestamp - timestamp % duration
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
            max_expired_start = latest - self.grace_ms - duration
            start = timestamp - timestamp % duration
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
