"""The column-assignment operator: ``sdf["col"] = sdf["a"] + 1`` as one generated line."""

from __future__ import annotations

from typing import Any, Callable, List

from .base import Ref, StreamFunction

__all__ = ("AssignFunction",)


class AssignFunction(StreamFunction):
    """``value[column] = func(value)``; the value (mutated in place) goes downstream."""

    def __init__(self, column: str, func: Callable[[Any], Any]) -> None:
        super().__init__(func)
        self.column = column

    @property
    def label(self) -> str:
        return f"assign_{self.column}"

    def code(self, ref: Ref) -> List[str]:
        return [f"value[{ref(self.column, 'column')}] = {ref(self.func, self.label)}(value)"]
