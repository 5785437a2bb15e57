"""Window aggregations: Quix Streams 3.28's aggregators and collectors, and the engines' protocol.

Public API (the module path Quix documents, ``quixstreams.dataframe.windows.aggregations``):

- aggregators reduce each message as it arrives: ``Sum``, ``Count``, ``Mean``, ``Min``, ``Max``,
  ``First``, ``Last`` (processing order), ``Earliest``, ``Latest`` (by timestamp), ``Reduce``;
  each takes an optional ``column`` (``None``: the whole message) and skips ``None`` values;
- collectors keep every message and build the result when the window closes: ``Collect``;
- custom ones subclass :class:`Aggregator` (``initialize``, ``agg``, ``result``) or
  :class:`Collector` (``result(items)``).

``sdf.tumbling_window(1000).agg(total=Sum("amount"), n=Count())`` uses them by name; the
shortcuts ``.sum()``, ``.count()``, ... use one each and emit it as ``"value"``.

The engines (``fixed_engine``, ``sliding_engine``; pure Python, also run by the Spark recompute)
see one protocol, :class:`Aggregation`: ``aggregate(stored, value, timestamp)`` where ``stored`` is
:data:`MISSING` for a window's first message, and ``emit(stored)`` for the window's result.
Stored values are JSON-serialisable so they can live in RocksDB and the changelog.

Example::

    >>> agg = Mean()
    >>> s = agg.aggregate(MISSING, 4, 0); s = agg.aggregate(s, 6, 1); agg.emit(s)
    5.0
    >>> Sum("amount").agg(0, {"amount": 3}, 0)
    3
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Any, Callable, Dict, Iterable, List, Mapping, Optional, Tuple

__all__ = ("MISSING", "Aggregation", "BaseAggregator", "BaseCollector", "Aggregator", "Collector", "Sum",
           "Count", "Mean", "Min", "Max", "First", "Last", "Earliest", "Latest", "Reduce", "Collect",
           "MultiAggregation")


class _Missing:
    __slots__ = ()

    def __repr__(self) -> str:
        return "MISSING"


MISSING: Any = _Missing()


class Aggregation(ABC):
    """What the window engines call: ``aggregate(stored, value, timestamp) -> stored`` and
    ``emit(stored) -> result``."""

    #: used in the window's store name (``tumbling_window_1000_sum``)
    name = "aggregation"
    #: collect-style: keeps every value; only allowed with ``final()``
    collects = False

    @abstractmethod
    def aggregate(self, stored: Any, value: Any, timestamp: int) -> Any:
        """Fold ``value`` into ``stored`` (:data:`MISSING` for the window's first message)."""

    @abstractmethod
    def emit(self, stored: Any, by_timestamp: bool = True) -> Any:
        """The window's result from its stored value (collectors order their items by timestamp,
        or by arrival when ``by_timestamp`` is False: count-based windows)."""

    #: whether two windows' stored values can be combined (session windows need it)
    merges_stored = False

    def merge_stored(self, a: Any, b: Any) -> Any:
        """The stored value of the window made of windows ``a`` (earlier) and ``b`` (later)."""
        raise NotImplementedError(f"{self.name} cannot combine two windows")


def _extract(value: Any, column: Optional[str]) -> Any:
    return value if column is None else value.get(column)


class BaseAggregator(Aggregation):
    """Base of the aggregators: reduce each message into the window's state.

    Subclass :class:`Aggregator` rather than this class; implement ``initialize()`` (the starting
    state), ``agg(old, new, timestamp)`` (``new`` is the whole message) and ``result(value)``.
    """

    @abstractmethod
    def initialize(self) -> Any:
        """The aggregation's starting state."""

    @abstractmethod
    def agg(self, old: Any, new: Any, timestamp: int) -> Any:
        """The state after the message ``new`` (at ``timestamp``)."""

    @abstractmethod
    def result(self, value: Any) -> Any:
        """The window's result from the state."""

    @property
    @abstractmethod
    def state_suffix(self) -> str:
        """Identifies the aggregation's state (class name and column)."""

    def merge(self, a: Any, b: Any) -> Any:
        """Combine two states (session windows merging); not supported unless overridden."""
        raise NotImplementedError(f"{type(self).__name__} cannot merge two window states")

    @property
    def mergeable(self) -> bool:
        return type(self).merge is not BaseAggregator.merge

    # -- the engines' protocol ----------------------------------------------------------------
    @property
    def name(self) -> str:  # type: ignore[override]
        return type(self).__name__.lower()

    def aggregate(self, stored: Any, value: Any, timestamp: int) -> Any:
        return self.agg(self.initialize() if stored is MISSING else stored, value, timestamp)

    def emit(self, stored: Any, by_timestamp: bool = True) -> Any:
        return self.result(self.initialize() if stored is MISSING else stored)

    @property
    def merges_stored(self) -> bool:  # type: ignore[override]
        return self.mergeable

    def merge_stored(self, a: Any, b: Any) -> Any:
        return self.merge(a, b)


class Aggregator(BaseAggregator):
    """An aggregator over ``column`` of each message (``None``: the whole message).

    Example (a custom aggregator counting messages)::

        class Messages(Aggregator):
            def initialize(self): return 0
            def agg(self, old, new, timestamp): return old + 1
            def result(self, value): return value

        sdf.tumbling_window(1000).agg(messages=Messages()).final()
    """

    def __init__(self, column: Optional[str] = None) -> None:
        self.column = column

    @property
    def state_suffix(self) -> str:
        return type(self).__name__ if self.column is None else f"{type(self).__name__}/{self.column}"


class BaseCollector(Aggregation):
    """Base of the collectors: keep every message of the window; ``result(items)`` at the end."""

    collects = True

    @property
    @abstractmethod
    def column(self) -> Optional[str]:
        """The column to collect (``None``: the whole message)."""

    @abstractmethod
    def result(self, items: Iterable[Any]) -> Any:
        """The window's result from its items, ordered by timestamp."""

    # -- the engines' protocol: stored is [[timestamp, item], ...] ---------------------------
    @property
    def name(self) -> str:  # type: ignore[override]
        return type(self).__name__.lower()

    def aggregate(self, stored: Any, value: Any, timestamp: int) -> Any:
        column = self.column  # as in Quix Streams: a message without the column is an error (KeyError)
        pair = [timestamp, value if column is None else value[column]]
        if stored is MISSING:
            return [pair]
        stored.append(pair)
        return stored

    def emit(self, stored: Any, by_timestamp: bool = True) -> Any:
        pairs = [] if stored is MISSING else sorted(stored, key=_pair_timestamp) if by_timestamp else stored
        return self.result([pair[1] for pair in pairs])

    merges_stored = True

    def merge_stored(self, a: Any, b: Any) -> Any:
        return a + b


class Collector(BaseCollector):
    """A collector of ``column`` of each message (``None``: the whole message)."""

    def __init__(self, column: Optional[str] = None) -> None:
        self._column = column

    @property
    def column(self) -> Optional[str]:
        return self._column


def _pair_timestamp(pair: List[Any]) -> int:
    return pair[0]


class Sum(Aggregator):
    """Sum of the values (``None`` skipped; an empty window sums to 0)."""

    def initialize(self) -> Any:
        return 0

    def agg(self, old: Any, new: Any, timestamp: int) -> Any:
        value = _extract(new, self.column)
        return old if value is None else old + value

    def result(self, value: Any) -> Any:
        return value

    def merge(self, a: Any, b: Any) -> Any:
        return a + b


class Count(Aggregator):
    """Number of messages (with a ``column``: of messages where it is not ``None``)."""

    def initialize(self) -> Any:
        return 0

    def agg(self, old: Any, new: Any, timestamp: int) -> Any:
        return old if _extract(new, self.column) is None else old + 1

    def result(self, value: Any) -> Any:
        return value

    def merge(self, a: Any, b: Any) -> Any:
        return a + b


class Mean(Aggregator):
    """Mean of the values; the state is ``(sum, count)``; ``None`` for an empty window."""

    def initialize(self) -> Any:
        return (0.0, 0)

    def agg(self, old: Any, new: Any, timestamp: int) -> Any:
        value = _extract(new, self.column)
        if value is None:
            return old
        return (old[0] + value, old[1] + 1)

    def result(self, value: Any) -> Any:
        return value[0] / value[1] if value[1] else None

    def merge(self, a: Any, b: Any) -> Any:
        return (a[0] + b[0], a[1] + b[1])


class _KeepOne(Aggregator):
    """Keeps one value (``None`` values skipped): a new one replaces the kept one when
    :meth:`_replaces` says so. A merge keeps the better of the two sessions' values."""

    def initialize(self) -> Any:
        return None

    def _entry(self, value: Any, timestamp: int) -> Any:
        return value

    def _replaces(self, new: Any, kept: Any) -> bool:  # pragma: no cover - every subclass decides
        raise NotImplementedError

    def agg(self, old: Any, new: Any, timestamp: int) -> Any:
        value = _extract(new, self.column)
        if value is None:
            return old
        entry = self._entry(value, timestamp)
        return entry if old is None or self._replaces(entry, old) else old

    def result(self, value: Any) -> Any:
        return value

    def merge(self, a: Any, b: Any) -> Any:
        return b if a is None or (b is not None and self._replaces(b, a)) else a


class Min(_KeepOne):
    """Smallest value (``None`` if there is none)."""

    def _replaces(self, new: Any, kept: Any) -> bool:
        return new < kept


class Max(_KeepOne):
    """Largest value (``None`` if there is none)."""

    def _replaces(self, new: Any, kept: Any) -> bool:
        return new > kept


class First(_KeepOne):
    """The first value in processing order (after a session merge: the earlier session's)."""

    def _replaces(self, new: Any, kept: Any) -> bool:
        return False


class Last(_KeepOne):
    """The last value in processing order (after a session merge: the later session's)."""

    def _replaces(self, new: Any, kept: Any) -> bool:
        return True


class _KeepByTimestamp(_KeepOne):
    """Keeps ``(value, timestamp)``; the result is the value."""

    def _entry(self, value: Any, timestamp: int) -> Any:
        return (value, timestamp)

    def result(self, value: Any) -> Any:
        return None if value is None else value[0]


class Earliest(_KeepByTimestamp):
    """The value with the smallest timestamp (the first one on a tie); state ``(value, ts)``."""

    def _replaces(self, new: Any, kept: Any) -> bool:
        return new[1] < kept[1]


class Latest(_KeepByTimestamp):
    """The value with the largest timestamp (the last one on a tie); state ``(value, ts)``."""

    def _replaces(self, new: Any, kept: Any) -> bool:
        return new[1] >= kept[1]


class Reduce(Aggregator):
    """``initializer(first message)``, then ``reducer(state, message)`` for each next one.

    Example::

        sdf.tumbling_window(1000).reduce(
            reducer=lambda agg, v: {"min": min(agg["min"], v), "max": max(agg["max"], v)},
            initializer=lambda v: {"min": v, "max": v},
        ).final()
    """

    def __init__(self, reducer: Callable[[Any, Any], Any], initializer: Callable[[Any], Any],
                 merger: Optional[Callable[[Any, Any], Any]] = None) -> None:
        if not callable(reducer) or not callable(initializer):
            raise TypeError("reduce() needs callable reducer and initializer")
        super().__init__()
        self._reducer, self._initializer, self._merger = reducer, initializer, merger

    def initialize(self) -> Any:
        return None

    def agg(self, old: Any, new: Any, timestamp: int) -> Any:
        return self._initializer(new) if old is None else self._reducer(old, new)

    def result(self, value: Any) -> Any:
        return value

    def merge(self, a: Any, b: Any) -> Any:
        if self._merger is None:
            raise NotImplementedError("Reduce needs merger= to combine two window states")
        return self._merger(a, b)

    @property
    def mergeable(self) -> bool:
        return self._merger is not None


class Collect(Collector):
    """Every value of the window (``column`` of each message), ordered by timestamp; ``final()`` only."""

    def result(self, items: Iterable[Any]) -> Any:
        return list(items)


class MultiAggregation(Aggregation):
    """``.agg(name=Aggregator(), ...)``: several aggregators and collectors over one window.

    The stored value is one state per operation (collectors keep ``[[timestamp, item], ...]``);
    the result is ``{name: result, ...}`` in the order the operations were given.
    """

    name = "agg"

    def __init__(self, operations: Mapping[str, Aggregation]) -> None:
        if not operations:
            raise ValueError("agg() needs at least one aggregation, e.g. agg(total=Sum('amount'))")
        for label, op in operations.items():
            if not isinstance(op, (BaseAggregator, BaseCollector)):
                raise TypeError(f"agg({label}=...) must be an Aggregator or a Collector, got {type(op).__name__}")
        self.operations: Tuple[Tuple[str, Aggregation], ...] = tuple(operations.items())
        self.has_collectors = any(isinstance(op, BaseCollector) for _, op in self.operations)

    def aggregate(self, stored: Any, value: Any, timestamp: int) -> Any:
        ops = self.operations
        if stored is MISSING:
            stored = [MISSING] * len(ops)
        return [op.aggregate(state, value, timestamp) for (_, op), state in zip(ops, stored)]

    def emit(self, stored: Any, by_timestamp: bool = True) -> Dict[str, Any]:
        ops = self.operations
        if stored is MISSING:
            stored = [MISSING] * len(ops)
        return {label: op.emit(state, by_timestamp) for (label, op), state in zip(ops, stored)}

    @property
    def merges_stored(self) -> bool:  # type: ignore[override]
        return all(op.merges_stored for _, op in self.operations)

    def merge_stored(self, a: Any, b: Any) -> Any:
        return [op.merge_stored(x, y) for (_, op), x, y in zip(self.operations, a, b)]
