"""``StreamingDataFrame.join_interval``: records of both sides join the other side's records of the
same key within a time interval (Quix Streams 3.28 semantics).

Both sides are stored (a windowed store per side, one sorted list per key, duplicates kept). A
left record at ``t`` emits ``on_merge(left, right)`` for every right record in
``[t - backward_ms, t]``; a right record at ``t`` emits ``on_merge(left, right)`` for every left
record in ``[t - forward_ms, t]`` (each side looks back: with records processed in timestamp
order, every pair with ``left - backward_ms <= right <= left + forward_ms`` is emitted once).
Matches come oldest first, with the current record's key, timestamp and headers. Without a match,
``how`` decides: "left"/"outer" emit an unmatched left record as it is, "right"/"outer" an
unmatched right record. Adding a record expires the key's records older than
``newest - grace_ms`` committed by an earlier checkpoint.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any, Literal, Optional, Tuple, Union

from stream_edge.dataframe.seams import Dataframe

from .base import joined_dataframe, stored_copy
from .store import IntervalCodec
from .utils import Merger, OnOverlap, check_how, check_joinable, get_merger, register_join_store, to_ms

__all__ = ("IntervalJoin", "IntervalJoinHow")

IntervalJoinHow = Literal["inner", "left", "right", "outer"]
_EMPTY: Tuple = ()


class IntervalJoin:
    """A configured interval join; :meth:`join` wires it between two dataframes."""

    def __init__(self, how: IntervalJoinHow = "inner", on_merge: Union[OnOverlap, Merger] = "raise",
                 grace_ms: Union[int, timedelta] = timedelta(days=7), store_name: Optional[str] = None,
                 backward_ms: Union[int, timedelta] = 0, forward_ms: Union[int, timedelta] = 0) -> None:
        check_how(how, ("inner", "left", "right", "outer"))
        self._how = how
        self._merger = get_merger(on_merge)
        self._grace_ms = to_ms(grace_ms)
        self._backward_ms = to_ms(backward_ms)
        self._forward_ms = to_ms(forward_ms)
        if self._backward_ms > self._grace_ms:
            raise ValueError("The backward_ms must not be greater than the grace_ms to avoid losing data.")
        self._store_name = store_name or "join"

    def join(self, left: Dataframe, right: Dataframe) -> Dataframe:
        """Return the dataframe of joined records of both sides."""
        check_joinable(left, right)
        left_store = register_join_store(left, self._store_name)
        right_store = register_join_store(right, self._store_name)
        codec = IntervalCodec()
        left_tx = left.current_transaction(left_store)
        right_tx = right.current_transaction(right_store)
        merger, grace = self._merger, self._grace_ms
        backward, forward = self._backward_ms, self._forward_ms
        keep_left, keep_right = self._how in ("left", "outer"), self._how in ("right", "outer")

        def join_left(value: Any, key: Any, timestamp: int, headers: Any) -> Any:
            left_tx().key_state(key, codec).add(timestamp, stored_copy(value), grace)
            ks = right_tx().peek_key_state(key, codec)
            matches = ks.between(timestamp - backward, timestamp) if ks is not None else None
            if matches:
                return [(merger(value, match), key, timestamp, headers) for match in matches]
            return ((merger(value, None), key, timestamp, headers),) if keep_left else _EMPTY

        def join_right(value: Any, key: Any, timestamp: int, headers: Any) -> Any:
            right_tx().key_state(key, codec).add(timestamp, stored_copy(value), grace)
            ks = left_tx().peek_key_state(key, codec)
            matches = ks.between(timestamp - forward, timestamp) if ks is not None else None
            if matches:
                return [(merger(match, value), key, timestamp, headers) for match in matches]
            return ((merger(None, value), key, timestamp, headers),) if keep_right else _EMPTY

        return joined_dataframe(left, right, join_left, join_right)
