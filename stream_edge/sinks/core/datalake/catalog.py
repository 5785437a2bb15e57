"""Optional registration of committed lake files in an Iceberg REST catalog (pyiceberg).

Off by default: registering is the batch side's job (``lakehouse register``). When enabled,
every lake commit is followed by an append of its files, under the same rules as the job, so the
two paths are one path with two entry points (docs/design.md, "One registration path"):

* **one ledger**: ``lakehouse.register_ledger.ClaimingLedger`` next to the edge files, keyed by
  the table's UUID, shared with the job. A batch number is claimed exclusively (a link on a local
  disk, a conditional PUT ``If-None-Match: *`` on S3), and the lowest batch listing a file owns
  it, so two writers never both commit a file. Each edge partition's batch number is a table
  property set in the same Iceberg commit as its files, so a crash anywhere registers nothing
  twice; the ledger lives in the lake, so ``expire_snapshots`` cannot make it forget. The job
  folds every writer's done batches into its checkpoints.
* **one table shape**: created from the first files with ``lakehouse.schema_evolution`` (the
  job's rules: Spark/Iceberg types from the Parquet schema, the Hive columns last and identity
  partitioned, ``year/month/day/hour`` int), format version 2, zstd, a name mapping;
* **one evolution rule**: new nullable columns and safe widening (int -> bigint, float ->
  double, decimal precision), anything else refused with the column and types named;
* **the same paths**: ``s3a://`` on S3 (what the job and Spark's S3A read), ``file://`` locally;
* **gone files are skipped**: a file a compaction rewrote and deleted (and the ledger forgot) is
  never claimed again, and a pending batch's missing files are dropped with a warning instead of
  failing every flush.

The Kafka position still goes into the snapshot summary
(``stream-edge.<topic>.<partition>.last-offset``) for people reading the table's history.
"""

from __future__ import annotations

import logging
import os
from typing import TYPE_CHECKING, Any, Dict, List, Optional, Sequence, Tuple

import pyarrow as pa

from stream_edge.lake import CommitRecord
from stream_edge.lake.iceberg_registration import append_files
from stream_edge.lake.registration_ledger import LedgerError, edge_batch_property, edge_writer

if TYPE_CHECKING:  # pragma: no cover
    from lakehouse.register_ledger import ClaimingLedger

__all__ = ("IcebergRegistrar", "offset_property", "TABLE_PROPERTIES")

COMMIT_ATTEMPTS = 5  # Iceberg commit conflicts with other writers: refresh and retry
TABLE_PROPERTIES = {"format-version": "2", "write.parquet.compression-codec": "zstd"}  # as `lakehouse register`

logger = logging.getLogger(__name__)


def offset_property(topic: str, partition: int) -> str:
    return f"stream-edge.{topic}.{partition}.last-offset"


def _arrow_type(spark_type: str, file_type: Optional[pa.DataType]) -> pa.DataType:
    """The Arrow type pyiceberg turns into the Iceberg type the job would create for ``spark_type``."""
    simple = {"int": pa.int32(), "bigint": pa.int64(), "string": pa.string(), "double": pa.float64(),
              "float": pa.float32(), "boolean": pa.bool_(), "date": pa.date32(), "binary": pa.binary(),
              "timestamp": pa.timestamp("us", tz="UTC"), "timestamp_ntz": pa.timestamp("us")}
    if spark_type in simple:
        return simple[spark_type]
    if file_type is None:
        raise ValueError(f"no Arrow type for the Spark type {spark_type}")
    return file_type  # decimals and nested types: pyiceberg maps the file's type the same way


def _iceberg_type(spark_type: str) -> Any:
    """The Iceberg type a column is widened to (the widenings ``plan_schema`` allows)."""
    from pyiceberg.types import DecimalType, DoubleType, LongType

    if spark_type == "bigint":
        return LongType()
    if spark_type == "double":
        return DoubleType()
    precision, scale = spark_type[len("decimal("):-1].split(",")
    return DecimalType(int(precision), int(scale))


class IcebergRegistrar:
    """Registers commits in ``<namespace>.<table>`` of an Iceberg REST catalog.

    :param uri: REST catalog URL.
    :param token: bearer token (never logged).
    :param create_if_missing: create the namespace and table from the first commit's schema
        (``auto_discover`` of the data-lake sink contract, docs/design.md).
    :param properties: extra pyiceberg catalog properties (``warehouse``, ``s3.endpoint``...);
        on S3 the endpoint and credentials default to the sink's own storage settings.
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
        # True right after register_many loaded the table: its commit needs no second load
        # (between the two only the local ledger is read and written).
        self._fresh = False

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
        props.update(self._lake_s3_properties())
        props.update(self._properties)
        return props

    def _lake_s3_properties(self) -> Dict[str, str]:
        """pyiceberg's S3 settings from the sink's filesystem (it reads the footers of the files)."""
        if self._lake is None or self._lake[2] or getattr(self._lake[0], "type_name", "") != "s3":
            return {}
        settings = self._lake[0].__reduce__()[1][0]
        props: Dict[str, str] = {}
        endpoint = settings.get("endpoint_override")
        if endpoint:
            props["s3.endpoint"] = endpoint if "://" in endpoint else f"{settings.get('scheme') or 'https'}://{endpoint}"
        for key, prop in (("access_key", "s3.access-key-id"), ("secret_key", "s3.secret-access-key"),
                          ("session_token", "s3.session-token"), ("region", "s3.region")):
            if settings.get(key):
                props[prop] = settings[key]
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
            table = self._catalog.create_table(self.identifier, schema=self._creation_schema(schema),
                                               properties=dict(TABLE_PROPERTIES))
            partition_columns = [c for c in self.hive_columns if c in schema.names]
            if partition_columns:
                with table.update_spec() as spec:
                    for column in partition_columns:
                        spec.add_identity(column)
            self._table = self._catalog.load_table(self.identifier)
        except TableAlreadyExistsError:  # another writer created it meanwhile
            self._table = self._catalog.load_table(self.identifier)
        return self._table

    def _creation_schema(self, schema: pa.Schema) -> pa.Schema:
        """The table schema ``lakehouse register`` would create for files of ``schema``."""
        from lakehouse.schema_evolution import plan_schema

        partition_columns = [c for c in self.hive_columns if c in schema.names]
        plan = plan_schema(None, [(".".join(self.identifier), schema)], partition_columns=partition_columns,
                           table_format="iceberg")
        files = {f.name: f.type for f in schema}
        return pa.schema([pa.field(name, _arrow_type(ty, files.get(name))) for name, ty in plan.create_columns])

    def attach_lake(self, filesystem: Any, table_root: str, local: bool) -> None:
        """Where the edge table lives (the ledger is kept next to its files)."""
        self._lake = (filesystem, table_root.rstrip("/"), local)

    def _ledger(self, table: Any) -> "ClaimingLedger":
        from lakehouse.register_ledger import ClaimingLedger

        if self._lake is None:
            raise RuntimeError("IcebergRegistrar.attach_lake() must be called before registering")
        fs, root, local = self._lake
        return ClaimingLedger(fs, root, f"iceberg-{table.metadata.table_uuid}", local=local)

    def _uri(self, relative: str) -> str:
        assert self._lake is not None
        _, root, local = self._lake
        return f"{'file://' if local else 's3a://'}{root}/{relative}"

    def register(self, record: CommitRecord, relative_paths: List[str], schema: pa.Schema) -> bool:
        """Add the commit's files (paths relative to the table root) unless the ledger already
        has them; returns False when there was nothing left to add."""
        return self.register_many([(record, relative_paths, schema)]) > 0

    def register_many(self, entries: Sequence[Tuple[CommitRecord, List[str], pa.Schema]]) -> int:
        """Register commits (of different partitions) in ONE Iceberg commit: each partition still
        records its own ledger batch and sets its own batch property in that commit, so a crash
        anywhere registers nothing twice. Returns how many batches it added."""
        if not entries:
            return 0
        table = self._load_table(entries[0][2])
        table = self._table = table.refresh()
        self._fresh = True  # the first commit attempt below uses this load (one load per registration)
        ledger = self._ledger(table)
        for record, _paths, schema in entries:  # what a crash left half done, before reading what is known
            self._finish_pending(ledger, edge_writer(record.topic, record.partition), record, schema)
        known = ledger.registered()
        batches: List[Tuple[int, CommitRecord, pa.Schema]] = []
        for record, relative_paths, schema in entries:
            new = [path for path in relative_paths if path not in known]
            gone = set(ledger.missing(new))
            if gone:
                # Registered, compacted, deleted and forgotten by the ledger's checkpoint (or never
                # there): claiming them again would fail on every flush.
                logger.info("commit %s[%s]@%s: %d file(s) no longer exist (compacted); not registering them",
                            record.topic, record.partition, record.last_offset, len(gone))
                new = [path for path in new if path not in gone]
            if not new:
                logger.info("commit %s[%s]@%s already registered in %s; skipping", record.topic,
                            record.partition, record.last_offset, ".".join(self.identifier))
                continue
            batches.append((self._write_intent(ledger, new, edge_writer(record.topic, record.partition)),
                            record, schema))
        if batches:
            self._commit(ledger, batches)
        self._fresh = False
        return len(batches)

    def _write_intent(self, ledger: "ClaimingLedger", files: List[str], writer: str) -> int:
        """Record a batch under the next free number (other edge partitions and the job race for it;
        the claim is exclusive, the loser takes the next number)."""
        for _ in range(50):
            number = ledger.next_number()
            try:
                ledger.write_intent(number, files, ".".join(self.identifier), writer=writer)
                return number
            except LedgerError:
                continue
        raise LedgerError(f"could not record a registration batch in {ledger.dir}: too many concurrent writers")

    def _finish_pending(self, ledger: "ClaimingLedger", writer: str, record: CommitRecord,
                        schema: pa.Schema) -> None:
        """Batches this partition recorded but did not mark done (a crash): commit or mark them."""
        for batch in ledger.batches():
            if batch.done or batch.writer != writer:
                continue
            self._commit(ledger, [(batch.number, record, schema)])

    def _commit(self, ledger: "ClaimingLedger", batches: List[Tuple[int, CommitRecord, pa.Schema]]) -> None:
        """Commit ledger batches (``(number, record, schema)``, at most one per partition: the files
        each owns) as one snapshot, each number as its partition's table property, once."""
        from pyiceberg.exceptions import CommitFailedException

        for attempt in range(1, COMMIT_ATTEMPTS + 1):
            if attempt > 1 or not self._fresh:  # a retry reads what the other writer committed
                self._table = self._table.refresh()
            table, self._fresh = self._table, False
            # a batch whose number the table already has was committed before a crash cut off its done marker
            todo = [(number, record, schema) for number, record, schema in batches
                    if int(table.properties.get(edge_batch_property(record.topic, record.partition), "0")) < number]
            files: List[str] = []
            for number, _record, _schema in todo:
                owned = ledger.owned_files(number)
                gone = set(ledger.missing(owned))
                if gone:
                    logger.warning("batch %d: %d file(s) no longer exist and are skipped: %s", number, len(gone),
                                   ", ".join(sorted(gone)[:5]))
                files += [self._uri(path) for path in owned if path not in gone]
            if not files:
                break  # every file is owned by a lower batch of another writer (or gone)
            seen: List[pa.Schema] = []
            for _number, _record, schema in todo:
                if not any(schema.equals(other) for other in seen):
                    seen.append(schema)
                    self._evolve(self._table, schema)
            summary = {offset_property(r.topic, r.partition): str(r.last_offset) for _n, r, _s in todo}
            if len(todo) == 1:  # one partition's commit: its offset range
                summary["stream-edge.first-offset"] = str(todo[0][1].first_offset)
            summary["lakehouse.register.batch"] = ",".join(str(n) for n, _r, _s in todo)
            try:  # the job's commit too: files, name mapping and batch properties in one transaction
                self._table = append_files(self._table, files, snapshot_properties=summary, properties={
                    edge_batch_property(r.topic, r.partition): str(n) for n, r, _s in todo})
                break
            except CommitFailedException as exc:
                if attempt == COMMIT_ATTEMPTS:
                    raise
                logger.info("Iceberg commit of batches %s conflicted (%s); retrying", summary["lakehouse.register.batch"], exc)
        for number, _record, _schema in batches:
            ledger.mark_done(number)
        # Fold as the job does, so a sink that registers every checkpoint reads a bounded number of
        # ledger files per commit; with no listing here every path is kept (the job's runs forget
        # the ones compaction deleted).
        folded = ledger.checkpoint(None)
        if folded:
            logger.info("registration ledger of %s: batches up to %d folded", ".".join(self.identifier), folded)

    def _evolve(self, table: Any, schema: pa.Schema) -> None:
        """Apply ``lakehouse register``'s evolution rules for files of ``schema`` (new nullable
        columns, safe widening; :class:`~lakehouse.schema_evolution.IncompatibleSchemaError` else)."""
        from lakehouse.schema_evolution import arrow_to_spark, plan_schema

        columns = {f.name: arrow_to_spark(f.type) for f in table.schema().as_arrow()}
        partition_columns = [c for c in self.hive_columns if c in columns]
        plan = plan_schema(columns, [(".".join(self.identifier), schema)], partition_columns=partition_columns,
                           table_format="iceberg")
        if not plan.changes_schema:
            return
        files = {f.name: f.type for f in schema}
        with table.update_schema() as update:
            if plan.new_columns:  # pyiceberg converts the Arrow types as it does at creation
                update.union_by_name(pa.schema([pa.field(name, _arrow_type(ty, files.get(name)))
                                                for name, ty in plan.new_columns]))
            for name, _old, new in plan.widened_columns:
                update.update_column(name, field_type=_iceberg_type(new))
        logger.info("schema evolution on %s: added %s, widened %s", ".".join(self.identifier),
                    [c for c, _ in plan.new_columns], [c for c, _o, _n in plan.widened_columns])
        self._table = table.refresh()

