"""Small Spark SQL helpers the jobs share: a table's properties, and session confs set for one
statement (Iceberg reads ``spark.sql.iceberg.snapshot-property.*`` into the commit it makes).

SQL and the runtime conf only, so they work over Spark Connect too.

Example::

    properties = read_table_properties(spark, "`lake`.`db`.`devices`")
    with_snapshot_properties(spark, {"lakehouse.upsert.source-snapshot": "42"},
                             lambda: spark.sql("INSERT INTO ..."))
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable

if TYPE_CHECKING:  # pragma: no cover
    from pyspark.sql import SparkSession

__all__ = ("read_table_properties", "with_conf", "with_snapshot_properties")


def read_table_properties(spark: "SparkSession", sql_name: str) -> dict[str, str]:
    """``SHOW TBLPROPERTIES`` of a table (its quoted SQL name) as a dict."""
    return {str(r[0]): str(r[1]) for r in spark.sql(f"SHOW TBLPROPERTIES {sql_name}").collect()}


def with_conf(spark: "SparkSession", conf: dict[str, str], action: Callable[[], Any]) -> Any:
    """Run ``action()`` with the session's SQL ``conf`` set, each key restored afterwards."""
    before = {key: spark.conf.get(key, None) for key in conf}
    for key, value in conf.items():
        spark.conf.set(key, value)
    try:
        return action()
    finally:
        for key, previous in before.items():
            if previous is None:
                spark.conf.unset(key)
            else:
                spark.conf.set(key, previous)


def with_snapshot_properties(spark: "SparkSession", properties: dict[str, str], action: Callable[[], Any]) -> Any:
    """Run ``action()`` with ``properties`` in the summary of the Iceberg commit it makes."""
    return with_conf(spark, {f"spark.sql.iceberg.snapshot-property.{k}": v for k, v in properties.items()}, action)
