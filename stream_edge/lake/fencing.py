"""Who may write a partition's commit log: owner epochs and conditional slots (pure decisions).

Kafka hands a partition to one consumer at a time, but a consumer that stalls (a slow flush, a
long GC pause, a frozen VM) past the group's session timeout loses its partitions without
knowing it, and may wake up in the middle of a lake commit while the new owner writes the same
partition. Without fencing it could still write its commit record, and the new owner, cleaning up
the staging area, could delete files that commit then references.

The rules, with the commit log as a sequence of slots each created only if absent:

- **Ownership is claimed in the log.** On its first flush after the partition was assigned, a
  writer creates the next slot with a ``claim`` record: a copy of the newest commit with an epoch
  one above the newest entry's (:func:`claim_record`). Epochs only grow along the slots, so the
  newest entry's epoch names the current owner.
- **A commit goes into the slot after the one the writer read, and only if absent.** Of two
  writers that read the same newest slot, exactly one creates the next (:func:`conflict_outcome`
  tells a lost race from a retried write of our own). A writer that read an entry of a newer
  epoch than its own has lost the partition (:func:`check_owner`): it commits nothing.
- Hence once a claim is in the log, no writer of an older epoch can commit again: the slot it
  would write is taken (by the claim or something after it), and any later read shows it the newer
  epoch. So the owner may delete every staged file of an older epoch (or its own) that the newest
  commit does not list, and never touches files of a newer epoch
  (:func:`stream_edge.lake.commit_log.plan_recovery` with ``owner_epoch``).
- **An owner's log never goes empty.** Its claim is in the log, and pruning keeps the newest
  entry, so a writer that owns a partition and finds no entry at all is not looking at its log
  any more: the lake volume was unmounted (the bare mount point is empty), or the table folder
  was removed or replaced. Starting again at slot 0 there would commit offsets the real log
  already holds (or will, once the volume is back) and write a second, diverging history:
  :func:`check_owner` raises :class:`CommitLogVanishedError` (an ``OSError``, ENOENT: storage is
  retried with backoff, nothing is written until the log is back).

A stale writer's commit that lands *before* the new owner's claim is a legitimate commit (it owned
the slot it wrote): the new owner reads it, publishes its files and skips its offsets, and the
stale writer's Kafka offset commit fails (its group generation is gone), so every record is in the
lake once. Exactly once holds because each commit's offsets are decided from the slot below it.

Why a per-assignment epoch kept in the log, not the consumer group generation: the generation is
not exposed by the consumer API the sink sees, restarts from 0 when a group is deleted or renamed
(the lake would then fence every new writer forever), and is unrelated between two applications
writing one table by mistake. An epoch kept next to the commits it orders needs nothing but the
storage the commits already need.

Example::

    >>> from stream_edge.lake.commit_log import CommitRecord
    >>> commit = CommitRecord("t", 0, 0, 9, epoch=1, writer="a")
    >>> claim = claim_record("t", 0, commit, writer="b", now_ms=0)
    >>> (claim.kind, claim.epoch, claim.last_offset)
    ('claim', 2, 9)
    >>> check_owner("t", 0, claim, own_epoch=1)
    Traceback (most recent call last):
    ...
    stream_edge.lake.fencing.CommitFencedError: t[0]: this writer (epoch 1) no longer owns the partition: writer b took it with epoch 2 (a rebalance moved it while this writer stalled); its records are not committed and will be written once by the new owner
"""

from __future__ import annotations

import dataclasses
import errno
from typing import Optional

from .commit_log import CLAIM, COMMIT, FORMAT_VERSION, CommitRecord
from .naming import commit_dir

__all__: tuple[str, ...] = ("CommitFencedError", "CommitLogVanishedError", "next_slot", "claim_record",
                             "check_owner", "effective_commit", "conflict_outcome", "OURS", "FENCED",
                             "RETRY_CLAIM")

OURS, FENCED, RETRY_CLAIM = "ours", "fenced", "retry-claim"


class CommitFencedError(RuntimeError):
    """A writer tried to commit a partition that a newer owner has claimed in the commit log."""

    def __init__(self, topic: str, partition: int, own_epoch: int, owner_epoch: int, owner: str) -> None:
        self.topic, self.partition = topic, partition
        self.own_epoch, self.owner_epoch, self.owner = own_epoch, owner_epoch, owner
        super().__init__(
            f"{topic}[{partition}]: this writer (epoch {own_epoch}) no longer owns the partition: writer "
            f"{owner or '?'} took it with epoch {owner_epoch} (a rebalance moved it while this writer "
            "stalled); its records are not committed and will be written once by the new owner")


class CommitLogVanishedError(FileNotFoundError):
    """A writer that owns a partition found its commit log empty: the log is not where it was
    (a lake volume unmounted, a table folder removed or replaced), so nothing may be written there.

    An ``OSError`` with ENOENT, so storage-fault handling retries it with backoff: once the
    volume is back the log is found again and the writer goes on from its newest slot."""

    def __init__(self, topic: str, partition: int, own_epoch: int, log_dir: str) -> None:
        self.topic, self.partition, self.own_epoch, self.log_dir = topic, partition, own_epoch, log_dir
        super().__init__(
            errno.ENOENT,
            f"{topic}[{partition}]: the commit log {log_dir} vanished while this writer owns the partition "
            f"(epoch {own_epoch}, so the log held at least its claim): the lake volume was unmounted or the "
            "table folder removed or replaced; not starting a new log there (it would commit a second "
            "history from slot 0); nothing is written until the log is back",
            log_dir)

    def __str__(self) -> str:
        return str(self.args[1])


def next_slot(latest_slot: Optional[int]) -> int:
    """The slot the next entry goes to (0 for an empty log)."""
    return 0 if latest_slot is None else latest_slot + 1


def claim_record(topic: str, partition: int, latest: Optional[CommitRecord], writer: str,
                 now_ms: int) -> CommitRecord:
    """The claim a new owner writes on top of the newest entry ``latest`` (None: an empty log).

    It repeats the newest commit (files, offsets, schema), so the newest entry alone always says
    what is committed, whatever was pruned below it; its epoch is one above the newest entry's.
    """
    if latest is None:
        return CommitRecord(topic, partition, -1, -1, created_ms=now_ms, writer=writer, epoch=1, kind=CLAIM)
    return dataclasses.replace(latest, created_ms=now_ms, writer=writer, epoch=latest.epoch + 1, kind=CLAIM,
                               version=FORMAT_VERSION)


def check_owner(topic: str, partition: int, latest: Optional[CommitRecord], own_epoch: int,
                log_dir: Optional[str] = None) -> None:
    """Raise :class:`CommitFencedError` when the newest entry was written by a newer owner, and
    :class:`CommitLogVanishedError` when there is no entry at all (an owner's claim is always in
    its log). ``log_dir`` names the log in that error (default: its path in the table)."""
    if latest is None:
        raise CommitLogVanishedError(topic, partition, own_epoch, log_dir or commit_dir(topic, partition))
    if latest.epoch > own_epoch:
        raise CommitFencedError(topic, partition, own_epoch, latest.epoch, latest.writer)


def effective_commit(latest: Optional[CommitRecord]) -> Optional[CommitRecord]:
    """What the newest entry says is committed: None for a claim over an empty log."""
    if latest is None or (latest.kind == CLAIM and latest.last_offset < 0):
        return None
    return latest


def conflict_outcome(mine: CommitRecord, existing: CommitRecord) -> str:
    """The slot ``mine`` was to be created in already holds ``existing``: what happened?

    - ``OURS``: it is our own record (a retried PUT whose first attempt did land),
    - ``RETRY_CLAIM``: we were claiming and another writer took the slot first: read again and
      claim the next one (we own nothing yet, so nothing of ours is lost),
    - ``FENCED``: we were committing and lost the slot: a newer owner claimed the partition.
    """
    if (existing.writer, existing.epoch, existing.kind, existing.last_offset, existing.files) == \
            (mine.writer, mine.epoch, mine.kind, mine.last_offset, mine.files):
        return OURS
    return RETRY_CLAIM if mine.kind == CLAIM else FENCED


# The kinds, re-exported for callers that test what an entry is.
__all__ += ("CLAIM", "COMMIT")
