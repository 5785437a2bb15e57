"""Kafka message timestamps."""

from __future__ import annotations

import enum
from typing import Any, Callable, List, Optional, Tuple

__all__ = ("TimestampType", "MessageTimestamp", "TimestampExtractor")


class TimestampType(enum.IntEnum):
    TIMESTAMP_NOT_AVAILABLE = 0  # timestamps not supported by broker
    TIMESTAMP_CREATE_TIME = 1  # message creation time (or source / producer time)
    TIMESTAMP_LOG_APPEND_TIME = 2  # broker receive time


# extractor(value, headers, timestamp_ms, timestamp_type) -> timestamp in ms
TimestampExtractor = Callable[[Any, Optional[List[Tuple[str, bytes]]], float, TimestampType], int]


class MessageTimestamp:
    """The timestamp of an incoming message (type and milliseconds).

    >>> MessageTimestamp.create(1, 1000).milliseconds
    1000
    """

    __slots__ = ("_type", "_milliseconds")

    def __init__(self, milliseconds: Optional[int], type: TimestampType) -> None:
        self._milliseconds, self._type = milliseconds, type

    @property
    def type(self) -> TimestampType:
        return self._type

    @property
    def milliseconds(self) -> Optional[int]:
        return self._milliseconds

    @classmethod
    def create(cls, timestamp_type: int, milliseconds: int) -> "MessageTimestamp":
        """From ``confluent_kafka.Message.timestamp()``: the milliseconds as given, whatever the type
        (Quix Streams 3.28 keeps them for "not available" too: ``create(0, 0).milliseconds == 0``)."""
        return cls(milliseconds, TimestampType(timestamp_type))

    def __repr__(self) -> str:
        return f"MessageTimestamp({self._milliseconds}, {self._type.name})"
