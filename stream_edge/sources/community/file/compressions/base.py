"""Decompressor: turns a compressed file stream into a readable one."""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import BinaryIO, Literal

__all__ = ("Decompressor", "CompressionName")

CompressionName = Literal["gz", "gzip"]


class Decompressor(ABC):
    """Decompresses one file."""

    @abstractmethod
    def decompress(self, filestream: BinaryIO) -> bytes:
        """The whole decompressed content."""

    def open(self, filestream: BinaryIO) -> BinaryIO:
        """A stream of the decompressed content (default: decompress() at once)."""
        import io

        return io.BytesIO(self.decompress(filestream))
