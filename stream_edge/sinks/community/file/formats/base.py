"""The format interface of the file sink."""

from __future__ import annotations

from abc import ABC, abstractmethod

from stream_edge.sinks.base import SinkBatch

__all__ = ("Format",)


class Format(ABC):
    """How a :class:`SinkBatch` becomes the bytes of one file."""

    @property
    @abstractmethod
    def file_extension(self) -> str:
        """The file extension, with the leading dot (e.g. ``.jsonl``)."""

    @property
    @abstractmethod
    def supports_append(self) -> bool:
        """True if files of this format can be appended to."""

    @abstractmethod
    def serialize(self, batch: SinkBatch) -> bytes:
        """Serialize a whole batch into bytes."""
