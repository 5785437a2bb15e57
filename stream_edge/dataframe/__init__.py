"""StreamingDataFrame and StreamingSeries.

Resolved lazily, so that the pure window engines (``stream_edge.dataframe.windows``, also used by
Spark workers) import without the Kafka client.
"""

from __future__ import annotations

import importlib
from typing import Any

from .exceptions import *  # noqa: F401,F403

_LAZY = {
    "StreamingDataFrame": "stream_edge.dataframe.dataframe",
    "DataframeRegistry": "stream_edge.dataframe.registry",
    "StreamingSeries": "stream_edge.dataframe.series",
}

__all__ = ("StreamingDataFrame", "StreamingSeries", "DataframeRegistry")


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'stream_edge.dataframe' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value
