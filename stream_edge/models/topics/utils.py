"""Header helpers."""

from __future__ import annotations

from typing import Any, List, Mapping, Optional, Tuple

__all__ = ("merge_headers",)


def merge_headers(original: Optional[Any], other: Mapping[str, Any]) -> List[Tuple[str, Any]]:
    """Merge ``other`` into ``original`` headers; keys of ``other`` replace those of ``original``.

    >>> merge_headers([("a", b"1"), ("b", b"2")], {"b": b"3"})
    [('a', b'1'), ('b', b'3')]
    """
    if isinstance(original, Mapping):
        original = list(original.items())
    kept = [(k, v) for k, v in (original or ()) if k not in other]
    return kept + list(other.items())
