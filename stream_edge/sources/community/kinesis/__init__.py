"""Amazon Kinesis source (``quixstreams.sources.community.kinesis`` path): ``KinesisSource``.

Needs the ``edge-kinesis`` extra (``pip install streaming-lakehouse[edge-kinesis]``); the package
imports without it and constructing the source without it raises ``ImportError`` naming the extra.
"""

from .kinesis import KinesisSource

__all__ = ("KinesisSource",)
