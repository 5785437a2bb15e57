"""Errors raised when a join is defined (Quix Streams 3.28 names and messages)."""

from __future__ import annotations

from stream_edge.models.topics.exceptions import TopicPartitionsMismatch
from stream_edge.state.exceptions import StateError

__all__ = ("StoreAlreadyRegisteredError", "TopicPartitionsMismatch")


class StoreAlreadyRegisteredError(StateError):
    """A join's store name is taken for that stream (give the join another ``name``)."""

