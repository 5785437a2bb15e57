"""The validate job's report model: options, one result per expectation, the run's report.

Pure Python (no Great Expectations, no Spark), so the summary line, the failure rules and the
error message are unit-tested without a session; :mod:`lakehouse.quality` fills it from Great
Expectations' results.

Example::

    >>> r = ExpectationResult(index=0, type="not_null", label="not_null(sensor)",
    ...                       expectation="expect_column_values_to_not_be_null", column="sensor",
    ...                       severity="critical", success=False, unexpected_count=3)
    >>> ValidationReport(table="lake.db.t", table_format="iceberg", spec_path="s.json", rows=10,
    ...                  results=[r]).summary_line()
    'validate lake.db.t (iceberg): FAILED, rows 10, expectations 0/1 passed, failed: not_null(sensor) [3 unexpected], in 0.0s'
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from lakehouse.job_report import redact

__all__ = ("DataQualityError", "ExpectationResult", "ValidateOptions", "ValidationReport", "docs_name")


class DataQualityError(RuntimeError):
    """Critical expectations failed (or could not be evaluated) on a table."""


@dataclass
class ValidateOptions:
    """What to validate and where to put the Data Docs."""

    table: str
    spec_path: str
    table_format: str | None = None      # iceberg | delta | None: from the name, like the other jobs
    since: datetime | None = None        # only partitions (year/month/day/hour) ending after this
    where: str | None = None             # an extra Spark SQL filter on the rows
    data_docs_dir: str | None = None     # local folder (or file:// URI); None: no Data Docs
    default_catalog: str | None = None   # catalog for two-part Iceberg names
    branch: str | None = None            # Iceberg: validate this audit branch (lakehouse.audit)
    quarantine_table: str | None = None  # with branch: where failing rows go (default <table>_quarantine)


@dataclass
class ExpectationResult:
    """The outcome of one expectation (a ``columns_exist`` entry yields one per column)."""

    index: int                  # entry in the spec's ``expectations`` list
    type: str                   # spec type, e.g. ``between``
    label: str                  # e.g. ``between(temperature)``
    expectation: str            # Great Expectations name, e.g. ``expect_column_values_to_be_between``
    column: str | None
    severity: str
    success: bool
    element_count: int | None = None
    unexpected_count: int | None = None
    unexpected_percent: float | None = None
    observed_value: Any = None
    examples: list = field(default_factory=list)
    error: str | None = None

    @property
    def blocking(self) -> bool:
        """Fails the run: a critical expectation failed, or any expectation could not be evaluated."""
        return not self.success and (self.severity == "critical" or self.error is not None)

    def short(self) -> str:
        """``not_null(sensor) [3 unexpected]`` for the summary line."""
        if self.error is not None:
            reason = "error"
        elif self.unexpected_count is not None:
            reason = f"{self.unexpected_count} unexpected"
        elif self.type == "columns_exist":
            reason = "missing"
        else:
            reason = f"observed {self.observed_value}"
        return f"{self.label} [{reason}]"

    def describe(self) -> str:
        """One line: status, expectation and what was observed."""
        status = "ok" if self.success else ("FAILED" if self.blocking else self.severity.upper())
        text = f"{status} {self.label}"
        if self.error is not None:
            return f"{text}: could not be evaluated: {self.error}"
        if self.type == "columns_exist":
            return text + ("" if self.success else ": column not found")
        if self.unexpected_count is not None:
            of = f" of {self.element_count} rows" if self.element_count is not None else ""
            pct = f" ({self.unexpected_percent:.2f}%)" if self.unexpected_percent is not None else ""
            text += f": {self.unexpected_count} unexpected{of}{pct}"
            if self.examples and not self.success and self.type != "not_null":  # its examples are all None
                text += ", e.g. " + ", ".join(_short_value(v) for v in self.examples)
            return text
        return f"{text}: observed {self.observed_value}"


@dataclass
class ValidationReport:
    """Result of one validate run; ``summary_line()`` is what the job prints."""

    table: str
    table_format: str
    spec_path: str
    rows: int = 0
    results: list[ExpectationResult] = field(default_factory=list)
    filter: str | None = None
    data_docs_index: str | None = None
    data_docs_page: str | None = None
    data_docs_error: str | None = None
    duration_s: float = 0.0
    branch: str | None = None            # the audit branch validated (write-audit-publish)
    quarantined: int = 0                 # rows written to quarantine_table (failed audit)
    quarantine_table: str | None = None

    @property
    def total(self) -> int:
        return len(self.results)

    @property
    def passed(self) -> int:
        return sum(1 for r in self.results if r.success)

    @property
    def failures(self) -> list[ExpectationResult]:
        """Results that fail the run."""
        return [r for r in self.results if r.blocking]

    @property
    def warnings(self) -> list[ExpectationResult]:
        """Failed ``warning``/``info`` expectations: reported, not failing the run."""
        return [r for r in self.results if not r.success and not r.blocking]

    @property
    def failed(self) -> bool:
        return bool(self.failures)

    def summary_line(self) -> str:
        parts = [f"validate {self.table} ({self.table_format}): {'FAILED' if self.failed else 'passed'}",
                 f"rows {self.rows}" + (f" ({self.filter})" if self.filter else ""),
                 f"expectations {self.passed}/{self.total} passed"]
        if self.failures:
            parts.append("failed: " + ", ".join(r.short() for r in self.failures))
        if self.warnings:
            parts.append("warnings: " + ", ".join(r.short() for r in self.warnings))
        if self.branch:
            parts.append(f"branch {self.branch} " + (
                f"kept, not publishable; {self.quarantined} rows quarantined in {self.quarantine_table}"
                if self.failed else "validated, ready to publish"))
        if self.data_docs_page:
            parts.append(f"data docs {self.data_docs_page}")
        elif self.data_docs_error:
            parts.append(f"data docs NOT written ({self.data_docs_error})")
        return redact(", ".join(parts) + f", in {self.duration_s:.1f}s")

    def error(self) -> DataQualityError:
        """The exception a caller raises when :attr:`failed` (one line naming every failure)."""
        details = "; ".join(r.describe() for r in self.failures)
        return DataQualityError(redact(
            f"{len(self.failures)} of {self.total} expectations failed on {self.table}: {details}"))


def docs_name(table: str) -> str:
    """A name for the table's suite and Data Docs pages (dots become folders; no ``/`` or quotes).

    >>> docs_name("lake.db.sensor_readings"), docs_name("delta.`/data/delta/t`")
    ('lake.db.sensor_readings', 'delta.data_delta_t')
    """
    cleaned = re.sub(r"[^A-Za-z0-9_.-]+", "_", table)
    parts = [p.strip("_") for p in cleaned.split(".")]
    return ".".join(p for p in parts if p) or "table"


def _short_value(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."
