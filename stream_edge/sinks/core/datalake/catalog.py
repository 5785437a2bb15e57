"""Optional registration of committed lake files in an Iceberg REST catalog (pyiceberg).

Off by default: registering is the batch side's job (``lakehouse register``). When enabled,
every lake commit is followed by an append of its files, by the same protocol as the job, so the
two paths are one path with two entry points (docs/internals.md, "Registration: two entry
points, one path"):

* **one protocol, one ledger**: :class:`stream_edge.lake.registrar.Registrar` over the
  :class:`~stream_edge.lake.registration_ledger.RegistrationLedger` next to the edge files, keyed
  by the table's UUID, shared with the job. A batch number is claimed exclusively (a link on a
  local disk, a conditional PUT ``If-None-Match: *`` on S3), and the lowest batch listing a file
  owns it, so two writers never both commit a file. Each edge partition's batch number is a table
  property set in the same Iceberg commit as its files, so a crash anywhere registers nothing
  twice; the ledger lives in the lake, so ``expire_snapshots`` cannot make it forget.
* **one table shape**: created from the first files by :mod:`stream_edge.lake.schema_plan` (the
  job's rules: Spark/Iceberg types from the Parquet schema, the Hive columns last and identity
  partitioned, ``year/month/day/hour`` int), format version 2, zstd, a name mapping;
* **one evolution rule**: new nullable columns and safe widening (int -> bigint, float ->
  double, decimal precision), anything else refused with the column and types named;
* **the same paths**: ``s3a://`` on S3 (what the job and Spark's S3A read), ``file://`` locally;
* **the same store**: pyiceberg's S3 settings are the sink's own filesystem's
  (:class:`~stream_edge.lake.s3_settings.S3Settings`), else the environment's, resolved as the
  jobs resolve them;
* **gone files are skipped**: a file a compaction rewrote and deleted (and the ledger forgot) is
  never claimed again, and a pending batch's missing files are dropped with a warning instead of
  failing every flush.

The Kafka position still goes into the snapshot summary
(``stream-edge.<topic>.<partition>.last-offset``) for people reading the table's history.
"""

from __future__ import annotations

import logging
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

import pyarrow as pa

from stream_edge.lake import CommitRecord
from stream_edge.lake.iceberg_registration import append_files
from stream_edge.lake.registrar import Claim, Registrar
from stream_edge.lake.registration_ledger import RegistrationLedger, edge_batch_property, edge_writer
from stream_edge.lake.s3_settings import S3Settings
from stream_edge.lake.schema_plan import arrow_to_spark, plan_schema

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
        self._registrars: Dict[str, Registrar] = {}  # by table UUID: one ledger (and store probe) per table
        # True right after register_many loaded the table: its commit needs no second load
        # (between the two only the local ledger is read and written).
        self._fresh = False

    def _catalog_properties(self) -> Dict[str, str]:
        props = {"type": "rest", "uri": self.uri}
        if self._token:
            props["token"] = self._token
        props.update(self._s3_settings().pyiceberg_properties())
        props.update(self._properties)
        return props

    def _s3_settings(self) -> S3Settings:
        """The store pyiceberg reads the files' footers from: the sink's own S3 filesystem's
        settings, else the environment's (one precedence for the edge and the jobs)."""
        if self._lake is not None and not self._lake[2] and getattr(self._lake[0], "type_name", "") == "s3":
            return S3Settings.from_filesystem(self._lake[0])
        return S3Settings.from_env()

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
        partition_columns = [c for c in self.hive_columns if c in schema.names]
        plan = plan_schema(None, [(".".join(self.identifier), schema)], partition_columns=partition_columns,
                           table_format="iceberg")
        files = {f.name: f.type for f in schema}
        return pa.schema([pa.field(name, _arrow_type(ty, files.get(name))) for name, ty in plan.create_columns])

    def attach_lake(self, filesystem: Any, table_root: str, local: bool) -> None:
        """Where the edge table lives (the ledger is kept next to its files)."""
        self._lake = (filesystem, table_root.rstrip("/"), local)

    def _registrar(self, table: Any) -> Registrar:
        """The registration protocol over this table's ledger (one per table UUID)."""
        if self._lake is None:
            raise RuntimeError("IcebergRegistrar.attach_lake() must be called before registering")
        key = str(table.metadata.table_uuid)
        if key not in self._registrars:
            fs, root, local = self._lake
            ledger = RegistrationLedger(fs, root, f"iceberg-{key}", local=local)
            self._registrars[key] = Registrar(ledger, ".".join(self.identifier))
        return self._registrars[key]

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
        claims its own ledger batch and sets its own batch property in that commit, so a crash
        anywhere registers nothing twice. Returns how many batches it added."""
        if not entries:
            return 0
        table = self._load_table(entries[0][2])
        table = self._table = table.refresh()
        self._fresh = True  # the first commit attempt below uses this load (one load per registration)
        registrar = self._registrar(table)
        commits = {edge_writer(r.topic, r.partition): (r, schema) for r, _paths, schema in entries}

        def commit(claims: List[Claim]) -> None:
            self._commit([(c, *commits[c.writer]) for c in claims])

        resumed: List[Claim] = []
        for writer, (record, _schema) in commits.items():  # what a crash left half done, before the new
            resumed += registrar.resume(writer, self._committed_check(record), commit)
        known = registrar.ledger.registered()
        requests = []
        for record, relative_paths, _schema in entries:
            new = registrar.unregistered(relative_paths, known=known, check_present=True)
            if new:
                requests.append((edge_writer(record.topic, record.partition), new))
            else:
                logger.info("commit %s[%s]@%s already registered in %s; skipping", record.topic,
                            record.partition, record.last_offset, ".".join(self.identifier))
        claims = registrar.register(requests, commit, check_present=True)
        self._fresh = False
        if claims or resumed:
            # Fold as the job does, so a sink that registers every checkpoint reads a bounded
            # number of ledger files per commit; with no listing here every path is kept (the
            # job's runs forget the ones compaction deleted).
            registrar.fold()
        return len(claims)

    def _committed_check(self, record: CommitRecord) -> Callable[[int], bool]:
        """Whether the table already holds batch ``number`` of the record's partition (its batch
        property, set in the same commit as the files)."""
        prop = edge_batch_property(record.topic, record.partition)
        return lambda number: int(self._table.properties.get(prop, "0")) >= number

    def _commit(self, claims: List[Tuple[Claim, CommitRecord, pa.Schema]]) -> None:
        """Commit claimed batches (at most one per partition: the files each owns) as one
        snapshot, each number as its partition's table property, once; an Iceberg commit conflict
        with another writer is retried on the refreshed table."""
        from pyiceberg.exceptions import CommitFailedException

        for attempt in range(1, COMMIT_ATTEMPTS + 1):
            if attempt > 1 or not self._fresh:  # a retry reads what the other writer committed
                self._table = self._table.refresh()
            table, self._fresh = self._table, False
            # a batch whose number the table already has was committed before a crash cut off its done marker
            todo = [(c, record, schema) for c, record, schema in claims
                    if int(table.properties.get(edge_batch_property(record.topic, record.partition), "0")) < c.number]
            files = [self._uri(path) for c, _record, _schema in todo for path in c.files]
            if not files:
                return
            seen: List[pa.Schema] = []
            for _c, _record, schema in todo:
                if not any(schema.equals(other) for other in seen):
                    seen.append(schema)
                    self._evolve(self._table, schema)
            summary = {offset_property(r.topic, r.partition): str(r.last_offset) for _c, r, _s in todo}
            if len(todo) == 1:  # one partition's commit: its offset range
                summary["stream-edge.first-offset"] = str(todo[0][1].first_offset)
            summary["lakehouse.register.batch"] = ",".join(str(c.number) for c, _r, _s in todo)
            try:  # the job's commit too: files, name mapping and batch properties in one transaction
                self._table = append_files(self._table, files, snapshot_properties=summary, properties={
                    edge_batch_property(r.topic, r.partition): str(c.number) for c, r, _s in todo})
                return
            except CommitFailedException as exc:
                if attempt == COMMIT_ATTEMPTS:
                    raise
                logger.info("Iceberg commit of batches %s conflicted (%s); retrying", summary["lakehouse.register.batch"], exc)

    def _evolve(self, table: Any, schema: pa.Schema) -> None:
        """Apply ``lakehouse register``'s evolution rules for files of ``schema`` (new nullable
        columns, safe widening; :class:`~stream_edge.lake.schema_plan.IncompatibleSchemaError` else)."""
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

