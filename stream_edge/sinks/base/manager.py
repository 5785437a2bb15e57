"""The registry of sinks used by the application and its checkpoints.

Runtime seam (``docs/internals.md``)::

    manager = SinkManager()
    manager.register(sink)                 # StreamingDataFrame.sink(sink)
    manager.start_sinks()                  # once, before the first message
    manager.flush(topic, partition)        # at each checkpoint, for every assigned partition
    manager.on_paused(topic, partition)    # backpressure (flush() already does it for you)
    manager.on_revoke(topic, partition)    # the partition was revoked or lost (rebalance)
    manager.close()                        # at shutdown: cleanup() of every sink
"""

from __future__ import annotations

import logging
import time
from typing import Callable, Dict, List, Optional

from .exceptions import SinkBackpressureError
from .sink import BaseSink

__all__ = ("SinkManager",)

logger = logging.getLogger(__name__)


class SinkManager:
    """Keeps the registered sinks (each once, in registration order) and drives them together."""

    def __init__(self) -> None:
        self._sinks: Dict[int, BaseSink] = {}
        self._started = False

    def register(self, sink: BaseSink) -> None:
        """Register a sink; registering the same instance twice keeps one entry."""
        if not isinstance(sink, BaseSink):
            raise TypeError(f"sink must be an instance of BaseSink, got {type(sink).__name__}")
        self._sinks.setdefault(id(sink), sink)

    @property
    def sinks(self) -> List[BaseSink]:
        return list(self._sinks.values())

    def start_sinks(self) -> None:
        """Call ``start()`` (setup + connect callbacks) of every sink, once."""
        if self._started:
            return
        self._started = True
        for sink in self._sinks.values():
            sink.start()

    def flush(self, topic: str, partition: int,
              on_flushed: Optional[Callable[[BaseSink, str, int, float], None]] = None) -> None:
        """Flush every sink for one partition (``on_flushed(sink, topic, partition, seconds)`` after each).

        On :class:`SinkBackpressureError` the partition will be replayed, so every sink drops its
        batch for it (``on_paused``) and the error propagates for the runtime to pause and seek.
        Any other exception propagates as is: the checkpoint fails and commits nothing.
        """
        for sink in self._sinks.values():
            started = time.monotonic()
            try:
                sink.flush(topic, partition)
                if on_flushed is not None:
                    on_flushed(sink, topic, partition, time.monotonic() - started)
            except SinkBackpressureError as exc:
                if exc.topic is None:
                    exc.topic, exc.partition = topic, partition
                self.on_paused(topic, partition)
                raise

    def on_paused(self, topic: str, partition: int) -> None:
        for sink in self._sinks.values():
            sink.on_paused(topic, partition)

    def on_revoke(self, topic: str, partition: int) -> None:
        """Tell every sink a partition left this instance (it drops what it keeps for it)."""
        for sink in self._sinks.values():
            sink.on_revoke(topic, partition)

    def close(self) -> None:
        """Call ``cleanup()`` of every sink; one failing cleanup does not stop the others."""
        for sink in self._sinks.values():
            try:
                sink.cleanup()
            except Exception:  # noqa: BLE001 - shutdown must reach every sink
                logger.exception("cleanup of sink %r failed", sink)
