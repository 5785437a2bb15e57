"""Apply functions: the callback's result replaces the value downstream."""

from __future__ import annotations

from typing import Any, Callable, Optional

from .base import StreamFunction, VoidExecutor

__all__ = ("ApplyFunction", "ApplyWithMetadataFunction")


def _not_iterable(result: Any) -> TypeError:
    return TypeError(f"apply(expand=True) expects an iterable result, got {type(result).__name__}")


class ApplyFunction(StreamFunction):
    """Wrap ``func(value) -> new_value``; with ``expand=True`` each item goes downstream."""

    def __init__(self, func: Callable[[Any], Any], expand: bool = False) -> None:
        super().__init__(func)
        self.expand = expand

    def inline(self, ref):
        return None if self.expand else [f"value = {ref(self.func)}(value)"]

    def build(self, child: Optional[VoidExecutor]) -> VoidExecutor:
        func = self.func
        if child is None:
            def leaf(value, key, timestamp, headers):
                func(value)
            return leaf
        if self.expand:
            def expanded(value, key, timestamp, headers):
                result = func(value)
                try:
                    items = iter(result)
                except TypeError:
                    raise _not_iterable(result) from None
                for item in items:
                    child(item, key, timestamp, headers)
            return expanded

        def apply(value, key, timestamp, headers):
            child(func(value), key, timestamp, headers)
        return apply


class ApplyWithMetadataFunction(StreamFunction):
    """Wrap ``func(value, key, timestamp, headers) -> new_value``."""

    def __init__(self, func: Callable[[Any, Any, int, Any], Any], expand: bool = False) -> None:
        super().__init__(func)
        self.expand = expand

    def inline(self, ref):
        return None if self.expand else [f"value = {ref(self.func)}(value, key, timestamp, headers)"]

    def build(self, child: Optional[VoidExecutor]) -> VoidExecutor:
        func = self.func
        if child is None:
            def leaf(value, key, timestamp, headers):
                func(value, key, timestamp, headers)
            return leaf
        if self.expand:
            def expanded(value, key, timestamp, headers):
                result = func(value, key, timestamp, headers)
                try:
                    items = iter(result)
                except TypeError:
                    raise _not_iterable(result) from None
                for item in items:
                    child(item, key, timestamp, headers)
            return expanded

        def apply(value, key, timestamp, headers):
            child(func(value, key, timestamp, headers), key, timestamp, headers)
        return apply
