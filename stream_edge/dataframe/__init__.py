"""StreamingDataFrame and StreamingSeries."""

from .dataframe import StreamingDataFrame
from .exceptions import *  # noqa: F401,F403
from .registry import DataframeRegistry
from .series import StreamingSeries

__all__ = ("StreamingDataFrame", "StreamingSeries", "DataframeRegistry")
