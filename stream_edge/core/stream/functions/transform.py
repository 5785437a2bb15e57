"""Transform functions: may change key, timestamp and headers along with the value (internal)."""

from __future__ import annotations

from typing import Any, Callable, Optional

from .base import StreamFunction, VoidExecutor

__all__ = ("TransformFunction",)


class TransformFunction(StreamFunction):
    """Wrap ``func(value, key, timestamp, headers) -> (value, key, timestamp, headers)``.

    With ``expand=True`` the callback returns an iterable of such tuples (windows use this).
    """

    def __init__(self, func: Callable[..., Any], expand: bool = False) -> None:
        super().__init__(func)
        self.expand = expand

    def inline(self, ref):
        if self.expand:
            return None
        return [f"value, key, timestamp, headers = {ref(self.func)}(value, key, timestamp, headers)"]

    def build(self, child: Optional[VoidExecutor]) -> VoidExecutor:
        func = self.func
        if child is None:
            def leaf(value, key, timestamp, headers):
                func(value, key, timestamp, headers)
            return leaf
        if self.expand:
            def expanded(value, key, timestamp, headers):
                for new_value, new_key, new_ts, new_headers in func(value, key, timestamp, headers):
                    child(new_value, new_key, new_ts, new_headers)
            return expanded

        def transform(value, key, timestamp, headers):
            new_value, new_key, new_ts, new_headers = func(value, key, timestamp, headers)
            child(new_value, new_key, new_ts, new_headers)
        return transform
