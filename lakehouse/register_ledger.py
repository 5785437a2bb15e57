"""The registration ledger as the ``lakehouse register`` job opens it: from a table root's URI.

The ledger's format, its exclusive batch claims (a link on a local disk, a conditional PUT on S3)
and the registration protocol are the edge's (:mod:`stream_edge.lake.registration_ledger`,
:mod:`stream_edge.lake.registrar`), one implementation for both registration paths: the job and
the data-lake sink's ``register_in_catalog``. This module only opens it from a
:class:`~lakehouse.lake_files.LakeLocation`, with the store's settings the edge resolves too.

Example::

    ledger = open_ledger(LakeLocation.parse("/lake/t"), table_key)
    pending = [b for b in ledger.batches() if not b.done and b.writer == JOB_WRITER]
"""

from __future__ import annotations

from lakehouse.lake_files import LakeLocation
from stream_edge.lake.registration_ledger import (JOB_BATCH_PROPERTY, JOB_WRITER, LEDGER_DIR, LedgerBatch,
                                                  LedgerError, RegistrationLedger)

__all__ = ("open_ledger", "RegistrationLedger", "LedgerBatch", "LedgerError", "LEDGER_DIR", "JOB_WRITER",
           "JOB_BATCH_PROPERTY")


def open_ledger(root: LakeLocation, table_key: str) -> RegistrationLedger:
    """The ledger of (edge table root ``root``, target table ``table_key``)."""
    fs, base = root.filesystem()
    return RegistrationLedger(fs, base, table_key, local=root.is_local)
