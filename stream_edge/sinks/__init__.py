"""Sinks: the v3 sink API (``stream_edge.sinks.base``), core sinks and community sinks.

Example::

    from stream_edge.sinks import BatchingSink, SinkBatch, SinkBackpressureError
"""

# Before anything here imports pyarrow: its C++ memory pool is chosen at its import (arrow_memory).
from .arrow_memory import prefer_system_allocator

prefer_system_allocator()

from .base import (  # noqa: E402
    BaseSink,
    BatchingSink,
    SinkBackpressureError,
    SinkBatch,
    SinkItem,
    SinkManager,
)

__all__ = ("BaseSink", "BatchingSink", "SinkBatch", "SinkItem", "SinkBackpressureError", "SinkManager")
