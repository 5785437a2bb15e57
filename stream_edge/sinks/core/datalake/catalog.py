"""Optional registration of committed lake files in an Iceberg REST catalog (pyiceberg).

Off by default: registering is the batch side's job (``lakehouse register``). When enabled,
every lake commit is followed by ``add_files`` of its files, through the same registration
ledger as the job (``stream_edge.lake.registration_ledger``, next to the edge files, keyed by
the table's UUID): files already in the ledger (registered by the job or by this partition
before a crash) are skipped, and each edge partition's batch number is a table property set in
the same Iceberg commit as its files, so a crash anywhere registers nothing twice. The ledger
lives in the lake, so ``expire_snapshots`` cannot make it forget. The Kafka position still goes
into the snapshot summary (``stream-edge.<topic>.<partition>.last-offset``) for people reading
the table's history.

The partition spec is identity on the hive columns, which the sink writes into the files too
(pyiceberg reads identity partition values from the file statistics; Hive paths alone would give
NULL partition values).
"""

from __future__ import annotations

import logging
import os
from typing import Any, Dict, List, Optional, Sequence, Tuple

import pyarrow as pa

from stream_edge.lake import CommitRecord
from stream_edge.lake.registration_ledger import (LedgerError, RegistrationLedger, edge_batch_property,
                                                  edge_writer)

__all__ = ("IcebergRegistrar", "offset_property")

COMMIT_ATTEMPTS = 5  # Iceberg commit conflicts with other writers: refresh and retry

logger = logging.getLogger(__name__)


def offset_property(topic: str, partition: int) -> str:
    return f"stream-edge.{topic}.{partition}.last-offset"


class IcebergRegistrar:
    """Registers commits in ``<namespace>.<table>`` of an Iceberg REST catalog.

    :param uri: REST catalog URL.
    :param token: bearer token (never logged).
    :param create_if_missing: create the namespace and table from the first commit's schema
        (``auto_discover`` of the data-lake sink contract, docs/design.md).
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
        self._lake: Optional[Tuple[Any, str, bool]] = None

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

    def attach_lake(self, filesystem: Any, table_root: str, local: bool) -> None:
        """Where the edge table lives (the ledger is kept next to its files)."""
        self._lake = (filesystem, table_root.rstrip("/"), local)

    def _ledger(self, table: Any) -> RegistrationLedger:
        if self._lake is None:
            raise RuntimeError("IcebergRegistrar.attach_lake() must be called before registering")
        fs, root, local = self._lake
        return RegistrationLedger(fs, root, f"iceberg-{table.metadata.table_uuid}", local=local)

    def _uri(self, relative: str) -> str:
        assert self._lake is not None
        _, root, local = self._lake
        return f"{'file://' if local else 's3://'}{root}/{relative}"

    def register(self, record: CommitRecord, relative_paths: List[str], schema: pa.Schema) -> bool:
        """Add the commit's files (paths relative to the table root) unless the ledger already
        has them; returns False when there was nothing left to add."""
        table = self._load_table(schema)
        table = self._table = table.refresh()
        ledger = self._ledger(table)
        writer = edge_writer(record.topic, record.partition)
        self._finish_pending(ledger, writer, record, schema)
        known = ledger.registered()
        new = [path for path in relative_paths if path not in known]
        if not new:
            logger.info("commit %s[%s]@%s already registered in %s; skipping", record.topic,
                        record.partition, record.last_offset, ".".join(self.identifier))
            return False
        number = self._write_intent(ledger, new, writer)
        self._commit(ledger, number, record, schema)
        return True

    def _write_intent(self, ledger: RegistrationLedger, files: List[str], writer: str) -> int:
        """Record a batch under the next free number (other edge partitions and the job race for it)."""
        for _ in range(20):
            number = ledger.next_number()
            try:
                ledger.write_intent(number, files, ".".join(self.identifier), writer=writer)
                return number
            except LedgerError:
                continue
        raise LedgerError(f"could not record a registration batch in {ledger.dir}: too many concurrent writers")

    def _finish_pending(self, ledger: RegistrationLedger, writer: str, record: CommitRecord,
                        schema: pa.Schema) -> None:
        """Batches this partition recorded but did not mark done (a crash): commit or mark them."""
        for batch in ledger.batches():
            if batch.done or batch.writer != writer:
                continue
            self._commit(ledger, batch.number, record, schema)

    def _commit(self, ledger: RegistrationLedger, number: int, record: CommitRecord, schema: pa.Schema) -> None:
        """Commit batch ``number`` (the files it owns) with its number as a table property, once."""
        from pyiceberg.exceptions import CommitFailedException

        prop = edge_batch_property(record.topic, record.partition)
        for attempt in range(1, COMMIT_ATTEMPTS + 1):
            table = self._table = self._table.refresh()
            if int(table.properties.get(prop, "0")) >= number:
                break  # committed before a crash cut off the done marker
            files = [self._uri(path) for path in ledger.owned_files(number)]
            if not files:
                break  # every file is owned by a lower batch of another writer
            self._evolve(table, schema)
            try:
                with table.transaction() as tx:
                    tx.add_files(file_paths=files, snapshot_properties={
                        offset_property(record.topic, record.partition): str(record.last_offset),
                        "stream-edge.first-offset": str(record.first_offset),
                        "lakehouse.register.batch": str(number)})
                    tx.set_properties({prop: str(number)})
                break
            except CommitFailedException as exc:
                if attempt == COMMIT_ATTEMPTS:
                    raise
                logger.info("Iceberg commit of batch %d conflicted (%s); retrying", number, exc)
        ledger.mark_done(number)

    def _evolve(self, table: Any, schema: pa.Schema) -> None:
        missing = [f for f in schema.names if f not in {c.name for c in table.schema().columns}]
        if missing:
            with table.update_schema() as update:
                update.union_by_name(schema)
            self._table = table.refresh()
