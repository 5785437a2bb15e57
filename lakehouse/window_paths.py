"""How the ``windows`` job computes the rows: the path (native or the edge's engines) and its plans.

:func:`choose_path` picks the path, :func:`compute_windows` builds the rows of a path (the exact
plans: offset order first), :func:`presorted_sliding` the one-sort sliding plan a full run tries
first; :class:`PathNote` carries what the report line and the window state need from a plan's
observations. The native path is the JVM loop (:mod:`lakehouse.window_loop`) wherever it can run,
else Spark's own operators (:mod:`lakehouse.window_native`); both give the same rows. Split from :mod:`lakehouse.window_recompute` (the job itself: options, input,
output), which imports the three functions from here.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Sequence

from lakehouse.window_loop import LoopState, loop_figures, loop_state, loop_unavailable_reason, loop_windows
from lakehouse.window_native import (group_hash, native_fixed_windows, native_sliding_windows,
                                     native_unsupported_reason, sliding_key_flags)

if TYPE_CHECKING:  # pragma: no cover
    import pandas as pd
    from pyspark.sql import DataFrame

    from lakehouse.window_recompute import WindowSpec

__all__ = ("PathNote", "choose_path", "compute_windows", "engine_windows", "presorted_sliding")


def choose_path(spec: WindowSpec, engine: str = "auto") -> str:
    """``native`` when the spec is expressible natively (unless ``engine="python"``), else
    ``python-engine``; ``engine="native"`` with a custom aggregation is an error."""
    if engine not in ("auto", "native", "python"):
        raise ValueError(f"engine must be auto, native or python, got {engine!r}")
    reason = native_unsupported_reason(spec)
    if engine == "native" and reason:
        raise ValueError(f"the native path cannot compute {reason}; use engine 'auto' or 'python'")
    return "native" if engine != "python" and reason is None else "python-engine"


@dataclass
class PathNote:
    """Which path computed the rows; read (``str``, :meth:`groups`) only after the rows were
    computed: the native path's counts are observations of that job (the JVM loop's, its
    :class:`lakehouse.window_loop.LoopFigures`)."""

    path: str
    observation: Any = None  # native: groups (and replayed groups for sliding windows); the loop's LoopFigures
    clustered: bool = False  # the rows come out grouped by key and in time order (no sort needed to write)
    loop: bool = False  # the JVM loop computed the rows (its figures also count the rows read and the windows)
    operators_reason: str | None = None  # native without the loop: why Spark's operators computed them
    loop_state: LoopState | None = None  # the window state the loop gathered (compute_windows' state_bound)

    def _metrics(self) -> dict[str, Any]:
        return self.observation.get if self.observation is not None else {}

    def __str__(self) -> str:
        replayed = int(self._metrics().get("replayed") or 0)
        if not replayed:
            return self.path
        port = " (their JVM port, in the loop)" if self.loop else ""
        return (f"native ({replayed} of {self.groups()} keys through the edge's engines{port}: sliding records "
                "inside closed windows or near time 0)")

    def windows(self) -> int | None:
        """The window rows the loop emitted (the rows a write of them writes), when it computed them."""
        return int(self._metrics().get("windows") or 0) if self.loop else None

    def rows_read(self) -> tuple[int, int] | None:
        """(rows read, rows skipped for a NULL timestamp or value) when the loop counted them."""
        if not self.loop:
            return None
        metrics = self._metrics()
        return int(metrics.get("rows") or 0), int(metrics.get("skipped") or 0)

    def state_floor(self) -> int | None:
        """The observed ``state_floor`` when no group was stale (``fixed_event_times``), else None."""
        metrics = self._metrics()
        if metrics.get("state_floor") is None or metrics.get("stale_groups") != 0:
            return None
        return int(metrics["state_floor"])

    def groups(self, data: "DataFrame | None" = None, group_cols: Sequence[str] = ()) -> int:
        """The number of closing groups (observed; counted on ``data`` for the python-engine path)."""
        if self.observation is not None:
            return int(self._metrics().get("groups") or 0)
        if data is None:
            return 0
        return data.select(*group_cols).distinct().count()


def compute_windows(data: "DataFrame", spec: WindowSpec, order_cols: Sequence[str], group_cols: Sequence[str],
                    value_type: Any, path: str, loop: str = "auto",
                    state_bound: int | None = None) -> tuple["DataFrame", PathNote]:
    """The window rows of ``data`` (columns ``key``, ``ts``, ``value`` and ``order_cols``, no NULL
    timestamp or value; the loop also takes rows with NULLs and counts them as skipped) on ``path``
    (``native`` or ``python-engine``), and the path's note for the report line. ``group_cols``
    make a closing group (:func:`group_columns`); ``loop`` is the JVM loop's mode
    (:data:`lakehouse.window_loop.LOOP_MODES`). The rows may carry a ``__gh`` column (the group's
    hash, to sort by; :func:`_write_output` drops it). ``state_bound`` (``grace + duration``): the
    JVM loop of tumbling or hopping windows also gathers the window state
    (:attr:`PathNote.loop_state`, None where it cannot)."""
    from pyspark.sql import types as T

    schema = T.StructType([T.StructField("key", data.schema["key"].dataType),
                           T.StructField("window_start", T.LongType()),
                           T.StructField("window_end", T.LongType()), T.StructField("value", value_type)])
    if path == "native":
        reason = loop_unavailable_reason(data, loop)
        if reason is None:
            return _loop_windows(data, spec, order_cols, group_cols, value_type, state_bound)
        rows, note = _native_windows(data.where("ts IS NOT NULL AND value IS NOT NULL"), spec, order_cols,
                                     group_cols, schema)
        note.operators_reason = reason
        return rows, note
    reason = native_unsupported_reason(spec)
    return (engine_windows(data, spec, order_cols, group_cols, schema),
            PathNote(f"python-engine ({reason})" if reason else "python-engine (forced)"))


def engine_windows(data: "DataFrame", spec: WindowSpec, order_cols: Sequence[str], group_cols: Sequence[str],
                   schema: Any) -> "DataFrame":
    """The Python-engine path: each group's records through the edge's engines (applyInPandas)."""
    from pyspark.sql import types as T

    from lakehouse.window_recompute import windows_of_group

    integral = isinstance(schema["value"].dataType, (T.LongType, T.IntegerType))

    def compute(group: "pd.DataFrame") -> "pd.DataFrame":
        result = windows_of_group(group, spec, order_cols)
        if integral:
            result["value"] = result["value"].astype("int64")
        return result

    columns = list(dict.fromkeys(["key", "ts", "value", *order_cols, *group_cols]))
    return data.select(*columns).groupBy(*group_cols).applyInPandas(compute, schema=schema)


def _loop_windows(data: "DataFrame", spec: WindowSpec, order_cols: Sequence[str], group_cols: Sequence[str],
                  value_type: Any, state_bound: int | None = None) -> tuple["DataFrame", PathNote]:
    """The native path through the JVM loop (:func:`lakehouse.window_loop.loop_windows`); per key
    its rows come out grouped by key and in time order."""
    from pyspark.sql import functions as F

    note = PathNote("native", loop_figures(data.sparkSession), clustered="key" in group_cols, loop=True)
    if state_bound is not None and spec.kind != "sliding":
        note.loop_state = loop_state(data, group_cols, order_cols, state_bound)
    rows = loop_windows(data, spec, order_cols, group_cols, note.observation, note.loop_state)
    return rows.withColumn("value", F.col("value").cast(value_type)), note


def _native_windows(data: "DataFrame", spec: WindowSpec, order_cols: Sequence[str], group_cols: Sequence[str],
                    schema: Any) -> tuple["DataFrame", PathNote]:
    """The native path; sliding keys without the closed form go through the engines (in the same
    job: their rows are a union branch, empty when every key has the closed form)."""
    from pyspark.sql import Observation
    from pyspark.sql import functions as F

    value_type = schema["value"].dataType
    note = PathNote("native", Observation(f"windows_groups_{uuid.uuid4().hex}"))
    if spec.kind != "sliding":
        rows = native_fixed_windows(data, spec, order_cols, group_cols, note.observation)
        return rows.withColumn("value", F.col("value").cast(value_type)), note
    flagged = sliding_key_flags(data, spec, order_cols, group_cols, note.observation)
    rows = native_sliding_windows(flagged, spec, group_cols).withColumn("value", F.col("value").cast(value_type))
    rest = flagged.where(~F.col("__native")).select(*data.columns)
    replayed = engine_windows(rest, spec, order_cols, group_cols, schema)
    note.clustered = True  # the RANGE frame's sort: by group, then window end
    return rows.unionByName(replayed.withColumn("__gh", group_hash(["key"]))), note


def presorted_sliding(data: "DataFrame", spec: WindowSpec, order_cols: Sequence[str], group_cols: Sequence[str],
                       value_type: Any, path: str) -> tuple["DataFrame", PathNote] | None:
    """The one-sort sliding plan of a full run on Spark's operators (:mod:`lakehouse.window_presorted`),
    or None where it does not apply (other kinds, the python-engine path, no single offset column;
    the caller does not ask when the JVM loop runs: it is exact in one sort)."""
    from pyspark.sql import Observation
    from pyspark.sql import functions as F

    from lakehouse.window_presorted import offset_column, presorted_sliding_windows

    offset = offset_column(order_cols, group_cols)
    if path != "native" or spec.kind != "sliding" or offset is None:
        return None
    note = PathNote("native", Observation(f"windows_groups_{uuid.uuid4().hex}"), clustered=True)
    rows = presorted_sliding_windows(data, spec, offset, group_cols, note.observation)
    return rows.withColumn("value", F.col("value").cast(value_type)), note
