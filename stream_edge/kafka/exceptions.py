"""Kafka client errors."""

from typing import Optional

from confluent_kafka import KafkaError, KafkaException

__all__ = ("KafkaConsumerException", "KafkaProducerDeliveryError", "KafkaError", "KafkaException")


class KafkaConsumerException(Exception):
    """The consumer returned an error for a topic-partition."""

    def __init__(self, error: KafkaError, topic: Optional[str] = None, partition: Optional[int] = None) -> None:
        self.error = error
        where = f" (topic '{topic}', partition {partition})" if topic is not None else ""
        super().__init__(f"{error.str() if hasattr(error, 'str') else error}{where}")


class KafkaProducerDeliveryError(Exception):
    """A produced message was not delivered."""
