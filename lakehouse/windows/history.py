"""What the source's and the output's snapshot histories say, read through Iceberg's metadata
tables (``<table>.snapshots``, ``<table>.refs``): plain SQL, so it runs over Spark Connect too.

Two questions:

* **Where did the last run stop?** (:func:`bookmark_of` a :func:`table_log`). Every output commit
  of a run carries, in its snapshot summary, the source snapshot the rows reflect and the
  definition's fingerprint (:func:`bookmark_properties`). Maintenance commits to the output in
  between (compaction's ``rewrite_data_files``, ``rewrite_manifests``: operation ``replace``)
  carry no bookmark but change no row, so the walk back from ``main`` passes over them to the last
  run's commit: maintenance never turns the next run into a full one. Any other commit without a
  bookmark (someone else wrote rows) means no usable bookmark. A full run then sets the records
  it found late as a table property for its bookmark (:func:`late_records_of`; increments carry
  them): a fixed windows' rerun takes the proven plan when they are 0.
* **What happened to the source since?** (:func:`source_changes`): only appends (and ``replace``
  rewrites, which keep every record) allow an increment; a delete or overwrite, or a bookmark
  snapshot that is no ancestor of the current one (expired, rolled back), needs a full run.

Example::

    log = table_log(spark, "`lake`.`db`.`temp_1m`")
    bookmark = bookmark_of(log.snapshots, log.main)   # None: a full run
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Sequence

if TYPE_CHECKING:  # pragma: no cover
    from pyspark.sql import SparkSession

__all__ = ("Bookmark", "DEFINITION_PROPERTY", "LATE_RECORDS_PROPERTY", "SOURCE_SNAPSHOT_PROPERTY", "Snapshot",
           "TableLog", "bookmark_of", "bookmark_properties", "late_records_of", "late_records_value", "main_snapshot",
           "source_changes", "table_log", "table_logs")

SOURCE_SNAPSHOT_PROPERTY = "lakehouse.windows.source-snapshot"
DEFINITION_PROPERTY = "lakehouse.windows.definition"
#: the last full run's late records (dropped: their window had closed): a table property, or an increment's summary
LATE_RECORDS_PROPERTY = "lakehouse.windows.late-records"
#: snapshot operations that keep every record (and every row) of the snapshot before them
REWRITES = ("replace",)


@dataclass(frozen=True)
class Snapshot:
    """One entry of a table's snapshot log."""

    snapshot_id: int
    parent_id: int | None
    operation: str
    summary: dict[str, str]


@dataclass(frozen=True)
class Bookmark:
    """Where the output's last run stopped: the source snapshot its rows reflect, the definition's
    fingerprint, the output snapshot that carried them, the late records (None: not recorded)."""

    source_snapshot: int
    definition: str
    output_snapshot: int
    late_records: int | None = None


def bookmark_properties(source_snapshot: int | None, fingerprint: str, late: int | None = None) -> dict[str, str]:
    """The snapshot summary entries a run's output commit carries (none without a source snapshot)."""
    if source_snapshot is None:
        return {}
    late_records = {} if late is None else {LATE_RECORDS_PROPERTY: str(late)}
    return {SOURCE_SNAPSHOT_PROPERTY: str(source_snapshot), DEFINITION_PROPERTY: fingerprint, **late_records}


def late_records_value(source_snapshot: int, fingerprint: str, late: int) -> str:
    """The table property value recording a full run's late records for one source snapshot and definition."""
    return f"{int(source_snapshot)}:{fingerprint}:{int(late)}"


def late_records_of(bookmark: Bookmark, properties: dict[str, str]) -> int | None:
    """The late records the output's rows were computed with: carried in the bookmark's commit, or
    the table property set for its source snapshot and definition; None: not recorded."""
    if bookmark.late_records is not None:
        return bookmark.late_records
    source, _, rest = properties.get(LATE_RECORDS_PROPERTY, "").partition(":")
    definition, _, count = rest.rpartition(":")
    valid = source == str(bookmark.source_snapshot) and definition == bookmark.definition and count.isdigit()
    return int(count) if valid else None


@dataclass(frozen=True)
class TableLog:
    """A table's refs (branch and tag names -> snapshot ids) and snapshot log, read together."""

    refs: dict[str, int]
    snapshots: dict[int, Snapshot]

    @property
    def main(self) -> int | None:
        return self.refs.get("main")


def table_log(spark: "SparkSession", sql_name: str) -> TableLog:
    """The refs and the snapshot log of a table, in one query (each query is a Spark job: an
    increment's fixed cost is mostly such round trips)."""
    return table_logs(spark, [sql_name])[0]


def table_logs(spark: "SparkSession", sql_names: Sequence[str]) -> list[TableLog]:
    """:func:`table_log` of several tables (in their order) in one query: an increment reads the
    output's, the source's and the window state's together, one Spark job instead of three."""
    parts = [f"""
        SELECT {i} AS t, name, snapshot_id, CAST(NULL AS BIGINT) AS parent_id, CAST(NULL AS STRING) AS operation,
               CAST(NULL AS MAP<STRING, STRING>) AS summary FROM {sql_name}.refs
        UNION ALL
        SELECT {i}, NULL, snapshot_id, parent_id, operation, summary FROM {sql_name}.snapshots"""
             for i, sql_name in enumerate(sql_names)]
    rows = _collect_consistent(spark, " UNION ALL ".join(parts))
    logs = []
    for i in range(len(sql_names)):
        mine = [r for r in rows if r[0] == i]
        refs = {str(r[1]): int(r[2]) for r in mine if r[1] is not None}
        snapshots = {int(r[2]): Snapshot(int(r[2]), None if r[3] is None else int(r[3]), str(r[4]), dict(r[5] or {}))
                     for r in mine if r[1] is None}
        logs.append(TableLog(refs, snapshots))
    return logs


def _collect_consistent(spark: "SparkSession", query: str, attempts: int = 5) -> list:
    """The query's rows; again when a commit landed between the loads of one table's metadata
    tables (Spark then refuses the scan: "Failed to enforce scan consistency"), as happens when
    another run commits while this one reads the logs."""
    for attempt in range(attempts):
        try:
            return spark.sql(query).collect()
        except Exception as exc:  # classic or Spark Connect error: the same message
            if "scan consistency" not in str(exc) or attempt == attempts - 1:
                raise
    raise AssertionError("unreachable")


def main_snapshot(spark: "SparkSession", sql_name: str) -> int | None:
    """The snapshot ``main`` points at (None for a table without one)."""
    row = spark.sql(f"SELECT snapshot_id FROM {sql_name}.refs WHERE name = 'main'").first()
    return None if row is None else int(row[0])


def bookmark_of(snapshots: dict[int, Snapshot], head: int | None) -> Bookmark | None:
    """The bookmark of the last run's commit at or below ``head``, passing over rewrites
    (:data:`REWRITES`); None when another commit without one comes first or the chain ends.

    >>> log = {1: Snapshot(1, None, "append", bookmark_properties(7, "d", late=0)), 2: Snapshot(2, 1, "replace", {})}
    >>> bookmark_of(log, 2)
    Bookmark(source_snapshot=7, definition='d', output_snapshot=1, late_records=0)
    >>> bookmark_of({**log, 3: Snapshot(3, 2, "append", {})}, 3) is None
    True
    """
    current = snapshots.get(head) if head is not None else None
    while current is not None:
        recorded = current.summary.get(SOURCE_SNAPSHOT_PROPERTY)
        definition = current.summary.get(DEFINITION_PROPERTY)
        if recorded is not None and definition is not None:
            late = current.summary.get(LATE_RECORDS_PROPERTY)
            return Bookmark(int(recorded), definition, current.snapshot_id, None if late is None else int(late))
        if current.operation not in REWRITES or current.parent_id is None:
            return None
        current = snapshots.get(current.parent_id)
    return None


def source_changes(snapshots: dict[int, Snapshot], since: int, until: int) -> tuple[str | None, int | None]:
    """(None when ``since`` is an ancestor of ``until`` and every snapshot after it only added
    records or rewrote them, else why an increment cannot start from ``since``; the records the
    appends in between added, None when a summary does not say).

    >>> log = {1: Snapshot(1, None, "append", {}), 2: Snapshot(2, 1, "replace", {}),
    ...        3: Snapshot(3, 2, "append", {"added-records": "5"})}
    >>> source_changes(log, 1, 3)
    (None, 5)
    >>> source_changes({**log, 4: Snapshot(4, 3, "delete", {})}, 1, 4)[0]
    'the source had delete commits since snapshot 1'
    """
    current = snapshots.get(until)
    operations: list[str] = []
    added: int | None = 0
    while current is not None and current.snapshot_id != since:
        operations.append(current.operation)
        if current.operation == "append":
            count = current.summary.get("added-records")
            added = None if added is None or count is None else added + int(count)
        current = None if current.parent_id is None else snapshots.get(current.parent_id)
    if current is None:
        return (f"the recorded source snapshot {since} is not an ancestor of the current one (expired or rolled back)",
                None)
    changed = sorted({op for op in operations if op not in ("append", *REWRITES)})
    if changed:
        return f"the source had {', '.join(changed)} commits since snapshot {since}", None
    return None, added
