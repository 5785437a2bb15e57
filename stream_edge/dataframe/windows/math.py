"""Pure window math shared by the edge and the Spark batch recompute.

No Kafka, no RocksDB, no third-party import here: ``lakehouse`` imports this module to recompute
windows in batch with exactly the edge's rules. All times are integer milliseconds.

The rules (Quix Streams 3.x semantics, checked against quixstreams 3.28.1):

* Tumbling / hopping windows are ``[start, end)``; starts are multiples of the step (the duration
  for tumbling) and never negative.
* Event time is tracked per message key (Quix's default "key" closing strategy): ``latest`` is
  the largest timestamp seen for the key, including the current message.
* A tumbling/hopping window is closed once ``latest >= end + grace``; a message whose window is
  closed is late for that window and dropped (a hopping message can be late for some of its
  windows only). ``final()`` emits a window the first time a message of its key closes it.
* Sliding windows are ``[start, end]`` with ``end - start == duration`` (the start is clamped
  at 0); a sliding window is closed once ``latest > end + grace`` and a message is late when
  ``timestamp < latest - duration - grace``.

Example::

    >>> window_ranges(25, 10, 5)
    [(25, 35), (20, 30)]
    >>> fixed_max_expired_start(latest=30, duration_ms=10, grace_ms=0)
    20
"""

from __future__ import annotations

from datetime import timedelta
from typing import List, Optional, Tuple, Union

__all__ = (
    "to_ms",
    "tumbling_start",
    "window_ranges",
    "fixed_max_expired_start",
    "fixed_is_closed",
    "sliding_max_expired_start",
    "sliding_is_late",
    "sliding_is_closed",
    "validate_time_window",
)


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


def tumbling_start(timestamp_ms: int, duration_ms: int) -> int:
    """Start of the tumbling window holding ``timestamp_ms``."""
    return timestamp_ms - timestamp_ms % duration_ms


def window_ranges(timestamp_ms: int, duration_ms: int, step_ms: Optional[int] = None) -> List[Tuple[int, int]]:
    """All ``(start, end)`` fixed windows holding ``timestamp_ms``, newest first.

    Starts are multiples of ``step_ms`` (``duration_ms`` for tumbling) and never negative.
    """
    step = step_ms or duration_ms
    start = timestamp_ms - timestamp_ms % step
    ranges = []
    while start >= 0 and start > timestamp_ms - duration_ms:
        ranges.append((start, start + duration_ms))
        start -= step
    return ranges


def fixed_max_expired_start(latest: int, duration_ms: int, grace_ms: int) -> int:
    """Largest start of a closed tumbling/hopping window once the key's event time is ``latest``."""
    return latest - grace_ms - duration_ms


def fixed_is_closed(start: int, latest: int, duration_ms: int, grace_ms: int) -> bool:
    """True when window ``[start, start + duration)`` no longer accepts messages."""
    return start <= latest - grace_ms - duration_ms


def sliding_max_expired_start(latest: int, duration_ms: int, grace_ms: int) -> int:
    """Largest start of a closed sliding window once the key's event time is ``latest``."""
    return latest - duration_ms - grace_ms - 1


def sliding_is_late(timestamp_ms: int, latest: int, duration_ms: int, grace_ms: int) -> bool:
    """True when a sliding-window message is too old to be counted anywhere."""
    return timestamp_ms <= latest - duration_ms - grace_ms - 1


def sliding_is_closed(start: int, latest: int, duration_ms: int, grace_ms: int) -> bool:
    """True when a sliding window starting at ``start`` is closed (final) for event time ``latest``.

    The start decides, so windows clamped at start 0 close together with ``[0, duration]``.
    """
    return start <= latest - duration_ms - grace_ms - 1
