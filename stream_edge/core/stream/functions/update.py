"""Update functions: the callback mutates the value or has a side effect; its result is ignored."""

from __future__ import annotations

from typing import Optional

from .base import StreamFunction, VoidExecutor

__all__ = ("UpdateFunction", "UpdateWithMetadataFunction")


class UpdateFunction(StreamFunction):
    """Wrap ``func(value)``; the (possibly mutated) input value goes downstream."""

    def inline(self, ref):
        return [f"{ref(self.func)}(value)"]

    def build(self, child: Optional[VoidExecutor]) -> VoidExecutor:
        func = self.func
        if child is None:
            def leaf(value, key, timestamp, headers):
                func(value)
            return leaf

        def update(value, key, timestamp, headers):
            func(value)
            child(value, key, timestamp, headers)
        return update


class UpdateWithMetadataFunction(StreamFunction):
    """Wrap ``func(value, key, timestamp, headers)``; the input value goes downstream."""

    def inline(self, ref):
        return [f"{ref(self.func)}(value, key, timestamp, headers)"]

    def build(self, child: Optional[VoidExecutor]) -> VoidExecutor:
        func = self.func
        if child is None:
            return func  # the leaf has the executor's own signature: no wrapper needed

        def update(value, key, timestamp, headers):
            func(value, key, timestamp, headers)
            child(value, key, timestamp, headers)
        return update
