"""File decompressions of the FileSource: ``COMPRESSION_MAPPER`` maps a name to its class."""

from typing import Dict, Type

from .base import CompressionName, Decompressor
from .gzip import GZipDecompressor

COMPRESSION_MAPPER: Dict[str, Type[Decompressor]] = {"gz": GZipDecompressor, "gzip": GZipDecompressor}

__all__ = ("COMPRESSION_MAPPER", "CompressionName", "Decompressor", "GZipDecompressor")
