"""Errors raised while building a StreamingDataFrame."""

from stream_edge.core.stream.exceptions import InvalidOperation as _StreamInvalidOperation
from stream_edge.exceptions.base import QuixException

__all__ = ("InvalidOperation", "GroupByLimitExceeded", "DataFrameLocked", "InvalidColumnReference",
           "ColumnDoesNotExist", "StreamingDataFrameError", "DuplicateStreamingDataFrame",
           "GroupByNestingLimit", "GroupByDuplicate")


class StreamingDataFrameError(QuixException):
    """Base of the dataframe errors."""


class InvalidOperation(StreamingDataFrameError, _StreamInvalidOperation):
    """The operation cannot be applied here (e.g. after a terminal sink()); also caught as
    ``stream_edge.core.stream.exceptions.InvalidOperation``, the class Quix raises."""


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
