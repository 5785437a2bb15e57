"""``StreamingDataFrame.join_lookup``: enrich each record's value in place through a lookup."""

from __future__ import annotations

import operator
from typing import TYPE_CHECKING, Any, Callable, Mapping, Optional, Union

from .base import BaseField, BaseLookup

if TYPE_CHECKING:  # pragma: no cover
    from stream_edge.dataframe import StreamingDataFrame

__all__ = ("LookupJoin",)


class LookupJoin:
    """``join(sdf)`` adds one in-place update calling ``lookup.join(fields, target_key, ...)``.

    ``on``: a column of the value, a callable ``(value, key) -> target key``, or ``None`` (the
    message key).
    """

    def __init__(self, lookup: BaseLookup, fields: Mapping[str, BaseField],
                 on: Optional[Union[str, Callable[[Any, Any], Any]]] = None) -> None:
        if not isinstance(lookup, BaseLookup):
            raise TypeError(f"lookup must be a BaseLookup, got {type(lookup).__name__}")
        for name, field in fields.items():
            if not isinstance(field, BaseField):
                raise TypeError(f"field '{name}' must be a BaseField, got {type(field).__name__}")
        self._lookup = lookup
        self._fields = dict(fields)
        self._target: Callable[[Any, Any], Any]
        if on is None:
            self._target = lambda value, key: key
        elif isinstance(on, str):
            column = operator.itemgetter(on)
            self._target = lambda value, key: column(value)
        elif callable(on):
            self._target = on
        else:
            raise TypeError(f"on must be a column name, a callable or None, got {type(on).__name__}")

    def join(self, sdf: "StreamingDataFrame") -> "StreamingDataFrame":
        join, fields, target = self._lookup.join, self._fields, self._target

        def lookup_join(value: Any, key: Any, timestamp: int, headers: Any) -> None:
            join(fields, target(value, key), value, key, timestamp, headers)
        return sdf.update(lookup_join, metadata=True)
