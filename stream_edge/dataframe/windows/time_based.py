"""FixedTimeWindow: tumbling and hopping windows (``[start, end)``) on a StreamingDataFrame."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable, Optional

from .aggregations import Aggregation
from .base import Window
from .fixed_engine import FixedWindowEngine

if TYPE_CHECKING:  # pragma: no cover
    from stream_edge.dataframe import StreamingDataFrame

__all__ = ("FixedTimeWindow", "TimeWindow")


class FixedTimeWindow(Window):
    """A tumbling (``step_ms=None``) or hopping window with one aggregation."""

    closing_strategies = ("key", "partition")

    def __init__(self, duration_ms: int, grace_ms: int, name: str, dataframe: "StreamingDataFrame",
                 aggregation: Aggregation, step_ms: Optional[int] = None,
                 on_late: Optional[Callable[..., Any]] = None) -> None:
        super().__init__(name, dataframe, FixedWindowEngine(duration_ms, grace_ms, step_ms, aggregation), on_late)


TimeWindow = FixedTimeWindow
