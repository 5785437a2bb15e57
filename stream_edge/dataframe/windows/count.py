"""CountWindow: tumbling, hopping and sliding windows of N messages on a StreamingDataFrame."""

from __future__ import annotations

from .base import Window

__all__ = ("CountWindow",)


class CountWindow(Window):
    """A count-based window with one aggregation (closing is per key: a window closes when it is
    full, whatever the other keys do)."""

    closing_strategies = ("key",)
