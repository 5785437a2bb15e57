"""Sinks: the v3 sink API (``stream_edge.sinks.base``), core sinks and community sinks.

Example::

    from stream_edge.sinks import BatchingSink, SinkBatch, SinkBackpressureError
"""

from .base import (
    BaseSink,
    BatchingSink,
    SinkBackpressureError,
    SinkBatch,
    SinkItem,
    SinkManager,
)

__all__ = ("BaseSink", "BatchingSink", "SinkBatch", "SinkItem", "SinkBackpressureError", "SinkManager")
