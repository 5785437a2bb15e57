"""The output commits of an incremental window run (:mod:`lakehouse.window_incremental`).

Each carries the run's bookmark (``properties``: the source snapshot and the definition) in its
snapshot summary, so the rows and the bookmark land together: an append of the new windows, or
one ``MERGE`` that replaces the rows of recomputed keys and inserts theirs. The crash tests'
pause point ``windows.before-commit`` comes right before the commit.

Example::

    written = commit_windows(spark, target, [rows], None, bookmark)   # an append
"""

from __future__ import annotations

import uuid
from typing import TYPE_CHECKING, Any

from lakehouse.fault_injection import pause_point

if TYPE_CHECKING:  # pragma: no cover
    from pyspark.sql import DataFrame, SparkSession

__all__ = ("append_windows", "commit_windows", "merge_windows")


def commit_windows(spark: "SparkSession", target: Any, inserted: list["DataFrame"], replace_keys: "DataFrame | None",
                    properties: dict[str, str]) -> int:
    """The output's one commit, carrying ``properties`` (the bookmark): a ``MERGE`` when keys are
    replaced, else an append; the rows inserted."""
    if replace_keys is not None:
        return merge_windows(spark, target, inserted, replace_keys, properties)
    if inserted:
        return append_windows(target, inserted, properties)
    # no window can change (sliding keys whose new records all lack a timestamp or value)
    from lakehouse.window_recompute import _commit_properties

    pause_point("windows.before-commit")
    _commit_properties(target, properties)
    return 0


def append_windows(target: Any, inserted: list["DataFrame"], properties: dict[str, str], pause: bool = True) -> int:
    """Append ``inserted`` to ``target`` in one commit carrying ``properties``; returns the rows.
    ``pause``: pass the crash tests' pause point first (False: the caller passed it)."""
    from pyspark.sql import Observation
    from pyspark.sql import functions as F

    rows = _output_rows(inserted)
    counted = Observation(f"windows_appended_{uuid.uuid4().hex}")
    writer = rows.observe(counted, F.count(F.lit(1)).alias("rows")).writeTo(target.sql_name)
    for key, value in properties.items():
        writer = writer.option(f"snapshot-property.{key}", value)
    if pause:
        pause_point("windows.before-commit")
    writer.append()
    return int(counted.get["rows"] or 0)


def _output_rows(inserted: list["DataFrame"]) -> "DataFrame":
    """The windows of ``inserted`` as one DataFrame of the output's columns."""
    from functools import reduce

    from lakehouse.window_recompute import OUTPUT_COLUMNS

    return reduce(lambda a, b: a.unionByName(b), [df.select(*OUTPUT_COLUMNS) for df in inserted])


def merge_windows(spark: "SparkSession", target: Any, inserted: list["DataFrame"], replace_keys: "DataFrame",
                  properties: dict[str, str]) -> int:
    """One ``MERGE`` into ``target``: delete every row of ``replace_keys``, insert ``inserted``;
    its snapshot carries ``properties``. Returns the number of rows inserted."""
    from pyspark.sql import functions as F

    from lakehouse.window_recompute import OUTPUT_COLUMNS

    rows = _output_rows(inserted).withColumn("__op", F.lit("insert"))
    deletes = replace_keys.select("key", *[F.lit(None).cast(rows.schema[c].dataType).alias(c)
                                          for c in OUTPUT_COLUMNS[1:]], F.lit("delete").alias("__op"))
    # computed once, before the MERGE reads them (it joins its source more than once); an
    # increment's changes are the new windows and the replaced keys' rows: small
    changes = rows.unionByName(deletes).localCheckpoint(eager=True)
    inserted_rows = changes.where("__op = 'insert'").count()
    view = f"windows_changes_{uuid.uuid4().hex}"
    changes.createOrReplaceTempView(view)
    conf_keys = [f"spark.sql.iceberg.snapshot-property.{k}" for k in properties]
    for key, value in zip(conf_keys, properties.values()):
        spark.conf.set(key, value)
    pause_point("windows.before-commit")
    try:
        spark.sql(f"""
            MERGE INTO {target.sql_name} t USING {view} s
            ON s.__op = 'delete' AND t.key = s.key
            WHEN MATCHED THEN DELETE
            WHEN NOT MATCHED AND s.__op = 'insert' THEN
                INSERT (key, window_start, window_end, value) VALUES (s.key, s.window_start, s.window_end, s.value)
        """)
    finally:
        for key in conf_keys:
            spark.conf.unset(key)
        spark.catalog.dropTempView(view)
    return inserted_rows
