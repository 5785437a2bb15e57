"""What StreamingDataFrame and StreamingSeries share."""

from __future__ import annotations

from typing import Any, Callable

from stream_edge.core.stream import Stream

__all__ = ("BaseStreaming",)


class BaseStreaming:
    """A node holding a :class:`Stream`; subclasses add the user-facing operations."""

    _stream: Stream

    @property
    def stream(self) -> Stream:
        return self._stream

    def compose_returning(self) -> Callable[[Any, Any, int, Any], Any]:
        return self._stream.compose_returning()
