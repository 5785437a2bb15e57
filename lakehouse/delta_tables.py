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

import re
from typing import TYPE_CHECKING, Any, Sequence

from lakehouse.identifiers import quote_field_path, quote_identifier, split_multipart
from lakehouse.lake_files import EdgeFile, LakeLocation
from lakehouse.schema_evolution import spark_type_text

if TYPE_CHECKING:  # pragma: no cover
    from pyspark.sql import DataFrame, SparkSession

_PATH_FORM = re.compile(r"^delta\.`(?P<path>[^`]+)`$")


def delta_location(spark: "SparkSession", table: str) -> tuple[str, str | None]:
    """(location URI, catalog name or None) for a Delta table argument."""
    match = _PATH_FORM.match(table.strip())
    if match:
        return LakeLocation.parse(match.group("path")).uri, None
    parts = split_multipart(table)
    if parts[0] == "spark_catalog":
        parts = parts[1:]
    if len(parts) != 2 or not all(parts):
        raise ValueError(f"Delta table {table!r} must be db.table, spark_catalog.db.table or delta.`/path`")
    warehouse = str(spark.conf.get("spark.sql.warehouse.dir"))
    location = LakeLocation.parse(warehouse).child(f"{parts[0]}.db/{parts[1]}")
    return location, quote_field_path(["spark_catalog", parts[0], parts[1]])


#: Delta refuses these characters in column names unless the table maps columns by name
DELTA_NAME_CHARACTERS = set(" ,;{}()\n\t=")
COLUMN_MAPPING_PROPERTIES = ("'delta.columnMapping.mode' = 'name', 'delta.minReaderVersion' = '2', "
                             "'delta.minWriterVersion' = '5'")


def needs_column_mapping(name: str) -> bool:
    """A column name Delta takes only with column mapping (``delta.columnMapping.mode = name``),
    which stores columns under physical names of its own and keeps the name as metadata.

    >>> needs_column_mapping("content-type"), needs_column_mapping("two words")
    (False, True)
    """
    return bool(DELTA_NAME_CHARACTERS.intersection(name))


class DeltaTable:
    """One Delta table (by location, optionally also declared by name)."""

    table_format = "delta"

    def __init__(self, spark: "SparkSession", table: str) -> None:
        self.spark = spark
        self.identifier = table
        self.location, self.catalog_name = delta_location(spark, table)
        self.sql_name = f"delta.{quote_identifier(self.location)}"

    def exists(self) -> bool:
        """A Delta table is at the location (its ``_delta_log`` holds a commit or a checkpoint)."""
        import pyarrow.fs as pafs

        try:
            fs, base = LakeLocation.parse(self.location).filesystem()
        except ValueError:  # a scheme pyarrow cannot list: ask Spark
            exists = bool(self.spark.sql(f"DESCRIBE DETAIL {self.sql_name}").collect()[0].format == "delta")
        else:
            entries = fs.get_file_info(pafs.FileSelector(f"{base}/_delta_log", allow_not_found=True))
            exists = any(e.base_name.endswith((".json", ".parquet")) for e in entries)
        if exists:
            self.declare()
        return exists

    def declare(self) -> None:
        """Make the table reachable by name in this session (no-op for path-only tables)."""
        if self.catalog_name:
            db = self.catalog_name.rsplit(".", 1)[0]
            self.spark.sql(f"CREATE DATABASE IF NOT EXISTS {db}")
            self.spark.sql(f"CREATE TABLE IF NOT EXISTS {self.catalog_name} USING delta LOCATION '{self.location}'")

    def detail(self) -> Any:
        """``DESCRIBE DETAIL``'s row: id, partitionColumns, numFiles, sizeInBytes, properties (SQL:
        the same over Spark Connect, where delta-spark's Python ``DeltaTable`` needs Delta's own
        Connect plugin on the server)."""
        return self.spark.sql(f"DESCRIBE DETAIL {self.sql_name}").collect()[0]

    def file_partitions(self) -> list[dict]:
        """Every data file of the current version: ``{"partition": {column: value}, "size": bytes}``.

        Read through the ``_metadata`` column Spark gives every file source (a footer per file, no
        data columns): the partition values come by their column names, whatever physical names a
        column-mapped table stores them under.
        """
        from pyspark.sql import functions as F

        parts = self.partition_columns()
        df = self.spark.read.format("delta").load(self.location)
        aliases = [f"_part{i}" for i in range(len(parts))]
        rows = (df.select(F.col("_metadata.file_path").alias("_path"), F.col("_metadata.file_size").alias("_size"),
                          *[F.col(quote_identifier(c)).alias(a) for c, a in zip(parts, aliases)])
                .dropDuplicates(["_path"]).collect())
        return [{"partition": {c: (None if r[a] is None else str(r[a])) for c, a in zip(parts, aliases)},
                 "size": int(r["_size"])} for r in rows]

    def uuid(self) -> str:
        return str(self.detail().id)

    def version(self) -> int:
        return int(self.spark.sql(f"DESCRIBE HISTORY {self.sql_name} LIMIT 1").collect()[0].version)

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
        return {f.name: spark_type_text(f.dataType) for f in schema.fields}

    def partition_columns(self) -> list[str]:
        return [str(c) for c in self.detail().partitionColumns]

    def create(self, columns: Sequence[tuple[str, str]], partition_columns: Sequence[str]) -> None:
        cols = ", ".join(f"{quote_identifier(name)} {ty}" for name, ty in columns)
        parts = ", ".join(quote_identifier(c) for c in partition_columns)
        mapping = any(needs_column_mapping(name) for name, _ in columns)
        self.spark.sql(
            f"CREATE TABLE IF NOT EXISTS {self.sql_name} ({cols}) USING delta"
            + (f" PARTITIONED BY ({parts})" if parts else "")
            + (f" TBLPROPERTIES ({COLUMN_MAPPING_PROPERTIES})" if mapping else "")
        )
        self.declare()

    def add_columns(self, columns: Sequence[tuple[str, str]]) -> None:
        if columns:
            if any(needs_column_mapping(name) for name, _ in columns) and \
                    "delta.columnMapping.mode" not in (self.detail().properties or {}):
                self.spark.sql(f"ALTER TABLE {self.sql_name} SET TBLPROPERTIES ({COLUMN_MAPPING_PROPERTIES})")
            cols = ", ".join(f"{quote_identifier(name)} {ty}" for name, ty in columns)
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
            exprs.append((F.col(quote_identifier(source)) if source else F.lit(None)).cast(ty).alias(name))
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

        Files and bytes from ``DESCRIBE DETAIL``; rows from a count, which Delta answers from the
        files' statistics (less what deletion vectors hide) without reading data where every file
        has them, and by a scan where one has none.
        """
        detail = self.detail()
        rows = self.spark.read.format("delta").load(self.location).count()
        return int(detail.numFiles), int(rows), int(detail.sizeInBytes)


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
