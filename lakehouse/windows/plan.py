"""How a ``windows`` run computes its rows: the input it prepares and the engine it picks.

Two engines, one choice (:func:`choose_engine`), named in the run's report:

* ``native`` (:mod:`lakehouse.windows.native`): Spark's DataFrame/SQL operators, no Python per
  row, whenever the aggregation has a native form (``sum``/``count``/``mean``/``min``/``max``);
  sliding keys whose records land inside already-closed windows (or near time 0, or hold NaN
  under min/max) go through the edge's engines in the same job;
* ``python-engine`` (:mod:`lakehouse.windows.engine`): the edge's engines in ``applyInArrow``, for
  custom aggregations (an ``Aggregation`` object such as ``Reduce`` or ``First``).

:func:`prepare_input` selects and renames what both need (``key``, ``ts``, ``value``,
``__order_<i>``); :func:`compute_windows` returns the rows and a :class:`PlanNote` whose figures
(observations of the job that computes the rows) the report reads afterwards.

Example::

    data = prepare_input(spark.table("lake.db.raw"), options)
    rows, note = compute_windows(data, Grouping(options.window, order_cols, group_cols), value_type, "native")
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Callable, Sequence

from lakehouse.identifiers import quote_table_name
from lakehouse.windows.definition import (Grouping, WindowRecomputeOptions, WindowSpec, definition_fingerprint,
                                          quote_column, result_type)
from lakehouse.windows.engine import engine_windows
from lakehouse.windows.native import (group_hash, native_fixed_windows, native_sliding_windows,
                                      native_unsupported_reason, sliding_key_flags)
from lakehouse.windows.proven import proven_fixed_windows, proven_sliding_windows

if TYPE_CHECKING:  # pragma: no cover
    from pyspark.sql import DataFrame, SparkSession

__all__ = ("ENGINES", "Grouping", "IcebergName", "PlanNote", "WindowRun", "choose_engine", "complete_sql",
           "compute_windows", "extra_columns", "group_columns", "offset_column", "open_window_table", "output_schema",
           "prepare_input", "proven_windows", "fallback_windows")

#: what ``WindowRecomputeOptions.engine`` may say: auto (native when expressible), native, python
ENGINES = ("auto", "native", "python")


def complete_sql(order_cols: Sequence[str], group_cols: Sequence[str]) -> str:
    """A prepared row the windows use, as SQL text; the others are counted and skipped: a NULL
    timestamp or value (the edge would have failed on it), or a NULL order or group column (a
    record without an offset has no place in the order the edge read its partition in; every plan
    must leave it out alike, as Spark's sort puts NULL first and ``min``/``max`` ignore it)."""
    columns = dict.fromkeys([*order_cols, *(c for c in group_cols if c != "key")])
    return " AND ".join(["ts IS NOT NULL", "value IS NOT NULL", *(f"{quote_column(c)} IS NOT NULL" for c in columns)])


@dataclass(frozen=True)
class IcebergName:
    """An Iceberg table as the windows job addresses it: by name, through SQL only (so over Spark
    Connect too). ``identifier`` is ``catalog.namespace.table``; ``sql_name`` its quoted parts."""

    spark: "SparkSession"
    identifier: str
    table_format: str = "iceberg"

    @property
    def sql_name(self) -> str:
        return quote_table_name(self.identifier)

    def exists(self) -> bool:
        return bool(self.spark.catalog.tableExists(self.identifier))


def open_window_table(spark: "SparkSession", name: str, table_format: str | None,
                      default_catalog: str | None) -> Any:
    """The job's handle of a source or output: :class:`IcebergName` (``db.t`` gets
    ``default_catalog``), or a Delta table (``lakehouse.delta_tables``)."""
    from lakehouse.tables import resolve_format

    if resolve_format(name, table_format) == "delta":
        from lakehouse.delta_tables import DeltaTable

        return DeltaTable(spark, name)
    if name.count(".") == 1 and default_catalog:
        name = f"{default_catalog}.{name}"
    if len(name.split(".")) < 3:
        raise ValueError(f"Iceberg table {name!r} must be catalog.namespace.table")
    return IcebergName(spark, name)


def choose_engine(spec: WindowSpec, engine: str = "auto") -> str:
    """``native`` when the spec is expressible natively (unless ``engine="python"``), else
    ``python-engine``; ``engine="native"`` with a custom aggregation is an error."""
    if engine not in ENGINES:
        raise ValueError(f"engine must be auto, native or python, got {engine!r}")
    reason = native_unsupported_reason(spec)
    if engine == "native" and reason:
        raise ValueError(f"the native engine cannot compute {reason}; use engine 'auto' or 'python'")
    return "native" if engine != "python" and reason is None else "python-engine"


def extra_columns(options: WindowRecomputeOptions, available: Sequence[str] | None = None) -> list[str]:
    """The order columns, plus the Kafka partition column: windows close per partition, or per key
    within its partition (the edge's state is per partition), when the table has that column."""
    extra = list(options.order_by)
    wanted = options.window.closing == "partition" or available is None or options.partition_column in available
    if wanted and options.partition_column not in extra:
        extra.append(options.partition_column)
    return extra


def group_columns(options: WindowRecomputeOptions, extra: Sequence[str]) -> list[str]:
    """The prepared columns a closing group is made of: the partition's ``__order_<i>`` (and
    ``key`` with per-key closing), or ``key`` alone when the table has no partition column."""
    partition = [f"__order_{extra.index(options.partition_column)}"] if options.partition_column in extra else []
    return partition if options.window.closing == "partition" else [*partition, "key"]


def offset_column(order_cols: Sequence[str], group_cols: Sequence[str]) -> str | None:
    """The one order column that is not part of the group (the offset), or None when there is no
    single one or the group is not per key."""
    rest = [c for c in order_cols if c not in group_cols]
    return rest[0] if len(rest) == 1 and "key" in group_cols else None


def _check_columns(df: "DataFrame", options: WindowRecomputeOptions, needed: Sequence[str]) -> None:
    missing = [c for c in needed if c not in df.columns]
    if missing:
        hint = ""
        if any(c.startswith("_kafka_") for c in missing):
            hint = (" (write the lake with DataLakeSink(include_kafka_metadata=True), or name other columns "
                    "with --key-column/--timestamp-column/--order-by)")
        raise ValueError(f"table {options.table} has no column(s) {', '.join(missing)}{hint}; "
                         f"it has: {', '.join(df.columns)}")


def prepare_input(df: "DataFrame", options: WindowRecomputeOptions) -> "DataFrame":
    """Select and rename the columns the engines need: ``key``, ``ts``, ``value`` and
    ``__order_<i>`` for each of :func:`extra_columns`; rows with a NULL key are left out (as on
    the edge)."""
    from pyspark.sql import functions as F

    extra = extra_columns(options, df.columns)
    needed = [options.key_column, options.timestamp_column, options.value_column, *extra]
    _check_columns(df, options, needed)
    if options.where:
        df = df.where(options.where)
    ts_type = df.schema[options.timestamp_column].dataType.simpleString()
    # the names come from records or the command line: quoted, or a dot would read as a struct
    # field and a backtick break the name (lakehouse.identifiers)
    ts = F.col(quote_column(options.timestamp_column))
    if ts_type.startswith("timestamp"):
        ts = F.floor(F.unix_micros(ts.cast("timestamp") if "ntz" in ts_type else ts) / 1000)
    elif ts_type not in ("bigint", "int", "smallint", "tinyint"):
        raise TypeError(f"timestamp column {options.timestamp_column} must hold epoch milliseconds "
                        f"(integer) or timestamps, got {ts_type}")
    cols = [F.col(quote_column(options.key_column)).alias("key"), ts.cast("long").alias("ts"),
            F.col(quote_column(options.value_column)).alias("value")]
    cols += [F.col(quote_column(c)).alias(f"__order_{i}") for i, c in enumerate(extra)]
    return df.select(*cols).where(F.col("key").isNotNull())


def output_schema(data: "DataFrame", value_type: Any) -> Any:
    """The output's Spark schema: ``key`` (the source's type), ``window_start``, ``window_end``, ``value``."""
    from pyspark.sql import types as T

    return T.StructType([T.StructField("key", data.schema["key"].dataType),
                         T.StructField("window_start", T.LongType()),
                         T.StructField("window_end", T.LongType()), T.StructField("value", value_type)])


@dataclass
class PlanNote:
    """Which engine computed the rows, and its figures: read only after the rows were computed
    (they are observations of that job)."""

    engine: str  # native or python-engine
    observation: Any = None  # native: groups, replayed (sliding), unproven (proven plans), state floor figures
    reason: str = ""  # why the python-engine (a custom aggregation, forced)
    replay_observation: Any = None  # native sliding: the replayed groups, observed by the windows' operator

    def _metrics(self) -> dict[str, Any]:
        metrics = dict(self.observation.get) if self.observation is not None else {}
        if self.replay_observation is not None:
            metrics.update(self.replay_observation.get)
        return metrics

    def detail(self, groups: int | None = None) -> str:
        """What the report adds to the engine's name: the keys the edge's engines computed (of
        ``groups``, default the plan's own), or the reason for the python-engine."""
        replayed = self.replayed()
        if replayed:
            return (f"{replayed} of {self.groups() if groups is None else groups} keys through the edge's engines: "
                    "sliding records inside closed windows, near time 0 or NaN")
        return self.reason

    def _collected(self, spark: "SparkSession", metric: str, fields: Sequence[tuple[str, Any]]) -> "DataFrame | None":
        """The rows an observation collected (structs, or one column's values), typed by ``fields``
        (name, Spark type); None: none (and for plans that do not collect ``metric``)."""
        from pyspark.sql import types as T

        rows = self._metrics().get(metric) or []
        schema = T.StructType([T.StructField(name, dtype) for name, dtype in fields])
        values = [tuple(r) if isinstance(r, tuple) else (r,) for r in rows]  # a Row is a tuple
        return spark.createDataFrame(values, schema) if values else None

    def unproven_groups(self, spark: "SparkSession", data: "DataFrame", group_cols: Sequence[str]) -> "DataFrame | None":
        """The groups a proven plan could not prove (observed), their columns typed as in ``data``."""
        return self._collected(spark, "unproven_groups", [(c, data.schema[c].dataType) for c in group_cols])

    def replayed(self) -> int:
        """The sliding groups the edge's engines computed (observed; 0 for other plans)."""
        return int(self._metrics().get("replayed") or 0)

    def replayed_keys(self, spark: "SparkSession", key_type: Any) -> "DataFrame | None":
        """The keys of the sliding groups the edge's engines computed, one column ``key`` of ``key_type``."""
        return self._collected(spark, "replayed_keys", [("key", key_type)])

    def late(self) -> int | None:
        """The records dropped as late (observed by the exact native plans; None: not observed)."""
        late = self._metrics().get("late")
        return None if late is None else int(late)

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


def compute_windows(data: "DataFrame", grouping: "Grouping", value_type: Any, engine: str, observe: bool = True,
                    plain: "DataFrame | None" = None) -> tuple["DataFrame", PlanNote]:
    """The window rows of ``data`` (prepared, complete rows) by the exact plan on ``engine``, and
    the plan's note. The rows have the output's columns and ``__gh`` (the key's hash).

    ``observe``: the native plan observes what the full run's report and window state need (an
    increment skips it: two more frames for figures it never reads). ``plain``: the same rows as
    ``data`` without any observation (``DataFrame.observe``) on them, for the native sliding plan's
    second branch (the keys replayed by the engines): over Spark Connect an observation may appear
    only once in a plan, and a union of two branches of one observed frame holds it twice."""
    from pyspark.sql import Observation
    from pyspark.sql import functions as F

    spec, order_cols, group_cols = grouping
    schema = output_schema(data, value_type)
    if engine != "native":
        reason = native_unsupported_reason(spec) or "forced"
        rows = engine_windows(data, grouping, schema)
        return rows.withColumn("__gh", group_hash(["key"])), PlanNote("python-engine", reason=reason)
    note = PlanNote("native", Observation(f"windows_plan_{uuid.uuid4().hex}") if observe else None)
    if spec.kind != "sliding":
        rows = native_fixed_windows(data, grouping, note.observation)
        return rows.withColumn("value", F.col("value").cast(value_type)), note
    if note.observation is not None:
        note.replay_observation = Observation(f"windows_replayed_{uuid.uuid4().hex}")
    flagged = sliding_key_flags(data, grouping, note.observation, per_group=False)
    rows = (native_sliding_windows(flagged, grouping, note.replay_observation)
            .withColumn("value", F.col("value").cast(value_type)))
    if plain is None and note.observation is None:
        plain = data
    if plain is None:
        raise ValueError("the native sliding plan with observations needs the rows without them (plain)")
    rest = sliding_key_flags(plain, grouping).where(~F.col("__native")).select(*data.columns)
    replayed = engine_windows(rest, grouping, schema).withColumn("__gh", group_hash(["key"]))
    return rows.unionByName(replayed), note


def proven_windows(data: "DataFrame", grouping: "Grouping", value_type: Any) -> tuple["DataFrame", PlanNote]:
    """The proven plan's rows of the groups it proves (:mod:`lakehouse.windows.proven`) and its
    note, whose ``unproven_groups()`` (read after the rows are written) :func:`fallback_windows`
    computes."""
    from pyspark.sql import Observation
    from pyspark.sql import functions as F

    note = PlanNote("native", Observation(f"windows_plan_{uuid.uuid4().hex}"))
    proven = proven_sliding_windows if grouping.spec.kind == "sliding" else proven_fixed_windows
    rows = proven(data, grouping, note.observation)
    return rows.withColumn("value", F.col("value").cast(value_type)), note


def fallback_windows(plain: "DataFrame", grouping: "Grouping", value_type: Any,
                     groups: "DataFrame") -> tuple["DataFrame", PlanNote]:
    """The rows of ``groups`` (the group's columns: those a proven plan could not prove) by the
    exact plan, and its note (the sliding keys it replays): only their records are read past the
    scan (a broadcast semi join)."""
    from pyspark.sql import functions as F

    def subset() -> "DataFrame":
        return plain.join(F.broadcast(groups), on=list(grouping.group_cols), how="left_semi")

    return compute_windows(subset(), grouping, value_type, "native", plain=subset())


@dataclass
class WindowRun:
    """What every step of one run shares: the session, the options, the tables, the engine, the
    prepared columns' names and the output snapshot the run started from (its commit is valid
    only while ``main`` still points there: :mod:`lakehouse.windows.commit`)."""

    spark: "SparkSession"
    options: WindowRecomputeOptions
    say: Callable[[str], None]
    source: Any  # a lakehouse.tables table handle (Iceberg or Delta)
    target: Any
    engine: str  # native or python-engine
    group_cols: list[str]
    order_cols: list[str]
    fingerprint: str
    base_snapshot: int | None = None  # the output's main snapshot when the run read its bookmark
    output_refs: dict[str, int] = field(default_factory=dict)  # the output's branches and tags then
    late_records: int | None = None  # what the output's bookmark recorded, for this definition (None: unknown)

    @classmethod
    def open(cls, spark: "SparkSession", options: WindowRecomputeOptions, say: Callable[[str], None],
             source: Any, target: Any, source_columns: Sequence[str]) -> "WindowRun":
        """The run over ``source`` (its columns: ``source_columns``) into ``target``."""
        return cls(spark, options, say, source, target, choose_engine(options.window, options.engine),
                   group_columns(options, extra_columns(options, source_columns)),
                   [f"__order_{i}" for i in range(len(options.order_by))], definition_fingerprint(options))

    @property
    def spec(self) -> WindowSpec:
        return self.options.window

    @property
    def grouping(self) -> Grouping:
        return Grouping(self.spec, self.order_cols, self.group_cols)

    @property
    def complete(self) -> str:
        """:func:`complete_sql` of this run's columns."""
        return complete_sql(self.order_cols, self.group_cols)

    @property
    def uses_state(self) -> bool:
        """Whether increments read the per-group window state (:mod:`lakehouse.windows.state`), so
        a full run writes it: the native windows, whose increments add the windows of tail groups
        (sliding: of the groups on the closed form; the others' keys are recomputed). Otherwise an
        increment recomputes every changed key from the table."""
        return self.engine == "native" and self.target.table_format == "iceberg"

    def value_type(self, data: "DataFrame") -> Any:
        """The output's value type for prepared ``data``."""
        return result_type(data.schema["value"].dataType, self.spec.aggregation, self.spec.value_type)

    def prepare(self, df: "DataFrame") -> "DataFrame":
        return prepare_input(df, self.options)

    def source_at(self, snapshot_id: int | None) -> "DataFrame":
        """The source table as of ``snapshot_id`` (its current state when None)."""
        if snapshot_id is None:
            return self.spark.table(self.source.sql_name)
        return self.spark.sql(f"SELECT * FROM {self.source.sql_name} VERSION AS OF {int(snapshot_id)}")
