"""The ``validate`` job: check a table against its expectations spec with Great Expectations.

This module is the Great Expectations adapter (spec -> GX expectations, running the suite on a
Spark DataFrame, Data Docs, GX results -> :class:`ExpectationResult`); the report model it fills
lives in :mod:`lakehouse.quality_report` (no Great Expectations or Spark import).

A data team writes one JSON spec per table; the format, the expectation types and their rules are
documented once, in :mod:`lakehouse.quality_spec` (example: ``pipelines/quality/sensor_readings.json``).

The job reads the table (Iceberg or Delta, resolved like the other jobs; optionally only the
partitions after ``since`` and/or the rows matching ``where``), runs the suite through Great
Expectations' Spark datasource on that DataFrame (cached for the run), and returns a
:class:`ValidationReport` with one result per expectation. With ``data_docs_dir`` the run's Data
Docs page is written there (``index.html`` lists the newest runs of every table validated into
that folder; the JSON results it is built from live in ``<data_docs_dir>/.gx-stores/``);
without it nothing is written to disk.

Example::

    report = run_validate(spark, ValidateOptions(
        table="lake.db.sensor_readings", spec_path="pipelines/quality/sensor_readings.json",
        since=parse_since("1d"), data_docs_dir="/srv/data-docs"))
    print(report.summary_line())
    # validate lake.db.sensor_readings (iceberg): FAILED, rows 4000, expectations 9/10 passed,
    #   failed: not_null(sensor) [3 unexpected], data docs /srv/data-docs/validations/..., in 7.9s
    if report.failed:
        raise report.error()
"""

from __future__ import annotations

import logging
import time

from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any, Mapping, Sequence
from urllib.parse import unquote, urlparse

from lakehouse.quality_report import (DataQualityError, ExpectationResult, ValidateOptions, ValidationReport,
                                      docs_name)
from lakehouse.quality_spec import ExpectationSpec, QualitySpec, QualitySpecError, load_spec
from lakehouse.iceberg_tables import IcebergTable
from lakehouse.identifiers import quote_identifier
from lakehouse.tables import open_table

if TYPE_CHECKING:  # pragma: no cover
    from pyspark.sql import DataFrame, SparkSession

log = logging.getLogger("lakehouse.quality")

DOCS_SITE = "lakehouse"
STORES_DIR = ".gx-stores"     # under data_docs_dir: the suites and results the site is built from
DOCS_INDEX_LIMIT = 500        # newest runs listed on index.html (older pages stay on disk)
RUN_NAME = "validate"
EXAMPLES_SHOWN = 3
# SUMMARY results (counts and a few examples). No "unexpected index query": the report never shows
# it, and GX builds it by analysing ``df.filter(<condition>)``, which Spark rejects for the window
# conditions of the unique checks; GX swallows that error, but a session that has used an
# ``Observation`` (the windows job does) has Spark's observation listener re-raise it into an
# ERROR line with a stack trace.
RESULT_FORMAT = {"result_format": "SUMMARY", "partial_unexpected_count": EXAMPLES_SHOWN,
                 "return_unexpected_index_query": False}

__all__ = ("DataQualityError", "ExpectationResult", "QualitySpecError", "ValidateOptions", "ValidationReport",
           "docs_name", "gx_expectations", "run_validate")


def gx_column_names(columns: Sequence[str]) -> dict[str, str]:
    """Names Great Expectations can take for the columns whose own names it cannot.

    GX's Spark engine hands a column name to ``F.col`` unquoted, where a dot means a struct path
    and a backtick is a syntax error: such a column is shown to GX under a look-alike name (dot
    and backtick swapped for U+2024 and U+02CB), kept apart from every other column's name.
    Returns ``{table column: name GX sees}`` for the renamed ones only.

    >>> gx_column_names(["dot.ted", "a`b", "plain"])
    {'dot.ted': 'dot․ted', 'a`b': 'aˋb'}
    """
    taken = set(columns)
    out: dict[str, str] = {}
    for name in columns:
        if "." not in name and "`" not in name:
            continue
        alias = base = name.replace(".", "\u2024").replace("`", "\u02cb")
        n = 1
        while alias in taken:
            n += 1
            alias = f"{base}_{n}"
        taken.add(alias)
        out[name] = alias
    return out


def gx_expectations(spec: QualitySpec, names: Mapping[str, str] | None = None) -> list:
    """The Great Expectations objects for ``spec``, in spec order (each tagged with its entry);
    ``names`` maps a spec column to the name GX sees (:func:`gx_column_names`)."""
    import great_expectations as gx

    rename = dict(names or {})

    def col(name: str | None) -> Any:
        return rename.get(name, name) if name is not None else None

    E: Any = gx.expectations  # pydantic models: the spec was validated by quality_spec already
    out: list = []
    for entry in spec.expectations:
        common: dict[str, Any] = {"severity": entry.severity}
        if entry.description:
            common["description"] = entry.description
        if entry.mostly is not None:
            common["mostly"] = entry.mostly
        made: list = []
        if entry.type == "not_null":
            made.append(E.ExpectColumnValuesToNotBeNull(column=col(entry.column), **common))
        elif entry.type == "between":
            made.append(E.ExpectColumnValuesToBeBetween(column=col(entry.column), min_value=entry.min,
                                                        max_value=entry.max, **common))
        elif entry.type == "in_set":
            made.append(E.ExpectColumnValuesToBeInSet(column=col(entry.column), value_set=list(entry.values), **common))
        elif entry.type == "regex":
            made.append(E.ExpectColumnValuesToMatchRegex(column=col(entry.column), regex=entry.pattern, **common))
        elif entry.type == "unique" and entry.column:
            made.append(E.ExpectColumnValuesToBeUnique(column=col(entry.column), **common))
        elif entry.type == "unique":
            made.append(E.ExpectCompoundColumnsToBeUnique(column_list=[col(c) for c in entry.columns], **common))
        elif entry.type == "row_count_between":
            made.append(E.ExpectTableRowCountToBeBetween(min_value=entry.min, max_value=entry.max, **common))
        elif entry.type == "columns_exist":
            made.extend(E.ExpectColumnToExist(column=col(c), **common) for c in entry.columns)
        else:  # pragma: no cover - quality_spec accepts only the types above
            raise QualitySpecError(f"{spec.source}: expectations[{entry.index}]: unsupported type {entry.type!r}")
        for expectation in made:
            expectation.meta = {"lakehouse": {"entry": entry.index, "order": len(out)}}
            out.append(expectation)
    return out


def run_validate(spark: "SparkSession", options: ValidateOptions) -> ValidationReport:
    """Run the validate job; returns its report (``report.failed``: critical expectations failed)."""
    started = time.monotonic()
    spec = load_spec(options.spec_path)  # before touching the table: a bad spec fails fast
    docs_dir = _local_dir(options.data_docs_dir) if options.data_docs_dir else None
    table = open_table(spark, options.table, options.table_format, options.default_catalog)
    if not table.exists():
        raise ValueError(f"table {table.identifier} does not exist (run register first)")
    report = ValidationReport(table.identifier, table.table_format, options.spec_path)
    log.info("validate %s (%s) against %s: %d spec entries", table.identifier, table.table_format,
             options.spec_path, len(spec.expectations))
    if isinstance(table, IcebergTable):
        table.refresh()  # see commits made by other writers since this session cached the table
    branch_snapshot = None
    if options.branch:
        from lakehouse.audit import branch_head

        if not isinstance(table, IcebergTable):
            raise ValueError("--branch needs an Iceberg table (write-audit-publish uses Iceberg branches)")
        branch_snapshot = branch_head(table, options.branch)
        if branch_snapshot is None:
            raise ValueError(f"{table.identifier} has no branch {options.branch!r}")
        # pinned to the branch's snapshot: the one recorded as validated is the one checked
        source = spark.sql(f"SELECT * FROM {table.sql_name} VERSION AS OF {branch_snapshot}")
        report.branch = options.branch
    else:
        source = spark.table(table.sql_name)
    df, report.filter = _select(source, table, options)

    from pyspark import StorageLevel

    df = df.persist(StorageLevel.MEMORY_AND_DISK)  # Great Expectations reads the batch several times
    try:
        report.rows = df.count()
        log.info("%d rows to check%s", report.rows, f" ({report.filter})" if report.filter else "")
        if report.rows == 0:
            log.warning("no rows selected in %s: column checks pass vacuously", table.identifier)
        _run_suite(df, spec, docs_name(table.identifier), docs_dir, report)
        if options.branch:
            if not isinstance(table, IcebergTable):
                raise DataQualityError(f"--branch needs an Iceberg table; {table.identifier} is not one")
            _audit_outcome(spark, df, spec, table, options, report, branch_snapshot)
    finally:
        df.unpersist()
    report.duration_s = time.monotonic() - started
    for result in report.results:
        if not result.success:
            log.warning("%s", result.describe())
    log.info("%d/%d expectations passed%s", report.passed, report.total,
             f"; data docs: {report.data_docs_page}" if report.data_docs_page else "")
    return report


# -- internals ------------------------------------------------------------------------------------

def _audit_outcome(spark: "SparkSession", df: "DataFrame", spec: QualitySpec, table: IcebergTable,
                   options: ValidateOptions, report: ValidationReport, snapshot: int | None) -> None:
    """Passed: record the branch snapshot as validated. Failed: quarantine the failing rows."""
    from lakehouse.audit import quarantine, record_validated

    assert options.branch is not None and snapshot is not None
    if report.failed:
        target = options.quarantine_table or f"{table.identifier}_quarantine"
        report.quarantined = quarantine(spark, df, spec, target, options.branch)
        report.quarantine_table = target
        log.warning("branch %s of %s failed validation: not publishable; kept for inspection",
                    options.branch, table.identifier)
    else:
        record_validated(table, options.branch, snapshot)
        log.info("branch %s of %s validated at snapshot %d: ready to publish", options.branch, table.identifier,
                 snapshot)


def _local_dir(location: str) -> Path:
    """``data_docs_dir`` as an absolute local path (Data Docs are static files on local disk)."""
    parsed = urlparse(location)
    if parsed.scheme == "file":
        return Path(unquote(parsed.path)).resolve()
    if parsed.scheme and len(parsed.scheme) > 1:  # one letter: a Windows drive, not a scheme
        raise ValueError(f"data_docs_dir must be a local folder or file:// URI, got {location!r}")
    return Path(location).expanduser().resolve()


def _select(df: "DataFrame", table, options: ValidateOptions) -> tuple["DataFrame", str | None]:
    """Apply ``since`` and ``where``; returns the DataFrame and a description of the filter."""
    from lakehouse.compaction import since_predicate

    described = []
    if options.since is not None:
        predicate = since_predicate(options.since, table.partition_columns())
        if predicate is None:
            raise ValueError(f"--since needs year[/month/day/hour] partition columns, and {table.identifier} is "
                             f"partitioned by {table.partition_columns() or 'nothing'}; use --where instead")
        df = df.where(predicate)
        described.append(f"since {options.since.isoformat()}")
    if options.where:
        df = df.where(options.where)
        described.append(f"where {options.where}")
    return df, " and ".join(described) or None


def _gx_context(docs_dir: Path | None):
    """An ephemeral Great Expectations context: no project folder, no temp folder, no progress bars.

    With ``docs_dir`` it has one Data Docs site there, and keeps suites and validation results in
    ``docs_dir/.gx-stores`` so that the site's index lists the runs of every table validated into
    that folder (GX rebuilds the index from its stores and drops pages the stores do not know).
    """
    import great_expectations as gx
    from great_expectations.data_context.types.base import (
        DataContextConfig,
        InMemoryStoreBackendDefaults,
        ProgressBarsConfig,
    )

    defaults = InMemoryStoreBackendDefaults(init_temp_docs_sites=False)
    sites: dict = {}
    if docs_dir is not None:
        stores = docs_dir / STORES_DIR
        for store_name, class_name, folder in (
                (defaults.expectations_store_name, "ExpectationsStore", "expectations"),
                (defaults.validation_results_store_name, "ValidationResultsStore", "validations")):
            defaults.stores[store_name] = {"class_name": class_name, "store_backend": {
                "class_name": "TupleFilesystemStoreBackend", "base_directory": str(stores / folder)}}
        sites[DOCS_SITE] = {
            "class_name": "SiteBuilder",
            "show_how_to_buttons": False,
            "store_backend": {"class_name": "TupleFilesystemStoreBackend", "base_directory": str(docs_dir)},
            "site_index_builder": {"class_name": "DefaultSiteIndexBuilder",
                                   "validation_results_limit": DOCS_INDEX_LIMIT},
        }
    config = DataContextConfig(store_backend_defaults=defaults, data_docs_sites=sites, analytics_enabled=False,
                               progress_bars=ProgressBarsConfig(globally=False, metric_calculations=False))
    return gx.get_context(mode="ephemeral", project_config=config)


def _run_suite(df: "DataFrame", spec: QualitySpec, name: str, docs_dir: Path | None,
               report: ValidationReport) -> None:
    started = time.monotonic()
    import great_expectations as gx
    from great_expectations.core.run_identifier import RunIdentifier

    log.debug("Great Expectations imported in %.1fs", time.monotonic() - started)
    context = _gx_context(docs_dir)
    datasource = context.data_sources.add_spark("lakehouse", persist=False)  # cached by run_validate
    if hasattr(datasource, "_spark"):
        datasource._spark = df.sparkSession  # use this session, not whatever getOrCreate() returns
    batch = datasource.add_dataframe_asset(name).add_batch_definition_whole_dataframe("whole table")
    names = gx_column_names(df.columns)
    if names:
        from pyspark.sql import functions as F

        df = df.select(*[F.col(quote_identifier(c)).alias(names.get(c, c)) for c in df.columns])
    suite = context.suites.add_or_update(gx.ExpectationSuite(name=name, expectations=gx_expectations(spec, names)))
    definition = context.validation_definitions.add(gx.ValidationDefinition(name=name, data=batch, suite=suite))
    checkpoint = context.checkpoints.add(gx.Checkpoint(
        name=name, validation_definitions=[definition], actions=[], result_format=RESULT_FORMAT))
    log.info("running %d expectations with Great Expectations", len(suite.expectations))
    outcome = checkpoint.run(batch_parameters={"dataframe": df},
                             run_id=RunIdentifier(run_name=RUN_NAME, run_time=datetime.now(timezone.utc)))
    log.info("suite evaluated in %.1fs", time.monotonic() - started)
    (key, result), = outcome.run_results.items()
    report.results = _results(result, spec, {alias: column for column, alias in names.items()})
    if docs_dir is not None:
        try:
            context.build_data_docs(site_names=[DOCS_SITE], resource_identifiers=[key])
            report.data_docs_page = _site_path(context, key)
            report.data_docs_index = _site_path(context, None)
        except Exception as exc:  # noqa: BLE001 - the data verdict stands; say the docs are missing
            report.data_docs_error = f"{type(exc).__name__}: {exc}".splitlines()[0]
            log.error("Data Docs could not be written to %s: %s", docs_dir, report.data_docs_error)


def _site_path(context, key) -> str | None:
    urls = context.get_docs_sites_urls(resource_identifier=key, site_names=[DOCS_SITE], only_if_exists=True)
    url = urls[0].get("site_url") if urls else None
    return unquote(urlparse(url).path) if url else None


def _results(result, spec: QualitySpec, original: Mapping[str, str]) -> list[ExpectationResult]:
    """The report's results from GX's, with the table's own column names (``original``: GX's
    name -> the column's)."""
    entries = {e.index: e for e in spec.expectations}
    out = []
    for item in result.results:
        config = item.expectation_config
        tag = (config.meta or {}).get("lakehouse", {})
        entry: ExpectationSpec = entries[tag["entry"]]
        kwargs = config.kwargs
        column = original.get(kwargs.get("column"), kwargs.get("column")) or (
            ",".join(original.get(c, c) for c in kwargs["column_list"]) if kwargs.get("column_list") else None)
        values = item.result or {}
        label = f"columns_exist({column})" if entry.type == "columns_exist" else entry.label
        out.append((tag["order"], ExpectationResult(
            index=entry.index, type=entry.type, label=label, expectation=config.type, column=column,
            severity=entry.severity, success=bool(item.success),
            element_count=values.get("element_count"), unexpected_count=values.get("unexpected_count"),
            unexpected_percent=values.get("unexpected_percent"), observed_value=values.get("observed_value"),
            examples=list(values.get("partial_unexpected_list") or [])[:EXAMPLES_SHOWN],
            error=_exception_message(item.exception_info))))
    return [r for _, r in sorted(out, key=lambda pair: pair[0])]


def _exception_message(info: Any) -> str | None:
    """The first error message in GX's exception info (flat, or keyed by metric)."""
    if not isinstance(info, dict):
        return None
    candidates = [info] + [v for v in info.values() if isinstance(v, dict)]
    for candidate in candidates:
        message = candidate.get("exception_message")
        if message or candidate.get("raised_exception"):
            text = str(message or "raised an exception").strip()
            return text.splitlines()[0] if text else "raised an exception"
    return None
