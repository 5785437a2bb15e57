"""The expectations spec: the JSON file a data team writes per table, parsed and checked.

Pure Python (no Spark, no Great Expectations), so a spec can be checked before any engine starts
and the rules can be unit-tested. :mod:`lakehouse.quality` turns a parsed spec into Great
Expectations expectations and runs them.

Format (JSON; one object with an ``expectations`` list; unknown fields are errors, so a typo never
silently disables a check)::

    {
      "description": "optional free text",
      "expectations": [
        {"type": "columns_exist", "columns": ["sensor", "ts_ms", "temperature"]},
        {"type": "row_count_between", "min": 1},
        {"type": "not_null", "column": "sensor"},
        {"type": "between", "column": "temperature", "min": -50, "max": 150, "mostly": 0.999},
        {"type": "in_set", "column": "sensor", "values": ["sensor-a", "sensor-b"]},
        {"type": "regex", "column": "sensor", "pattern": "^sensor-[a-z0-9]+$"},
        {"type": "unique", "column": "seq"},
        {"type": "unique", "columns": ["sensor", "ts_ms"], "severity": "warning"}
      ]
    }

==================  ==========================================  ====================================
type                fields                                      Great Expectations class
==================  ==========================================  ====================================
not_null            column                                      ExpectColumnValuesToNotBeNull
between             column, min and/or max (numbers, inclusive) ExpectColumnValuesToBeBetween
in_set              column, values (non-empty list of scalars)  ExpectColumnValuesToBeInSet
regex               column, pattern (must match)                ExpectColumnValuesToMatchRegex
unique              column, or columns (2+: compound key)       ExpectColumnValuesToBeUnique /
                                                                ExpectCompoundColumnsToBeUnique
row_count_between   min and/or max (non-negative integers)      ExpectTableRowCountToBeBetween
columns_exist       columns (one check per column)              ExpectColumnToExist
==================  ==========================================  ====================================

Optional on every entry: ``severity`` (``critical``, the default, fails the job; ``warning`` and
``info`` are reported but do not fail it) and ``description`` (text shown in Data Docs). Optional
on the column-value types (not_null, between, in_set, regex, unique): ``mostly``, the fraction
of rows that must pass, ``0 < mostly <= 1`` (default 1). Nulls are ignored by between, in_set,
regex and unique (use not_null for them).

A bad spec raises :class:`QualitySpecError` naming the file, the entry and the field::

    sensor_readings.json: expectations[2] (between): field 'min': must be a number, got "cold"

Example::

    spec = load_spec("pipelines/quality/sensor_readings.json")
    print([e.label for e in spec.expectations])   # ['columns_exist(sensor,ts_ms,...)', ...]
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

SEVERITIES = ("critical", "warning", "info")
COMMON_FIELDS = ("type", "severity", "description")
# type -> (required fields, optional fields); "one of" rules are checked per type below.
FIELDS: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    "not_null": (("column",), ("mostly",)),
    "between": (("column",), ("min", "max", "mostly")),
    "in_set": (("column", "values"), ("mostly",)),
    "regex": (("column", "pattern"), ("mostly",)),
    "unique": ((), ("column", "columns", "mostly")),
    "row_count_between": ((), ("min", "max")),
    "columns_exist": (("columns",), ()),
}
EXPECTATION_TYPES = tuple(FIELDS)
TOP_LEVEL_FIELDS = ("expectations", "description")


class QualitySpecError(ValueError):
    """The expectations spec is unreadable or invalid (the message names file, entry and field)."""


@dataclass(frozen=True)
class ExpectationSpec:
    """One checked entry of the spec (``index`` is its position in ``expectations``)."""

    index: int
    type: str
    column: str | None = None
    columns: tuple[str, ...] = ()
    min: float | int | None = None
    max: float | int | None = None
    values: tuple[Any, ...] = ()
    pattern: str | None = None
    mostly: float | None = None
    severity: str = "critical"
    description: str | None = None

    @property
    def label(self) -> str:
        """Short name for reports: ``between(temperature)``, ``unique(sensor,ts_ms)``, ``row_count_between``."""
        target = self.column or ",".join(self.columns)
        return f"{self.type}({target})" if target else self.type


@dataclass(frozen=True)
class QualitySpec:
    """A parsed spec file."""

    source: str
    expectations: tuple[ExpectationSpec, ...]
    description: str | None = None
    raw: dict = field(default_factory=dict, repr=False, compare=False)


def load_spec(path: str | Path) -> QualitySpec:
    """Read and check the spec file at ``path`` (a local path or ``file://`` URI)."""
    text_path = str(path)
    if text_path.startswith("file://"):
        text_path = text_path[len("file://"):]
    file = Path(text_path)
    name = str(path)
    try:
        text = file.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise QualitySpecError(f"{name}: spec file not found") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise QualitySpecError(f"{name}: cannot read the spec file: {exc}") from None
    return parse_spec(text, source=name)


def parse_spec(text: str, source: str = "<spec>") -> QualitySpec:
    """Parse and check spec JSON text; ``source`` names it in error messages."""
    try:
        data = json.loads(text, object_pairs_hook=_no_duplicate_keys)
    except _DuplicateKey as exc:
        raise QualitySpecError(f"{source}: field {exc.args[0]!r} appears twice in one object") from None
    except json.JSONDecodeError as exc:
        raise QualitySpecError(
            f"{source}: not valid JSON: {exc.msg} at line {exc.lineno} column {exc.colno}") from None
    return spec_from_dict(data, source)


def spec_from_dict(data: Any, source: str = "<spec>") -> QualitySpec:
    """Check an already decoded spec (a dict shaped like the JSON file)."""
    if not isinstance(data, dict):
        raise QualitySpecError(f"{source}: the spec must be a JSON object with an 'expectations' list, "
                               f"got {_kind(data)}")
    unknown = [k for k in data if k not in TOP_LEVEL_FIELDS]
    if unknown:
        raise QualitySpecError(f"{source}: unknown top-level field {unknown[0]!r} "
                               f"(allowed: {', '.join(TOP_LEVEL_FIELDS)})")
    if "expectations" not in data:
        raise QualitySpecError(f"{source}: missing field 'expectations' (a non-empty list)")
    entries = data["expectations"]
    if not isinstance(entries, list) or not entries:
        raise QualitySpecError(f"{source}: field 'expectations' must be a non-empty list, got {_show(entries)}")
    description = data.get("description")
    if description is not None and not isinstance(description, str):
        raise QualitySpecError(f"{source}: field 'description' must be a string, got {_show(description)}")
    parsed = tuple(_entry(source, i, entry) for i, entry in enumerate(entries))
    return QualitySpec(source=source, expectations=parsed, description=description, raw=data)


# -- one entry ------------------------------------------------------------------------------------

class _EntryChecker:
    """Field readers that raise errors naming the file, the entry and the field."""

    def __init__(self, source: str, index: int, entry: dict, kind: str | None) -> None:
        self.source, self.index, self.entry, self.kind = source, index, entry, kind

    def fail(self, message: str, field_name: str | None = None) -> QualitySpecError:
        where = f"{self.source}: expectations[{self.index}]" + (f" ({self.kind})" if self.kind else "")
        what = f"field {field_name!r}: " if field_name else ""
        return QualitySpecError(f"{where}: {what}{message}")

    def name(self, key: str) -> str:
        value = self.entry[key]
        if not isinstance(value, str) or not value.strip():
            raise self.fail(f"must be a non-empty column name, got {_show(value)}", key)
        return value

    def names(self, key: str) -> tuple[str, ...]:
        value = self.entry[key]
        if not isinstance(value, list) or not value:
            raise self.fail(f"must be a non-empty list of column names, got {_show(value)}", key)
        for i, item in enumerate(value):
            if not isinstance(item, str) or not item.strip():
                raise self.fail(f"item {i} must be a non-empty column name, got {_show(item)}", key)
        dupes = sorted({c for c in value if value.count(c) > 1})
        if dupes:
            raise self.fail(f"lists {dupes[0]!r} more than once", key)
        return tuple(value)

    def number(self, key: str, integer: bool = False) -> float | int | None:
        if key not in self.entry:
            return None
        value = self.entry[key]
        if isinstance(value, bool) or not isinstance(value, (int, float)) or \
                (isinstance(value, float) and not math.isfinite(value)):
            raise self.fail(f"must be {'an integer' if integer else 'a number'}, got {_show(value)}", key)
        if integer and (isinstance(value, float) or value < 0):
            raise self.fail(f"must be a non-negative integer, got {_show(value)}", key)
        return value


def _entry(source: str, index: int, entry: Any) -> ExpectationSpec:
    if not isinstance(entry, dict):
        raise QualitySpecError(f"{source}: expectations[{index}]: must be an object with a 'type', got {_kind(entry)}")
    kind = entry.get("type")
    check = _EntryChecker(source, index, entry, kind if isinstance(kind, str) else None)
    if "type" not in entry:
        raise check.fail(f"missing; one of {', '.join(EXPECTATION_TYPES)}", "type")
    if kind not in FIELDS:
        raise check.fail(f"unknown expectation type {_show(kind)}; one of {', '.join(EXPECTATION_TYPES)}", "type")
    required, optional = FIELDS[kind]
    allowed = COMMON_FIELDS + required + optional
    for key in entry:
        if key not in allowed:
            hint = ("'mostly' applies only to not_null, between, in_set, regex and unique"
                    if key == "mostly" else f"allowed for {kind}: {', '.join(allowed)}")
            raise check.fail(f"unknown field ({hint})", key)
    for key in required:
        if key not in entry:
            raise check.fail("missing (required for this type)", key)

    severity = entry.get("severity", "critical")
    if severity not in SEVERITIES:
        raise check.fail(f"must be one of {', '.join(SEVERITIES)}, got {_show(severity)}", "severity")
    description = entry.get("description")
    if description is not None and not isinstance(description, str):
        raise check.fail(f"must be a string, got {_show(description)}", "description")
    mostly = check.number("mostly")
    if mostly is not None and not 0 < mostly <= 1:
        raise check.fail(f"must be a fraction with 0 < mostly <= 1, got {_show(mostly)}", "mostly")
    common: dict[str, Any] = {"index": index, "type": kind, "severity": severity, "description": description,
                              "mostly": None if mostly is None else float(mostly)}

    if kind in ("not_null", "between", "in_set", "regex"):
        common["column"] = check.name("column")
    if kind in ("between", "row_count_between"):
        integer = kind == "row_count_between"
        low, high = check.number("min", integer), check.number("max", integer)
        if low is None and high is None:
            raise check.fail("needs 'min', 'max' or both", "min")
        if low is not None and high is not None and low > high:
            raise check.fail(f"{_show(low)} is greater than max {_show(high)}", "min")
        common.update(min=low, max=high)
    elif kind == "in_set":
        values = entry["values"]
        if not isinstance(values, list) or not values:
            raise check.fail(f"must be a non-empty list, got {_show(values)}", "values")
        for i, value in enumerate(values):
            if value is None or isinstance(value, (list, dict)):
                raise check.fail(f"item {i} must be a string, number or boolean, got {_show(value)}", "values")
        common["values"] = tuple(values)
    elif kind == "regex":
        pattern = entry["pattern"]
        if not isinstance(pattern, str) or not pattern:
            raise check.fail(f"must be a non-empty regular expression, got {_show(pattern)}", "pattern")
        try:
            re.compile(pattern)
        except re.error as exc:
            raise check.fail(f"not a valid regular expression: {exc}", "pattern") from None
        common["pattern"] = pattern
    elif kind == "unique":
        if ("column" in entry) == ("columns" in entry):
            raise check.fail("give exactly one of 'column' (one column) or 'columns' (a compound key)", "column")
        if "column" in entry:
            common["column"] = check.name("column")
        else:
            columns = check.names("columns")
            if len(columns) == 1:
                common["column"] = columns[0]
            else:
                common["columns"] = columns
    elif kind == "columns_exist":
        common["columns"] = check.names("columns")
    return ExpectationSpec(**common)


# -- helpers --------------------------------------------------------------------------------------

class _DuplicateKey(ValueError):
    pass


def _no_duplicate_keys(pairs: list[tuple[str, Any]]) -> dict:
    out: dict = {}
    for key, value in pairs:
        if key in out:
            raise _DuplicateKey(key)
        out[key] = value
    return out


def _kind(value: Any) -> str:
    return {dict: "an object", list: "a list", str: "a string", bool: "a boolean",
            type(None): "null"}.get(type(value), "a number" if isinstance(value, (int, float)) else type(value).__name__)


def _show(value: Any) -> str:
    """A value as it looked in the JSON, shortened."""
    try:
        text = json.dumps(value)
    except (TypeError, ValueError):
        text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."
