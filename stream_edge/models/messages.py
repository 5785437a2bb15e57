"""``stream_edge.models.messages``: the serialized message structure."""

from .topics.topic import KafkaMessage

__all__ = ("KafkaMessage",)
