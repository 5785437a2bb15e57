"""Delta table operations the jobs need (Spark SQL and the DataFrame writer).

Delta has no procedure that adds individual existing Parquet files to a table (``CONVERT TO
DELTA`` converts a whole directory once, and its table would then share the directory with the
edge's future files, which ``VACUUM`` deletes as untracked). So a Delta table lives at its own
location and ``register`` converts each batch of new edge files into it with one append
(a copy), made idempotent by Delta's own ``txnAppId``/``txnVersion``: a replayed batch whose
version is already committed is skipped by Delta itself.

Tables are addressed as ``delta.`<location>``` or by name ``[spark_catalog.]db.table``; a name
lives at ``<spark.sql.warehouse.dir>/<db>.db/<table>`` and is (re)declared in the session
catalog on use, since a plain local session keeps no metastore between runs.

Example::

    dt = DeltaTable(spark, "db.sensor_readings")
    dt.append_files(root, files, batch=3, app_id="lakehouse-register-<uuid>")
"""

from __future__ import annotations

import json
import re
from typing import TYPE_CHECKING, Any, Sequence

from lakehouse.lake_files import EdgeFile, LakeLocation

if TYPE_CHECKING:  # pragma: no cover
    from pyspark.sql import DataFrame, SparkSession

_PATH_FORM = re.compile(r"^delta\.`(?P<path>[^`]+)`$")


def delta_location(spark: "SparkSession", table: str) -> tuple[str, str | None]:
    """(location URI, catalog name or None) for a Delta table argument."""
    match = _PATH_FORM.match(table.strip())
    if match:
        return LakeLocation.parse(match.group("path")).uri, None
    parts = [p.strip("`") for p in table.split(".")]
    if parts[0] == "spark_catalog":
        parts = parts[1:]
    if len(parts) != 2 or not all(parts):
        raise ValueError(f"Delta table {table!r} must be db.table, spark_catalog.db.table or delta.`/path`")
    warehouse = str(spark.conf.get("spark.sql.warehouse.dir"))
    location = LakeLocation.parse(warehouse).child(f"{parts[0]}.db/{parts[1]}")
    return location, f"spark_catalog.`{parts[0]}`.`{parts[1]}`"


class DeltaTable:
    """One Delta table (by location, optionally also declared by name)."""

    table_format = "delta"

    def __init__(self, spark: "SparkSession", table: str) -> None:
        self.spark = spark
        self.identifier = table
        self.location, self.catalog_name = delta_location(spark, table)
        self.sql_name = f"delta.`{self.location}`"

    def exists(self) -> bool:
        from delta.tables import DeltaTable as _DT

        exists = bool(_DT.isDeltaTable(self.spark, self.location))
        if exists:
            self.declare()
        return exists

    def declare(self) -> None:
        """Make the table reachable by name in this session (no-op for path-only tables)."""
        if self.catalog_name:
            db = self.catalog_name.rsplit(".", 1)[0]
            self.spark.sql(f"CREATE DATABASE IF NOT EXISTS {db}")
            self.spark.sql(f"CREATE TABLE IF NOT EXISTS {self.catalog_name} USING delta LOCATION '{self.location}'")

    def detail(self):
        return self.spark.sql(f"DESCRIBE DETAIL {self.sql_name}").collect()[0]

    def snapshot(self) -> Any:
        """The table's latest snapshot (a JVM ``org.apache.spark.sql.delta.Snapshot``): its version,
        metadata and file list come from the log Delta already read, without a Spark job (``DESCRIBE
        DETAIL`` and ``DESCRIBE HISTORY`` each run one)."""
        jvm: Any = self.spark._jvm  # type: ignore[attr-defined]
        delta_log = jvm.org.apache.spark.sql.delta.DeltaLog.forTable(self.spark._jsparkSession,  # type: ignore[attr-defined]
                                                                     self.location)
        return delta_log.update(getattr(delta_log, "update$default$1")(), getattr(delta_log, "update$default$2")(),
                                getattr(delta_log, "update$default$3")())

    def stats_from_checksum(self) -> tuple[int, int, int] | None:
        """``file_stats`` from the files the version's checksum lists, or ``None`` if it lists none."""
        checksum = self.snapshot().checksumOpt()
        if checksum.isEmpty() or checksum.get().allFiles().isEmpty():
            return None
        jvm: Any = self.spark._jvm  # type: ignore[attr-defined]
        files = rows = size = 0
        for add in jvm.scala.jdk.javaapi.CollectionConverters.asJava(checksum.get().allFiles().get()):
            vector = add.deletionVector()
            counted = counted_rows(add.stats(), int(vector.cardinality()) if vector is not None else 0)
            if counted is None:
                return None
            files, rows, size = files + 1, rows + counted, size + int(add.size())
        return files, rows, size

    def files(self) -> "DataFrame":
        """The current version's ``AddFile`` actions (path, partitionValues, size, stats, ...)."""
        from pyspark.sql import DataFrame

        return DataFrame(self.snapshot().allFiles().toDF(), self.spark)

    def uuid(self) -> str:
        return str(self.snapshot().metadata().id())

    def version(self) -> int:
        return int(self.snapshot().version())

    def batch_committed(self, number: int) -> bool:
        """Registration batch ``number`` is in the table (its commit carries the batch number).

        Read from the table history; should the history have been cleaned up meanwhile, the
        batch is replayed and Delta skips it by its txn version anyway.
        """
        marker = f"lakehouse register batch {number}"
        return bool(self.spark.sql(f"DESCRIBE HISTORY {self.sql_name}")
                    .where(f"userMetadata = '{marker}'").limit(1).collect())

    def columns(self) -> dict[str, str]:
        schema = self.spark.read.format("delta").load(self.location).schema
        return {f.name: f.dataType.simpleString() for f in schema.fields}

    def partition_columns(self) -> list[str]:
        columns = self.snapshot().metadata().partitionColumns()  # a Scala Seq[String]
        return [str(columns.apply(i)) for i in range(columns.size())]

    def create(self, columns: Sequence[tuple[str, str]], partition_columns: Sequence[str]) -> None:
        cols = ", ".join(f"`{name}` {ty}" for name, ty in columns)
        parts = ", ".join(f"`{c}`" for c in partition_columns)
        self.spark.sql(
            f"CREATE TABLE IF NOT EXISTS {self.sql_name} ({cols}) USING delta"
            + (f" PARTITIONED BY ({parts})" if parts else "")
        )
        self.declare()

    def add_columns(self, columns: Sequence[tuple[str, str]]) -> None:
        if columns:
            cols = ", ".join(f"`{name}` {ty}" for name, ty in columns)
            self.spark.sql(f"ALTER TABLE {self.sql_name} ADD COLUMNS ({cols})")

    def widen_columns(self, columns: Sequence[tuple[str, str, str]]) -> None:
        if columns:  # schema_evolution refuses these for Delta; keep the guard here too
            raise ValueError(f"Delta column widening is not supported: {columns}")

    def read_edge_files(self, root: LakeLocation, files: Sequence[EdgeFile]) -> "DataFrame":
        """The rows of ``files``, cast to this table's schema (partition values from the path)."""
        from pyspark.sql import functions as F

        key = "spark.sql.sources.partitionColumnTypeInference.enabled"
        previous = self.spark.conf.get(key, "true") or "true"
        # Partition values are read as the strings in the path (Spark unescapes them and maps
        # the Hive default partition to NULL), then cast to the table's types: inference would
        # otherwise guess per batch (sensor=007 -> int 7).
        self.spark.conf.set(key, "false")
        try:
            df = (self.spark.read.option("basePath", root.uri)
                  .parquet(*[root.child(f.relative_path) for f in files]))
        finally:
            self.spark.conf.set(key, previous)
        present = {c.lower(): c for c in df.columns}
        exprs = []
        for name, ty in self.columns().items():
            source = present.get(name.lower())
            exprs.append((F.col(f"`{source}`") if source else F.lit(None)).cast(ty).alias(name))
        return df.select(*exprs)

    def append_files(self, root: LakeLocation, files: Sequence[EdgeFile], batch: int, app_id: str) -> None:
        """Append the rows of ``files`` as Delta transaction ``(app_id, batch)``.

        If Delta already committed this (app id, version) -- a batch replayed after a crash --
        Delta skips the write itself, so a batch is never appended twice.
        """
        (self.read_edge_files(root, files).write.format("delta").mode("append")
         .option("txnAppId", app_id).option("txnVersion", str(batch))
         .option("userMetadata", f"lakehouse register batch {batch}")
         .save(self.location))

    def file_stats(self) -> tuple[int, int, int]:
        """(data files, rows, bytes) of the current version.

        From the file list, as Iceberg's ``data_files`` gives them: every file Spark writes into a
        Delta table carries its row count (``stats.numRecords``), less the rows a deletion vector
        hides. Only when some file has no count (written without statistics) is the table scanned.
        A version's checksum file lists its files when there are few (Delta's
        ``allFilesInCrc``, under 50 files by default): then no Spark job reads the log for them
        (that job cost a register run as much as its append).
        """
        listed = self.stats_from_checksum()
        return listed if listed is not None else self.stats_from_file_list()

    def stats_from_file_list(self) -> tuple[int, int, int]:
        """``file_stats`` from the snapshot's file list (a Spark job over the log)."""
        row = self.files().selectExpr(
            "count(*) AS files", "coalesce(sum(size), 0) AS bytes",
            "coalesce(sum(CAST(get_json_object(stats, '$.numRecords') AS BIGINT)"
            " - coalesce(deletionVector.cardinality, 0)), 0) AS rows",
            "count_if(get_json_object(stats, '$.numRecords') IS NULL) AS uncounted",
        ).collect()[0]
        rows = row.rows if row.uncounted == 0 else self.spark.read.format("delta").load(self.location).count()
        return int(row.files), int(rows), int(row.bytes)


def counted_rows(stats: str | None, deleted: int) -> int | None:
    """Rows a Delta ``AddFile`` holds: its ``stats.numRecords`` less ``deleted`` (the cardinality
    of its deletion vector), or ``None`` when the file was written without statistics.

    >>> counted_rows('{"numRecords":50,"minValues":{"id":0}}', 0), counted_rows('{"numRecords":50}', 10)
    (50, 40)
    >>> counted_rows(None, 0) is None, counted_rows('{"minValues":{}}', 0) is None
    (True, True)
    """
    if not stats:
        return None
    records = json.loads(stats).get("numRecords")
    return None if records is None else int(records) - deleted


def declare_warehouse_tables(spark: "SparkSession") -> list[str]:
    """Declare every Delta table under ``spark.sql.warehouse.dir`` (``<db>.db/<table>``) by name.

    A local session has no persistent metastore: this makes ``db.table`` resolve in a fresh
    session (the ``sql`` command) for the tables the jobs created. Returns the names declared.
    """
    import pyarrow.fs as pafs

    warehouse = LakeLocation.parse(str(spark.conf.get("spark.sql.warehouse.dir")))
    fs, base = warehouse.filesystem()
    declared = []
    for db_dir in fs.get_file_info(pafs.FileSelector(base, allow_not_found=True)):
        if db_dir.type != pafs.FileType.Directory or not db_dir.base_name.endswith(".db"):
            continue
        for table_dir in fs.get_file_info(pafs.FileSelector(db_dir.path, allow_not_found=True)):
            log_dir = fs.get_file_info(f"{table_dir.path}/_delta_log")
            if table_dir.type == pafs.FileType.Directory and log_dir.type == pafs.FileType.Directory:
                name = f"{db_dir.base_name[:-3]}.{table_dir.base_name}"
                DeltaTable(spark, name).declare()
                declared.append(name)
    return declared
