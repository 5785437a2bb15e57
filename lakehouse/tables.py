"""Open a target table by name and format: Iceberg (``catalog.db.table``) or Delta.

Example::

    table = open_table(spark, "lake.db.sensor_readings", "iceberg")
    table = open_table(spark, "delta.`/data/delta/sensor_readings`")   # format from the name
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Union

from lakehouse.delta_tables import DeltaTable
from lakehouse.iceberg_tables import IcebergTable

if TYPE_CHECKING:  # pragma: no cover
    from pyspark.sql import SparkSession

Table = Union[IcebergTable, DeltaTable]
TABLE_FORMATS = ("iceberg", "delta")


def resolve_format(table: str, table_format: str | None) -> str:
    """The table format: explicit, or ``delta`` for ``delta.`path``` names, else ``iceberg``."""
    if table_format:
        if table_format not in TABLE_FORMATS:
            raise ValueError(f"unknown table format {table_format!r}; use one of {', '.join(TABLE_FORMATS)}")
        return table_format
    return "delta" if table.strip().startswith("delta.`") else "iceberg"


def open_table(spark: "SparkSession", table: str, table_format: str | None = None,
               default_catalog: str | None = None) -> Table:
    """An Iceberg or Delta table handle. ``db.t`` gets ``default_catalog`` for Iceberg."""
    fmt = resolve_format(table, table_format)
    if fmt == "delta":
        return DeltaTable(spark, table)
    if table.count(".") == 1 and default_catalog:
        table = f"{default_catalog}.{table}"
    return IcebergTable(spark, table)
