"""Topic errors (Quix Streams 3.28's names; each is a ``QuixException``)."""

from stream_edge.exceptions.base import QuixException

__all__ = ("TopicNotFoundError", "TopicConfigurationMismatch", "CreateTopicFailure",
           "CreateTopicTimeout", "TopicNameLengthExceeded", "TopicPermissionError",
           "TopicConfigurationError", "TopicPartitionsMismatch")


class TopicNotFoundError(QuixException):
    """A topic does not exist and auto-creation is off."""


class TopicConfigurationMismatch(QuixException):
    """A topic exists with settings that do not fit (e.g. a changelog's partition count)."""


class CreateTopicFailure(QuixException):
    """The broker refused to create a topic."""


class CreateTopicTimeout(QuixException):
    """Topic creation was not confirmed in time."""


class TopicNameLengthExceeded(QuixException, ValueError):
    """Kafka topic names are limited to 249 characters."""


class TopicPermissionError(QuixException):
    """The topic's configuration may not be read (authorization)."""


class TopicConfigurationError(QuixException, RuntimeError):
    """A topic configuration is invalid or unknown (e.g. ``broker_config`` of a topic no
    TopicManager registered)."""


class TopicPartitionsMismatch(QuixException):
    """Topics that must be co-partitioned have different partition counts."""
