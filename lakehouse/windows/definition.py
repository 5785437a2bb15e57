"""What a ``windows`` run computes: the window definition, the job's options, its report.

The bottom of the windows package (:mod:`lakehouse.windows`): it imports nothing from the rest
of it. A window definition is the edge's vocabulary (``tumbling_window(duration, grace)``, ...)
checked the way the edge checks it; :func:`definition_fingerprint` hashes everything the output
rows depend on besides the source's records (a changed definition means a full recompute).

Example::

    spec = WindowSpec.parse("hopping", "10s", step="5s", aggregation="max")
    options = WindowRecomputeOptions(table="lake.db.raw", output="lake.db.temp_10s",
                                     value_column="temp", window=spec)
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass
from typing import Any, Sequence

from lakehouse.identifiers import quote_identifier

__all__ = ("AGGREGATIONS", "CLOSING", "OUTPUT_COLUMNS", "WINDOW_KINDS", "WindowRecomputeOptions", "WindowReport",
           "WindowSpec", "definition_fingerprint", "parse_duration_ms", "quote_column", "result_type")

WINDOW_KINDS = ("tumbling", "hopping", "sliding")
AGGREGATIONS = ("sum", "count", "mean", "min", "max")
CLOSING = ("key", "partition")
OUTPUT_COLUMNS = ("key", "window_start", "window_end", "value")
_DURATION = re.compile(r"^\s*(\d+)\s*(ms|s|m|h|d)?\s*$")
_UNIT_MS = {"ms": 1, "s": 1000, "m": 60_000, "h": 3_600_000, "d": 86_400_000}


def parse_duration_ms(text: str | int, what: str = "duration") -> int:
    """``500ms``, ``1s``, ``5m``, ``1h``, ``1d`` or a plain number of milliseconds -> ms.

    >>> parse_duration_ms("5m")
    300000
    """
    if isinstance(text, int):
        return text
    match = _DURATION.match(text)
    if not match:
        raise ValueError(f"{what}: not a duration: {text!r} (examples: 500ms, 1s, 5m, 1h, 1d)")
    return int(match.group(1)) * _UNIT_MS[match.group(2) or "ms"]


#: a column quoted for the SQL text of a plan (``selectExpr``, ``expr``, ``F.col``): the one
#: quoting function of :mod:`lakehouse.identifiers`, under the name the plans use
quote_column = quote_identifier


@dataclass(frozen=True)
class WindowSpec:
    """A window definition in the edge's vocabulary (``tumbling_window(duration, grace)`` ...).

    Checked the way the edge checks it: positive duration, grace >= 0, and for hopping windows a
    step that is positive, smaller than the duration; sliding windows close per key only.
    """

    kind: str
    duration_ms: int
    grace_ms: int = 0
    step_ms: int | None = None
    aggregation: Any = "mean"  # a name of AGGREGATIONS, or a stream_edge Aggregation object
    closing: str = "key"
    value_type: str | None = None  # Spark type (DDL) of a custom aggregation's result

    def __post_init__(self) -> None:
        if self.kind not in WINDOW_KINDS:
            raise ValueError(f"window kind must be one of {', '.join(WINDOW_KINDS)}, got {self.kind!r}")
        if isinstance(self.aggregation, str):
            if self.aggregation not in AGGREGATIONS:
                raise ValueError(f"aggregation must be one of {', '.join(AGGREGATIONS)}, got {self.aggregation!r}")
        else:
            from stream_edge.dataframe.windows.aggregations import Aggregation

            if not isinstance(self.aggregation, Aggregation) or self.aggregation.collects:
                raise ValueError("a custom aggregation must be a stream_edge Aggregation (not a collector), "
                                 f"got {self.aggregation!r}")
        if self.closing not in CLOSING:
            raise ValueError(f"closing must be 'key' or 'partition', got {self.closing!r}")
        if self.duration_ms <= 0:
            raise ValueError(f"window duration must be positive, got {self.duration_ms} ms")
        if self.grace_ms < 0:
            raise ValueError(f"grace must not be negative, got {self.grace_ms} ms")
        if self.kind == "hopping":
            if self.step_ms is None or not 0 < self.step_ms < self.duration_ms:
                raise ValueError(f"a hopping window needs 0 < step < duration, got step {self.step_ms} ms "
                                 f"and duration {self.duration_ms} ms")
        elif self.step_ms is not None:
            raise ValueError(f"step applies to hopping windows only, not {self.kind}")
        if self.kind == "sliding" and self.closing == "partition":
            raise ValueError("sliding windows close per key only (closing 'key')")

    @classmethod
    def parse(cls, kind: str, duration: str | int, grace: str | int = 0, step: str | int | None = None,
              aggregation: str = "mean", closing: str = "key") -> "WindowSpec":
        """From command-line style text: ``WindowSpec.parse("hopping", "10s", step="5s")``."""
        return cls(kind, parse_duration_ms(duration, "duration"), parse_duration_ms(grace, "grace"),
                   None if step is None else parse_duration_ms(step, "step"), aggregation, closing)

    @property
    def aggregation_name(self) -> str:
        """``mean``, ... or the custom aggregation's name."""
        return self.aggregation if isinstance(self.aggregation, str) else str(self.aggregation.name)

    @property
    def bound_ms(self) -> int:
        """``grace + duration``: a group's windows starting at or below ``event time - bound`` are closed."""
        return self.grace_ms + self.duration_ms

    @property
    def state_bound_ms(self) -> int:
        """How far below a group's event time the window state keeps records: ``bound_ms`` for
        fixed windows (a record at ``latest - bound`` is in closed windows only); one more for
        sliding windows (a window ending at ``latest - grace``, the oldest one not yet emitted,
        holds a record at ``latest - grace - duration``)."""
        return self.bound_ms + (1 if self.kind == "sliding" else 0)

    def describe(self) -> str:
        step = f", step {self.step_ms} ms" if self.step_ms else ""
        return (f"{self.kind} {self.duration_ms} ms{step}, grace {self.grace_ms} ms, {self.aggregation_name}, "
                f"closing per {self.closing}")


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
    ``python-engine``) and the mode (``full`` or ``incremental``) are named in it."""

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

    @property
    def path(self) -> str:
        """``<mode>, <engine>`` and the detail, e.g. ``incremental, native``."""
        return f"{self.mode}, {self.engine}" + (f" ({self.detail})" if self.detail else "")

    def summary_line(self) -> str:
        if self.mode == "incremental":
            return (f"windows {self.table} -> {self.output}: {self.spec}; {self.rows_read} new rows -> "
                    f"{self.windows} windows added or replaced in {self.seconds:.1f}s; path {self.path}")
        skipped = f" ({self.rows_skipped} with NULL timestamp/value/order skipped)" if self.rows_skipped else ""
        return (f"windows {self.table} -> {self.output}: {self.spec}; {self.rows_read} rows{skipped} in "
                f"{self.groups} groups -> {self.windows} windows in {self.seconds:.1f}s; path {self.path}")


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
