"""Checkpoints: when and in which order processed work is made durable."""

from .checkpoint import BaseCheckpoint, Checkpoint
from .exceptions import CheckpointConsumerCommitError, CheckpointProducerTimeout, InvalidStoredOffset

__all__ = ("BaseCheckpoint", "Checkpoint", "CheckpointConsumerCommitError", "CheckpointProducerTimeout",
           "InvalidStoredOffset")
