"""The file sink: ``FileSink`` with JSON/Parquet formats and local/S3 destinations."""

from .destinations import Destination, LocalDestination, S3Destination
from .formats import Format, InvalidFormatError, JSONFormat, ParquetFormat, resolve_format
from .sink import FileSink

__all__ = ("FileSink", "Format", "JSONFormat", "ParquetFormat", "InvalidFormatError", "resolve_format",
           "Destination", "LocalDestination", "S3Destination")
