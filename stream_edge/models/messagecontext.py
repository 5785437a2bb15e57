"""MessageContext: metadata of the message being processed, built on demand."""

from __future__ import annotations

from typing import Optional

__all__ = ("MessageContext",)


class MessageContext:
    """Kafka coordinates of one message (topic, partition, offset, size, leader epoch).

    >>> MessageContext("t", 0, 5, 10).offset
    5
    """

    __slots__ = ("_topic", "_partition", "_offset", "_size", "_leader_epoch")

    def __init__(self, topic: str, partition: int, offset: int, size: int = 0,
                 leader_epoch: Optional[int] = None) -> None:
        self._topic = topic
        self._partition = partition
        self._offset = offset
        self._size = size
        self._leader_epoch = leader_epoch

    topic = property(lambda self: self._topic)
    partition = property(lambda self: self._partition)
    offset = property(lambda self: self._offset)
    size = property(lambda self: self._size)
    leader_epoch = property(lambda self: self._leader_epoch)


    def __repr__(self) -> str:
        return (f"MessageContext(topic={self._topic!r}, partition={self._partition}, "
                f"offset={self._offset}, size={self._size})")

    def __eq__(self, other: object) -> bool:
        return isinstance(other, MessageContext) and (
            (self._topic, self._partition, self._offset) == (other._topic, other._partition, other._offset))
