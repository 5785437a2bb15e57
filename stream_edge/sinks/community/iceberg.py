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

**Memory.** Buffering, the byte bound and early writes are every table sink's
(``stream_edge.sinks.buffered_table``, the data-lake sink's base too): records converted to Arrow
every 512 of a partition (sooner for large ones), dicts counted at their measured size. When the
partitions' buffers together reach ``max_buffer_bytes`` (default 16 MiB), they are appended at
once, before the checkpoint (still exactly once: the offsets in the snapshot make a replay skip
them), so memory stays bounded whatever the commit interval.

Catalogs: ``data_catalog_spec="aws_glue"`` with :class:`AWSIcebergConfig` (as in Quix), or
``data_catalog_spec="rest"`` with :class:`RESTIcebergConfig` (an edge extension: any Iceberg REST
catalog). A catalog or storage fault is classified by the error model
(``stream_edge.sinks.buffered_table.write_fault_kind``, ``docs/operations.md``): an outage (the
catalog does not answer, 5xx, 401/403/429, a commit that keeps conflicting) raises
:class:`SinkBackpressureError` with exponential backoff (the partition is paused and replayed);
anything else (S3 access denied, a bad request) stops the application with a
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

from stream_edge.errors import OUTAGE
from stream_edge.exceptions import QuixException
from stream_edge.sinks.arrow_buffer import PartitionBuffer
from stream_edge.sinks.arrow_memory import use_edge_memory_pool
from stream_edge.sinks.base.batch import SinkBatch
from stream_edge.sinks.base.sink import ClientConnectFailureCallback, ClientConnectSuccessCallback, partition_args
from stream_edge.sinks.buffered_table import BufferedTableSink, write_fault_kind
from stream_edge.sinks.record_types import ColumnTypes, SchemaConflictError
from stream_edge.sinks.storage_faults import StorageBackoff
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


class IcebergSink(BufferedTableSink):
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
        self._table: Any = None
        self._committed: Dict[Tuple[str, int], int] = {}
        types = ColumnTypes(reserved={name: (f"the sink writes the message's own {name[1:]} as '{name}'; "
                                             f"rename the field") for name in _METADATA})
        name = f"IcebergSink table {table_name!r}"
        super().__init__(name, types, max_buffer_bytes, keep_keys=True,
                         backoff=StorageBackoff(name, base_seconds=backpressure_retry_seconds),
                         on_client_connect_success=on_client_connect_success,
                         on_client_connect_failure=on_client_connect_failure)
        self.route_records(True, self.check_record)  # every record: its key must be UTF-8

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
            if write_fault_kind(exc) == OUTAGE or _is_aws_auth_error(exc):
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

    # -- what differs from the other table sinks ----------------------------------------------------
    #: One append (one snapshot) holds every partition's records.
    WRITES_TOGETHER = True

    @property
    def early_appends(self) -> int:
        """Partitions appended early because the buffers reached ``max_buffer_bytes``."""
        return self.early_writes

    @property
    def types_known(self) -> bool:
        """Set up: the table's column types are adopted (the runtime sets the sink up before the
        first record; not from add(): a catalog fault there would be taken for the record's error)."""
        return self._table is not None

    def check_record(self, value: Any, key: Any, topic: str, partition: int, offset: int) -> dict:
        """Every record: its value must be a dict, its key UTF-8 (the ``_key`` column is a
        string); else that record's :class:`IcebergSinkException`."""
        if value.__class__ is not dict and not isinstance(value, dict):
            raise IcebergSinkException(f"IcebergSink cannot write the value of topic '{topic}' partition {partition} "
                                       f"offset {offset}: it is {type(value).__name__}, not a dict")
        if key.__class__ is bytes and not key.isascii():
            try:
                key.decode()
            except UnicodeDecodeError as exc:
                raise IcebergSinkException(f"IcebergSink cannot write field '_key' of topic '{topic}' partition "
                                           f"{partition} offset {offset}: the key is not UTF-8 ({exc})") from None
        return value

    def conflict_error(self, exc: SchemaConflictError) -> Exception:
        """A field that does not fit its column is that record's :class:`IcebergSinkException`."""
        return IcebergSinkException(f"IcebergSink cannot write field '{exc.column}' of topic '{exc.topic}' partition "
                                    f"{exc.partition} offset {exc.offset}: {exc.detail}")

    def write(self, batch: SinkBatch) -> None:
        """Append one batch now (the checkpoint path is ``flush``); a record the table cannot hold
        raises before anything is appended."""
        if self._table is None:
            self.setup()
        super().write(batch)

    def write_buffers(self, taken: Dict[Tuple[str, int], PartitionBuffer], flushed: Optional[Tuple[str, int]]) -> None:
        """One append of the taken buffers, its faults classified (the base puts them back)."""
        if self._table is None:
            self.setup()
        where = flushed if flushed is not None else ("*", -1)
        try:
            self._append(taken)
        except Exception as exc:
            for key in taken:
                self._committed.pop(key, None)  # unknown now: read it again
            partitions = ", ".join(f"{t}[{p}]" for t, p in sorted(taken))
            topic, partition = flushed if flushed is not None else (None, None)
            raise self.fault(exc, where, f"appending {partitions} to '{self._table_name}' (Iceberg refused the write)",
                             topic, partition) from exc
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
            self._committed.clear()
        else:
            self._committed.pop((topic, partition), None)

    def on_revoke(self, topic: str, partition: int) -> None:
        """The partition left this instance: forget its buffer and committed offset."""
        super().on_revoke(topic, partition)
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
