"""``IcebergSink``: processed records appended to an Apache Iceberg table (Quix Streams 3.x API).

Each checkpoint's batch of a topic partition becomes one Iceberg append (Parquet data files and
one snapshot). Every value must be a dict; its fields are columns, plus ``_timestamp`` (the message
timestamp, ``timestamp``) and ``_key`` (the message key as UTF-8 ``string``). A new field becomes a
new optional column (schema evolution, type from its values); a field seen only as null gets no
column until it has a value; a value that does not fit its column's type is an error naming the
record (topic, partition, offset) and the field.

**Exactly once.** Each snapshot carries, in its summary, the last Kafka offset written for every
topic partition the sink has written (``stream-edge.kafka-offset.<topic>.<partition>``). Before
writing, the sink reads the committed offset of the batch's partition from the newest snapshot
that has it and skips records at or below it, so a replay after a crash (even ``kill -9`` between
the append and the Kafka commit) adds no duplicate.

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
from stream_edge.sinks.base.item import SinkItem
from stream_edge.sinks.base.sink import BatchingSink, ClientConnectFailureCallback, ClientConnectSuccessCallback

__all__ = ("IcebergSink", "AWSIcebergConfig", "RESTIcebergConfig", "BaseIcebergConfig", "IcebergSinkException",
           "IcebergCatalogUnreachableError")

logger = logging.getLogger(__name__)

_EXTRA = "pip install streaming-lakehouse[edge-iceberg]"
OFFSET_PROPERTY = "stream-edge.kafka-offset."
"""Prefix of the snapshot summary properties holding the last written offset per topic partition."""
DataCatalogSpec = Literal["aws_glue", "rest"]
_COMMIT_ATTEMPTS = 5


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


class BaseIcebergConfig:
    """Connection settings of an Iceberg catalog; subclasses say which catalog and how."""

    data_catalog_spec: str = ""

    def __init__(self) -> None:
        self.properties: Dict[str, str] = {}

    def load_catalog(self) -> Any:
        """A pyiceberg ``Catalog`` for these settings."""
        from pyiceberg.catalog import load_catalog

        return load_catalog(self.data_catalog_spec, **self.properties)


class AWSIcebergConfig(BaseIcebergConfig):
    """Iceberg tables in S3 with the AWS Glue catalog.

    :param aws_s3_uri: where table data goes, e.g. ``s3://bucket/warehouse/``.
    :param aws_region: region of the bucket and the catalog (default ``AWS_REGION``).
    :param aws_access_key_id: default ``AWS_ACCESS_KEY_ID``.
    :param aws_secret_access_key: default ``AWS_SECRET_ACCESS_KEY``.
    :param aws_session_token: default ``AWS_SESSION_TOKEN``.
    """

    data_catalog_spec = "aws_glue"

    def __init__(self, aws_s3_uri: str, aws_region: Optional[str] = None, aws_access_key_id: Optional[str] = None,
                 aws_secret_access_key: Optional[str] = None, aws_session_token: Optional[str] = None) -> None:
        super().__init__()
        self.aws_s3_uri = aws_s3_uri
        props = {"type": "glue", "warehouse": aws_s3_uri, "glue.region": aws_region, "s3.region": aws_region,
                 "glue.access-key-id": aws_access_key_id, "s3.access-key-id": aws_access_key_id,
                 "glue.secret-access-key": aws_secret_access_key, "s3.secret-access-key": aws_secret_access_key,
                 "glue.session-token": aws_session_token, "s3.session-token": aws_session_token}
        self.properties = {k: v for k, v in props.items() if v is not None}

    def load_catalog(self) -> Any:
        try:
            import boto3  # noqa: F401 - pyiceberg's Glue catalog needs it
        except ImportError as exc:
            raise ImportError(f"IcebergSink with AWS Glue needs the 'boto3' package: "
                              f"pip install streaming-lakehouse[edge-iceberg,edge-kinesis]") from exc
        return super().load_catalog()


class RESTIcebergConfig(BaseIcebergConfig):
    """An Iceberg REST catalog (an edge extension; ``data_catalog_spec="rest"``).

    :param uri: the catalog's base URL, e.g. ``http://127.0.0.1:8181``.
    :param warehouse: the warehouse to ask the catalog for (optional).
    :param token: a bearer token (optional). :param credential: an OAuth2 ``id:secret`` (optional).
    :param properties: more pyiceberg catalog properties (e.g. ``s3.endpoint``).
    """

    data_catalog_spec = "rest"

    def __init__(self, uri: str, warehouse: Optional[str] = None, token: Optional[str] = None,
                 credential: Optional[str] = None, properties: Optional[Dict[str, str]] = None) -> None:
        super().__init__()
        props = {"type": "rest", "uri": uri, "warehouse": warehouse, "token": token, "credential": credential}
        self.properties = {k: v for k, v in props.items() if v is not None}
        self.properties.update(properties or {})


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
        self._table: Any = None
        self._committed: Dict[Tuple[str, int], int] = {}

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

    # -- writing -------------------------------------------------------------------------------------
    def write(self, batch: SinkBatch) -> None:
        """Append the records above the partition's committed offset; see the module docstring."""
        if self._table is None:
            self.setup()
        try:
            self._write(batch)
        except (IcebergSinkException, SinkBackpressureError):
            raise
        except Exception as exc:
            self._committed.pop((batch.topic, batch.partition), None)  # unknown now: read it again
            if not _unreachable(exc):
                raise
            logger.warning("Iceberg refused the write of %s[%s] (%s: %s); retrying in %ss", batch.topic,
                           batch.partition, type(exc).__name__, exc, self.backpressure_retry_seconds)
            raise SinkBackpressureError(self.backpressure_retry_seconds, batch.topic, batch.partition) from exc

    def _write(self, batch: SinkBatch) -> None:
        from pyiceberg.exceptions import CommitFailedException

        where = (batch.topic, batch.partition)
        for attempt in range(_COMMIT_ATTEMPTS):
            table = self._table
            table.refresh()
            committed = self._committed.get(where)
            if committed is None:
                committed = _committed_offset(table, batch.topic, batch.partition)
            items = [item for item in batch if item.offset > committed]
            if not items:
                logger.info("Iceberg %s[%s]: offsets up to %s are already in the table; skipped", batch.topic,
                            batch.partition, committed)
                return
            arrow_table = self._to_arrow(items, batch, table)
            with table.update_schema() as update:
                update.union_by_name(arrow_table.schema)
            table.refresh()
            arrow_table = arrow_table.cast(_align(arrow_table.schema, table.schema().as_arrow()))
            properties = _carried_offsets(table)
            properties[f"{OFFSET_PROPERTY}{batch.topic}.{batch.partition}"] = str(items[-1].offset)
            try:
                table.append(arrow_table, snapshot_properties=properties)
            except CommitFailedException:
                if attempt + 1 == _COMMIT_ATTEMPTS:
                    raise
                time.sleep(0.1 * (attempt + 1))  # another writer committed first: read again, retry
                continue
            self._committed[where] = items[-1].offset
            return

    def _to_arrow(self, items: List[SinkItem], batch: SinkBatch, table: Any) -> Any:
        """The records as a pyarrow table typed by the table's columns (new fields inferred)."""
        import pyarrow as pa

        existing = {field.name: field.type for field in table.schema().as_arrow()}
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

    def on_paused(self, topic: str, partition: int) -> None:
        """The partition will be replayed: drop its batch and read its committed offset again."""
        super().on_paused(topic, partition)
        self._committed.pop((topic, partition), None)

    def on_revoke(self, topic: str, partition: int) -> None:
        """The partition left this instance: forget its batch and committed offset."""
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


def _align(source: Any, target: Any) -> Any:
    """``source``'s columns typed as in ``target`` (the table's schema), in ``source``'s order."""
    import pyarrow as pa

    types = {field.name: field for field in target}
    return pa.schema([pa.field(f.name, types[f.name].type, nullable=True) if f.name in types else f
                      for f in source])
