"""The "stream_edge" logger (configured once by the Application unless loglevel=None)."""

from __future__ import annotations

import logging
import os
import sys
from typing import Literal, Optional, Union

__all__ = ("configure_logging", "LogLevel", "LOGGER_NAME", "logger")

LOGGER_NAME = "stream_edge"
LogLevel = Literal["CRITICAL", "ERROR", "WARNING", "INFO", "DEBUG", "NOTSET"]
logger = logging.getLogger(LOGGER_NAME)


def configure_logging(loglevel: Optional[Union[int, LogLevel]], name: str = LOGGER_NAME, pid: bool = False) -> bool:
    """Add a stderr handler to the logger unless it has handlers already; True if configured.

    >>> configure_logging(None)
    False
    """
    if loglevel is None:
        return False
    target = logging.getLogger(name)
    if target.handlers:
        return False
    handler = logging.StreamHandler(sys.stderr)
    prefix = f"[{os.getpid()}] " if pid else ""
    handler.setFormatter(logging.Formatter(f"[%(asctime)s] [%(levelname)s] [{name}] {prefix}: %(message)s"))
    target.addHandler(handler)
    target.setLevel(loglevel)
    target.propagate = False
    return True
