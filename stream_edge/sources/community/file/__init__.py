"""File sources (``quixstreams.sources.community.file`` paths): ``base.FileSource``,
``local.LocalFileSource``, ``s3.S3FileSource``; ``formats`` and ``compressions``.

``FileSource`` is also importable from this package. Example::

    from stream_edge.sources.community.file.local import LocalFileSource
"""

from .base import FileSource

__all__ = ("FileSource",)
