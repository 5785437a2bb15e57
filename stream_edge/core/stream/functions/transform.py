"""Transform operators: may change key, timestamp and headers along with the value (internal)."""

from __future__ import annotations

from typing import Any, Callable, List

from .base import Ref, StreamFunction

__all__ = ("TransformFunction",)


class TransformFunction(StreamFunction):
    """Wrap ``func(value, key, timestamp, headers) -> (value, key, timestamp, headers)``.

    With ``expand=True`` the callback returns an iterable of such tuples (windows use this).
    """

    expand_target = "value, key, timestamp, headers"

    def __init__(self, func: Callable[..., Any], expand: bool = False) -> None:
        super().__init__(func)
        self.expand = expand

    def code(self, ref: Ref) -> List[str]:
        call = f"{ref(self.func, self.label)}(value, key, timestamp, headers)"
        if self.expand:
            return [f"items = {call}"]
        return [f"value, key, timestamp, headers = {call}"]
