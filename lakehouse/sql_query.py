"""The ``sql`` command: run a query over the catalog tables; print it, or write CSV/Parquet.

Iceberg tables are ``<catalog>.<db>.<table>`` (the REST or embedded catalog); Delta tables made
by the jobs are ``db.table`` (declared from the warehouse on start) or ``delta.`/path```.

Example::

    run_sql(spark, "SELECT sensor, count(*) AS n FROM lake.db.sensor_readings GROUP BY sensor")
"""

from __future__ import annotations

import sys
import time
from typing import TYPE_CHECKING, TextIO

from lakehouse.delta_tables import declare_warehouse_tables
from lakehouse.lake_files import LakeLayoutError, LakeLocation

if TYPE_CHECKING:  # pragma: no cover
    from pyspark.sql import SparkSession


def format_table(columns: list[str], rows: list[tuple], max_width: int = 40) -> str:
    """A plain-text table (psql style); NULL shown as ``NULL``, long cells cut with ``...``.

    >>> print(format_table(["a", "b"], [(1, None)]))
     a | b
    ---+-----
     1 | NULL
    """
    def cell(value: object) -> str:
        text = "NULL" if value is None else str(value)
        text = text.replace("\n", "\\n")
        return text if len(text) <= max_width else text[:max_width - 3] + "..."

    body = [[cell(v) for v in row] for row in rows]
    widths = [max([len(c)] + [len(r[i]) for r in body]) for i, c in enumerate(columns)]
    line = lambda cells: " " + " | ".join(c.ljust(w) for c, w in zip(cells, widths))  # noqa: E731
    out = [line(columns).rstrip(), "-+-".join("-" * w for w in widths).join(["-", "-"])]
    out += [line(r).rstrip() for r in body]
    return "\n".join(out)


def output_state(output: str) -> str:
    """What ``--output`` holds now: ``"missing"``, ``"empty"`` (an empty folder), ``"taken"``
    (a file, or a folder with anything in it) or ``"unknown"`` (a scheme pyarrow cannot list:
    Spark's own ``errorifexists`` guards it then)."""
    import pyarrow.fs as pafs

    try:
        fs, path = LakeLocation.parse(output).filesystem()
    except LakeLayoutError:
        return "unknown"
    info = fs.get_file_info(path)
    if info.type == pafs.FileType.NotFound:
        return "missing"
    if info.type == pafs.FileType.Directory:
        inside = fs.get_file_info(pafs.FileSelector(path, recursive=False))
        return "taken" if inside else "empty"
    return "taken"


def run_sql(spark: "SparkSession", query: str, output: str | None = None, output_format: str | None = None,
            max_rows: int = 100, out: TextIO = sys.stdout, overwrite: bool = False) -> str:
    """Run ``query``; print up to ``max_rows`` rows to ``out`` or write all rows to ``output``.

    A non-empty ``output`` is refused unless ``overwrite`` (it would be deleted recursively).
    Returns the summary line.
    """
    if not query.strip():
        raise ValueError("the SQL query is empty")
    started = time.monotonic()
    mode = "overwrite"
    if output and not overwrite:
        state = output_state(output)
        if state == "taken":
            raise ValueError(f"--output {output} is not empty: its contents would be replaced; "
                             "pass --overwrite to replace them, or choose another path")
        mode = "errorifexists" if state == "unknown" else "overwrite"  # missing or empty: nothing to lose
    declare_warehouse_tables(spark)
    df = spark.sql(query)
    if output:
        fmt = output_format or ("parquet" if output.rstrip("/").endswith(".parquet") else "csv")
        if fmt == "csv":
            # One CSV file with a header: results of the sql command are meant for people.
            df.coalesce(1).write.mode(mode).option("header", "true").csv(output)
        else:
            df.write.mode(mode).parquet(output)
        written = spark.read.format(fmt).option("header", "true").load(output).count()
        return f"sql: {written} rows written to {output} ({fmt}) in {time.monotonic() - started:.1f}s"
    rows = df.limit(max_rows + 1).collect()
    shown = rows[:max_rows]
    out.write(format_table(df.columns, [tuple(r) for r in shown]) + "\n")
    more = " (more rows not shown; use --max-rows or --output)" if len(rows) > max_rows else ""
    return f"sql: {len(shown)} rows{more} in {time.monotonic() - started:.1f}s"
