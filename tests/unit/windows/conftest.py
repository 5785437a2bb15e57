"""Drivers shared by the window tests: run a pure engine over ``(key, ts, value)`` events."""

from __future__ import annotations

from typing import Any, Dict, List, Tuple

from stream_edge.dataframe.windows.fixed_engine import FixedWindowEngine
from stream_edge.dataframe.windows.sliding_engine import SlidingWindowEngine

Event = Tuple[Any, int, Any]


def run_engine(engine: Any, events: List[Event], mode: str) -> List[List[Tuple[Any, int, int, Any]]]:
    """Per event, the ``(key, start, end, value)`` results the engine emits."""
    states: Dict[Any, Any] = {}
    process = engine.process_final if mode == "final" else engine.process_current
    out = []
    for key, ts, value in events:
        ks = states.get(key)
        if ks is None:
            ks = states[key] = engine.new_key_state()
        out.append([(key, start, end, result) for start, end, result in process(ks, value, ts)])
    return out


def tumbling(duration: int, grace: int, aggregation: Any) -> FixedWindowEngine:
    return FixedWindowEngine(duration, grace, None, aggregation)


def hopping(duration: int, step: int, grace: int, aggregation: Any) -> FixedWindowEngine:
    return FixedWindowEngine(duration, grace, step, aggregation)


def sliding(duration: int, grace: int, aggregation: Any) -> SlidingWindowEngine:
    return SlidingWindowEngine(duration, grace, aggregation)
