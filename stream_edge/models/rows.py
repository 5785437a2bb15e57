"""Row: one record with its metadata; built only for error callbacks and sinks that need one."""

from __future__ import annotations

from typing import Any, Optional

from .messagecontext import MessageContext

__all__ = ("Row",)


class Row:
    """A record (value, key, timestamp, headers) and the MessageContext it came from."""

    __slots__ = ("value", "key", "timestamp", "context", "headers")

    def __init__(self, value: Any, key: Any, timestamp: int, context: Optional[MessageContext],
                 headers: Any = None) -> None:
        self.value, self.key, self.timestamp, self.context, self.headers = value, key, timestamp, context, headers

    @property
    def topic(self) -> Optional[str]:
        return self.context.topic if self.context else None

    @property
    def partition(self) -> Optional[int]:
        return self.context.partition if self.context else None

    @property
    def offset(self) -> Optional[int]:
        return self.context.offset if self.context else None

    def __getitem__(self, item: str) -> Any:
        return self.value[item]

    def keys(self):
        return self.value.keys()

    def values(self):
        return self.value.values()

    def items(self):
        return self.value.items()

    def __repr__(self) -> str:
        return f"Row(value={self.value!r}, key={self.key!r}, timestamp={self.timestamp}, context={self.context!r})"
