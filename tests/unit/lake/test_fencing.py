"""Fencing of the lake commit log (pure decisions): who owns a partition, which commit wins a
slot, what the owner may delete from the staging area.

The last tests run the rules as a model: a dict of slots with create-if-absent, two writers
interleaved in every order around a stall, checked for "every offset committed once" and "no
live commit references a deleted file"."""

from __future__ import annotations

import itertools
from typing import Dict, List, Optional, Set, Tuple

import pytest

from stream_edge.lake import (
    CommitRecord,
    CommittedFile,
    decode_commit_record,
    encode_commit_record,
    plan_recovery,
    staged_file_epoch,
    staged_file_path,
    staging_prefix,
)
from stream_edge.lake.commit_log import CLAIM, COMMIT
from stream_edge.lake.fencing import (
    FENCED,
    OURS,
    RETRY_CLAIM,
    CommitFencedError,
    check_owner,
    claim_record,
    conflict_outcome,
    effective_commit,
    next_slot,
)


def commit(last: int, epoch: int, writer: str = "a", files=(), first: Optional[int] = None) -> CommitRecord:
    return CommitRecord("t", 0, last if first is None else first, last, files=list(files), epoch=epoch,
                        writer=writer, kind=COMMIT)


def test_a_claim_repeats_the_newest_commit_with_the_next_epoch():
    base = commit(41, epoch=3, files=[CommittedFile("d=1/f.parquet", "_tmp/t/0/e3/x/f.parquet", 2)])
    claim = claim_record("t", 0, base, writer="b", now_ms=7)
    assert (claim.kind, claim.epoch, claim.writer, claim.created_ms) == (CLAIM, 4, "b", 7)
    assert (claim.last_offset, claim.files, claim.schema_ipc) == (41, base.files, base.schema_ipc)
    assert effective_commit(claim) is claim  # it says what is committed: offsets <= 41


def test_a_claim_on_an_empty_log_commits_nothing():
    claim = claim_record("t", 0, None, writer="b", now_ms=0)
    assert (claim.epoch, claim.last_offset, claim.files) == (1, -1, [])
    assert effective_commit(claim) is None and effective_commit(None) is None


def test_a_claim_on_top_of_a_claim_still_counts_up():
    first = claim_record("t", 0, commit(9, epoch=1), writer="b", now_ms=0)
    second = claim_record("t", 0, first, writer="c", now_ms=0)
    assert (second.epoch, second.last_offset) == (3, 9)


def test_records_without_epoch_are_the_oldest_owner():
    # A lake written before fencing: version 1, no epoch. Its writer is epoch 0, any claim is newer.
    legacy = b'{"version": 1, "topic": "t", "partition": 0, "first_offset": 0, "last_offset": 5, "files": []}'
    record = decode_commit_record(legacy)
    assert (record.epoch, record.kind) == (0, COMMIT)
    assert claim_record("t", 0, record, "b", 0).epoch == 1
    round_trip = decode_commit_record(encode_commit_record(claim_record("t", 0, record, "b", 0)))
    assert (round_trip.version, round_trip.kind, round_trip.epoch) == (2, CLAIM, 1)


def test_the_owner_passes_and_an_older_epoch_is_fenced_with_a_clear_error():
    check_owner("t", 0, commit(5, epoch=2), own_epoch=2)
    with pytest.raises(CommitFencedError) as info:
        check_owner("t", 3, commit(5, epoch=4, writer="host-b:77:ab"), own_epoch=2)
    message = str(info.value)
    assert "t[3]" in message and "epoch 2" in message and "host-b:77:ab" in message and "epoch 4" in message
    assert "not committed" in message


def test_slots_count_from_zero():
    assert next_slot(None) == 0 and next_slot(0) == 1 and next_slot(1199) == 1200


def test_which_writer_wins_a_taken_slot():
    mine = commit(20, epoch=2, writer="a", files=[CommittedFile("f", "s", 1)])
    assert conflict_outcome(mine, mine) == OURS  # a retried PUT whose first attempt landed
    assert conflict_outcome(mine, claim_record("t", 0, commit(10, epoch=2), "b", 0)) == FENCED
    assert conflict_outcome(mine, commit(20, epoch=2, writer="b")) == FENCED
    claiming = claim_record("t", 0, commit(10, epoch=2), "a", 0)
    assert conflict_outcome(claiming, commit(15, epoch=2, writer="z")) == RETRY_CLAIM


def test_staged_paths_carry_their_owner_epoch():
    path = staged_file_path("t", 0, 5, 9, "day=1", epoch=12)
    assert path.startswith(staging_prefix("t", 0) + "/e12/")
    assert staged_file_epoch(path) == 12
    # Staged before epochs existed: epoch 0, older than every owner.
    assert staged_file_epoch(f"{staging_prefix('t', 0)}/{5:020d}-{9:020d}/day=1/f.parquet") == 0
    assert staged_file_epoch("day=1/part-t-p0.parquet") == 0


def test_the_owner_deletes_older_and_own_leftovers_never_a_newer_owners_files():
    mine = staged_file_path("t", 0, 0, 4, "", epoch=3)
    older = staged_file_path("t", 0, 0, 9, "", epoch=2)
    legacy = f"{staging_prefix('t', 0)}/{0:020d}-{3:020d}/f.parquet"
    newer = staged_file_path("t", 0, 5, 9, "", epoch=4)
    committed = staged_file_path("t", 0, 0, 2, "d=1", epoch=2)
    latest = commit(2, epoch=3, files=[CommittedFile("d=1/f", committed, 1)])
    plan = plan_recovery(latest, [mine, older, legacy, newer, committed], owner_epoch=3)
    assert plan.publish == [(committed, "d=1/f")]
    assert sorted(plan.delete) == sorted([mine, older, legacy])
    assert plan.keep == [newer]


# -- the rules as a model ---------------------------------------------------------------------

class Log:
    """Slots with create-if-absent, and a staging area of (epoch, offsets) file names."""

    def __init__(self) -> None:
        self.slots: Dict[int, CommitRecord] = {}
        self.staged: Set[str] = set()
        self.published: Set[str] = set()

    def newest(self) -> Tuple[Optional[int], Optional[CommitRecord]]:
        if not self.slots:
            return None, None
        slot = max(self.slots)
        return slot, self.slots[slot]

    def create(self, slot: int, record: CommitRecord) -> bool:
        if slot in self.slots:
            return False
        self.slots[slot] = record
        return True


class Writer:
    """One owner's steps, as the lake writer takes them: prepare (claim or check, clean), stage,
    commit (create the next slot), publish. Offsets come from a partition of 0..N-1."""

    def __init__(self, name: str, log: Log) -> None:
        self.name, self.log = name, log
        self.epoch: Optional[int] = None
        self.slot: Optional[int] = None
        self.batch: List[CommittedFile] = []
        self.fenced = False

    def prepare(self) -> Optional[int]:
        log = self.log
        if self.epoch is None:
            while True:
                slot, latest = log.newest()
                if latest is not None:
                    self.publish(latest)
                claim = claim_record("t", 0, latest, self.name, 0)
                if log.create(next_slot(slot), claim):
                    self.epoch, self.slot, latest = claim.epoch, next_slot(slot), claim
                    break
        else:
            self.slot, latest = log.newest()
            try:
                check_owner("t", 0, latest, self.epoch)
            except CommitFencedError:
                self.fenced = True
                return None
        plan = plan_recovery(latest, sorted(log.staged), sorted(log.published), owner_epoch=self.epoch)
        for source, final in plan.publish:
            log.staged.discard(source)
            log.published.add(final)
        log.staged.difference_update(plan.delete)
        committed = effective_commit(latest)
        return committed.last_offset if committed is not None else None

    def stage(self, first: int, last: int) -> None:
        staged = staged_file_path("t", 0, first, last, "", epoch=self.epoch or 0)
        self.log.staged.add(staged)
        self.batch = [CommittedFile(f"{first}-{last}", staged, last - first + 1)]
        self.range = (first, last)

    def commit(self) -> bool:
        record = commit(self.range[1], self.epoch or 0, self.name, self.batch, first=self.range[0])
        slot = next_slot(self.slot)
        if not self.log.create(slot, record):
            if conflict_outcome(record, self.log.slots[slot]) == FENCED:
                self.fenced = True
                return False
        self.slot = slot
        return True

    def publish(self, record: CommitRecord) -> None:
        for item in record.files:
            if item.staged_path in self.log.staged:
                self.log.staged.discard(item.staged_path)
                self.log.published.add(item.path)


def committed_offsets(log: Log) -> List[int]:
    offsets: List[int] = []
    for slot in sorted(log.slots):
        record = log.slots[slot]
        if record.kind == COMMIT:
            offsets.extend(range(record.first_offset, record.last_offset + 1))
    return offsets


# The stale writer A stages offsets 0..9 and stalls at one of these points; B takes over at
# each of its own points in between; then A resumes.
A_STALLS = ("after-prepare", "after-stage")
B_STEPS = ("prepare", "stage", "commit", "publish")


@pytest.mark.parametrize("a_stall, b_progress", list(itertools.product(A_STALLS, range(len(B_STEPS) + 1))))
def test_a_stalled_writer_and_its_replacement_commit_every_offset_once(a_stall, b_progress):
    log = Log()
    a, b = Writer("a", log), Writer("b", log)
    a.prepare()
    if a_stall == "after-stage":
        a.stage(0, 9)
    # B replays from Kafka's committed offset (none): offsets 0..14.
    start_b = None
    for step in B_STEPS[:b_progress]:
        if step == "prepare":
            last = b.prepare()
            start_b = 0 if last is None else last + 1
        elif step == "stage":
            b.stage(start_b, 14)
        elif step == "commit":
            b_committed = b.commit()
        elif step == "publish":
            b.publish(log.slots[b.slot])
    # A resumes.
    if a_stall == "after-prepare":
        a.stage(0, 9)
    a_committed = a.commit()
    if a_committed:
        a.publish(log.slots[a.slot])
    assert a_committed == (b_progress == 0), "A commits only if B has not claimed the partition yet"
    # B finishes its flush (from where it was), replaying whatever is not in the lake yet.
    if b_progress < 3 or not b_committed:
        last = b.prepare()
        assert not b.fenced
        start = 0 if last is None else last + 1
        if start <= 14:
            b.stage(start, 14)
            assert b.commit()
    b.publish(log.slots[b.slot])
    b.prepare()
    assert sorted(committed_offsets(log)) == list(range(15)), "every offset committed exactly once"
    live = {f.path for r in log.slots.values() if r.kind == COMMIT for f in r.files}
    assert live <= log.published, "no commit references a deleted file"
    assert log.staged == set()  # every leftover cleaned by the owner
    assert a.prepare() is None and a.fenced, "A, resumed, can never write again"
