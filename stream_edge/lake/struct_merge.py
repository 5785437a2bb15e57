"""Nested schema evolution: a struct column whose new files carry more (or wider) fields.

A Debezium change stream is the common case: a new column of the database table is a new field
of the envelope's ``after`` (and ``before``) struct. Flat columns evolve by
:func:`stream_edge.lake.schema_plan.plan_schema`'s rules; this module applies the same rules
inside structs, field by field, at any depth: a field the table lacks is added (nullable), a
field the reader promotes is fine, a wider one is widened (Iceberg only), anything else is
refused naming the field's path. Arrays and maps must match as before.

Types are the plan's Spark SQL type strings (``struct<`id`:bigint,`name`:string>``).

Example::

    merged = merge_struct("struct<`id`:int>", "struct<`id`:bigint,`fw`:string>", ("after",), "f.parquet", "iceberg")
    merged.type_text       # 'struct<`id`:bigint,`fw`:string>'
    merged.new_fields      # [(('after', 'fw'), 'string')]
    merged.widened_fields  # [(('after', 'id'), 'int', 'bigint')]
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Union

from .type_promotion import promotion as default_promotion

__all__ = ("StructMerge", "is_struct", "merge_struct", "parse_struct", "struct_text")

#: a parsed struct: its fields in order, each (name, type text or a nested parsed struct)
Fields = list[tuple[str, Union[str, "Fields"]]]


class _Refused(ValueError):
    pass


def is_struct(type_text: str) -> bool:
    return type_text.startswith("struct<")


def _name(text: str, at: int) -> tuple[str, int]:
    if text[at] == "`":
        out, i = [], at + 1
        while True:
            if text[i] == "`":
                if text.startswith("``", i):
                    out.append("`")
                    i += 2
                    continue
                return "".join(out), i + 1
            out.append(text[i])
            i += 1
    end = text.index(":", at)
    return text[at:end], end


def _type(text: str, at: int) -> tuple[str | Fields, int]:
    """One type from ``at`` (a struct parsed, any other type as its text) and where it ends."""
    if text.startswith("struct<", at):
        fields: Fields = []
        i = at + len("struct<")
        while text[i] != ">":
            name, i = _name(text, i)
            if text[i] != ":":
                raise ValueError(f"bad struct type text {text!r} at {i}")
            kind, i = _type(text, i + 1)
            fields.append((name, kind))
            if text[i] == ",":
                i += 1
        return fields, i + 1
    depth, i = 0, at
    while i < len(text):
        char = text[i]
        if char == "`":  # a quoted name inside an array's or map's struct
            _skipped, i = _name(text, i)
            continue
        if char in "<(":
            depth += 1
        elif char in ">)":
            if depth == 0:
                break
            depth -= 1
        elif char == "," and depth == 0:
            break
        i += 1
    return text[at:i], i


def parse_struct(type_text: str) -> Fields:
    """``struct<`a`:int,`b`:struct<`c`:string>>`` -> ``[('a', 'int'), ('b', [('c', 'string')])]``.

    >>> parse_struct("struct<`a b`:decimal(10,2),`c``d`:array<struct<`x`:int>>,e:struct<`f`:string>>")
    [('a b', 'decimal(10,2)'), ('c`d', 'array<struct<`x`:int>>'), ('e', [('f', 'string')])]
    """
    parsed, end = _type(type_text, 0)
    if not isinstance(parsed, list) or end != len(type_text):
        raise ValueError(f"not a struct type text: {type_text!r}")
    return parsed


def struct_text(fields: Fields) -> str:
    """The inverse of :func:`parse_struct` (names quoted as the plan quotes them)."""
    return "struct<" + ",".join("`" + name.replace("`", "``") + "`:" + (struct_text(kind) if isinstance(kind, list)
                                                                       else kind) for name, kind in fields) + ">"


def _has_void(kind: str | Fields, void: str) -> bool:
    if isinstance(kind, list):
        return any(_has_void(inner, void) for _name, inner in kind)
    return kind == void or f":{void}" in kind or f"<{void}" in kind


def _text(kind: str | Fields) -> str:
    return struct_text(kind) if isinstance(kind, list) else kind


@dataclass
class StructMerge:
    """The table's struct type after a file's struct is merged in, and what changed in it."""

    type_text: str
    new_fields: list[tuple[tuple[str, ...], str]] = field(default_factory=list)
    widened_fields: list[tuple[tuple[str, ...], str, str]] = field(default_factory=list)


def merge_struct(table_type: str, file_type: str, path: tuple[str, ...], file_name: str, table_format: str,
                 promotion: Callable[[str, str], bool] | None = None, void: str = "void") -> StructMerge:
    """Merge a file's struct type into the table's; raises ``ValueError`` naming the field path.

    >>> m = merge_struct("struct<`id`:int,`n`:string>", "struct<`id`:bigint,`fw`:struct<`v`:string>>", ("after",),
    ...                  "f.parquet", "iceberg")
    >>> m.type_text, m.new_fields, m.widened_fields
    ('struct<`id`:bigint,`n`:string,`fw`:struct<`v`:string>>', [(('after', 'fw'), 'struct<`v`:string>')], [(('after', 'id'), 'int', 'bigint')])
    >>> merge_struct("struct<`id`:int>", "struct<`id`:string>", ("after",), "f.parquet", "iceberg")
    Traceback (most recent call last):
    ValueError: file f.parquet: field after.id has type string, incompatible with the table's int
    """
    if promotion is None:
        promotion = default_promotion
    merged = StructMerge(table_type)
    fields = _merge(parse_struct(table_type), parse_struct(file_type), path, file_name, table_format, promotion,
                    void, merged)
    merged.type_text = struct_text(fields)
    return merged


def _merge(table: Fields, file: Fields, path: tuple[str, ...], file_name: str, table_format: str,
           promotion: Callable[[str, str], bool], void: str, out: StructMerge) -> Fields:
    result: Fields = list(table)
    index = {name: i for i, (name, _kind) in enumerate(table)}
    lower = {name.lower(): name for name in index}
    for name, file_kind in file:
        where = ".".join((*path, name))
        existing = lower.get(name.lower())
        if existing is not None and existing != name:
            raise ValueError(f"file {file_name}: field {where} differs only in case from the table's "
                             f"{'.'.join((*path, existing))}")
        if existing is None:
            if _has_void(file_kind, void):
                continue  # all NULL so far (or partly): added once a file tells its type
            result.append((name, file_kind))
            index[name], lower[name.lower()] = len(result) - 1, name
            out.new_fields.append(((*path, name), _text(file_kind)))
            continue
        table_kind = result[index[name]][1]
        if isinstance(table_kind, list) and isinstance(file_kind, list):
            result[index[name]] = (name, _merge(table_kind, file_kind, (*path, name), file_name, table_format,
                                                promotion, void, out))
            continue
        old, new = _text(table_kind), _text(file_kind)
        if new == void or promotion(new, old):
            continue
        if promotion(old, new) and table_format == "iceberg":
            result[index[name]] = (name, file_kind)
            added = [i for i, (p, _t) in enumerate(out.new_fields) if p == (*path, name)]
            if added:  # added by an earlier file of the same plan: add it wide
                out.new_fields[added[0]] = ((*path, name), new)
            else:
                earlier = [w for w in out.widened_fields if w[0] == (*path, name)]
                out.widened_fields = [w for w in out.widened_fields if w[0] != (*path, name)]
                out.widened_fields.append(((*path, name), earlier[0][1] if earlier else old, new))
            continue
        raise ValueError(f"file {file_name}: field {where} has type {new}, incompatible with the table's {old}")
    return result
