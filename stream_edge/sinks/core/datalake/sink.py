"""``DataLakeSink``: Kafka batches -> Hive-partitioned Parquet, exactly once, plus silence detection.

See ``stream_edge.lake`` for the layout and the commit protocol, and
``stream_edge.sinks.buffered_table`` for what every table sink shares: ``add()`` and its per-record
checks (``stream_edge.sinks.record_types``: a record the table cannot hold is that record's error),
the buffers and the byte bound (``stream_edge.sinks.arrow_buffer``), early writes, ``flush()`` and
the fault classifier. This sink keeps what is its own: tombstones and the silence tracker per
record, one lake commit per partition (``records`` for the Arrow tables and hive paths,
``lake_writer`` for the storage side) and the optional Iceberg registration (``catalog``).
"""

from __future__ import annotations

import base64
import logging
import os
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

import pyarrow as pa

from stream_edge.errors import OUTAGE
from stream_edge.lake import CommitRecord, first_unwritten_index, table_root, validate_hive_columns
from stream_edge.lake.partitioning import TIME_PARTITION_COLUMNS
from stream_edge.sinks.arrow_buffer import PartitionBuffer
from stream_edge.sinks.arrow_memory import use_edge_memory_pool
from stream_edge.sinks.base import SinkBackpressureError, SinkBatch
from stream_edge.sinks.base.sink import ClientConnectFailureCallback, ClientConnectSuccessCallback, partition_args
from stream_edge.sinks.buffered_table import BufferedTableSink, write_fault_kind
from stream_edge.sinks.core.stream_timeout_tracker import StreamTimeoutTracker
from stream_edge.sinks.record_types import ColumnTypes
from stream_edge.sinks.storage import display_url, resolve_storage
from stream_edge.sinks.storage_faults import PermanentStorageError, StorageBackoff

from .catalog import IcebergRegistrar
from .lake_writer import DICTIONARY_ENCODINGS, LakeTableWriter
from .records import RecordTypeError, SchemaConflictError, TableBuilder

__all__: Tuple[str, ...] = ("DataLakeSink", "DEFAULT_STORAGE_URL_ENV")

logger = logging.getLogger(__name__)

DEFAULT_STORAGE_URL_ENV = "STREAM_EDGE_STORAGE_URL"
_COMPRESSIONS = ("none", "snappy", "gzip", "brotli", "lz4", "zstd")
# 8 MiB: over a 6M-record backlog the process peaked at 232 MB, at 16 MiB at 271 MB (writing a
# buffer as Parquet takes about twice the buffer again for a moment; bench/README.md, edge_soak).
DEFAULT_MAX_BUFFER_BYTES = 8 * 1024 * 1024
Written = List[Tuple[CommitRecord, pa.Schema]]


class DataLakeSink(BufferedTableSink):
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
    :param dictionary_encoding: which columns get Parquet dictionary encoding: ``"strings"``
        (default: string and binary columns; pyarrow's default, ``"all"``, also hashes every id,
        timestamp and measurement into a dictionary as large as the column, ~2x the encoding CPU
        for larger files), ``"all"`` or ``"none"``.
    :param s3_endpoint_url: S3 endpoint (default ``AWS_ENDPOINT_URL_S3``/``AWS_ENDPOINT_URL``).
    :param include_kafka_metadata: add ``_kafka_topic/_partition/_offset/_timestamp/_key`` and
        ``_kafka_tombstone``; a tombstone (value None) then lands as a row with
        ``_kafka_tombstone = true``.
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
        data plus the measured size of the dicts not yet converted (records are converted to Arrow
        every 512 records of a partition, sooner when large; ``stream_edge.sinks.arrow_buffer``). When the
        partitions' buffers together reach it, every buffer is written as a lake commit at once
        (before the checkpoint: still exactly once, the commit log skips replayed offsets), so
        memory stays bounded whatever the commit interval. Default 8 MiB; None: no bound.
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
        dictionary_encoding: str = "strings",
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
        if compression not in _COMPRESSIONS:
            raise ValueError(f"compression must be one of {_COMPRESSIONS}, got {compression!r}")
        if dictionary_encoding not in DICTIONARY_ENCODINGS:
            raise ValueError(f"dictionary_encoding must be one of {DICTIONARY_ENCODINGS}, got {dictionary_encoding!r}")
        if row_group_size is not None and row_group_size <= 0:
            raise ValueError(f"row_group_size must be positive, got {row_group_size}")
        self.table_name = table_name
        self.storage_url = storage_url or os.environ.get(DEFAULT_STORAGE_URL_ENV) or "lake"
        self.s3_prefix = s3_prefix or ""
        self.hive_columns = validate_hive_columns(hive_columns)
        self.timestamp_column = timestamp_column
        self.compression = compression
        self.row_group_size = row_group_size
        self.dictionary_encoding = dictionary_encoding
        self._s3_endpoint_url = s3_endpoint_url
        self._fsync = fsync
        self._retention = commit_log_retention
        table_root("/", self.s3_prefix, table_name)  # validate names early
        self._builder = TableBuilder(self.hive_columns, timestamp_column, include_kafka_metadata)
        derived = [c for c in self.hive_columns if c in TIME_PARTITION_COLUMNS]
        types = ColumnTypes(
            hive_value_columns=[c for c in self.hive_columns if c not in TIME_PARTITION_COLUMNS],
            reserved={c: (f"records have a field '{c}' but '{c}' is a hive column derived from the timestamp; "
                          f"rename the field or remove '{c}' from hive_columns") for c in derived},
            timestamp_column=timestamp_column if derived else None)
        name = f"DataLakeSink table {table_name!r}"
        super().__init__(name, types, max_buffer_bytes, keep_keys=True, backoff=StorageBackoff(name),
                         on_client_connect_success=on_client_connect_success,
                         on_client_connect_failure=on_client_connect_failure)
        self._flush_every_partition = register_in_catalog  # one catalog commit per checkpoint
        self._writer: Optional[LakeTableWriter] = None
        self._registrar: Optional[IcebergRegistrar] = None
        self._registered: Dict[Tuple[str, int], int] = {}
        # lake commits written but not yet registered (the catalog did not answer): retried at
        # every flush, which backs off while the catalog is down (an outage, never a record's error)
        self._unregistered: Written = []
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
        and rows published to the lake, silence events fired, storage faults."""
        writer = self._writer
        return {"files_written": writer.files_written if writer else 0,
                "bytes_written": writer.bytes_written if writer else 0,
                "rows_written": writer.rows_written if writer else 0,
                "silence_events": self._tracker.fired_total,
                **super().stats()}

    @property
    def early_commits(self) -> int:
        """Lake commits written because the buffers reached ``max_buffer_bytes``."""
        return self.early_writes

    def setup(self) -> None:
        """Open the storage, restore the table schema from the commit log, start the tracker;
        Arrow allocates from the system allocator from now on (``stream_edge.sinks.arrow_memory``)."""
        use_edge_memory_pool()
        if self._writer is None:
            filesystem, base = resolve_storage(self.storage_url, endpoint_url=self._s3_endpoint_url)
            root = table_root(base, self.s3_prefix, self.table_name)
            writer = LakeTableWriter(filesystem, root, compression=self.compression,
                                     row_group_size=self.row_group_size, fsync=self._fsync,
                                     dictionary_encoding=self.dictionary_encoding,
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
                    self._learn(_decode_schema(record.schema_ipc))
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
        """Route records the cheapest way (``BufferedTableSink.route_records``): keys and Kafka
        timestamps are buffered only when something uses them (the tracker, the metadata columns,
        time partitions taken from the Kafka timestamp); every record is screened only when the
        tracker runs."""
        builder = self._builder
        tracking = self._tracker.enabled
        keep = tracking or builder.include_kafka_metadata or (builder.time_columns and self.timestamp_column is None)
        self._touch = self._tracker.touch  # per record: bound once
        self._tombstones = builder.include_kafka_metadata
        self.route_records(bool(keep), self._touch_and_check if tracking else None)

    def check_record(self, value: Any, key: Any, topic: str, partition: int, offset: int) -> dict:
        """A dict, or a tombstone (value None) with ``include_kafka_metadata``: a row with
        ``_kafka_tombstone = true`` (``records``); anything else is that record's
        :class:`RecordTypeError` (a field that does not fit its column: :class:`SchemaConflictError`,
        ``stream_edge.sinks.record_types``)."""
        if value is None and self._builder.include_kafka_metadata:
            self._builder.mark_tombstone(topic, partition, offset)
            return {}
        if isinstance(value, dict):
            return value
        raise RecordTypeError(value, topic, partition, offset)

    def _touch_and_check(self, value: Any, key: Any, topic: str, partition: int, offset: int) -> dict:
        """Every record, when the silence tracker runs: the record's key was seen (a tombstone is
        not the stream publishing: not touched, docs/design.md), then :meth:`check_record`."""
        if value is not None or not self._tombstones:
            self._touch(key, (topic, partition))  # returns at once for None keys
            if value.__class__ is dict:
                return value
        return self.check_record(value, key, topic, partition, offset)

    def written_early(self) -> None:
        """The early lake commits are registered at once (when registering)."""
        try:
            self._register_all()
        except Exception as exc:  # noqa: BLE001 - the records are in the lake: not this record's error
            logger.warning("%s: registering the early lake commits in the catalog failed (%s: %s); "
                           "retried at the next checkpoint", self._backoff.name, type(exc).__name__, exc)

    # -- checkpoints ----------------------------------------------------------------------------
    def flush(self, *args: Any, **kwargs: Any) -> None:
        """``flush(topic, partition)``: write the partition's records as one lake commit (when
        registering: every partition's, each its own commit, then all their files in one catalog
        commit), then run the silence check.

        Raises only what storage does (a record's content was checked by ``add()``):
        :class:`SinkBackpressureError` for a transient fault (with exponential backoff),
        :class:`PermanentStorageError` for a permanent one. Either way the partition's records
        stay buffered until the runtime pauses (and replays) it or stops."""
        try:
            super().flush(*args, **kwargs)
            if self._registrar is not None:
                self._register_or_back_off(*partition_args(args, kwargs))
        finally:
            self._tracker.check_now()

    def _register_or_back_off(self, topic: Optional[str], partition: Optional[int]) -> None:
        """Register what waits; a catalog that does not answer (an outage) is backpressure with
        exponential backoff (the partition pauses, is replayed, and the commits stay waiting);
        any other registration error stops the application."""
        try:
            self._register_all()
        except Exception as exc:
            if write_fault_kind(exc) != OUTAGE:
                raise
            delay = self._backoff.transient((topic, partition), f"registering lake commits in the Iceberg catalog "
                                                               f"{self._registrar.identifier if self._registrar else ''}",
                                            exc)
            raise SinkBackpressureError(delay, topic, partition) from exc

    def on_revoke(self, topic: str, partition: int) -> None:
        """The partition moved to another instance (rebalance): drop its buffer, and forget its
        keys in the silence tracker so they are reported once, by their new owner."""
        super().on_revoke(topic, partition)
        if self._writer is not None:  # its next owner here claims it anew in the commit log
            self._writer.release(topic, partition)
        dropped = self._tracker.forget_partition((topic, partition))
        if dropped:
            logger.info("%s[%s] revoked: the silence tracker forgets %d key(s)", topic, partition, dropped)

    def write(self, batch: SinkBatch) -> None:
        """Write a :class:`SinkBatch` (the ``BatchingSink`` API) as one lake commit; a record the
        table cannot hold raises before anything is written."""
        super().write(batch)
        if self._registrar is not None:
            self._register_or_back_off(batch.topic, batch.partition)

    def write_buffers(self, taken: Dict[Tuple[str, int], PartitionBuffer], flushed: Optional[Tuple[str, int]]) -> None:
        """One lake commit per partition; queued for registration when registering."""
        for (topic, partition), buffer in taken.items():
            result = self._write_buffer(topic, partition, buffer)
            if result is not None:
                self._defer([result])

    def _learn(self, schema: pa.Schema) -> None:
        """Columns written earlier (by this table's commits): remembered for the files' schema and
        adopted by the per-record check."""
        self._types.adopt(schema)

    def _write_buffer(self, topic: str, partition: int, buffer: PartitionBuffer) -> Optional[Tuple[CommitRecord, pa.Schema]]:
        """Write the buffer as one lake commit; returns the commit and its file schema when it
        should be registered in the catalog (the caller registers, several commits at once)."""
        if self._writer is None:
            self.setup()
        writer = self._writer
        assert writer is not None  # setup() creates it or raises
        try:
            latest = writer.prepare(topic, partition)
        except OSError as exc:
            raise self._storage_fault(topic, partition, f"reading the commit log of {topic}[{partition}] "
                                      f"under {writer.root}", exc) from exc
        if latest is not None and latest.schema_ipc and latest is not self._last_seen_commit:
            # Another writer (or an earlier life of this one) may have added columns.
            self._learn(_decode_schema(latest.schema_ipc))
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
            self._backoff.succeeded((topic, partition))
            return None
        types = self._types.types
        values = buffer.table(start, types)  # typed by the checks of add(): no conflict comes out of it
        keys, timestamps = buffer.keys, buffer.timestamps
        if start:
            keys, timestamps, offsets = keys[start:], timestamps[start:], offsets[start:]
        parts = self._builder.build(values, offsets, timestamps, keys, topic, partition)
        schema = parts[0].table.schema  # the parts are rows of one table
        columns = set(schema.names) | self._types.committed
        files = ", ".join(sorted({part.hive_path or "." for part in parts}))
        try:
            record = writer.commit(
                topic, partition, offsets[0], offsets[-1], parts, rows=len(offsets),
                schema={f.name: str(f.type) for f in schema},
                schema_ipc=_encode_schema(pa.schema([pa.field(n, t) for n, t in types.items() if n in columns])),
            )
        except OSError as exc:
            raise self._storage_fault(topic, partition, f"writing the lake commit of {topic}[{partition}] "
                                      f"(offsets {offsets[0]}..{offsets[-1]}, files under {writer.root}/{{{files}}})",
                                      exc) from exc
        self._types.mark_committed(schema.names)
        self._backoff.succeeded((topic, partition))
        return (record, schema) if self._registrar is not None else None

    def _storage_fault(self, topic: str, partition: int, what: str, exc: OSError) -> Exception:
        """A storage error, classified (``BufferedTableSink.fault``): transient -> backpressure
        with backoff; permanent -> a :class:`PermanentStorageError` naming the table, the
        partition and the files."""
        return self.fault(exc, (topic, partition), what, topic, partition)

    def _defer(self, written: Written) -> None:
        """Queue lake commits for registration (none when not registering; each commit once)."""
        if self._registrar is None:
            return
        waiting = {(r.topic, r.partition, r.last_offset) for r, _schema in self._unregistered}
        for record, schema in written:
            if (record.topic, record.partition, record.last_offset) not in waiting:
                self._unregistered.append((record, schema))

    def _register_all(self) -> None:
        """Register the lake commits that wait, all in one catalog commit (one already registered
        by this sink is skipped); on failure they keep waiting."""
        if not self._unregistered or self._registrar is None or self._writer is None:
            return
        root = self._writer.root
        entries = [(record, [path[len(root) + 1:] for path in self._writer.committed_file_paths(record)], schema)
                   for record, schema in self._unregistered
                   if self._registered.get((record.topic, record.partition)) != record.last_offset]
        # one catalog commit per round, each holding at most one commit of a partition (the oldest first)
        rounds: List[list] = []
        for entry in sorted(entries, key=lambda e: e[0].last_offset):
            key = (entry[0].topic, entry[0].partition)
            for group in rounds:
                if all((r.topic, r.partition) != key for r, _p, _s in group):
                    group.append(entry)
                    break
            else:
                rounds.append([entry])
        for group in rounds:
            self._registrar.register_many(group)
            done = {(r.topic, r.partition, r.last_offset) for r, _p, _s in group}
            self._unregistered = [(r, schema) for r, schema in self._unregistered
                                  if (r.topic, r.partition, r.last_offset) not in done]
            for record, _paths, _schema in group:
                if self._registered.get((record.topic, record.partition), -1) < record.last_offset:
                    self._registered[(record.topic, record.partition)] = record.last_offset
        self._unregistered = []  # the rest were registered before (by this sink)

    def _register(self, record: CommitRecord) -> None:
        """Queue a commit read back from the lake for registration (its file schema decoded from
        the commit): registered with the next ones, at the latest at the checkpoint."""
        if self._registered.get((record.topic, record.partition)) == record.last_offset:
            return  # the common case on every flush: nothing to decode
        schema = _decode_schema(record.schema_ipc) if record.schema_ipc else None
        if schema is None:
            raise ValueError(f"commit {record.topic}[{record.partition}]@{record.last_offset} has no schema")
        self._defer([(record, pa.schema([schema.field(n) for n in record.schema if n in schema.names]))])


def _encode_schema(schema: pa.Schema) -> str:
    return base64.b64encode(schema.serialize().to_pybytes()).decode("ascii")


def _decode_schema(text: str) -> pa.Schema:
    return pa.ipc.read_schema(pa.py_buffer(base64.b64decode(text)))


# Re-exported for callers that catch them from the sink module.
__all__ += ("RecordTypeError", "SchemaConflictError", "PermanentStorageError")
