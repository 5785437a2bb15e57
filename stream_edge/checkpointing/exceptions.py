"""Checkpoint errors."""

__all__ = ("CheckpointProducerTimeout", "InvalidStoredOffset", "CheckpointConsumerCommitError")


class CheckpointProducerTimeout(Exception):
    """The producer did not deliver everything in time; offsets were not committed."""


class InvalidStoredOffset(Exception):
    """An offset lower than one already stored for the partition."""


class CheckpointConsumerCommitError(Exception):
    """The broker refused the offset commit."""
