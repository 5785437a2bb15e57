"""The ``register`` job: put committed edge files that the table lacks into the table.

Iceberg: in place (the table references the edge files; no copy). Delta: one idempotent append
per batch into the Delta table's own location (see ``lakehouse.delta_tables`` for why).

One run:

1. list the committed (visible) files under the edge table root (``--since`` prunes partitions);
2. create the table on first run: schema from the files' Parquet footers, partitioned by the
   Hive columns of the paths (``year/month/day/hour`` as int, others as string);
3. finish any batch a crashed run left pending (its intent is in the ledger; the commit is
   idempotent, see ``lakehouse.register_ledger``);
4. the new files = committed files - files in the ledger; evolve the schema for them (new
   nullable columns, safe widening), refuse incompatible types with the file and column named;
5. per batch: write the intent, commit to the table, mark it done.

Example::

    report = run_register(spark, RegisterOptions(source="file:///lake/ts/sensors", table="lake.db.sensors"))
    print(report.summary_line())
"""

from __future__ import annotations

import logging
import re
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Sequence

from lakehouse.fault_injection import pause_point
from lakehouse.job_report import JobReport, Progress
from lakehouse.lake_files import (EdgeFile, LakeLayoutError, LakeLocation, edge_file_at, list_committed_files,
                                  partition_time_end, unescape_partition_value)
from lakehouse.register_ledger import JOB_WRITER, LedgerError, RegistrationLedger
from lakehouse.schema_evolution import IncompatibleSchemaError, SchemaPlan, plan_schema
from lakehouse.tables import Table, open_table
from stream_edge.lake import unescape_path_name

if TYPE_CHECKING:  # pragma: no cover
    from pyspark.sql import SparkSession

log = logging.getLogger("lakehouse.register")

_INTEGER = re.compile(r"-?\d+")


@dataclass
class RegisterOptions:
    source: str                     # edge table root: file:///..., s3://bucket/prefix/table
    table: str                      # catalog.db.table (Iceberg) or db.table / delta.`path` (Delta)
    table_format: str | None = None  # iceberg | delta (default: from the name, else iceberg)
    since: datetime | None = None   # only partitions whose time range ends after this
    max_files_per_commit: int = 5000
    default_catalog: str | None = None
    audit_branch: str | None = None  # Iceberg: commit to this branch, not main (lakehouse.audit)


@dataclass
class _FileFacts:
    file: EdgeFile
    schema: object  # pyarrow.Schema
    rows: int


def _read_footers(root: LakeLocation, files: Sequence[EdgeFile]) -> list[_FileFacts]:
    import pyarrow.parquet as pq

    fs, base = root.filesystem()
    progress = Progress(f"reading Parquet footers of {len(files)} new files")
    facts = []
    for i, f in enumerate(files, 1):
        try:
            with fs.open_input_file(f"{base}/{f.relative_path}") as handle:
                meta = pq.ParquetFile(handle).metadata
                facts.append(_FileFacts(f, meta.schema.to_arrow_schema(), meta.num_rows))
        except Exception as exc:  # noqa: BLE001 - name the file in whatever went wrong
            raise LakeLayoutError(f"cannot read the Parquet footer of {root.child(f.relative_path)}: {exc}") from exc
        progress(i, len(files))
    return facts


def _check_partitions(table: Table, facts: Sequence[_FileFacts], root: LakeLocation) -> None:
    """Files must be partitioned like the table, with values its column types can hold."""
    expected = table.partition_columns()
    types = table.columns()
    for fact in facts:
        cols = list(fact.file.partition_columns)
        if [c.lower() for c in cols] != [c.lower() for c in expected]:
            raise IncompatibleSchemaError(
                f"file {root.child(fact.file.relative_path)} is partitioned by {cols}, "
                f"the table {table.identifier} by {expected}"
            )
        for col, value in fact.file.partition:
            if value is not None and types.get(col) in ("int", "bigint", "smallint", "tinyint") \
                    and not _INTEGER.fullmatch(value):
                raise IncompatibleSchemaError(
                    f"file {root.child(fact.file.relative_path)}: partition value {col}={value!r} "
                    f"is not a valid {types[col]}"
                )


def _evolve(table: Table, facts: Sequence[_FileFacts], root: LakeLocation) -> None:
    plan = plan_schema(table.columns(), [(root.child(f.file.relative_path), f.schema) for f in facts],
                       partition_columns=table.partition_columns(), table_format=table.table_format)
    if plan.new_columns:
        log.info("schema evolution on %s: adding %s", table.identifier,
                 ", ".join(f"{c} {t}" for c, t in plan.new_columns))
        table.add_columns(plan.new_columns)
    if plan.widened_columns:
        log.info("schema evolution on %s: widening %s", table.identifier,
                 ", ".join(f"{c} {a}->{b}" for c, a, b in plan.widened_columns))
        table.widen_columns(plan.widened_columns)


def _prepare(table: Table, facts: Sequence[_FileFacts], root: LakeLocation) -> None:
    """Refuse files that do not fit; evolve the schema for those that do (idempotent)."""
    _check_partitions(table, facts, root)
    _evolve(table, facts, root)


def _creation_plan(root: LakeLocation, facts: Sequence[_FileFacts], partition_columns: Sequence[str],
                   table_format: str) -> SchemaPlan:
    """The new table's schema from the files that agree with each other, in listing order: a file
    that disagrees with those before it is left out here and set aside when it is registered."""
    agreed: list[tuple[str, object]] = []
    for fact in facts:
        candidate = agreed + [(root.child(fact.file.relative_path), fact.schema)]
        try:
            plan_schema(None, candidate, partition_columns=partition_columns, table_format=table_format)
        except IncompatibleSchemaError:
            continue
        agreed = candidate
    return plan_schema(None, agreed or [(root.child(f.file.relative_path), f.schema) for f in facts[:1]],
                       partition_columns=partition_columns, table_format=table_format)


def _admit(table: Table, facts: Sequence[_FileFacts], root: LakeLocation) -> tuple[list[_FileFacts],
                                                                                   list[tuple[_FileFacts, str]]]:
    """Split ``facts`` into the files the table can take (after schema evolution for them) and the
    files it cannot, each with the reason: a file that does not fit is set aside, never holding up
    the others (it was re-read and refused on every later run before, and blocked them all)."""
    columns = table.columns()
    partition_columns = table.partition_columns()
    admitted: list[_FileFacts] = []
    set_aside: list[tuple[_FileFacts, str]] = []
    for fact in facts:
        try:
            _check_partitions(table, [fact], root)
            plan = plan_schema(columns, [(root.child(fact.file.relative_path), fact.schema)],
                               partition_columns=partition_columns, table_format=table.table_format)
        except IncompatibleSchemaError as exc:
            set_aside.append((fact, str(exc)))
            continue
        columns.update(dict(plan.new_columns))
        columns.update({name: new for name, _old, new in plan.widened_columns})
        admitted.append(fact)
    if admitted:
        _evolve(table, admitted, root)
    return admitted, set_aside


def _commit_batch(table: Table, root: LakeLocation, ledger: RegistrationLedger, number: int,
                  files: Sequence[EdgeFile]) -> bool:
    """Commit one ledger batch idempotently, then mark it done.

    Returns False when an earlier (crashed) run had already committed it.
    """
    from lakehouse.iceberg_tables import IcebergTable

    if not files:  # every file of the batch is owned by a lower batch of another writer
        ledger.mark_done(number)
        return False
    pause_point("register.before-commit")
    if isinstance(table, IcebergTable):
        committed_now = table.last_batch() < number
        if committed_now:
            table.append_files(root, files, number, progress=Progress(f"batch {number}: adding files"))
    else:
        version = table.version()
        table.append_files(root, files, number, app_id=f"lakehouse-register-{table.uuid()}")
        committed_now = table.version() != version  # Delta skips a txn version it already has
    if not committed_now:
        log.info("batch %d was already committed to %s by an earlier run", number, table.identifier)
    pause_point("register.after-commit")
    ledger.mark_done(number)
    return committed_now


def _write_job_intent(ledger: RegistrationLedger, files: list[str], table: str, attempts: int = 20) -> int:
    """Record the job's next batch; a number taken by an edge partition's sink is skipped, one
    taken by another register run is an error (two runs must not work on one table)."""
    for _ in range(attempts):
        number = ledger.next_number()
        try:
            ledger.write_intent(number, files, table, writer=JOB_WRITER)
            return number
        except LedgerError:
            if ledger.writer_of(number) in (None, JOB_WRITER):
                raise
            log.info("batch number %d was taken by %s; trying the next one", number, ledger.writer_of(number))
    raise LedgerError(f"could not record a registration batch in {ledger.dir} after {attempts} attempts")


def run_register(spark: "SparkSession", options: RegisterOptions) -> JobReport:
    """Run the register job; returns its report (see the module docstring)."""
    if options.max_files_per_commit < 1:
        raise ValueError("--max-files-per-commit must be at least 1")
    root = LakeLocation.parse(options.source)
    table = open_table(spark, options.table, options.table_format, options.default_catalog)
    report = JobReport("register", table.identifier, table.table_format)

    log.info("listing committed files under %s%s", root.uri,
             f" (partitions after {options.since.isoformat()})" if options.since else "")
    committed = list(list_committed_files(root, since=options.since))
    log.info("%d committed files found", len(committed))

    footers: dict[str, _FileFacts] = {}  # read once per run
    if not table.exists():
        if not committed:
            log.info("no committed files under %s: table %s not created yet", root.uri, table.identifier)
            report.after(0, 0, 0)
            report.extra["files added"] = 0
            return report
        facts = _read_footers(root, committed)
        footers = {f.file.relative_path: f for f in facts}
        partition_cols = list(committed[0].partition_columns)
        plan = _creation_plan(root, facts, partition_cols, table.table_format)
        log.info("creating %s table %s partitioned by %s", table.table_format, table.identifier, partition_cols)
        table.create(plan.create_columns, partition_cols)
    if options.audit_branch:
        from lakehouse.audit import ensure_branch
        from lakehouse.iceberg_tables import IcebergTable

        if not isinstance(table, IcebergTable):
            raise ValueError("--audit needs an Iceberg table (write-audit-publish uses Iceberg branches)")
        ensure_branch(table, options.audit_branch)
        table.write_branch = options.audit_branch
        report.extra["audit branch"] = options.audit_branch
    report.before(*table.file_stats())

    ledger = RegistrationLedger(root, f"{table.table_format}-{table.uuid()}")
    others = [k for k in ledger.sibling_keys() if k.startswith("iceberg-") and k != ledger.key]
    if others:
        # An Iceberg table owns what it registered: its compaction deletes those edge files once
        # rewritten, so a second table fed from the same root would lose them.
        log.warning("the lake root %s is also registered into other Iceberg table(s) (ledgers %s): an "
                    "Iceberg table's compaction deletes the edge files it owns; feed one table per root",
                    root.uri, ", ".join(others))
    batches = ledger.batches()
    added_files = added_rows = 0
    for batch in batches:
        if batch.done or batch.writer != JOB_WRITER:
            continue  # an edge partition's pending batch is finished by that partition's sink
        if table.batch_committed(batch.number):
            # Committed, but the run died before its done marker. Do not touch the files: a
            # compaction since then may already have replaced and deleted them.
            log.info("batch %d was committed by an earlier run; marking it done", batch.number)
            ledger.mark_done(batch.number)
            continue
        log.info("finishing batch %d (%d files) left pending by an earlier run", batch.number, len(batch.files))
        owned_paths = [rel for rel in batch.files if rel in set(ledger.owned_files(batch.number))]
        gone = set(ledger.missing(owned_paths))
        if gone:
            # Not in the table (the batch is not committed) and not in the lake: nothing can
            # register them again, so retrying would fail on every run; name them and go on.
            log.warning("batch %d: %d file(s) no longer exist and are skipped: %s", batch.number, len(gone),
                        ", ".join(sorted(gone)[:5]) + (" ..." if len(gone) > 5 else ""))
        files = [edge_file_at(root, rel) for rel in owned_paths if rel not in gone]
        facts = _read_footers(root, files)
        _prepare(table, facts, root)
        if _commit_batch(table, root, ledger, batch.number, files):
            added_files += len(files)
            added_rows += sum(f.rows for f in facts)

    known = {rel for batch in batches for rel in batch.files}
    new_files = [f for f in committed if f.relative_path not in known]
    log.info("%d files are new to %s", len(new_files), table.identifier)
    set_aside: list[tuple[_FileFacts, str]] = []
    for start in range(0, len(new_files), options.max_files_per_commit):
        chunk = new_files[start:start + options.max_files_per_commit]
        unread = [f for f in chunk if f.relative_path not in footers]
        facts = [footers[f.relative_path] for f in chunk if f.relative_path in footers] + _read_footers(root, unread)
        # before the intent: a refused file is set aside, never recorded, never holds up the rest
        facts, refused = _admit(table, facts, root)
        set_aside += refused
        for fact, reason in refused:
            log.error("set aside (not registered): %s", reason)
        if not facts:
            continue
        admitted = {f.file.relative_path for f in facts}
        chunk = [f for f in chunk if f.relative_path in admitted]
        number = _write_job_intent(ledger, [f.relative_path for f in chunk], table.identifier)
        # The sink may have recorded some of these files in a lower batch meanwhile: it owns them.
        owned = set(ledger.owned_files(number))
        chunk = [f for f in chunk if f.relative_path in owned]
        facts = [f for f in facts if f.file.relative_path in owned]
        _commit_batch(table, root, ledger, number, chunk)
        added_files += len(chunk)
        added_rows += sum(f.rows for f in facts)
        log.info("batch %d committed: %d files, %d rows", number, len(chunk), sum(f.rows for f in facts))

    # Folded on every run, so every writer's reads per run stay bounded by the batches since the
    # last fold. A path is forgotten only if this run's listing covered its partition, did not
    # find it, and it is gone now (compacted and deleted): files outside --since's partitions,
    # and files committed after the listing, are kept.
    folded = ledger.checkpoint({f.relative_path for f in committed},
                               listed=None if options.since is None else _listed_since(options.since))
    if folded:
        log.info("registration ledger: batches up to %d folded into one checkpoint", folded)
    report.after(*table.file_stats())
    report.extra["files added"] = added_files
    report.extra["rows added"] = added_rows
    if set_aside:
        report.extra["files set aside"] = len(set_aside)
        report.problem = (f"{len(set_aside)} file(s) set aside, the table cannot take them (the others are "
                          f"registered): " + "; ".join(reason for _f, reason in set_aside[:3])
                          + (" ..." if len(set_aside) > 3 else ""))
    return report


def _listed_since(since: datetime):
    """Whether a listing with ``--since`` covered a path (its partition ends after ``since``, or
    its partition has no time we understand: such partitions are never pruned)."""
    def listed(relative_path: str) -> bool:
        values: dict[str, str | None] = {}
        for name in relative_path.split("/")[:-1]:
            column, _, raw = name.partition("=")
            values[unescape_path_name(column)] = unescape_partition_value(raw)
        end = partition_time_end(values)
        return end is None or end > since

    return listed
