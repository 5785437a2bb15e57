"""Session windows over one key's in-memory state (pure Python), as in Quix Streams 3.28.

A session groups a key's messages that are at most ``inactivity_gap_ms`` apart: its ``start`` is
the first message's timestamp and its ``end`` the last one's + 1. A message within the gap of a
session extends it (on either side); one within the gap of two sessions bridges them into one
(their stored values are merged, so every aggregation must be mergeable). The key's event time
is its largest timestamp; a message older than event time - gap - grace is late (dropped,
``on_late``), and a session closes once no message that is not late could reach it: when its
last message is more than 2 * gap + grace behind the event time.

A key's state is ``[latest, sessions]``: the event time and its open sessions as
``[start, last, stored]`` lists, ordered by start.

Example::

    >>> from stream_edge.dataframe.windows.aggregations import Sum
    >>> engine = SessionWindowEngine(inactivity_gap_ms=10, grace_ms=0, aggregation=Sum())
    >>> ks = engine.new_key_state()
    >>> engine.process_final(ks, 1, 100), engine.process_final(ks, 2, 105), engine.process_final(ks, 3, 130)
    ([], [], [(100, 106, 3)])
    >>> engine.process_final(ks, 4, 145)  # the session [130, 131) stays open: 145 - 130 <= 2 * 10 + 0
    []
"""

from __future__ import annotations

from typing import Any, Callable, List, Optional, Tuple

from .aggregations import MISSING, Aggregation
from .count_engine import PlainKeyState

__all__ = ("SessionWindowEngine",)

WindowResult = Tuple[int, int, Any]
_EMPTY: List[WindowResult] = []


def _ignore_late(timestamp: int, start: int, end: int, late_by_ms: int) -> None:
    return None


class SessionWindowEngine(PlainKeyState):
    """Sessions of one key separated by more than ``inactivity_gap_ms`` of event time."""

    __slots__ = ("gap", "grace_ms", "aggregation", "on_late", "_aggregate", "_result", "_merge")

    def __init__(self, inactivity_gap_ms: int, grace_ms: int, aggregation: Aggregation,
                 on_late: Optional[Callable[[int, int, int, int], None]] = None) -> None:
        if inactivity_gap_ms <= 0:
            raise ValueError(f"inactivity_gap_ms must be positive, got {inactivity_gap_ms}")
        if grace_ms < 0:
            raise ValueError(f"grace_ms must not be negative, got {grace_ms}")
        if not aggregation.merges_stored:
            from stream_edge.dataframe.exceptions import InvalidOperation

            raise InvalidOperation(f"{aggregation.name} cannot be used with session windows: sessions may merge, "
                                   f"so every aggregation needs merge() (Reduce: pass merger=...)")
        self.gap = inactivity_gap_ms
        self.grace_ms = grace_ms
        self.aggregation = aggregation
        self.on_late = on_late or _ignore_late
        self._aggregate = aggregation.aggregate
        self._result = aggregation.emit
        self._merge = aggregation.merge_stored

    def _update(self, ks: list, value: Any, timestamp: int) -> Optional[list]:
        """Add the message to its session; return that session, or None if the message is late."""
        gap = self.gap
        latest = ks[0]
        if timestamp + gap + self.grace_ms < latest:
            self.on_late(timestamp, timestamp, timestamp + 1, latest - timestamp - gap - self.grace_ms)
            return None
        if timestamp > latest:
            ks[0] = timestamp
        sessions = ks[1]
        near = [s for s in sessions if s[0] - gap <= timestamp <= s[1] + gap]
        if not near:
            session = [timestamp, timestamp, self._aggregate(MISSING, value, timestamp)]
            sessions.append(session)
            sessions.sort(key=_start)
            return session
        session = near[0]
        session[0] = min(session[0], timestamp)
        session[1] = max(session[1], timestamp)
        session[2] = self._aggregate(session[2], value, timestamp)
        for other in near[1:]:  # the message bridges sessions: the earliest, with the message, absorbs the rest
            session[1] = max(session[1], other[1])
            session[2] = self._merge(session[2], other[2])
            sessions.remove(other)
        return session

    def _expire(self, ks: list) -> List[WindowResult]:
        """The sessions the key's event time closed (removed from the state), oldest first."""
        # A message is late below event time - gap - grace; the latest message that is not late
        # can still extend a session up to a gap back: a session is final once its last
        # message is more than 2 * gap + grace behind the event time (as in Quix Streams 3.28).
        limit = ks[0] - 2 * self.gap - self.grace_ms
        sessions = ks[1]
        closed = [s for s in sessions if s[1] < limit]
        if not closed:
            return _EMPTY
        ks[1] = [s for s in sessions if s[1] >= limit]
        result = self._result
        return [(s[0], s[1] + 1, result(s[2])) for s in closed]

    def process_final(self, ks: list, value: Any, timestamp: int) -> List[WindowResult]:
        """Add one message; return the sessions that closed, oldest first."""
        if self._update(ks, value, timestamp) is None:
            return _EMPTY
        return self._expire(ks)

    def process_current(self, ks: list, value: Any, timestamp: int) -> List[WindowResult]:
        """Add one message; return its session as updated (closed sessions are dropped)."""
        session = self._update(ks, value, timestamp)
        if session is None:
            return _EMPTY
        updated = [(session[0], session[1] + 1, self._result(session[2]))]
        self._expire(ks)
        return updated


def _start(session: list) -> int:
    return session[0]
