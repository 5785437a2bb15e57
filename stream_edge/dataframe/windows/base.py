"""The window operation: one expanding op per window, added to the StreamingDataFrame.

The op looks up the key's live window state in the windowed store of the current partition
(through the store's ``StoreRef``),
runs the pure engine and turns closed (``final()``) or updated (``current()``) windows into
records ``({"start", "end", "value"}, key, start, None)``.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any, Callable, Deque, List, Optional, Tuple

from .aggregations import MultiAggregation
from .rules import window_ranges

if TYPE_CHECKING:  # pragma: no cover
    from stream_edge.dataframe import StreamingDataFrame

__all__ = ("Window", "get_window_ranges")

logger = logging.getLogger("stream_edge.windows")

_EMPTY: Tuple = ()


def get_window_ranges(timestamp_ms: int, duration_ms: int, step_ms: Optional[int] = None) -> Deque[Tuple[int, int]]:
    """The ``(start, end)`` windows holding ``timestamp_ms``, oldest first (as Quix Streams 3.28.1
    returns them; windows with a negative start are left out)."""
    from collections import deque

    return deque(reversed(window_ranges(timestamp_ms, duration_ms, step_ms)))


class Window:
    """A configured window: ``final()`` or ``current()`` returns the new StreamingDataFrame."""

    def __init__(self, name: str, dataframe: "StreamingDataFrame", engine: Any,
                 on_late: Optional[Callable[..., Any]] = None) -> None:
        if not name:
            raise ValueError("Window name must not be empty")
        self._name = name
        # on_late(value, key, timestamp_ms, late_by_ms, start, end, store_name, topic, partition,
        # offset) -> bool: True logs the late message (the default without a callback)
        self._on_late_callback = on_late
        self._late_value: Tuple[Any, Any] = (None, None)
        self._dataframe = dataframe
        self._engine = engine
        engine.on_late = self._on_late
        # agg(name=...) results come first, then start/end (as in Quix); the shortcuts emit "value"
        self._spread = isinstance(engine.aggregation, MultiAggregation)

    @property
    def name(self) -> str:
        return self._name

    def _on_late(self, timestamp: int, start: int, end: int, late_by_ms: int) -> None:
        ctx = getattr(self._dataframe, "processing_context", None)
        msg = None if ctx is None else ctx.cursor.message
        callback = self._on_late_callback
        if callback is not None:
            value, key = self._late_value
            coordinates = (None, None, None) if msg is None else (msg.topic(), msg.partition(), msg.offset())
            if not callback(value, key, timestamp, late_by_ms, start, end, self._name, *coordinates):
                return
        where = "" if msg is None else f" partition='{msg.topic()}[{msg.partition()}]' offset='{msg.offset()}'"
        logger.warning("Skipping window processing for the closed window timestamp_ms=%d window=(%d, %d) "
                       "late_by_ms=%d store_name='%s'%s", timestamp, start, end, late_by_ms, self._name, where)

    #: closing strategies this window supports (see :meth:`final`)
    closing_strategies: Tuple[str, ...] = ("key",)

    def _apply(self, final: bool, closing_strategy: str = "key") -> "StreamingDataFrame":
        if closing_strategy not in self.closing_strategies:
            raise ValueError(f"closing_strategy must be one of {self.closing_strategies} for this window, "
                             f"got {closing_strategy!r}")
        dataframe = self._dataframe
        cursor = dataframe.processing_context.cursor  # the loop moves it; read per message
        transaction = dataframe.register_store(store_name=self._name, windowed=True).transaction
        engine = self._engine
        process = engine.process_final if final else engine.process_current
        spread = self._spread

        def skip_none_key(msg: Any) -> Tuple:
            logger.warning("Skipping window processing for a message because the key is None, "
                           "partition='%s[%s]' offset='%s'", msg.topic() if msg else None,
                           msg.partition() if msg else None, msg.offset() if msg else None)
            return _EMPTY

        if closing_strategy == "partition":
            from stream_edge.state.serialization import message_key_bytes

            def partition_window_op(value: Any, key: Any, timestamp: int, headers: Any) -> Any:
                msg = cursor.message
                if key is None:
                    return skip_none_key(msg)
                tx = transaction(msg.partition())
                raw_key = message_key_bytes(key)
                rows = engine.process_partition(tx.partition_state(engine), raw_key, tx.key_state(raw_key, engine),
                                                value, timestamp, final, lambda owner: tx.key_state(owner, engine))
                if not rows:
                    return _EMPTY
                if spread:
                    return [({**result, "start": start, "end": end}, owner, start, None)
                            for owner, start, end, result in rows]
                return [({"start": start, "end": end, "value": result}, owner, start, None)
                        for owner, start, end, result in rows]

            return dataframe.add_expanding_op(self._with_late_value(partition_window_op))

        def window_op(value: Any, key: Any, timestamp: int, headers: Any) -> Any:
            msg = cursor.message
            if key is None:
                return skip_none_key(msg)
            results = process(transaction(msg.partition()).key_state(key, engine), value, timestamp)
            if not results:
                return _EMPTY
            if spread:
                return [({**result, "start": start, "end": end}, key, start, None) for start, end, result in results]
            return [({"start": start, "end": end, "value": result}, key, start, None)
                    for start, end, result in results]

        return dataframe.add_expanding_op(self._with_late_value(window_op))

    def _with_late_value(self, op: Callable[[Any, Any, int, Any], Any]) -> Callable[[Any, Any, int, Any], Any]:
        """With an ``on_late`` callback, keep the message's value and key for it (else: ``op``)."""
        if self._on_late_callback is None:
            return op

        def remembering_op(value: Any, key: Any, timestamp: int, headers: Any) -> Any:
            self._late_value = (value, key)
            return op(value, key, timestamp, headers)
        return remembering_op

    def final(self, closing_strategy: str = "key") -> "StreamingDataFrame":
        """Emit each window once, when it closes: the key's event time passes ``end + grace``.

        Results are ``{"start": ..., "end": ..., "value": ...}`` with the window start as the
        timestamp. With ``closing_strategy="key"`` (the default, as in Quix Streams) event time is
        tracked per message key: a key that goes quiet keeps its last window open until its next
        message. With ``"partition"`` (tumbling and hopping windows) the partition's largest
        timestamp closes the windows of every key and decides lateness.

        Example: ``sdf = sdf.tumbling_window(timedelta(seconds=1)).mean().final()``
        """
        return self._apply(final=True, closing_strategy=closing_strategy)

    def current(self, closing_strategy: str = "key") -> "StreamingDataFrame":
        """Emit every window a message updated, as it is updated (before it closes).

        Example: ``sdf = sdf.hopping_window(60_000, 10_000).count().current()``
        """
        aggregation = self._engine.aggregation
        if aggregation.collects or getattr(aggregation, "has_collectors", False):
            from stream_edge.dataframe.exceptions import InvalidOperation

            raise InvalidOperation("BaseCollectors are not supported by `current` windows")
        return self._apply(final=False, closing_strategy=closing_strategy)


#: window results as built by the op, for type hints
WindowRecords = List[Tuple[dict, Any, int, None]]
