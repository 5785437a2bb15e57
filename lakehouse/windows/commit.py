"""The one output commit of a ``windows`` run: every row change and its bookmark land together, or not at all.

A run plans from the output snapshot ``main`` pointed at when it read its bookmark
(``WindowRun.base_snapshot``). Its change (:class:`lakehouse.windows.plan.OutputChange`) is
written to a branch of its own created at that snapshot (``windows_run_<ms>_<id>``): every row
of a full run (an overwrite; then, for sliding keys the edge's engines replayed, an append
of theirs), or an increment's new windows (an append, or one ``MERGE`` that
deletes the replaced keys' rows and inserts theirs), the bookmark in the write's snapshot
summary. Then Iceberg's ``fast_forward`` moves ``main`` to the branch: only if ``main`` is still
an ancestor of it, that is, only if no other commit reached the output since the run read its
bookmark (optimistic concurrency). Two runs at once: the second's fast-forward fails, nothing of
it reaches ``main``, and it raises :class:`ConcurrentRunError` (the job plans again from the
first run's bookmark, so nothing is computed or added twice). Readers of ``main`` never see a
half-done run: the branch is invisible to them, the fast-forward is one metadata commit.

The first run creates the table (a concurrent creation fails cleanly: the table exists); a full
run whose output columns differ from the table's (a changed definition) replaces the table; a
Delta output is overwritten. The crash tests' pause point ``windows.before-commit`` comes
right before the commit that publishes.

Everything is Spark SQL and DataFrame writes (``writeTo``, ``MERGE INTO``, ``CALL``): it runs
over Spark Connect as over a classic session.

Example::

    written = commit_output(run, change)   # ConcurrentRunError: another run committed first
"""

from __future__ import annotations

import time
import uuid
from functools import reduce
from typing import TYPE_CHECKING, Any

from lakehouse.fault_injection import pause_point
from lakehouse.identifiers import quote_field_path, split_multipart, sql_string
from lakehouse.windows.definition import OUTPUT_COLUMNS, quote_column
from lakehouse.windows.plan import OutputChange, WindowRun

if TYPE_CHECKING:  # pragma: no cover
    from pyspark.sql import DataFrame

__all__ = ("BRANCH_PREFIX", "ConcurrentRunError", "commit_output")

BRANCH_PREFIX = "windows_run_"
#: a run branch older than this is a dead run's (a driver killed between its write and its
#: fast-forward): the next run that commits drops it
STALE_BRANCH_MS = 6 * 3_600_000


class ConcurrentRunError(RuntimeError):
    """Another commit reached the output after this run read its bookmark; nothing was published."""


def commit_output(run: WindowRun, change: OutputChange) -> int:
    """Publish ``change`` to the output in one commit on ``main``; the rows written."""
    target = run.target
    rows = _rows(change)
    if target.table_format != "iceberg":
        return _overwrite_delta(run, rows)
    if not target.exists():
        if change.split is not None:  # planned for an existing table: plan again
            raise ConcurrentRunError(f"{run.options.output} was dropped after this run read its bookmark; "
                                     "nothing of this run was published")
        return _create(run, rows, change.properties)
    if change.mode == "incremental" and not change.rows and not change.properties:
        return 0  # nothing new: no commit
    if run.base_snapshot is None or (change.mode == "full" and not _same_columns(run, rows)):
        if change.split is not None:  # planned for a table of these columns: plan again
            raise ConcurrentRunError(f"{run.options.output} was replaced after this run read its bookmark; "
                                     "nothing of this run was published")
        return _replace(run, rows, change.properties)
    branch = f"{BRANCH_PREFIX}{int(time.time() * 1000)}_{uuid.uuid4().hex[:8]}"
    spark, name = run.spark, target.sql_name
    spark.sql(f"ALTER TABLE {name} CREATE BRANCH {quote_column(branch)} AS OF VERSION {int(run.base_snapshot)}")
    try:
        written = _write_branch(run, f"{name}.{quote_column('branch_' + branch)}", change, rows)
        pause_point("windows.before-commit")
        _fast_forward(run, branch)
    finally:
        spark.sql(f"ALTER TABLE {name} DROP BRANCH IF EXISTS {quote_column(branch)}")
    _drop_stale_branches(run)  # fast_forward refreshed Spark's cached table: no REFRESH needed
    return written


def _rows(change: OutputChange) -> "DataFrame | None":
    """The change's rows as one DataFrame of the output's columns (None without rows)."""
    if not change.rows:
        return None
    # not sorted: a sort of every window row (every record's, for sliding windows) costs more than
    # the files' order saves a reader of a table this size
    return reduce(lambda a, b: a.unionByName(b), [df.select(*OUTPUT_COLUMNS) for df in change.rows])


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


def _create(run: WindowRun, rows: "DataFrame | None", properties: dict[str, str]) -> int:
    """The first run: create the table with the rows and the bookmark."""
    assert rows is not None, "a full run always has rows (perhaps none of them)"
    namespace = quote_field_path(split_multipart(run.target.identifier)[:-1])
    run.spark.sql(f"CREATE NAMESPACE IF NOT EXISTS {namespace}")
    observed, counted = _observed(rows)
    pause_point("windows.before-commit")
    _with_properties(observed.writeTo(run.target.sql_name).using("iceberg"), properties).create()
    return int(counted.get["rows"] or 0)


def _replace(run: WindowRun, rows: "DataFrame | None", properties: dict[str, str]) -> int:
    """A full run into a table whose columns are not the rows' (a changed definition): replaced."""
    assert rows is not None
    run.say(f"windows: {run.options.output}'s columns differ from the new definition's: the table is replaced")
    observed, counted = _observed(rows)
    pause_point("windows.before-commit")
    _with_properties(observed.writeTo(run.target.sql_name).using("iceberg"), properties).createOrReplace()
    return int(counted.get["rows"] or 0)


def _same_columns(run: WindowRun, rows: "DataFrame | None") -> bool:
    return rows is None or _same_schema(run, rows.schema)


def _same_schema(run: WindowRun, schema: Any) -> bool:
    current = run.spark.table(run.target.sql_name).schema
    return [(f.name, f.dataType) for f in current.fields] == [(f.name, f.dataType) for f in schema.fields]


def writes_in_two_steps(run: WindowRun, schema: Any) -> bool:
    """Whether a full run's rows may be written in two steps on a branch (``OutputChange.split``):
    an Iceberg output that exists, with a snapshot to branch from and the columns of ``schema``."""
    target = run.target
    return (target.table_format == "iceberg" and run.base_snapshot is not None and target.exists()
            and _same_schema(run, schema))


def _write_branch(run: WindowRun, branch_name: str, change: OutputChange, rows: "DataFrame | None") -> int:
    """The change written to the run's branch, the bookmark in the write's summary."""
    spark = run.spark
    if change.mode == "full":
        from pyspark.sql import functions as F

        rest = None
        if change.split is not None:  # the first rows, then the rest on the same branch
            first, rest = change.split
            rows = first.select(*OUTPUT_COLUMNS)
        observed, counted = _observed(rows if rows is not None else spark.table(branch_name).limit(0))
        _with_properties(observed.writeTo(branch_name), change.properties).overwrite(F.lit(True))
        written = int(counted.get["rows"] or 0)
        more = rest() if rest is not None else None
        if more is None:
            return written
        more_rows, replaced = more
        if replaced is None:  # rows of keys the first write left out
            observed, counted = _observed(more_rows.select(*OUTPUT_COLUMNS))
            _with_properties(observed.writeTo(branch_name), change.properties).append()
            return written + int(counted.get["rows"] or 0)
        # the keys the first write could not prove: their rows replaced by the exact plan's
        _merge(run, branch_name, more_rows.select(*OUTPUT_COLUMNS),
               OutputChange("incremental", [more_rows], replaced, change.properties))
        return spark.table(branch_name).count()  # the rows the branch now holds (a rare path)
    if change.replace_keys is None:
        if rows is None:  # no window changes: the bookmark alone moves (an empty append)
            rows = spark.table(branch_name).limit(0)
        observed, counted = _observed(rows)
        _with_properties(observed.writeTo(branch_name), change.properties).append()
        return int(counted.get["rows"] or 0)
    return _merge(run, branch_name, rows, change)


def _merge(run: WindowRun, branch_name: str, rows: "DataFrame | None", change: OutputChange) -> int:
    """One ``MERGE``: delete every row of the replaced keys, insert the change's rows."""
    from pyspark.sql import functions as F

    spark = run.spark
    assert change.replace_keys is not None
    inserts = (rows if rows is not None else spark.table(branch_name).limit(0)).withColumn("__op", F.lit("insert"))
    deletes = change.replace_keys.select("key", *[F.lit(None).cast(inserts.schema[c].dataType).alias(c)
                                                  for c in OUTPUT_COLUMNS[1:]], F.lit("delete").alias("__op"))
    # computed once, before the MERGE reads them (it joins its source more than once)
    changes = inserts.unionByName(deletes).localCheckpoint(eager=True)
    inserted = changes.where("__op = 'insert'").count()
    view = f"windows_changes_{uuid.uuid4().hex}"
    changes.createOrReplaceTempView(view)
    conf_keys = [f"spark.sql.iceberg.snapshot-property.{k}" for k in change.properties]
    for key, value in zip(conf_keys, change.properties.values()):
        spark.conf.set(key, value)
    try:
        spark.sql(f"""
            MERGE INTO {branch_name} t USING {view} s
            ON s.__op = 'delete' AND t.key = s.key
            WHEN MATCHED THEN DELETE
            WHEN NOT MATCHED AND s.__op = 'insert' THEN
                INSERT (key, window_start, window_end, value) VALUES (s.key, s.window_start, s.window_end, s.value)
        """)
    finally:
        for key in conf_keys:
            spark.conf.unset(key)
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


def _overwrite_delta(run: WindowRun, rows: "DataFrame | None") -> int:
    """A Delta output: every row overwritten (Delta outputs always take full runs)."""
    assert rows is not None
    observed, counted = _observed(rows)
    pause_point("windows.before-commit")
    (observed.write.format("delta").mode("overwrite").option("overwriteSchema", "true")
     .save(run.target.location))
    run.target.declare()
    return int(counted.get["rows"] or 0)
