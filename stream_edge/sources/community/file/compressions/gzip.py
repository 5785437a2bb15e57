"""gzip decompression (streamed: the file is never held whole in memory)."""

from __future__ import annotations

import gzip
from typing import BinaryIO, cast

from .base import Decompressor

__all__ = ("GZipDecompressor",)


class GZipDecompressor(Decompressor):
    """Decompresses gzip files (``compression="gzip"`` or ``"gz"``)."""

    def decompress(self, filestream: BinaryIO) -> bytes:
        return gzip.decompress(filestream.read())

    def open(self, filestream: BinaryIO) -> BinaryIO:
        return cast(BinaryIO, gzip.GzipFile(fileobj=filestream, mode="rb"))
