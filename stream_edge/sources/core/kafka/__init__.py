"""Kafka sources."""

from .kafka import KafkaReplicatorSource

__all__ = ("KafkaReplicatorSource",)
