"""Pydantic's ``ValidationError``, built without a pydantic model, for the settings classes that Quix
Streams 3.28 defines as pydantic models (``ConnectionConfig``, ``ApplicationConfig``): a program that
catches ``pydantic.ValidationError`` sees the same error type and text. Pydantic is not a
dependency of the edge: without it the callers raise their own ``ValueError`` naming the field."""

from __future__ import annotations

from typing import Any, Iterable, Optional, Tuple

__all__ = ("pydantic_error",)


def pydantic_error(title: str, kind: str, items: Iterable[Tuple[str, Any]]) -> Optional[Exception]:
    """``ValidationError`` of error type ``kind`` (e.g. ``extra_forbidden``, ``frozen_instance``) for
    each ``(field, input value)``; None when pydantic is not installed (imported only here: ~30 ms).

    >>> error = pydantic_error("ConnectionConfig", "extra_forbidden", [("not_a_setting", "x")])
    >>> error is None or "Extra inputs are not permitted" in str(error)
    True
    """
    try:
        from pydantic_core import ValidationError
    except ImportError:
        return None
    return ValidationError.from_exception_data(
        title, [{"type": kind, "loc": (name,), "input": value} for name, value in items])  # type: ignore[misc]
