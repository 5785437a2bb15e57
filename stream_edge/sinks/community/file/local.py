"""``LocalFileSink`` (Quix Streams 3.28's ``quixstreams.sinks.community.file.local``): a
:class:`~stream_edge.sinks.community.file.sink.FileSink` writing to the local filesystem."""

from __future__ import annotations

from typing import Union

from .destinations import LocalDestination
from .formats import Format, FormatName, resolve_format
from .sink import FileSink

__all__ = ("LocalFileSink", "AppendNotSupported")


class AppendNotSupported(Exception):
    """``append=True`` with a format that cannot be appended to (e.g. Parquet)."""


class LocalFileSink(FileSink):
    """Writes each checkpoint's batch of a topic partition to ``<directory>/<topic>/<partition>/``.

    :param append: append to the partition's newest file instead of creating one per batch.
    :param directory: base directory (default: current directory).
    :param format: ``"json"``, ``"parquet"`` or a Format instance.

    Example::

        sdf.sink(LocalFileSink(directory="out", format="json"))
    """

    def __init__(self, append: bool = False, directory: str = "",
                 format: Union[FormatName, Format] = "json") -> None:  # noqa: A002 - Quix API name
        resolved = resolve_format(format)
        if append and not resolved.supports_append:
            raise AppendNotSupported(f"File format {resolved.file_extension} does not support appending.")
        super().__init__(directory=directory, format=resolved, destination=LocalDestination(append=append))
