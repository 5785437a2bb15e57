"""Schema planning rules for registering edge files (pure Python)."""

from __future__ import annotations

import pyarrow as pa
import pytest

from lakehouse.schema_evolution import IncompatibleSchemaError, arrow_to_spark, plan_schema


def test_creation_schema_puts_partition_columns_last_with_file_types():
    files = [("f1", pa.schema([("ts_ms", pa.int64()), ("v", pa.float64()), ("year", pa.int32())])),
             ("f2", pa.schema([("ts_ms", pa.int64()), ("tags", pa.list_(pa.string()))]))]
    plan = plan_schema(None, files, partition_columns=["year", "sensor"], table_format="iceberg")
    assert plan.create_columns == [("ts_ms", "bigint"), ("v", "double"), ("tags", "array<string>"),
                                   ("year", "int"), ("sensor", "string")]


def test_new_nullable_columns_and_safe_widening():
    table = {"ts_ms": "bigint", "v": "float", "n": "int"}
    files = [("f", pa.schema([("ts_ms", pa.int32()), ("v", pa.float64()), ("n", pa.int64()), ("unit", pa.string())]))]
    plan = plan_schema(table, files, partition_columns=[], table_format="iceberg")
    assert plan.new_columns == [("unit", "string")]
    assert plan.widened_columns == [("v", "float", "double"), ("n", "int", "bigint")]


def test_all_null_columns_wait_for_a_real_type():
    plan = plan_schema({"a": "string"}, [("f", pa.schema([("a", pa.null()), ("b", pa.null())]))], [], "iceberg")
    assert not plan.changes_schema


@pytest.mark.parametrize("table_type, arrow_type, fmt", [
    ("bigint", pa.string(), "iceberg"), ("string", pa.int64(), "delta"), ("double", pa.int64(), "iceberg"),
    ("int", pa.int64(), "delta"), ("timestamp", pa.timestamp("us"), "iceberg"),
])
def test_incompatible_changes_name_file_column_and_types(table_type, arrow_type, fmt):
    with pytest.raises(IncompatibleSchemaError, match=r"file f\.parquet: column 'c'"):
        plan_schema({"c": table_type}, [("f.parquet", pa.schema([("c", arrow_type)]))], [], fmt)


def test_case_only_difference_is_refused():
    with pytest.raises(IncompatibleSchemaError, match="differs only in case"):
        plan_schema({"Value": "double"}, [("f", pa.schema([("value", pa.float64())]))], [], "iceberg")


def test_arrow_type_mapping():
    assert arrow_to_spark(pa.timestamp("ms", tz="UTC")) == "timestamp"
    assert arrow_to_spark(pa.timestamp("ms")) == "timestamp_ntz"
    assert arrow_to_spark(pa.int16()) == "int"
    assert arrow_to_spark(pa.int16(), table_format="delta") == "smallint"
    assert arrow_to_spark(pa.decimal128(10, 2)) == "decimal(10,2)"
    assert arrow_to_spark(pa.struct([("a", pa.int32()), ("b", pa.map_(pa.string(), pa.float64()))])) == \
        "struct<`a`:int,`b`:map<string,double>>"
