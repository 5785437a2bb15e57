"""The ``python-engine`` plan: each closing group's records through the edge's own window engines.

For what Spark's operators cannot express (a custom ``Aggregation`` such as ``Reduce`` or
``First``), and as the reference the native plan is checked against (the parity tests, the bench):
Spark groups the records by closing group (the key within its Kafka partition, or the partition)
and hands each group to :func:`windows_of_group` through ``applyInArrow`` (Arrow batches in, Arrow
batches out: no pandas conversion per group), which sorts it by offset and replays it through
``stream_edge.dataframe.windows.replay``, the engines the edge runs. The rows are the edge's by
construction, NaN included (its ``<``-based ``min``/``max``).

Example::

    rows = engine_windows(prepared, Grouping(spec, order_cols, group_cols), output_schema)
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Sequence

from lakehouse.windows.definition import Grouping, WindowSpec

if TYPE_CHECKING:  # pragma: no cover
    import pyarrow as pa
    from pyspark.sql import DataFrame

__all__ = ("engine_windows", "windows_of_group")


def windows_of_group(records: "pa.Table", spec: WindowSpec, order_by: Sequence[str],
                     schema: "pa.Schema | None" = None) -> "pa.Table":
    """The window rows the edge emits for one group (one key, or one Kafka partition).

    ``records`` has columns ``key``, ``ts``, ``value`` and the ``order_by`` columns; the result has
    ``key``, ``window_start``, ``window_end``, ``value`` (typed by ``schema`` when given). Pure
    Arrow + the edge's engines, so it is tested without Spark."""
    import pyarrow as pa

    from stream_edge.dataframe.windows.replay import replay

    if order_by:
        records = records.sort_by([(column, "ascending") for column in order_by])
    rows = replay(zip(records.column("key").to_pylist(), records.column("ts").to_pylist(),
                      records.column("value").to_pylist()),
                  kind=spec.kind, duration_ms=spec.duration_ms, grace_ms=spec.grace_ms, step_ms=spec.step_ms,
                  aggregation=spec.aggregation, mode="final", closing_strategy=spec.closing)
    columns = {"key": [r["key"] for r in rows], "window_start": [r["start"] for r in rows],
               "window_end": [r["end"] for r in rows], "value": [r["value"] for r in rows]}
    if schema is None:
        key_type = records.schema.field("key").type
        schema = pa.schema([("key", key_type), ("window_start", pa.int64()), ("window_end", pa.int64()),
                            ("value", records.schema.field("value").type if rows and not isinstance(
                                rows[0]["value"], float) else pa.float64())])
    return pa.Table.from_pydict(columns, schema=schema)


def engine_windows(data: "DataFrame", grouping: Grouping, schema: Any) -> "DataFrame":
    """The rows of ``data`` (prepared: ``key``, ``ts``, ``value``, the order columns; complete
    rows only) with ``schema`` (a Spark ``StructType`` of the output columns), each closing group
    through the edge's engines in ``applyInArrow``."""
    spec, order_cols, group_cols = grouping
    from pyspark.sql.pandas.types import to_arrow_schema

    arrow_schema = to_arrow_schema(schema)
    order = list(order_cols)

    def compute(table: "pa.Table") -> "pa.Table":
        return windows_of_group(table, spec, order, arrow_schema)

    columns = list(dict.fromkeys(["key", "ts", "value", *order_cols, *group_cols]))
    return data.select(*columns).groupBy(*group_cols).applyInArrow(compute, schema=schema)
