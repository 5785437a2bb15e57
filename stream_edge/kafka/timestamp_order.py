"""TimestampOrder: timestamp order across joined topics, what Quix Streams 3.28's partition buffers do for joins.

A join is only deterministic when the records of its topics are processed in event-time order:
for each partition number, the consumer hands out the buffered message with the smallest
timestamp among the joined topics' partitions (the left topic first on a tie), and holds a
partition's messages back while another joined partition with that number may still have older
ones (it has none buffered and has not reached its high watermark).

:meth:`RowConsumer.order_by_timestamp` turns it on the first time a join is defined (pipelines
without joins keep the plain consumer: nothing changes on their hot path); the RowConsumer then
routes its ``consume``, ``position`` and ``subscribe`` through this object:

- ``consume`` buffers the joined topics' messages and returns those that may go (other messages
  pass through at once). A partition with nothing buffered holds its group back until it is
  idle, i.e. its position reached its high watermark; as in Quix, an empty poll alone releases
  nothing (releasing on it let a join see a record before an older one still on its way, and
  emit a match Quix does not). Past ``buffer_limit`` records a partition goes anyway;
- ``position`` reports the first held-back offset of a partition, so a checkpoint never commits
  past a message that was not processed;
- rebalance callbacks drop the buffers of revoked partitions (the new owner reads them again).
"""

from __future__ import annotations

import logging
from collections import deque
from typing import Any, Callable, Deque, Dict, List, Optional, Sequence, Set, Tuple

from confluent_kafka import TopicPartition

__all__ = ("TimestampOrder", "DEFAULT_BUFFER_LIMIT")

logger = logging.getLogger("stream_edge")

DEFAULT_BUFFER_LIMIT = 10_000  # Quix's max_partition_buffer_size default: past it, a partition goes anyway
_DRAIN = 1000
TP = Tuple[str, int]


class TimestampOrder:
    """Buffers and merges the messages of groups of co-partitioned topics (see the module doc).

    ``reader`` does the plain reads: ``consume``, ``position``, ``subscribe``,
    ``get_watermark_offsets`` and ``committed`` as a Kafka consumer has them.
    """

    def __init__(self, reader: Any, buffer_limit: int = DEFAULT_BUFFER_LIMIT) -> None:
        self._consumer = reader
        self._consume: Callable[..., List[Any]] = reader.consume
        self._position: Callable[..., List[Any]] = reader.position
        self._subscribe: Callable[..., Any] = reader.subscribe
        self._limit = buffer_limit
        self._groups: List[List[str]] = []          # topic names, left topics first
        self._group_of: Dict[str, int] = {}         # topic -> index in _groups
        self._buffers: Dict[TP, Deque[Any]] = {}
        self._assigned: Set[TP] = set()
        self._committed: Dict[TP, int] = {}

    # -- set-up ------------------------------------------------------------------------------
    def add_group(self, topics: Sequence[str]) -> None:
        """Merge ``topics`` (in priority order) with any group sharing one of them."""
        merged: List[str] = []
        keep: List[List[str]] = []
        for group in self._groups:
            if set(group) & set(topics):
                merged.extend(t for t in group if t not in merged)
            else:
                keep.append(group)
        merged.extend(t for t in topics if t not in merged)
        self._groups = keep + [merged]
        self._group_of = {t: i for i, group in enumerate(self._groups) for t in group}

    # -- the consumer's methods, in timestamp order --------------------------------------------------------------
    def subscribe(self, topics: Any, on_assign: Optional[Callable] = None, on_revoke: Optional[Callable] = None,
                  on_lost: Optional[Callable] = None) -> None:
        def assigned(consumer: Any, partitions: List[Any]) -> None:
            self._assigned.update((p.topic, p.partition) for p in partitions)
            if on_assign is not None:
                on_assign(consumer, partitions)

        def forget(callback: Optional[Callable]) -> Callable:
            def forgotten(consumer: Any, partitions: List[Any]) -> None:
                if callback is not None:
                    callback(consumer, partitions)
                for p in partitions:
                    tp = (p.topic, p.partition)
                    self._assigned.discard(tp)
                    self._buffers.pop(tp, None)
                    self._committed.pop(tp, None)
            return forgotten

        self._subscribe(topics, on_assign=assigned, on_revoke=forget(on_revoke), on_lost=forget(on_lost))

    def position(self, partitions: List[Any]) -> List[Any]:
        result = self._position(partitions)
        buffers = self._buffers
        if not buffers:
            return result
        out = []
        for tp in result:
            held = buffers.get((tp.topic, tp.partition))
            out.append(TopicPartition(tp.topic, tp.partition, held[0].offset()) if held else tp)
        return out

    def consume(self, num_messages: int = 1, timeout: float = -1) -> List[Any]:
        msgs = self._consume(num_messages, timeout)
        if msgs:
            more = self._consume(_DRAIN, 0)
            if more:
                msgs = list(msgs) + list(more)
        out: List[Any] = []
        group_of, buffers = self._group_of, self._buffers
        touched: Set[Tuple[int, int]] = set()
        for msg in msgs:
            topic = msg.topic()
            group = group_of.get(topic) if msg.error() is None else None
            if group is None:
                out.append(msg)
                continue
            tp = (topic, msg.partition())
            buf = buffers.get(tp)
            if buf is None:
                buf = buffers[tp] = deque()
            buf.append(msg)
            touched.add((group, tp[1]))
        # nothing new: a partition may have become idle since, so every group with held records is tried
        pending = {(group_of[t], p) for (t, p), buf in buffers.items() if buf} if not msgs else touched
        for group, partition in sorted(pending):
            self._release(self._groups[group], partition, out)
        return out

    # -- merging -------------------------------------------------------------------------------
    def _release(self, topics: List[str], partition: int, out: List[Any]) -> None:
        buffers = self._buffers
        members = [(t, partition) for t in topics if (t, partition) in self._assigned or (t, partition) in buffers]
        idle: Dict[TP, bool] = {}
        overfull = any(len(buffers.get(tp, ())) > self._limit for tp in members)
        while True:
            best: Optional[Deque[Any]] = None
            best_ts = 0
            for tp in members:
                buf = buffers.get(tp)
                if buf:
                    ts = buf[0].timestamp()[1]
                    if best is None or ts < best_ts:
                        best, best_ts = buf, ts
                    continue
                if overfull:
                    continue
                known = idle.get(tp)
                if known is None:
                    known = idle[tp] = self._is_idle(tp)
                if not known:
                    return
            if best is None:
                return
            out.append(best.popleft())
            if overfull:
                overfull = any(len(buffers.get(tp, ())) > self._limit for tp in members)

    def _is_idle(self, tp: TP) -> bool:
        """True when ``tp`` has nothing more to read now (it reached its high watermark)."""
        consumer = self._consumer
        partition = TopicPartition(*tp)
        try:
            low, high = consumer.get_watermark_offsets(partition, cached=True)
        except Exception:  # noqa: BLE001 - unknown yet: wait for the fetch
            return False
        if high < 0:
            return False
        if high == 0 or low == high:
            return True
        position = self._position([partition])[0].offset
        if position < 0:
            committed = self._committed.get(tp)
            if committed is None:
                found = consumer.committed([partition], timeout=10)
                committed = self._committed[tp] = found[0].offset if found else -1
            position = committed
        return position >= high
