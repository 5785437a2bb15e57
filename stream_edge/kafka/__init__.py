"""Kafka clients: Producer, Consumer, ConnectionConfig."""

from .configuration import ConnectionConfig
from .consumer import AutoOffsetReset, BaseConsumer, Consumer
from .producer import Producer, TransactionalProducer

__all__ = ("AutoOffsetReset", "BaseConsumer", "ConnectionConfig", "Consumer", "Producer", "TransactionalProducer")
