"""Where the keyed table's last merge stopped (its bookmark), from Iceberg's metadata tables.

Every merge commit carries, in its snapshot summary, the source snapshot it read up to
(:data:`lakehouse.upsert.options.BOOKMARK_PROPERTY`), written in the same commit as the rows. The
walk back from ``main`` passes over commits without one (maintenance's rewrites, a person's fix)
to the last merge's. Plain SQL over ``<table>.refs`` / ``<table>.snapshots``: it runs over Spark
Connect too.

Example::

    state = read_state(spark, "`lake`.`db`.`devices`")
    state.bookmark    # the source snapshot the table reflects, None before the first merge
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from lakehouse.upsert.options import BOOKMARK_PROPERTY

if TYPE_CHECKING:  # pragma: no cover
    from pyspark.sql import SparkSession

__all__ = ("TableState", "bookmark_of", "increment_records", "main_snapshot", "read_state", "source_head")


@dataclass(frozen=True)
class TableState:
    """The keyed table as one run found it."""

    main: int | None                      # the snapshot main points at
    bookmark: int | None                  # the source snapshot the table reflects
    refs: tuple[str, ...]                 # branch and tag names
    summary: dict[str, str]               # main's snapshot summary (the running totals)


def bookmark_of(snapshots: dict[int, tuple[int | None, dict[str, str]]], head: int | None) -> int | None:
    """The bookmark of the newest commit at or below ``head`` that has one.

    >>> log = {1: (None, {BOOKMARK_PROPERTY: "7"}), 2: (1, {}), 3: (2, {"other": "x"})}
    >>> bookmark_of(log, 3), bookmark_of(log, None), bookmark_of({1: (None, {})}, 1)
    (7, None, None)
    """
    current = head
    while current is not None and current in snapshots:
        parent, summary = snapshots[current]
        if BOOKMARK_PROPERTY in summary:
            return int(summary[BOOKMARK_PROPERTY])
        current = parent
    return None


def read_state(spark: "SparkSession", sql_name: str) -> TableState:
    """refs and snapshot log in one query, then the bookmark walk."""
    rows = spark.sql(f"""
        SELECT name, snapshot_id, CAST(NULL AS BIGINT) AS parent_id, CAST(NULL AS MAP<STRING, STRING>) AS summary
        FROM {sql_name}.refs
        UNION ALL
        SELECT NULL, snapshot_id, parent_id, summary FROM {sql_name}.snapshots""").collect()
    refs = {str(r[0]): int(r[1]) for r in rows if r[0] is not None}
    snapshots = {int(r[1]): (None if r[2] is None else int(r[2]), dict(r[3] or {})) for r in rows if r[0] is None}
    main = refs.get("main")
    summary = snapshots[main][1] if main in snapshots else {}
    return TableState(main, bookmark_of(snapshots, main), tuple(refs), summary)


def main_snapshot(spark: "SparkSession", sql_name: str) -> int | None:
    """The snapshot ``main`` points at (None for a table without one)."""
    row = spark.sql(f"SELECT snapshot_id FROM {sql_name}.refs WHERE name = 'main'").first()
    return None if row is None else int(row[0])


def increment_records(snapshots: dict[int, tuple[int | None, str, int, int]], head: int | None,
                      since: int | None) -> int:
    """How many rows the changes after ``since`` up to ``head`` hold, at most: the rows of
    ``head`` when there is no ``since``, else the rows added by the appends in between (what the
    incremental scan reads). ``snapshots``: id -> (parent, operation, added rows, total rows).

    >>> log = {1: (None, "append", 10, 10), 2: (1, "append", 5, 15), 3: (2, "replace", 15, 15), 4: (3, "append", 2, 17)}
    >>> increment_records(log, 4, None), increment_records(log, 4, 1), increment_records(log, 4, 4)
    (17, 7, 0)
    """
    if head is None:
        return 0
    if since is None:
        return snapshots[head][3] if head in snapshots else 0
    total = 0
    current: int | None = head
    while current is not None and current != since and current in snapshots:
        parent, operation, added, _total = snapshots[current]
        total += added if operation == "append" else 0
        current = parent
    return total


def source_head(spark: "SparkSession", sql_name: str, since: int | None) -> tuple[int | None, int]:
    """The snapshot ``main`` of the changelog points at, and how many rows the changes after
    ``since`` hold at most (:func:`increment_records`), in one query."""
    rows = spark.sql(f"""
        SELECT snapshot_id, CAST(NULL AS BIGINT) AS parent_id, CAST(NULL AS STRING) AS operation,
               CAST(NULL AS MAP<STRING, STRING>) AS summary
        FROM {sql_name}.refs WHERE name = 'main'
        UNION ALL
        SELECT snapshot_id, parent_id, operation, summary FROM {sql_name}.snapshots""").collect()
    head = next((int(r[0]) for r in rows if r[2] is None and r[3] is None), None)
    snapshots = {int(r[0]): (None if r[1] is None else int(r[1]), str(r[2]),
                             int((r[3] or {}).get("added-records") or 0), int((r[3] or {}).get("total-records") or 0))
                 for r in rows if r[2] is not None}
    return head, increment_records(snapshots, head, since)
