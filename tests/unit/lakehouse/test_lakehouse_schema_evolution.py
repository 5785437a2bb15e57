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


def _after(*fields):
    return pa.schema([("op", pa.string()), ("after", pa.struct(list(fields)))])


def test_nested_struct_fields_evolve_when_asked():
    """A Debezium ``after`` gaining a column (and widening one, deeper down): with ``nested=True``
    the plan adds and widens the fields by path; without it the file is refused as before."""
    table = {"op": "string", "after": "struct<`id`:int,`name`:string,`geo`:struct<`lat`:float>>"}
    files = [("f1", _after(("id", pa.int64()), ("name", pa.string()), ("fw", pa.string()))),
             ("f2", _after(("id", pa.int32()), ("geo", pa.struct([("lat", pa.float64()), ("alt", pa.int32())]))))]
    plan = plan_schema(table, files, [], "iceberg", nested=True)
    assert plan.new_fields == [(("after", "fw"), "string"), (("after", "geo", "alt"), "int")]
    assert plan.widened_fields == [(("after", "id"), "int", "bigint"), (("after", "geo", "lat"), "float", "double")]
    assert plan.merged_structs == {
        "after": "struct<`id`:bigint,`name`:string,`geo`:struct<`lat`:double,`alt`:int>,`fw`:string>"}
    assert not plan.new_columns and plan.changes_schema
    with pytest.raises(IncompatibleSchemaError, match="column 'after'"):
        plan_schema(table, files[:1], [], "iceberg")


def test_nested_incompatible_field_names_its_path():
    table = {"after": "struct<`id`:int,`geo`:struct<`lat`:double>>"}
    bad = pa.schema([("after", pa.struct([("geo", pa.struct([("lat", pa.string())]))]))])
    with pytest.raises(IncompatibleSchemaError, match=r"file f\.parquet: field after\.geo\.lat has type string"):
        plan_schema(table, [("f.parquet", bad)], [], "iceberg", nested=True)
    unchanged = plan_schema(table, [("f", pa.schema([("after", pa.struct([("id", pa.int32()), ("x", pa.null())]))]))],
                            [], "iceberg", nested=True)
    assert not unchanged.changes_schema  # a subset, and an all-NULL new field waits for a type
