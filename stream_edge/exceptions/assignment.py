"""Partition assignment errors."""

from .base import StreamEdgeException

__all__ = ("PartitionAssignmentError",)


class PartitionAssignmentError(StreamEdgeException):
    """A rebalance callback failed; the original error is the cause."""
