"""The base class of the library's own exceptions."""

__all__ = ("StreamEdgeException", "QuixException")


class StreamEdgeException(Exception):
    """Base of stream_edge-specific errors."""


QuixException = StreamEdgeException  # the Quix Streams 3.x name
