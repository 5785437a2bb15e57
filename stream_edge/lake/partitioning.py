"""Hive partition paths: escaping exactly as Hive/Spark do, time columns, NULL handling.

Spark writes a partition directory as ``escapePathName(column) + "=" + escapePathName(value)``
(``ExternalCatalogUtils``), with NULL and the empty string mapped to ``__HIVE_DEFAULT_PARTITION__``,
and reads it back with ``unescapePathName``. Writing the same way is what makes Spark read back
the exact original value. Escaping also makes the layout safe: ``/`` is always escaped, so a value
can never add a path level, and every level is ``name=value``, so no level can be ``..`` or ``.``
-- nothing can land outside the table root.

Example::

    >>> partition_path(["sensor", "year", "month"], ["a/b", "2024", "01"])
    'sensor=a%2Fb/year=2024/month=01'
    >>> escape_path_name("../x=%")
    '..%2Fx%3D%25'
    >>> parse_partition_path("sensor=a%2Fb/day=__HIVE_DEFAULT_PARTITION__")
    [('sensor', 'a/b'), ('day', None)]
"""

from __future__ import annotations

import datetime as _dt
import math
from typing import Any, Dict, Iterable, List, Optional, Sequence, Tuple

__all__ = (
    "DEFAULT_PARTITION_NAME", "TIME_PARTITION_COLUMNS", "escape_path_name", "unescape_path_name",
    "partition_value_string", "time_partition_values", "partition_segment", "partition_path",
    "parse_partition_path", "validate_hive_columns",
)

#: Hive's ``hive.exec.default.partition.name``; Spark reads it back as NULL.
DEFAULT_PARTITION_NAME = "__HIVE_DEFAULT_PARTITION__"

#: Hive columns derived from the timestamp column, in UTC, zero-padded.
TIME_PARTITION_COLUMNS = ("year", "month", "day", "hour")

# Spark's ExternalCatalogUtils.charToEscape (non-Windows): ASCII 0x01-0x1F, 0x7F and these
# punctuation characters. We also escape NUL (Spark does not, but no filesystem accepts it and
# Spark's unescape decodes %00 back to NUL).
_ESCAPED = frozenset(
    [chr(c) for c in range(0x00, 0x20)] + ["\x7f"]
    + ['"', "#", "%", "'", "*", "/", ":", "=", "?", "\\", "{", "[", "]", "^"]
)
_HEX = "0123456789ABCDEFabcdef"


def escape_path_name(text: str) -> str:
    """Escape a partition column name or value the way Hive/Spark do (``%XX``, uppercase hex)."""
    if not any(c in _ESCAPED for c in text):
        return text
    return "".join(f"%{ord(c):02X}" if c in _ESCAPED else c for c in text)


def unescape_path_name(text: str) -> str:
    """Inverse of :func:`escape_path_name`, as Spark's ``unescapePathName``: ``%XX`` -> char."""
    if "%" not in text:
        return text
    out = []
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if c == "%" and i + 2 < n and text[i + 1] in _HEX and text[i + 2] in _HEX:
            out.append(chr(int(text[i + 1:i + 3], 16)))
            i += 3
        else:
            out.append(c)
            i += 1
    return "".join(out)


def partition_value_string(value: Any) -> Optional[str]:
    """The text of a partition value, as Spark casts it to string; None for NULL/empty/NaN.

    Booleans are ``true``/``false`` (Spark/Java), bytes are decoded as UTF-8; everything else is
    ``str(value)``.
    """
    if value is None:
        return None
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (bytes, bytearray)):
        value = bytes(value).decode("utf-8", errors="replace")
    elif isinstance(value, float) and math.isnan(value):
        return None
    text = value if isinstance(value, str) else str(value)
    return text or None


def partition_segment(column: str, value: Any) -> str:
    """One path level ``column=value`` (escaped); NULL/empty go to the Hive default partition."""
    text = partition_value_string(value)
    escaped = DEFAULT_PARTITION_NAME if text is None else escape_path_name(text)
    return f"{escape_path_name(column)}={escaped}"


def partition_path(columns: Sequence[str], values: Sequence[Any]) -> str:
    """``col1=v1/col2=v2/...`` relative to the table root ('' when there are no hive columns)."""
    if len(columns) != len(values):
        raise ValueError(f"{len(columns)} hive columns but {len(values)} values")
    return "/".join(partition_segment(c, v) for c, v in zip(columns, values))


def parse_partition_path(path: str) -> List[Tuple[str, Optional[str]]]:
    """Parse ``col=value/...`` back into ``[(column, value or None), ...]`` (Spark's reading)."""
    result = []
    for segment in (s for s in path.strip("/").split("/") if s):
        name, sep, raw = segment.partition("=")
        if not sep or not name:
            raise ValueError(f"not a partition directory: {segment!r} in {path!r}")
        value = None if raw == DEFAULT_PARTITION_NAME else unescape_path_name(raw)
        result.append((unescape_path_name(name), value))
    return result


def time_partition_values(timestamp_ms: Optional[float]) -> Dict[str, Optional[str]]:
    """``{"year": "2024", "month": "01", "day": "05", "hour": "07"}`` in UTC; all None for None."""
    if timestamp_ms is None:
        return dict.fromkeys(TIME_PARTITION_COLUMNS)
    moment = _dt.datetime.fromtimestamp(timestamp_ms / 1000.0, tz=_dt.timezone.utc)
    return {"year": f"{moment.year:04d}", "month": f"{moment.month:02d}",
            "day": f"{moment.day:02d}", "hour": f"{moment.hour:02d}"}


def validate_hive_columns(hive_columns: Optional[Iterable[str]]) -> List[str]:
    """Check the configured hive columns: non-empty distinct strings, time columns in a sane order."""
    columns = list(hive_columns or ())
    for column in columns:
        if not isinstance(column, str) or not column:
            raise ValueError(f"hive column names must be non-empty strings, got {column!r}")
    duplicates = sorted({c for c in columns if columns.count(c) > 1})
    if duplicates:
        raise ValueError(f"hive columns must be distinct; repeated: {duplicates}")
    return columns
