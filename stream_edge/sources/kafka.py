"""``stream_edge.sources.kafka`` (as in Quix Streams' examples): the Kafka replicator source."""

from .core.kafka import KafkaReplicatorSource

__all__ = ("KafkaReplicatorSource",)
