"""Window definitions: ``sdf.tumbling_window(...)`` & co. return these; an aggregation method
(``sum``, ``count``, ``mean``, ``min``, ``max``, ``reduce``, ``collect``) returns the window.

Example::

    sdf = app.dataframe(app.topic("readings"))
    sdf = sdf.apply(lambda v: v["temperature"])
    sdf = sdf.tumbling_window(timedelta(seconds=1), grace_ms=500).mean().final()
    # -> {"start": 1700000000000, "end": 1700000001000, "value": 21.4}
"""

from __future__ import annotations

from datetime import timedelta
from typing import TYPE_CHECKING, Any, Callable, Optional, Union

from .aggregations import Aggregation, Collect, Count, Max, Mean, Min, MultiAggregation, Reduce, Sum
from .count import CountWindow, SessionWindow
from .count_engine import CountWindowEngine
from .rules import to_ms, validate_time_window
from .session_engine import SessionWindowEngine
from .sliding import SlidingWindow
from .time_based import FixedTimeWindow

if TYPE_CHECKING:  # pragma: no cover
    from stream_edge.dataframe import StreamingDataFrame

__all__ = ("WindowDefinition", "CountWindowDefinition", "TumblingCountWindowDefinition",
           "HoppingCountWindowDefinition", "SlidingCountWindowDefinition", "SessionWindowDefinition", "FixedTimeWindowDefinition", "TumblingTimeWindowDefinition", "HoppingTimeWindowDefinition",
           "SlidingTimeWindowDefinition", "TumblingWindowDefinition", "HoppingWindowDefinition",
           "SlidingWindowDefinition")

Duration = Union[int, timedelta]


class WindowDefinition:
    """The aggregation methods shared by every window kind; each creates the window itself."""

    def _create_window(self, aggregation: Aggregation) -> Any:  # pragma: no cover - abstract
        raise NotImplementedError

    def sum(self) -> Any:
        """Sum of the values in each window."""
        return self._create_window(Sum())

    def count(self) -> Any:
        """Number of messages in each window."""
        return self._create_window(Count())

    def mean(self) -> Any:
        """Mean of the values in each window (a float)."""
        return self._create_window(Mean())

    def min(self) -> Any:
        """Smallest value in each window."""
        return self._create_window(Min())

    def max(self) -> Any:
        """Largest value in each window."""
        return self._create_window(Max())

    def reduce(self, reducer: Callable[[Any, Any], Any], initializer: Callable[[Any], Any]) -> Any:
        """Custom aggregation: ``initializer(first_value)``, then ``reducer(aggregated, value)``.

        Example::

            sdf.tumbling_window(1000).reduce(
                reducer=lambda agg, v: {"min": min(agg["min"], v), "max": max(agg["max"], v)},
                initializer=lambda v: {"min": v, "max": v},
            ).final()
        """
        return self._create_window(Reduce(reducer, initializer))

    def collect(self) -> Any:
        """Every value of the window, ordered by timestamp (``final()`` only)."""
        return self._create_window(Collect())

    def agg(self, **operations: Aggregation) -> Any:
        """Several aggregations at once, each under its own name in the result.

        Example::

            from stream_edge.dataframe.windows import Count, Mean, Sum

            sdf.tumbling_window(timedelta(minutes=1)).agg(
                total=Sum("amount"), orders=Count(), avg=Mean("amount")).final()
            # -> {"start": ..., "end": ..., "total": 130.5, "orders": 3, "avg": 43.5}
        """
        return self._create_window(MultiAggregation(operations))



class FixedTimeWindowDefinition(WindowDefinition):
    """A window's size and grace; the aggregation method creates the window itself."""

    _kind = "window"

    def __init__(self, duration_ms: Duration, grace_ms: Duration = 0, dataframe: Optional["StreamingDataFrame"] = None,
                 name: Optional[str] = None, step_ms: Optional[Duration] = None,
                 on_late: Optional[Callable[..., Any]] = None) -> None:
        self._on_late = on_late
        self._duration_ms = to_ms(duration_ms)
        self._grace_ms = to_ms(grace_ms)
        self._step_ms = None if step_ms is None else to_ms(step_ms)
        validate_time_window(self._duration_ms, self._grace_ms, self._step_ms)
        self._name = name
        self._dataframe = dataframe

    @property
    def duration_ms(self) -> int:
        return self._duration_ms

    @property
    def grace_ms(self) -> int:
        return self._grace_ms

    @property
    def step_ms(self) -> Optional[int]:
        return self._step_ms

    def _window_name(self, func_name: str) -> str:
        prefix = f"{self._name}_{self._kind}" if self._name else self._kind
        sizes = [self._duration_ms] if self._step_ms is None else [self._duration_ms, self._step_ms]
        return "_".join([prefix, *map(str, sizes), func_name])

    def _create_window(self, aggregation: Aggregation) -> Any:
        return FixedTimeWindow(self._duration_ms, self._grace_ms, self._window_name(aggregation.name),
                               self._dataframe, aggregation, step_ms=self._step_ms, on_late=self._on_late)

class TumblingTimeWindowDefinition(FixedTimeWindowDefinition):
    """Fixed-size, non-overlapping windows ``[start, start + duration)``."""

    _kind = "tumbling_window"

    def __init__(self, duration_ms: Duration, grace_ms: Duration = 0, dataframe: Optional["StreamingDataFrame"] = None,
                 name: Optional[str] = None, step_ms: Optional[Duration] = None,
                 on_late: Optional[Callable[..., Any]] = None) -> None:
        if step_ms is not None:
            raise TypeError("tumbling windows have no step_ms; use hopping_window()")
        super().__init__(duration_ms, grace_ms, dataframe, name, on_late=on_late)


class HoppingTimeWindowDefinition(FixedTimeWindowDefinition):
    """Overlapping windows of ``duration`` starting every ``step``."""

    _kind = "hopping_window"

    def __init__(self, duration_ms: Duration, grace_ms: Duration = 0, dataframe: Optional["StreamingDataFrame"] = None,
                 name: Optional[str] = None, step_ms: Optional[Duration] = None,
                 on_late: Optional[Callable[..., Any]] = None) -> None:
        if step_ms is None:
            raise TypeError("hopping windows need step_ms")
        super().__init__(duration_ms, grace_ms, dataframe, name, step_ms, on_late=on_late)


class SlidingTimeWindowDefinition(FixedTimeWindowDefinition):
    """Sliding windows ``[t - duration, t]`` ending at every message (1 ms step)."""

    _kind = "sliding_window"

    def __init__(self, duration_ms: Duration, grace_ms: Duration = 0, dataframe: Optional["StreamingDataFrame"] = None,
                 name: Optional[str] = None, step_ms: Optional[Duration] = None,
                 on_late: Optional[Callable[..., Any]] = None) -> None:
        if step_ms is not None:
            raise TypeError("sliding windows have no step_ms")
        super().__init__(duration_ms, grace_ms, dataframe, name, on_late=on_late)

    def _create_window(self, aggregation: Aggregation) -> Any:
        return SlidingWindow(self._duration_ms, self._grace_ms, self._window_name(aggregation.name),
                             self._dataframe, aggregation, on_late=self._on_late)


class CountWindowDefinition(WindowDefinition):
    """Windows of ``count`` messages per key, one opening every ``step`` messages."""

    _kind = "count_window"

    def __init__(self, count: int, step: int, dataframe: Optional["StreamingDataFrame"] = None,
                 name: Optional[str] = None) -> None:
        self._count = count
        self._step = step
        self._name = name
        self._dataframe = dataframe
        CountWindowEngine(count, step, Sum())  # validates count and step now, not at the first message

    def _create_window(self, aggregation: Aggregation) -> Any:
        prefix = f"{self._name}_{self._kind}" if self._name else self._kind
        name = "_".join([prefix, str(self._count), str(self._step), aggregation.name])
        return CountWindow(name, self._dataframe, CountWindowEngine(self._count, self._step, aggregation))


class TumblingCountWindowDefinition(CountWindowDefinition):
    """Windows of ``count`` messages, one after the other.

    Example: ``sdf.tumbling_count_window(10).mean().final()`` (the mean of every 10 messages of a key)
    """

    _kind = "tumbling_count_window"

    def __init__(self, count: int, dataframe: Optional["StreamingDataFrame"] = None,
                 name: Optional[str] = None) -> None:
        super().__init__(count, count, dataframe, name)


class HoppingCountWindowDefinition(CountWindowDefinition):
    """Windows of ``count`` messages, a new one every ``step`` messages."""

    _kind = "hopping_count_window"


class SlidingCountWindowDefinition(CountWindowDefinition):
    """Windows of ``count`` messages, a new one at every message (the last ``count`` messages)."""

    _kind = "sliding_count_window"

    def __init__(self, count: int, dataframe: Optional["StreamingDataFrame"] = None,
                 name: Optional[str] = None) -> None:
        super().__init__(count, 1, dataframe, name)


class SessionWindowDefinition(WindowDefinition):
    """Sessions per key: messages at most ``inactivity_gap_ms`` apart (see ``session_engine``)."""

    _kind = "session_window"

    def __init__(self, inactivity_gap_ms: Duration, grace_ms: Duration = 0,
                 dataframe: Optional["StreamingDataFrame"] = None, name: Optional[str] = None,
                 on_late: Optional[Callable[..., Any]] = None) -> None:
        self._on_late = on_late
        self._gap = to_ms(inactivity_gap_ms)
        self._grace_ms = to_ms(grace_ms)
        if self._gap <= 0 or self._grace_ms < 0:
            raise ValueError(f"session windows need a positive inactivity gap and a non-negative grace, "
                             f"got {self._gap} and {self._grace_ms}")
        self._name = name
        self._dataframe = dataframe

    @property
    def inactivity_gap_ms(self) -> int:
        return self._gap

    @property
    def grace_ms(self) -> int:
        return self._grace_ms

    def _create_window(self, aggregation: Aggregation) -> Any:
        prefix = f"{self._name}_{self._kind}" if self._name else self._kind
        name = "_".join([prefix, str(self._gap), aggregation.name])
        return SessionWindow(name, self._dataframe, SessionWindowEngine(self._gap, self._grace_ms, aggregation),
                             on_late=self._on_late)


# names used by the v3 reference's type hints
TumblingWindowDefinition = TumblingTimeWindowDefinition
HoppingWindowDefinition = HoppingTimeWindowDefinition
SlidingWindowDefinition = SlidingTimeWindowDefinition
