"""What a ``windows`` run computes: the window definition, the job's options, its report.

The bottom of the windows package (:mod:`lakehouse.windows`): it imports nothing from the rest
of it. The window definition, :class:`WindowSpec`, is the edge's own (the rule book,
``stream_edge.dataframe.windows.rules``); :func:`definition_fingerprint` hashes everything the
output rows depend on besides the source's records (a changed definition means a full recompute).

Example::

    spec = WindowSpec.parse("hopping", "10s", step="5s", aggregation="max")
    options = WindowRecomputeOptions(table="lake.db.raw", output="lake.db.temp_10s",
                                     value_column="temp", window=spec)
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from typing import Any, NamedTuple, Sequence

from lakehouse.identifiers import quote_identifier
from stream_edge.dataframe.windows.rules import WindowSpec, parse_duration_ms

__all__ = ("OUTPUT_COLUMNS", "Grouping", "WindowRecomputeOptions", "WindowReport", "WindowSpec", "definition_fingerprint",
           "parse_duration_ms", "quote_column", "result_type")

OUTPUT_COLUMNS = ("key", "window_start", "window_end", "value")

#: a column quoted for the SQL text of a plan (``selectExpr``, ``expr``, ``F.col``): the one
#: quoting function of :mod:`lakehouse.identifiers`, under the name the plans use
quote_column = quote_identifier


class Grouping(NamedTuple):
    """What every plan of a run takes together: the window, the prepared order columns (the edge's
    reading order) and the closing group's columns."""

    spec: WindowSpec
    order_cols: Sequence[str]
    group_cols: Sequence[str]


@dataclass
class WindowRecomputeOptions:
    """What the ``windows`` job reads, computes and writes."""

    table: str
    output: str
    value_column: str
    window: WindowSpec
    key_column: str = "_kafka_key"
    timestamp_column: str = "_kafka_timestamp"
    order_by: Sequence[str] = ("_kafka_partition", "_kafka_offset")
    partition_column: str = "_kafka_partition"
    table_format: str | None = None
    output_format: str | None = None
    where: str | None = None
    default_catalog: str | None = None
    engine: str = "auto"  # auto (native when expressible), native, python
    full: bool = False  # recompute everything even when the output records a usable source snapshot


@dataclass
class WindowReport:
    """The outcome of one run, with the job's one-line summary: the engine (``native`` or
    ``python-engine``), the mode (``full`` or ``incremental``), the strategy and why, and the keys
    that fell back are named in it."""

    table: str
    output: str
    spec: str
    rows_read: int = 0
    rows_skipped: int = 0
    groups: int = 0
    windows: int = 0
    seconds: float = 0.0
    engine: str = "native"  # or "python-engine"
    mode: str = "full"  # or "incremental"
    detail: str = ""  # why the engine or the mode, what an increment recomputed
    strategy: str = "exact"  # lakehouse.windows.strategy.STRATEGIES
    reason: str = ""  # why that strategy
    fallback: str = ""  # the keys that fell back to the exact plan (or were recomputed whole), named

    @property
    def path(self) -> str:
        """``<mode>, <engine>`` and the detail, e.g. ``incremental, native``."""
        return f"{self.mode}, {self.engine}" + (f" ({self.detail})" if self.detail else "")

    def summary_line(self) -> str:
        strategy = f"; strategy {self.strategy}: {self.reason}" + (f"; fell back: {self.fallback}" if self.fallback
                                                                   else "")
        if self.mode == "incremental":
            return (f"windows {self.table} -> {self.output}: {self.spec}; {self.rows_read} new rows -> "
                    f"{self.windows} windows added or replaced in {self.seconds:.1f}s; path {self.path}{strategy}")
        skipped = f" ({self.rows_skipped} with NULL timestamp/value/order skipped)" if self.rows_skipped else ""
        return (f"windows {self.table} -> {self.output}: {self.spec}; {self.rows_read} rows{skipped} in "
                f"{self.groups} groups -> {self.windows} windows in {self.seconds:.1f}s; path {self.path}{strategy}")


def result_type(spark_type: Any, aggregation: Any, declared: str | None = None) -> Any:
    """Spark type of the result: count -> long, mean -> double, sum/min/max keep the input's
    integer or floating kind (as the edge's Python arithmetic does); a custom aggregation's is
    ``declared`` (default double)."""
    from pyspark.sql import types as T

    if not isinstance(aggregation, str):
        return T._parse_datatype_string(declared or "double")
    if aggregation == "count":
        return T.LongType()
    if aggregation == "mean":
        return T.DoubleType()
    if isinstance(spark_type, (T.ByteType, T.ShortType, T.IntegerType, T.LongType)):
        return T.LongType()
    if isinstance(spark_type, (T.FloatType, T.DoubleType, T.DecimalType)):
        return T.DoubleType()
    raise TypeError(f"value column must be numeric for {aggregation}, got {spark_type.simpleString()}")


def definition_fingerprint(options: WindowRecomputeOptions) -> str:
    """A short hash of everything the output rows depend on, besides the source's records."""
    spec = options.window
    parts = {
        "table": options.table, "value": options.value_column, "key": options.key_column,
        "ts": options.timestamp_column, "order": list(options.order_by), "partition": options.partition_column,
        "where": options.where, "kind": spec.kind, "duration": spec.duration_ms, "grace": spec.grace_ms,
        "step": spec.step_ms, "aggregation": spec.aggregation_name, "closing": spec.closing,
        "value_type": spec.value_type,
    }
    return hashlib.sha256(json.dumps(parts, sort_keys=True).encode()).hexdigest()[:16]
