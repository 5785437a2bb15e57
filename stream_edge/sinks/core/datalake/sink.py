"""``DataLakeSink``: Kafka batches -> Hive-partitioned Parquet, exactly once, plus silence detection.

See ``stream_edge.lake`` for the layout and the commit protocol, ``records`` for schema rules,
``lake_writer`` for the storage side and ``catalog`` for the optional Iceberg registration.
"""

from __future__ import annotations

import base64
import bisect
import logging
import os
from array import array
from itertools import chain, repeat
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

import pyarrow as pa

from stream_edge.lake import CommitRecord, first_unwritten_index, table_root, validate_hive_columns
from stream_edge.sinks.base import BatchingSink, SinkBackpressureError, SinkBatch
from stream_edge.sinks.base.item import HeadersTuples
from stream_edge.sinks.base.sink import ClientConnectFailureCallback, ClientConnectSuccessCallback
from stream_edge.sinks.core.stream_timeout_tracker import StreamTimeoutTracker
from stream_edge.sinks.storage import display_url, resolve_storage

from .catalog import IcebergRegistrar
from .lake_writer import LakeTableWriter
from .records import RecordTypeError, SchemaConflictError, TableBuilder

__all__: Tuple[str, ...] = ("DataLakeSink", "DEFAULT_STORAGE_URL_ENV")

logger = logging.getLogger(__name__)

DEFAULT_STORAGE_URL_ENV = "STREAM_EDGE_STORAGE_URL"
_COMPRESSIONS = ("none", "snappy", "gzip", "brotli", "lz4", "zstd")
_BACKPRESSURE_SECONDS = 5.0


_CHUNK_ROWS = 2048  # dict records per partition converted to one Arrow chunk at a time
_DICT_ROW_BYTES = 512  # a flat JSON record as a dict, roughly (counted only when not converted)
DEFAULT_MAX_BUFFER_BYTES = 16 * 1024 * 1024


_get = dict.get


def _struct_chunk(values: List[dict]) -> pa.Array:
    """``pa.array(values)`` built column by column: the same fields (in order of first appearance)
    and the same inferred types, about 1.5x faster for flat records (Arrow's struct conversion
    looks every field up in every dict). Raises what ``pa.array`` raises for values it cannot infer."""
    names = list(dict.fromkeys(chain.from_iterable(values)))
    if not names or not all(name.__class__ is str for name in names):
        return pa.array(values)  # no fields, or non-string names: Arrow's own answer
    count = len(values)
    columns = [pa.array(list(map(_get, values, repeat(name, count)))) for name in names]
    return pa.StructArray.from_arrays(columns, names=names)


class _Buffer:
    """Buffer of one topic partition: Arrow chunks plus the newest dict records (< ``_CHUNK_ROWS``).

    Every ``_CHUNK_ROWS`` records the dicts are converted to one Arrow struct chunk (about 15x
    smaller than the dicts for flat JSON); a batch whose chunks disagree in type, or a chunk that
    does not convert, keeps its records as dicts (``pending``), so the flush infers types over the
    whole batch exactly as before. ``offsets``/``timestamps`` are int64 arrays; ``keys`` and
    ``timestamps`` stay empty when the sink does not need them (see ``DataLakeSink._specialize``);
    ``last`` is the newest offset, to detect a rewound partition.
    """

    __slots__ = ("values", "chunks", "chunk_rows", "chunk_bytes", "held", "next_seal", "convert", "keys",
                 "timestamps",
                 "offsets", "last")

    def __init__(self) -> None:
        self.values: List[dict] = []
        self.chunks: List[pa.StructArray] = []
        self.chunk_rows = 0
        self.chunk_bytes = 0  # sum of the chunks' nbytes
        self.held = 0  # bytes counted against the sink's bound: Arrow chunks, or estimated dicts
        self.next_seal = _CHUNK_ROWS  # len(offsets) at which add() calls seal()
        self.convert = True
        self.keys: List[Any] = []
        self.timestamps = array("q")
        self.offsets = array("q")
        self.last = -1

    def seal(self) -> int:
        """Convert the pending dicts to an Arrow chunk; returns how many bytes ``held`` grew by."""
        self.next_seal = len(self.offsets) + _CHUNK_ROWS
        before = self.held
        if self.convert and self.values:
            try:
                chunk = _struct_chunk(self.values)
            except (pa.ArrowInvalid, pa.ArrowTypeError, OverflowError):
                chunk = None
            if chunk is not None and pa.types.is_struct(chunk.type) and (
                    not self.chunks or chunk.type == self.chunks[0].type):
                self.chunks.append(chunk)
                self.chunk_rows += len(chunk)
                self.chunk_bytes += chunk.nbytes
                self.values = []
            else:
                self._unconvert()  # let the flush infer (or diagnose) over the whole batch
        self.held = self.chunk_bytes + len(self.values) * _DICT_ROW_BYTES
        return self.held - before

    def _unconvert(self) -> None:
        rows: List[dict] = []
        for chunk in self.chunks:
            rows.extend(chunk.to_pylist())
        rows.extend(self.values)
        self.values, self.chunks, self.chunk_rows, self.chunk_bytes, self.convert = rows, [], 0, 0, False

    def records(self, start: int) -> Any:
        """The records from index ``start`` on: a list of dicts, or an Arrow table when chunked."""
        if not self.chunks:
            return self.values[start:] if start else self.values
        if self.values:
            self.seal()
            if not self.chunks:  # the last records did not fit the chunks' type
                return self.values[start:] if start else self.values
        table = pa.Table.from_struct_array(pa.chunked_array(self.chunks))
        return table.slice(start) if start else table

    def truncate_from(self, offset: int) -> None:
        """Drop buffered records at or after ``offset`` (the partition was rewound)."""
        keep = bisect.bisect_left(self.offsets, offset)
        if keep >= self.chunk_rows:
            del self.values[keep - self.chunk_rows:]
        else:
            kept, rows = [], 0
            for chunk in self.chunks:
                if rows + len(chunk) > keep:
                    chunk = chunk.slice(0, keep - rows)
                if len(chunk):
                    kept.append(chunk)
                rows += len(chunk)
            self.chunks, self.chunk_rows, self.values = kept, rows, []
        del self.offsets[keep:]
        if self.keys:
            del self.keys[keep:], self.timestamps[keep:]
        self.last = self.offsets[-1] if self.offsets else -1
        self.chunk_bytes = sum(c.nbytes for c in self.chunks)
        self.held = self.chunk_bytes + len(self.values) * _DICT_ROW_BYTES
        self.next_seal = len(self.offsets) + _CHUNK_ROWS


class DataLakeSink(BatchingSink):
    """Writes dict records as Hive-partitioned Parquet files, committed exactly once.

    :param table_name: the table folder (one path level).
    :param storage_url: ``file:///abs/path``, a local path, or ``s3://bucket`` (any S3 endpoint);
        default ``$STREAM_EDGE_STORAGE_URL`` or ``./lake``.
    :param s3_prefix: folder(s) between the storage URL and the table.
    :param hive_columns: partition columns in path order; ``year/month/day/hour`` come from
        ``timestamp_column`` (UTC), any other name is a record field.
    :param timestamp_column: epoch-ms field for time partitions (None: the Kafka timestamp).
    :param compression: Parquet codec: none, snappy, gzip, brotli, lz4, zstd.
    :param row_group_size: max rows per Parquet row group (None: pyarrow default).
    :param s3_endpoint_url: S3 endpoint (default ``AWS_ENDPOINT_URL_S3``/``AWS_ENDPOINT_URL``).
    :param include_kafka_metadata: add ``_kafka_topic/_partition/_offset/_timestamp/_key``.
    :param fsync: fsync files and commit records on local disks.
    :param commit_log_retention: commit records kept per topic partition.
    :param catalog_url: Iceberg REST catalog URL (registration needs ``register_in_catalog``).
    :param catalog_auth_token: bearer token for the catalog (never logged).
    :param catalog_namespace: Iceberg namespace of the table.
    :param register_in_catalog: add every commit's files to the Iceberg table (default off:
        registration is the batch side's job). It shares ``lakehouse register``'s ledger, so
        running both on one table registers each file once (``docs/internals.md``).
    :param auto_discover: create the Iceberg table from the discovered schema if missing.
    :param catalog_properties: extra pyiceberg catalog properties.
    :param max_buffer_bytes: bound on what the sink holds between checkpoints, in bytes of Arrow
        data (records are converted to Arrow every 2,048 records of a partition). When the
        partitions' buffers together reach it, every buffer is written as a lake commit at once
        (before the checkpoint: still exactly once, the commit log skips replayed offsets), so
        memory stays bounded whatever the commit interval. Default 16 MiB; None: no bound.
    :param stream_timeout_ms: per-key silence threshold (see ``StreamTimeoutTracker``).
    :param on_stream_timeout: ``callback(raw_key)`` fired once per silent key.

    Example::

        sink = DataLakeSink(table_name="sensor_readings", storage_url="s3://lake",
                            s3_prefix="time-series", hive_columns=["year", "month", "day"],
                            timestamp_column="ts_ms")
        sdf.sink(sink)
    """

    def __init__(
        self,
        table_name: str,
        storage_url: Optional[str] = None,
        s3_prefix: str = "",
        hive_columns: Optional[Sequence[str]] = None,
        timestamp_column: Optional[str] = None,
        compression: str = "snappy",
        row_group_size: Optional[int] = None,
        s3_endpoint_url: Optional[str] = None,
        include_kafka_metadata: bool = False,
        fsync: bool = True,
        commit_log_retention: int = 1000,
        catalog_url: Optional[str] = None,
        catalog_auth_token: Optional[str] = None,
        catalog_namespace: str = "default",
        register_in_catalog: bool = False,
        auto_discover: bool = True,
        catalog_properties: Optional[Dict[str, str]] = None,
        max_buffer_bytes: Optional[int] = DEFAULT_MAX_BUFFER_BYTES,
        stream_timeout_ms: Optional[int] = None,
        on_stream_timeout: Optional[Callable[[Any], None]] = None,
        on_client_connect_success: Optional[ClientConnectSuccessCallback] = None,
        on_client_connect_failure: Optional[ClientConnectFailureCallback] = None,
    ) -> None:
        super().__init__(on_client_connect_success, on_client_connect_failure)
        if compression not in _COMPRESSIONS:
            raise ValueError(f"compression must be one of {_COMPRESSIONS}, got {compression!r}")
        if row_group_size is not None and row_group_size <= 0:
            raise ValueError(f"row_group_size must be positive, got {row_group_size}")
        if max_buffer_bytes is not None and max_buffer_bytes <= 0:
            raise ValueError(f"max_buffer_bytes must be positive or None, got {max_buffer_bytes}")
        self.max_buffer_bytes = max_buffer_bytes
        self.early_commits = 0  # lake commits written because the buffers reached max_buffer_bytes
        self._early_blocked = False  # storage refused an early commit: wait for the checkpoint
        self.table_name = table_name
        self.storage_url = storage_url or os.environ.get(DEFAULT_STORAGE_URL_ENV) or "lake"
        self.s3_prefix = s3_prefix or ""
        self.hive_columns = validate_hive_columns(hive_columns)
        self.timestamp_column = timestamp_column
        self.compression = compression
        self.row_group_size = row_group_size
        self._s3_endpoint_url = s3_endpoint_url
        self._fsync = fsync
        self._retention = commit_log_retention
        table_root("/", self.s3_prefix, table_name)  # validate names early
        self._builder = TableBuilder(self.hive_columns, timestamp_column, include_kafka_metadata)
        self._buffers: Dict[Tuple[str, int], _Buffer] = {}
        self._writer: Optional[LakeTableWriter] = None
        self._registrar: Optional[IcebergRegistrar] = None
        self._registered: Dict[Tuple[str, int], int] = {}
        self._last_seen_commit: Optional[CommitRecord] = None
        if register_in_catalog:
            if not catalog_url:
                raise ValueError("register_in_catalog=True needs catalog_url")
            self._registrar = IcebergRegistrar(
                catalog_url, catalog_namespace, table_name, token=catalog_auth_token,
                hive_columns=self.hive_columns, create_if_missing=auto_discover,
                properties=catalog_properties)
        elif catalog_url:
            logger.info("catalog_url given but register_in_catalog is off: the batch side registers files")
        # The contract's name (docs/design.md): the sink holds its tracker as ``sink._timeout``.
        self._timeout = StreamTimeoutTracker(stream_timeout_ms, on_stream_timeout)  # also picks add()

    # -- lifecycle ------------------------------------------------------------------------------
    @property
    def table_uri(self) -> Optional[str]:
        """The table root inside the filesystem (after setup)."""
        return self._writer.root if self._writer is not None else None

    def stats(self) -> Dict[str, int]:
        """What this sink has done so far (metrics read it between batches): Parquet files, bytes
        and rows published to the lake, and silence events fired."""
        writer = self._writer
        return {"files_written": writer.files_written if writer else 0,
                "bytes_written": writer.bytes_written if writer else 0,
                "rows_written": writer.rows_written if writer else 0,
                "silence_events": self._tracker.fired_total}

    def setup(self) -> None:
        """Open the storage, restore the table schema from the commit log, start the tracker."""
        if self._writer is None:
            filesystem, base = resolve_storage(self.storage_url, endpoint_url=self._s3_endpoint_url)
            root = table_root(base, self.s3_prefix, self.table_name)
            writer = LakeTableWriter(filesystem, root, compression=self.compression,
                                     row_group_size=self.row_group_size, fsync=self._fsync,
                                     commit_log_retention=self._retention)
            if writer.local:
                os.makedirs(root, exist_ok=True)
            else:
                bucket = root.split("/", 1)[0]
                from pyarrow import fs as pafs
                if filesystem.get_file_info(bucket).type == pafs.FileType.NotFound:  # type: ignore[attr-defined]
                    raise FileNotFoundError(f"bucket {bucket!r} of {display_url(self.storage_url)} does not exist")
            for record in writer.latest_commits_of_table():
                if record.schema_ipc:
                    self._builder.remember(_decode_schema(record.schema_ipc))
            self._writer = writer
            logger.info("DataLakeSink writing table %s under %s", self.table_name, display_url(self.storage_url))
            if self._registrar is not None:
                self._registrar.attach_lake(writer.fs, writer.root, writer.local)
                self._registrar.connect()
        self._tracker.start()

    def cleanup(self) -> None:
        """Stop the silence tracker's thread (called by the runtime at shutdown)."""
        self._tracker.stop()

    # -- per record -----------------------------------------------------------------------------
    @property
    def _timeout(self) -> StreamTimeoutTracker:
        """The silence tracker (``sink._timeout`` in the contract, docs/design.md); assigning one re-wires ``add``."""
        return self._tracker

    @_timeout.setter
    def _timeout(self, tracker: StreamTimeoutTracker) -> None:
        self._tracker = tracker
        self._specialize()

    def _specialize(self) -> None:
        """Pick the cheapest ``add`` for this configuration (it runs once per record).

        Keys and Kafka timestamps are buffered only when something uses them: the tracker, the
        metadata columns, or time partitions taken from the Kafka timestamp.
        """
        needs_all = (self._tracker.enabled or self._builder.include_kafka_metadata
                     or (self._builder.time_columns and self.timestamp_column is None))
        self.add = self._add_full if needs_all else self._add_lean  # type: ignore[method-assign]

    def add(self, value: Any, key: Any, timestamp: int, headers: HeadersTuples,
            topic: str, partition: int, offset: int) -> None:
        """Buffer a record of ``topic[partition]`` (dicts only); touches the silence tracker."""
        self._add_full(value, key, timestamp, headers, topic, partition, offset)

    def _add_full(self, value: Any, key: Any, timestamp: int, headers: HeadersTuples,
                  topic: str, partition: int, offset: int) -> None:
        self._tracker.touch(key, (topic, partition))  # returns at once when disabled or for None keys
        if value.__class__ is not dict and not isinstance(value, dict):
            raise RecordTypeError(value, topic, partition, offset)
        buffer = self._buffers.get((topic, partition))
        if buffer is None or offset <= buffer.last:
            buffer = self._buffer_for(topic, partition, offset)
        buffer.last = offset
        buffer.values.append(value)
        buffer.offsets.append(offset)
        buffer.keys.append(key)
        buffer.timestamps.append(timestamp)
        if len(buffer.offsets) >= buffer.next_seal:
            self._seal(buffer)

    def _add_lean(self, value: Any, key: Any, timestamp: int, headers: HeadersTuples,
                  topic: str, partition: int, offset: int) -> None:
        buffer = self._buffers.get((topic, partition))
        if buffer is None or offset <= buffer.last or value.__class__ is not dict:
            if not isinstance(value, dict):
                raise RecordTypeError(value, topic, partition, offset)
            if buffer is None or offset <= buffer.last:
                buffer = self._buffer_for(topic, partition, offset)
        buffer.last = offset
        buffer.values.append(value)
        offsets = buffer.offsets
        offsets.append(offset)
        if len(offsets) >= buffer.next_seal:
            self._seal(buffer)

    @property
    def buffered_bytes(self) -> int:
        """Bytes held in the partitions' buffers, as counted against ``max_buffer_bytes``."""
        return sum(buffer.held for buffer in self._buffers.values())

    def _seal(self, buffer: _Buffer) -> None:
        """Convert a buffer's newest records to Arrow; at the bound, commit every buffer early."""
        buffer.seal()
        bound = self.max_buffer_bytes
        if bound is None or self._early_blocked or self.buffered_bytes < bound:
            return
        written: List[Tuple[CommitRecord, pa.Schema]] = []
        try:
            for topic, partition in sorted(self._buffers):
                if not self._buffers[(topic, partition)].offsets:
                    continue
                if not self._write_other(topic, partition, written):
                    self._early_blocked = True
                    return
                self.early_commits += 1
        finally:
            self._register_all(written)

    def _buffer_for(self, topic: str, partition: int, offset: int) -> _Buffer:
        buffer = self._buffers.get((topic, partition))
        if buffer is None:
            buffer = self._buffers[(topic, partition)] = _Buffer()
        else:
            # The partition was rewound (replay after a pause or a lost assignment): what was
            # buffered from this offset on is coming again, so keep one copy only.
            buffer.truncate_from(offset)
        return buffer

    # -- checkpoints ----------------------------------------------------------------------------
    def flush(self, topic: str, partition: int) -> None:
        """Write the partition's records as one lake commit, then run the silence check."""
        self._early_blocked = False
        try:
            buffer = self._buffers.pop((topic, partition), None)
            if self._registrar is None:
                if buffer is not None and buffer.offsets:
                    self._write_buffer(topic, partition, buffer)
                return
            # Registering: the checkpoint's first flush writes every partition's records (each its
            # own lake commit, as an early commit would) and adds all their files to the Iceberg
            # table in one catalog commit; the other partitions' flushes then find nothing left.
            written: List[Tuple[CommitRecord, pa.Schema]] = []
            try:
                if buffer is not None and buffer.offsets:
                    self._collect(self._write_buffer(topic, partition, buffer), written)
                for other in sorted(self._buffers):
                    if self._buffers[other].offsets:
                        self._write_other(other[0], other[1], written)
            finally:
                self._register_all(written)
        finally:
            self._tracker.check_now()

    def _write_other(self, topic: str, partition: int, written: List[Tuple[CommitRecord, pa.Schema]]) -> bool:
        """Write another partition's buffer before its own flush; False if storage refused it (the
        records stay for that flush, which reports the failure to the runtime)."""
        pending = self._buffers.pop((topic, partition))
        try:
            self._collect(self._write_buffer(topic, partition, pending), written)
        except SinkBackpressureError:
            self._buffers[(topic, partition)] = pending
            return False
        # The partition goes on from here: a replay from before this offset is still detected.
        self._buffers[(topic, partition)] = _Buffer()
        self._buffers[(topic, partition)].last = pending.last
        return True

    @staticmethod
    def _collect(result: Optional[Tuple[CommitRecord, pa.Schema]],
                 written: List[Tuple[CommitRecord, pa.Schema]]) -> None:
        if result is not None:
            written.append(result)

    def on_paused(self, topic: str, partition: int) -> None:
        self._buffers.pop((topic, partition), None)

    def on_revoke(self, topic: str, partition: int) -> None:
        """The partition moved to another instance (rebalance): drop its buffer, and forget its
        keys in the silence tracker so they are reported once, by their new owner."""
        self._buffers.pop((topic, partition), None)
        if self._writer is not None:  # its next owner here claims it anew in the commit log
            self._writer.release(topic, partition)
        dropped = self._tracker.forget_partition((topic, partition))
        if dropped:
            logger.info("%s[%s] revoked: the silence tracker forgets %d key(s)", topic, partition, dropped)

    def write(self, batch: SinkBatch) -> None:
        """Write a :class:`SinkBatch` (the ``BatchingSink`` API) as one lake commit."""
        buffer = _Buffer()
        for item in batch:
            if not isinstance(item.value, dict):
                raise RecordTypeError(item.value, batch.topic, batch.partition, item.offset)
            buffer.values.append(item.value)
            buffer.keys.append(item.key)
            buffer.timestamps.append(item.timestamp)
            buffer.offsets.append(item.offset)
        buffer.convert = False  # one batch, converted once by the flush
        if buffer.offsets:
            written: List[Tuple[CommitRecord, pa.Schema]] = []
            self._collect(self._write_buffer(batch.topic, batch.partition, buffer), written)
            self._register_all(written)

    def _write_buffer(self, topic: str, partition: int, buffer: _Buffer) -> Optional[Tuple[CommitRecord, pa.Schema]]:
        """Write the buffer as one lake commit; returns the commit and its file schema when it
        should be registered in the catalog (the caller registers, several commits at once)."""
        if self._writer is None:
            self.setup()
        writer = self._writer
        assert writer is not None  # setup() creates it or raises
        try:
            latest = writer.prepare(topic, partition)
        except OSError as exc:
            raise self._backpressure(topic, partition, "reading the commit log", exc) from exc
        if latest is not None and latest.schema_ipc and latest is not self._last_seen_commit:
            # Another writer (or an earlier life of this one) may have added columns.
            self._builder.remember(_decode_schema(latest.schema_ipc))
            self._last_seen_commit = latest
        if self._registrar is not None and latest is not None:
            # A crash between the lake commit and the registration leaves the newest commit
            # unregistered; registering is idempotent (the registration ledger).
            self._register(latest)
        offsets = buffer.offsets
        last_committed = latest.last_offset if latest is not None else None
        start = first_unwritten_index(offsets, last_committed)
        if start:
            logger.info("%s[%s]: skipping %d record(s) at offsets %d..%d already committed to the lake "
                        "(last committed offset %d)", topic, partition, start, offsets[0],
                        offsets[start - 1], last_committed)
        if start == len(offsets):
            return None
        values = buffer.records(start)
        keys, timestamps = buffer.keys, buffer.timestamps
        if start:
            keys, timestamps, offsets = keys[start:], timestamps[start:], offsets[start:]
        parts = self._builder.build(values, offsets, timestamps, keys, topic, partition)
        schema = _union_schema([p.table.schema for p in parts])
        try:
            record = writer.commit(
                topic, partition, offsets[0], offsets[-1], parts, rows=len(offsets),
                schema={f.name: str(f.type) for f in schema},
                schema_ipc=_encode_schema(pa.schema([pa.field(n, t) for n, t in self._builder.known.items()])),
            )
        except OSError as exc:
            raise self._backpressure(topic, partition, "writing the lake commit", exc) from exc
        return (record, schema) if self._registrar is not None else None

    def _register_all(self, written: List[Tuple[CommitRecord, pa.Schema]]) -> None:
        """Register lake commits just written, all in one catalog commit (one already registered
        by this sink is skipped)."""
        if not written or self._registrar is None or self._writer is None:
            return
        root = self._writer.root
        entries = [(record, [path[len(root) + 1:] for path in self._writer.committed_file_paths(record)], schema)
                   for record, schema in written
                   if self._registered.get((record.topic, record.partition)) != record.last_offset]
        self._registrar.register_many(entries)
        for record, _paths, _schema in entries:
            self._registered[(record.topic, record.partition)] = record.last_offset

    def _register(self, record: CommitRecord) -> None:
        """Register a commit read back from the lake (its file schema decoded from the commit)."""
        if self._registered.get((record.topic, record.partition)) == record.last_offset:
            return  # the common case on every flush: nothing to decode
        schema = _decode_schema(record.schema_ipc) if record.schema_ipc else None
        if schema is None:
            raise ValueError(f"commit {record.topic}[{record.partition}]@{record.last_offset} has no schema")
        self._register_all([(record, pa.schema([schema.field(n) for n in record.schema if n in schema.names]))])

    @staticmethod
    def _backpressure(topic: str, partition: int, what: str, exc: Exception) -> SinkBackpressureError:
        logger.warning("DataLakeSink: storage failed while %s for %s[%s]: %s; pausing %.0f s and replaying "
                       "from the last committed offset", what, topic, partition, exc, _BACKPRESSURE_SECONDS)
        return SinkBackpressureError(_BACKPRESSURE_SECONDS, topic, partition)


def _union_schema(schemas: List[pa.Schema]) -> pa.Schema:
    return schemas[0] if len(schemas) == 1 else pa.unify_schemas(schemas)


def _encode_schema(schema: pa.Schema) -> str:
    return base64.b64encode(schema.serialize().to_pybytes()).decode("ascii")


def _decode_schema(text: str) -> pa.Schema:
    return pa.ipc.read_schema(pa.py_buffer(base64.b64decode(text)))


# Re-exported for callers that catch them from the sink module.
__all__ += ("RecordTypeError", "SchemaConflictError")
