"""State errors (all name the store, topic and partition involved)."""

__all__ = ("StateError", "StoreNotRegisteredError", "PartitionNotAssignedError", "StoreLockedError",
           "StateRecoveryError", "StateOffsetMismatchError", "ChangelogTopicError", "StateRecoveryOffsetOutOfRange")


class StateError(Exception):
    """Base class of the state package's errors."""


class StoreNotRegisteredError(StateError):
    """A transaction was asked for a store that no operation registered."""


class PartitionNotAssignedError(StateError):
    """A transaction was asked for a partition this instance does not own."""


class StoreLockedError(StateError):
    """The RocksDB directory stayed locked by another process after every retry."""


class StateRecoveryError(StateError):
    """Recovery from a changelog topic could not complete."""


class StateOffsetMismatchError(StateError):
    """The local state and the consumer group's committed offset disagree (stale state)."""


class ChangelogTopicError(StateError):
    """A changelog topic is missing or could not be created."""


class StateRecoveryOffsetOutOfRange(StateError):
    """The committed source offset is no longer retained by Kafka and automatic recovery is off
    (``auto_recover_from_source_offset_out_of_range=False``, or ``state_recovery_offset_reset``
    following ``auto_offset_reset="error"``)."""
