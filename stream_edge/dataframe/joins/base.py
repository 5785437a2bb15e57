"""What both time joins share: the joined dataframe and the store lookups of the current message.

The joined StreamingDataFrame's node merges one node of the left tree and one of the right tree
(``Stream.merge``: one node, two parents): each topic's tree is composed into its own generated
executor, and both executors continue into the same operations added to the joined dataframe
(composed when the application runs, so operations added after the join are included).
"""

from __future__ import annotations

from typing import Any, Callable

from stream_edge.dataframe.concat import concat_dataframes
from stream_edge.dataframe.seams import Dataframe
from stream_edge.state.serialization import default_dumps, default_loads

__all__ = ("joined_dataframe", "stored_copy")

JoinOp = Callable[[Any, Any, int, Any], Any]


def stored_copy(value: Any) -> Any:
    """The value as the store keeps it (a JSON round trip: later mutations do not reach the store)."""
    return default_loads(default_dumps(value))


def joined_dataframe(left: Dataframe, right: Dataframe, left_op: JoinOp, right_op: JoinOp) -> Dataframe:
    """Add the two expanding join operations and return the dataframe both feed: their ``concat``
    (as in Quix Streams: stream id ``<left topic>--<right topic>``, records in timestamp order,
    which joins need to be deterministic)."""
    return concat_dataframes(left.add_expanding_op(left_op), right.add_expanding_op(right_op))
