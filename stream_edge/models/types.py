"""Type aliases shared by the models."""

from __future__ import annotations

from typing import Any, List, Mapping, Optional, Protocol, Sequence, Tuple, Union

__all__ = ("Headers", "HeadersValue", "HeadersMapping", "HeadersTuples", "KafkaHeaders",
           "MessageKey", "MessageValue", "RawConfluentKafkaMessageProto",
           "SuccessfulConfluentKafkaMessageProto")

MessageKey = Union[str, bytes]
MessageValue = Union[str, bytes]
HeadersValue = Union[str, bytes]
HeadersMapping = Mapping[str, HeadersValue]
HeadersTuples = Sequence[Tuple[str, HeadersValue]]
Headers = Union[HeadersTuples, HeadersMapping]
KafkaHeaders = Optional[List[Tuple[str, bytes]]]


class RawConfluentKafkaMessageProto(Protocol):
    """The interface of ``confluent_kafka.Message`` (which Python code cannot construct)."""

    def headers(self, *args: Any, **kwargs: Any) -> KafkaHeaders: ...
    def key(self, *args: Any, **kwargs: Any) -> Optional[MessageKey]: ...
    def offset(self, *args: Any, **kwargs: Any) -> int: ...
    def partition(self, *args: Any, **kwargs: Any) -> int: ...
    def timestamp(self, *args: Any, **kwargs: Any) -> Tuple[int, int]: ...
    def topic(self, *args: Any, **kwargs: Any) -> str: ...
    def value(self, *args: Any, **kwargs: Any) -> Optional[MessageValue]: ...
    def error(self, *args: Any, **kwargs: Any) -> Any: ...
    def latency(self, *args: Any, **kwargs: Any) -> Optional[float]: ...
    def leader_epoch(self, *args: Any, **kwargs: Any) -> Optional[int]: ...


SuccessfulConfluentKafkaMessageProto = RawConfluentKafkaMessageProto
