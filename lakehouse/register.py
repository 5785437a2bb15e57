"""The ``register`` job: put committed edge files that the table lacks into the table.

Iceberg: in place (the table references the edge files; no copy). Delta: one idempotent append
per batch into the Delta table's own location (see ``lakehouse.delta_tables`` for why).

One run:

1. list the committed (visible) files under the edge table root (``--since`` prunes partitions);
2. create the table on first run: schema from the files' Parquet footers, partitioned by the
   Hive columns of the paths (``year/month/day/hour`` as int, others as string);
3. finish any batch a crashed run left pending (its intent is in the ledger; the commit is
   idempotent);
4. the new files = committed files - files in the ledger; evolve the schema for them (new
   nullable columns, safe widening), refuse incompatible types with the file and column named;
5. per batch: claim it, commit the files it owns to the table, mark it done.

Steps 3 and 5 are the registration protocol the data-lake sink's registrar runs too
(:class:`stream_edge.lake.registrar.Registrar`, over the shared ledger); this module brings the
table side: listing, footers, schema, and the Iceberg or Delta commit.

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
from lakehouse.register_ledger import JOB_WRITER, open_ledger
from lakehouse.tables import Table, open_table
from stream_edge.lake import unescape_path_name
from stream_edge.lake.registrar import Claim, Registrar
from stream_edge.lake.schema_plan import IncompatibleSchemaError, SchemaPlan, plan_schema

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
                       partition_columns=table.partition_columns(), table_format=table.table_format,
                       nested=_nested(table.table_format))
    if plan.new_columns:
        log.info("schema evolution on %s: adding %s", table.identifier,
                 ", ".join(f"{c} {t}" for c, t in plan.new_columns))
        table.add_columns(plan.new_columns)
    if plan.widened_columns:
        log.info("schema evolution on %s: widening %s", table.identifier,
                 ", ".join(f"{c} {a}->{b}" for c, a, b in plan.widened_columns))
        table.widen_columns(plan.widened_columns)
    if plan.new_fields or plan.widened_fields:
        log.info("schema evolution on %s: nested %s", table.identifier,
                 ", ".join([*(f"+{'.'.join(p)} {t}" for p, t in plan.new_fields),
                            *(f"{'.'.join(p)} {a}->{b}" for p, a, b in plan.widened_fields)]))
        table.evolve_fields(plan.new_fields, plan.widened_fields)  # type: ignore[union-attr]


def _nested(table_format: str) -> bool:
    """Struct columns evolve field by field (a Debezium ``after`` gaining a column) in Iceberg
    tables; a Delta table refuses such a file, as before (its edge reads cast to the table's
    struct types)."""
    return table_format == "iceberg"


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
            plan_schema(None, candidate, partition_columns=partition_columns, table_format=table_format,
                        nested=_nested(table_format))
        except IncompatibleSchemaError:
            continue
        agreed = candidate
    return plan_schema(None, agreed or [(root.child(f.file.relative_path), f.schema) for f in facts[:1]],
                       partition_columns=partition_columns, table_format=table_format, nested=_nested(table_format))


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
                               partition_columns=partition_columns, table_format=table.table_format,
                               nested=_nested(table.table_format))
        except IncompatibleSchemaError as exc:
            set_aside.append((fact, str(exc)))
            continue
        columns.update(dict(plan.new_columns))
        columns.update({name: new for name, _old, new in plan.widened_columns})
        columns.update(plan.merged_structs)
        admitted.append(fact)
    if admitted:
        _evolve(table, admitted, root)
    return admitted, set_aside


def _commit_batch(table: Table, root: LakeLocation, number: int, files: Sequence[EdgeFile]) -> bool:
    """Commit one ledger batch idempotently (the registrar marks it done afterwards).

    Returns False when an earlier (crashed) run had already committed it.
    """
    from lakehouse.iceberg_tables import IcebergTable

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
    return committed_now


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

    ledger = open_ledger(root, f"{table.table_format}-{table.uuid()}")
    registrar = Registrar(ledger, table.identifier)
    others = [k for k in ledger.sibling_keys() if k.startswith("iceberg-") and k != ledger.key]
    if others:
        # An Iceberg table owns what it registered: its compaction deletes those edge files once
        # rewritten, so a second table fed from the same root would lose them.
        log.warning("the lake root %s is also registered into other Iceberg table(s) (ledgers %s): an "
                    "Iceberg table's compaction deletes the edge files it owns; feed one table per root",
                    root.uri, ", ".join(others))
    added = {"files": 0, "rows": 0}

    def finish_pending(claims: list[Claim]) -> None:
        # Committed nowhere yet (resume asked the table): read, fit the schema, commit. An edge
        # partition's pending batch is finished by that partition's sink.
        [claim] = claims
        files = [edge_file_at(root, rel) for rel in claim.files]
        facts = _read_footers(root, files)
        _prepare(table, facts, root)
        if _commit_batch(table, root, claim.number, files):
            added["files"] += len(files)
            added["rows"] += sum(f.rows for f in facts)

    registrar.resume(JOB_WRITER, table.batch_committed, finish_pending)

    known = ledger.registered()
    new_files = [f for f in committed if f.relative_path not in known]
    log.info("%d files are new to %s", len(new_files), table.identifier)
    set_aside: list[tuple[_FileFacts, str]] = []
    for start in range(0, len(new_files), options.max_files_per_commit):
        chunk = new_files[start:start + options.max_files_per_commit]
        unread = [f for f in chunk if f.relative_path not in footers]
        facts = [footers[f.relative_path] for f in chunk if f.relative_path in footers] + _read_footers(root, unread)
        # before the claim: a refused file is set aside, never recorded, never holds up the rest
        facts, refused = _admit(table, facts, root)
        set_aside += refused
        for fact, reason in refused:
            log.error("set aside (not registered): %s", reason)
        if not facts:
            continue

        def commit_new(claims: list[Claim], facts: list[_FileFacts] = facts) -> None:
            # The sink may have recorded some of these files in a lower batch meanwhile: it owns them.
            [claim] = claims
            owned = set(claim.files)
            owned_facts = [f for f in facts if f.file.relative_path in owned]
            _commit_batch(table, root, claim.number, [f.file for f in owned_facts])
            added["files"] += len(owned_facts)
            added["rows"] += sum(f.rows for f in owned_facts)
            log.info("batch %d committed: %d files, %d rows", claim.number, len(owned_facts),
                     sum(f.rows for f in owned_facts))

        registrar.register([(JOB_WRITER, [f.file.relative_path for f in facts])], commit_new)

    # Folded on every run, so every writer's reads per run stay bounded by the batches since the
    # last fold. A path is forgotten only if this run's listing covered its partition, did not
    # find it, and it is gone now (compacted and deleted): files outside --since's partitions,
    # and files committed after the listing, are kept.
    registrar.fold({f.relative_path for f in committed},
                   listed=None if options.since is None else _listed_since(options.since))
    report.after(*table.file_stats())
    report.extra["files added"] = added["files"]
    report.extra["rows added"] = added["rows"]
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
