"""Apply operators: the callback's result replaces the value downstream."""

from __future__ import annotations

from typing import Any, Callable, Iterable, List

from .base import Ref, StreamFunction

__all__ = ("ApplyFunction", "ApplyWithMetadataFunction", "expanded_items", "identity", "is_identity")


def expanded_items(result: Any) -> Iterable[Any]:
    """The items of an ``expand=True`` result, with a clear error when it is not iterable."""
    try:
        return iter(result)
    except TypeError:
        raise TypeError(f"apply(expand=True) expects an iterable result, got {type(result).__name__}") from None


def identity(value: Any) -> Any:
    """The function of a root node (``Stream()``), an apply of the identity as in Quix Streams."""
    return value


def is_identity(func: StreamFunction) -> bool:
    """True for a root's identity apply, which adds no line to a chain (a root costs nothing)."""
    return type(func) is ApplyFunction and func.func is identity and not func.expand


class ApplyWithMetadataFunction(StreamFunction):
    """Wrap ``func(value, key, timestamp, headers) -> new_value``; ``expand=True`` emits each item."""

    arguments = "value, key, timestamp, headers"

    def __init__(self, func: Callable[..., Any], expand: bool = False) -> None:
        super().__init__(func)
        self.expand = expand

    def code(self, ref: Ref) -> List[str]:
        call = f"{ref(self.func, self.label)}({self.arguments})"
        if self.expand:
            return [f"items = {ref(expanded_items, 'expanded_items')}({call})"]
        return [f"value = {call}"]


class ApplyFunction(ApplyWithMetadataFunction):
    """Wrap ``func(value) -> new_value``; with ``expand=True`` each item goes downstream."""

    arguments = "value"

    def code(self, ref: Ref) -> List[str]:
        if self.func is identity and not self.expand:
            return []  # a root's identity: nothing to do
        return super().code(ref)

    @property
    def label(self) -> str:
        return "" if self.func is identity else super().label

