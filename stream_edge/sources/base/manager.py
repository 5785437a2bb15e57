"""SourceManager: runs the Application's sources in threads and stops them on shutdown."""

from __future__ import annotations

import logging
import threading
from typing import Any, List, Optional

from .exceptions import SourceException

__all__ = ("SourceManager",)

logger = logging.getLogger("stream_edge")


class _SourceThread(threading.Thread):
    def __init__(self, source: Any) -> None:
        super().__init__(name=f"source-{getattr(source, 'name', type(source).__name__)}", daemon=True)
        self.source = source
        self.error: Optional[BaseException] = None

    def run(self) -> None:
        try:
            self.source.start()
        except BaseException as exc:  # noqa: BLE001 - reported to the Application
            logger.exception("source %r failed", self.source)
            self.error = exc


class SourceManager:
    """Starts, watches and stops sources."""

    def __init__(self) -> None:
        self.sources: List[Any] = []
        self._threads: List[_SourceThread] = []

    def register(self, source: Any) -> None:
        if source in self.sources:
            raise ValueError(f"source {source!r} is registered already")
        self.sources.append(source)

    def start_all(self) -> None:
        self._threads = [_SourceThread(s) for s in self.sources]
        for thread in self._threads:
            logger.info("starting source %r", thread.source)
            thread.start()

    def alive(self) -> bool:
        return any(t.is_alive() for t in self._threads)

    def raise_for_error(self) -> None:
        for thread in self._threads:
            if thread.error is not None:
                raise SourceException(thread.source, thread.error) from thread.error

    def stop_all(self) -> None:
        for thread in self._threads:
            thread.source.stop()
        for thread in self._threads:
            thread.join(getattr(thread.source, "shutdown_timeout", 10))
            if thread.is_alive():
                logger.warning("source %r did not stop within its shutdown timeout", thread.source)
        self._threads = []
