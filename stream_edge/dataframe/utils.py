"""Dataframe helpers."""

from __future__ import annotations

from datetime import timedelta
from typing import Union

__all__ = ("ensure_milliseconds",)


def ensure_milliseconds(delta: Union[int, timedelta]) -> int:
    """Milliseconds from an int (already ms) or a timedelta (rounded).

    >>> ensure_milliseconds(timedelta(seconds=1.5))
    1500
    """
    if isinstance(delta, timedelta):
        return int(delta.total_seconds() * 1000 + 0.5)
    if isinstance(delta, bool) or not isinstance(delta, int):
        raise TypeError(f"expected int milliseconds or a timedelta, got {type(delta).__name__}")
    return delta
