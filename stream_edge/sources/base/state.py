"""The state of a StatefulSource: a dict in the source's process, kept in a changelog topic.

Records are the ones Quix Streams writes for a source store: the key and the value as JSON
bytes (``None``: deleted) with the headers ``__column_family__: default`` and
``__processed_tp_offsets__: null``, in partition 0 of ``changelog__<group>--source-<name>``.
Recovery reads the topic from its start to its end before the source runs.

Example::

    store = SourceStore("changelog__group--source-counter")
    store.recover(consumer_config={"bootstrap.servers": "localhost:9092"})
    tx = store.begin()
    tx.as_state().set("next", 3)
    tx.commit(producer)          # produces b'"next"' -> b'3', flushes, applies
"""

from __future__ import annotations

import logging
import time
import uuid
from typing import Any, Dict, List, Optional, Tuple

import orjson

from stream_edge.state.base.state import State

__all__ = ("SourceStore", "SourceTransaction", "SourceState", "SourceStateError", "CHANGELOG_HEADERS")

logger = logging.getLogger("stream_edge")

CHANGELOG_HEADERS: List[Tuple[str, bytes]] = [("__column_family__", b"default"),
                                              ("__processed_tp_offsets__", b"null")]
_DELETED = object()


class SourceStateError(RuntimeError):
    """A source state used after its transaction was committed (read ``self.state`` again)."""


def _dumps(value: Any) -> bytes:
    return orjson.dumps(value, option=orjson.OPT_NON_STR_KEYS)


class SourceStore:
    """Committed state of one StatefulSource (partition 0 of its changelog topic)."""

    def __init__(self, changelog_topic: Optional[str], partition: int = 0) -> None:
        self.changelog_topic = changelog_topic
        self.partition = partition
        self._data: Dict[bytes, bytes] = {}

    def get(self, key: bytes) -> Optional[bytes]:
        """The committed bytes of ``key``."""
        return self._data.get(key)

    def items(self) -> List[Tuple[bytes, bytes]]:
        """Every committed key and value."""
        return list(self._data.items())

    def apply(self, changes: Dict[bytes, Optional[bytes]]) -> None:
        """Make ``changes`` (None: delete) the committed state."""
        for key, value in changes.items():
            if value is None:
                self._data.pop(key, None)
            else:
                self._data[key] = value

    def begin(self) -> "SourceTransaction":
        """A new transaction over the committed state."""
        return SourceTransaction(self)

    def recover(self, consumer_config: Dict[str, Any], timeout: float = 60.0) -> int:
        """Read the changelog from its start to its end; returns the number of records applied."""
        if self.changelog_topic is None:
            return 0
        from confluent_kafka import Consumer, KafkaError, TopicPartition

        config = {"group.id": f"stream-edge-source-recovery-{uuid.uuid4().hex[:8]}", "enable.auto.commit": False,
                  "enable.partition.eof": True, "auto.offset.reset": "earliest", **consumer_config}
        config.pop("isolation.level", None)
        consumer = Consumer(config)
        applied = 0
        try:
            tp = TopicPartition(self.changelog_topic, self.partition)
            low, high = consumer.get_watermark_offsets(tp, timeout=timeout)
            if high <= low:
                return 0
            consumer.assign([TopicPartition(self.changelog_topic, self.partition, low)])
            deadline = time.monotonic() + timeout
            position = low
            while position < high:
                if time.monotonic() > deadline:
                    raise TimeoutError(f"recovering '{self.changelog_topic}' took longer than {timeout}s "
                                       f"(at offset {position} of {high})")
                for msg in consumer.consume(500, 1.0):
                    err = msg.error()
                    if err is not None:
                        if err.code() == KafkaError._PARTITION_EOF:
                            position = max(position, msg.offset() or 0)
                            continue
                        raise RuntimeError(f"reading changelog '{self.changelog_topic}': {err.str()}")
                    key = msg.key()
                    if key is not None:
                        value = msg.value()
                        if value is None:
                            self._data.pop(key, None)
                        else:
                            self._data[key] = value
                        applied += 1
                    position = (msg.offset() or 0) + 1
        finally:
            consumer.close()
        logger.info("recovered %d state records of source store from '%s'", applied, self.changelog_topic)
        return applied


class SourceTransaction:
    """Uncommitted changes over a SourceStore; ``commit()`` writes them to the changelog."""

    def __init__(self, store: SourceStore) -> None:
        self._store = store
        self._changes: Dict[bytes, Any] = {}
        self.completed = False

    def _check(self) -> None:
        if self.completed:
            raise SourceStateError("this state was committed by flush(): read self.state again")

    def get_bytes(self, key: bytes) -> Optional[bytes]:
        self._check()
        if key in self._changes:
            value = self._changes[key]
            return None if value is _DELETED else value
        return self._store.get(key)

    def set_bytes(self, key: bytes, value: bytes) -> None:
        self._check()
        self._changes[key] = value

    def delete_bytes(self, key: bytes) -> None:
        self._check()
        self._changes[key] = _DELETED

    def as_state(self) -> "SourceState":
        """The State interface over this transaction."""
        return SourceState(self)

    def commit(self, producer: Any, timeout: Optional[float] = None) -> None:
        """Produce the changes to the changelog, wait for their delivery, then apply them."""
        self._check()
        changes = {k: (None if v is _DELETED else v) for k, v in self._changes.items()}
        topic = self._store.changelog_topic
        if changes and topic is not None:
            for key, value in changes.items():
                producer.produce(topic=topic, value=value, key=key, headers=CHANGELOG_HEADERS,
                                 partition=self._store.partition)
            producer.flush(timeout)
        self._store.apply(changes)
        self.completed = True


class SourceState(State):
    """``self.state`` of a StatefulSource: JSON keys and values over a SourceTransaction."""

    def __init__(self, transaction: SourceTransaction) -> None:
        self._tx = transaction

    def get(self, key: Any, default: Any = None) -> Optional[Any]:
        data = self._tx.get_bytes(_dumps(key))
        return default if data is None else orjson.loads(data)

    def set(self, key: Any, value: Any) -> None:
        self._tx.set_bytes(_dumps(key), _dumps(value))

    def delete(self, key: Any) -> None:
        self._tx.delete_bytes(_dumps(key))

    def exists(self, key: Any) -> bool:
        return self._tx.get_bytes(_dumps(key)) is not None

    def get_bytes(self, key: Any, default: Optional[bytes] = None) -> Optional[bytes]:
        """The raw bytes stored for ``key``."""
        data = self._tx.get_bytes(_dumps(key))
        return default if data is None else data

    def set_bytes(self, key: Any, value: bytes) -> None:
        """Store raw bytes for ``key``."""
        if not isinstance(value, (bytes, bytearray)):
            raise TypeError(f"set_bytes() needs bytes for key {key!r}, got {type(value).__name__}")
        self._tx.set_bytes(_dumps(key), bytes(value))
