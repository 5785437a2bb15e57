"""Errors of the stream tree (``stream_edge.core.stream.exceptions``, Quix's module path)."""

from stream_edge.exceptions.base import QuixException

__all__ = ("InvalidTopology", "InvalidOperation")


class InvalidTopology(QuixException):
    """The stream tree cannot be composed (e.g. a branch without a parent)."""


class InvalidOperation(QuixException):
    """The operation cannot be applied here (series of different dataframes, ``bool()`` of a
    series, an operation after a terminal ``sink()``, ...)."""
