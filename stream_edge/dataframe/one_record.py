"""``StreamingDataFrame.test()``: one record through a pipeline without Kafka.

The processing context's cursor visits a stand-in message (:class:`StandInMessage`) so ``message_context()``,
state and windows behave as while processing partition 0 of the topic (or the ``ctx`` given).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, List, Optional

if TYPE_CHECKING:  # pragma: no cover
    from stream_edge.models.topics import Topic

    from .registry import DataframeRegistry
    from .seams import DataframeSeams

__all__ = ("run_one", "StandInMessage")


class StandInMessage:
    """Stands in for a Kafka message during :meth:`StreamingDataFrame.test`.

    ``context`` is the MessageContext given to ``test(ctx=...)``: ``message_context()`` returns
    it; without one, ``message_context()`` raises, as in Quix Streams (state and windows still
    see partition 0 of the topic).
    """

    __slots__ = ("_topic", "_partition", "_offset", "_key", "context")
    is_test_message = True

    def __init__(self, topic: str, partition: int, offset: int, key: Any, context: Any = None) -> None:
        self._topic, self._partition, self._offset, self._key = topic, partition, offset, key
        self.context = context

    def topic(self): return self._topic
    def partition(self): return self._partition
    def offset(self): return self._offset
    def key(self): return self._key
    def value(self): return None
    def leader_epoch(self): return None


def run_one(sdf: "DataframeSeams", registry: Optional["DataframeRegistry"], value: Any, key: Any, timestamp: int,
            headers: Optional[Any], ctx: Any, topic: "Topic") -> List[Any]:
    """Run one record through ``sdf``'s pipeline (every topic's of ``registry``, its application's);
    return ``[(value, key, timestamp, headers), ...]``."""
    results: List[Any] = []
    executors = registry.compose_all(sink=lambda v, k, t, h: results.append((v, k, t, h))) if registry else {}
    if topic.name not in executors:
        executors[topic.name] = sdf.stream.compose(sink=lambda v, k, t, h: results.append((v, k, t, h)))[
            sdf.stream.root()]
    cursor = sdf.processing_context.cursor
    if ctx is not None:
        stand_in = StandInMessage(ctx.topic, ctx.partition, ctx.offset, key, context=ctx)
    else:
        stand_in = StandInMessage(topic.name, 0, 0, key)
    with cursor.visiting(stand_in):
        executors[topic.name](value, key, timestamp, headers)
    return results
