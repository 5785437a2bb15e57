"""Update operators: the callback mutates the value or has a side effect; its result is ignored."""

from __future__ import annotations

from typing import List

from .base import Ref, StreamFunction

__all__ = ("UpdateFunction", "UpdateWithMetadataFunction")


class UpdateFunction(StreamFunction):
    """Wrap ``func(value)``; the (possibly mutated) input value goes downstream."""

    arguments = "value"

    def code(self, ref: Ref) -> List[str]:
        return [f"{ref(self.func, self.label)}({self.arguments})"]


class UpdateWithMetadataFunction(UpdateFunction):
    """Wrap ``func(value, key, timestamp, headers)``; the input value goes downstream."""

    arguments = "value, key, timestamp, headers"
