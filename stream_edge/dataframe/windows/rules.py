"""The window rules, each written once: the edge's engines and the Spark ``windows`` job call them.

Pure Python (no Kafka, no RocksDB, no Spark import): ``lakehouse.windows`` imports this module to
recompute in batch exactly what the edge emits (Quix Streams 3.x semantics, checked against
quixstreams 3.28.1). All times are integer milliseconds.

A rule on times is one function of its operands: called with Python ints (the engines) it returns
an int or a bool; called with an :class:`Sql` operand (a Spark plan) it returns the same rule as
Spark SQL text, so a plan never restates it::

    >>> closed_upto(30, WindowSpec("tumbling", 10, grace_ms=0))
    20
    >>> str(closed_upto(Sql("latest"), WindowSpec("tumbling", 10, grace_ms=5)))
    '(latest - CAST(15 AS BIGINT))'

The rules:

* **durations**: :func:`to_ms` (an int or a ``timedelta``), :func:`parse_duration_ms` (``5m``);
  :func:`validate_time_window` rejects what Quix Streams rejects; :class:`WindowSpec` is a window
  definition (kind, duration, grace, step, aggregation, closing) checked by the same rules.
* **event time**: per closing group (a key, or a partition), the largest timestamp seen so far,
  including the current record, starting at :data:`EVENT_TIME_START` (0): :func:`event_time`.
* **tumbling / hopping** windows are ``[start, start + duration)``; starts are multiples of the
  step (the duration for tumbling) and never negative (:func:`window_ranges`,
  :func:`window_start`, :func:`oldest_start`). A window is closed once ``start <=``
  :func:`closed_upto` of the event time (``latest - grace - duration``, :func:`closing_lag_ms`); a record is late
  for a closed window and dropped from it (a hopping record can be late for some windows only);
  ``final()`` emits a window when its group's event time closes it.
* **sliding** windows are ``[start, end]`` with ``end - start == duration`` (the start clamped at
  0: :func:`sliding_start`); every record at ``t`` ends the result window ``[t - duration, t]``. A
  record is late (dropped) when ``ts <=`` :func:`closed_upto` (``latest - duration - grace -
  1``); a window ending at ``t`` is closed (emitted) once ``t <=`` :func:`sliding_emitted_upto`
  (``latest - grace - 1``); a window ``[t - duration, t]`` holds the accepted records in that
  range (:func:`frame_aggregate_sql`) except near time 0, up to :func:`sliding_plain_floor`
  (``2 * duration + grace``), where the clamp changes it.
* **aggregations**: :data:`NATIVE_AGGREGATIONS` by name with their engine classes
  (:func:`aggregation_of`); the SQL of each over a frame and as partial aggregates that merge;
  the edge's NaN rule for ``min``/``max`` (:func:`nan_aware`).
* **the window state** an increment needs: the records above ``latest -`` :func:`closing_lag_ms`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import timedelta
from typing import Any, List, Optional, Tuple, Union

__all__ = ("AGGREGATIONS", "CLOSING", "EVENT_TIME_START", "NATIVE_AGGREGATIONS", "WINDOW_KINDS", "Sql", "WindowSpec",
           "aggregation_of", "at_least", "at_most", "closed_upto", "closing_lag_ms", "event_time",
           "frame_aggregate_sql", "group_hash_sql", "merge_sql", "nan_aware", "oldest_start", "parse_duration_ms",
           "partial_sql", "sliding_emitted_upto", "sliding_plain_floor", "sliding_start", "to_ms",
           "validate_time_window", "window_ranges", "window_start")

WINDOW_KINDS = ("tumbling", "hopping", "sliding")
CLOSING = ("key", "partition")
#: the aggregations known by name; each has an engine class and a native (SQL) form
NATIVE_AGGREGATIONS = ("sum", "count", "mean", "min", "max")
AGGREGATIONS = NATIVE_AGGREGATIONS
#: a group's event time before its first record
EVENT_TIME_START = 0


class Sql:
    """A Spark SQL expression as text, with the arithmetic and comparisons the rules use: an
    operation on it gives another ``Sql`` (Python's floor ``%`` is ``pmod``)."""

    __slots__ = ("text",)

    def __init__(self, text: str) -> None:
        self.text = text

    def __str__(self) -> str:
        return self.text

    def __format__(self, spec: str) -> str:
        return format(self.text, spec)

    def __repr__(self) -> str:
        return f"Sql({self.text!r})"

    def _op(self, op: str, other: Any, swapped: bool = False) -> "Sql":
        left, right = (_sql(other), self.text) if swapped else (self.text, _sql(other))
        return Sql(f"({left} {op} {right})")

    def __add__(self, other: Any) -> "Sql":
        return self._op("+", other)

    def __radd__(self, other: Any) -> "Sql":
        return self._op("+", other, True)

    def __sub__(self, other: Any) -> "Sql":
        return self._op("-", other)

    def __rsub__(self, other: Any) -> "Sql":
        return self._op("-", other, True)

    def __mul__(self, other: Any) -> "Sql":
        return self._op("*", other)

    def __rmul__(self, other: Any) -> "Sql":
        return self._op("*", other, True)

    def __mod__(self, other: Any) -> "Sql":
        return Sql(f"pmod({self.text}, {_sql(other)})")

    def __le__(self, other: Any) -> "Sql":  # type: ignore[override]
        return self._op("<=", other)

    def __lt__(self, other: Any) -> "Sql":  # type: ignore[override]
        return self._op("<", other)

    def __ge__(self, other: Any) -> "Sql":  # type: ignore[override]
        return self._op(">=", other)

    def __gt__(self, other: Any) -> "Sql":  # type: ignore[override]
        return self._op(">", other)


def _sql(value: Any) -> str:
    """An operand as SQL text: integers as BIGINT literals (times are longs)."""
    if isinstance(value, Sql):
        return value.text
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"a window rule takes ints or Sql, got {value!r}")
    return f"CAST({value} AS BIGINT)"


def at_least(value: Any, floor: Any) -> Any:
    """``max(value, floor)``: Python's ``max``, or SQL's ``greatest``."""
    if isinstance(value, Sql) or isinstance(floor, Sql):
        return Sql(f"greatest({_sql(floor)}, {_sql(value)})")
    return value if value >= floor else floor


def at_most(value: Any, ceiling: Any) -> Any:
    """``min(value, ceiling)``: Python's ``min``, or SQL's ``least``."""
    if isinstance(value, Sql) or isinstance(ceiling, Sql):
        return Sql(f"least({_sql(value)}, {_sql(ceiling)})")
    return value if value <= ceiling else ceiling


# -- durations and definitions ---------------------------------------------------------------------
_DURATION = re.compile(r"^\s*(\d+)\s*(ms|s|m|h|d)?\s*$")
_UNIT_MS = {"ms": 1, "s": 1000, "m": 60_000, "h": 3_600_000, "d": 86_400_000}


def to_ms(value: Union[int, float, timedelta]) -> int:
    """A duration as integer milliseconds; a ``timedelta`` is rounded to the closest millisecond.

    >>> to_ms(timedelta(seconds=1.5)), to_ms(250)
    (1500, 250)
    """
    if isinstance(value, timedelta):
        return round(value / timedelta(milliseconds=1))
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"a window duration must be an int (milliseconds) or a timedelta, got {value!r}")
    return value


def parse_duration_ms(text: Union[str, int], what: str = "duration") -> int:
    """``500ms``, ``1s``, ``5m``, ``1h``, ``1d`` or a plain number of milliseconds -> ms.

    >>> parse_duration_ms("5m")
    300000
    """
    if isinstance(text, int):
        return text
    match = _DURATION.match(text)
    if not match:
        raise ValueError(f"{what}: not a duration: {text!r} (examples: 500ms, 1s, 5m, 1h, 1d)")
    return int(match.group(1)) * _UNIT_MS[match.group(2) or "ms"]


def validate_time_window(duration_ms: int, grace_ms: int, step_ms: Optional[int] = None) -> None:
    """Raise ``ValueError``/``TypeError`` for window parameters Quix Streams rejects."""
    if isinstance(duration_ms, bool) or not isinstance(duration_ms, int):
        raise TypeError("Window size must be an integer")
    if duration_ms < 1:
        raise ValueError("Window size cannot be smaller than 1ms")
    if grace_ms < 0:
        raise ValueError("Window grace cannot be smaller than 0ms")
    if step_ms is not None and (step_ms <= 0 or step_ms >= duration_ms):
        raise ValueError(
            f"Window step size must be smaller than duration and bigger than 0ms, got {step_ms}ms"
        )


def aggregation_of(name: str) -> Any:
    """A new engine aggregation (``stream_edge`` ``Aggregation``) for a name of
    :data:`NATIVE_AGGREGATIONS` (or ``collect``)."""
    from . import aggregations

    classes: dict[str, Any] = {"sum": aggregations.Sum, "count": aggregations.Count, "mean": aggregations.Mean,
               "min": aggregations.Min, "max": aggregations.Max, "collect": aggregations.Collect}
    if name not in classes:
        raise ValueError(f"aggregation must be one of {', '.join(NATIVE_AGGREGATIONS)}, got {name!r}")
    return classes[name]()


@dataclass(frozen=True)
class WindowSpec:
    """A window definition in the edge's vocabulary (``tumbling_window(duration, grace)`` ...),
    checked by :func:`validate_time_window`; hopping windows need a step, the others have none;
    sliding windows close per key only.

    >>> WindowSpec.parse("hopping", "10s", step="5s", aggregation="max").describe()
    'hopping 10000 ms, step 5000 ms, grace 0 ms, max, closing per key'
    """

    kind: str
    duration_ms: int
    grace_ms: int = 0
    step_ms: Optional[int] = None
    aggregation: Any = "mean"  # a name of NATIVE_AGGREGATIONS, or a stream_edge Aggregation object
    closing: str = "key"
    value_type: Optional[str] = None  # Spark type (DDL) of a custom aggregation's result

    def __post_init__(self) -> None:
        if self.kind not in WINDOW_KINDS:
            raise ValueError(f"window kind must be one of {', '.join(WINDOW_KINDS)}, got {self.kind!r}")
        if isinstance(self.aggregation, str):
            if self.aggregation not in NATIVE_AGGREGATIONS:
                raise ValueError(f"aggregation must be one of {', '.join(NATIVE_AGGREGATIONS)}, "
                                 f"got {self.aggregation!r}")
        else:
            from .aggregations import Aggregation

            if not isinstance(self.aggregation, Aggregation) or self.aggregation.collects:
                raise ValueError("a custom aggregation must be a stream_edge Aggregation (not a collector), "
                                 f"got {self.aggregation!r}")
        if self.closing not in CLOSING:
            raise ValueError(f"closing must be 'key' or 'partition', got {self.closing!r}")
        if self.kind == "hopping" and self.step_ms is None:
            raise ValueError("a hopping window needs 0 < step < duration, got no step")
        if self.kind != "hopping" and self.step_ms is not None:
            raise ValueError(f"step applies to hopping windows only, not {self.kind}")
        validate_time_window(self.duration_ms, self.grace_ms, self.step_ms)
        if self.kind == "sliding" and self.closing == "partition":
            raise ValueError("sliding windows close per key only (closing 'key')")

    @classmethod
    def parse(cls, kind: str, duration: Union[str, int], grace: Union[str, int] = 0,
              step: Union[str, int, None] = None, aggregation: Any = "mean", closing: str = "key") -> "WindowSpec":
        """From command-line style text: ``WindowSpec.parse("hopping", "10s", step="5s")``."""
        return cls(kind, parse_duration_ms(duration, "duration"), parse_duration_ms(grace, "grace"),
                   None if step is None else parse_duration_ms(step, "step"), aggregation, closing)

    @property
    def aggregation_name(self) -> str:
        """``mean``, ... or the custom aggregation's name."""
        return self.aggregation if isinstance(self.aggregation, str) else str(self.aggregation.name)

    @property
    def native(self) -> bool:
        """Whether the aggregation has a native (SQL) form."""
        return isinstance(self.aggregation, str)

    @property
    def closing_lag_ms(self) -> int:
        """:func:`closing_lag_ms` of this window."""
        return closing_lag_ms(self.kind, self.duration_ms, self.grace_ms)

    def describe(self) -> str:
        step = f", step {self.step_ms} ms" if self.step_ms else ""
        return (f"{self.kind} {self.duration_ms} ms{step}, grace {self.grace_ms} ms, {self.aggregation_name}, "
                f"closing per {self.closing}")


# -- event time and closing ----------------------------------------------------------------------------
def event_time(latest_timestamp: Any) -> Any:
    """A group's event time given the largest timestamp it has seen (SQL: a running ``max(ts)``;
    NULL before any record): never below :data:`EVENT_TIME_START`."""
    return at_least(latest_timestamp, EVENT_TIME_START)


def closing_lag_ms(kind: str, duration_ms: int, grace_ms: int) -> int:
    """How far behind a group's event time its windows close: a window whose start is at or below
    ``latest - lag`` is closed. Tumbling/hopping ``[start, start + duration)`` closes once ``latest
    >= start + duration + grace``; sliding ``[start, start + duration]`` once ``latest > start +
    duration + grace``. It is also how far back an increment needs a group's records (a record at
    or below ``latest - lag`` is in closed windows only)."""
    return duration_ms + grace_ms + (1 if kind == "sliding" else 0)


def closed_upto(latest: Any, spec: "WindowSpec") -> Any:
    """The largest start of a closed window at event time ``latest``; a record whose window (a
    sliding record: every window of it) starts at or below it is late, dropped from it.

    >>> closed_upto(30, WindowSpec("tumbling", 10))
    20
    >>> str(closed_upto(Sql("latest"), WindowSpec("sliding", 10, 5)))
    '(latest - CAST(16 AS BIGINT))'
    """
    return latest - closing_lag_ms(spec.kind, spec.duration_ms, spec.grace_ms)


# -- tumbling and hopping ----------------------------------------------------------------------------
def window_start(timestamp: Any, step_ms: int) -> Any:
    """The newest window start at or below ``timestamp``: the largest multiple of the step (the
    duration for tumbling windows), Python's floor (negative timestamps too)."""
    return timestamp - timestamp % step_ms


def oldest_start(timestamp: Any, duration_ms: int, step_ms: int) -> Any:
    """The oldest window holding ``timestamp``: the smallest multiple of the step above
    ``timestamp - duration``, and never negative."""
    return at_least(window_start(timestamp - duration_ms, step_ms) + step_ms, 0)


def window_ranges(timestamp_ms: int, duration_ms: int, step_ms: Optional[int] = None) -> List[Tuple[int, int]]:
    """All ``(start, end)`` fixed windows holding ``timestamp_ms``, newest first: from
    :func:`window_start` down to :func:`oldest_start` (the loop tests the same bound, ``start >
    timestamp - duration`` and ``start >= 0``, without calls: the engines call it per record).

    >>> window_ranges(25, 10, 5)
    [(25, 35), (20, 30)]
    """
    step = step_ms or duration_ms
    start = timestamp_ms - timestamp_ms % step
    ranges = []
    while start >= 0 and start > timestamp_ms - duration_ms:
        ranges.append((start, start + duration_ms))
        start -= step
    return ranges


# -- sliding -------------------------------------------------------------------------------------------
def sliding_start(end: Any, duration_ms: int) -> Any:
    """The start of the sliding window ending at ``end``, clamped at 0."""
    return at_least(end - duration_ms, 0)


def sliding_emitted_upto(latest: Any, spec: "WindowSpec") -> Any:
    """The largest end of a closed (emitted) sliding window at event time ``latest``: the window
    ``[end - duration, end]`` starts at or below :func:`closed_upto`."""
    return closed_upto(latest, spec) + spec.duration_ms


def sliding_plain_floor(spec: "WindowSpec") -> int:
    """Sliding windows ending above it hold exactly the accepted records of ``[end - duration,
    end]`` (the closed form); nearer to time 0 the clamped starts make the engine's windows differ."""
    return 2 * spec.duration_ms + spec.grace_ms


# -- aggregations as SQL ---------------------------------------------------------------------------------
def nan_aware(aggregation: Any, floating: bool) -> bool:
    """Whether the edge's NaN rule applies: ``min``/``max`` of floating values (the engines keep a
    window's first value and replace it only when ``new < kept``, so a NaN first stays and a later
    NaN is ignored; Spark orders NaN above every number)."""
    return aggregation in ("min", "max") and floating


def frame_aggregate_sql(aggregation: str, frame: str) -> str:
    """The aggregation of ``value`` over the SQL window ``frame`` (a sliding window's records)."""
    return {"sum": f"sum(value) OVER {frame}", "count": f"count(value) OVER {frame}",
            "mean": f"sum(CAST(value AS DOUBLE)) OVER {frame} / count(value) OVER {frame}",
            "min": f"min(value) OVER {frame}", "max": f"max(value) OVER {frame}"}[aggregation]


def partial_sql(aggregation: str, position: Optional[str] = None) -> List[str]:
    """Partial aggregates of ``value`` that :func:`merge_sql` combines (mean: a sum and a count).
    ``position`` (NaN-aware min/max: the SQL of a record's place in offset order): the extreme of
    the numbers, whether the partial's first record is NaN, and that record's position."""
    if aggregation in ("min", "max"):
        if position is None:
            return [f"{aggregation}(value) AS __{aggregation}"]
        return [f"{aggregation}(CASE WHEN isnan(value) THEN NULL ELSE value END) AS __{aggregation}",
                f"min_by(isnan(value), {position}) AS __nan_first", f"min({position}) AS __position"]
    parts = []
    if aggregation in ("sum", "mean"):
        parts.append("sum(CAST(value AS DOUBLE)) AS __sum" if aggregation == "mean" else "sum(value) AS __sum")
    if aggregation in ("count", "mean"):
        parts.append("count(value) AS __n")
    return parts


#: per aggregation, the window's value: from the partial rows of its records (merged), and from one
_MERGE_SQL = {"sum": ("sum(__sum)", "__sum"), "count": ("sum(__n)", "__n"),
              "mean": ("sum(__sum) / sum(__n)", "__sum / __n"), "min": ("min(__min)", "__min"),
              "max": ("max(__max)", "__max")}
#: NaN-aware min/max: NaN when the window's first record is NaN (the edge keeps it), else the numbers'
_NAN_MERGE_SQL = {name: (f"CASE WHEN min_by(__nan_first, __position) THEN double('NaN') ELSE {name}(__{name}) END",
                         f"CASE WHEN __nan_first THEN double('NaN') ELSE __{name} END") for name in ("min", "max")}


def merge_sql(aggregation: str, nan_rule: bool) -> Tuple[str, str]:
    """The window's value as SQL: from the :func:`partial_sql` rows of its records (merged), and
    from one partial row (a window made of one group of records)."""
    return (_NAN_MERGE_SQL if nan_rule else _MERGE_SQL)[aggregation]


def group_hash_sql(quoted_group_cols: List[str]) -> str:
    """A 64-bit hash of the closing group (its quoted columns), put first in every partitioning
    and sort of the Spark plans: Spark's sort compares an 8-byte prefix of the first column
    first, and keys such as ``sensor-00042`` share theirs."""
    return f"xxhash64({', '.join(quoted_group_cols)})"
