"""What both time joins share: the joined dataframe and the store lookups of the current message.

The joined StreamingDataFrame gets a fresh stream root that is grafted as the child of one node of
the left tree and one node of the right tree: each topic's tree is composed into its own generated
executor, and both executors continue into the same operations added to the joined dataframe
(composed when the application runs, so operations added after the join are included).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable, Dict, Tuple

from stream_edge.core.stream import Stream
from stream_edge.state.serialization import default_dumps, default_loads


if TYPE_CHECKING:  # pragma: no cover
    from stream_edge.dataframe import StreamingDataFrame

__all__ = ("joined_dataframe", "partition_transactions", "stored_copy")

JoinOp = Callable[[Any, Any, int, Any], Any]


def stored_copy(value: Any) -> Any:
    """The value as the store keeps it (a JSON round trip: later mutations do not reach the store)."""
    return default_loads(default_dumps(value))


def partition_transactions(sdf: "StreamingDataFrame", store_name: str) -> Callable[[], Any]:
    """A function returning the transaction of ``store_name`` on ``sdf``'s stream for the current
    message's partition (joined topics are co-partitioned: same partition number)."""
    ctx = sdf.processing_context
    manager = ctx.state_manager
    live: Dict[Tuple[str, int], Any] = manager.store_transactions(store_name)
    topic = sdf.stream_id

    def transaction() -> Any:
        partition = ctx.current_message.partition()
        tx = live.get((topic, partition))
        if tx is None:  # raises the explanatory error (store not registered / partition not assigned)
            tx = manager.get_transaction(topic, partition, store_name)
        return tx
    return transaction


def joined_dataframe(left: "StreamingDataFrame", right: "StreamingDataFrame",
                     left_op: JoinOp, right_op: JoinOp) -> "StreamingDataFrame":
    """Add the two expanding join operations and return the dataframe both feed."""
    from stream_edge.dataframe.dataframe import StreamingDataFrame

    left_node = left.stream.add_transform(left_op, expand=True)
    right_node = right.stream.add_transform(right_op, expand=True)
    out = Stream()
    left_node.children.append(out)
    right_node.children.append(out)
    consumer = getattr(left.processing_context, "consumer", None)
    if consumer is not None:  # joins are deterministic only in timestamp order (as Quix processes them)
        consumer.order_by_timestamp([t.name for t in (*left.topics, *right.topics)])
    return StreamingDataFrame(*left.topics, *right.topics, topic_manager=left._topic_manager,
                              registry=left.registry, processing_context=left.processing_context, stream=out,
                              stream_id=left.stream_id)
