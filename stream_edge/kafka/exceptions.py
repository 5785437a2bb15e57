"""Kafka client errors."""

import logging
from typing import Callable, Optional

from confluent_kafka import KafkaError, KafkaException

from stream_edge.exceptions.base import QuixException

__all__ = ("KafkaConsumerException", "KafkaProducerDeliveryError", "KafkaError", "KafkaException",
           "client_error_logger", "InvalidProducerConfigError")

logger = logging.getLogger("stream_edge")


def client_error_logger(client: str) -> Callable[[KafkaError], None]:
    """The default ``error_cb`` of a Kafka client: all brokers down or fatal errors at ERROR, the
    rest (transient, retried by librdkafka) at DEBUG."""

    def log_error(error: KafkaError) -> None:
        if error.code() == KafkaError._ALL_BROKERS_DOWN or error.fatal():
            logger.error("Kafka %s error: %s", client, error.str())
        else:
            logger.debug("Kafka %s error: %s", client, error.str())

    return log_error


class InvalidProducerConfigError(QuixException):
    """A transactions method was called on a producer created without ``transactional=True``."""


class KafkaConsumerException(Exception):
    """The consumer returned an error for a topic-partition."""

    def __init__(self, error: KafkaError, topic: Optional[str] = None, partition: Optional[int] = None) -> None:
        self.error = error
        where = f" (topic '{topic}', partition {partition})" if topic is not None else ""
        super().__init__(f"{error.str() if hasattr(error, 'str') else error}{where}")


class KafkaProducerDeliveryError(Exception):
    """A produced message was not delivered."""
