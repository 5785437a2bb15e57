"""Identifiers are data: the one way a name from a record or the command line enters Spark SQL.

Column names come from the edge's records (a JSON key may hold a backtick, a dash, a dot, ``--``,
an SQL keyword, any unicode, any length) and table or column names from the command line. Pasted
into DDL as they are, ``content-type`` fails every statement and a name holding a backtick
rewrites it. Every statement the jobs build therefore quotes each name through
:func:`quote_identifier`: backticks around it, a backtick inside it doubled, which is how Spark's
parser reads a quoted identifier back. A nested field is a path of names, each quoted alone
(:func:`quote_field_path`); a dotted table name is split into its parts first, honouring parts
that are already quoted (:func:`split_multipart`).

Pure Python, no Spark.

Example::

    >>> quote_identifier("content-type"), quote_identifier("a`b")
    ('`content-type`', '`a``b`')
    >>> quote_field_path(["headers", "content.type"])
    '`headers`.`content.type`'
    >>> quote_table_name("lake.`my.db`.t")
    '`lake`.`my.db`.`t`'
"""

from __future__ import annotations

from typing import Iterable

__all__ = ("quote_identifier", "quote_field_path", "split_multipart", "quote_table_name", "sql_string")


def quote_identifier(name: str) -> str:
    """One name as a quoted Spark SQL identifier: in backticks, inner backticks doubled.

    >>> quote_identifier("select"), quote_identifier("`"), quote_identifier("x -- y")
    ('`select`', '````', '`x -- y`')
    """
    if not isinstance(name, str):
        raise TypeError(f"an identifier is a string, got {type(name).__name__} {name!r}")
    if name == "":
        raise ValueError("an empty name cannot be a Spark SQL identifier")
    return "`" + name.replace("`", "``") + "`"


def quote_field_path(parts: Iterable[str]) -> str:
    """A nested field (``struct.field.subfield``) with every part quoted on its own.

    >>> quote_field_path(["a.b", "c"])
    '`a.b`.`c`'
    """
    quoted = [quote_identifier(part) for part in parts]
    if not quoted:
        raise ValueError("a field path needs at least one name")
    return ".".join(quoted)


def split_multipart(text: str) -> list[str]:
    """The parts of a dotted name as written on a command line: ``a.b.c``, with any part in
    backticks (``lake.`my.db`.t``, a doubled backtick inside standing for one).

    >>> split_multipart("lake.db.t"), split_multipart("`a``b`.`c.d`")
    (['lake', 'db', 't'], ['a`b', 'c.d'])
    """
    parts: list[str] = []
    current: list[str] = []
    i, quoted_part = 0, False
    while i < len(text):
        ch = text[i]
        if ch == "`" and not current and not quoted_part:
            end = i + 1
            name: list[str] = []
            while True:
                if end >= len(text):
                    raise ValueError(f"unbalanced backtick in the name {text!r}")
                if text[end] == "`":
                    if text[end + 1:end + 2] == "`":
                        name.append("`")
                        end += 2
                        continue
                    break
                name.append(text[end])
                end += 1
            current, quoted_part = name, True
            i = end + 1
            if i < len(text) and text[i] != ".":
                raise ValueError(f"a quoted part of {text!r} must be followed by '.' or the end")
            continue
        if ch == ".":
            parts.append(_part(current, quoted_part, text))
            current, quoted_part = [], False
        elif ch == "`":
            raise ValueError(f"a backtick inside an unquoted part of {text!r}: quote the whole part")
        else:
            current.append(ch)
        i += 1
    parts.append(_part(current, quoted_part, text))
    return parts


def _part(chars: list[str], quoted: bool, text: str) -> str:
    part = "".join(chars)
    if not quoted:
        part = part.strip()
    if not part:
        raise ValueError(f"an empty part in the name {text!r}")
    return part


def quote_table_name(text: str) -> str:
    """A dotted table name (``catalog.db.table``, parts possibly quoted) with every part quoted.

    >>> quote_table_name("rest.db.t")
    '`rest`.`db`.`t`'
    """
    return quote_field_path(split_multipart(text))


def sql_string(text: str) -> str:
    r"""A Spark SQL string literal (backslash escapes; Spark joins adjacent literals, so a doubled
    quote would not escape).

    >>> print(sql_string("it's"))
    'it\'s'
    """
    return "'" + text.replace("\\", "\\\\").replace("'", "\\'") + "'"
