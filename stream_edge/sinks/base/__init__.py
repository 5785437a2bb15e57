"""Sink base classes: ``BaseSink``, ``BatchingSink``, ``SinkBatch``, ``SinkBackpressureError``."""

from .batch import SinkBatch
from .exceptions import SinkBackpressureError
from .item import SinkItem
from .manager import SinkManager
from .sink import BaseSink, BatchingSink, ClientConnectFailureCallback, ClientConnectSuccessCallback

__all__ = (
    "BaseSink", "BatchingSink", "SinkBatch", "SinkItem", "SinkBackpressureError", "SinkManager",
    "ClientConnectSuccessCallback", "ClientConnectFailureCallback",
)
