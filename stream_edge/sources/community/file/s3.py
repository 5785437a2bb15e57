"""S3FileSource: a FileSource over an S3 bucket (AWS or any S3-compatible server), through pyarrow."""

from __future__ import annotations

import io
import os
from pathlib import Path
from typing import Any, BinaryIO, Callable, Iterable, Optional, Union

from stream_edge.sources.base.source import ClientConnectFailureCallback, ClientConnectSuccessCallback

from .base import FileSource
from .compressions import CompressionName
from .formats import Format, FormatName

__all__ = ("S3FileSource",)


class S3FileSource(FileSource):
    """Produce the records of every object under ``s3://<bucket>/<filepath>``.

    Credentials, region and endpoint default to ``AWS_ACCESS_KEY_ID``, ``AWS_SECRET_ACCESS_KEY``,
    ``AWS_REGION`` and ``AWS_ENDPOINT_URL_S3``.

    Example::

        source = S3FileSource("data/readings", bucket="lake", endpoint_url="http://127.0.0.1:9000",
                              file_format="parquet", replay_speed=0)
        sdf = app.dataframe(source=source)
    """

    def __init__(self, filepath: Union[str, Path], bucket: str, region_name: Optional[str] = None,
                 aws_access_key_id: Optional[str] = None, aws_secret_access_key: Optional[str] = None,
                 endpoint_url: Optional[str] = None, key_setter: Optional[Callable[[object], object]] = None,
                 value_setter: Optional[Callable[[object], object]] = None,
                 timestamp_setter: Optional[Callable[[object], int]] = None, has_partition_folders: bool = False,
                 file_format: Union[Format, FormatName] = "json", compression: Optional[CompressionName] = None,
                 replay_speed: float = 1.0, name: Optional[str] = None, shutdown_timeout: float = 30,
                 on_client_connect_success: Optional[ClientConnectSuccessCallback] = None,
                 on_client_connect_failure: Optional[ClientConnectFailureCallback] = None) -> None:
        if not bucket:
            raise ValueError("S3FileSource needs a bucket name")
        self._bucket = bucket
        self._credentials = {"region": region_name or os.environ.get("AWS_REGION"),
                             "access_key": aws_access_key_id, "secret_key": aws_secret_access_key,
                             "endpoint_url": endpoint_url}
        self._fs: Any = None
        super().__init__(filepath=filepath, key_setter=key_setter, value_setter=value_setter,
                         timestamp_setter=timestamp_setter, file_format=file_format, compression=compression,
                         has_partition_folders=has_partition_folders, replay_speed=replay_speed, name=name,
                         shutdown_timeout=shutdown_timeout, on_client_connect_success=on_client_connect_success,
                         on_client_connect_failure=on_client_connect_failure)

    def _filesystem(self) -> Any:
        if self._fs is None:
            from stream_edge.sinks.storage import s3_filesystem

            creds = self._credentials
            self._fs = s3_filesystem(creds["endpoint_url"], creds["region"], creds["access_key"],
                                     creds["secret_key"])
        return self._fs

    def _object_path(self, filepath: Union[str, Path]) -> str:
        return f"{self._bucket}/{str(filepath).strip('/')}".rstrip("/")

    def setup(self) -> None:
        """Connect and check the bucket exists."""
        from pyarrow import fs as pafs

        info = self._filesystem().get_file_info(self._bucket)
        if info.type == pafs.FileType.NotFound:
            raise FileNotFoundError(f"file source {self.name}: bucket '{self._bucket}' does not exist")

    def get_file_list(self, filepath: Union[str, Path]) -> Iterable[Path]:
        """Object keys (without the bucket) under ``filepath``, in lexicographic order."""
        from pyarrow import fs as pafs

        fs, root = self._filesystem(), self._object_path(filepath)
        info = fs.get_file_info(root)
        if info.type == pafs.FileType.File:
            return [Path(str(filepath).strip("/"))]
        if info.type == pafs.FileType.NotFound:
            raise FileNotFoundError(f"file source {self.name}: s3://{root} does not exist")
        found = fs.get_file_info(pafs.FileSelector(root, recursive=True))
        prefix = f"{self._bucket}/"
        return [Path(f.path[len(prefix):]) for f in sorted(found, key=lambda f: f.path.split("/"))
                if f.type == pafs.FileType.File]

    def read_file(self, filepath: Path) -> BinaryIO:
        # compression=None: the bytes as stored (pyarrow would otherwise gunzip ".gz" by extension)
        with self._filesystem().open_input_stream(self._object_path(filepath), compression=None) as stream:
            return io.BytesIO(stream.readall())

    def file_partition_counter(self) -> int:
        """The number of folders directly under ``filepath``."""
        from pyarrow import fs as pafs

        found = self._filesystem().get_file_info(pafs.FileSelector(self._object_path(self._filepath)))
        return sum(1 for f in found if f.type == pafs.FileType.Directory)
