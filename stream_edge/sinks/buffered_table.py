"""``BufferedTableSink``: what every table-writing sink does alike (the data-lake sink, ``IcebergSink``).

A table sink buffers each topic partition's dict records between checkpoints and writes them as a
table. The base owns everything that does not depend on the destination:

- ``add()``: the record's own checks (the sink's :meth:`~BufferedTableSink.check_record` hook:
  a value that is not a dict, a tombstone, a key), its column types (one checker for every table
  sink, :class:`~stream_edge.sinks.record_types.ColumnTypes`), then its partition's buffer
  (:mod:`stream_edge.sinks.arrow_buffer`; an offset at or before the newest drops what comes again).
  A record the table cannot hold is that record's error, raised before it is buffered;
- size accounting: every 64 records of a partition the newest is measured, the dicts are sealed to
  Arrow when due, and the bytes of every buffer are compared to ``max_buffer_bytes``;
- early writes: at the bound every buffer is written before the checkpoint (still exactly once:
  the sinks skip offsets already written); a failure keeps the records and early writes wait for
  the checkpoint, whose flush meets (and reports) it;
- ``flush()``: the checkpoint's write; a failed write puts the buffers back, never drops them;
- ``write(batch)`` (the ``BatchingSink`` API): the same checks, then one write;
- faults: one classifier, :func:`write_fault_kind` (the error model, ``stream_edge.errors``): an
  outage is ``SinkBackpressureError`` with exponential backoff, anything else a
  ``PermanentStorageError`` naming the table, the partitions and the files.

A sink keeps only what differs: :meth:`~BufferedTableSink.check_record` (its record errors) and
:meth:`~BufferedTableSink.write_buffers` (the destination), and says how it writes a checkpoint
(``WRITES_TOGETHER``: every partition in one call, as one Iceberg snapshot; else each partition
on its own, as one lake commit each).
"""

from __future__ import annotations

import abc

import logging
from typing import Any, Callable, Dict, Hashable, Optional, Tuple

from stream_edge.errors import OUTAGE, PERMANENT, error_kind
from stream_edge.sinks.arrow_buffer import BufferPool, PartitionBuffer
from stream_edge.sinks.base.batch import SinkBatch
from stream_edge.sinks.base.exceptions import SinkBackpressureError
from stream_edge.sinks.base.item import HeadersTuples
from stream_edge.sinks.base.sink import (BatchingSink, ClientConnectFailureCallback, ClientConnectSuccessCallback,
                                         partition_args)
from stream_edge.sinks.record_types import ColumnTypes, SchemaConflictError
from stream_edge.sinks.storage_faults import TRANSIENT, StorageBackoff, classify

__all__ = ("BufferedTableSink", "write_fault_kind")

logger = logging.getLogger(__name__)

Key = Tuple[str, int]
Screen = Callable[[Any, Any, str, int, int], dict]


def write_fault_kind(exc: BaseException) -> str:
    """:data:`~stream_edge.errors.OUTAGE` (retry with backoff) or
    :data:`~stream_edge.errors.PERMANENT` (stop) for a table sink's failed write or connection.

    The error model decides (:func:`stream_edge.errors.error_kind`: a catalog or server that does
    not answer, 5xx, 401/403/429, a commit conflict that outlived its attempts are outages); an
    ``OSError`` (storage: a file, an S3 object) is read in detail by
    :func:`stream_edge.sinks.storage_faults.classify` (its errno, the S3 error code, the HTTP
    status: ``AccessDenied`` or ``ENAMETOOLONG`` are permanent). A record's content never reaches
    a write (``add()`` checked it), so anything else is permanent.

    >>> write_fault_kind(ConnectionRefusedError(111, "Connection refused"))
    'outage'
    >>> write_fault_kind(OSError(36, "File name too long"))
    'permanent'
    >>> write_fault_kind(ValueError("a bug"))
    'permanent'
    """
    if isinstance(exc, OSError):
        return OUTAGE if classify(exc) == TRANSIENT else PERMANENT
    return OUTAGE if error_kind(exc) == OUTAGE else PERMANENT


class BufferedTableSink(BatchingSink):
    """Base of the sinks that buffer dict records per topic partition and write them as tables.

    :param name: what logs and errors call the sink (``"DataLakeSink table 'readings'"``).
    :param types: the table's column types (each sink says which names are reserved).
    :param max_buffer_bytes: bound on the bytes held between checkpoints (None: none).
    :param keep_keys: buffer the keys and Kafka timestamps (the sink writes them).
    :param backoff: the sink's backoff for its faults (:class:`StorageBackoff`).

    Subclasses implement :meth:`write_buffers` and usually :meth:`check_record`; a sink that
    needs a look at every record (its key, a tracker) passes a screen to :meth:`route_records`.
    """

    #: True: a checkpoint (and an early write) writes every partition's buffer in one
    #: ``write_buffers`` call; False: one call per partition.
    WRITES_TOGETHER = False

    def __init__(self, name: str, types: ColumnTypes, max_buffer_bytes: Optional[int], keep_keys: bool,
                 backoff: StorageBackoff,
                 on_client_connect_success: Optional[ClientConnectSuccessCallback] = None,
                 on_client_connect_failure: Optional[ClientConnectFailureCallback] = None) -> None:
        super().__init__(on_client_connect_success, on_client_connect_failure)
        if max_buffer_bytes is not None and max_buffer_bytes <= 0:
            raise ValueError(f"max_buffer_bytes must be positive or None, got {max_buffer_bytes}")
        self.max_buffer_bytes = max_buffer_bytes
        self._name = name
        self._types = types
        self._check_types = types.check  # per record: bound once
        self._pool = BufferPool(max_buffer_bytes, keep_keys)
        self._buffers = self._pool.buffers  # the pool's dict itself (never replaced): one lookup per record
        self._backoff = backoff
        self._screen: Optional[Screen] = None
        # a flush of one partition writes every partition (each on its own unless WRITES_TOGETHER)
        self._flush_every_partition = self.WRITES_TOGETHER
        self.route_records(keep_keys)

    # -- the hooks -------------------------------------------------------------------------------
    def check_record(self, value: Any, key: Any, topic: str, partition: int, offset: int) -> dict:
        """The record as the table holds it (a dict), or its record error. ``add()`` calls it for
        a value that is not a dict (or for every record through a screen), ``write()`` for
        every record. The default refuses what is not a dict."""
        if isinstance(value, dict):
            return value
        raise TypeError(f"{type(self).__name__} needs dict records; got {type(value).__name__} at "
                        f"{topic}[{partition}] offset {offset}")

    def conflict_error(self, exc: SchemaConflictError) -> Exception:
        """The error a column type conflict is raised as (default: the :class:`SchemaConflictError`)."""
        return exc

    @abc.abstractmethod
    def write_buffers(self, taken: Dict[Key, PartitionBuffer], flushed: Optional[Key]) -> None:
        """Write these partitions' buffers to the destination (one partition unless
        ``WRITES_TOGETHER``). ``flushed`` is the partition whose checkpoint runs (None: an early
        write, or ``flush()`` of every partition). Raise a classified fault (:meth:`fault`): the
        base puts the buffers back. Each table sink implements it."""

    @property
    def types_known(self) -> bool:
        """Whether the table's column types are adopted, so that buffers may be sealed to Arrow
        (a sink whose table is read at ``setup()`` says False until then)."""
        return True

    def written_early(self) -> None:
        """Called after the early writes at the bound (the data-lake sink registers them)."""

    # -- per record -----------------------------------------------------------------------------
    def route_records(self, keep_keys: bool, screen: Optional[Screen] = None) -> None:
        """Pick the cheapest ``add`` (it runs once per record): keys and Kafka timestamps are
        buffered only when the sink writes them or screens every record; ``screen(value, key,
        topic, partition, offset) -> dict`` replaces :meth:`check_record` for every record."""
        keyed = keep_keys or screen is not None
        self._screen = screen
        self._pool.keep_keys = keyed
        self.add = self._add_keyed if keyed else self._add_values  # type: ignore[method-assign]

    def add(self, value: Any, key: Any, timestamp: int, headers: HeadersTuples,
            topic: str, partition: int, offset: int) -> None:
        """Buffer a record of ``topic[partition]``; raises the record's error (not a dict, a
        field that does not fit its column...) before buffering it, for the runtime's
        ``on_processing_error`` to decide on. (Replaced per instance by :meth:`route_records`.)"""
        self._add_keyed(value, key, timestamp, headers, topic, partition, offset)

    def _add_keyed(self, value: Any, key: Any, timestamp: int, headers: HeadersTuples,
                   topic: str, partition: int, offset: int) -> None:
        screen = self._screen
        if screen is not None:
            value = screen(value, key, topic, partition, offset)
        elif value.__class__ is not dict:
            value = self.check_record(value, key, topic, partition, offset)
        buffer = self._buffers.get((topic, partition))
        if buffer is None or offset <= buffer.last:
            buffer = self._pool.for_offset((topic, partition), offset)
        try:
            self._check_types(value, topic, partition, offset)
        except SchemaConflictError as exc:
            error = self.conflict_error(exc)
            if error is exc:
                raise
            raise error from exc
        # PartitionBuffer.append, inlined: a call per record would cost ~35 ns more (a quarter of it)
        buffer.last = offset
        buffer.values.append(value)
        offsets = buffer.offsets
        offsets.append(offset)
        buffer.keys.append(key)
        buffer.timestamps.append(timestamp)
        if len(offsets) >= buffer.next_sample:
            self._sample(buffer)

    def _add_values(self, value: Any, key: Any, timestamp: int, headers: HeadersTuples,
                    topic: str, partition: int, offset: int) -> None:
        buffer = self._buffers.get((topic, partition))
        if buffer is None or offset <= buffer.last or value.__class__ is not dict:
            if value.__class__ is not dict:
                value = self.check_record(value, key, topic, partition, offset)
            if buffer is None or offset <= buffer.last:
                buffer = self._pool.for_offset((topic, partition), offset)
        try:
            self._check_types(value, topic, partition, offset)
        except SchemaConflictError as exc:
            error = self.conflict_error(exc)
            if error is exc:
                raise
            raise error from exc
        buffer.last = offset
        buffer.values.append(value)
        offsets = buffer.offsets
        offsets.append(offset)
        if len(offsets) >= buffer.next_sample:
            self._sample(buffer)

    # -- size accounting and early writes -------------------------------------------------------
    @property
    def buffered_bytes(self) -> int:
        """Bytes held in the partitions' buffers, as counted against ``max_buffer_bytes``."""
        return self._pool.held

    @property
    def early_writes(self) -> int:
        """Partitions written early because the buffers reached ``max_buffer_bytes``."""
        return self._pool.early_writes

    def _sample(self, buffer: PartitionBuffer) -> None:
        """Every few records: measure, seal the dicts to Arrow when due, and at the bound write
        every buffer early."""
        if not self.types_known:
            return  # the checkpoint's write converts them with the table's types
        if buffer.sample():
            buffer.seal(self._types.types)
        if not self._pool.over_bound():
            return
        try:
            if self.WRITES_TOGETHER:
                self._pool.write_early_together(lambda taken: self.write_buffers(taken, None), self._name)
            else:
                self._pool.write_early(lambda topic, partition, taken: self.write_buffers(
                    {(topic, partition): taken}, None), self._name)
        finally:
            self.written_early()

    # -- checkpoints ----------------------------------------------------------------------------
    def flush(self, *args: Any, **kwargs: Any) -> None:
        """``flush(topic, partition)``: write the partition's records (every partition's when
        the sink writes them together); ``flush()``: every partition's.

        Raises only what the destination does (a record's content was checked by ``add()``):
        ``SinkBackpressureError`` for an outage (with exponential backoff), ``PermanentStorageError``
        for anything else. Either way the records stay buffered until the runtime pauses (and
        replays) the partition or stops."""
        topic, partition = partition_args(args, kwargs)
        flushed = (topic, partition) if topic is not None and partition is not None else None
        pool = self._pool
        if self.WRITES_TOGETHER:
            if flushed is not None and not len(pool.get(flushed) or ()):
                return  # its records went with an earlier flush of this checkpoint
            pool.unblock()
            pool.write_together(lambda taken: self.write_buffers(taken, flushed))
            return
        pool.unblock()
        keys = [flushed] if flushed is not None else []
        if flushed is None or self._flush_every_partition:
            keys += sorted(key for key in pool if key != flushed)
        for key in keys:
            pool.write_together(lambda taken: self.write_buffers(taken, flushed), [key])

    def write(self, batch: SinkBatch) -> None:
        """Write a :class:`SinkBatch` (the ``BatchingSink`` API) at once; a record the table
        cannot hold raises before anything is written."""
        where = (batch.topic, batch.partition)
        buffer = PartitionBuffer()
        for item in batch:
            value = self.check_record(item.value, item.key, batch.topic, batch.partition, item.offset)
            try:
                self._check_types(value, batch.topic, batch.partition, item.offset)
            except SchemaConflictError as exc:
                error = self.conflict_error(exc)
                if error is exc:
                    raise
                raise error from exc
            buffer.append(value, item.key, item.timestamp, item.offset)
        if len(buffer):
            self.write_buffers({where: buffer}, where)

    def fault(self, exc: BaseException, key: Hashable, what: str, topic: Optional[str] = None,
              partition: Optional[int] = None) -> Exception:
        """The error to raise for a failed write (:func:`write_fault_kind`): an outage is a
        :class:`SinkBackpressureError` for ``topic[partition]`` after the backoff of ``key``;
        anything else a ``PermanentStorageError`` naming ``what``."""
        if write_fault_kind(exc) == OUTAGE:
            return SinkBackpressureError(self._backoff.transient(key, what, exc), topic, partition)
        return self._backoff.permanent(what, exc)

    def stats(self) -> Dict[str, int]:
        """Faults met so far (the service exports them)."""
        return self._backoff.stats()

    # -- partitions -----------------------------------------------------------------------------
    def on_paused(self, *args: Any, **kwargs: Any) -> None:
        """``on_paused(topic, partition)``: the partition will be replayed: drop its buffer
        (``on_paused()``: every partition's)."""
        super().on_paused(*args, **kwargs)
        topic, partition = partition_args(args, kwargs)
        if topic is None or partition is None:
            self._pool.clear()
        else:
            self._pool.drop((topic, partition))

    def on_revoke(self, topic: str, partition: int) -> None:
        """The partition left this instance: forget its buffer and its backoff."""
        super().on_revoke(topic, partition)
        self._pool.drop((topic, partition))
        self._backoff.forget((topic, partition))
