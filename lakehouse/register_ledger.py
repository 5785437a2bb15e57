"""The register job's side of the registration ledger (``stream_edge.lake.registration_ledger``).

The ledger itself is pure and shared with the data-lake sink's optional registration; this module
opens it from a :class:`~lakehouse.lake_files.LakeLocation` (local disk or S3).

Example::

    ledger = RegistrationLedger(LakeLocation.parse("/lake/t"), table_key)
    pending = [b for b in ledger.batches() if not b.done and b.writer == JOB_WRITER]
"""

from __future__ import annotations

from lakehouse.lake_files import LakeLocation
from stream_edge.lake import registration_ledger as _core
from stream_edge.lake.registration_ledger import (JOB_BATCH_PROPERTY, JOB_WRITER, LEDGER_DIR, LedgerBatch,
                                                  LedgerError)

__all__ = ("RegistrationLedger", "LedgerBatch", "LedgerError", "LEDGER_DIR", "JOB_WRITER", "JOB_BATCH_PROPERTY")


class RegistrationLedger(_core.RegistrationLedger):
    """The ledger of (edge table root ``root``, target table ``table_key``)."""

    def __init__(self, root: LakeLocation, table_key: str) -> None:
        fs, base = root.filesystem()
        super().__init__(fs, base, table_key, local=root.is_local)
        self.root = root
