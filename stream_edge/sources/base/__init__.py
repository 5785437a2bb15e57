"""Source base classes (each source runs in its own process)."""

from .exceptions import SourceException
from .manager import SourceManager
from .process import source_context
from .source import (BaseSource, ClientConnectFailureCallback, ClientConnectSuccessCallback, Source,
                     StatefulSource)

multiprocessing = source_context()  # the context sources start with (Quix Streams exports one too)

__all__ = ("Source", "BaseSource", "multiprocessing", "SourceManager", "SourceException", "StatefulSource",
           "ClientConnectSuccessCallback", "ClientConnectFailureCallback")
