"""What a table-writing sink holds between checkpoints: one buffer per topic partition, sealed to
Arrow as it grows, bounded in bytes, written early at the bound (driven by
:class:`~stream_edge.sinks.buffered_table.BufferedTableSink`, the base of the data-lake sink and
``IcebergSink``).

Per partition (:class:`PartitionBuffer`): the newest records stay dicts; every ``SAMPLE_EVERY``
records the newest one's size is measured (a deep ``sys.getsizeof``) and the dicts are converted to
one typed Arrow chunk when they reach ``CHUNK_ROWS`` records or ``SEAL_BYTES`` estimated bytes
(Arrow is ~15x smaller than dicts for flat JSON). The types come from the sink's
:class:`~stream_edge.sinks.record_types.ColumnTypes`, which checked every record in ``add()``, so a
conversion cannot meet a content error.

Across partitions (:class:`BufferPool`): the bytes held (Arrow chunks plus the estimated dicts) are
compared to ``max_bytes``; at the bound every partition's buffer is written at once, before the
checkpoint (still exactly once: the sinks skip replayed offsets). A write that fails puts the
partition's buffer back untouched and early writes stop until the next checkpoint, whose flush
meets (and reports) the same failure: one partition's failure never drops records.
"""

from __future__ import annotations

import bisect
import logging
import sys
from array import array
from itertools import chain, repeat
from typing import Any, Callable, Dict, Iterator, List, Mapping, Optional, Tuple

import pyarrow as pa

__all__ = ("PartitionBuffer", "BufferPool", "CHUNK_ROWS", "SEAL_BYTES", "SAMPLE_EVERY", "estimated_size",
           "typed_table")

logger = logging.getLogger(__name__)

# Dict records of a partition converted to one Arrow chunk at most. 512, not 2,048: the dicts are
# converted while still in the CPU's caches (with 24 partitions, 2,048 each kept ~49k dicts alive
# between conversions), 5% less CPU for the whole edge landing 2M readings over 24 partitions
# (7.49-7.75 -> 7.17-7.30 CPU s, three pairs; bench/README.md, lake_ingest); 256 was no better.
CHUNK_ROWS = 512
SEAL_BYTES = 2 * 1024 * 1024  # ... or fewer, once their estimated size reaches this
SAMPLE_EVERY = 64  # records between two size samples (and two bound checks)
_ROW_OVERHEAD = 8  # the offset (int64) kept per record beside the value
_KEY_OVERHEAD = 16  # the key's list slot and the Kafka timestamp (int64), when kept; plus the key (sampled)

_get = dict.get
_getsizeof = sys.getsizeof


def estimated_size(value: Any) -> int:
    """Bytes a decoded JSON value holds (the containers, their keys and values, nested ones too);
    a cheap deep ``sys.getsizeof``, exact enough to bound memory by (it runs on samples)."""
    size = _getsizeof(value)
    cls = value.__class__
    if cls is dict:
        for name, field in value.items():
            size += _getsizeof(name)
            size += estimated_size(field) if field.__class__ in (dict, list, tuple) else _getsizeof(field)
    elif cls is list or cls is tuple:
        for field in value:
            size += estimated_size(field) if field.__class__ in (dict, list, tuple) else _getsizeof(field)
    return size


def typed_table(values: List[dict], types: Mapping[str, pa.DataType]) -> pa.Table:
    """Dict records as an Arrow table, columns in order of first appearance, each column built with
    its known type (a column of nulls only stays of null type).

    The records are converted in one pass by Arrow's C++ converter, as one struct array of the
    known types (about 3x less CPU than building each column from a Python list of its values,
    bench/README.md, lake_ingest). Every key is one of ``names``, so the struct drops no field; a
    column the types do not know yet holds only nulls (``add()`` checked every record). Should the
    struct conversion refuse the records, they are converted column by column, which infers the
    unknown columns' types and raises the same kind of error for a real conflict."""
    names = list(dict.fromkeys(chain.from_iterable(values)))
    if not names:
        return pa.table({"__rows": pa.nulls(len(values))}).drop_columns(["__rows"])
    _null = pa.null()
    struct = pa.struct([pa.field(name, types.get(name) or _null) for name in names])
    try:
        return pa.Table.from_struct_array(pa.array(values, type=struct))
    except (pa.ArrowInvalid, pa.ArrowTypeError, pa.ArrowNotImplementedError, OverflowError, TypeError):
        return _column_table(values, names, types)


def _column_table(values: List[dict], names: List[str], types: Mapping[str, pa.DataType]) -> pa.Table:
    """The records column by column (the types of the columns ``types`` does not know inferred)."""
    count = len(values)
    columns = [pa.array(list(map(_get, values, repeat(name, count))), type=types.get(name)) for name in names]
    return pa.Table.from_arrays(columns, names=names)


class PartitionBuffer:
    """One topic partition's records: Arrow chunks, then the newest dict records.

    ``offsets`` is an int64 array of every record's offset; ``keys``/``timestamps`` are kept only
    when the sink needs them (``keep_keys``); ``last`` is the newest offset, to detect a rewound
    partition. Records come in through :meth:`append` (``BufferedTableSink.add()`` inlines it on
    its hot path), and :meth:`sample` runs when ``len(offsets) >= next_sample``.
    """

    __slots__ = ("values", "chunks", "chunk_rows", "chunk_bytes", "row_bytes", "key_bytes", "next_sample", "keys",
                 "timestamps", "offsets", "last", "keep_keys")

    def __init__(self, keep_keys: bool = True) -> None:
        self.values: List[dict] = []
        self.chunks: List[pa.Table] = []
        self.chunk_rows = 0
        self.chunk_bytes = 0
        self.row_bytes = 0  # estimated bytes of one dict record (sampled)
        self.key_bytes = 0  # bytes of one key, when keys are kept (sampled)
        self.next_sample = 1  # len(offsets) at which the sink calls sample(): the first record is measured
        self.keys: List[Any] = []
        self.timestamps = array("q")
        self.offsets = array("q")
        self.last = -1
        self.keep_keys = keep_keys

    def __len__(self) -> int:
        return len(self.offsets)

    def append(self, value: dict, key: Any, timestamp: int, offset: int) -> bool:
        """Add a checked record (with its key and Kafka timestamp); True when a sample is due."""
        self.last = offset
        self.values.append(value)
        offsets = self.offsets
        offsets.append(offset)
        self.keys.append(key)
        self.timestamps.append(timestamp)
        return len(offsets) >= self.next_sample

    @property
    def held(self) -> int:
        """Bytes counted against the pool's bound: Arrow chunks, estimated dicts, side arrays."""
        per_row = _ROW_OVERHEAD + (_KEY_OVERHEAD + self.key_bytes if self.keep_keys else 0)
        return self.chunk_bytes + len(self.values) * self.row_bytes + len(self.offsets) * per_row

    def sample(self) -> bool:
        """Measure the newest record; True when the dicts should be sealed now."""
        self.next_sample = (len(self.offsets) // SAMPLE_EVERY + 1) * SAMPLE_EVERY
        values = self.values
        if not values:
            return False
        size = estimated_size(values[-1])
        self.row_bytes = size if not self.row_bytes else (3 * self.row_bytes + size) // 4
        if self.keys:
            self.key_bytes = _getsizeof(self.keys[-1])  # bytes keys: ~33 B + their length
        return len(values) >= CHUNK_ROWS or len(values) * self.row_bytes >= SEAL_BYTES

    def seal(self, types: Mapping[str, pa.DataType]) -> None:
        """Convert the dict records to one Arrow chunk typed by ``types``."""
        if not self.values:
            return
        try:
            chunk = typed_table(self.values, types)
        except (pa.ArrowInvalid, pa.ArrowTypeError, OverflowError, TypeError) as exc:
            # add() checked every record against these types, so this is a bug: keep the dicts
            # (nothing is lost) and let the write report it.
            logger.error("could not convert %d checked records to Arrow (%s); keeping them as dicts",
                         len(self.values), exc)
            return
        self.chunks.append(chunk)
        self.chunk_rows += chunk.num_rows
        self.chunk_bytes += chunk.nbytes
        self.values = []

    def table(self, start: int, types: Mapping[str, pa.DataType]) -> pa.Table:
        """The records from index ``start`` on as one Arrow table, every column of the final type
        (chunks sealed before a column widened are cast; columns missing in a chunk are null)."""
        self.seal(types)
        if self.values:  # the seal failed: convert them here and let the error out
            self.chunks.append(typed_table(self.values, types))
            self.values = []
        if not self.chunks:
            return pa.table({})
        chunks = [_cast_to(chunk, types) for chunk in self.chunks]
        table = chunks[0] if len(chunks) == 1 else pa.concat_tables(chunks, promote_options="permissive")
        return table.slice(start) if start else table

    def truncate_from(self, offset: int) -> None:
        """Drop buffered records at or after ``offset`` (the partition was rewound)."""
        keep = bisect.bisect_left(self.offsets, offset)
        if keep >= self.chunk_rows:
            del self.values[keep - self.chunk_rows:]
        else:
            kept, rows = [], 0
            for chunk in self.chunks:
                if rows + chunk.num_rows > keep:
                    chunk = chunk.slice(0, keep - rows)
                if chunk.num_rows:
                    kept.append(chunk)
                rows += chunk.num_rows
            self.chunks, self.chunk_rows, self.values = kept, rows, []
            self.chunk_bytes = sum(chunk.nbytes for chunk in kept)
        del self.offsets[keep:]
        if self.keys:
            del self.keys[keep:]
        del self.timestamps[keep:]
        self.last = self.offsets[-1] if self.offsets else -1
        self.next_sample = len(self.offsets) + 1  # measure the next record


def _cast_to(chunk: pa.Table, types: Mapping[str, pa.DataType]) -> pa.Table:
    schema = chunk.schema
    if all(types.get(f.name, f.type) == f.type for f in schema):
        return chunk
    target = pa.schema([pa.field(f.name, types.get(f.name, f.type)) for f in schema])
    try:
        return chunk.cast(target)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError):
        return chunk  # a struct that gained fields: concat_tables' promotion merges it


Key = Tuple[str, int]
WriteFn = Callable[[str, int, PartitionBuffer], None]


class BufferPool:
    """Every partition's :class:`PartitionBuffer` of one sink, and the byte bound over them.

    :param max_bytes: bound on the bytes held (``None``: none).
    :param keep_keys: whether buffers keep keys and Kafka timestamps.
    """

    def __init__(self, max_bytes: Optional[int], keep_keys: bool = True) -> None:
        if max_bytes is not None and max_bytes <= 0:
            raise ValueError(f"max_buffer_bytes must be positive or None, got {max_bytes}")
        self.max_bytes = max_bytes
        self.keep_keys = keep_keys
        self.buffers: Dict[Key, PartitionBuffer] = {}
        self.early_writes = 0  # partitions written early because the bound was reached
        self.blocked = False  # an early write failed: wait for the checkpoint

    def __iter__(self) -> Iterator[Key]:
        return iter(self.buffers)

    def get(self, key: Key) -> Optional[PartitionBuffer]:
        return self.buffers.get(key)

    def for_offset(self, key: Key, offset: int) -> PartitionBuffer:
        """The partition's buffer for a record at ``offset`` (a rewind drops what comes again)."""
        buffer = self.buffers.get(key)
        if buffer is None:
            buffer = self.buffers[key] = PartitionBuffer(self.keep_keys)
        elif offset <= buffer.last:
            # The partition was rewound (replay after a pause or a lost assignment): what was
            # buffered from this offset on is coming again, so keep one copy only.
            buffer.truncate_from(offset)
        return buffer

    @property
    def held(self) -> int:
        """Bytes held by every buffer, as counted against ``max_bytes``."""
        return sum(buffer.held for buffer in self.buffers.values())

    def over_bound(self) -> bool:
        bound = self.max_bytes
        return bound is not None and not self.blocked and self.held >= bound

    def take(self, key: Key) -> Optional[PartitionBuffer]:
        """Remove and return the partition's buffer (to write it)."""
        return self.buffers.pop(key, None)

    def restore(self, key: Key, buffer: PartitionBuffer) -> None:
        """Put a buffer back after a failed write. Writes run between two ``add()`` calls, so no
        record of the partition arrived meanwhile (a buffer found there is an empty one)."""
        newer = self.buffers.get(key)
        if newer is not None and len(newer):
            raise AssertionError(f"{key}: records were added while its buffer was being written")
        self.buffers[key] = buffer

    def written(self, key: Key, buffer: PartitionBuffer) -> None:
        """The buffer was written: the partition goes on with an empty one (a replay from before
        its last offset is still detected)."""
        fresh = self.buffers[key] = PartitionBuffer(self.keep_keys)
        fresh.last = buffer.last
        if buffer.row_bytes:  # measured already: the next sample (and bound check) comes in the usual step
            fresh.row_bytes, fresh.key_bytes, fresh.next_sample = buffer.row_bytes, buffer.key_bytes, SAMPLE_EVERY

    def drop(self, key: Key) -> None:
        self.buffers.pop(key, None)

    def clear(self) -> None:
        self.buffers.clear()

    def write_early(self, write: WriteFn, what: str) -> int:
        """Write every non-empty buffer through ``write(topic, partition, buffer)`` (the bound was
        reached). A failure puts that buffer back, stops early writes until :meth:`unblock` (the
        checkpoint) and is logged once: the checkpoint's flush meets it again and reports it.
        Returns how many partitions were written."""
        count = 0
        for key in sorted(self.buffers):
            buffer = self.buffers[key]
            if not len(buffer):
                continue
            self.buffers.pop(key)
            try:
                write(key[0], key[1], buffer)
            except Exception as exc:  # noqa: BLE001 - any failure: keep the records for the checkpoint
                self.restore(key, buffer)
                self.blocked = True
                logger.warning("%s: writing %s[%s] early (buffers at the %s-byte bound) failed: %s: %s; "
                               "the records stay buffered for the checkpoint", what, key[0], key[1],
                               self.max_bytes, type(exc).__name__, exc)
                break
            self.written(key, buffer)
            count += 1
        self.early_writes += count
        return count

    def write_early_together(self, write: Callable[[Dict[Key, PartitionBuffer]], None], what: str) -> int:
        """:meth:`write_early` for a sink whose destination takes every partition in one commit
        (``IcebergSink``'s one snapshot): one :meth:`write_together`; a failure puts every buffer
        back, stops early writes until :meth:`unblock` and is logged once."""
        try:
            count = self.write_together(write)
        except Exception as exc:  # noqa: BLE001 - any failure: keep the records for the checkpoint
            self.blocked = True
            logger.warning("%s: writing every partition early (buffers at the %s-byte bound) failed: %s: %s; "
                           "the records stay buffered for the checkpoint", what, self.max_bytes,
                           type(exc).__name__, exc)
            return 0
        self.early_writes += count
        return count

    def write_together(self, write: Callable[[Dict[Key, PartitionBuffer]], None],
                       keys: Optional[List[Key]] = None) -> int:
        """Write every non-empty buffer (or those of ``keys``) in one call of ``write({key:
        buffer})``. On any failure every buffer taken is put back and the error propagates.
        Returns how many were written."""
        buffers = self.buffers
        if keys is None:
            taken = {key: buffer for key, buffer in buffers.items() if len(buffer)}
        else:
            taken = {key: buffers[key] for key in keys if key in buffers and len(buffers[key])}
        if not taken:
            return 0
        for key in taken:
            del self.buffers[key]
        try:
            write(taken)
        except BaseException:
            for key, buffer in taken.items():
                self.restore(key, buffer)
            raise
        for key, buffer in taken.items():
            self.written(key, buffer)
        return len(taken)

    def unblock(self) -> None:
        """A checkpoint runs: early writes may be tried again."""
        self.blocked = False
