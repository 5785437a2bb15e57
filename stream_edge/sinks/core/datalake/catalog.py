"""Optional registration of committed lake files in an Iceberg REST catalog (pyiceberg).

Off by default: registering is the batch side's job (``pipelines``). When enabled, every lake
commit is followed by ``add_files`` of its files, with the Kafka position in the snapshot summary
(``stream-edge.<topic>.<partition>.last-offset``). Before adding, the registrar looks for a
snapshot that already carries an offset at or beyond the commit's: after a crash between the
lake commit and the registration (or a replay), the same commit is not registered twice.

The partition spec is identity on the hive columns, which the sink writes into the files too
(pyiceberg reads identity partition values from the file statistics; Hive paths alone would give
NULL partition values).
"""

from __future__ import annotations

import logging
import os
from typing import Any, Dict, List, Optional, Sequence

import pyarrow as pa

from stream_edge.lake import CommitRecord

__all__ = ("IcebergRegistrar", "offset_property")

logger = logging.getLogger(__name__)


def offset_property(topic: str, partition: int) -> str:
    return f"stream-edge.{topic}.{partition}.last-offset"


class IcebergRegistrar:
    """Registers commits in ``<namespace>.<table>`` of an Iceberg REST catalog.

    :param uri: REST catalog URL.
    :param token: bearer token (never logged).
    :param create_if_missing: create the namespace and table from the first commit's schema
        (``auto_discover`` of the seed).
    :param properties: extra pyiceberg catalog properties (``warehouse``, ``s3.endpoint``...).
    """

    def __init__(self, uri: str, namespace: str, table_name: str, *, token: Optional[str] = None,
                 hive_columns: Sequence[str] = (), create_if_missing: bool = True,
                 properties: Optional[Dict[str, str]] = None) -> None:
        self.uri = uri
        self.identifier = (namespace, table_name)
        self.hive_columns = list(hive_columns)
        self.create_if_missing = create_if_missing
        self._token = token
        self._properties = dict(properties or {})
        self._catalog: Any = None
        self._table: Any = None

    def _catalog_properties(self) -> Dict[str, str]:
        props = {"type": "rest", "uri": self.uri}
        if self._token:
            props["token"] = self._token
        endpoint = os.environ.get("AWS_ENDPOINT_URL_S3") or os.environ.get("AWS_ENDPOINT_URL")
        for env_key, prop in (("AWS_ACCESS_KEY_ID", "s3.access-key-id"),
                              ("AWS_SECRET_ACCESS_KEY", "s3.secret-access-key"),
                              ("AWS_SESSION_TOKEN", "s3.session-token"), ("AWS_REGION", "s3.region")):
            if os.environ.get(env_key):
                props.setdefault(prop, os.environ[env_key])
        if endpoint:
            props.setdefault("s3.endpoint", endpoint)
        props.update(self._properties)
        return props

    def connect(self) -> None:
        from pyiceberg.catalog import load_catalog

        self._catalog = load_catalog("stream-edge", **self._catalog_properties())
        logger.info("Iceberg registration enabled: %s -> %s", self.uri, ".".join(self.identifier))

    def _load_table(self, schema: pa.Schema):
        from pyiceberg.exceptions import NamespaceAlreadyExistsError, NoSuchTableError, TableAlreadyExistsError

        if self._table is not None:
            return self._table
        if self._catalog is None:
            self.connect()
        try:
            self._table = self._catalog.load_table(self.identifier)
            return self._table
        except NoSuchTableError:
            if not self.create_if_missing:
                raise
        try:
            self._catalog.create_namespace(self.identifier[0])
        except NamespaceAlreadyExistsError:
            pass
        try:
            table = self._catalog.create_table(self.identifier, schema=schema)
            with table.update_spec() as spec:
                for column in self.hive_columns:
                    if column in schema.names:
                        spec.add_identity(column)
            self._table = self._catalog.load_table(self.identifier)
        except TableAlreadyExistsError:  # another writer created it meanwhile
            self._table = self._catalog.load_table(self.identifier)
        return self._table

    def already_registered(self, table, record: CommitRecord) -> bool:
        key = offset_property(record.topic, record.partition)
        for snapshot in table.metadata.snapshots:
            value = snapshot.summary.get(key) if snapshot.summary is not None else None
            if value is not None and int(value) >= record.last_offset:
                return True
        return False

    def register(self, record: CommitRecord, file_uris: List[str], schema: pa.Schema) -> bool:
        """Add the commit's files; returns False when the commit was registered before."""
        table = self._load_table(schema)
        table = self._table = table.refresh()
        if self.already_registered(table, record):
            logger.info("commit %s[%s]@%s already registered in %s; skipping", record.topic,
                        record.partition, record.last_offset, ".".join(self.identifier))
            return False
        missing = [f for f in schema.names if f not in {c.name for c in table.schema().columns}]
        if missing:
            with table.update_schema() as update:
                update.union_by_name(schema)
            table = self._table = table.refresh()
        table.add_files(
            file_paths=file_uris,
            snapshot_properties={offset_property(record.topic, record.partition): str(record.last_offset),
                                 "stream-edge.first-offset": str(record.first_offset)},
        )
        return True
