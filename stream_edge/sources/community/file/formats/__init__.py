"""File formats of the FileSource: ``FORMATS`` maps a name to its class."""

from typing import Dict, Type

from .base import Format, FormatName
from .json import JSONFormat
from .parquet import ParquetFormat

FORMATS: Dict[str, Type[Format]] = {"json": JSONFormat, "parquet": ParquetFormat}

__all__ = ("FORMATS", "Format", "FormatName", "JSONFormat", "ParquetFormat")
