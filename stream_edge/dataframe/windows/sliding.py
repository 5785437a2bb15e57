"""SlidingWindow: sliding windows (``[start, end]``, 1 ms step) on a StreamingDataFrame.

See :mod:`stream_edge.dataframe.windows.sliding_engine` for the algorithm.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable, Optional

from .aggregations import Aggregation
from .base import Window
from .sliding_engine import SlidingWindowEngine

if TYPE_CHECKING:  # pragma: no cover
    from stream_edge.dataframe import StreamingDataFrame

__all__ = ("SlidingWindow",)


class SlidingWindow(Window):
    """A sliding window with one aggregation."""

    def __init__(self, duration_ms: int, grace_ms: int, name: str, dataframe: "StreamingDataFrame",
                 aggregation: Aggregation, on_late: Optional[Callable[..., Any]] = None) -> None:
        super().__init__(name, dataframe, SlidingWindowEngine(duration_ms, grace_ms, aggregation), on_late)
