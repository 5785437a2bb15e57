"""Stream function wrappers (apply, update, filter, transform)."""

from .apply import ApplyFunction, ApplyWithMetadataFunction
from .base import StreamFunction, VoidExecutor, fan_out, pickle_copier
from .filter import FilterFunction, FilterWithMetadataFunction
from .transform import TransformFunction
from .update import UpdateFunction, UpdateWithMetadataFunction

__all__ = (
    "ApplyFunction", "ApplyWithMetadataFunction", "FilterFunction", "FilterWithMetadataFunction",
    "StreamFunction", "TransformFunction", "UpdateFunction", "UpdateWithMetadataFunction",
    "VoidExecutor", "fan_out", "pickle_copier",
)
