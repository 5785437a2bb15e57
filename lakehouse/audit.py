"""Write-audit-publish for Iceberg tables: new files reach readers of ``main`` only after the suite passed.

1. **write**: ``lakehouse register --audit BRANCH`` commits the new files to the branch ``BRANCH``
   (created from ``main``'s current snapshot when missing), not to ``main``;
2. **audit**: ``lakehouse validate --branch BRANCH`` runs the expectations suite on the branch.
   Passed: the branch's snapshot is recorded as validated (table property
   ``lakehouse.audit.<branch>.validated-snapshot``). Failed: the rows that break a critical
   row-level expectation are appended to the quarantine table (``<table>_quarantine`` unless
   named), with the branch, the broken checks and the time; the branch is kept for inspection;
   the exit code is 1;
3. **publish**: ``lakehouse publish --branch BRANCH`` fast-forwards ``main`` to the branch, only
   if the branch's current snapshot is the validated one (a commit after the validation needs a
   new one), then drops the branch and its record. Anything else: ``main`` untouched, exit 1.

A branch per data interval (the Airflow DAG uses ``audit_<interval start>``) keeps a failed
interval's files out of ``main`` while later intervals publish: the files stay registered (the
ledger knows them) on their branch only.

Example::

    ensure_branch(table, "audit_2026010112")
    publish(table, "audit_2026010112")   # AuditError unless validated
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

from lakehouse.identifiers import quote_identifier, sql_string

if TYPE_CHECKING:  # pragma: no cover
    from pyspark.sql import Column, DataFrame, SparkSession

    from lakehouse.iceberg_tables import IcebergTable
    from lakehouse.quality_spec import QualitySpec

log = logging.getLogger("lakehouse.audit")

VALIDATED_PROPERTY = "lakehouse.audit.{branch}.validated-snapshot"
MAIN = "main"


class AuditError(RuntimeError):
    """A write-audit-publish step cannot go on (no such branch, not validated, main moved)."""


def check_branch_name(branch: str) -> str:
    if not branch or not all(c.isalnum() or c in "_-" for c in branch) or branch == MAIN:
        raise ValueError(f"audit branch must be letters, digits, _ or - (and not {MAIN!r}), got {branch!r}")
    return branch


def branch_head(table: "IcebergTable", branch: str) -> int | None:
    """The snapshot id ``branch`` points at (None: no such branch)."""
    ref = table.py_table().metadata.refs.get(branch)
    return None if ref is None else int(ref.snapshot_id)


def _procedure(table: "IcebergTable", name: str, *args: str) -> str:
    return (f"CALL {quote_identifier(table.catalog)}.system.{name}("
            + ", ".join([sql_string(table.sql_name), *args]) + ")")


def ensure_branch(table: "IcebergTable", branch: str) -> None:
    """Create ``branch`` at ``main``'s current snapshot (an empty one for a new table) if missing."""
    check_branch_name(branch)
    if branch_head(table, branch) is not None:
        return
    table.spark.sql(f"ALTER TABLE {table.sql_name} CREATE BRANCH IF NOT EXISTS {quote_identifier(branch)}")
    table.refresh()
    log.info("created audit branch %s of %s", branch, table.identifier)


def branch_sql(table: "IcebergTable", branch: str) -> str:
    """SQL for the rows of ``branch``."""
    return f"SELECT * FROM {table.sql_name} VERSION AS OF '{check_branch_name(branch)}'"


def record_validated(table: "IcebergTable", branch: str, snapshot_id: int) -> None:
    key = sql_string(VALIDATED_PROPERTY.format(branch=branch))
    table.spark.sql(f"ALTER TABLE {table.sql_name} SET TBLPROPERTIES ({key} = '{int(snapshot_id)}')")


def validated_snapshot(table: "IcebergTable", branch: str) -> int | None:
    value = table.py_table().properties.get(VALIDATED_PROPERTY.format(branch=branch))
    return None if value is None else int(value)


def publish(table: "IcebergTable", branch: str) -> int:
    """Fast-forward ``main`` to ``branch`` (validated, unchanged since); drop the branch. Returns the
    snapshot id ``main`` now points at."""
    check_branch_name(branch)
    head = branch_head(table, branch)
    if head is None:
        raise AuditError(f"{table.identifier} has no branch {branch!r} (register --audit {branch} first)")
    validated = validated_snapshot(table, branch)
    if validated != head:
        raise AuditError(f"branch {branch!r} of {table.identifier} is not validated at its current snapshot {head} "
                         f"({'never validated' if validated is None else f'validated at {validated}'}); "
                         f"run validate --branch {branch}; main is untouched")
    spark = table.spark
    if table.current_snapshot_id() is None:
        spark.sql(_procedure(table, "set_current_snapshot", str(int(head)))).collect()
    else:  # refused by Iceberg if main moved away from the branch's base
        spark.sql(_procedure(table, "fast_forward", sql_string(MAIN), sql_string(branch))).collect()
    spark.sql(f"ALTER TABLE {table.sql_name} DROP BRANCH IF EXISTS {quote_identifier(branch)}")
    key = sql_string(VALIDATED_PROPERTY.format(branch=branch))
    spark.sql(f"ALTER TABLE {table.sql_name} UNSET TBLPROPERTIES IF EXISTS ({key})")
    table.refresh()
    log.info("published branch %s of %s: main is at snapshot %d", branch, table.identifier, head)
    return head


def violation(spec_entry: Any, df: "DataFrame") -> "Column | None":
    """A condition true on the rows that break one row-level expectation (None: table-level)."""
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    kind = spec_entry.type
    if kind in ("not_null", "between", "in_set", "regex"):
        if not spec_entry.column:
            return None
        return _column_violation(kind, spec_entry, F.col(quote_identifier(spec_entry.column)))
    if kind == "unique":
        names = [spec_entry.column] if spec_entry.column else list(spec_entry.columns)
        present = F.lit(True)
        for name in names:
            present = present & F.col(quote_identifier(name)).isNotNull()
        keys = [F.col(quote_identifier(name)) for name in names]
        return present & (F.count(F.lit(1)).over(Window.partitionBy(*keys)) > 1)
    return None  # row_count_between, columns_exist: about the table, not rows


def _column_violation(kind: str, spec_entry: Any, column: "Column") -> "Column":
    """The violation of a one-column expectation (``not_null``, ``between``, ``in_set``, ``regex``)."""
    from pyspark.sql import functions as F

    if kind == "not_null":
        return column.isNull()
    if kind == "between":
        low = column < spec_entry.min if spec_entry.min is not None else F.lit(False)
        high = column > spec_entry.max if spec_entry.max is not None else F.lit(False)
        return column.isNotNull() & (low | high)
    if kind == "in_set":
        return column.isNotNull() & ~column.isin(*spec_entry.values)
    return column.isNotNull() & ~column.rlike(spec_entry.pattern)  # regex


def quarantine(spark: "SparkSession", df: "DataFrame", spec: "QualitySpec", quarantine_table: str,
               branch: str | None) -> int:
    """Append the rows of ``df`` that break a critical row-level expectation of ``spec`` to
    ``quarantine_table`` (created when missing) with ``_audit_branch``, ``_failed_checks`` (the
    labels) and ``_quarantined_at``; returns how many."""
    from pyspark.sql import functions as F

    candidates = [(e.label, violation(e, df)) for e in spec.expectations
                  if e.severity == "critical" and (e.column is None or e.column in df.columns)
                  and all(c in df.columns for c in e.columns)]
    checks = [(label, cond) for label, cond in candidates if cond is not None]
    if not checks:
        return 0
    failed = F.filter(F.array(*[F.when(cond, F.lit(label)) for label, cond in checks]), lambda x: x.isNotNull())
    flagged = df.select("*", failed.alias("_failed_checks")).where(F.size("_failed_checks") > 0)
    rows = flagged.select("*", F.lit(branch).cast("string").alias("_audit_branch"),
                          F.current_timestamp().alias("_quarantined_at")).localCheckpoint(eager=True)
    count = rows.count()
    if count:
        if spark.catalog.tableExists(quarantine_table):
            rows.writeTo(quarantine_table).option("mergeSchema", "true").append()
        else:
            spark.sql(f"CREATE NAMESPACE IF NOT EXISTS {quarantine_table.rsplit('.', 1)[0]}")
            rows.writeTo(quarantine_table).using("iceberg").create()
    log.warning("%d rows breaking critical expectations written to %s", count, quarantine_table)
    return count
