"""Exceptions of the sink API."""

from __future__ import annotations

from typing import Optional

from stream_edge.exceptions import QuixException

__all__ = ("SinkBackpressureError",)


class SinkBackpressureError(QuixException):
    """Raised by a sink during ``flush()``/``write()`` when the destination cannot accept data now.

    The application drops the accumulated sink batch for ``(topic, partition)``, pauses that
    partition for ``retry_after`` seconds, seeks it back to the last committed offset and resumes,
    so the dropped records are consumed again.

    :param retry_after: seconds to pause for.
    :param topic: the topic to pause (filled in by ``BatchingSink.flush`` if left out).
    :param partition: the partition to pause (filled in by ``BatchingSink.flush`` if left out).

    Example::

        raise SinkBackpressureError(retry_after=5.0, topic=batch.topic, partition=batch.partition)
    """

    def __init__(self, retry_after: float, topic: Optional[str] = None, partition: Optional[int] = None) -> None:
        self.retry_after = retry_after
        self.topic = topic
        self.partition = partition
        super().__init__(
            f"sink backpressure on {topic}[{partition}]: retry after {retry_after}s"
        )
