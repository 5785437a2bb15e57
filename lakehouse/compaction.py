"""The ``compact`` job: bin-pack small files per partition, prove nothing changed, clean up.

1. find the partitions that need it: at least ``min_input_files`` files smaller than 75% of the
   target size (``--since`` restricts to recent partitions); nothing else is touched;
2. fingerprint those partitions (row count + order-independent sum of row hashes);
3. rewrite: Iceberg ``rewrite_data_files`` (bin-pack, or Z-order sort), Delta ``OPTIMIZE``
   (optionally ``ZORDER BY``); each is one atomic commit, so a crash leaves the table as it was
   (the half-written files are orphans that step 5 removes later);
4. fingerprint the rewrite commit against its parent; on any difference the rewrite is rolled
   back (when nothing was committed after it) and the job fails before cleaning anything;
5. clean up with a safe retention: Iceberg ``expire_snapshots`` + ``remove_orphan_files``
   (expiring deletes the replaced edge files too: the table owns them since ``register``),
   Delta ``VACUUM``.

Example::

    report = run_compact(spark, CompactOptions(table="lake.db.sensor_readings", target_file_size=128 << 20))
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from typing import TYPE_CHECKING, Any, Sequence

from lakehouse.delta_tables import DeltaTable
from lakehouse.fault_injection import pause_point
from lakehouse.iceberg_tables import IcebergTable, quote_ident
from lakehouse.identifiers import quote_identifier, sql_string
from lakehouse.job_report import JobReport
from lakehouse.lake_files import partition_time_end
from lakehouse.tables import open_table

if TYPE_CHECKING:  # pragma: no cover
    from pyspark.sql import SparkSession

log = logging.getLogger("lakehouse.compact")

MIN_SAFE_RETENTION = {"iceberg": timedelta(hours=1), "delta": timedelta(days=7)}
MIN_SAFE_ORPHAN_RETENTION = timedelta(days=1)
MAX_PARTITIONS_IN_FILTER = 200  # beyond this, filter by time only and let the engine pick files


class CompactionVerificationError(RuntimeError):
    """The rewrite changed the rows of the table: it was rolled back (if possible)."""


@dataclass
class CompactOptions:
    table: str
    table_format: str | None = None
    since: datetime | None = None
    target_file_size: int = 128 << 20
    min_input_files: int = 2
    zorder: Sequence[str] = field(default_factory=list)
    retention: timedelta = timedelta(days=7)
    orphan_retention: timedelta = timedelta(days=3)
    allow_unsafe_retention: bool = False
    cleanup: bool = True
    default_catalog: str | None = None

    @property
    def min_file_size(self) -> int:
        return int(self.target_file_size * 0.75)


def sql_literal(value: object, spark_type: str) -> str:
    """A SQL literal for a partition value of ``spark_type`` (strings escaped)."""
    if spark_type in ("int", "bigint", "smallint", "tinyint", "double", "float") or spark_type.startswith("decimal"):
        return str(value)
    if spark_type == "boolean":
        return "true" if str(value).lower() == "true" else "false"
    if spark_type in ("date", "timestamp", "timestamp_ntz"):
        return f"{spark_type.upper()} {sql_string(str(value))}"
    return sql_string(str(value))


def partition_predicate(partitions: Sequence[dict[str, object]], types: dict[str, str]) -> str:
    """``(a = 1 AND b IS NULL) OR (...)`` selecting exactly these partitions."""
    terms = []
    for values in partitions:
        conj = [f"{quote_identifier(c)} IS NULL" if v is None else f"{quote_identifier(c)} = {sql_literal(v, types[c])}"
                for c, v in values.items()]
        terms.append("(" + " AND ".join(conj or ["true"]) + ")")
    return " OR ".join(terms) if terms else "false"


def since_predicate(since: datetime, partition_cols: Sequence[str]) -> str | None:
    """A filter on the time partition columns keeping partitions that end after ``since``."""
    cols = [c for c in ("year", "month", "day", "hour") if c in partition_cols]
    if not cols or cols[0] != "year":
        return None
    parts = {"year": since.year, "month": since.month, "day": since.day, "hour": since.hour}
    # Lexicographic (year, month, ...) >= since, truncated to the finest time column present.
    ors = []
    for i, col in enumerate(cols):
        eqs = [f"{quote_identifier(c)} = {parts[c]}" for c in cols[:i]]
        op = ">=" if i == len(cols) - 1 else ">"
        ors.append("(" + " AND ".join(eqs + [f"{quote_identifier(col)} {op} {parts[col]}"]) + ")")
    return " OR ".join(ors)


def _fingerprint(spark: "SparkSession", source: str, columns: dict[str, str], predicate: str) -> tuple[int, int]:
    """(rows, sum of 64-bit row hashes as an exact decimal): equal multisets give equal results."""
    # Spark refuses to hash maps; their JSON text stands in for them.
    cols = ", ".join(f"to_json({quote_identifier(c)})" if ty.startswith("map<") else quote_identifier(c)
                     for c, ty in columns.items())
    row = spark.sql(
        f"SELECT count(*) AS n, coalesce(sum(cast(xxhash64({cols}) AS decimal(38,0))), 0) AS h "
        f"FROM {source} WHERE {predicate}"
    ).collect()[0]
    return int(row.n), int(row.h)


def _needing_partitions(files: list[dict], options: CompactOptions, partition_cols: Sequence[str]) -> list[dict]:
    """Partitions with at least ``min_input_files`` small files (and after ``since``)."""
    groups: dict[tuple, list[int]] = {}
    keys: dict[tuple, dict] = {}
    for f in files:
        key = tuple((c, f["partition"].get(c)) for c in partition_cols)
        keys[key] = dict(key)
        groups.setdefault(key, []).append(int(f["size"]))
    out = []
    for key, sizes in groups.items():
        small = sum(1 for s in sizes if s < options.min_file_size)
        if small < max(2, options.min_input_files):
            continue
        if options.since is not None:
            end = partition_time_end({c: (None if v is None else str(v)) for c, v in key})
            if end is not None and end <= options.since:
                continue
        out.append(keys[key])
    return out


def check_retention(options: CompactOptions, table_format: str) -> None:
    """Refuse retentions below the safe minimum of ``table_format`` (``ValueError`` naming each
    flag), unless ``options.allow_unsafe_retention``; what compaction and maintenance check first."""
    minimum = MIN_SAFE_RETENTION[table_format]
    problems = []
    if options.retention < minimum:
        problems.append(f"--retention {options.retention} is below the safe minimum {minimum} for {table_format}")
    if table_format == "iceberg" and options.orphan_retention < MIN_SAFE_ORPHAN_RETENTION:
        problems.append(f"--orphan-retention {options.orphan_retention} is below the safe minimum "
                        f"{MIN_SAFE_ORPHAN_RETENTION} (files of running writers could be deleted)")
    if problems and not options.allow_unsafe_retention:
        raise ValueError("; ".join(problems) + " (pass --allow-unsafe-retention to accept the risk)")


# -- Iceberg -------------------------------------------------------------------------------------

def check_zorder(columns: Sequence[str], types: dict[str, str], table_format: str) -> None:
    """Refuse ``--zorder`` columns the table's z-order rewrite cannot take, before it starts.

    Iceberg (``SparkZOrderFileRewriteRunner``) and Delta (``OPTIMIZE ... ZORDER BY``) hand each
    z-order column's name to Spark's attribute-name parser unquoted, which reads a dot as a struct
    path and refuses a backtick: such a name is refused here with its reason instead of failing
    mid-rewrite. Every other name (dashes, spaces, keywords, unicode) is quoted and taken.

    >>> check_zorder(["content-type"], {"content-type": "string"}, "iceberg")
    >>> check_zorder(["a.b"], {"a.b": "string"}, "delta")
    Traceback (most recent call last):
    ...
    ValueError: --zorder 'a.b': delta's z-order rewrite cannot take a column name holding '.' or '`' (it parses the name unquoted); z-order another column or rename this one
    """
    for name in columns:
        if name not in types:
            raise ValueError(f"--zorder {name!r}: the table has no such column (columns: {', '.join(types)})")
        if "." in name or "`" in name:
            raise ValueError(f"--zorder {name!r}: {table_format}'s z-order rewrite cannot take a column name holding "
                             "'.' or '`' (it parses the name unquoted); z-order another column or rename this one")


def _iceberg_files(table: IcebergTable) -> list[dict]:
    rows = table.spark.sql(
        f"SELECT partition, file_size_in_bytes AS size FROM {quote_ident(table.identifier + '.data_files')}"
    ).collect()
    return [{"partition": (r.partition.asDict() if r.partition is not None else {}), "size": r.size} for r in rows]


def _rewrite_scope(table: IcebergTable | DeltaTable, files: list[dict], options: CompactOptions,
                   report: JobReport) -> tuple[list[dict], str, dict[str, str]]:
    """The partitions that need compaction, a SQL predicate selecting them, and the column types."""
    types = table.columns()
    part_cols = table.partition_columns()
    needing = _needing_partitions(files, options, part_cols)
    report.extra["partitions compacted"] = len(needing)
    if len(needing) <= MAX_PARTITIONS_IN_FILTER:
        predicate = partition_predicate(needing, types)
    else:
        predicate = (since_predicate(options.since, part_cols) if options.since else None) or "true"
    return needing, predicate, types


def _compact_iceberg(table: IcebergTable, options: CompactOptions, report: JobReport) -> None:
    spark = table.spark
    needing, predicate, types = _rewrite_scope(table, _iceberg_files(table), options, report)
    if needing:
        before_snapshot = table.current_snapshot_id()
        log.info("rewriting %d partition(s) of %s toward %d-byte files",
                 len(needing), table.identifier, options.target_file_size)
        opts = {"target-file-size-bytes": options.target_file_size, "min-input-files": options.min_input_files,
                "min-file-size-bytes": options.min_file_size, "partial-progress.enabled": "false"}
        opts_sql = ", ".join(f"'{k}', '{v}'" for k, v in opts.items())
        strategy = "strategy => 'binpack'"
        if options.zorder:
            check_zorder(options.zorder, types, "iceberg")
            zcols = ", ".join(quote_identifier(c) for c in options.zorder)
            strategy = f"strategy => 'sort', sort_order => 'zorder({zcols})'"
        started = time.monotonic()
        result = spark.sql(
            f"CALL {quote_identifier(table.catalog)}.system.rewrite_data_files(table => {sql_string(table.sql_name)}, "
            f"{strategy}, "
            f"where => {sql_string(predicate)}, options => map({opts_sql}))"
        ).collect()[0]
        log.info("rewrite done in %.1fs: %d files rewritten into %d", time.monotonic() - started,
                 result.rewritten_data_files_count, result.added_data_files_count)
        pause_point("compact.after-rewrite")
        _verify_iceberg(table, before_snapshot, types, predicate)
    if options.cleanup:
        _cleanup_iceberg(table, options)


def _verify_iceberg(table: IcebergTable, before_snapshot: int | None, columns: dict[str, str], predicate: str) -> None:
    spark = table.spark
    table.refresh()
    snaps = spark.sql(
        f"SELECT snapshot_id, parent_id, operation FROM {quote_ident(table.identifier + '.snapshots')} "
        "ORDER BY committed_at"
    ).collect()
    ids = [s.snapshot_id for s in snaps]
    later = snaps[ids.index(before_snapshot) + 1:] if before_snapshot in ids else []
    rewrites = [s for s in later if s.operation == "replace"]
    if not rewrites:
        log.info("nothing was rewritten (no file group qualified)")
        return
    rewrite = rewrites[-1]
    # Compare the rewrite commit with its own parent: a concurrent register commit between
    # the two fingerprints must not look like a change made by the rewrite.
    base = _fingerprint(spark, f"{table.sql_name} VERSION AS OF {rewrite.parent_id}", columns, predicate)
    after = _fingerprint(spark, f"{table.sql_name} VERSION AS OF {rewrite.snapshot_id}", columns, predicate)
    if base != after:
        current = table.current_snapshot_id()
        rolled = current == rewrite.snapshot_id
        if rolled:
            spark.sql(f"CALL {quote_identifier(table.catalog)}.system.rollback_to_snapshot("
                      f"{sql_string(table.sql_name)}, {rewrite.parent_id})")
        raise CompactionVerificationError(
            f"compaction of {table.identifier} changed the data (rows/hash {base} -> {after}); "
            + ("the rewrite was rolled back" if rolled else "a later commit exists: NOT rolled back, investigate")
        )
    log.info("verified: %d rows, contents unchanged by the rewrite", after[0])


def _cleanup_iceberg(table: IcebergTable, options: CompactOptions) -> None:
    expire_snapshots(table, options.retention)
    remove_orphan_files(table, options.orphan_retention)


def expire_snapshots(table: IcebergTable, retention: timedelta) -> int:
    """Expire snapshots older than ``retention`` (keeping the last); returns the data files deleted."""
    older = (datetime.now(timezone.utc) - retention).strftime("%Y-%m-%d %H:%M:%S.%f")[:-3]
    res = table.spark.sql(
        f"CALL {quote_identifier(table.catalog)}.system.expire_snapshots(table => {sql_string(table.sql_name)}, "
        f"older_than => TIMESTAMP '{older}', retain_last => 1)"
    ).collect()[0]
    log.info("expired snapshots older than %s: %d data files deleted", retention, res.deleted_data_files_count)
    return int(res.deleted_data_files_count)


def remove_orphan_files(table: IcebergTable, orphan_retention: timedelta) -> int:
    """Delete files no snapshot references, older than ``orphan_retention``; returns how many."""
    spark = table.spark
    cutoff = datetime.now(timezone.utc) - orphan_retention
    if orphan_retention >= MIN_SAFE_ORPHAN_RETENTION:
        orphans = len(spark.sql(
            f"CALL {quote_identifier(table.catalog)}.system.remove_orphan_files(table => {sql_string(table.sql_name)}, "
            f"older_than => TIMESTAMP '{cutoff.strftime('%Y-%m-%d %H:%M:%S')}')"
        ).collect())
    else:
        # The procedure refuses intervals under 24 h (a commit in flight has files no snapshot
        # references yet); only reached with --allow-unsafe-retention (checked up front): the
        # listing and the subtraction run in pyiceberg instead (lakehouse/orphan_files.py).
        from lakehouse.orphan_files import remove_orphans

        orphans = remove_orphans(table.py_table(), cutoff)
    log.info("removed %d orphan file(s) older than %s", orphans, orphan_retention)
    return orphans


# -- Delta ---------------------------------------------------------------------------------------

def _compact_delta(table: DeltaTable, options: CompactOptions, report: JobReport) -> None:
    spark = table.spark
    needing, predicate, types = _rewrite_scope(table, table.file_partitions(), options, report)
    if needing:
        before_version = table.version()
        log.info("optimizing %d partition(s) of %s toward %d-byte files",
                 len(needing), table.identifier, options.target_file_size)
        spark.conf.set("spark.databricks.delta.optimize.maxFileSize", str(options.target_file_size))
        spark.conf.set("spark.databricks.delta.optimize.minFileSize", str(options.min_file_size))
        if options.zorder:
            check_zorder(options.zorder, types, "delta")
        zorder = f" ZORDER BY ({', '.join(quote_identifier(c) for c in options.zorder)})" if options.zorder else ""
        started = time.monotonic()
        metrics = spark.sql(f"OPTIMIZE {table.sql_name} WHERE {predicate}{zorder}").collect()[0].metrics
        log.info("OPTIMIZE done in %.1fs: %d files removed, %d added", time.monotonic() - started,
                 metrics.numFilesRemoved, metrics.numFilesAdded)
        pause_point("compact.after-rewrite")
        _verify_delta(table, before_version, types, predicate)
    if options.cleanup:
        vacuum(table, options.retention)


def vacuum(table: DeltaTable, retention: timedelta) -> None:
    """``VACUUM`` a Delta table: delete files it removed more than ``retention`` ago (a retention
    under the safe minimum must have been allowed by the caller, see ``check_retention``)."""
    spark = table.spark
    hours = retention.total_seconds() / 3600
    key = "spark.databricks.delta.retentionDurationCheck.enabled"
    if retention < MIN_SAFE_RETENTION["delta"]:
        spark.conf.set(key, "false")
    try:
        spark.sql(f"VACUUM {table.sql_name} RETAIN {hours:g} HOURS").collect()
    finally:
        spark.conf.set(key, "true")
    log.info("vacuumed files removed more than %s ago", retention)


def _verify_delta(table: DeltaTable, before_version: int, columns: dict[str, str], predicate: str) -> None:
    spark = table.spark
    history = spark.sql(f"DESCRIBE HISTORY {table.sql_name}").collect()
    optimizes = [h for h in history if h.version > before_version and h.operation == "OPTIMIZE"]
    if not optimizes:
        log.info("nothing was rewritten (no bin had two or more files)")
        return
    version = max(h.version for h in optimizes)
    base = _fingerprint(spark, f"{table.sql_name} VERSION AS OF {version - 1}", columns, predicate)
    after = _fingerprint(spark, f"{table.sql_name} VERSION AS OF {version}", columns, predicate)
    if base != after:
        rolled = table.version() == version
        if rolled:
            spark.sql(f"RESTORE TABLE {table.sql_name} TO VERSION AS OF {version - 1}")
        raise CompactionVerificationError(
            f"compaction of {table.identifier} changed the data (rows/hash {base} -> {after}); "
            + ("the rewrite was rolled back" if rolled else "a later commit exists: NOT rolled back, investigate")
        )
    log.info("verified: %d rows, contents unchanged by OPTIMIZE", after[0])


def run_compact(spark: "SparkSession", options: CompactOptions) -> JobReport:
    """Run the compact job; returns its report (see the module docstring)."""
    if options.min_input_files < 1 or options.target_file_size < 1:
        raise ValueError("--min-input-files and --target-file-size must be positive")
    table = open_table(spark, options.table, options.table_format, options.default_catalog)
    check_retention(options, table.table_format)
    if not table.exists():
        raise ValueError(f"table {table.identifier} does not exist (run register first)")
    report = JobReport("compact", table.identifier, table.table_format)
    report.before(*table.file_stats())
    if isinstance(table, IcebergTable):
        _compact_iceberg(table, options, report)
    else:
        _compact_delta(table, options, report)
    report.after(*table.file_stats())
    if report.rows_after != report.rows_before:
        # Only possible with a concurrent writer (the rewrite itself was verified above).
        log.warning("row count changed during compaction (%d -> %d): another writer committed meanwhile",
                    report.rows_before, report.rows_after)
    return report
