"""JSON Lines format of the file sink."""

from __future__ import annotations

import gzip
import json
from json.encoder import encode_basestring  # what the encoder uses for strings with ensure_ascii=False
from typing import Any, Callable, Optional

from stream_edge.sinks.base import SinkBatch

from .base import Format

__all__ = ("JSONFormat",)


# json.dumps(obj, **options) builds a new encoder on every call; one encoder serves every line.
_default_dumps: Callable[[Any], str] = json.JSONEncoder(separators=(",", ":"), default=str,
                                                        ensure_ascii=False).encode


def _default_line(timestamp: Any, key: Any, value: Any) -> str:
    """``_default_dumps({"_timestamp": timestamp, "_key": key text, "_value": value})``, with the
    wrapper written directly in the common case (int timestamp, text or bytes key): the same
    characters, without encoding a second dict per record."""
    if type(timestamp) is int:
        if type(key) is bytes:
            key = key.decode("utf-8", errors="replace")
        if type(key) is str:
            return f'{{"_timestamp":{timestamp},"_key":{encode_basestring(key)},"_value":{_default_dumps(value)}}}'
    return _default_dumps({"_timestamp": timestamp, "_key": _key_text(key), "_value": value})


def _key_text(key: Any) -> Any:
    return key.decode("utf-8", errors="replace") if isinstance(key, (bytes, bytearray)) else key


class JSONFormat(Format):
    """One JSON object per line: ``{"_timestamp": ..., "_key": ..., "_value": ...}``.

    :param file_extension: default ``.jsonl``.
    :param compress: gzip the output and append ``.gz`` to the extension.
    :param dumps: a custom ``obj -> str`` JSON serializer.

    Example::

        FileSink(directory="out", format=JSONFormat(compress=True))
    """

    def __init__(self, file_extension: str = ".jsonl", compress: bool = False,
                 dumps: Optional[Callable[[Any], str]] = None) -> None:
        self._compress = compress
        self._file_extension = file_extension + (".gz" if compress else "")
        self._dumps = dumps or _default_dumps

    @property
    def file_extension(self) -> str:
        return self._file_extension

    @property
    def supports_append(self) -> bool:
        return True

    def serialize(self, batch: SinkBatch) -> bytes:
        dumps = self._dumps
        if dumps is _default_dumps:
            lines = [_default_line(item.timestamp, item.key, item.value) for item in batch]
        else:
            lines = [dumps({"_timestamp": item.timestamp, "_key": _key_text(item.key), "_value": item.value})
                     for item in batch]
        data = ("\n".join(lines) + "\n").encode("utf-8") if lines else b""
        # Each gzip member is a valid stream; appended members concatenate (gzip -d reads all).
        return gzip.compress(data) if self._compress else data
