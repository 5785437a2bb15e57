"""``StreamingDataFrame.join_asof``: each left record joins the latest right record of its key
whose timestamp is ``<=`` the left timestamp (Quix Streams 3.28 semantics).

Right records go into a windowed store of the right stream (one sorted list per key; a new record
expires the key's records older than ``newest - grace_ms``) and emit nothing. Left records look
the store up and emit ``on_merge(left, right)`` with the left key, timestamp and headers; without a
match (or with an empty right value) ``how="inner"`` drops the record and ``how="left"`` emits it
merged with ``None``.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any, Literal, Optional, Tuple, Union

from stream_edge.dataframe.seams import Dataframe

from .base import joined_dataframe, stored_copy
from .store import AsOfCodec
from .utils import Merger, OnOverlap, check_how, check_joinable, get_merger, register_join_store, to_ms

__all__ = ("JoinAsOf", "AsOfJoinHow")

AsOfJoinHow = Literal["inner", "left"]
_EMPTY: Tuple = ()


class JoinAsOf:
    """A configured as-of join; :meth:`join` wires it between two dataframes."""

    def __init__(self, how: AsOfJoinHow = "inner", on_merge: Union[OnOverlap, Merger] = "raise",
                 grace_ms: Union[int, timedelta] = timedelta(days=7), store_name: Optional[str] = None) -> None:
        check_how(how, ("inner", "left"))
        self._how = how
        self._merger = get_merger(on_merge)
        self._grace_ms = to_ms(grace_ms)
        self._store_name = store_name or "join"

    def join(self, left: Dataframe, right: Dataframe) -> Dataframe:
        """Return the dataframe of joined left records."""
        check_joinable(left, right)
        codec = AsOfCodec()
        right_tx = right.current_transaction(register_join_store(right, self._store_name))
        merger, grace, inner = self._merger, self._grace_ms, self._how == "inner"

        def store_right(value: Any, key: Any, timestamp: int, headers: Any) -> Tuple:
            right_tx().key_state(key, codec).add(timestamp, stored_copy(value), grace)
            return _EMPTY

        def join_left(value: Any, key: Any, timestamp: int, headers: Any) -> Any:
            ks = right_tx().peek_key_state(key, codec)
            match = None if ks is None else ks.latest(timestamp)
            if not match:
                if inner:
                    return _EMPTY
                match = None
            return ((merger(value, match), key, timestamp, headers),)

        return joined_dataframe(left, right, join_left, store_right)
