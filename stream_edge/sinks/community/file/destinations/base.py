"""The destination interface of the file sink: where a serialized batch goes."""

from __future__ import annotations

import re
from abc import ABC, abstractmethod
from pathlib import PurePosixPath

from stream_edge.sinks.base import SinkBatch

from ..formats import Format

__all__ = ("Destination",)

# The v3 rule (alphanumerics, spaces, dots, underscores) plus path separators and hyphens, which
# any real directory path needs; '..' levels are refused so a sink stays below its directory.
_DIRECTORY_RE = re.compile(r"^[a-zA-Z0-9 ._/\-]*$")


class Destination(ABC):
    """Stores serialized batches as ``<directory>/<topic>/<partition>/<start offset><ext>``."""

    def __init__(self) -> None:
        self._directory = ""
        self._extension = ""

    def set_directory(self, directory: str) -> None:
        """Set the base directory; raises ``ValueError`` for characters outside the allowed set."""
        if not _DIRECTORY_RE.match(directory or ""):
            raise ValueError(
                f"invalid directory {directory!r}: only alphanumerics, spaces, dots, underscores, "
                "hyphens and '/' are allowed"
            )
        if ".." in PurePosixPath(directory).parts:
            raise ValueError(f"invalid directory {directory!r}: '..' is not allowed")
        self._directory = directory

    def set_extension(self, format: Format) -> None:  # noqa: A002 - v3 API name
        self._extension = format.file_extension

    def _batch_dir(self, batch: SinkBatch) -> str:
        parts = [p for p in (self._directory.rstrip("/"), batch.topic, str(batch.partition)) if p]
        return "/".join(parts)

    def _batch_path(self, batch: SinkBatch) -> str:
        return f"{self._batch_dir(batch)}/{batch.start_offset:019d}{self._extension}"

    @abstractmethod
    def write(self, data: bytes, batch: SinkBatch) -> None:
        """Write the serialized data of ``batch``."""
