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

**A record is responsible for itself.** ``add()`` checks every record against the table's column
types (``stream_edge.sinks.record_types``: Iceberg's promotions int -> long and float -> double
widen a column, anything else is that record's :class:`IcebergSinkException`, naming the field,
the value's type and the column's), so the runtime's error callback sees it with the record and
can skip it; no content error comes out of ``flush()``.

**Memory.** The buffers are the data-lake sink's (``stream_edge.sinks.arrow_buffer``): records
converted to Arrow every 512 of a partition (sooner for large ones), dicts counted at their
measured size. When the partitions' buffers together reach ``max_buffer_bytes`` (default
16 MiB), they are appended at once, before the checkpoint (still exactly once: the offsets in the
snapshot make a replay skip them), so memory stays bounded whatever the commit interval.

Catalogs: ``data_catalog_spec="aws_glue"`` with :class:`AWSIcebergConfig` (as in Quix), or
``data_catalog_spec="rest"`` with :class:`RESTIcebergConfig` (an edge extension: any Iceberg REST
catalog). A catalog or storage fault is classified (``stream_edge.sinks.storage_faults``): a transient one
(unreachable, 5xx, throttling, a commit that keeps conflicting) raises
:class:`SinkBackpressureError` with exponential backoff (the partition is paused and replayed); a
permanent one (access denied, a bad request) stops the application with a
:class:`~stream_edge.sinks.storage_faults.PermanentStorageError` naming the table and partitions.

Needs the ``edge-iceberg`` extra (``pip install streaming-lakehouse[edge-iceberg]``; ``aws_glue`` also
needs ``boto3``); this module imports without it.

Example::

    from stream_edge.sinks.community.iceberg import IcebergSink, RESTIcebergConfig

    sink = IcebergSink(table_name="lake.readings", config=RESTIcebergConfig("http://127.0.0.1:8181"),
                       data_catalog_spec="rest")
    sdf.sink(sink)
"""

from __future__ import annotations

import bisect
import logging
import time
from typing import Any, Dict, Literal, Optional, Tuple

from stream_edge.exceptions import QuixException
from stream_edge.sinks.arrow_buffer import BufferPool, PartitionBuffer
from stream_edge.sinks.arrow_memory import use_edge_memory_pool
from stream_edge.sinks.base.batch import SinkBatch
from stream_edge.sinks.base.exceptions import SinkBackpressureError
from stream_edge.sinks.base.item import HeadersTuples
from stream_edge.sinks.base.sink import (BatchingSink, ClientConnectFailureCallback, ClientConnectSuccessCallback,
                                         partition_args)
from stream_edge.sinks.record_types import ColumnTypes, SchemaConflictError
from stream_edge.sinks.storage_faults import TRANSIENT, StorageBackoff, classify
from stream_edge.sinks.community.iceberg_config import AWSIcebergConfig, BaseIcebergConfig, RESTIcebergConfig

__all__ = ("IcebergSink", "AWSIcebergConfig", "RESTIcebergConfig", "BaseIcebergConfig", "IcebergSinkException",
           "IcebergCatalogUnreachableError")

logger = logging.getLogger(__name__)

_EXTRA = "pip install streaming-lakehouse[edge-iceberg]"
OFFSET_PROPERTY = "stream-edge.kafka-offset."
"""Prefix of the snapshot summary properties holding the last written offset per topic partition."""
DataCatalogSpec = Literal["aws_glue", "rest"]
_COMMIT_ATTEMPTS = 5
_METADATA = ("_timestamp", "_key")  # the columns the sink fills from the message itself
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
    return isinstance(exc, transient) or (isinstance(exc, OSError) and classify(exc) == TRANSIENT)


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
        (records are converted every 512 of a partition; the newest are counted at their measured size).
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
        self._table: Any = None
        self._committed: Dict[Tuple[str, int], int] = {}
        self._pool = BufferPool(max_buffer_bytes, keep_keys=True)
        self._types = ColumnTypes(reserved={name: (f"the sink writes the message's own {name[1:]} as '{name}'; "
                                                   f"rename the field") for name in _METADATA})
        self._check = self._types.check
        self._backoff = StorageBackoff(f"IcebergSink table {table_name!r}", base_seconds=backpressure_retry_seconds)

    # -- set-up --------------------------------------------------------------------------------------
    def setup(self) -> None:
        """Connect to the catalog and load (or create) the table; raises
        :class:`IcebergCatalogUnreachableError` when the catalog cannot be reached. Arrow allocates
        from the system allocator from now on (``stream_edge.sinks.arrow_memory``)."""
        use_edge_memory_pool()
        try:
            self._table = self._load_or_create()
            self._types.adopt(self._table.schema().as_arrow())
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
    @property
    def early_appends(self) -> int:
        """Partitions appended early because the buffers reached ``max_buffer_bytes``."""
        return self._pool.early_writes

    def stats(self) -> Dict[str, int]:
        """Storage faults met so far (the service exports them)."""
        return self._backoff.stats()

    def add(self, value: Any, key: Any, timestamp: int, headers: HeadersTuples,
            topic: str, partition: int, offset: int) -> None:
        """Buffer a record of its topic partition; raises :class:`IcebergSinkException` for a record
        the table cannot hold (not a dict, a key that is not UTF-8, a field that does not fit)."""
        if value.__class__ is not dict and not isinstance(value, dict):
            raise IcebergSinkException(f"IcebergSink cannot write the value of topic '{topic}' partition {partition} "
                                       f"offset {offset}: it is {type(value).__name__}, not a dict")
        if key.__class__ is bytes and not key.isascii():
            try:
                key.decode()
            except UnicodeDecodeError as exc:
                raise IcebergSinkException(f"IcebergSink cannot write field '_key' of topic '{topic}' partition "
                                           f"{partition} offset {offset}: the key is not UTF-8 ({exc})") from None
        # The runtime sets the sink up (and adopts the table's column types) before the first record.
        # Not here: a catalog fault raised from add() would be taken for this record's error.
        buffer = self._pool.buffers.get((topic, partition))
        if buffer is None or offset <= buffer.last:
            buffer = self._pool.for_offset((topic, partition), offset)
        try:
            self._check(value, topic, partition, offset)
        except SchemaConflictError as exc:
            raise IcebergSinkException(f"IcebergSink cannot write field '{exc.column}' of topic '{topic}' partition "
                                       f"{partition} offset {offset}: {exc.detail}") from exc
        buffer.last = offset
        buffer.values.append(value)
        buffer.offsets.append(offset)
        buffer.keys.append(key)
        buffer.timestamps.append(timestamp)
        if len(buffer.offsets) >= buffer.next_sample:
            self._sample(buffer)

    @property
    def buffered_bytes(self) -> int:
        """Bytes held in the partitions' buffers, as counted against ``max_buffer_bytes``."""
        return self._pool.held

    def _sample(self, buffer: PartitionBuffer) -> None:
        """Every few records: convert the dicts to Arrow when due; at the bound, append early."""
        if self._table is None:
            return  # not set up: the table's types are unknown, the checkpoint's write converts them
        if buffer.sample():
            buffer.seal(self._types.types)
        if not self._pool.over_bound():
            return
        try:
            count = self._pool.write_together(lambda taken: self._append_taken(taken, None))
        except Exception as exc:  # noqa: BLE001 - kept for the checkpoint, whose flush reports it
            self._pool.blocked = True
            logger.warning("IcebergSink: the early append (buffers at the %s-byte bound) failed: %s: %s; the "
                           "records stay buffered for the checkpoint", self.max_buffer_bytes, type(exc).__name__, exc)
            return
        self._pool.early_writes += count

    # -- writing -------------------------------------------------------------------------------------
    def flush(self, *args: Any, **kwargs: Any) -> None:
        """``flush(topic, partition)``: append what every partition holds (one snapshot), unless the
        partition's records were already appended; ``flush()``: the same for every partition.

        A refused append keeps every partition's records (the runtime pauses and replays the
        flushed one) and raises :class:`SinkBackpressureError` (transient) or
        :class:`~stream_edge.sinks.storage_faults.PermanentStorageError`."""
        topic, partition = partition_args(args, kwargs)
        flushed = (topic, partition) if topic is not None and partition is not None else None
        if flushed is not None:
            buffer = self._pool.get(flushed)
            if buffer is None or not len(buffer):
                return
        self._pool.unblock()
        self._pool.write_together(lambda taken: self._append_taken(taken, flushed))

    def write(self, batch: SinkBatch) -> None:
        """Append one batch now (the checkpoint path is ``flush``); a record the table cannot hold
        raises before anything is appended."""
        if self._table is None:
            self.setup()
        buffer = PartitionBuffer()
        for item in batch:
            if not isinstance(item.value, dict):
                raise IcebergSinkException(f"IcebergSink cannot write the value of topic '{batch.topic}' partition "
                                           f"{batch.partition} offset {item.offset}: it is "
                                           f"{type(item.value).__name__}, not a dict")
            try:
                self._check(item.value, batch.topic, batch.partition, item.offset)
            except SchemaConflictError as exc:
                raise IcebergSinkException(f"IcebergSink cannot write field '{exc.column}' of topic '{batch.topic}' "
                                           f"partition {batch.partition} offset {item.offset}: {exc.detail}") from exc
            buffer.values.append(item.value)
            buffer.keys.append(item.key)
            buffer.timestamps.append(item.timestamp)
            buffer.offsets.append(item.offset)
            buffer.last = item.offset
        if len(buffer):
            self._append_taken({(batch.topic, batch.partition): buffer}, (batch.topic, batch.partition))

    def _append_taken(self, taken: Dict[Tuple[str, int], PartitionBuffer], flushed: Optional[Tuple[str, int]]) -> None:
        """One append of the taken buffers, its faults classified (the caller puts them back)."""
        if self._table is None:
            self.setup()
        where = flushed if flushed is not None else ("*", -1)
        try:
            self._append(taken)
        except Exception as exc:
            for key in taken:
                self._committed.pop(key, None)  # unknown now: read it again
            if not _unreachable(exc):
                partitions = ", ".join(f"{t}[{p}]" for t, p in sorted(taken))
                raise self._backoff.permanent(f"the append of {partitions} to '{self._table_name}'", exc) from exc
            delay = self._backoff.transient(where, f"appending {len(taken)} partition(s) to '{self._table_name}' "
                                                   f"(Iceberg refused the write)", exc)
            topic, partition = flushed if flushed is not None else (None, None)
            raise SinkBackpressureError(delay, topic, partition) from exc
        self._backoff.succeeded(where)

    def _append(self, taken: Dict[Tuple[str, int], PartitionBuffer]) -> None:
        import pyarrow as pa
        from pyiceberg.exceptions import CommitFailedException

        types = self._types.types
        for attempt in range(_COMMIT_ATTEMPTS):
            table = self._table
            table.refresh()
            parts, last = [], {}
            for where, buffer in sorted(taken.items()):
                committed = self._committed.get(where)
                if committed is None:
                    committed = _committed_offset(table, *where)
                start = bisect.bisect_right(buffer.offsets, committed)
                if start < len(buffer):
                    parts.append(_with_metadata(buffer.table(start, types), buffer, start))
                    last[where] = buffer.last
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
            self._types.mark_committed(arrow_table.column_names)
            return

    def on_paused(self, *args: Any, **kwargs: Any) -> None:
        """``on_paused(topic, partition)``: the partition will be replayed: drop its buffer and read
        its committed offset again (``on_paused()``: every partition)."""
        super().on_paused(*args, **kwargs)
        topic, partition = partition_args(args, kwargs)
        if topic is None or partition is None:
            self._pool.clear()
            self._committed.clear()
            return
        self._pool.drop((topic, partition))
        self._committed.pop((topic, partition), None)

    def on_revoke(self, topic: str, partition: int) -> None:
        """The partition left this instance: forget its buffer and committed offset."""
        super().on_revoke(topic, partition)
        self._pool.drop((topic, partition))
        self._committed.pop((topic, partition), None)
        self._backoff.forget((topic, partition))


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


def _with_metadata(values: Any, buffer: PartitionBuffer, start: int) -> Any:
    """The records' columns with ``_timestamp`` (the message timestamp, µs) and ``_key`` (UTF-8) first."""
    import pyarrow as pa

    millis = pa.array(buffer.timestamps[start:], pa.int64())
    stamps = millis.cast(pa.timestamp("ms")).cast(pa.timestamp("us"))
    keys = pa.array([None if key is None else key.decode() if key.__class__ is bytes else str(key)
                     for key in buffer.keys[start:]], pa.string())
    columns = [stamps, keys] + list(values.columns)
    return pa.Table.from_arrays(columns, names=list(_METADATA) + values.column_names)


def _align(source: Any, target: Any) -> Any:
    """``source``'s columns typed as in ``target`` (the table's schema), in ``source``'s order."""
    import pyarrow as pa

    types = {field.name: field for field in target}
    return pa.schema([pa.field(f.name, types[f.name].type, nullable=True) if f.name in types else f
                      for f in source])
