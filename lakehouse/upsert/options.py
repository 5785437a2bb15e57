"""What an ``upsert`` run is asked to do and what it reports (pure: no Spark).

Example::

    options = UpsertOptions(source="lake.db.devices_changelog", table="lake.db.devices")
    parse_partition_by("bucket(16, key), region")   # [PartitionField('bucket', 'key', 16), ...]
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

__all__ = ("BOOKMARK_PROPERTY", "CDC_MODES", "DEFAULT_MERGE_MODE", "MERGE_MODES", "PartitionField",
           "SOURCE_PROPERTY", "UpsertOptions", "UpsertReport", "parse_partition_by")

#: the snapshot summary entry of every merge: the source snapshot the table reflects (the bookmark)
BOOKMARK_PROPERTY = "lakehouse.upsert.source-snapshot"
SOURCE_PROPERTY = "lakehouse.upsert.source"
MERGE_MODES = ("merge-on-read", "copy-on-write")
#: merge-on-read with deletion vectors (format v3): the merge writes the changed rows and one small
#: deletion vector per touched data file, never equality deletes; ``bench/upsert_bench.py`` and
#: docs/keyed-tables.md give the figures behind the choice
DEFAULT_MERGE_MODE = "merge-on-read"
CDC_MODES = ("debezium",)
_TRANSFORMS = ("bucket", "truncate", "years", "months", "days", "hours", "identity")


@dataclass(frozen=True)
class PartitionField:
    """One ``--partition-by`` entry: a column and its Iceberg transform (``identity`` for none)."""

    transform: str
    column: str
    width: int | None = None


def parse_partition_by(text: str | None) -> list[PartitionField]:
    """``bucket(16, key), days(ts), region`` -> partition fields; ValueError names a bad entry.

    >>> parse_partition_by("bucket(16, key), region")
    [PartitionField(transform='bucket', column='key', width=16), PartitionField(transform='identity', column='region', width=None)]
    >>> parse_partition_by("days(`event time`)")
    [PartitionField(transform='days', column='event time', width=None)]
    >>> parse_partition_by("")
    []
    """
    fields: list[PartitionField] = []
    for entry in _split_top(text or ""):
        match = re.fullmatch(r"\s*(\w+)\s*\((.*)\)\s*", entry)
        if match is None:
            fields.append(PartitionField("identity", _column(entry)))
            continue
        transform, inner = match.group(1).lower(), match.group(2)
        if transform not in _TRANSFORMS:
            raise ValueError(f"--partition-by {entry.strip()!r}: unknown transform {transform!r} "
                             f"(one of {', '.join(_TRANSFORMS)})")
        if transform in ("bucket", "truncate"):
            width, _, column = inner.partition(",")
            if not width.strip().isdigit() or int(width) < 1 or not column.strip():
                raise ValueError(f"--partition-by {entry.strip()!r}: write {transform}(N, column)")
            fields.append(PartitionField(transform, _column(column), int(width)))
        else:
            fields.append(PartitionField(transform, _column(inner)))
    return fields


def _split_top(text: str) -> list[str]:
    """Split on commas outside parentheses and backticks."""
    parts, depth, quoted, current = [], 0, False, ""
    for char in text:
        if char == "`":
            quoted = not quoted
        elif not quoted and char == "(":
            depth += 1
        elif not quoted and char == ")":
            depth -= 1
        if char == "," and depth == 0 and not quoted:
            parts.append(current)
            current = ""
        else:
            current += char
    parts.append(current)
    return [p for p in parts if p.strip()]


def _column(text: str) -> str:
    name = text.strip()
    if name.startswith("`") and name.endswith("`") and len(name) > 1:
        return name[1:-1].replace("``", "`")
    if not name:
        raise ValueError("--partition-by: an empty column name")
    return name


@dataclass
class UpsertOptions:
    source: str                        # the registered changelog table, [catalog.]db.table (Iceberg)
    table: str                         # the keyed table, [catalog.]db.table (Iceberg)
    key_column: str = "key"            # plain mode: the column holding the Kafka key
    cdc: str | None = None             # None (plain changes) or "debezium"
    partition_by: list[PartitionField] = field(default_factory=list)
    merge_mode: str = DEFAULT_MERGE_MODE
    format_version: int = 3            # 3: deletion vectors; 2: position delete files
    rejects_table: str | None = None   # default <table>_rejects
    default_catalog: str | None = None

    def __post_init__(self) -> None:
        if self.merge_mode not in MERGE_MODES:
            raise ValueError(f"merge mode must be one of {', '.join(MERGE_MODES)}, got {self.merge_mode!r}")
        if self.cdc is not None and self.cdc not in CDC_MODES:
            raise ValueError(f"--cdc must be one of {', '.join(CDC_MODES)}, got {self.cdc!r}")
        if self.format_version not in (2, 3):
            raise ValueError(f"format version must be 2 or 3, got {self.format_version}")


@dataclass
class UpsertReport:
    """Figures of one run; :meth:`summary_line` is what the command prints."""

    source: str
    table: str
    merge_mode: str
    plan: str = ""                     # how the rows were applied: "merge", or "delete + insert"
    since: int | None = None           # the source snapshot the table reflected before (None: none)
    until: int | None = None           # ... and after this run
    changes_read: int = 0
    keys_changed: int = 0              # one change per key, after the last-change-wins rule
    upserts: int = 0
    deletes: int = 0
    rejected: int = 0
    rejects_table: str | None = None
    created: bool = False
    retried: bool = False
    rows_before: int = 0
    rows_after: int = 0
    files_before: tuple[int, int] = (0, 0)   # (data files, delete files)
    files_after: tuple[int, int] = (0, 0)
    seconds: float = 0.0
    notes: list[str] = field(default_factory=list)
    #: where the run's time went, in order: step -> seconds (``bench/upsert_bench.py`` prints it)
    phases: dict[str, float] = field(default_factory=dict)

    def summary_line(self) -> str:
        """``upsert lake.db.devices <- lake.db.devices_changelog (merge-on-read): ...``"""
        since = "start" if self.since is None else str(self.since)
        parts = [f"source snapshot {since} -> {self.until}", f"changes read {self.changes_read}",
                 f"keys changed {self.keys_changed} ({self.upserts} upserts, {self.deletes} deletes)",
                 f"rows {self.rows_before} -> {self.rows_after}",
                 f"files {self.files_before[0]} -> {self.files_after[0]}",
                 f"delete files {self.files_before[1]} -> {self.files_after[1]}"]
        if self.rejected:
            parts.append(f"rejected {self.rejected} (see {self.rejects_table})")
        if self.created:
            parts.append("table created")
        parts.extend(self.notes)
        mode = f"{self.merge_mode}, {self.plan}" if self.plan else self.merge_mode
        return (f"upsert {self.table} <- {self.source} ({mode}): " + ", ".join(parts)
                + f", in {self.seconds:.1f}s")
