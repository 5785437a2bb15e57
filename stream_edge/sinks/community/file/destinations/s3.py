"""S3 destination of the file sink (any S3 endpoint), through pyarrow's S3 filesystem."""

from __future__ import annotations

from os import getenv
from typing import Any, Optional

from stream_edge.sinks.base import SinkBatch
from stream_edge.sinks.storage import s3_filesystem

from .base import Destination

__all__ = ("S3Destination", "S3BucketNotFoundError", "S3BucketAccessDeniedError")


class S3BucketNotFoundError(Exception):
    """Raised when the specified S3 bucket does not exist."""


class S3BucketAccessDeniedError(Exception):
    """Raised when the specified S3 bucket access is denied."""


class S3Destination(Destination):
    """Writes each batch as one object ``<directory>/<topic>/<partition>/<start offset><ext>``.

    :param bucket: bucket name.
    :param aws_access_key_id: default ``AWS_ACCESS_KEY_ID``.
    :param aws_secret_access_key: default ``AWS_SECRET_ACCESS_KEY``.
    :param region_name: default ``AWS_REGION`` or ``AWS_DEFAULT_REGION``.
    :param kwargs: ``endpoint_url`` (default ``AWS_ENDPOINT_URL_S3``/``AWS_ENDPOINT_URL``) for
        S3-compatible servers; ``aws_session_token``.

    Example::

        FileSink(directory="raw", format="parquet",
                 destination=S3Destination("lake", endpoint_url="http://127.0.0.1:9000"))
    """

    def __init__(
        self,
        bucket: str,
        aws_access_key_id: Optional[str] = getenv("AWS_ACCESS_KEY_ID"),
        aws_secret_access_key: Optional[str] = getenv("AWS_SECRET_ACCESS_KEY"),
        region_name: Optional[str] = getenv("AWS_REGION", getenv("AWS_DEFAULT_REGION")),
        **kwargs: Any,
    ) -> None:
        super().__init__()
        from pyarrow import fs as pafs

        self._bucket = bucket
        self._fs = s3_filesystem(
            endpoint_url=kwargs.pop("endpoint_url", None), region=region_name,
            access_key=aws_access_key_id, secret_key=aws_secret_access_key,
            session_token=kwargs.pop("aws_session_token", None),
        )
        if kwargs:
            raise TypeError(f"unexpected S3Destination arguments: {sorted(kwargs)}")
        try:
            info = self._fs.get_file_info(bucket)
        except OSError as exc:
            if "ACCESS_DENIED" in str(exc).upper() or "403" in str(exc):
                raise S3BucketAccessDeniedError(f"access to S3 bucket {bucket!r} denied") from exc
            raise
        if info.type == pafs.FileType.NotFound:
            raise S3BucketNotFoundError(f"S3 bucket {bucket!r} does not exist")

    def write(self, data: bytes, batch: SinkBatch) -> None:
        # One PUT: the object appears whole or not at all.
        with self._fs.open_output_stream(f"{self._bucket}/{self._batch_path(batch)}") as stream:
            stream.write(data)
