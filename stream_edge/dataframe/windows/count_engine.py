"""Count-based windows over one key's in-memory state (pure Python): windows of ``count``
messages, a new one opening every ``step`` messages (tumbling: ``step == count``; sliding:
``step == 1``), as in Quix Streams 3.28.

A window's ``start``/``end`` are the smallest/largest timestamp of its messages (messages may
arrive out of order; count windows have no lateness). ``final()`` emits a window when it holds
``count`` messages; ``current()`` emits every window a message updated, oldest first. Collectors
return a window's messages in arrival order.

A key's state is ``[seen, windows]``: how many messages the key had, and its open windows as
``[messages, start, end, stored]`` lists, oldest first.

Example::

    >>> from stream_edge.dataframe.windows.aggregations import Sum
    >>> engine = CountWindowEngine(count=2, step=2, aggregation=Sum())
    >>> ks = engine.new_key_state()
    >>> engine.process_final(ks, 1, 10), engine.process_final(ks, 2, 5)
    ([], [(5, 10, 3)])
"""

from __future__ import annotations

from typing import Any, Callable, List, Optional, Tuple

from .aggregations import MISSING, Aggregation

__all__ = ("CountWindowEngine", "PlainKeyState")

WindowResult = Tuple[int, int, Any]
_EMPTY: List[WindowResult] = []


def _ignore_late(timestamp: int, start: int, end: int, late_by_ms: int) -> None:
    return None  # count windows never drop a message as late


class PlainKeyState:
    """A key state that is JSON-ready as it is: ``[counter, windows]`` lists."""

    @staticmethod
    def new_key_state() -> list:
        return [0, []]

    @staticmethod
    def dump_key_state(ks: list) -> list:
        return ks

    @staticmethod
    def load_key_state(data: list) -> list:
        return data


class CountWindowEngine(PlainKeyState):
    """Windows of ``count`` messages per key, one opening every ``step`` messages."""

    __slots__ = ("count", "step", "aggregation", "on_late", "_aggregate", "_result")

    def __init__(self, count: int, step: int, aggregation: Aggregation,
                 on_late: Optional[Callable[[int, int, int, int], None]] = None) -> None:
        if not isinstance(count, int) or count < 2:
            raise ValueError(f"a count window needs at least 2 messages, got count={count!r}")
        if not isinstance(step, int) or not 1 <= step <= count:
            raise ValueError(f"step must be between 1 and count ({count}), got {step!r}")
        self.count = count
        self.step = step
        self.aggregation = aggregation
        self.on_late = on_late or _ignore_late
        self._aggregate = aggregation.aggregate
        emit = aggregation.emit
        self._result = lambda stored: emit(stored, False)  # collectors keep arrival order here

    def _update(self, ks: list, value: Any, timestamp: int) -> Tuple[list, int]:
        """Add the message to its windows (opening one when due); return them and how many are full."""
        windows = ks[1]
        if ks[0] % self.step == 0:
            windows.append([0, timestamp, timestamp, MISSING])
        ks[0] += 1
        aggregate = self._aggregate
        full = 0
        for window in windows:
            window[0] += 1
            if timestamp < window[1]:
                window[1] = timestamp
            if timestamp > window[2]:
                window[2] = timestamp
            window[3] = aggregate(window[3], value, timestamp)
            if window[0] >= self.count:
                full += 1
        return windows, full

    def process_final(self, ks: list, value: Any, timestamp: int) -> List[WindowResult]:
        """Add one message; return the windows it completed (at most one), oldest first."""
        windows, full = self._update(ks, value, timestamp)
        if not full:
            return _EMPTY
        result = self._result
        done = [(w[1], w[2], result(w[3])) for w in windows[:full]]
        del windows[:full]
        return done

    def process_current(self, ks: list, value: Any, timestamp: int) -> List[WindowResult]:
        """Add one message; return every window it updated, oldest first."""
        windows, full = self._update(ks, value, timestamp)
        result = self._result
        updated = [(w[1], w[2], result(w[3])) for w in windows]
        if full:
            del windows[:full]
        return updated
