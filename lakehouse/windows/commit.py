"""The one output commit of a ``windows`` run: every write and its bookmark land together, or not at all.

The commit plans nothing: the job hands it write steps (:class:`WriteStep`, data: rows and the
keys they replace) one by one, the way a pyiceberg ``Transaction`` collects updates, and then
publishes them (:meth:`OutputTransaction.publish`).

Into an existing Iceberg output, a run writes to a branch of its own created at the output
snapshot it planned from (``WindowRun.base_snapshot``; ``windows_run_<ms>_<id>``): an overwrite
(every row of a full run), an append (an increment's new windows) or one ``MERGE`` (the rows of
some keys replaced), each with the bookmark in its snapshot summary. Publishing moves ``main`` to
the branch with Iceberg's ``fast_forward``: only if ``main`` is still an ancestor of it, that is,
only if no other commit reached the output since the run read its bookmark (optimistic
concurrency); otherwise nothing of the run reaches ``main`` and :class:`ConcurrentRunError` is
raised (the job plans again). Readers of ``main`` never see a half-done run.

A run that creates the output, replaces it (its columns differ: a changed definition) or writes
a Delta output makes one write, which is its commit. The crash tests' pause point
``windows.before-commit`` comes right before the commit that publishes.

Everything is Spark SQL and DataFrame writes (``writeTo``, ``MERGE INTO``, ``CALL``): it runs
over Spark Connect as over a classic session.

Example::

    with OutputTransaction(run, bookmark, "existing") as commit:
        commit.write(WriteStep("overwrite", rows))
        commit.write(WriteStep("merge", patch_rows, keys))
        commit.publish()            # ConcurrentRunError: another run committed first
"""

from __future__ import annotations

import time
import uuid
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from lakehouse.fault_injection import pause_point
from lakehouse.identifiers import quote_field_path, split_multipart, sql_string
from lakehouse.spark_sql import with_snapshot_properties
from lakehouse.windows.definition import OUTPUT_COLUMNS, quote_column
from lakehouse.windows.history import LATE_RECORDS_PROPERTY, late_records_value
from lakehouse.windows.plan import WindowRun

if TYPE_CHECKING:  # pragma: no cover
    from pyspark.sql import DataFrame

__all__ = ("BRANCH_PREFIX", "ConcurrentRunError", "OutputTransaction", "WriteStep")

BRANCH_PREFIX = "windows_run_"
#: a run branch older than this is a dead run's (a driver killed between its write and its
#: fast-forward): the next run that commits drops it
STALE_BRANCH_MS = 6 * 3_600_000


class ConcurrentRunError(RuntimeError):
    """Another commit reached the output after this run read its bookmark; nothing was published."""


@dataclass
class WriteStep:
    """One write of a run: ``overwrite`` (every row), ``append`` (rows added; None: the bookmark
    alone moves) or ``merge`` (every row of ``replace_keys``, one column ``key``, replaced by
    ``rows``)."""

    kind: str
    rows: "DataFrame | None" = None
    replace_keys: "DataFrame | None" = None


class OutputTransaction:
    """A run's writes to the output, published together. ``output`` is what the run planned for
    (:class:`lakehouse.windows.strategy.RunFacts`): ``missing`` (created), ``other-columns``
    (replaced), ``delta`` (overwritten): one write, which commits; ``existing``: the writes go to
    the run's branch, :meth:`publish` fast-forwards ``main`` to it."""

    def __init__(self, run: WindowRun, properties: dict[str, str], output: str) -> None:
        self.run, self.properties, self.output = run, properties, output
        self.branch: str | None = None
        self.written = 0  # the rows the writes added (a MERGE's: the rows it inserted)

    def __enter__(self) -> "OutputTransaction":
        return self

    def __exit__(self, *exc: Any) -> None:
        if self.branch is not None:
            self.run.spark.sql(f"ALTER TABLE {self.run.target.sql_name} DROP BRANCH IF EXISTS "
                               f"{quote_column(self.branch)}")

    def write(self, step: WriteStep) -> int:
        """Write ``step``; the rows it wrote."""
        run = self.run
        rows = step.rows.select(*OUTPUT_COLUMNS) if step.rows is not None else None
        if self.output != "existing":
            assert step.kind == "overwrite" and rows is not None and self.written == 0, "one write, every row"
            count = _write_whole(run, rows, self.properties, self.output)
        else:
            count = _write_branch(run, self._branch_name(), step, rows, self.properties)
        self.written += count
        return count

    def publish(self) -> None:
        """``main`` moved to the branch (:class:`ConcurrentRunError` when ``main`` moved since the
        base); nothing to do after a single write."""
        if self.branch is None:
            return
        pause_point("windows.before-commit")
        _fast_forward(self.run, self.branch)
        _drop_stale_branches(self.run)  # fast_forward refreshed Spark's cached table: no REFRESH needed

    def _branch_name(self) -> str:
        run = self.run
        if self.branch is None:
            if run.base_snapshot is None or not run.target.exists():
                raise ConcurrentRunError(f"{run.options.output} was dropped or replaced after this run read its "
                                         "bookmark; nothing of this run was published")
            self.branch = f"{BRANCH_PREFIX}{int(time.time() * 1000)}_{uuid.uuid4().hex[:8]}"
            run.spark.sql(f"ALTER TABLE {run.target.sql_name} CREATE BRANCH {quote_column(self.branch)} "
                          f"AS OF VERSION {int(run.base_snapshot)}")
        return f"{run.target.sql_name}.{quote_column('branch_' + self.branch)}"


def record_late_records(run: WindowRun, source_snapshot: int | None, late: int | None) -> None:
    """After a full run published: its late records as the output's table property (no snapshot)."""
    if run.target.table_format == "iceberg" and source_snapshot is not None and late is not None:
        value = sql_string(late_records_value(source_snapshot, run.fingerprint, late))
        run.spark.sql(f"ALTER TABLE {run.target.sql_name} SET TBLPROPERTIES ({sql_string(LATE_RECORDS_PROPERTY)} = {value})")


def _observed(rows: "DataFrame") -> tuple["DataFrame", Any]:
    """``rows`` with an observation of their count (read after the write: no pass of its own)."""
    from pyspark.sql import Observation
    from pyspark.sql import functions as F

    counted = Observation(f"windows_written_{uuid.uuid4().hex}")
    return rows.observe(counted, F.count(F.lit(1)).alias("rows")), counted


def _with_properties(writer: Any, properties: dict[str, str]) -> Any:
    for key, value in properties.items():
        writer = writer.option(f"snapshot-property.{key}", value)
    return writer


def _write_whole(run: WindowRun, rows: "DataFrame", properties: dict[str, str], output: str) -> int:
    """Every row in one write that commits: the output created, replaced, or (Delta) overwritten.
    Not sorted: a sort of every window row costs more than the files' order saves a reader."""
    observed, counted = _observed(rows)
    if output == "delta":
        pause_point("windows.before-commit")
        (observed.write.format("delta").mode("overwrite").option("overwriteSchema", "true")
         .save(run.target.location))
        run.target.declare()
        return int(counted.get["rows"] or 0)
    if output == "missing":
        namespace = quote_field_path(split_multipart(run.target.identifier)[:-1])
        run.spark.sql(f"CREATE NAMESPACE IF NOT EXISTS {namespace}")
    else:
        run.say(f"windows: {run.options.output}'s columns differ from the new definition's: the table is replaced")
    pause_point("windows.before-commit")
    writer = _with_properties(observed.writeTo(run.target.sql_name).using("iceberg"), properties)
    writer.create() if output == "missing" else writer.createOrReplace()
    return int(counted.get["rows"] or 0)


def _write_branch(run: WindowRun, branch_name: str, step: WriteStep, rows: "DataFrame | None",
                  properties: dict[str, str]) -> int:
    """``step`` written to the run's branch, the bookmark in the write's summary."""
    if step.kind == "merge":
        return _merge(run, branch_name, rows, step.replace_keys, properties)
    observed, counted = _observed(rows if rows is not None else run.spark.table(branch_name).limit(0))
    writer = _with_properties(observed.writeTo(branch_name), properties)
    if step.kind == "overwrite":
        from pyspark.sql import functions as F

        writer.overwrite(F.lit(True))
    else:
        writer.append()
    return int(counted.get["rows"] or 0)


def _merge(run: WindowRun, branch_name: str, rows: "DataFrame | None", keys: "DataFrame | None",
           properties: dict[str, str]) -> int:
    """One ``MERGE``: delete every row of the replaced keys, insert the step's rows."""
    from pyspark.sql import functions as F

    spark = run.spark
    assert keys is not None
    inserts = (rows if rows is not None else spark.table(branch_name).limit(0)).withColumn("__op", F.lit("insert"))
    deletes = keys.select("key", *[F.lit(None).cast(inserts.schema[c].dataType).alias(c)
                                   for c in OUTPUT_COLUMNS[1:]], F.lit("delete").alias("__op"))
    # computed once, before the MERGE reads them (it joins its source more than once)
    changes = inserts.unionByName(deletes).localCheckpoint(eager=True)
    inserted = changes.where("__op = 'insert'").count()
    view = f"windows_changes_{uuid.uuid4().hex}"
    changes.createOrReplaceTempView(view)
    try:
        with_snapshot_properties(spark, properties, lambda: spark.sql(f"""
            MERGE INTO {branch_name} t USING {view} s
            ON s.__op = 'delete' AND t.key = s.key
            WHEN MATCHED THEN DELETE
            WHEN NOT MATCHED AND s.__op = 'insert' THEN
                INSERT (key, window_start, window_end, value) VALUES (s.key, s.window_start, s.window_end, s.value)
        """))
    finally:
        spark.catalog.dropTempView(view)
    return inserted


def _procedure_table(run: WindowRun) -> tuple[str, str]:
    """(catalog, the table as a quoted SQL string literal) for Iceberg's procedures: the whole
    identifier, catalog included (a name without it makes Iceberg try its first part as a catalog
    first, and log the failure)."""
    parts = split_multipart(run.target.identifier)
    return quote_column(parts[0]), sql_string(quote_field_path(parts))


def _fast_forward(run: WindowRun, branch: str) -> None:
    """``main`` moved to ``branch``; :class:`ConcurrentRunError` when ``main`` moved since the base."""
    catalog, table = _procedure_table(run)
    try:
        run.spark.sql(f"CALL {catalog}.system.fast_forward(table => {table}, branch => 'main', "
                      f"to => {sql_string(branch)})").collect()
    except Exception as error:  # the message is the only public signal (classic and Connect alike)
        if "not an ancestor" not in str(error):
            raise
        raise ConcurrentRunError(
            f"another commit reached {run.options.output} after this run read its bookmark (output snapshot "
            f"{run.base_snapshot}); nothing of this run was published") from None


def _drop_stale_branches(run: WindowRun) -> None:
    """Drop the run branches of dead runs (older than :data:`STALE_BRANCH_MS`)."""
    now = int(time.time() * 1000)
    for name in run.output_refs:  # as the run read them when it planned
        if not name.startswith(BRANCH_PREFIX):
            continue
        try:
            started = int(str(name)[len(BRANCH_PREFIX):].split("_", 1)[0])
        except ValueError:
            continue
        if now - started > STALE_BRANCH_MS:
            run.spark.sql(f"ALTER TABLE {run.target.sql_name} DROP BRANCH IF EXISTS {quote_column(str(name))}")
