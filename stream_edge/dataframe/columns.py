"""Reading a column of a record's value, with Quix Streams' errors for a missing column
(``ColumnDoesNotExist``) and a value that is not a dict (``InvalidColumnReference``).

The getters are plain closures (one frame per call); ``column_of`` recognises them so a
``sdf["col"] <op> constant`` expression composes into a single function.
"""

from __future__ import annotations

from typing import Any, Callable, Optional

from .exceptions import ColumnDoesNotExist, InvalidColumnReference

__all__ = ("column_getter", "column_of", "column_operation", "column_error")


def column_error(column: Any, value: Any, exc: BaseException) -> Exception:
    """The error Quix raises when ``value[column]`` failed with ``exc``."""
    if isinstance(exc, KeyError):
        return ColumnDoesNotExist(f"Column '{column}' does not exist in the message value")
    return InvalidColumnReference(f"Cannot access column '{column}'; column referencing expects message value "
                                  f"type 'dict', not '{type(value).__name__}'")


def column_getter(column: Any) -> Callable[[Any], Any]:
    """``get(value) -> value[column]``, failing with Quix's column errors."""

    def get_column(value: Any) -> Any:
        try:
            return value[column]
        except (KeyError, TypeError) as exc:
            raise column_error(column, value, exc)

    get_column.edge_column = column  # type: ignore[attr-defined]
    return get_column


def column_of(func: Any) -> Optional[Any]:
    """The column a :func:`column_getter` reads, else None."""
    return getattr(func, "edge_column", None)


def column_operation(column: Any, op: Callable[[Any, Any], Any], other: Any) -> Callable[[Any], Any]:
    """``f(value) -> op(value[column], other)`` in one call, with the column errors."""

    def column_op(value: Any) -> Any:
        try:
            item = value[column]
        except (KeyError, TypeError) as exc:
            raise column_error(column, value, exc)
        return op(item, other)

    # what AssignFunction inlines into the generated chain instead of calling column_op
    column_op.edge_operation = (column, op, other, column_error)  # type: ignore[attr-defined]
    return column_op
