"""The to_topic operator: produce the record, then pass it on unchanged."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable, List, Optional

from stream_edge.models.topics.utils import merge_headers

from .base import Ref, StreamFunction

if TYPE_CHECKING:  # pragma: no cover
    from stream_edge.models.topics import Topic
    from stream_edge.rowproducer import TopicOutput

__all__ = ("ToTopicFunction",)


class ToTopicFunction(StreamFunction):
    """Produce to ``topic`` (with a new key from ``key(value)`` if given).

    ``output_factory(topic, key)`` returns the :class:`~stream_edge.rowproducer.TopicOutput` (the
    Application's producer provides it); it is asked when the pipeline is composed, so defining a
    pipeline needs no producer. The generated lines call confluent-kafka's ``produce`` directly,
    with its positional arguments (``TopicOutput.positional``)::

        try:
            produce_3('out', dumps_4(value), key, -1, None, None, timestamp, headers)
        except Exception as exc:
            on_failure_5(value, key, timestamp, headers, exc, retry_6)
    """

    def __init__(self, output_factory: Callable[["Topic", Optional[Callable[[Any], Any]]], "TopicOutput"],
                 topic: "Topic", key: Optional[Callable[[Any], Any]] = None, internal: bool = False) -> None:
        super().__init__(key)
        self._output_factory, self.topic, self.key = output_factory, topic, key
        self.internal = internal  # True for group_by's repartition write: not an output of the pipeline

    @property
    def label(self) -> str:
        return f"to_topic_{self.topic.name}"

    def _produce_lines(self, out: "TopicOutput", ref: Ref) -> List[str]:
        lines: List[str] = []
        value = f"{ref(out.value_dumps, 'value_dumps')}(value)" if out.value_dumps is not None else "value"
        key = "key"
        if out.key_func is not None:
            lines.append(f"out_key = {ref(out.key_func, 'new_key')}(value)")
            key = "out_key"
        if out.key_dumps is not None:
            lines.append(f"out_key = None if {key} is None else {ref(out.key_dumps, 'key_dumps')}({key})")
            key = "out_key"
        headers = "headers"
        if out.extra_headers:
            headers = f"{ref(merge_headers, 'merge_headers')}(headers, {ref(out.extra_headers, 'extra_headers')})"
        if out.positional:  # confluent-kafka's produce: (topic, value, key, partition, on_delivery,
            # callback, timestamp, headers), no keyword parsing per record (see TopicOutput)
            lines.append(f"{ref(out.produce, 'produce')}({ref(out.topic_name, 'topic')}, {value}, {key}, "
                         f"-1, None, None, timestamp, {headers})")
        else:
            lines.append(f"{ref(out.produce, 'produce')}({ref(out.topic_name, 'topic')}, {value}, {key}, "
                         f"timestamp=timestamp, headers={headers})")
        return lines

    def code(self, ref: Ref) -> List[str]:
        from stream_edge.core.stream.codegen import GeneratedFunction

        out = self._output_factory(self.topic, self.key)
        retry = GeneratedFunction(f"{self.label} (retry)")
        retry.add(*self._produce_lines(out, retry.ref))  # the same lines, without the error handling
        return ["try:", *(f"    {line}" for line in self._produce_lines(out, ref)),
                "except Exception as exc:",
                f"    {ref(out.on_failure, 'on_produce_failure')}(value, key, timestamp, headers, exc, "
                f"{ref(retry.compile('produce'), 'retry')})"]

    def __repr__(self) -> str:
        return f"to_topic({self.topic.name!r})"
