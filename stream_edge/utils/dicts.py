"""Dict helpers."""

from __future__ import annotations

from typing import Any, List

__all__ = ("dict_values",)


def dict_values(d: Any) -> List[Any]:
    """All leaf values of a nested dict, depth first.

    >>> dict_values({"a": 1, "b": {"c": 2}})
    [1, 2]
    """
    if not isinstance(d, dict):
        return [d]
    out: List[Any] = []
    for value in d.values():
        out.extend(dict_values(value))
    return out
