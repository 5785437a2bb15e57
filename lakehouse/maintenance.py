"""Table maintenance, one action per call, for the daily ``lakehouse_maintenance`` DAG.

``lakehouse compact`` bin-packs and then cleans up in one run; the maintenance DAG runs the steps
as separate tasks so each one is visible, retried and timed on its own:

* ``expire-snapshots`` (Iceberg): ``expire_snapshots`` older than the retention, keeping the last
  one; it deletes the data files only expired snapshots referenced (edge files the table rewrote);
* ``remove-orphan-files`` (Iceberg): files under the table location no snapshot references,
  older than the orphan retention (never less than 24 h without ``allow_unsafe_retention``:
  a running writer's files are orphans until it commits);
* ``rewrite-manifests`` (Iceberg): regroups the manifests by partition, so the hourly appends'
  thousands of one-file manifests do not slow every scan's planning;
* ``vacuum`` (Delta): ``VACUUM ... RETAIN <retention> HOURS``;
* ``compact-deletes`` (Iceberg, for keyed tables that ``lakehouse upsert`` merges on read):
  ``rewrite_data_files`` of every data file that has deletes (deletion vectors or position
  deletes) and of the small ones, so reads apply no deletes again, into files sized so that the
  table has at least as many as the session's parallelism (a one-file table is scanned by one
  core), sorted by the key when the table is ``upsert``'s; then, for a format-2 table,
  ``rewrite_position_delete_files`` drops the delete files left pointing at nothing. The report
  gives data files, delete files and live rows before and after.

Example::

    run_maintain(spark, MaintainOptions(table="lake.db.readings", action="rewrite-manifests"))
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass
from datetime import timedelta
from typing import TYPE_CHECKING

from lakehouse.compaction import (CompactOptions, check_retention, expire_snapshots, remove_orphan_files, sql_string,
                                  vacuum)
from lakehouse.iceberg_tables import IcebergTable
from lakehouse.identifiers import quote_identifier
from lakehouse.job_report import JobReport
from lakehouse.spark_sql import read_table_properties
from lakehouse.tables import open_table
from lakehouse.upsert.commit import KEY_COLUMNS_PROPERTY

if TYPE_CHECKING:  # pragma: no cover
    from pyspark.sql import SparkSession

log = logging.getLogger("lakehouse.maintain")

ICEBERG_ACTIONS = ("expire-snapshots", "remove-orphan-files", "rewrite-manifests", "compact-deletes")
DELTA_ACTIONS = ("vacuum",)
ACTIONS = ICEBERG_ACTIONS + DELTA_ACTIONS


@dataclass
class MaintainOptions:
    table: str
    action: str                       # one of ACTIONS
    table_format: str | None = None
    retention: timedelta = timedelta(days=7)
    orphan_retention: timedelta = timedelta(days=3)
    allow_unsafe_retention: bool = False
    default_catalog: str | None = None


def rewrite_manifests(table: IcebergTable) -> int:
    """``CALL <catalog>.system.rewrite_manifests``; returns the number of manifests rewritten."""
    row = table.spark.sql(
        f"CALL {quote_identifier(table.catalog)}.system.rewrite_manifests(table => {sql_string(table.sql_name)})"
    ).collect()[0]
    log.info("rewrite_manifests: %d manifest(s) rewritten into %d", row.rewritten_manifests_count,
             row.added_manifests_count)
    return int(row.rewritten_manifests_count)


def delete_file_stats(table: IcebergTable) -> tuple[int, int, int]:
    """(data files, delete files, live rows) of the table's current snapshot, from its summary."""
    row = table.spark.sql(
        f"SELECT s.summary FROM {table.sql_name}.snapshots s JOIN {table.sql_name}.refs r "
        "ON r.snapshot_id = s.snapshot_id WHERE r.name = 'main'").first()
    summary = dict(row[0] or {}) if row is not None else {}
    live = int(summary.get("total-records", 0)) - int(summary.get("total-position-deletes", 0))
    return int(summary.get("total-data-files", 0)), int(summary.get("total-delete-files", 0)), live


#: Iceberg's default target data file size, and the least a compaction aims at
DEFAULT_TARGET_FILE_BYTES = 512 * 1024 * 1024
MIN_TARGET_FILE_BYTES = 8 * 1024 * 1024


def compaction_target_bytes(table_bytes: int, parallelism: int | None) -> int:
    """The data file size ``compact-deletes`` writes: the table spread over at least as many files
    as the session scans in parallel (one file is one scan task: a table compacted into one file
    is read by one core), between 8 MiB and Iceberg's default 512 MiB.

    >>> compaction_target_bytes(70 * 2**20, 2) // 2**20, compaction_target_bytes(10 * 2**30, 2) // 2**20
    (35, 512)
    >>> compaction_target_bytes(4 * 2**20, 2) // 2**20, compaction_target_bytes(70 * 2**20, None) // 2**20
    (8, 512)
    """
    if not parallelism or parallelism < 2:
        return DEFAULT_TARGET_FILE_BYTES
    return max(MIN_TARGET_FILE_BYTES, min(DEFAULT_TARGET_FILE_BYTES, -(-table_bytes // parallelism)))


def scan_parallelism(spark: "SparkSession") -> int | None:
    """The session's ``spark.default.parallelism`` (the local sessions set it to their cores), None
    when unset (a cluster: Iceberg's default file size)."""
    try:
        value = spark.conf.get("spark.default.parallelism", None)
    except Exception:  # noqa: BLE001 - a conf the server does not expose (Spark Connect)
        return None
    return int(value) if value and str(value).isdigit() else None


def key_sort_order(properties: dict[str, str]) -> str | None:
    """The ``sort_order`` of a keyed table's compaction (its key columns, from the property
    ``lakehouse upsert`` sets), None for other tables.

    >>> key_sort_order({KEY_COLUMNS_PROPERTY: '["id", "region"]'})
    '`id` ASC NULLS LAST, `region` ASC NULLS LAST'
    >>> key_sort_order({}) is None
    True
    """
    raw = properties.get(KEY_COLUMNS_PROPERTY)
    columns = json.loads(raw) if raw else []
    return ", ".join(f"{quote_identifier(c)} ASC NULLS LAST" for c in columns) or None


def compact_deletes(table: IcebergTable, report: JobReport) -> None:
    """Rewrite the data files that carry deletes, and the small ones, into files of
    :func:`compaction_target_bytes`; then drop dangling position delete files (format 2).
    Before/after figures go to ``report``.

    A keyed table is rewritten sorted by its key: the sort shuffles the rows into exactly as many
    files as the size calls for (a bin-pack rewrite packs whole files into its tasks and can leave
    one more, unevenly sized: 3 files for 2 cores scan like 4), and each file then holds a key
    range (a lookup or a merge reads the files whose range holds its keys)."""
    spark = table.spark
    name = sql_string(table.sql_name)
    catalog = quote_identifier(table.catalog)
    files, deletes, live = delete_file_stats(table)
    properties = read_table_properties(spark, table.sql_name)
    target = compaction_target_bytes(table.file_stats()[2], scan_parallelism(spark))
    sort_order = key_sort_order(properties)
    strategy = f"strategy => 'sort', sort_order => {sql_string(sort_order)}, " if sort_order else ""
    row = spark.sql(
        f"CALL {catalog}.system.rewrite_data_files(table => {name}, {strategy}options => map("
        "'delete-file-threshold', '1', 'min-input-files', '2', 'partial-progress.enabled', 'true', "
        f"'target-file-size-bytes', '{target}'))").collect()[0]
    if properties.get("format-version") == "2":
        spark.sql(f"CALL {catalog}.system.rewrite_position_delete_files(table => {name}, "
                  "options => map('rewrite-all', 'true'))").collect()
    spark.sql(f"REFRESH TABLE {table.sql_name}")
    files_after, deletes_after, live_after = delete_file_stats(table)
    report.extra["data files rewritten"] = int(row.rewritten_data_files_count)
    report.extra["data files"] = f"{files} -> {files_after}"
    report.extra["target file size"] = f"{target / 2**20:.0f} MiB" + (f", sorted by {sort_order}" if sort_order else "")
    report.extra["delete files"] = f"{deletes} -> {deletes_after}"
    report.extra["live rows"] = f"{live} -> {live_after}"
    log.info("compact-deletes: data files %d -> %d, delete files %d -> %d, live rows %d -> %d", files, files_after,
             deletes, deletes_after, live, live_after)


def run_maintain(spark: "SparkSession", options: MaintainOptions) -> JobReport:
    """Run one maintenance action on a table; returns its report."""
    if options.action not in ACTIONS:
        raise ValueError(f"unknown maintenance action {options.action!r}; one of {', '.join(ACTIONS)}")
    table = open_table(spark, options.table, options.table_format, options.default_catalog)
    allowed = ICEBERG_ACTIONS if isinstance(table, IcebergTable) else DELTA_ACTIONS
    if options.action not in allowed:
        raise ValueError(f"{options.action} is not a {table.table_format} action (use one of {', '.join(allowed)})")
    check_retention(CompactOptions(table=options.table, retention=options.retention,
                                   orphan_retention=options.orphan_retention,
                                   allow_unsafe_retention=options.allow_unsafe_retention), table.table_format)
    if not table.exists():
        raise ValueError(f"table {table.identifier} does not exist (run register first)")
    report = JobReport(f"maintain {options.action}", table.identifier, table.table_format)
    report.before(*table.file_stats())
    if isinstance(table, IcebergTable):
        if options.action == "expire-snapshots":
            report.extra["data files deleted"] = expire_snapshots(table, options.retention)
        elif options.action == "remove-orphan-files":
            report.extra["orphan files removed"] = remove_orphan_files(table, options.orphan_retention)
        elif options.action == "compact-deletes":
            compact_deletes(table, report)
        else:
            report.extra["manifests rewritten"] = rewrite_manifests(table)
    else:
        vacuum(table, options.retention)
    report.after(*table.file_stats())
    return report
