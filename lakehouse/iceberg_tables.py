"""Iceberg table operations the jobs need, through Spark SQL and Iceberg's Java API (py4j).

Registering edge files *in place* uses the same building blocks as Iceberg's ``add_files``
procedure (Parquet footer metrics, a name mapping for files without field ids, partition values
from the Hive path) but appends exactly the files we choose, in one transaction that also
records the registration batch number as a table property. ``add_files`` itself imports whole
partition directories, which cannot register the newest files of a partition the edge is still
writing to; it also has no way to make the commit idempotent.

Example::

    ice = IcebergTable(spark, "lake.db.sensor_readings")
    if not ice.exists():
        ice.create([("v", "double"), ("year", "int")], ["year"])
    ice.append_files(root, files, batch=1)
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Sequence

from lakehouse.identifiers import quote_field_path, quote_identifier, quote_table_name, split_multipart
from lakehouse.lake_files import EdgeFile, LakeLocation
from lakehouse.schema_evolution import spark_type_text

if TYPE_CHECKING:  # pragma: no cover
    from pyspark.sql import SparkSession

BATCH_PROPERTY = "lakehouse.register.last-batch"
NAME_MAPPING_PROPERTY = "schema.name-mapping.default"


def quote_ident(identifier: str) -> str:
    """``cat.db.t`` -> ```cat`.`db`.`t``` (:func:`lakehouse.identifiers.quote_table_name`)."""
    return quote_table_name(identifier)


#: snapshot summary keys of the running totals, in the order file_stats returns them
_TOTALS = ("total-data-files", "total-records", "total-files-size")


def data_file_totals(summary: dict[str, str]) -> tuple[int, int, int] | None:
    """(data files, rows, bytes) from a snapshot summary's running totals, or ``None`` when they
    do not say what the ``data_files`` metadata table would: a total is missing (a writer that keeps
    none), or delete files exist (``total-files-size`` counts them too).

    >>> data_file_totals({"total-data-files": "3", "total-records": "157", "total-files-size": "4096",
    ...                   "total-delete-files": "0"})
    (3, 157, 4096)
    >>> data_file_totals({"total-data-files": "3", "total-records": "157"}) is None
    True
    >>> data_file_totals({"total-data-files": "3", "total-records": "150", "total-files-size": "5000",
    ...                   "total-delete-files": "1"}) is None
    True
    """
    if any(key not in summary for key in _TOTALS) or int(summary.get("total-delete-files", "0")) != 0:
        return None
    files, rows, size = (int(summary[key]) for key in _TOTALS)
    return files, rows, size


class IcebergTable:
    """One Iceberg table addressed as ``catalog.namespace.table``."""

    table_format = "iceberg"

    def __init__(self, spark: "SparkSession", identifier: str) -> None:
        parts = split_multipart(identifier)
        if len(parts) < 3:
            raise ValueError(f"Iceberg table {identifier!r} must be catalog.namespace.table")
        self.spark = spark
        self.identifier = identifier
        self.sql_name = quote_ident(identifier)
        self.catalog = parts[0]
        self.namespace_parts = parts[1:-1]
        self.namespace = ".".join(parts[1:-1])
        self._jvm: Any = spark._jvm  # type: ignore[attr-defined]
        self.write_branch: str | None = None  # append_files commits here instead of main (write-audit-publish)

    # -- lookup ---------------------------------------------------------------------------------
    def java_table(self):
        """The Iceberg ``Table`` (Java), freshly loaded so other writers' commits are seen."""
        table = self._jvm.org.apache.iceberg.spark.Spark3Util.loadIcebergTable(
            self.spark._jsparkSession, self.identifier)  # type: ignore[attr-defined]
        table.refresh()
        return table

    def exists(self) -> bool:
        return bool(self.spark.catalog.tableExists(self.identifier))

    def refresh(self) -> None:
        self.spark.sql(f"REFRESH TABLE {self.sql_name}")

    def uuid(self) -> str:
        return str(self.java_table().uuid().toString())

    def columns(self) -> dict[str, str]:
        self.refresh()
        return {f.name: spark_type_text(f.dataType) for f in self.spark.table(self.sql_name).schema.fields}

    def partition_columns(self) -> list[str]:
        spec = self.java_table().spec()
        schema = self.java_table().schema()
        return [schema.findColumnName(f.sourceId()) for f in spec.fields()]

    def last_batch(self) -> int:
        value = self.java_table().properties().get(BATCH_PROPERTY)
        return int(value) if value else 0

    def batch_committed(self, number: int) -> bool:
        """Registration batch ``number`` is in the table (set atomically with its files)."""
        return self.last_batch() >= number

    # -- schema ---------------------------------------------------------------------------------
    def create(self, columns: Sequence[tuple[str, str]], partition_columns: Sequence[str]) -> None:
        self.spark.sql(f"CREATE NAMESPACE IF NOT EXISTS {quote_field_path([self.catalog, *self.namespace_parts])}")
        cols = ", ".join(f"{quote_identifier(name)} {ty}" for name, ty in columns)
        parts = ", ".join(quote_identifier(c) for c in partition_columns)
        self.spark.sql(
            f"CREATE TABLE IF NOT EXISTS {self.sql_name} ({cols}) USING iceberg"
            + (f" PARTITIONED BY ({parts})" if parts else "")
            + " TBLPROPERTIES ('format-version'='2', 'write.parquet.compression-codec'='zstd')"
        )
        self._update_name_mapping()

    def add_columns(self, columns: Sequence[tuple[str, str]]) -> None:
        if columns:
            cols = ", ".join(f"{quote_identifier(name)} {ty}" for name, ty in columns)
            self.spark.sql(f"ALTER TABLE {self.sql_name} ADD COLUMNS ({cols})")
        self._update_name_mapping()

    def widen_columns(self, columns: Sequence[tuple[str, str, str]]) -> None:
        for name, _old, new in columns:
            self.spark.sql(f"ALTER TABLE {self.sql_name} ALTER COLUMN {quote_identifier(name)} TYPE {new}")

    def _update_name_mapping(self) -> None:
        # Edge files carry no Iceberg field ids: readers find columns by name through this
        # mapping, so it must list every column, including those added by evolution.
        jvm = self._jvm
        table = self.java_table()
        mapping = jvm.org.apache.iceberg.mapping.MappingUtil.create(table.schema())
        table.updateProperties().set(
            NAME_MAPPING_PROPERTY, jvm.org.apache.iceberg.mapping.NameMappingParser.toJson(mapping)
        ).commit()

    # -- data -----------------------------------------------------------------------------------
    def append_files(self, root: LakeLocation, files: Sequence[EdgeFile], batch: int,
                     progress=None) -> int:
        """Append ``files`` in place, and set the batch property, in one atomic commit.

        Returns the number of rows added (from the Parquet footers).
        """
        jvm = self._jvm
        table = self.java_table()
        spec = table.spec()
        schema = table.schema()
        part_names = [schema.findColumnName(f.sourceId()) for f in spec.fields()]
        if table.properties().get(NAME_MAPPING_PROPERTY) is None:  # e.g. a crash right after CREATE
            self._update_name_mapping()
            table = self.java_table()
        mapping = jvm.org.apache.iceberg.mapping.NameMappingParser.fromJson(
            table.properties().get(NAME_MAPPING_PROPERTY))
        metrics_config = jvm.org.apache.iceberg.MetricsConfig.forTable(table)
        io = table.io()
        parquet_util = jvm.org.apache.iceberg.parquet.ParquetUtil
        data_files = jvm.org.apache.iceberg.DataFiles
        array_list = jvm.java.util.ArrayList

        def build(edge_file: EdgeFile):
            values = edge_file.partition_dict()
            missing = [c for c in part_names if c not in values]
            if missing:
                raise ValueError(f"file {root.child(edge_file.relative_path)} lacks partition column(s) {missing}")
            path = root.child(edge_file.relative_path)
            metrics = parquet_util.fileMetrics(io.newInputFile(path), metrics_config, mapping)
            data_file = (data_files.builder(spec).withPath(path).withFormat("parquet")
                         .withFileSizeInBytes(edge_file.size).withMetrics(metrics)
                         .withPartitionValues(array_list([values[c] for c in part_names])).build())
            return data_file, int(metrics.recordCount())

        # Footer reads and py4j round trips dominate: a few driver threads overlap them (py4j
        # gives each Python thread its own connection to the JVM).
        from concurrent.futures import ThreadPoolExecutor

        txn = table.newTransaction()
        append = txn.newAppend()
        if self.write_branch:
            append = append.toBranch(self.write_branch)
        rows = 0
        with ThreadPoolExecutor(max_workers=4, thread_name_prefix="iceberg-metrics") as pool:
            for i, (data_file, count) in enumerate(pool.map(build, files), 1):
                append.appendFile(data_file)
                rows += count
                if progress is not None:
                    progress(i, len(files))
        append.set("lakehouse.register.batch", str(batch))
        append.commit()
        txn.updateProperties().set(BATCH_PROPERTY, str(batch)).commit()
        txn.commitTransaction()
        self.refresh()
        return rows

    def file_stats(self) -> tuple[int, int, int]:
        """(data files, rows, bytes) of the current snapshot.

        From the running totals every Iceberg commit writes into its snapshot summary: no Spark
        job (a scan of the ``data_files`` metadata table cost as much as the append itself in a
        register run). The metadata table is the fallback where the totals cannot stand for it.
        """
        snapshot = self.java_table().currentSnapshot()
        if snapshot is None:
            return 0, 0, 0
        totals = data_file_totals(dict(snapshot.summary()))
        if totals is not None:
            return totals
        self.refresh()
        row = self.spark.sql(
            f"SELECT count(*) AS n, coalesce(sum(record_count), 0) AS r, "
            f"coalesce(sum(file_size_in_bytes), 0) AS b FROM {quote_ident(self.identifier + '.data_files')}"
        ).collect()[0]
        return int(row.n), int(row.r), int(row.b)
