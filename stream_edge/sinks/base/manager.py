"""The registry of sinks used by the application and its checkpoints.

Runtime seam (``docs/internals.md``)::

    manager = SinkManager()
    manager.register(sink)                 # StreamingDataFrame.sink(sink)
    manager.start_sinks()                  # once, before the first message
    manager.flush_whole()                  # at each checkpoint: sinks whose flush() takes no arguments
    manager.flush(topic, partition)        # at each checkpoint, for every assigned partition
    manager.on_paused(topic, partition)    # backpressure (flush() already does it for you)
    manager.on_revoke(topic, partition)    # the partition was revoked or lost (rebalance)
    manager.close()                        # at shutdown: cleanup() of every sink
"""

from __future__ import annotations

import inspect
import logging
import time
from typing import Any, Callable, Dict, Iterable, List, Optional, Tuple

from stream_edge.errors import is_outage

from .exceptions import SinkBackpressureError
from .sink import BaseSink

__all__ = ("SinkManager",)

logger = logging.getLogger(__name__)


def takes_partition(method: Callable[..., Any]) -> bool:
    """True if ``method`` can be called as ``method(topic, partition)`` (the contract's form of
    ``flush`` / ``on_paused``); False for Quix Streams 3.28.1's argument-less form."""
    try:
        inspect.signature(method).bind("topic", 0)
    except TypeError:
        return False
    except ValueError:  # no signature (a builtin): assume the contract's form
        return True
    return True


class SinkManager:
    """Keeps the registered sinks (each once, in registration order) and drives them together."""

    def __init__(self) -> None:
        self._sinks: Dict[int, BaseSink] = {}
        self._partition_sinks: List[BaseSink] = []  # flush(topic, partition)
        self._whole_sinks: List[BaseSink] = []  # flush(): Quix Streams 3.28.1's form
        self._pause_all: Dict[int, bool] = {}  # id(sink) -> on_paused takes no arguments
        self._started = False
        # the run's OutageTracker (stream_edge.processing.outage), set by the runner: an outage
        # met by a sink's flush() backs off and is bounded by max_retry_seconds
        self.outages: Optional[Any] = None
        self._whole_failures = 0

    def register(self, sink: BaseSink) -> None:
        """Register a sink; registering the same instance twice keeps one entry."""
        if not isinstance(sink, BaseSink):
            raise TypeError(f"sink must be an instance of BaseSink, got {type(sink).__name__}")
        if id(sink) in self._sinks:
            return
        self._sinks[id(sink)] = sink
        (self._partition_sinks if takes_partition(sink.flush) else self._whole_sinks).append(sink)
        self._pause_all[id(sink)] = not takes_partition(sink.on_paused)

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
        for sink in self._partition_sinks:
            started = time.monotonic()
            try:
                sink.flush(topic, partition)
                if on_flushed is not None:
                    on_flushed(sink, topic, partition, time.monotonic() - started)
            except SinkBackpressureError as exc:
                if exc.topic is None:
                    exc.topic, exc.partition = topic, partition
                if self.outages is not None:  # bounded by max_retry_seconds like any outage
                    self.outages.failed((topic, partition), exc, self._where(sink, topic, partition),
                                        delay=exc.retry_after or 0.0, service=f"the destination of {type(sink).__name__}",
                                        shown=False)
                self.on_paused(topic, partition)
                raise
            except Exception as exc:
                error = self._outage(sink, exc, topic, partition)
                if error is exc:
                    raise
                raise error from exc

    @property
    def has_whole_sinks(self) -> bool:
        """True if a sink's ``flush()`` takes no arguments (flushed once per checkpoint)."""
        return bool(self._whole_sinks)

    def flush_whole(self, on_flushed: Optional[Callable[[BaseSink, str, int, float], None]] = None) -> None:
        """``flush()`` every sink defined in Quix Streams 3.28.1's form, once per checkpoint.

        :class:`SinkBackpressureError` propagates (``topic`` left ``None``): the runtime pauses
        every partition of the checkpoint and calls :meth:`pause_all`, as Quix does.
        """
        for sink in self._whole_sinks:
            started = time.monotonic()
            try:
                sink.flush()
            except SinkBackpressureError:
                raise
            except Exception as exc:
                if self.outages is None or not is_outage(exc):
                    raise
                self._whole_failures += 1  # every partition pauses (as for backpressure)
                logger.warning("%s met an outage (%s: %s): every partition pauses and is replayed",
                               self._where(sink, None, None), type(exc).__name__, exc)
                raise SinkBackpressureError(min(30.0, 2.0 ** (self._whole_failures - 1))) from exc
            self._whole_failures = 0
            if on_flushed is not None:
                on_flushed(sink, "", -1, time.monotonic() - started)

    @staticmethod
    def _where(sink: BaseSink, topic: Optional[str], partition: Optional[int]) -> str:
        return (f"{type(sink).__name__}.flush() of topic '{topic}' partition {partition}" if topic is not None
                else f"{type(sink).__name__}.flush()")

    def _outage(self, sink: BaseSink, exc: Exception, topic: str, partition: int) -> Exception:
        """A sink's write that met an outage (``stream_edge.errors``) becomes backpressure with
        exponential backoff (the partition pauses and is replayed); anything else is returned as
        is (it propagates: the checkpoint fails and the application stops)."""
        if self.outages is None or not is_outage(exc):
            return exc
        delay = self.outages.failed((topic, partition), exc, self._where(sink, topic, partition))
        self.on_paused(topic, partition)
        return SinkBackpressureError(delay, topic, partition)

    def on_paused(self, topic: str, partition: int) -> None:
        """Tell every sink a partition was paused (argument-less ``on_paused()``: called as is)."""
        for sink in self._sinks.values():
            if self._pause_all.get(id(sink)):
                sink.on_paused()
            else:
                sink.on_paused(topic, partition)

    def pause_all(self, partitions: Iterable[Tuple[str, int]]) -> None:
        """Every partition was paused: ``on_paused()`` once for sinks of Quix's form, else
        ``on_paused(topic, partition)`` per partition."""
        partitions = list(partitions)
        for sink in self._sinks.values():
            if self._pause_all.get(id(sink)):
                sink.on_paused()
            else:
                for topic, partition in partitions:
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
