"""The registration protocol, once: claim a batch -> the files it owns -> commit -> mark it done.

Both registration paths run it over one :class:`~stream_edge.lake.registration_ledger.RegistrationLedger`:
the ``lakehouse register`` job (one writer, ``job``) and the data-lake sink's inline registrar
(one writer per edge partition, ``edge:<topic>:<partition>``, several partitions in one table
commit). Only the table side differs, and it comes in as a callback: ``commit(claims)`` puts the
claims' files into the table together with each writer's last-batch property, idempotently (a
batch whose number the table already holds is not committed again).

- **claim**: record the files under the next free number (:meth:`Registrar.claim`). A number
  taken by *another* writer is skipped (at most :data:`CLAIM_ATTEMPTS` times); one taken by the
  same writer means two instances of one writer work on the table at once (two register runs, or
  a stale edge instance and its replacement): :class:`LedgerError`, nothing is committed.
- **own**: a file listed by two batches is committed by the lower one only; a file that no longer
  exists (compacted and deleted) is dropped with a warning, never retried forever
  (:meth:`Registrar.present`).
- **commit, then done**: the batch's done marker is written only after the commit; a crash in
  between leaves a pending batch that only its own writer finishes (:meth:`Registrar.resume`),
  asking the table whether the commit happened.
- **fold**: the leading done batches are folded into a checkpoint after each registration
  (:meth:`RegistrationLedger.checkpoint`), so every writer's reads stay bounded.

Example::

    >>> import tempfile, pyarrow.fs as pafs
    >>> from stream_edge.lake.registration_ledger import RegistrationLedger
    >>> ledger = RegistrationLedger(pafs.LocalFileSystem(), tempfile.mkdtemp(), "iceberg-1", local=True)
    >>> registrar = Registrar(ledger, "lake.db.t")
    >>> table = []
    >>> [c.number for c in registrar.register([("job", ["d=1/a.parquet"])], table.extend)]
    [1]
    >>> [(c.number, c.writer, c.files) for c in table], ledger.batches()[0].done
    ([(1, 'job', ('d=1/a.parquet',))], True)
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Callable, Iterable, List, Optional, Sequence, Set, Tuple

from .registration_ledger import LedgerError, RegistrationLedger

__all__ = ("Claim", "Registrar", "CLAIM_ATTEMPTS")

logger = logging.getLogger("stream_edge.lake.registrar")

#: numbers a writer tries before giving up (every loss is another writer's claim of that number)
CLAIM_ATTEMPTS = 50


@dataclass(frozen=True)
class Claim:
    """One claimed batch: its number, its writer and the files it commits (those it owns)."""

    number: int
    writer: str
    files: Tuple[str, ...]


class Registrar:
    """The claim -> own -> commit -> done protocol of one table over its ledger."""

    def __init__(self, ledger: RegistrationLedger, table: str) -> None:
        self.ledger = ledger
        self.table = table

    def unregistered(self, paths: Iterable[str], *, known: Optional[Set[str]] = None,
                     check_present: bool = False) -> List[str]:
        """The paths no batch records (``known``: what :meth:`RegistrationLedger.registered` gave,
        read once for several calls); with ``check_present``, only those that still exist (a
        writer that re-registers an old commit may name files compaction deleted since)."""
        known = self.ledger.registered() if known is None else known
        new = [path for path in paths if path not in known]
        if check_present and new:
            gone = set(self.ledger.missing(new))
            if gone:
                logger.info("%s: %d file(s) no longer exist (compacted); not registering them",
                            self.table, len(gone))
                new = [path for path in new if path not in gone]
        return new

    def claim(self, writer: str, files: Sequence[str]) -> Claim:
        """Record ``files`` as ``writer``'s next batch; returns it with the files it owns."""
        for _ in range(CLAIM_ATTEMPTS):
            number = self.ledger.next_number()
            try:
                self.ledger.write_intent(number, list(files), self.table, writer=writer)
            except LedgerError:
                holder = self.ledger.writer_of(number)
                if holder == writer:
                    raise LedgerError(f"registration batch {number} of {self.table} was claimed by another "
                                      f"{writer!r} writer: another register run, or another instance of the "
                                      "same edge partition, is registering this table") from None
                logger.info("batch number %d of %s was taken by %s; trying the next one", number, self.table,
                            holder or "a writer whose batch was folded meanwhile")
                continue
            return Claim(number, writer, tuple(self.ledger.owned_files(number)))
        raise LedgerError(f"could not record a registration batch in {self.ledger.dir} after {CLAIM_ATTEMPTS} "
                          "attempts: too many concurrent writers")

    def present(self, claim: Claim) -> Claim:
        """The claim without the files that no longer exist (named in a warning)."""
        gone = set(self.ledger.missing(claim.files))
        if not gone:
            return claim
        logger.warning("batch %d of %s: %d file(s) no longer exist and are skipped: %s", claim.number, self.table,
                       len(gone), ", ".join(sorted(gone)[:5]) + (" ..." if len(gone) > 5 else ""))
        return Claim(claim.number, claim.writer, tuple(f for f in claim.files if f not in gone))

    def done(self, claims: Iterable[Claim]) -> None:
        for claim in claims:
            self.ledger.mark_done(claim.number)

    def register(self, requests: Sequence[Tuple[str, Sequence[str]]],
                 commit: Callable[[List[Claim]], None], *, check_present: bool = False) -> List[Claim]:
        """Claim a batch per ``(writer, files)``, commit them in ONE ``commit(claims)`` (the claims
        with a file to add), mark them done; returns every claim made."""
        claims = [self.claim(writer, files) for writer, files in requests if files]
        todo = [self.present(c) if check_present else c for c in claims]
        todo = [c for c in todo if c.files]  # every file owned by a lower batch (or gone)
        if todo:
            commit(todo)
        self.done(claims)
        return claims

    def resume(self, writer: str, committed: Callable[[int], bool],
               commit: Callable[[List[Claim]], None]) -> List[Claim]:
        """Finish ``writer``'s batches a crash left pending: a batch the table already holds
        (``committed(number)``) is only marked done, the others are committed first (one
        ``commit`` per batch). Another writer's pending batches are that writer's to finish."""
        finished: List[Claim] = []
        for batch in self.ledger.batches():
            if batch.done or batch.writer != writer:
                continue
            if committed(batch.number):
                # Do not touch the files: a compaction since the commit may have replaced them.
                logger.info("batch %d of %s was committed before a crash cut off its done marker", batch.number,
                            self.table)
                claim = Claim(batch.number, writer, ())
            else:
                claim = self.present(Claim(batch.number, writer, tuple(self.ledger.owned_files(batch.number))))
                logger.info("finishing batch %d of %s (%d files) left pending by a crash", batch.number,
                            self.table, len(claim.files))
                if claim.files:
                    commit([claim])
            self.ledger.mark_done(batch.number)
            finished.append(claim)
        return finished

    def fold(self, existing: Optional[Set[str]] = None,
             listed: Optional[Callable[[str], bool]] = None) -> Optional[int]:
        """Fold the leading done batches into a checkpoint (see :meth:`RegistrationLedger.checkpoint`)."""
        folded = self.ledger.checkpoint(existing, listed=listed)
        if folded:
            logger.info("registration ledger of %s: batches up to %d folded", self.table, folded)
        return folded
