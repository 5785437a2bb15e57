"""StreamingSeries: a column expression over the value of a StreamingDataFrame.

A series is a chain of plain functions; it is composed into one function when it is assigned,
used as a filter, or turned into a dataframe. Expressions that never need the message metadata
compose into a single-argument function ``f(value)`` so assignment costs one call per message.
"""

from __future__ import annotations

import operator
from typing import Any, Callable, Optional, Tuple

from stream_edge.context import run_with_message_context
from stream_edge.core.stream import ApplyFunction, Stream, is_identity

from .base import BaseStreaming
from .columns import column_getter, column_of, column_operation
from .exceptions import InvalidOperation

__all__ = ("StreamingSeries",)


def _chain(funcs: list) -> Callable[[Any], Any]:
    """Nest single-argument functions into one: ``_chain([f, g])(v) == g(f(v))``."""
    composed = funcs[0]
    for nxt in funcs[1:]:
        composed = (lambda inner, outer: lambda value: outer(inner(value)))(composed, nxt)
    return composed


class StreamingSeries(BaseStreaming):
    """A column (or an expression of columns) of a StreamingDataFrame's value.

    Example::

        sdf["total"] = sdf["price"] * sdf["qty"] + 1
        sdf = sdf[sdf["total"] > 10]
    """

    def __init__(self, sdf_id: Optional[int] = None, name: Optional[str] = None,
                 stream: Optional[Stream] = None) -> None:
        if stream is None and not name:
            raise ValueError('Either "name" or "stream" must be passed')
        self._stream = stream or Stream().add_apply(column_getter(name))
        self._sdf_id = sdf_id
        self.name = name

    @classmethod
    def from_apply_callback(cls, func: Callable[[Any, Any, int, Any], Any], sdf_id: Optional[int] = None) -> "StreamingSeries":
        """A series computed by ``func(value, key, timestamp, headers)``."""
        return cls(stream=Stream().add_apply(func, metadata=True), sdf_id=sdf_id)

    @property
    def sdf_id(self) -> Optional[int]:
        return self._sdf_id

    # -- composition ------------------------------------------------------------------------
    def compose_simple(self) -> Optional[Callable[[Any], Any]]:
        """``f(value)`` if no step needs metadata, else None (the dataframe then assigns or filters
        with the cheaper one-argument form)."""
        funcs = [n.func for n in reversed(self._stream.root_path()) if not is_identity(n.func)]
        if all(type(f) is ApplyFunction and not f.expand for f in funcs):
            return _chain([f.func for f in funcs])
        return None

    def compose_value(self) -> Callable[[Any, Any, int, Any], Any]:
        """``f(value, key, timestamp, headers) -> result`` (the form the dataframe assigns and filters with)."""
        simple = self.compose_simple()
        if simple is not None:
            return lambda value, key, timestamp, headers: simple(value)
        return self._stream.compose_value()

    def compose_returning(self) -> Callable[[Any, Any, int, Any], Tuple[Any, Any, int, Any]]:
        """``f(value, key, timestamp, headers) -> (result, key, timestamp, headers)``, as in Quix."""
        composed = self.compose_value()
        return lambda value, key, timestamp, headers: (composed(value, key, timestamp, headers), key, timestamp,
                                                       headers)

    def compose(self, sink: Optional[Callable[[Any, Any, int, Any], None]] = None) -> Callable:
        """Compose into a function ``(value, key, timestamp, headers)`` feeding ``sink``
        (without a sink: returning ``(result, key, timestamp, headers)``)."""
        if sink is None:
            return self.compose_returning()
        composed = self.compose_value()
        return lambda value, key, timestamp, headers: sink(composed(value, key, timestamp, headers), key, timestamp,
                                                           headers)

    def test(self, value: Any, key: Any = b"key", timestamp: int = 0, headers: Any = None, ctx: Any = None) -> Any:
        """Evaluate the expression on one record; return ``(result, key, timestamp, headers)`` as Quix
        does. ``ctx`` is what ``message_context()`` returns meanwhile (without it, it raises).

        >>> (StreamingSeries(name="a") + 1).test({"a": 1}, key=b"k", timestamp=0)
        (2, b'k', 0, None)
        """
        return run_with_message_context(ctx, self.compose_returning(), value, key, timestamp, headers)

    # -- building ---------------------------------------------------------------------------
    def _then(self, func: Callable[[Any], Any]) -> "StreamingSeries":
        return StreamingSeries(stream=self._stream.add_apply(func), sdf_id=self._sdf_id)

    def apply(self, func: Callable[[Any], Any]) -> "StreamingSeries":
        """Apply ``func`` to the series value.

        >>> StreamingSeries(name="a").apply(str).test({"a": 1}, key=None, timestamp=0)
        ('1', None, 0, None)
        """
        return self._then(func)

    def _check_same_dataframe(self, other: Any) -> None:
        if isinstance(other, StreamingSeries) and other._sdf_id != self._sdf_id \
                and None not in (other._sdf_id, self._sdf_id):
            raise InvalidOperation("All column operations must originate from one `StreamingDataFrame`")

    def _binary(self, other: Any, op: Callable[[Any, Any], Any]) -> "StreamingSeries":
        self._check_same_dataframe(other)
        if isinstance(other, StreamingSeries):
            left, right = self.compose_simple(), other.compose_simple()
            if left is not None and right is not None:
                return StreamingSeries(stream=Stream().add_apply(lambda value: op(left(value), right(value))),
                                       sdf_id=self._sdf_id)
            left4, right4 = self.compose_value(), other.compose_value()
            return StreamingSeries.from_apply_callback(
                lambda value, key, ts, headers: op(left4(value, key, ts, headers), right4(value, key, ts, headers)),
                sdf_id=self._sdf_id)
        column = self._column()
        if column is not None:  # sdf["col"] <op> constant: one call per message
            return StreamingSeries(stream=Stream().add_apply(column_operation(column, op, other)),
                                   sdf_id=self._sdf_id)
        return self._then(lambda x: op(x, other))

    def _logical(self, other: Any, is_and: bool) -> "StreamingSeries":
        """``&`` / ``|``: Python's ``and`` / ``or``; the right series is evaluated only when needed."""
        self._check_same_dataframe(other)
        if not isinstance(other, StreamingSeries):
            return self._binary(other, (lambda x, y: x and y) if is_and else (lambda x, y: x or y))
        left, right = self.compose_simple(), other.compose_simple()
        if left is not None and right is not None:
            func = (lambda value: left(value) and right(value)) if is_and else \
                (lambda value: left(value) or right(value))
            return StreamingSeries(stream=Stream().add_apply(func), sdf_id=self._sdf_id)
        left4, right4 = self.compose_value(), other.compose_value()
        if is_and:
            def logical(value, key, ts, headers):
                return left4(value, key, ts, headers) and right4(value, key, ts, headers)
        else:
            def logical(value, key, ts, headers):
                return left4(value, key, ts, headers) or right4(value, key, ts, headers)
        return StreamingSeries.from_apply_callback(logical, sdf_id=self._sdf_id)

    def _column(self) -> Optional[str]:
        """The column name if this series is exactly ``sdf[name]``."""
        node = self._stream
        if node.parent is not None and node.parent.is_root() and type(node.func) is ApplyFunction:
            return column_of(node.func.func)
        return None

    def _rbinary(self, other: Any, op: Callable[[Any, Any], Any]) -> "StreamingSeries":
        return self._then(lambda x: op(other, x))

    def __add__(self, other): return self._binary(other, operator.add)
    def __radd__(self, other): return self._rbinary(other, operator.add)
    def __sub__(self, other): return self._binary(other, operator.sub)
    def __rsub__(self, other): return self._rbinary(other, operator.sub)
    def __mul__(self, other): return self._binary(other, operator.mul)
    def __rmul__(self, other): return self._rbinary(other, operator.mul)
    def __truediv__(self, other): return self._binary(other, operator.truediv)
    def __rtruediv__(self, other): return self._rbinary(other, operator.truediv)
    def __floordiv__(self, other): return self._binary(other, operator.floordiv)
    def __rfloordiv__(self, other): return self._rbinary(other, operator.floordiv)
    def __mod__(self, other): return self._binary(other, operator.mod)
    def __rmod__(self, other): return self._rbinary(other, operator.mod)
    def __pow__(self, other): return self._binary(other, operator.pow)
    def __eq__(self, other): return self._binary(other, operator.eq)  # type: ignore[override]
    def __ne__(self, other): return self._binary(other, operator.ne)  # type: ignore[override]
    def __lt__(self, other): return self._binary(other, operator.lt)
    def __le__(self, other): return self._binary(other, operator.le)
    def __gt__(self, other): return self._binary(other, operator.gt)
    def __ge__(self, other): return self._binary(other, operator.ge)

    # logical and/or, as the reference documents them (not bitwise)
    def __and__(self, other): return self._logical(other, True)
    def __rand__(self, other): return self._rbinary(other, lambda x, y: x and y)
    def __or__(self, other): return self._logical(other, False)
    def __ror__(self, other): return self._rbinary(other, lambda x, y: x or y)

    def __invert__(self) -> "StreamingSeries":
        """Logical "not"."""
        return self._then(operator.not_)

    def __neg__(self) -> "StreamingSeries":
        return self._then(operator.neg)

    def __getitem__(self, item: Any) -> "StreamingSeries":
        """A nested item: ``sdf["a"]["b"]``."""
        return self._then(operator.itemgetter(item))

    def __hash__(self) -> int:
        return id(self)

    def __bool__(self) -> bool:
        raise InvalidOperation(f"Cannot assess truth level of a {type(self).__name__} using 'bool()' or any "
                               "operations that rely on it; use '&' or '|' for logical and/or comparisons")

    def isin(self, other: Any) -> "StreamingSeries":
        """True if the value is in ``other`` (a collection or another series)."""
        return self._binary(other, lambda x, y: x in y)

    def contains(self, other: Any) -> "StreamingSeries":
        """True if the value contains ``other``."""
        return self._binary(other, operator.contains)

    def is_(self, other: Any) -> "StreamingSeries":
        """Identity check (``x is other``)."""
        return self._binary(other, operator.is_)

    def isnot(self, other: Any) -> "StreamingSeries":
        """Negated identity check (``x is not other``)."""
        return self._binary(other, operator.is_not)

    def isnull(self) -> "StreamingSeries":
        """True if the value is None."""
        return self._then(lambda x: x is None)

    def notnull(self) -> "StreamingSeries":
        """True if the value is not None."""
        return self._then(lambda x: x is not None)

    def abs(self) -> "StreamingSeries":
        """Absolute value."""
        return self._then(abs)

    def __repr__(self) -> str:
        return f"StreamingSeries(name={self.name!r})"
