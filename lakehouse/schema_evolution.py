"""A live Spark table's column types in the form of the schema plan, and the plan itself.

The rules for a table's schema (create from edge files, evolve for new ones) are the edge's
:mod:`stream_edge.lake.schema_plan`, which the data-lake sink's registrar runs too; this module
adds the Spark side: :func:`spark_type_text`, a Spark ``DataType`` as the type text the plan
compares with. The plan's names are re-exported for the jobs.

Example::

    plan = plan_schema({"v": "double"}, [("p/f.parquet", pa.schema([("v", pa.float64()), ("x", pa.string())]))],
                       partition_columns=(), table_format="iceberg")
    plan.new_columns  # [('x', 'string')]
"""

from __future__ import annotations

from typing import Any

from lakehouse.identifiers import quote_identifier
from stream_edge.lake.schema_plan import (VOID, IncompatibleSchemaError, SchemaPlan, arrow_to_spark,
                                          partition_column_types, plan_schema, promotion)

__all__ = ("IncompatibleSchemaError", "SchemaPlan", "VOID", "arrow_to_spark", "partition_column_types", "plan_schema",
           "promotion", "spark_type_text")


def spark_type_text(data_type: Any) -> str:
    """A Spark ``DataType`` as the type text :func:`arrow_to_spark` gives: ``simpleString()``, but
    with every struct field name quoted, so that it drops into DDL and compares equal whatever
    the names hold (``simpleString`` prints ``struct<content-type:string>``, which no parser
    reads back)."""
    if hasattr(data_type, "fields"):  # StructType
        return "struct<" + ",".join(f"{quote_identifier(f.name)}:{spark_type_text(f.dataType)}"
                                    for f in data_type.fields) + ">"
    if hasattr(data_type, "elementType"):  # ArrayType
        return f"array<{spark_type_text(data_type.elementType)}>"
    if hasattr(data_type, "keyType"):  # MapType
        return f"map<{spark_type_text(data_type.keyType)},{spark_type_text(data_type.valueType)}>"
    return str(data_type.simpleString())
