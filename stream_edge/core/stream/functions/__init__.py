"""Stream operators (apply, update, filter, transform, to_topic, column assignment)."""

from .apply import ApplyFunction, ApplyWithMetadataFunction, identity, is_identity
from .assign import AssignFunction
from .base import StreamFunction, VoidExecutor, compile_steps, fan_out, pickle_copier
from .filter import FilterFunction, FilterWithMetadataFunction
from .produce import ToTopicFunction
from .transform import TransformFunction
from .update import UpdateFunction, UpdateWithMetadataFunction

__all__ = (
    "ApplyFunction", "ApplyWithMetadataFunction", "AssignFunction", "FilterFunction",
    "FilterWithMetadataFunction", "StreamFunction", "ToTopicFunction", "TransformFunction",
    "UpdateFunction", "UpdateWithMetadataFunction", "VoidExecutor", "compile_steps", "fan_out",
    "pickle_copier", "identity", "is_identity",
)
