"""FixedTimeWindow: tumbling and hopping windows (``[start, end)``) on a StreamingDataFrame.

``before_update`` / ``after_update`` (Quix Streams 3.28's early expiration) are called as
``callback(aggregated, value, key, timestamp, headers) -> bool`` for each window of a message;
``aggregated`` is what Quix passes: the aggregator's state (its ``initialize()`` value for a new
window; stored states read back as JSON, so tuples become lists, before the update), or
``{"<name>/<state suffix>": state, ...}`` for ``agg(...)`` (aggregators only).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable, Optional, Tuple

from stream_edge.state.serialization import default_dumps, default_loads

from .aggregations import MISSING, Aggregation, BaseAggregator, BaseCollector, MultiAggregation
from .base import Window
from .fixed_engine import EarlyExpiringWindowEngine, FixedWindowEngine
from .rules import CLOSING

if TYPE_CHECKING:  # pragma: no cover
    from stream_edge.dataframe import StreamingDataFrame

__all__ = ("FixedTimeWindow", "TimeWindow")

#: ``callback(aggregated, value, key, timestamp, headers) -> bool``
UpdateCallback = Callable[[Any, Any, Any, int, Any], Any]


def _stored_view(aggregation: Aggregation, stored: Any, read_back: bool) -> Any:
    """One aggregation's state as Quix shows it to the callbacks."""
    if isinstance(aggregation, BaseCollector):
        return [] if stored is MISSING else [item for _, item in sorted(stored, key=lambda pair: pair[0])]
    if stored is MISSING:
        return aggregation.initialize() if isinstance(aggregation, BaseAggregator) else None
    return default_loads(default_dumps(stored)) if read_back else stored


def _aggregated_view(aggregation: Aggregation) -> Callable[[Any, bool], Any]:
    """``view(stored, read_back) -> aggregated`` for the callbacks of ``aggregation``."""
    if not isinstance(aggregation, MultiAggregation):
        return lambda stored, read_back: _stored_view(aggregation, stored, read_back)
    ops = aggregation.operations
    aggregators = [(i, f"{label}/{op.state_suffix}", op) for i, (label, op) in enumerate(ops)
                   if isinstance(op, BaseAggregator)]
    if not aggregators:  # collectors only: the first one's items
        return lambda stored, read_back: _stored_view(ops[0][1], MISSING if stored is MISSING else stored[0], read_back)

    def view(stored: Any, read_back: bool) -> Any:
        return {name: _stored_view(op, MISSING if stored is MISSING else stored[i], read_back)
                for i, name, op in aggregators}
    return view


class FixedTimeWindow(Window):
    """A tumbling (``step_ms=None``) or hopping window with one aggregation."""

    closing_strategies = CLOSING

    def __init__(self, duration_ms: int, grace_ms: int, name: str, dataframe: "StreamingDataFrame",
                 aggregation: Aggregation, step_ms: Optional[int] = None,
                 on_late: Optional[Callable[..., Any]] = None, before_update: Optional[UpdateCallback] = None,
                 after_update: Optional[UpdateCallback] = None) -> None:
        self._message: Tuple[Any, Any] = (None, None)  # (key, headers) of the message being processed
        engine: FixedWindowEngine
        if before_update is None and after_update is None:
            engine = FixedWindowEngine(duration_ms, grace_ms, step_ms, aggregation)
        else:
            for label, callback in (("before_update", before_update), ("after_update", after_update)):
                if callback is not None and not callable(callback):
                    raise TypeError(f"{label} must be a callable, got {callback!r}")
            engine = EarlyExpiringWindowEngine(duration_ms, grace_ms, step_ms, aggregation,
                                               before_update=self._engine_callback(before_update, aggregation, True),
                                               after_update=self._engine_callback(after_update, aggregation, False))
        self._early_expiration = isinstance(engine, EarlyExpiringWindowEngine)
        super().__init__(name, dataframe, engine, on_late)

    def _engine_callback(self, callback: Optional[UpdateCallback], aggregation: Aggregation,
                         read_back: bool) -> Optional[Callable[[Any, Any, int], bool]]:
        """The engine's ``(stored, value, timestamp)`` callback calling the user's with Quix's arguments."""
        if callback is None:
            return None
        view = _aggregated_view(aggregation)

        def engine_callback(stored: Any, value: Any, timestamp: int) -> bool:
            key, headers = self._message
            return bool(callback(view(stored, read_back), value, key, timestamp, headers))
        return engine_callback

    def _apply(self, final: bool, closing_strategy: str = "key") -> "StreamingDataFrame":
        if self._early_expiration and closing_strategy != "key":
            raise ValueError("before_update/after_update work with the default closing_strategy='key' only, "
                             f"got {closing_strategy!r}")
        return super()._apply(final, closing_strategy)

    def _with_late_value(self, op: Callable[[Any, Any, int, Any], Any]) -> Callable[[Any, Any, int, Any], Any]:
        op = super()._with_late_value(op)
        if not self._early_expiration:
            return op

        def remembering_op(value: Any, key: Any, timestamp: int, headers: Any) -> Any:
            self._message = (key, headers)
            return op(value, key, timestamp, headers)
        return remembering_op


TimeWindow = FixedTimeWindow
