"""The records an increment's tail groups need, in one shuffle and no job of its own.

An incremental run of tumbling or hopping windows (:mod:`lakehouse.windows.incremental`) adds, for
each closing group whose new records all follow its old ones in offset order (a *tail* group),
the windows that close now. What it needs per group, the old records' ``latest`` and ``last``
(from the window state, :mod:`lakehouse.windows.state`) against the new records' first, comes
from window aggregates over the whole group after one exchange of the state's open records and
the new records by group; the tail test and the closed floor are then column expressions,
evaluated in the same sort as the windows' own offset-order frames. The run learns the new rows,
the groups with new records and the reordered ones from an observation of the job that computes
the windows; a reordered group's rows are left out, and the run replaces its keys.

Written as SQL text: every column expression built in Python is a round trip to the JVM (or a
Spark Connect message), ~600 of them for this plan; a ``selectExpr`` is one.

Example::

    records, observation = tail_records(state, arrived, run.complete, run.grouping)
"""

from __future__ import annotations

import uuid
from typing import TYPE_CHECKING, Any, Sequence

from lakehouse.windows.definition import Grouping, quote_column
from stream_edge.dataframe.windows.rules import group_hash_sql

if TYPE_CHECKING:  # pragma: no cover
    from pyspark.sql import DataFrame

__all__ = ("tail_records",)


def _state_rows(state: "DataFrame", columns: Sequence[str], group_cols: Sequence[str]) -> "DataFrame":
    """The state's open records as prepared rows, each with its group's ``__old_latest`` and
    ``__old_last``; a group without open records keeps one row with no record (``__record``
    false), so its figures still reach the group. ``__old_replayed``: the sliding state's ``replayed``."""
    replayed = "coalesce(replayed, false)" if "replayed" in state.columns else "false"
    exploded = state.selectExpr(*map(quote_column, group_cols), "latest", "last", f"{replayed} AS __old_replayed",
                                "explode_outer(records) AS __r")
    fields = [quote_column(c) if c in group_cols else f"__r.{quote_column(c)} AS {quote_column(c)}" for c in columns]
    return exploded.selectExpr(*fields, "latest AS __old_latest", "last AS __old_last", "__old_replayed",
                               "false AS __new", "__r IS NOT NULL AS __record")


def _new_rows(arrived: "DataFrame", state: "DataFrame", complete: str) -> "DataFrame":
    """Every new row (incomplete ones too: they are counted, not windowed), typed like the state's."""
    types = {f.name: f.dataType.simpleString() for f in state.schema.fields}
    return arrived.selectExpr(*map(quote_column, arrived.columns), f"CAST(NULL AS {types['latest']}) AS __old_latest",
                              f"CAST(NULL AS {types['last']}) AS __old_last", "false AS __old_replayed",
                              "true AS __new",
                              f"({complete}) AS __record")


def tail_records(state: "DataFrame", arrived: "DataFrame", complete: str, grouping: Grouping,
                 keep_new: bool = False) -> tuple["DataFrame", Any]:
    """The records the windows closing now are made of (the prepared columns, ``__gh`` and
    ``__closed_floor``): those of tail groups with new complete records (``complete``: the SQL
    condition of a complete row), newer than the group's closed floor ``__old_latest - bound``
    (the spec's closing lag); and the observation (``pyspark.sql.Observation``) that the action
    computing them fills: ``new_rows`` (every row read, as ``count()`` would), ``changed`` (groups
    with new complete records) and ``reordered`` (of those, the groups whose new records sit
    between old ones, or that the sliding state marks ``replayed``; their records are left out).

    The per-group figures are frames over the whole group, partitioned and ordered as the
    windows' offset-order frames (:func:`lakehouse.windows.native.fixed_event_times`), so the plan
    keeps one exchange and one sort. ``keep_new``: the records keep ``__new`` (false for the
    state's old records), which the sliding windows' flags need."""
    from pyspark.sql import Observation
    from pyspark.sql import functions as F

    spec, order_cols, group_cols = grouping
    bound = spec.closing_lag_ms
    columns = list(arrived.columns)
    rows = _state_rows(state, columns, group_cols).unionByName(_new_rows(arrived, state, complete))
    groups = ", ".join(map(quote_column, group_cols))
    rows = rows.selectExpr("*", f"{group_hash_sql(list(map(quote_column, group_cols)))} AS __gh")
    ordered = f"PARTITION BY __gh, {groups} ORDER BY {', '.join(map(quote_column, order_cols))}"
    whole = f"({ordered} ROWS BETWEEN UNBOUNDED PRECEDING AND UNBOUNDED FOLLOWING)"
    with_group = rows.selectExpr(
        "*", f"max(__old_latest) OVER {whole} AS __latest", f"max(__old_last) OVER {whole} AS __last",
        f"min(CASE WHEN __new AND __record THEN struct({', '.join(map(quote_column, order_cols))}) END) OVER {whole}"
        " AS __new_first", f"max(__old_replayed) OVER {whole} AS __replayed",
        f"row_number() OVER ({ordered}) = 1 AS __group_row")
    has_new = "__new_first IS NOT NULL"
    tail = "((__last IS NULL OR __new_first > __last) AND NOT __replayed)"
    observation = Observation(f"windows_tail_{uuid.uuid4().hex}")
    observed = with_group.observe(
        observation, F.expr("count(CASE WHEN __new THEN 1 END) AS new_rows"),
        F.expr(f"count(CASE WHEN __group_row AND {has_new} THEN 1 END) AS changed"),
        F.expr(f"count(CASE WHEN __group_row AND {has_new} AND NOT {tail} THEN 1 END) AS reordered"))
    kept = observed.where(f"__record AND {has_new} AND {tail} AND (__latest IS NULL OR ts > __latest - {int(bound)})")
    floor = f"__latest - {int(bound)} AS __closed_floor"
    return kept.selectExpr(*map(quote_column, columns), "__gh", floor, *(["__new"] if keep_new else [])), observation
