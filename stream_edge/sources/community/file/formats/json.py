"""JSON lines: one JSON object per line (blank lines are skipped)."""

from __future__ import annotations

from typing import Any, BinaryIO, Callable, Generator, Optional

import orjson

from ..compressions import CompressionName
from .base import Format

__all__ = ("JSONFormat",)


class JSONFormat(Format):
    """Reads JSON lines; ``loads`` replaces the JSON decoder (default: orjson)."""

    def __init__(self, compression: Optional[CompressionName], loads: Optional[Callable[[Any], dict]] = None) -> None:
        super().__init__(compression)
        self._loads = loads or orjson.loads

    def deserialize(self, filestream: BinaryIO) -> Generator[dict, None, None]:
        loads = self._loads
        for number, line in enumerate(filestream, start=1):
            if not line.strip():
                continue
            try:
                yield loads(line)
            except ValueError as exc:
                raise ValueError(f"line {number} is not valid JSON: {exc}") from exc
