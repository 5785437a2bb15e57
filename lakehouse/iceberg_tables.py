"""Iceberg table operations the jobs need: DDL and reads through Spark SQL, metadata and file
registration through pyiceberg (:mod:`lakehouse.iceberg_catalogs`), no JVM calls.

Registering edge files *in place* is the one commit the edge's inline registrar makes too
(:func:`stream_edge.lake.iceberg_registration.append_files`): exactly the files we choose (the
newest of a partition the edge is still writing to included, which Iceberg's ``add_files``
procedure, importing whole directories, cannot do), their metrics from the Parquet footers, and
the registration batch number as a table property in the same transaction, which makes a
replayed batch idempotent.

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
from stream_edge.lake.iceberg_registration import NAME_MAPPING_PROPERTY, append_files, set_name_mapping

if TYPE_CHECKING:  # pragma: no cover
    from pyspark.sql import SparkSession

BATCH_PROPERTY = "lakehouse.register.last-batch"
COMMIT_ATTEMPTS = 5  # commits of other writers (the edge's registrar, compaction) in between: retried


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
        self.py_identifier = (*parts[1:-1], parts[-1])
        self.write_branch: str | None = None  # append_files commits here instead of main (write-audit-publish)

    # -- lookup ---------------------------------------------------------------------------------
    def py_table(self) -> Any:
        """The pyiceberg ``Table``, freshly loaded so other writers' commits are seen."""
        from lakehouse.iceberg_catalogs import pyiceberg_catalog

        return pyiceberg_catalog(self.spark, self.catalog).load_table(self.py_identifier)

    def exists(self) -> bool:
        return bool(self.spark.catalog.tableExists(self.identifier))

    def refresh(self) -> None:
        self.spark.sql(f"REFRESH TABLE {self.sql_name}")

    def uuid(self) -> str:
        return str(self.py_table().metadata.table_uuid)

    def columns(self) -> dict[str, str]:
        self.refresh()
        return {f.name: spark_type_text(f.dataType) for f in self.spark.table(self.sql_name).schema.fields}

    def partition_columns(self) -> list[str]:
        table = self.py_table()
        schema = table.schema()
        return [schema.find_column_name(f.source_id) for f in table.spec().fields]

    def last_batch(self) -> int:
        value = self.py_table().properties.get(BATCH_PROPERTY)
        return int(value) if value else 0

    def batch_committed(self, number: int) -> bool:
        """Registration batch ``number`` is in the table (set atomically with its files)."""
        return self.last_batch() >= number

    def current_snapshot_id(self) -> int | None:
        snapshot = self.py_table().current_snapshot()
        return None if snapshot is None else int(snapshot.snapshot_id)

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

    def evolve_fields(self, new_fields: Sequence[tuple[Sequence[str], str]],
                      widened_fields: Sequence[tuple[Sequence[str], str, str]]) -> None:
        """Nested evolution: fields added inside struct columns (by their path), fields widened."""
        if new_fields:
            cols = ", ".join(f"{quote_field_path(path)} {ty}" for path, ty in new_fields)
            self.spark.sql(f"ALTER TABLE {self.sql_name} ADD COLUMNS ({cols})")
        for path, _old, new in widened_fields:
            self.spark.sql(f"ALTER TABLE {self.sql_name} ALTER COLUMN {quote_field_path(path)} TYPE {new}")
        self._update_name_mapping()

    def _update_name_mapping(self) -> None:
        # Edge files carry no Iceberg field ids: readers find columns by name through this
        # mapping, so it must list every column, including those added by evolution.
        set_name_mapping(self.py_table())
        self.refresh()

    # -- data -----------------------------------------------------------------------------------
    def append_files(self, root: LakeLocation, files: Sequence[EdgeFile], batch: int,
                     progress=None) -> None:
        """Append ``files`` in place, and set the batch property, in one atomic commit
        (:func:`stream_edge.lake.iceberg_registration.append_files`, the edge's own registrar's
        commit). A commit another writer made first is retried while the batch is not in."""
        from pyiceberg.exceptions import CommitFailedException

        table = self.py_table()
        missing = [c for c in self.partition_columns() if any(c not in f.partition_dict() for f in files)]
        if missing:
            raise ValueError(f"files under {root.uri} lack partition column(s) {missing}")
        uris = [root.child(f.relative_path) for f in files]
        for attempt in range(1, COMMIT_ATTEMPTS + 1):
            try:
                append_files(table, uris, properties={BATCH_PROPERTY: str(batch)},
                             snapshot_properties={"lakehouse.register.batch": str(batch)}, branch=self.write_branch)
                break
            except CommitFailedException:
                table = self.py_table()
                if int(table.properties.get(BATCH_PROPERTY) or 0) >= batch:
                    break  # in the table after all (the answer to our own commit was lost)
                if attempt == COMMIT_ATTEMPTS:
                    raise
        if progress is not None:
            progress(len(files), len(files))
        self.refresh()

    def file_stats(self) -> tuple[int, int, int]:
        """(data files, rows, bytes) of the current snapshot.

        From the running totals every Iceberg commit writes into its snapshot summary: no Spark
        job (a scan of the ``data_files`` metadata table cost as much as the append itself in a
        register run). The metadata table is the fallback where the totals cannot stand for it.
        """
        snapshot = self.py_table().current_snapshot()
        if snapshot is None:
            return 0, 0, 0
        summary = snapshot.summary
        totals = data_file_totals(dict(summary.additional_properties) if summary is not None else {})
        if totals is not None:
            return totals
        self.refresh()
        row = self.spark.sql(
            f"SELECT count(*) AS n, coalesce(sum(record_count), 0) AS r, "
            f"coalesce(sum(file_size_in_bytes), 0) AS b FROM {quote_ident(self.identifier + '.data_files')}"
        ).collect()[0]
        return int(row.n), int(row.r), int(row.b)
