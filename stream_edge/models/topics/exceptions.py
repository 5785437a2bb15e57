"""Topic errors."""

__all__ = ("TopicNotFoundError", "TopicConfigurationMismatch", "CreateTopicFailure",
           "CreateTopicTimeout", "TopicNameLengthExceeded")


class TopicNotFoundError(Exception):
    """A topic does not exist and auto-creation is off."""


class TopicConfigurationMismatch(Exception):
    """A topic exists with settings that do not fit (e.g. a changelog's partition count)."""


class CreateTopicFailure(Exception):
    """The broker refused to create a topic."""


class CreateTopicTimeout(Exception):
    """Topic creation was not confirmed in time."""


class TopicNameLengthExceeded(ValueError):
    """Kafka topic names are limited to 249 characters."""
