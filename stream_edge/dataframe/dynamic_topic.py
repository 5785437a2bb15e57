"""``to_topic(select)`` with a callable: the topic of each record is chosen by
``select(value, key, timestamp, headers)`` (Quix Streams 3.28's dynamic topic selection)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable, Dict, Optional

from stream_edge.models.topics.utils import merge_headers

if TYPE_CHECKING:  # pragma: no cover
    from stream_edge.models.topics import Topic
    from stream_edge.processing.context import ProcessingContext

__all__ = ("DynamicTopicProducer",)

TopicSelector = Callable[[Any, Any, int, Any], "Topic"]


class DynamicTopicProducer:
    """``producer(value, key, timestamp, headers)``: produce to the topic ``select`` returns, with
    that topic's serializers; ``key(value)`` sets a new key. Each topic's output is looked up once."""

    def __init__(self, select: TopicSelector, key: Optional[Callable[[Any], Any]], context: "ProcessingContext",
                 register: Optional[Callable[["Topic"], Any]], known: Callable[[], Dict[str, Any]]) -> None:
        self._select, self._key, self._context = select, key, context
        self._register, self._known = register, known
        self._senders: Dict[str, Callable[[Any, Any, int, Any], None]] = {}

    def __call__(self, value: Any, key: Any, timestamp: int, headers: Any) -> None:
        topic = self._select(value, key, timestamp, headers)
        sender = self._senders.get(topic.name)
        if sender is None:
            sender = self._senders[topic.name] = self._sender(topic)
        sender(value, key, timestamp, headers)

    def _sender(self, topic: "Topic") -> Callable[[Any, Any, int, Any], None]:
        if self._register is not None and topic.name not in self._known():
            self._register(topic)
        out = self._context.topic_output(topic, self._key)

        def send(value: Any, key: Any, timestamp: int, headers: Any) -> None:
            payload = out.value_dumps(value) if out.value_dumps is not None else value
            new_key = out.key_func(value) if out.key_func is not None else key
            if new_key is not None and out.key_dumps is not None:
                new_key = out.key_dumps(new_key)
            sent_headers = merge_headers(headers, out.extra_headers) if out.extra_headers else headers
            out.produce(out.topic_name, payload, new_key, timestamp=timestamp, headers=sent_headers)

        def send_or_handle(value: Any, key: Any, timestamp: int, headers: Any) -> None:
            try:
                send(value, key, timestamp, headers)
            except Exception as exc:  # noqa: BLE001 - the producer's failure policy decides
                out.on_failure(value, key, timestamp, headers, exc, send)

        return send_or_handle
