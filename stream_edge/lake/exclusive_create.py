"""Create a file only if it does not exist yet, atomically: what the commit log's slots and the
registration ledger's batches are made of.

- **Local disk**: :func:`stream_edge.lake.durable.write_atomic` with ``exclusive=True`` (a hidden
  temp file, fsynced, then hard-linked to the name: the link fails if the name exists, and a reader
  never sees a part of the file).
- **S3** (and S3-compatible stores: MinIO, moto): one ``PutObject`` with ``If-None-Match: *``.
  S3 applies the condition atomically; of several writers racing for a key exactly one gets 200,
  the others 412 (or 409 while the winner's PUT is in flight). pyarrow has no conditional PUT, so
  this one request goes through boto3, with the settings of the pyarrow filesystem the writer
  already uses (:meth:`~stream_edge.lake.s3_settings.S3Settings.from_filesystem`).
- Any other filesystem pyarrow opens: a check, then a write. Not atomic: the writer says so once
  at start-up (:attr:`ExclusiveCreator.atomic`).

**A refusal is read back.** botocore retries a PUT that got a 5xx or timed out; when the first
attempt did reach the store, the retry finds the key taken (412, or 409 while the first is still
in flight). So a refused PUT is followed by a read of the key: holding exactly this writer's bytes
(every entry names its writer: the commit record its writer id, a ledger intent its claim token),
the key is this writer's and the create succeeded; other bytes: :class:`FileExistsError`; nothing
yet (a write in flight): ask again, briefly, then an ``OSError`` the caller retries.

**A store must honour ``If-None-Match``.** Before its first create on S3, a creator checks that
the store refuses a second conditional PUT of one key (a probe object under a hidden folder next
to the entries, deleted afterwards); a store that overwrites instead, or rejects the header, gets
:class:`ConditionalWriteUnsupportedError` naming the endpoint: fencing and exclusive batch
claims would be silently off there.

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

import errno
import time
import uuid
from typing import Any, Optional

from .durable import write_atomic
from .s3_settings import S3Settings

__all__ = ("ExclusiveCreator", "ConditionalWriteUnsupportedError", "PROBE_DIR")

# 412: the key exists. 409 ConditionalRequestConflict: a concurrent conditional write of the same
# key is in flight (it will win or fail; either way this request did not create the key).
_TAKEN_CODES = {"PreconditionFailed", "ConditionalRequestConflict", "412", "409"}
# Codes of a store that does not implement conditional writes at all.
_UNSUPPORTED_CODES = {"NotImplemented", "501"}
#: where the start-up probe puts its object, next to the entries (hidden: no reader lists it)
PROBE_DIR = ".if-none-match-probe"
_IN_FLIGHT_WAITS = (0.05, 0.1, 0.2, 0.4, 0.8, 1.6)  # ~3 s for a write in flight to land


class ConditionalWriteUnsupportedError(RuntimeError):
    """The S3 store ignores or rejects ``If-None-Match: *``: no exclusive create is possible there.

    Not an ``OSError``: no retry makes the store honour the condition."""


def _codes(exc: Any) -> set:
    response = getattr(exc, "response", {}) or {}
    return {str(response.get("Error", {}).get("Code", "")),
            str(response.get("ResponseMetadata", {}).get("HTTPStatusCode", ""))}


class ExclusiveCreator:
    """``creator(path, data)`` creates ``path`` (a pyarrow path) with ``data`` or raises
    :class:`FileExistsError`, leaving an existing file untouched. Storage errors are ``OSError``.

    ``data`` must tell this writer's entry from any other writer's (a writer id, a token): a
    refused PUT whose key holds exactly ``data`` was this writer's own retried request."""

    def __init__(self, fs: Any, *, local: bool, fsync: bool = True) -> None:
        self.fs = fs
        self.local = local
        self.fsync = fsync
        self.s3 = not local and getattr(fs, "type_name", "") == "s3"
        #: False where the filesystem offers no conditional create (fencing is then best effort).
        self.atomic = local or self.s3
        self._client: Any = None
        self._verified = False  # the store was seen to honour If-None-Match

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

    # -- S3 -------------------------------------------------------------------------------------
    def _s3_client(self) -> Any:
        if self._client is None:
            self._client = S3Settings.from_filesystem(self.fs).boto3_client()
        return self._client

    def _conditional_put(self, bucket: str, key: str, data: bytes) -> bool:
        """One conditional PUT: True if it created the key, False if the key was taken."""
        from botocore.exceptions import BotoCoreError, ClientError

        rejected = None
        try:
            self._s3_client().put_object(Bucket=bucket, Key=key, Body=data, IfNoneMatch="*")
            return True
        except ClientError as exc:
            codes = _codes(exc)
            if codes & _TAKEN_CODES:
                return False
            if not codes & _UNSUPPORTED_CODES:
                raise OSError(f"conditional PUT of s3://{bucket}/{key} failed: {exc}") from exc
            rejected = str(exc)
        except BotoCoreError as exc:  # connection errors, timeouts: the sink's storage-failure path
            raise OSError(f"conditional PUT of s3://{bucket}/{key} failed: {exc}") from exc
        # Raised outside the handler: the store's 501 is no outage a retry would see end.
        raise self._unsupported("rejects conditional writes", rejected)

    def _held(self, bucket: str, key: str) -> Optional[bytes]:
        """The bytes at ``key``, or None if there is no object (yet)."""
        from botocore.exceptions import BotoCoreError, ClientError

        try:
            return bytes(self._s3_client().get_object(Bucket=bucket, Key=key)["Body"].read())
        except ClientError as exc:
            if _codes(exc) & {"NoSuchKey", "404"}:
                return None
            raise OSError(f"reading back s3://{bucket}/{key} failed: {exc}") from exc
        except BotoCoreError as exc:
            raise OSError(f"reading back s3://{bucket}/{key} failed: {exc}") from exc

    def _put_if_absent(self, path: str, data: bytes) -> None:
        bucket, _, key = path.partition("/")
        if not self._verified:
            self.verify(key.rpartition("/")[0], bucket=bucket)
        if not self._create_or_own(bucket, key, data):
            raise FileExistsError(f"s3://{path}")

    def _create_or_own(self, bucket: str, key: str, data: bytes) -> bool:
        """Conditionally PUT ``data``: True when the key is now this writer's (created, or its own
        earlier attempt was), False when another writer's bytes hold it."""
        for wait in (*_IN_FLIGHT_WAITS, None):
            if self._conditional_put(bucket, key, data):
                return True
            held = self._held(bucket, key)
            if held == data:
                return True  # this writer's own earlier attempt, which botocore retried: the key is ours
            if held is not None:
                return False
            if wait is not None:
                time.sleep(wait)  # refused, yet nothing there: a write of the key is in flight
        raise OSError(errno.EBUSY, f"conditional PUT of s3://{bucket}/{key}: the key was refused as taken but "
                                   "holds nothing; a write of it is still in flight")

    def verify(self, folder: str, *, bucket: str) -> None:
        """Check once that the store refuses a second conditional PUT of one key
        (:class:`ConditionalWriteUnsupportedError` if it does not); ``folder`` is where the entries
        go (the probe object is put under it, in a hidden folder, and deleted afterwards)."""
        token = uuid.uuid4().hex
        probe = f"{folder}/{PROBE_DIR}/{token}".lstrip("/")
        try:
            if not self._create_or_own(bucket, probe, token.encode()):
                raise OSError(errno.EBUSY, f"the probe s3://{bucket}/{probe} holds another writer's bytes")
            if self._conditional_put(bucket, probe, b"second"):
                raise self._unsupported("ignores If-None-Match (a second conditional PUT of one key replaced it)")
        finally:
            try:
                self._s3_client().delete_object(Bucket=bucket, Key=probe)
            except Exception:  # noqa: BLE001 - best effort: the probe is hidden from every reader
                pass
        self._verified = True

    def _unsupported(self, what: str, cause: Any = None) -> ConditionalWriteUnsupportedError:
        endpoint = S3Settings.from_filesystem(self.fs).endpoint_url or "AWS S3"
        detail = f" ({cause})" if cause is not None else ""
        return ConditionalWriteUnsupportedError(
            f"the S3 store at {endpoint} {what}{detail}: the lake's commit log and registration ledger need "
            "conditional writes (If-None-Match: *) to keep two writers from taking one entry; use a store "
            "that supports them (AWS S3, MinIO, moto >= 5.0.14)")
