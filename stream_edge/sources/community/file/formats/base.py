"""Format: reads the records of one (possibly compressed) file as dicts."""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import BinaryIO, Iterable, Literal, Optional

from ..compressions import COMPRESSION_MAPPER, CompressionName, Decompressor

__all__ = ("Format", "FormatName")

FormatName = Literal["json", "parquet"]


class Format(ABC):
    """A file format; subclasses implement ``deserialize()``.

    Records follow the FileSink layout: ``{"_key": ..., "_timestamp": ..., "_value": ...}``.
    """

    def __init__(self, compression: Optional[CompressionName] = None) -> None:
        self._decompressor: Optional[Decompressor] = None
        if compression:
            self._set_decompressor(compression)

    def _set_decompressor(self, extension_or_name: CompressionName) -> None:
        try:
            self._decompressor = COMPRESSION_MAPPER[extension_or_name]()
        except KeyError:
            raise ValueError(f"unknown compression {extension_or_name!r}: use one of "
                             f"{sorted(COMPRESSION_MAPPER)}") from None

    def _decompress(self, filestream: BinaryIO) -> BinaryIO:
        return filestream if self._decompressor is None else self._decompressor.open(filestream)

    @abstractmethod
    def deserialize(self, filestream: BinaryIO) -> Iterable[dict]:
        """The records of an uncompressed file stream."""

    def read(self, filestream: BinaryIO) -> Iterable[dict]:
        """Decompress (if configured) and deserialize."""
        return self.deserialize(self._decompress(filestream))
