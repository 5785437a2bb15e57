"""Table schema from edge Parquet files, and the rules for evolving it (pure Python, no Spark).

Both registration paths create and evolve a table by these rules: the ``lakehouse register`` job
(through Spark SQL DDL) and the data-lake sink's inline registrar (through pyiceberg).

Types are Spark SQL type strings (``bigint``, ``decimal(10,2)``, ``struct<`a`:int>``), the form
``DataType.simpleString()`` prints but with struct field names quoted (as
``lakehouse.schema_evolution.spark_type_text`` prints a live Spark table's types), so the result
drops straight into ``CREATE TABLE`` / ``ALTER TABLE`` whatever the names hold and compares with
a live table's schema.

Rules, per column of a new file against the table:

* same type, or a file column that is all NULL (Parquet ``null`` type): fine;
* the file is narrower and the reader promotes it (int -> bigint, float -> double, decimal
  precision up at the same scale): fine, nothing changes;
* the file is wider by such a promotion: the table column is widened (Iceberg only; Delta
  refuses, it has no in-place type change in this setup);
* a column the table does not have: added as a nullable column (schema evolution);
* with ``nested=True``, a struct column is merged by these same rules field by field
  (:mod:`stream_edge.lake.struct_merge`): new fields added, fields widened, at any depth;
* anything else: :class:`IncompatibleSchemaError`, naming the file, the column and both types.

Example::

    plan = plan_schema({"v": "double"}, [("p/f.parquet", pa.schema([("v", pa.float64()), ("x", pa.string())]))],
                       partition_columns=(), table_format="iceberg")
    plan.new_columns  # [('x', 'string')]
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Iterable, Sequence

from .partitioning import TIME_PARTITION_COLUMNS
from .struct_merge import is_struct, merge_struct
from .type_promotion import promotion

__all__ = ("IncompatibleSchemaError", "SchemaPlan", "VOID", "arrow_to_spark", "partition_column_types",
           "plan_schema", "promotion")

VOID = "void"


class IncompatibleSchemaError(ValueError):
    """A file's column type cannot be stored in the table's column (or vice versa)."""


def _quoted_field(name: str) -> str:
    """A struct field name as a quoted Spark SQL identifier (backticks, inner ones doubled)."""
    if not name:
        raise IncompatibleSchemaError("a struct field with an empty name has no Spark/Iceberg type")
    return "`" + name.replace("`", "``") + "`"


def arrow_to_spark(arrow_type: Any, *, table_format: str = "iceberg") -> str:
    """Spark SQL type string for a pyarrow type, as Spark/Iceberg read that Parquet column."""
    import pyarrow as pa
    import pyarrow.types as t

    ty = arrow_type
    if t.is_null(ty):
        return VOID
    if t.is_boolean(ty):
        return "boolean"
    if t.is_int8(ty) or t.is_int16(ty) or t.is_uint8(ty):
        # Iceberg has no byte/short: they are stored as int (Parquet INT32 anyway).
        return "int" if table_format == "iceberg" else ("tinyint" if t.is_int8(ty) else "smallint")
    if t.is_int32(ty) or t.is_uint16(ty):
        return "int"
    if t.is_int64(ty) or t.is_uint32(ty):
        return "bigint"
    if t.is_uint64(ty):
        raise IncompatibleSchemaError("unsigned 64-bit integers have no Spark/Iceberg type")
    if t.is_float16(ty) or t.is_float32(ty):
        return "float"
    if t.is_float64(ty):
        return "double"
    if t.is_string(ty) or t.is_large_string(ty) or (hasattr(t, "is_string_view") and t.is_string_view(ty)):
        return "string"
    if t.is_binary(ty) or t.is_large_binary(ty) or t.is_fixed_size_binary(ty):
        return "binary"
    if t.is_date(ty):
        return "date"
    if t.is_timestamp(ty):
        return "timestamp" if ty.tz else "timestamp_ntz"
    if t.is_decimal(ty):
        return f"decimal({ty.precision},{ty.scale})"
    if t.is_list(ty) or t.is_large_list(ty) or t.is_fixed_size_list(ty):
        return f"array<{arrow_to_spark(ty.value_type, table_format=table_format)}>"
    if t.is_map(ty):
        return (f"map<{arrow_to_spark(ty.key_type, table_format=table_format)},"
                f"{arrow_to_spark(ty.item_type, table_format=table_format)}>")
    if t.is_struct(ty):
        inner = ",".join(f"{_quoted_field(ty.field(i).name)}:{arrow_to_spark(ty.field(i).type, table_format=table_format)}"
                         for i in range(ty.num_fields))
        return f"struct<{inner}>"
    if t.is_dictionary(ty):
        return arrow_to_spark(ty.value_type, table_format=table_format)
    raise IncompatibleSchemaError(f"unsupported Parquet/Arrow type {ty} ({pa.__name__})")


@dataclass
class SchemaPlan:
    """What the table must look like to hold the new files."""

    create_columns: list[tuple[str, str]] = field(default_factory=list)  # only when creating
    new_columns: list[tuple[str, str]] = field(default_factory=list)
    widened_columns: list[tuple[str, str, str]] = field(default_factory=list)  # (name, old, new)
    #: fields added inside existing struct columns (``nested=True``): (path from the column, type)
    new_fields: list[tuple[tuple[str, ...], str]] = field(default_factory=list)
    #: fields widened inside existing struct columns: (path, old, new)
    widened_fields: list[tuple[tuple[str, ...], str, str]] = field(default_factory=list)
    #: the struct columns' types after the nested changes: {name: new type}
    merged_structs: dict[str, str] = field(default_factory=dict)

    @property
    def changes_schema(self) -> bool:
        return bool(self.new_columns or self.widened_columns or self.new_fields or self.widened_fields)


def plan_schema(
    table_columns: dict[str, str] | None,
    files: Iterable[tuple[str, object]],
    partition_columns: Sequence[str],
    table_format: str,
    nested: bool = False,
) -> SchemaPlan:
    """Decide the table schema for ``files`` (pairs of file name and pyarrow schema).

    ``table_columns`` is the live table's ``{name: type}`` (None: the table does not exist yet,
    the plan's ``create_columns`` is its schema, data columns first in first-seen order, then
    the partition columns in path order). ``nested``: struct columns evolve field by field
    (the plan's ``new_fields``/``widened_fields``), where the caller can apply such changes.
    """
    creating = table_columns is None
    current: dict[str, str] = dict(table_columns or {})
    lower = {name.lower(): name for name in current}
    plan = SchemaPlan()
    order: list[str] = list(current)
    for file_name, schema in files:
        for arrow_field in schema:  # type: ignore[attr-defined]
            name = arrow_field.name
            file_type = arrow_to_spark(arrow_field.type, table_format=table_format)
            existing = lower.get(name.lower())
            if existing is not None and existing != name:
                raise IncompatibleSchemaError(
                    f"file {file_name}: column {name!r} differs only in case from table column {existing!r}"
                )
            if existing is None:
                if file_type == VOID:
                    continue  # all NULL so far: add the column once a file tells its type
                current[name] = file_type
                lower[name.lower()] = name
                order.append(name)
                if not creating:
                    plan.new_columns.append((name, file_type))
                continue
            table_type = current[name]
            if file_type == VOID or promotion(file_type, table_type):
                continue
            if promotion(table_type, file_type):
                if table_format != "iceberg":
                    raise IncompatibleSchemaError(
                        f"file {file_name}: column {name!r} is {file_type} but the Delta table has "
                        f"{table_type}; widening a Delta column is not supported here"
                    )
                current[name] = file_type
                if creating or any(c == name for c, _ in plan.new_columns):
                    plan.new_columns = [(c, file_type if c == name else t) for c, t in plan.new_columns]
                else:
                    plan.widened_columns = [w for w in plan.widened_columns if w[0] != name]
                    original = (table_columns or {})[name]
                    plan.widened_columns.append((name, original, file_type))
                continue
            if nested and is_struct(table_type) and is_struct(file_type):
                _merge_nested(plan, current, name, file_type, file_name, table_format, creating)
                continue
            raise IncompatibleSchemaError(
                f"file {file_name}: column {name!r} has type {file_type}, incompatible with the "
                f"table's {table_type} (only new nullable columns and int->bigint, float->double, "
                f"decimal precision widening are accepted)"
            )
    if creating:
        data_cols = [c for c in order if c not in partition_columns]
        part_cols = [(c, current.get(c) or ("int" if c in TIME_PARTITION_COLUMNS else "string"))
                     for c in partition_columns]
        plan.create_columns = [(c, current[c]) for c in data_cols] + part_cols
    return plan


def _merge_nested(plan: SchemaPlan, current: dict[str, str], name: str, file_type: str, file_name: str,
                  table_format: str, creating: bool) -> None:
    """Merge a file's struct column into the table's (``current`` updated); the nested changes go
    to the plan unless the table is being created (or the column is new in this plan)."""
    try:
        merged = merge_struct(current[name], file_type, (name,), file_name, table_format, promotion, VOID)
    except ValueError as exc:
        raise IncompatibleSchemaError(str(exc)) from None
    if merged.type_text == current[name]:
        return
    current[name] = merged.type_text
    if creating or any(c == name for c, _ in plan.new_columns):
        plan.new_columns = [(c, merged.type_text if c == name else t) for c, t in plan.new_columns]
        return
    plan.merged_structs[name] = merged.type_text
    for path, kind in merged.new_fields:
        plan.new_fields.append((path, kind))
    for path, old, new in merged.widened_fields:
        added = [i for i, (p, _k) in enumerate(plan.new_fields) if p == path]
        if added:
            plan.new_fields[added[0]] = (path, new)
            continue
        earlier = [w for w in plan.widened_fields if w[0] == path]
        plan.widened_fields = [w for w in plan.widened_fields if w[0] != path]
        plan.widened_fields.append((path, earlier[0][1] if earlier else old, new))


def partition_column_types(plan: SchemaPlan, partition_columns: Sequence[str]) -> dict[str, str]:
    """Types of the partition columns in a creation plan."""
    types = dict(plan.create_columns)
    return {c: types[c] for c in partition_columns}
