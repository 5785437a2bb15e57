"""Source errors."""

from __future__ import annotations

from typing import Any, Optional

__all__ = ("SourceException",)


class SourceException(Exception):
    """A source's process failed; raised by the Application from the source's own error.

    ``str()`` is ``"<source name> with PID <pid> failed"`` as in Quix Streams (``with exitcode <n>``
    added when the process died without reporting an error); ``__cause__`` is the source's error.
    """

    def __init__(self, process: Any) -> None:
        self.process = process
        self.pid: Optional[int] = getattr(process, "pid", None)
        self.exitcode: Optional[int] = getattr(process, "exitcode", None)
        super().__init__(process)

    @property
    def source(self) -> Any:
        """The source that failed."""
        return getattr(self.process, "source", None)

    def __str__(self) -> str:
        name = getattr(self.process, "name", self.process)
        if self.process is not None and getattr(self.process, "error", lambda: None)() is None:
            return f"{name} with PID {self.pid} failed with exitcode {self.exitcode}"
        return f"{name} with PID {self.pid} failed"
