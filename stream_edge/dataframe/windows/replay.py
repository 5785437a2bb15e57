"""Batch replay of the edge's windows: the exact rows ``final()`` (or ``current()``) emits.

Pure Python for the Spark recompute (and any batch check): feed one source partition's records in
offset order — the order the edge reads them — and get the window results the edge produced.
Keys are independent, so records may also be fed key by key as long as each key's records keep
their offset order.

Example::

    >>> rows = replay([(b"s1", 1000, 2.0), (b"s1", 1500, 4.0), (b"s1", 2100, 1.0)],
    ...               kind="tumbling", duration_ms=1000, aggregation="mean")
    >>> rows
    [{'key': b's1', 'start': 1000, 'end': 2000, 'value': 3.0}]
"""

from __future__ import annotations

from typing import Any, Dict, Iterable, List, Optional, Tuple, Union

from .aggregations import Aggregation
from .fixed_engine import FixedWindowEngine
from .rules import aggregation_of
from .sliding_engine import SlidingWindowEngine

__all__ = ("replay", "make_engine")


def make_engine(kind: str, duration_ms: int, grace_ms: int = 0, step_ms: Optional[int] = None,
                aggregation: Union[str, Aggregation] = "mean") -> Any:
    """The engine of a ``tumbling``, ``hopping`` or ``sliding`` window with ``aggregation``."""
    agg = aggregation_of(aggregation) if isinstance(aggregation, str) else aggregation
    if kind == "tumbling":
        return FixedWindowEngine(duration_ms, grace_ms, None, agg)
    if kind == "hopping":
        return FixedWindowEngine(duration_ms, grace_ms, step_ms, agg)
    if kind == "sliding":
        return SlidingWindowEngine(duration_ms, grace_ms, agg)
    raise ValueError(f"unknown window kind {kind!r}: tumbling, hopping or sliding")


def replay(records: Iterable[Tuple[Any, int, Any]], kind: str, duration_ms: int, grace_ms: int = 0,
           step_ms: Optional[int] = None, aggregation: Union[str, Aggregation] = "mean",
           mode: str = "final", closing_strategy: str = "key") -> List[Dict[str, Any]]:
    """Window results for ``(key, timestamp_ms, value)`` records, in emission order.

    Records with a ``None`` key are ignored, as on the edge. Each row is
    ``{"key", "start", "end", "value"}``; the edge's record timestamp is ``start``.
    ``closing_strategy="partition"`` (tumbling/hopping) needs one partition's records in offset
    order: the partition's event time closes every key's windows.
    """
    engine = make_engine(kind, duration_ms, grace_ms, step_ms, aggregation)
    if mode not in ("final", "current"):
        raise ValueError("mode must be 'final' or 'current'")
    if closing_strategy == "partition":
        if kind == "sliding":
            raise ValueError("sliding windows close per key only")
        return _replay_partition(records, engine, mode == "final")
    if closing_strategy != "key":
        raise ValueError("closing_strategy must be 'key' or 'partition'")
    process = engine.process_final if mode == "final" else engine.process_current
    states: Dict[Any, Any] = {}
    rows: List[Dict[str, Any]] = []
    for key, timestamp, value in records:
        if key is None:
            continue
        ks = states.get(key)
        if ks is None:
            ks = states[key] = engine.new_key_state()
        for start, end, result in process(ks, value, timestamp):
            rows.append({"key": key, "start": start, "end": end, "value": result})
    return rows


def _replay_partition(records: Iterable[Tuple[Any, int, Any]], engine: Any, final: bool) -> List[Dict[str, Any]]:
    states: Dict[Any, Any] = {}

    def key_state(key: Any) -> Any:
        ks = states.get(key)
        if ks is None:
            ks = states[key] = engine.new_key_state()
        return ks

    pstate = engine.new_partition_state([])
    rows: List[Dict[str, Any]] = []
    for key, timestamp, value in records:
        if key is None:
            continue
        for owner, start, end, result in engine.process_partition(pstate, key, key_state(key), value, timestamp,
                                                                   final, key_state):
            rows.append({"key": owner, "start": start, "end": end, "value": result})
    return rows

