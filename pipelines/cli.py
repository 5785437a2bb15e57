"""The ``lakehouse`` command: the batch jobs (register, compact, maintain, windows, validate) and SQL over the tables.

``lakehouse <job> ...`` and ``spark-submit pipelines/jobs/<job>.py ...`` run the same code with
the same arguments (the job scripts call :func:`main`). Exit codes: 0 done, 2 bad arguments,
1 the job failed. Progress goes to stderr, the one-line summary to stdout.

Examples::

    lakehouse register --source file:///data/lake/time-series/sensor_readings --table lake.db.sensor_readings
    lakehouse register --source s3://bucket/time-series/sensor_readings --table db.sensors --format delta
    lakehouse compact  --table lake.db.sensor_readings --since 2d --target-file-size 128MB
    lakehouse windows  --table lake.db.sensor_readings --output lake.db.temp_1m --duration 1m --value-column temp
    lakehouse upsert   --source lake.db.devices_changelog --table lake.db.devices
    lakehouse validate --table lake.db.sensor_readings --spec pipelines/quality/sensor_readings.json
    lakehouse sql "SELECT sensor, avg(value) FROM lake.db.sensor_readings GROUP BY sensor"

Connection settings come from the environment (see ``lakehouse.session.SparkSettings``:
``ICEBERG_REST_URI``, ``ICEBERG_TOKEN``/``ICEBERG_CREDENTIAL``, ``S3_ENDPOINT``, ``AWS_*``, ...);
secrets are never accepted on the command line, where ``ps`` would show them.
"""

from __future__ import annotations

import argparse
import logging
import re
import sys
import time
from datetime import timedelta
from typing import Sequence

from lakehouse.job_report import redact

log = logging.getLogger("lakehouse")

_SIZE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([kmgt]?)(i?b)?\s*$", re.IGNORECASE)
_DURATION = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([smhdw])\s*$")


def parse_size(text: str) -> int:
    """``128MB``, ``64m``, ``1g``, ``1048576`` -> bytes (binary multiples)."""
    match = _SIZE.match(text)
    if not match:
        raise argparse.ArgumentTypeError(f"not a size: {text!r} (examples: 128MB, 64m, 1g, 1048576)")
    factor = {"": 1, "k": 1 << 10, "m": 1 << 20, "g": 1 << 30, "t": 1 << 40}[match.group(2).lower()]
    value = int(float(match.group(1)) * factor)
    if value < 1:
        raise argparse.ArgumentTypeError(f"size must be positive, got {text!r}")
    return value


def parse_duration(text: str) -> timedelta:
    """``30m``, ``6h``, ``7d``, ``1w`` -> timedelta."""
    match = _DURATION.match(text)
    if not match:
        raise argparse.ArgumentTypeError(f"not a duration: {text!r} (examples: 30m, 6h, 7d, 1w)")
    unit = {"s": "seconds", "m": "minutes", "h": "hours", "d": "days", "w": "weeks"}[match.group(2)]
    return timedelta(**{unit: float(match.group(1))})


def _since(text: str):
    from lakehouse.lake_files import parse_since

    try:
        return parse_since(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not an integer: {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {value}")
    return value


def _quality_spec(text: str) -> str:
    from lakehouse.quality_spec import QualitySpecError, load_spec

    try:
        load_spec(text)  # a bad spec is a bad argument: exit 2 before Spark starts
    except QualitySpecError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None
    return text


def build_parser() -> argparse.ArgumentParser:
    common = argparse.ArgumentParser(add_help=False)
    conn = common.add_argument_group("Spark and catalog (defaults from the environment)")
    conn.add_argument("--master", help="Spark master (env SPARK_MASTER, default local[2])")
    conn.add_argument("--remote", help="Spark Connect server sc://host:port (env SPARK_REMOTE); "
                                       "the job runs there instead of in a driver of its own")
    conn.add_argument("--catalog", help="name of the Iceberg catalog in SQL (env LAKEHOUSE_CATALOG, default lake)")
    conn.add_argument("--catalog-uri", help="Iceberg REST catalog URI (env ICEBERG_REST_URI)")
    conn.add_argument("--embedded-catalog", action="store_true",
                      help="use the embedded local Iceberg catalog even if ICEBERG_REST_URI is set")
    conn.add_argument("--warehouse", help="Iceberg warehouse location (env ICEBERG_WAREHOUSE)")
    conn.add_argument("--quiet", action="store_true", help="only warnings and the summary line")

    parser = argparse.ArgumentParser(prog="lakehouse", description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True, metavar="{register,compact,maintain,windows,upsert,validate,publish,sql}")

    def table_args(p: argparse.ArgumentParser) -> None:
        p.add_argument("--table", required=True,
                       help="Iceberg: [catalog.]db.table; Delta: db.table or delta.`/path`")
        p.add_argument("--format", dest="table_format", choices=("iceberg", "delta"),
                       help="table format (default: delta for delta.`path`, else iceberg)")
        p.add_argument("--since", type=_since,
                       help="only partitions whose time range ends after this: ISO date/time (UTC) or age (6h, 2d)")

    reg = sub.add_parser("register", parents=[common], help="add committed edge files to the table",
                         description="Add committed edge files that the table lacks (Iceberg: in place).")
    reg.add_argument("--source", required=True, help="edge table root: file:///..., /path, s3://bucket/prefix/table")
    table_args(reg)
    reg.add_argument("--max-files-per-commit", type=_positive_int, default=5000,
                     help="split a large backlog into commits of at most this many files (default 5000)")
    reg.add_argument("--audit", metavar="BRANCH",
                     help="Iceberg write-audit-publish: commit to this branch (created from main), not to main; "
                          "then validate --branch BRANCH and publish --branch BRANCH")

    comp = sub.add_parser("compact", parents=[common], help="bin-pack small files, then clean up",
                          description="Bin-pack small files per partition, verify, then expire/vacuum.")
    table_args(comp)
    comp.add_argument("--target-file-size", type=parse_size, default=128 << 20,
                      help="target size of compacted files (default 128MB)")
    comp.add_argument("--min-input-files", type=_positive_int, default=2,
                      help="compact a partition only if it has at least this many small files (default 2)")
    comp.add_argument("--zorder", default="", help="Delta: comma-separated Z-ORDER columns")
    comp.add_argument("--retention", type=parse_duration, default=timedelta(days=7),
                      help="keep snapshots/removed files this long (default 7d)")
    comp.add_argument("--orphan-retention", type=parse_duration, default=timedelta(days=3),
                      help="Iceberg: delete unreferenced files older than this (default 3d)")
    comp.add_argument("--allow-unsafe-retention", action="store_true",
                      help="accept retentions shorter than the safe minimum (tests, emergencies)")
    comp.add_argument("--no-cleanup", action="store_true", help="skip expire/orphan removal/vacuum")

    mnt = sub.add_parser("maintain", parents=[common], help="one table-maintenance action (the maintenance DAG)",
                         description="Run one maintenance action: Iceberg expire-snapshots, remove-orphan-files, "
                                     "rewrite-manifests, compact-deletes (a keyed table's delete files and small "
                                     "files); Delta vacuum.")
    mnt.add_argument("--table", required=True, help="Iceberg: [catalog.]db.table; Delta: db.table or delta.`/path`")
    mnt.add_argument("--format", dest="table_format", choices=("iceberg", "delta"),
                     help="table format (default: delta for delta.`path`, else iceberg)")
    mnt.add_argument("--action", required=True,
                     choices=("expire-snapshots", "remove-orphan-files", "rewrite-manifests", "compact-deletes",
                              "vacuum"))
    mnt.add_argument("--retention", type=parse_duration, default=timedelta(days=7),
                     help="expire-snapshots/vacuum: keep snapshots/removed files this long (default 7d)")
    mnt.add_argument("--orphan-retention", type=parse_duration, default=timedelta(days=3),
                     help="remove-orphan-files: only files older than this (default 3d)")
    mnt.add_argument("--allow-unsafe-retention", action="store_true",
                     help="accept retentions shorter than the safe minimum (tests, emergencies)")

    from stream_edge.dataframe.windows.rules import CLOSING, NATIVE_AGGREGATIONS, WINDOW_KINDS

    win = sub.add_parser(
        "windows", parents=[common], help="recompute the edge's time windows from a lake table",
        description="Recompute tumbling/hopping/sliding window results with the edge's exact semantics "
                    "(records in Kafka offset order; Spark's operators, or the edge's engines in applyInArrow for "
                    "custom aggregations) into --output: incrementally from the source snapshot it records, "
                    "else (first run, --full) created or replaced.")
    win.add_argument("--table", required=True, help="source table: [catalog.]db.table (Iceberg) or Delta")
    win.add_argument("--format", dest="table_format", choices=("iceberg", "delta"),
                     help="source table format (default: delta for delta.`path`, else iceberg)")
    win.add_argument("--output", required=True,
                     help="result table (created by the first run, then brought up to date by each run in one commit)")
    win.add_argument("--output-format", choices=("iceberg", "delta"),
                     help="result table format (default: delta for delta.`path`, else iceberg)")
    win.add_argument("--kind", choices=WINDOW_KINDS, default="tumbling",
                     help="window kind (default tumbling)")
    win.add_argument("--duration", required=True, help="window length: 500ms, 1s, 5m, 1h, 1d")
    win.add_argument("--step", help="hopping windows: the step (e.g. 1s)")
    win.add_argument("--grace", default="0", help="grace period for late records (default 0)")
    win.add_argument("--aggregation", choices=NATIVE_AGGREGATIONS, default="mean",
                     help="aggregation of --value-column (default mean)")
    win.add_argument("--closing", choices=CLOSING, default="key",
                     help="windows close per key (the edge's default) or per Kafka partition "
                          "(edges built with closing_strategy='partition')")
    win.add_argument("--value-column", required=True, help="the column aggregated")
    win.add_argument("--key-column", default="_kafka_key", help="message key column (default _kafka_key)")
    win.add_argument("--timestamp-column", default="_kafka_timestamp",
                     help="event time, epoch ms or timestamp (default _kafka_timestamp)")
    win.add_argument("--order-by", default="_kafka_partition,_kafka_offset",
                     help="columns giving the edge's reading order (default _kafka_partition,_kafka_offset)")
    win.add_argument("--partition-column", default="_kafka_partition",
                     help="Kafka partition column, for --closing partition (default _kafka_partition)")
    win.add_argument("--where", help="SQL filter on the source rows, e.g. \"_kafka_partition = 0\"")
    win.add_argument("--engine", choices=("auto", "native", "python"), default="auto",
                     help="native: no Python per row (Spark's DataFrame/SQL operators); python: the "
                          "edge's engines per group (applyInArrow); "
                          "auto (default): native whenever the aggregation has a native form")
    win.add_argument("--full", action="store_true",
                     help="recompute every window; by default a run reads only the records added since the "
                          "source snapshot the output records (Iceberg source and output)")
    win.add_argument("--explain", action="store_true",
                     help="print the strategy the run would take and why (and the Spark plan of a full run's "
                          "first write); compute and write nothing")

    ups = sub.add_parser(
        "upsert", parents=[common], help="merge a changelog table's new changes into a keyed table",
        description="Merge every change the changelog table (the edge's lake with Kafka metadata, registered) "
                    "gained since the last run into the keyed Iceberg table, exactly once: the last change per "
                    "Kafka key wins, tombstones and Debezium deletes remove the key. The table is created by the "
                    "first run; the bookmark is committed with the merge, through a branch.")
    ups.add_argument("--source", required=True, help="the registered changelog table: [catalog.]db.table (Iceberg)")
    ups.add_argument("--table", required=True, help="the keyed table: [catalog.]db.table (Iceberg)")
    ups.add_argument("--key-column", default="key",
                     help="plain changes: the column holding the Kafka key, as a string (default key)")
    ups.add_argument("--cdc", choices=("debezium",),
                     help="the values are Debezium envelopes: key columns from the Kafka key's fields, rows "
                          "from after, op c/u/r/d")
    ups.add_argument("--partition-by", default="",
                     help="first run: the table's partitioning, e.g. \"bucket(16, key)\" or \"region, days(ts)\"")
    ups.add_argument("--merge-mode", choices=("merge-on-read", "copy-on-write"), default="merge-on-read",
                     help="first run: how merges change the table (default merge-on-read: deletion vectors, "
                          "never equality deletes; docs/keyed-tables.md)")
    ups.add_argument("--format-version", type=int, choices=(2, 3), default=3,
                     help="first run: Iceberg format version (default 3: deletion vectors; 2: position delete files)")
    ups.add_argument("--rejects-table", help="where changes without a key or with an unreadable envelope go "
                                             "(default <table>_rejects)")
    ups.set_defaults(table_format="iceberg")

    val = sub.add_parser("validate", parents=[common], help="check a table against its expectations spec",
                         description="Check a table against a JSON expectations spec with Great Expectations; "
                                     "exit 1 if a critical expectation fails.")
    table_args(val)
    val.add_argument("--spec", required=True, type=_quality_spec,
                     help="expectations spec file (JSON; format in pipelines/quality/README.md)")
    val.add_argument("--where", help="only rows matching this Spark SQL condition")
    val.add_argument("--data-docs-dir", help="write Great Expectations Data Docs (HTML) into this local folder")
    val.add_argument("--branch", help="Iceberg: validate this audit branch; passed: ready to publish; failed: "
                                      "its failing rows go to the quarantine table and the branch is kept")
    val.add_argument("--quarantine", metavar="TABLE", help="with --branch: quarantine table (default <table>_quarantine)")

    pub = sub.add_parser("publish", parents=[common], help="fast-forward main to a validated audit branch",
                         description="Write-audit-publish, last step: fast-forward the Iceberg table's main to "
                                     "the audit branch if validate --branch passed on its current snapshot; "
                                     "exit 1 (main untouched) otherwise.")
    pub.add_argument("--table", required=True, help="Iceberg table: [catalog.]db.table")
    pub.add_argument("--branch", required=True, help="the audit branch (register --audit BRANCH)")
    pub.set_defaults(table_format="iceberg")

    sql = sub.add_parser("sql", parents=[common], help="run a SQL query over catalog tables",
                         description="Run a query; print a table, or write CSV/Parquet with --output.")
    sql.add_argument("query", help="the SQL text (tables: <catalog>.db.t for Iceberg, db.t or delta.`path` for Delta)")
    sql.add_argument("--output", help="write the result here instead of printing it")
    sql.add_argument("--output-format", choices=("csv", "parquet"), default=None,
                     help="format of --output (default: from its extension, else csv)")
    sql.add_argument("--overwrite", action="store_true",
                     help="replace what --output holds (without it, a non-empty --output is refused)")
    sql.add_argument("--max-rows", type=_positive_int, default=100, help="rows to print (default 100)")
    return parser


def _settings(args: argparse.Namespace):
    from lakehouse.session import SparkSettings

    overrides: dict[str, object] = {"app_name": f"lakehouse-{args.command}"}
    if args.master:
        overrides["master"] = args.master
    if args.remote:
        if not args.remote.startswith("sc://"):
            raise ValueError(f"--remote {args.remote!r}: a Spark Connect address is sc://host:port")
        overrides["remote"] = args.remote
    if args.catalog:
        overrides["catalog_name"] = args.catalog
    if args.catalog_uri:
        overrides["rest_uri"] = args.catalog_uri
    if args.embedded_catalog:
        overrides["rest_uri"] = None
    if args.warehouse:
        overrides["warehouse"] = args.warehouse
    return SparkSettings.from_env(**overrides)


class _RedactingFilter(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        record.msg = redact(record.getMessage())
        record.args = ()
        return True


def _setup_logging(quiet: bool) -> None:
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s", "%H:%M:%S"))
    handler.addFilter(_RedactingFilter())
    root = logging.getLogger("lakehouse")
    root.handlers[:] = [handler]
    root.setLevel(logging.WARNING if quiet else logging.INFO)
    root.propagate = False


def run_command(spark, args: argparse.Namespace, default_catalog: str | None = None) -> str:
    """Run one parsed command on ``spark``; returns the summary line."""
    if args.command == "register":
        from lakehouse.register import RegisterOptions, run_register

        report = run_register(spark, RegisterOptions(
            source=args.source, table=args.table, table_format=args.table_format, since=args.since,
            max_files_per_commit=args.max_files_per_commit, default_catalog=default_catalog,
            audit_branch=args.audit))
        if report.problem:  # registered what it could; main() prints this and exits 1
            raise RuntimeError(f"{report.summary_line()}; {report.problem}")
        return report.summary_line()
    if args.command == "compact":
        from lakehouse.compaction import CompactOptions, run_compact

        report = run_compact(spark, CompactOptions(
            table=args.table, table_format=args.table_format, since=args.since,
            target_file_size=args.target_file_size, min_input_files=args.min_input_files,
            zorder=[c.strip() for c in args.zorder.split(",") if c.strip()],
            retention=args.retention, orphan_retention=args.orphan_retention,
            allow_unsafe_retention=args.allow_unsafe_retention, cleanup=not args.no_cleanup,
            default_catalog=default_catalog))
        return report.summary_line()
    if args.command == "maintain":
        from lakehouse.maintenance import MaintainOptions, run_maintain

        report = run_maintain(spark, MaintainOptions(
            table=args.table, action=args.action, table_format=args.table_format, retention=args.retention,
            orphan_retention=args.orphan_retention, allow_unsafe_retention=args.allow_unsafe_retention,
            default_catalog=default_catalog))
        return report.summary_line()
    if args.command == "windows":
        from lakehouse.windows import WindowRecomputeOptions, WindowSpec, explain_window_recompute, run_window_recompute

        spec = WindowSpec.parse(args.kind, args.duration, grace=args.grace, step=args.step,
                                aggregation=args.aggregation, closing=args.closing)
        window_options = WindowRecomputeOptions(
            table=args.table, output=args.output, value_column=args.value_column, window=spec,
            key_column=args.key_column, timestamp_column=args.timestamp_column,
            order_by=tuple(c.strip() for c in args.order_by.split(",") if c.strip()),
            partition_column=args.partition_column, table_format=args.table_format,
            output_format=args.output_format, where=args.where, default_catalog=default_catalog,
            engine=args.engine, full=args.full)
        if args.explain:
            return explain_window_recompute(spark, window_options)
        return run_window_recompute(spark, window_options).summary_line()
    if args.command == "upsert":
        from lakehouse.upsert import UpsertOptions, run_upsert
        from lakehouse.upsert.options import parse_partition_by

        upserted = run_upsert(spark, UpsertOptions(
            source=args.source, table=args.table, key_column=args.key_column, cdc=args.cdc,
            partition_by=parse_partition_by(args.partition_by), merge_mode=args.merge_mode,
            format_version=args.format_version, rejects_table=args.rejects_table, default_catalog=default_catalog))
        return upserted.summary_line()
    if args.command == "validate":
        from lakehouse.quality import ValidateOptions, run_validate

        report = run_validate(spark, ValidateOptions(
            table=args.table, table_format=args.table_format, spec_path=args.spec, since=args.since,
            where=args.where, data_docs_dir=args.data_docs_dir, default_catalog=default_catalog,
            branch=args.branch, quarantine_table=args.quarantine))
        if report.failed:
            print(report.summary_line(), flush=True)  # the summary still goes to stdout...
            raise report.error()  # ...and main() prints "lakehouse validate: FAILED ..." and returns 1
        return report.summary_line()
    if args.command == "publish":
        from lakehouse.audit import publish
        from lakehouse.iceberg_tables import IcebergTable

        table = open_table_for_cli(spark, args.table, default_catalog)
        if not isinstance(table, IcebergTable) or not table.exists():
            raise ValueError(f"publish needs an existing Iceberg table, got {args.table}")
        snapshot = publish(table, args.branch)
        return f"publish {table.identifier}: main fast-forwarded to branch {args.branch} (snapshot {snapshot})"
    if args.command == "sql":
        from lakehouse.sql_query import run_sql

        return run_sql(spark, args.query, output=args.output, output_format=args.output_format,
                       max_rows=args.max_rows, out=sys.stdout, overwrite=args.overwrite)
    raise ValueError(f"unknown command {args.command!r}")


def open_table_for_cli(spark, name: str, default_catalog: str | None):
    from lakehouse.tables import open_table

    return open_table(spark, name, "iceberg", default_catalog)


def _one_line(exc: BaseException) -> str:
    """A readable error: Java exceptions without their stack trace."""
    java = getattr(exc, "java_exception", None)
    text = str(java.toString()) if java is not None else f"{type(exc).__name__}: {exc}"
    lines = [line for line in text.splitlines() if line.strip()]
    return " | ".join(lines[:4]) if lines else type(exc).__name__


_NAME_PART = re.compile(r"^`?[A-Za-z_][A-Za-z0-9_]*`?$")


def _table_problem(table: str, table_format: str | None) -> str | None:
    """Why ``--table`` cannot name a table of that format (None if it can), checked before Spark starts."""
    from lakehouse.tables import resolve_format

    fmt = resolve_format(table, table_format)
    if fmt == "delta" and table.strip().startswith("delta.`"):
        return None if table.strip().endswith("`") and len(table.strip()) > len("delta.``") else \
            "a Delta path table is written delta.`/path/to/table`"
    parts = table.split(".")
    if not all(_NAME_PART.match(p) for p in parts):
        return f"{table!r} is not a dotted table name (letters, digits, _; optionally `quoted`)"
    if fmt == "iceberg" and len(parts) not in (2, 3):
        return f"an Iceberg table is [catalog.]db.table, got {table!r}"
    if fmt == "delta" and not (len(parts) == 2 or (len(parts) == 3 and parts[0] == "spark_catalog")):
        return f"a Delta table is db.table, spark_catalog.db.table or delta.`/path`, got {table!r}"
    return None


def _window_problem(args: argparse.Namespace) -> str | None:
    """Why the window options are invalid (None if they are fine), checked before Spark starts."""
    from lakehouse.windows import WindowSpec

    try:
        WindowSpec.parse(args.kind, args.duration, grace=args.grace, step=args.step,
                         aggregation=args.aggregation, closing=args.closing)
    except ValueError as exc:
        return f"--kind/--duration/--step/--grace: {exc}"
    return None


def _partition_problem(text: str) -> str | None:
    from lakehouse.upsert.options import parse_partition_by

    try:
        parse_partition_by(text)
    except ValueError as exc:
        return str(exc)
    return None


def main(argv: Sequence[str] | None = None) -> int:
    """Console entry point ``lakehouse``; also called by ``pipelines/jobs/<job>.py``."""
    parser = build_parser()
    args = parser.parse_args(argv)  # exits with 2 and a usage message on bad arguments
    if getattr(args, "table", None) is not None:
        problem = _table_problem(args.table, args.table_format)
        if problem:
            parser.error(f"--table: {problem}")
    if args.command == "upsert":
        problem = _table_problem(args.source, "iceberg") or _partition_problem(args.partition_by)
        if problem:
            parser.error(problem if problem.startswith("--") else f"--source: {problem}")
    if args.command == "windows":
        problem = _table_problem(args.output, args.output_format) or _window_problem(args)
        if problem:
            parser.error(problem if problem.startswith("--") else f"--output: {problem}")
    _setup_logging(args.quiet)
    started = time.monotonic()
    try:
        settings = _settings(args)
        from lakehouse.session import build_spark

        log.info("starting Spark (%s, catalog %r: %s)", ("Spark Connect " + settings.remote) if settings.remote
                 else settings.master or "master from spark-submit/local[2]", settings.catalog_name,
                 "REST " + settings.rest_uri if settings.rest_uri else "embedded")
        spark = build_spark(settings)
        summary = run_command(spark, args, default_catalog=settings.catalog_name)
    except KeyboardInterrupt:
        print(f"lakehouse {args.command}: interrupted", file=sys.stderr)
        return 130
    except Exception as exc:  # noqa: BLE001 - one clear line, secrets masked, non-zero exit
        log.debug("failure details", exc_info=True)
        message = redact(_one_line(exc))
        from lakehouse.session import missing_jars_hint

        hint = missing_jars_hint(message)
        message = f"{message}; {hint}" if hint else message
        print(f"lakehouse {args.command}: FAILED after {time.monotonic() - started:.1f}s: {message}",
              file=sys.stderr)
        return 1
    print(summary, flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
