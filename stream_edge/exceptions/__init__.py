"""Base exceptions (``stream_edge.exceptions``)."""

from .assignment import PartitionAssignmentError
from .base import QuixException, StreamEdgeException

__all__ = ("PartitionAssignmentError", "QuixException", "StreamEdgeException")
