"""Window aggregations: how a window's stored value is built and what it emits.

Pure Python (imported by the Spark recompute). Each aggregation is ``aggregate(stored, value)``
where ``stored`` is :data:`MISSING` for the window's first value, plus ``result(stored)`` for the
emitted ``"value"``. Stored values are JSON-serialisable so they can live in RocksDB and the
changelog (mean keeps ``[sum, count]``; collect keeps ``[[timestamp, value], ...]``).

Example::

    >>> agg = Mean()
    >>> s = agg.aggregate(MISSING, 4, 0); s = agg.aggregate(s, 6, 1); agg.result(s)
    5.0
"""

from __future__ import annotations

from abc import ABC, abstractmethod

from typing import Any, Callable, List

__all__ = ("MISSING", "Aggregation", "Sum", "Count", "Mean", "Min", "Max", "Reduce", "Collect")


class _Missing:
    __slots__ = ()

    def __repr__(self) -> str:
        return "MISSING"


MISSING: Any = _Missing()


class Aggregation(ABC):
    """Base: ``aggregate(stored, value, timestamp) -> stored`` and ``result(stored) -> value``."""

    name = "aggregation"
    #: collect-style aggregations keep every value and are only allowed with ``final()``
    collects = False

    @abstractmethod
    def aggregate(self, stored: Any, value: Any, timestamp: int) -> Any:
        """Fold ``value`` into the ``stored`` aggregate and return the new one."""

    def result(self, stored: Any) -> Any:
        return stored


class Sum(Aggregation):
    """Sum of the values; ``None`` values are skipped (a window of only ``None`` sums to 0)."""

    name = "sum"

    def aggregate(self, stored: Any, value: Any, timestamp: int) -> Any:
        if stored is MISSING:
            stored = 0
        return stored if value is None else stored + value


class Count(Aggregation):
    """Number of non-``None`` values."""

    name = "count"

    def aggregate(self, stored: Any, value: Any, timestamp: int) -> Any:
        if stored is MISSING:
            stored = 0
        return stored if value is None else stored + 1


class Mean(Aggregation):
    """Stored as ``[sum, count]`` (the sum starts at 0.0); emits ``sum / count``, ``None`` if empty."""

    name = "mean"

    def aggregate(self, stored: Any, value: Any, timestamp: int) -> Any:
        if stored is MISSING:
            stored = [0.0, 0]
        if value is None:
            return stored
        return [stored[0] + value, stored[1] + 1]

    def result(self, stored: Any) -> Any:
        if stored is MISSING or not stored[1]:
            return None
        return stored[0] / stored[1]


class Min(Aggregation):
    """Smallest non-``None`` value (``None`` if there is none)."""

    name = "min"

    def aggregate(self, stored: Any, value: Any, timestamp: int) -> Any:
        if stored is MISSING:
            stored = None
        if value is None:
            return stored
        return value if stored is None else min(stored, value)


class Max(Aggregation):
    """Largest non-``None`` value (``None`` if there is none)."""

    name = "max"

    def aggregate(self, stored: Any, value: Any, timestamp: int) -> Any:
        if stored is MISSING:
            stored = None
        if value is None:
            return stored
        return value if stored is None else max(stored, value)


class Reduce(Aggregation):
    """``initializer(value)`` for a window's first value, ``reducer(stored, value)`` after."""

    name = "reduce"

    def __init__(self, reducer: Callable[[Any, Any], Any], initializer: Callable[[Any], Any]) -> None:
        if not callable(reducer) or not callable(initializer):
            raise TypeError("reduce() needs callable reducer and initializer")
        self._reducer = reducer
        self._initializer = initializer

    def aggregate(self, stored: Any, value: Any, timestamp: int) -> Any:
        if stored is MISSING:
            return self._initializer(value)
        return self._reducer(stored, value)


class Collect(Aggregation):
    """Keeps ``[timestamp, value]`` pairs; emits the values ordered by timestamp (ties: arrival)."""

    name = "collect"
    collects = True

    def aggregate(self, stored: Any, value: Any, timestamp: int) -> Any:
        if stored is MISSING:
            return [[timestamp, value]]
        stored.append([timestamp, value])
        return stored

    def result(self, stored: Any) -> List[Any]:
        if stored is MISSING or not stored:
            return []
        return [pair[1] for pair in sorted(stored, key=_pair_timestamp)]


def _pair_timestamp(pair: List[Any]) -> int:
    return pair[0]
