"""The registration ledger as both registration paths open it: exclusive batch claims everywhere.

The ledger's format and protocol are ``stream_edge.lake.registration_ledger`` (pure, shared with
the edge). This module adds what makes two concurrent writers safe on object storage, and is the
one ledger class both writers use: the ``lakehouse register`` job (:class:`RegistrationLedger`,
opened from a :class:`~lakehouse.lake_files.LakeLocation`) and the data-lake sink's
``register_in_catalog`` (:class:`ClaimingLedger`, opened from the sink's pyarrow filesystem).

**Exclusive claims.** A batch number is claimed by creating ``batch-NNNNNN.json``. On a local disk
that is an exclusive link (the core's behaviour). On S3 the core does check-then-PUT, so two writers
could both "claim" batch N, the second PUT replacing the first writer's intent, and the first writer
would then commit the second one's files as its own: duplicate rows. Here the intent is written
with a conditional PUT (``If-None-Match: *``, S3 since 2024, MinIO, moto >= 5.0.14): exactly one
writer creates batch N, the other gets :class:`LedgerError` and retries at the next number.

Because every writer claims ``max + 1`` of what it listed, batch N exists before anyone creates
N+1: numbers are created in order, so when a writer computes which files its batch owns (files
listed by no lower batch), every lower batch is already visible. That makes ``owned_files`` a
consistent tie-break: a file recorded by two writers is committed by exactly one.

**Files that are gone.** A compaction deletes edge files its table owns once they are rewritten,
and the checkpoint forgets deleted paths. :meth:`ClaimingLedger.missing` lets a writer drop such
paths from a batch instead of retrying a missing file forever.

Example::

    ledger = RegistrationLedger(LakeLocation.parse("/lake/t"), table_key)
    pending = [b for b in ledger.batches() if not b.done and b.writer == JOB_WRITER]
"""

from __future__ import annotations

import json
import logging
from datetime import datetime, timezone
from typing import Any, List

from lakehouse.lake_files import LakeLocation
from stream_edge.lake import registration_ledger as _core
from stream_edge.lake.registration_ledger import (JOB_BATCH_PROPERTY, JOB_WRITER, LEDGER_DIR, LedgerBatch,
                                                  LedgerError)

__all__ = ("ClaimingLedger", "RegistrationLedger", "LedgerBatch", "LedgerError", "LEDGER_DIR", "JOB_WRITER",
           "JOB_BATCH_PROPERTY", "s3_client_for")

log = logging.getLogger("lakehouse.register")

# S3 answers a conditional create that lost the race with 412; a concurrent conditional write
# still in flight gives 409 ConditionalRequestConflict. Either way the number is not ours.
_TAKEN = {"PreconditionFailed", "ConditionalRequestConflict", "412", "409"}


def s3_client_for(fs: Any) -> Any:
    """A boto3 S3 client with the endpoint, region and credentials of a pyarrow ``S3FileSystem``.

    pyarrow has no conditional PUT; the client is only used for that one request.
    """
    try:
        import boto3
    except ImportError as exc:  # pragma: no cover - boto3 is in the dev extra (and the AWS images)
        raise LedgerError("registering on S3 needs boto3 (exclusive batch claims use a conditional "
                          "PUT): pip install boto3") from exc
    settings = fs.__reduce__()[1][0]  # the keyword arguments the filesystem was built with
    kwargs: dict[str, Any] = {"region_name": settings.get("region") or None}
    endpoint = settings.get("endpoint_override")
    if endpoint:
        kwargs["endpoint_url"] = endpoint if "://" in endpoint else f"{settings.get('scheme') or 'https'}://{endpoint}"
    if settings.get("access_key"):
        kwargs.update(aws_access_key_id=settings["access_key"], aws_secret_access_key=settings.get("secret_key"),
                      aws_session_token=settings.get("session_token") or None)
    return boto3.client("s3", **kwargs)


class ClaimingLedger(_core.RegistrationLedger):
    """The registration ledger of one (edge table root, target table), with exclusive claims.

    ``fs`` is a pyarrow filesystem, ``base`` the edge table root inside it (``bucket/prefix`` on
    S3), ``local`` whether it is a local disk.
    """

    _client: Any = None

    def write_intent(self, number: int, files: List[str], table: str, writer: str = JOB_WRITER) -> LedgerBatch:
        """Durably and exclusively record batch ``number`` (:class:`LedgerError` if it is taken)."""
        if self.local or getattr(self.fs, "type_name", "") != "s3":
            return super().write_intent(number, files, table, writer)
        doc = {"batch": number, "table": table, "writer": writer, "files": files,
               "written_at": datetime.now(timezone.utc).isoformat(timespec="seconds")}
        bucket, _, key = self._path(number, "json").partition("/")
        if self._client is None:
            self._client = s3_client_for(self.fs)
        from botocore.exceptions import ClientError

        try:
            self._client.put_object(Bucket=bucket, Key=key, Body=json.dumps(doc, indent=0).encode(), IfNoneMatch="*")
        except ClientError as exc:
            error = exc.response.get("Error", {})
            status = str(exc.response.get("ResponseMetadata", {}).get("HTTPStatusCode", ""))
            if str(error.get("Code")) in _TAKEN or status in _TAKEN:
                raise LedgerError(f"registration batch {number} already exists in {self.dir}: another writer "
                                  "claimed it first") from None
            raise
        return LedgerBatch(number, tuple(files), False, writer)

    def batches(self) -> List[LedgerBatch]:
        """Every batch in number order; retried when a concurrent checkpoint folds the batch files
        being read (they are deleted once the checkpoint that replaces them is written)."""
        for attempt in range(3):
            try:
                return super().batches()
            except LedgerError:
                if attempt == 2:
                    raise
        raise AssertionError("unreachable")


class RegistrationLedger(ClaimingLedger):
    """The ledger of (edge table root ``root``, target table ``table_key``), for the register job."""

    def __init__(self, root: LakeLocation, table_key: str) -> None:
        fs, base = root.filesystem()
        super().__init__(fs, base, table_key, local=root.is_local)
        self.root = root
