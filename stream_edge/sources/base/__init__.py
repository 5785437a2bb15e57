"""Source base classes."""

from .exceptions import SourceException
from .manager import SourceManager
from .source import BaseSource, Source

__all__ = ("BaseSource", "Source", "SourceException", "SourceManager")
