"""Shared type aliases (``stream_edge.types``)."""

from stream_edge.models.types import Headers, HeadersMapping, HeadersTuples, HeadersValue  # noqa: F401

__all__ = ("Headers", "HeadersMapping", "HeadersTuples", "HeadersValue")
