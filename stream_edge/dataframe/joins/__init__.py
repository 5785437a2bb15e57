"""Joins of StreamingDataFrames (Quix Streams 3.28 API): as-of, interval and lookup joins.

``sdf.join_asof(right, ...)``, ``sdf.join_interval(right, ...)`` and ``sdf.join_lookup(lookup,
fields, on=...)`` are defined on :class:`~stream_edge.dataframe.StreamingDataFrame` and delegate
here; lookups live in :mod:`stream_edge.dataframe.joins.lookups`. See ``docs/joins.md``.
"""

from __future__ import annotations

from .asof import JoinAsOf
from .interval import IntervalJoin
from .lookups.base import BaseField, BaseLookup
from .lookups.join import LookupJoin

__all__ = ("JoinAsOf", "IntervalJoin", "LookupJoin", "BaseLookup", "BaseField")
