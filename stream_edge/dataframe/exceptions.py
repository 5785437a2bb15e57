"""Errors raised while building a StreamingDataFrame."""

from stream_edge.core.stream.exceptions import InvalidOperation
from stream_edge.exceptions.base import QuixException

__all__ = ("InvalidOperation", "GroupByLimitExceeded", "DataFrameLocked", "InvalidColumnReference",
           "ColumnDoesNotExist", "StreamingDataFrameError", "DuplicateStreamingDataFrame",
           "GroupByNestingLimit", "GroupByDuplicate")


class StreamingDataFrameError(QuixException):
    """Base of the dataframe errors."""


# InvalidOperation is the stream tree's class (``core.stream.exceptions``), the one Quix Streams
# raises from both places: ``Stream.diff`` and the dataframe raise the same class.


class GroupByLimitExceeded(StreamingDataFrameError):
    """group_by() can be applied once per StreamingDataFrame."""


GroupByNestingLimit = GroupByLimitExceeded


class GroupByDuplicate(StreamingDataFrameError):
    """Two group_by() operations share a name."""


class DataFrameLocked(StreamingDataFrameError):
    """The dataframe was composed already and cannot get new operations."""


class InvalidColumnReference(StreamingDataFrameError):
    """A column is read from a value that is not a dict (or a dict-like)."""


class ColumnDoesNotExist(StreamingDataFrameError):
    """A column is missing from the value."""


class DuplicateStreamingDataFrame(StreamingDataFrameError):
    """Two StreamingDataFrames consume the same topic."""
