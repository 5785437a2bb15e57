"""Errors raised while building a StreamingDataFrame."""

__all__ = ("InvalidOperation", "GroupByLimitExceeded", "DataFrameLocked", "InvalidColumnReference",
           "ColumnDoesNotExist", "StreamingDataFrameError", "DuplicateStreamingDataFrame",
           "GroupByNestingLimit", "GroupByDuplicate")


class StreamingDataFrameError(Exception):
    """Base of the dataframe errors."""


class InvalidOperation(StreamingDataFrameError):
    """The operation cannot be applied here (e.g. after a terminal sink())."""


class GroupByLimitExceeded(StreamingDataFrameError):
    """group_by() can be applied once per StreamingDataFrame."""


GroupByNestingLimit = GroupByLimitExceeded


class GroupByDuplicate(StreamingDataFrameError):
    """Two group_by() operations share a name."""


class DataFrameLocked(StreamingDataFrameError):
    """The dataframe was composed already and cannot get new operations."""


class InvalidColumnReference(StreamingDataFrameError):
    """A column expression refers to another StreamingDataFrame."""


class ColumnDoesNotExist(StreamingDataFrameError):
    """A column is missing from the value."""


class DuplicateStreamingDataFrame(StreamingDataFrameError):
    """Two StreamingDataFrames consume the same topic."""
