"""``S3FileSink`` (Quix Streams 3.28's ``quixstreams.sinks.community.file.s3``): a
:class:`~stream_edge.sinks.community.file.sink.FileSink` writing one object per batch to an S3
bucket (any S3 endpoint), connecting in ``setup()`` so the connect callbacks see failures."""

from __future__ import annotations

from os import getenv
from typing import Any, Optional, Union

from stream_edge.sinks.base import SinkBatch
from stream_edge.sinks.base.sink import ClientConnectFailureCallback, ClientConnectSuccessCallback

from .destinations.base import Destination
from .destinations.s3 import S3BucketAccessDeniedError, S3BucketNotFoundError, S3Destination
from .formats import Format, FormatName
from .sink import FileSink

__all__ = ("S3FileSink", "S3BucketNotFoundError", "S3BucketAccessDeniedError")


class S3FileSink(FileSink):
    """Writes each checkpoint's batch of a topic partition as ``<directory>/<topic>/<partition>/<offset><ext>``.

    :param bucket: bucket name (it must exist: ``S3BucketNotFoundError`` in ``setup()``).
    :param aws_access_key_id: default ``AWS_ACCESS_KEY_ID``. :param aws_secret_access_key: default
        ``AWS_SECRET_ACCESS_KEY``. :param region_name: default ``AWS_REGION`` / ``AWS_DEFAULT_REGION``.
    :param endpoint_url: an S3-compatible server (default ``AWS_ENDPOINT_URL_S3``).
    :param kwargs: ``aws_session_token``.

    Example::

        sdf.sink(S3FileSink(bucket="lake", directory="raw", format="parquet"))
    """

    def __init__(self, bucket: str, aws_access_key_id: Optional[str] = getenv("AWS_ACCESS_KEY_ID"),
                 aws_secret_access_key: Optional[str] = getenv("AWS_SECRET_ACCESS_KEY"),
                 region_name: Optional[str] = getenv("AWS_REGION", getenv("AWS_DEFAULT_REGION")),
                 endpoint_url: Optional[str] = getenv("AWS_ENDPOINT_URL_S3"), directory: str = "",
                 format: Union[FormatName, Format] = "json",  # noqa: A002 - Quix API name
                 on_client_connect_success: Optional[ClientConnectSuccessCallback] = None,
                 on_client_connect_failure: Optional[ClientConnectFailureCallback] = None,
                 **kwargs: Any) -> None:
        settings = dict(bucket=bucket, aws_access_key_id=aws_access_key_id,
                        aws_secret_access_key=aws_secret_access_key, region_name=region_name,
                        endpoint_url=endpoint_url, **kwargs)
        super().__init__(directory=directory, format=format, destination=_LazyS3(settings))
        self._on_client_connect_success = on_client_connect_success
        self._on_client_connect_failure = on_client_connect_failure

    def setup(self) -> None:
        """Connect and check the bucket (``S3BucketNotFoundError`` / ``S3BucketAccessDeniedError``)."""
        self._destination.connect()  # type: ignore[attr-defined]


class _LazyS3(Destination):
    """An S3Destination created at ``connect()`` (so construction needs no server), given the
    directory and file format this destination was set up with."""

    def __init__(self, settings: dict) -> None:
        super().__init__()
        self._settings = settings
        self._format: Optional[Format] = None
        self._s3: Optional[S3Destination] = None

    def set_extension(self, format: Format) -> None:  # noqa: A002 - v3 API name
        super().set_extension(format)
        self._format = format

    def connect(self) -> None:
        if self._s3 is None:
            s3 = S3Destination(**self._settings)
            s3.set_directory(self._directory)
            if self._format is not None:
                s3.set_extension(self._format)
            self._s3 = s3

    def write(self, data: bytes, batch: SinkBatch) -> None:
        self.connect()
        assert self._s3 is not None
        self._s3.write(data, batch)
