"""Filter functions: a false-like result drops the record from the branch."""

from __future__ import annotations

from typing import Optional

from .base import StreamFunction, VoidExecutor

__all__ = ("FilterFunction", "FilterWithMetadataFunction")


class FilterFunction(StreamFunction):
    """Wrap ``func(value) -> bool``."""

    def inline(self, ref):
        return [f"if not {ref(self.func)}(value):", "    return"]

    def build(self, child: Optional[VoidExecutor]) -> VoidExecutor:
        func = self.func
        if child is None:
            def leaf(value, key, timestamp, headers):
                func(value)  # a stateful filter may have side effects: still call it
            return leaf

        def filter_(value, key, timestamp, headers):
            if func(value):
                child(value, key, timestamp, headers)
        return filter_


class FilterWithMetadataFunction(StreamFunction):
    """Wrap ``func(value, key, timestamp, headers) -> bool``."""

    def inline(self, ref):
        return [f"if not {ref(self.func)}(value, key, timestamp, headers):", "    return"]

    def build(self, child: Optional[VoidExecutor]) -> VoidExecutor:
        func = self.func
        if child is None:
            return func  # same signature as the executor; the result is ignored

        def filter_(value, key, timestamp, headers):
            if func(value, key, timestamp, headers):
                child(value, key, timestamp, headers)
        return filter_
