"""Formats of the file sink and ``resolve_format``."""

from __future__ import annotations

from typing import Literal, Union

from .base import Format
from .json import JSONFormat
from .parquet import ParquetFormat

__all__ = ("Format", "JSONFormat", "ParquetFormat", "InvalidFormatError", "resolve_format", "FormatName")

FormatName = Literal["json", "parquet"]


class InvalidFormatError(Exception):
    """Raised when the format is specified incorrectly."""


def resolve_format(format: Union[FormatName, Format]) -> Format:  # noqa: A002 - v3 API name
    """``"json"``/``"parquet"`` or a :class:`Format` instance -> a :class:`Format` instance."""
    if isinstance(format, Format):
        return format
    if format == "json":
        return JSONFormat()
    if format == "parquet":
        return ParquetFormat()
    raise InvalidFormatError(f"invalid format {format!r}: use 'json', 'parquet' or a Format instance")
