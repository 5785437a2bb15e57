"""CountWindow and SessionWindow: windows closed per key on a StreamingDataFrame."""

from __future__ import annotations

from .base import Window

__all__ = ("CountWindow", "SessionWindow")


class CountWindow(Window):
    """A count-based window with one aggregation (closing is per key: a window closes when it is
    full, whatever the other keys do)."""

    closing_strategies = ("key",)


class SessionWindow(Window):
    """A session window with one aggregation (sessions and their closing are per key)."""

    closing_strategies = ("key",)
