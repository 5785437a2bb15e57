"""The sink contract (``BaseSink``) and the per-partition batching base class (``BatchingSink``).

The runtime calls, per sink (see ``docs/internals.md``):

- ``start()`` once before the first message: runs ``setup()`` and then the
  ``on_client_connect_success`` / ``on_client_connect_failure`` callback;
- ``add(value, key, timestamp, headers, topic, partition, offset)`` for every processed record;
- ``flush(topic, partition)`` at each checkpoint for every assigned partition. If it raises, the
  checkpoint fails and no offsets are committed; ``SinkBackpressureError`` pauses the partition.
  A sink whose ``flush()`` takes no arguments (Quix Streams 3.28.1's form) is flushed once per
  checkpoint instead, and its backpressure pauses every partition of the checkpoint;
- ``on_paused(topic, partition)`` when a partition is paused because of backpressure
  (``on_paused()`` for a sink that defines it without arguments);
- ``cleanup()`` once at shutdown (stops background threads, closes clients).
"""

from __future__ import annotations

import abc
import logging
from typing import Any, Dict, Optional, Tuple

from stream_edge.client_connect import ClientConnectFailureCallback, ClientConnectSuccessCallback, connect

from .batch import SinkBatch
from .exceptions import SinkBackpressureError
from .item import HeadersTuples, SinkItem

__all__ = ("BaseSink", "BatchingSink", "ClientConnectSuccessCallback", "ClientConnectFailureCallback",
           "partition_args")

logger = logging.getLogger(__name__)



def partition_args(args: Tuple[Any, ...], kwargs: Dict[str, Any]) -> Tuple[Optional[str], Optional[int]]:
    """``(topic, partition)`` from the arguments of ``flush`` / ``on_paused``, called as
    ``(topic, partition)``, with keywords, or without arguments (``(None, None)``: every partition)."""
    topic = args[0] if args else kwargs.get("topic")
    partition = args[1] if len(args) > 1 else kwargs.get("partition")
    return topic, partition


class BaseSink(abc.ABC):
    """Base class for all sinks: subclass it and implement ``add()`` and ``flush()``.

    :param on_client_connect_success: called after ``setup()`` succeeded.
    :param on_client_connect_failure: called with the exception when ``setup()`` failed; without
        it the exception propagates and the application stops.

    Example::

        class PrintSink(BaseSink):
            def add(self, value, key, timestamp, headers, topic, partition, offset):
                print(topic, partition, offset, value)
            def flush(self, topic, partition):
                pass
    """

    def __init__(
        self,
        on_client_connect_success: Optional[ClientConnectSuccessCallback] = None,
        on_client_connect_failure: Optional[ClientConnectFailureCallback] = None,
    ) -> None:
        self._on_client_connect_success = on_client_connect_success
        self._on_client_connect_failure = on_client_connect_failure

    @abc.abstractmethod
    def add(self, value: Any, key: Any, timestamp: int, headers: HeadersTuples,
            topic: str, partition: int, offset: int) -> None:
        """Called for every processed record sent to this sink."""

    @abc.abstractmethod
    def flush(self, *args: Any, **kwargs: Any) -> None:
        """Called at each checkpoint; write (or confirm) what was added for this partition.

        Subclasses define it either as ``flush(self, topic, partition)`` (called per partition)
        or as ``flush(self)`` (Quix Streams 3.28.1's form: called once per checkpoint). If it
        raises, the checkpoint is aborted and offsets are not committed.
        """

    def on_paused(self, *args: Any, **kwargs: Any) -> None:
        """``on_paused(topic, partition)``: called when the partition is paused because of
        backpressure (``on_paused()``: every partition was paused)."""

    def on_revoke(self, topic: str, partition: int) -> None:
        """Called when ``(topic, partition)`` is revoked from or lost by this instance (a
        rebalance), after its last checkpoint: forget what is kept for it (another instance now
        owns it). Not part of the Quix Streams API; the default does nothing."""

    def setup(self) -> None:
        """Connect to the destination / validate configuration. Called once by :meth:`start`."""

    def start(self) -> None:
        """Run :meth:`setup` and report the outcome to the connect callbacks (called by the runtime)."""
        connect(self.setup, self._on_client_connect_success, self._on_client_connect_failure)

    def cleanup(self) -> None:
        """Release resources at shutdown (background threads, clients). Idempotent."""


class BatchingSink(BaseSink):
    """A sink that accumulates records in memory per topic partition and writes them at checkpoints.

    Subclasses implement :meth:`write`. ``flush(topic, partition)`` hands the partition's batch to
    ``write()`` and drops it afterwards, whether the write succeeded or not: a failed write fails
    the checkpoint, and the records come back when the partition is replayed from the last
    committed offset.

    Example::

        class ListSink(BatchingSink):
            def __init__(self):
                super().__init__()
                self.written = []
            def write(self, batch):
                self.written.extend(item.value for item in batch)
    """

    def __init__(
        self,
        on_client_connect_success: Optional[ClientConnectSuccessCallback] = None,
        on_client_connect_failure: Optional[ClientConnectFailureCallback] = None,
    ) -> None:
        super().__init__(on_client_connect_success, on_client_connect_failure)
        self._batches: Dict[Tuple[str, int], SinkBatch] = {}

    @abc.abstractmethod
    def write(self, batch: SinkBatch) -> None:
        """Write a batch to the destination; may raise :class:`SinkBackpressureError`."""

    def add(self, value: Any, key: Any, timestamp: int, headers: HeadersTuples,
            topic: str, partition: int, offset: int) -> None:
        """Add a record to the in-memory batch of its topic partition."""
        batch = self._batches.get((topic, partition))
        if batch is None:
            batch = self._batches[(topic, partition)] = SinkBatch(topic, partition)
        batch.items.append(SinkItem(value, key, timestamp, headers, offset))  # per record: no extra call

    def flush(self, *args: Any, **kwargs: Any) -> None:
        """``flush(topic, partition)``: write the partition's accumulated batch (if any) and drop
        it afterwards.

        ``flush()`` without arguments (as tests written for Quix Streams call it) writes every
        partition's batch, one ``write(batch)`` each, and drops them all even if one fails.
        """
        topic, partition = partition_args(args, kwargs)
        if topic is None or partition is None:
            self._flush_all()
            return
        batch = self._batches.pop((topic, partition), None)
        if batch is None or not len(batch):
            return
        try:
            self.write(batch)
        except SinkBackpressureError as exc:
            # The runtime needs to know which partition to pause.
            if exc.topic is None:
                exc.topic = topic
            if exc.partition is None:
                exc.partition = partition
            raise

    def _flush_all(self) -> None:
        try:
            for (topic, partition) in list(self._batches):
                batch = self._batches.get((topic, partition))
                if batch is not None and len(batch):
                    logger.debug("flushing sink %r for %s[%s]: %d records", self, topic, partition, len(batch))
                    self.write(batch)
        finally:
            self._batches.clear()

    def on_paused(self, *args: Any, **kwargs: Any) -> None:
        """``on_paused(topic, partition)``: the partition is paused and will be replayed: drop its
        accumulated batch (``on_paused()``: drop every batch)."""
        topic, partition = partition_args(args, kwargs)
        if topic is None or partition is None:
            self._batches.clear()
            return
        self._batches.pop((topic, partition), None)

    def on_revoke(self, topic: str, partition: int) -> None:
        """The partition left this instance: drop its accumulated batch."""
        self._batches.pop((topic, partition), None)
