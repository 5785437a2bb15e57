"""The column-assignment operator: ``sdf["col"] = sdf["a"] + 1`` as one generated line."""

from __future__ import annotations

import operator
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
        target = ref(self.column, "column")
        # sdf["col"] <op> constant (dataframe/columns.py column_operation): its column, operator,
        # constant and column error factory, inlined (one call less per record), same errors
        operation = getattr(self.func, "edge_operation", None)
        if operation is None:
            return [f"value[{target}] = {ref(self.func, self.label)}(value)"]
        column, op, other, column_error = operation
        source, item = ref(column, "column"), f"{target}_item"
        symbol = _INFIX.get(op)
        result = (f"{item} {symbol} {ref(other, 'other')}" if symbol is not None
                  else f"{ref(op, 'op')}({item}, {ref(other, 'other')})")
        return ["try:",
                f"    {item} = value[{source}]",
                "except (KeyError, TypeError) as exc:",
                f"    raise {ref(column_error, 'column_error')}({source}, value, exc)",
                f"value[{target}] = {result}"]


# operator functions that are exactly their infix expression
_INFIX = {operator.add: "+", operator.sub: "-", operator.mul: "*", operator.truediv: "/",
          operator.floordiv: "//", operator.mod: "%", operator.pow: "**", operator.eq: "==", operator.ne: "!=",
          operator.lt: "<", operator.le: "<=", operator.gt: ">", operator.ge: ">="}
