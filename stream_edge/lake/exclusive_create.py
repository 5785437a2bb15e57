"""Create a file only if it does not exist yet, atomically: what the commit log's slots are made of.

- **Local disk**: :func:`stream_edge.lake.durable.write_atomic` with ``exclusive=True`` (a hidden
  temp file, fsynced, then hard-linked to the name: the link fails if the name exists, and a reader
  never sees a part of the file).
- **S3** (and S3-compatible stores: MinIO, moto): one ``PutObject`` with ``If-None-Match: *``.
  S3 applies the condition atomically; of several writers racing for a key exactly one gets 200,
  the others 412 (or 409 while the winner's PUT is in flight). pyarrow has no conditional PUT, so
  this one request goes through boto3, with the endpoint, region and credentials of the pyarrow
  filesystem the sink already uses.
- Any other filesystem pyarrow opens: a check, then a write. Not atomic: the writer says so once
  at start-up (:attr:`ExclusiveCreator.atomic`).

Example::

    >>> import tempfile, pyarrow.fs as pafs
    >>> folder = tempfile.mkdtemp()
    >>> create = ExclusiveCreator(pafs.LocalFileSystem(), local=True, fsync=False)
    >>> create(f"{folder}/slot.json", b"first")
    >>> try:
    ...     create(f"{folder}/slot.json", b"second")
    ... except FileExistsError:
    ...     print("taken")
    taken
"""

from __future__ import annotations

from typing import Any, Dict

from .durable import write_atomic

__all__ = ("ExclusiveCreator", "s3_client_for")

# 412: the key exists. 409 ConditionalRequestConflict: a concurrent conditional write of the same
# key is in flight (it will win or fail; either way this one did not create the key).
_TAKEN_CODES = {"PreconditionFailed", "ConditionalRequestConflict", "412", "409"}


def s3_client_for(fs: Any) -> Any:
    """A boto3 S3 client with the endpoint, region and credentials of a pyarrow ``S3FileSystem``."""
    try:
        import boto3
    except ImportError as exc:
        raise ImportError("the data-lake sink on S3 creates its commit records with a conditional PUT, "
                          "which needs boto3: pip install 'streaming-lakehouse[edge]'") from exc
    # An S3FileSystem pickles as its constructor's keyword arguments: the one public way to read
    # back the endpoint and credentials it was built with.
    settings: Dict[str, Any] = fs.__reduce__()[1][0]
    kwargs: Dict[str, Any] = {"region_name": settings.get("region") or None}
    endpoint = settings.get("endpoint_override")
    if endpoint:
        scheme = settings.get("scheme") or "https"
        kwargs["endpoint_url"] = endpoint if "://" in endpoint else f"{scheme}://{endpoint}"
    if settings.get("access_key"):
        kwargs.update(aws_access_key_id=settings["access_key"], aws_secret_access_key=settings.get("secret_key"),
                      aws_session_token=settings.get("session_token") or None)
    return boto3.client("s3", **kwargs)


class ExclusiveCreator:
    """``creator(path, data)`` creates ``path`` (a pyarrow path) with ``data`` or raises
    :class:`FileExistsError`, leaving an existing file untouched. Storage errors are ``OSError``."""

    def __init__(self, fs: Any, *, local: bool, fsync: bool = True) -> None:
        self.fs = fs
        self.local = local
        self.fsync = fsync
        self.s3 = not local and getattr(fs, "type_name", "") == "s3"
        #: False where the filesystem offers no conditional create (fencing is then best effort).
        self.atomic = local or self.s3
        self._client: Any = None

    def __call__(self, path: str, data: bytes) -> None:
        if self.local:
            write_atomic(path, data, fsync=self.fsync, exclusive=True)
        elif self.s3:
            self._put_if_absent(path, data)
        else:
            from pyarrow import fs as pafs

            if self.fs.get_file_info(path).type != pafs.FileType.NotFound:
                raise FileExistsError(path)
            with self.fs.open_output_stream(path) as stream:
                stream.write(data)

    def _put_if_absent(self, path: str, data: bytes) -> None:
        from botocore.exceptions import BotoCoreError, ClientError

        if self._client is None:
            self._client = s3_client_for(self.fs)
        bucket, _, key = path.partition("/")
        try:
            self._client.put_object(Bucket=bucket, Key=key, Body=data, IfNoneMatch="*")
        except ClientError as exc:
            code = str(exc.response.get("Error", {}).get("Code", ""))
            status = str(exc.response.get("ResponseMetadata", {}).get("HTTPStatusCode", ""))
            if code in _TAKEN_CODES or status in _TAKEN_CODES:
                raise FileExistsError(f"s3://{path}") from None
            raise OSError(f"conditional PUT of s3://{path} failed: {exc}") from exc
        except BotoCoreError as exc:  # connection errors, timeouts: the sink's storage-failure path
            raise OSError(f"conditional PUT of s3://{path} failed: {exc}") from exc
