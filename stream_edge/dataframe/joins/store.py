"""Per-key join state: a key's records sorted by timestamp, persisted as one state value.

Both kinds live in a windowed store (``WindowedPartitionTransaction``): each key's state is one
object in memory, serialised once per checkpoint when it changed, with changelog and recovery.

- :class:`AsOfKeyState` (``join_asof``'s right side): one value per timestamp (a newer record with
  the same timestamp replaces it); adding a record drops those older than ``newest - grace``.
- :class:`IntervalKeyState` (``join_interval``'s two sides): duplicates are kept in arrival order;
  adding a record drops records older than ``newest - grace`` that were committed by an earlier
  checkpoint (as Quix Streams 3.28 does: records of the current checkpoint stay until it commits).

Example::

    >>> ks = AsOfKeyState()
    >>> ks.add(100, {"r": 1}, grace_ms=50); ks.add(200, {"r": 2}, grace_ms=50)
    >>> ks.latest(150), ks.latest(250)
    (None, {'r': 2})
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from typing import Any, List, Optional

__all__ = ("AsOfKeyState", "IntervalKeyState", "AsOfCodec", "IntervalCodec")


class AsOfKeyState:
    """Timestamps and values of one key (sorted by timestamp, one value per timestamp)."""

    __slots__ = ("times", "values")

    def __init__(self, times: Optional[List[int]] = None, values: Optional[List[Any]] = None) -> None:
        self.times: List[int] = times if times is not None else []
        self.values: List[Any] = values if values is not None else []

    def add(self, timestamp: int, value: Any, grace_ms: int) -> None:
        """Store ``value`` at ``timestamp``, then expire records older than ``newest - grace_ms``."""
        times = self.times
        i = bisect_left(times, timestamp)
        if i < len(times) and times[i] == timestamp:
            self.values[i] = value
        else:
            times.insert(i, timestamp)
            self.values.insert(i, value)
        cut = bisect_left(times, times[-1] - grace_ms)
        if cut:
            del times[:cut]
            del self.values[:cut]

    def latest(self, timestamp: int) -> Any:
        """The value with the largest timestamp ``<= timestamp`` (``None`` without one)."""
        i = bisect_right(self.times, timestamp)
        return self.values[i - 1] if i else None


class IntervalKeyState:
    """Records of one key sorted by timestamp (duplicates kept); ``fresh`` marks this checkpoint's."""

    __slots__ = ("times", "values", "fresh")

    def __init__(self, times: Optional[List[int]] = None, values: Optional[List[Any]] = None) -> None:
        self.times: List[int] = times if times is not None else []
        self.values: List[Any] = values if values is not None else []
        self.fresh: List[bool] = [False] * len(self.times)

    def add(self, timestamp: int, value: Any, grace_ms: int) -> None:
        """Store the record, then expire committed records older than ``newest - grace_ms``."""
        times = self.times
        i = bisect_right(times, timestamp)
        times.insert(i, timestamp)
        self.values.insert(i, value)
        self.fresh.insert(i, True)
        cut = bisect_left(times, times[-1] - grace_ms)
        if cut and not all(self.fresh[:cut]):
            keep = [j for j in range(cut) if self.fresh[j]]
            self.times[:cut] = [times[j] for j in keep]
            self.values[:cut] = [self.values[j] for j in keep]
            self.fresh[:cut] = [True] * len(keep)

    def between(self, start: int, end: int) -> List[Any]:
        """Values with ``start <= timestamp <= end``, oldest first."""
        times = self.times
        return self.values[bisect_left(times, start):bisect_right(times, end)]

    def committed(self) -> None:
        """Every record now belongs to a committed checkpoint."""
        self.fresh = [False] * len(self.times)


class AsOfCodec:
    """How :class:`AsOfKeyState` is stored (``[times, values]``)."""

    def new_key_state(self) -> AsOfKeyState:
        return AsOfKeyState()

    def dump_key_state(self, ks: AsOfKeyState) -> Any:
        return [ks.times, ks.values]

    def load_key_state(self, data: Any) -> AsOfKeyState:
        return AsOfKeyState(data[0], data[1])


class IntervalCodec:
    """How :class:`IntervalKeyState` is stored; dumping (at a checkpoint) marks records committed."""

    def new_key_state(self) -> IntervalKeyState:
        return IntervalKeyState()

    def dump_key_state(self, ks: IntervalKeyState) -> Any:
        ks.committed()
        return [ks.times, ks.values]

    def load_key_state(self, data: Any) -> IntervalKeyState:
        return IntervalKeyState(data[0], data[1])
