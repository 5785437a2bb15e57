"""``IcebergSink``: processed records appended to an Apache Iceberg table (Quix Streams 3.x API).

At each checkpoint the records buffered for every topic partition become one Iceberg append
(Parquet data files and one snapshot whose summary carries each partition's offset). Every value must be a dict; its fields are columns, plus ``_timestamp`` (the message
timestamp, ``timestamp``) and ``_key`` (the message key as UTF-8 ``string``). A new field becomes a
new optional column (schema evolution, type from its values); a field seen only as null gets no
column until it has a value; a value that does not fit its column's type is an error naming the
record (topic, partition, offset) and the field.

**Exactly once.** Each snapshot carries, in its summary, the last Kafka offset written for every
topic partition the sink has written (``stream-edge.kafka-offset.<topic>.<partition>``). Before
writing, the sink reads the committed offset of the batch's partition from the newest snapshot
that has it and skips records at or below it, so a replay after a crash (even ``kill -9`` between
the append and the Kafka commit) adds no duplicate.

**Memory.** Records are converted to Arrow every 2,048 records of a partition (about 15x smaller
than the dicts). When the partitions' buffers together reach ``max_buffer_bytes`` (default
16 MiB), they are appended at once, before the checkpoint (still exactly once: the offsets in the
snapshot make a replay skip them), so memory stays bounded whatever the commit interval.

Catalogs: ``data_catalog_spec="aws_glue"`` with :class:`AWSIcebergConfig` (as in Quix), or
``data_catalog_spec="rest"`` with :class:`RESTIcebergConfig` (an edge extension: any Iceberg REST
catalog). A catalog that refuses or cannot be reached, or a commit that keeps conflicting, raises
:class:`SinkBackpressureError`: the partition is paused and replayed.

Needs the ``edge-iceberg`` extra (``pip install streaming-lakehouse[edge-iceberg]``; ``aws_glue`` also
needs ``boto3``); this module imports without it.

Example::

    from stream_edge.sinks.community.iceberg import IcebergSink, RESTIcebergConfig

    sink = IcebergSink(table_name="lake.readings", config=RESTIcebergConfig("http://127.0.0.1:8181"),
                       data_catalog_spec="rest")
    sdf.sink(sink)
"""

from __future__ import annotations

import logging
import time
from datetime import datetime, timezone
from typing import Any, Dict, List, Literal, Optional, Tuple

from stream_edge.exceptions import QuixException
from stream_edge.sinks.base.batch import SinkBatch
from stream_edge.sinks.base.exceptions import SinkBackpressureError
from stream_edge.sinks.base.item import HeadersTuples, SinkItem
from stream_edge.sinks.base.sink import (BatchingSink, ClientConnectFailureCallback, ClientConnectSuccessCallback,
                                         partition_args)
from stream_edge.sinks.community.iceberg_config import AWSIcebergConfig, BaseIcebergConfig, RESTIcebergConfig

__all__ = ("IcebergSink", "AWSIcebergConfig", "RESTIcebergConfig", "BaseIcebergConfig", "IcebergSinkException",
           "IcebergCatalogUnreachableError")

logger = logging.getLogger(__name__)

_EXTRA = "pip install streaming-lakehouse[edge-iceberg]"
OFFSET_PROPERTY = "stream-edge.kafka-offset."
"""Prefix of the snapshot summary properties holding the last written offset per topic partition."""
DataCatalogSpec = Literal["aws_glue", "rest"]
_COMMIT_ATTEMPTS = 5
_CHUNK_ROWS = 2048  # records of a partition converted to one Arrow chunk at a time
_DICT_ROW_BYTES = 512  # a flat record as a dict, roughly (counted until converted)
DEFAULT_MAX_BUFFER_BYTES = 16 * 1024 * 1024


class IcebergSinkException(QuixException):
    """A record the sink cannot write (not a dict, or a field that does not fit its column)."""


class IcebergCatalogUnreachableError(ConnectionError):
    """The catalog (AWS Glue, a REST catalog) could not be reached or refused the credentials."""


def _pyiceberg() -> Any:
    try:
        import pyiceberg.catalog
    except ImportError as exc:
        raise ImportError(f"IcebergSink needs the 'pyiceberg' package: {_EXTRA}") from exc
    return pyiceberg


def _unreachable(exc: BaseException) -> bool:
    """Whether a catalog/storage error means "not now" (retry later) rather than "never"."""
    from pyiceberg import exceptions as ice

    transient: Tuple[type, ...] = (ice.CommitFailedException, ice.CommitStateUnknownException, ice.ServerError,
                                   ice.ServiceUnavailableError, ice.TooManyRequestsError, ConnectionError,
                                   TimeoutError)
    try:
        import requests

        transient += (requests.ConnectionError, requests.Timeout)
    except ImportError:  # pragma: no cover - pyiceberg's REST catalog needs requests
        pass
    try:
        from botocore import exceptions as aws

        transient += (aws.ConnectionError, aws.HTTPClientError)
    except ImportError:
        pass
    return isinstance(exc, transient) or (isinstance(exc, OSError) and not isinstance(exc, FileNotFoundError))


def _where(item: SinkItem, batch: SinkBatch) -> str:
    return f"topic '{batch.topic}' partition {batch.partition} offset {item.offset}"


class _Pending:
    """What the sink holds for one topic partition: Arrow chunks (with their offsets) and the
    newest records not converted yet (a :class:`SinkBatch`, fewer than ``_CHUNK_ROWS``)."""

    __slots__ = ("batch", "chunks", "offsets", "held", "raw")

    def __init__(self, topic: str, partition: int) -> None:
        self.batch = SinkBatch(topic, partition)
        self.chunks: List[Any] = []  # pyarrow tables
        self.offsets: List[Any] = []  # one int64 array per chunk
        self.held = 0  # bytes counted against max_buffer_bytes
        self.raw = False  # a chunk did not convert: keep dicts, the write reports the record

    @property
    def last(self) -> int:
        if self.batch._buffer:
            return self.batch._buffer[-1].offset
        return int(self.offsets[-1][-1].as_py()) if self.offsets else -1

    def empty(self) -> bool:
        return not self.chunks and not self.batch._buffer


class IcebergSink(BatchingSink):
    """Appends each checkpoint's batch to an Iceberg table, exactly once per Kafka offset.

    :param table_name: ``namespace.table`` (namespace and table are created when missing).
    :param config: :class:`AWSIcebergConfig` or :class:`RESTIcebergConfig`.
    :param data_catalog_spec: ``"aws_glue"`` or ``"rest"``; must match ``config``.
    :param schema: the table schema when the sink creates it (default: ``_timestamp``, ``_key``;
        value fields are added as they appear).
    :param partition_spec: the partition spec when the sink creates the table (default: identity of
        ``_key`` and day of ``_timestamp``, as Quix).
    :param on_client_connect_success: called after the table was loaded or created.
    :param on_client_connect_failure: called with the exception when it was not.
    :param backpressure_retry_seconds: pause before a refused write is retried (edge extension).
    :param max_buffer_bytes: bound on what the sink holds between checkpoints, in bytes of Arrow data
        (records are converted every 2,048 of a partition; the newest are counted at ~512 B each).
        When reached, every partition's buffer is appended at once, before the checkpoint (exactly
        once still holds). Default 16 MiB; None: no bound (edge extension).
    """

    def __init__(
        self,
        table_name: str,
        config: BaseIcebergConfig,
        data_catalog_spec: DataCatalogSpec,
        schema: Optional[Any] = None,
        partition_spec: Optional[Any] = None,
        on_client_connect_success: Optional[ClientConnectSuccessCallback] = None,
        on_client_connect_failure: Optional[ClientConnectFailureCallback] = None,
        backpressure_retry_seconds: float = 5.0,
        max_buffer_bytes: Optional[int] = DEFAULT_MAX_BUFFER_BYTES,
    ) -> None:
        super().__init__(on_client_connect_success, on_client_connect_failure)
        _pyiceberg()
        if data_catalog_spec not in ("aws_glue", "rest"):
            raise ValueError(f"data_catalog_spec must be 'aws_glue' or 'rest', got {data_catalog_spec!r}")
        if not isinstance(config, BaseIcebergConfig) or config.data_catalog_spec != data_catalog_spec:
            expected = "AWSIcebergConfig" if data_catalog_spec == "aws_glue" else "RESTIcebergConfig"
            raise ValueError(f"data_catalog_spec {data_catalog_spec!r} needs an {expected}, got "
                             f"{type(config).__name__}")
        if "." not in table_name:
            raise ValueError(f"table_name must be 'namespace.table', got {table_name!r}")
        self._table_name = table_name
        self._config = config
        self._schema = schema
        self._partition_spec = partition_spec
        self.backpressure_retry_seconds = backpressure_retry_seconds
        if max_buffer_bytes is not None and max_buffer_bytes <= 0:
            raise ValueError(f"max_buffer_bytes must be positive or None, got {max_buffer_bytes}")
        self.max_buffer_bytes = max_buffer_bytes
        self.early_appends = 0  # appends made because the buffers reached max_buffer_bytes
        self._early_blocked = False  # the catalog refused an early append: wait for the checkpoint
        self._table: Any = None
        self._committed: Dict[Tuple[str, int], int] = {}
        self._pending: Dict[Tuple[str, int], _Pending] = {}

    # -- set-up --------------------------------------------------------------------------------------
    def setup(self) -> None:
        """Connect to the catalog and load (or create) the table; raises
        :class:`IcebergCatalogUnreachableError` when the catalog cannot be reached."""
        try:
            self._table = self._load_or_create()
        except Exception as exc:
            if _unreachable(exc) or _is_aws_auth_error(exc):
                raise IcebergCatalogUnreachableError(
                    f"Iceberg catalog ({self._config.data_catalog_spec}) unreachable while loading table "
                    f"'{self._table_name}': {type(exc).__name__}: {exc}") from exc
            raise

    def _load_or_create(self) -> Any:
        from pyiceberg.exceptions import NoSuchTableError

        catalog = self._config.load_catalog()
        namespace = self._table_name.rsplit(".", 1)[0]
        try:
            return catalog.load_table(self._table_name)
        except NoSuchTableError:
            pass
        catalog.create_namespace_if_not_exists(namespace)
        schema = self._schema if self._schema is not None else _default_schema()
        spec = self._partition_spec if self._partition_spec is not None else _default_partition_spec(schema)
        return catalog.create_table_if_not_exists(self._table_name, schema=schema, partition_spec=spec,
                                                  properties={"write.distribution-mode": "fanout"})

    # -- buffering -----------------------------------------------------------------------------------
    def add(self, value: Any, key: Any, timestamp: int, headers: HeadersTuples,
            topic: str, partition: int, offset: int) -> None:
        """Buffer a record of its topic partition (converted to Arrow every 2,048 records)."""
        pending = self._pending.get((topic, partition))
        if pending is None:
            pending = self._pending[(topic, partition)] = _Pending(topic, partition)
        buffer = pending.batch._buffer
        buffer.append(SinkItem(value, key, timestamp, headers, offset))
        if len(buffer) >= _CHUNK_ROWS and not pending.raw:
            self._seal(pending)

    @property
    def buffered_bytes(self) -> int:
        """Bytes held in the partitions' buffers, as counted against ``max_buffer_bytes``."""
        return sum(pending.held for pending in self._pending.values())

    def _seal(self, pending: _Pending) -> None:
        """Convert a partition's newest records to one Arrow chunk; at the bound, append early."""
        import pyarrow as pa

        if self._table is None:
            return  # not set up yet: the checkpoint's write converts them
        items = list(pending.batch._buffer)
        try:
            chunk = self._to_arrow(items, pending.batch, self._table, self._chunk_types(pending))
        except IcebergSinkException:
            pending.raw = True  # the checkpoint's write raises the error naming the record
            return
        pending.chunks.append(chunk)
        pending.offsets.append(pa.array([item.offset for item in items], type=pa.int64()))
        pending.batch._buffer.clear()
        pending.held = sum(c.nbytes for c in pending.chunks)
        bound = self.max_buffer_bytes
        if bound is None or self._early_blocked or self.buffered_bytes < bound:
            return
        try:
            self._append_pending(None, keep_all=True)
        except SinkBackpressureError:
            self._early_blocked = True  # keep the records for the checkpoint, which reports it
            return
        self.early_appends += 1

    @staticmethod
    def _chunk_types(pending: _Pending) -> Dict[str, Any]:
        """Types of the fields earlier chunks of this buffer inferred (later chunks keep them)."""
        types: Dict[str, Any] = {}
        for chunk in pending.chunks:
            for field in chunk.schema:
                types.setdefault(field.name, field.type)
        return types

    # -- writing -------------------------------------------------------------------------------------
    def flush(self, *args: Any, **kwargs: Any) -> None:
        """``flush(topic, partition)``: append what every partition holds (one snapshot), unless the
        partition's records were already appended; ``flush()``: the same for every partition.

        A refused append keeps the other partitions' records for their own ``flush`` and raises
        :class:`SinkBackpressureError` for this one (it is paused and replayed)."""
        topic, partition = partition_args(args, kwargs)
        if topic is not None and partition is not None:
            pending = self._pending.get((topic, partition))
            if pending is None or pending.empty():
                return
        self._early_blocked = False
        self._append_pending((topic, partition) if topic is not None and partition is not None else None)

    def write(self, batch: SinkBatch) -> None:
        """Append one batch now (the checkpoint path is ``flush``); see the module docstring."""
        pending = _Pending(batch.topic, batch.partition)
        pending.batch = batch
        saved, self._pending = self._pending, {(batch.topic, batch.partition): pending}
        try:
            self._append_pending((batch.topic, batch.partition))
        finally:
            self._pending = saved

    def _append_pending(self, flushed: Optional[Tuple[str, int]], keep_all: bool = False) -> None:
        """One append of every partition's buffer. On failure the buffers other than ``flushed``'s
        are kept for their own flush (``flushed`` None: all are dropped, the caller replays; with
        ``keep_all`` all are kept for the checkpoint)."""
        if self._table is None:
            self.setup()
        taken, self._pending = self._pending, {}
        try:
            self._append([p for p in taken.values() if not p.empty()])
        except (IcebergSinkException, SinkBackpressureError):
            self._keep(taken, flushed, keep_all)
            raise
        except Exception as exc:
            self._keep(taken, flushed, keep_all)
            for key in taken:
                self._committed.pop(key, None)  # unknown now: read it again
            if not _unreachable(exc):
                raise
            topic, partition = flushed if flushed is not None else (None, None)
            logger.warning("Iceberg refused the write of %s partition(s) (%s: %s); retrying in %ss", len(taken),
                           type(exc).__name__, exc, self.backpressure_retry_seconds)
            raise SinkBackpressureError(self.backpressure_retry_seconds, topic, partition) from exc

    def _keep(self, taken: Dict[Tuple[str, int], _Pending], flushed: Optional[Tuple[str, int]],
              keep_all: bool) -> None:
        if flushed is None and not keep_all:
            return
        for key, pending in taken.items():
            if key != flushed and key not in self._pending:
                self._pending[key] = pending

    def _append(self, pendings: List[_Pending]) -> None:
        import pyarrow as pa
        import pyarrow.compute as pc
        from pyiceberg.exceptions import CommitFailedException

        if not pendings:
            return
        for attempt in range(_COMMIT_ATTEMPTS):
            table = self._table
            table.refresh()
            parts, last = [], {}
            for pending in pendings:
                where = (pending.batch.topic, pending.batch.partition)
                committed = self._committed.get(where)
                if committed is None:
                    committed = _committed_offset(table, *where)
                for chunk, offsets in zip(pending.chunks, pending.offsets):
                    if offsets[-1].as_py() > committed:
                        parts.append(chunk if offsets[0].as_py() > committed
                                     else chunk.filter(pc.greater(offsets, committed)))
                items = [item for item in pending.batch if item.offset > committed]
                if items:
                    parts.append(self._to_arrow(items, pending.batch, table, self._chunk_types(pending)))
                if pending.last > committed:
                    last[where] = pending.last
                else:
                    logger.info("Iceberg %s[%s]: offsets up to %s are already in the table; skipped", *where,
                                committed)
            if not last:
                return
            arrow_table = pa.concat_tables(parts, promote_options="permissive") if len(parts) > 1 else parts[0]
            with table.update_schema() as update:
                update.union_by_name(arrow_table.schema)
            table.refresh()
            arrow_table = arrow_table.cast(_align(arrow_table.schema, table.schema().as_arrow()))
            properties = _carried_offsets(table)
            for (topic, partition), offset in last.items():
                properties[f"{OFFSET_PROPERTY}{topic}.{partition}"] = str(offset)
            try:
                table.append(arrow_table, snapshot_properties=properties)
            except CommitFailedException:
                if attempt + 1 == _COMMIT_ATTEMPTS:
                    raise
                time.sleep(0.1 * (attempt + 1))  # another writer committed first: read again, retry
                continue
            self._committed.update(last)
            return

    def _to_arrow(self, items: List[SinkItem], batch: SinkBatch, table: Any,
                  inferred: Optional[Dict[str, Any]] = None) -> Any:
        """The records as a pyarrow table typed by the table's columns, then by the types earlier
        chunks ``inferred`` (new fields inferred)."""
        import pyarrow as pa

        existing = dict(inferred or {})
        existing.update((field.name, field.type) for field in table.schema().as_arrow())
        columns: Dict[str, List[Any]] = {"_timestamp": [], "_key": []}
        for index, item in enumerate(items):
            value = item.value
            if not isinstance(value, dict):
                raise IcebergSinkException(f"IcebergSink cannot write the value of {_where(item, batch)}: it is "
                                           f"{type(value).__name__}, not a dict")
            key = item.key
            if isinstance(key, bytes):
                try:
                    key = key.decode()
                except UnicodeDecodeError as exc:
                    raise IcebergSinkException(f"IcebergSink cannot write field '_key' of {_where(item, batch)}: "
                                               f"the key is not UTF-8 ({exc})") from None
            columns["_timestamp"].append(datetime.fromtimestamp(item.timestamp / 1000, tz=timezone.utc)
                                         .replace(tzinfo=None))
            columns["_key"].append(None if key is None else str(key))
            for name, field_value in value.items():
                column = columns.get(name)
                if column is None:
                    column = columns[name] = [None] * index
                column.append(field_value)
            for column in columns.values():
                if len(column) <= index:
                    column.append(None)
        arrays, names = [], []
        for name, values in columns.items():
            target = existing.get(name)
            if name == "_timestamp":
                target = target or pa.timestamp("us")
            try:
                array = pa.array(values, type=target) if target is not None else pa.array(values)
            except (pa.ArrowInvalid, pa.ArrowTypeError, TypeError, ValueError, OverflowError) as exc:
                raise self._field_error(name, values, target, items, batch, exc) from None
            if pa.types.is_null(array.type):
                continue  # only nulls so far: no column yet
            arrays.append(array)
            names.append(name)
        return pa.Table.from_arrays(arrays, names=names)

    @staticmethod
    def _field_error(name: str, values: List[Any], target: Any, items: List[SinkItem], batch: SinkBatch,
                     exc: BaseException) -> IcebergSinkException:
        """Name the first record whose field ``name`` does not convert."""
        import pyarrow as pa

        first_type: Any = target
        for item, value in zip(items, values):
            if value is None:
                continue
            try:
                converted = pa.array([value], type=first_type)
            except (pa.ArrowInvalid, pa.ArrowTypeError, TypeError, ValueError, OverflowError):
                column = f"column type {first_type}" if target is not None else f"earlier values of type {first_type}"
                return IcebergSinkException(
                    f"IcebergSink cannot write field '{name}' of {_where(item, batch)}: "
                    f"{type(value).__name__} {value!r} does not fit {column}")
            first_type = first_type or converted.type
        return IcebergSinkException(f"IcebergSink cannot write field '{name}' of topic '{batch.topic}' partition "
                                    f"{batch.partition}: {exc}")

    def on_paused(self, *args: Any, **kwargs: Any) -> None:
        """``on_paused(topic, partition)``: the partition will be replayed: drop its buffer and read
        its committed offset again (``on_paused()``: every partition)."""
        super().on_paused(*args, **kwargs)
        topic, partition = partition_args(args, kwargs)
        if topic is None or partition is None:
            self._pending.clear()
            self._committed.clear()
            return
        self._pending.pop((topic, partition), None)
        self._committed.pop((topic, partition), None)

    def on_revoke(self, topic: str, partition: int) -> None:
        """The partition left this instance: forget its buffer and committed offset."""
        super().on_revoke(topic, partition)
        self._pending.pop((topic, partition), None)
        self._committed.pop((topic, partition), None)


def _is_aws_auth_error(exc: BaseException) -> bool:
    try:
        from botocore import exceptions as aws
    except ImportError:
        return False
    return isinstance(exc, (aws.NoCredentialsError, aws.NoRegionError, aws.ClientError, aws.BotoCoreError))


def _default_schema() -> Any:
    from pyiceberg.schema import Schema
    from pyiceberg.types import NestedField, StringType, TimestampType

    return Schema(NestedField(1, "_timestamp", TimestampType(), required=False),
                  NestedField(2, "_key", StringType(), required=False))


def _default_partition_spec(schema: Any) -> Any:
    from pyiceberg.partitioning import PartitionField, PartitionSpec
    from pyiceberg.transforms import DayTransform, IdentityTransform

    names = {field.name: field.field_id for field in schema.fields}
    fields = []
    if "_key" in names:
        fields.append(PartitionField(names["_key"], 1000, IdentityTransform(), "_key"))
    if "_timestamp" in names:
        fields.append(PartitionField(names["_timestamp"], 1000 + len(fields), DayTransform(), "day"))
    return PartitionSpec(*fields)


def _snapshot_chain(table: Any) -> Any:
    """The current snapshot, then its ancestors (newest first)."""
    snapshot = table.current_snapshot()
    while snapshot is not None:
        yield snapshot
        parent = snapshot.parent_snapshot_id
        snapshot = table.snapshot_by_id(parent) if parent is not None else None


def _committed_offset(table: Any, topic: str, partition: int) -> int:
    """The last offset of ``topic``/``partition`` in the table (-1: none)."""
    key = f"{OFFSET_PROPERTY}{topic}.{partition}"
    for snapshot in _snapshot_chain(table):
        summary = snapshot.summary
        value = summary.get(key) if summary is not None else None
        if value is not None:
            return int(value)
    return -1


def _carried_offsets(table: Any) -> Dict[str, str]:
    """The offsets recorded by the newest sink snapshot, carried into the next one (so one
    snapshot tells every partition's position even after older snapshots expire)."""
    for snapshot in _snapshot_chain(table):
        summary = snapshot.summary
        if summary is None:
            continue
        found = {k: str(v) for k, v in summary.additional_properties.items() if k.startswith(OFFSET_PROPERTY)}
        if found:
            return found
    return {}


def _align(source: Any, target: Any) -> Any:
    """``source``'s columns typed as in ``target`` (the table's schema), in ``source``'s order."""
    import pyarrow as pa

    types = {field.name: field for field in target}
    return pa.schema([pa.field(f.name, types[f.name].type, nullable=True) if f.name in types else f
                      for f in source])
