"""Error callbacks: return True to ignore the error and continue, False (default) to stop.

Signatures (as in Quix Streams 3.x)::

    on_consumer_error(exc, message, logger) -> bool     # polling or deserialization failed
    on_processing_error(exc, row, logger) -> bool       # a StreamingDataFrame function raised
    on_producer_error(exc, row, logger) -> bool         # serializing or producing an output failed

A callback receives every failure of its stage, outages included (a service that refuses or does
not answer: ``stream_edge.is_outage(exc)`` is True), and decides. Without a callback of the user's,
an outage is not the record's error: its partition pauses and the record is retried with backoff,
and a permanent fault stops the app (``stream_edge/errors.py``, docs/operations.md).
"""

from __future__ import annotations

import logging
from typing import Any, Callable, Optional

from stream_edge.models.rows import Row

__all__ = ("ConsumerErrorCallback", "ProcessingErrorCallback", "ProducerErrorCallback",
           "default_on_consumer_error", "default_on_processing_error", "default_on_producer_error")

ConsumerErrorCallback = Callable[[Exception, Optional[Any], logging.Logger], bool]
ProcessingErrorCallback = Callable[[Exception, Optional[Row], logging.Logger], bool]
ProducerErrorCallback = Callable[[Exception, Optional[Row], logging.Logger], bool]


def _where(message: Any) -> str:
    if message is None:
        return ""
    try:
        return f" (topic '{message.topic()}', partition {message.partition()}, offset {message.offset()})"
    except Exception:  # noqa: BLE001 - a message look-alike without coordinates
        return ""


def default_on_consumer_error(exc: Exception, message: Optional[Any], logger: logging.Logger) -> bool:
    """Log and stop."""
    logger.exception("failed to consume a message%s", _where(message), exc_info=exc)
    return False


def default_on_processing_error(exc: Exception, row: Optional[Row], logger: logging.Logger) -> bool:
    """Log and stop."""
    where = f" (topic '{row.topic}', partition {row.partition}, offset {row.offset})" if row and row.context else ""
    logger.exception("failed to process a message%s", where, exc_info=exc)
    return False


def default_on_producer_error(exc: Exception, row: Optional[Row], logger: logging.Logger) -> bool:
    """Log and stop."""
    where = f" (input topic '{row.topic}', partition {row.partition}, offset {row.offset})" if row and row.context else ""
    logger.exception("failed to produce a message%s", where, exc_info=exc)
    return False
