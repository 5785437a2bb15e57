"""Apply functions: the callback's result replaces the value downstream."""

from __future__ import annotations

from typing import Any, Callable, Optional

from .base import StreamFunction, VoidExecutor

__all__ = ("ApplyFunction", "ApplyWithMetadataFunction")


class ApplyWithMetadataFunction(StreamFunction):
    """Wrap ``func(value, key, timestamp, headers) -> new_value``; ``expand=True`` emits each item."""

    def __init__(self, func: Callable[..., Any], expand: bool = False) -> None:
        super().__init__(func)
        self.expand = expand

    def _call(self) -> Callable[[Any, Any, int, Any], Any]:
        return self.func

    def inline(self, ref):
        return None if self.expand else [f"value = {ref(self.func)}(value, key, timestamp, headers)"]

    def build(self, child: Optional[VoidExecutor]) -> VoidExecutor:
        # Closures for direct get_executor() use and for expanding steps (Stream.compose inlines the rest).
        call = self._call()
        if child is None:
            def leaf(value, key, timestamp, headers):
                call(value, key, timestamp, headers)
            return leaf
        if self.expand:
            def expanded(value, key, timestamp, headers):
                result = call(value, key, timestamp, headers)
                try:
                    items = iter(result)
                except TypeError:
                    raise TypeError(f"apply(expand=True) expects an iterable result, "
                                    f"got {type(result).__name__}") from None
                for item in items:
                    child(item, key, timestamp, headers)
            return expanded

        def apply(value, key, timestamp, headers):
            child(call(value, key, timestamp, headers), key, timestamp, headers)
        return apply


class ApplyFunction(ApplyWithMetadataFunction):
    """Wrap ``func(value) -> new_value``; with ``expand=True`` each item goes downstream."""

    def _call(self) -> Callable[[Any, Any, int, Any], Any]:
        func = self.func
        return lambda value, key, timestamp, headers: func(value)

    def inline(self, ref):
        return None if self.expand else [f"value = {ref(self.func)}(value)"]
