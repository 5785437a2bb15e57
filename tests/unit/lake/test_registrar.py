"""The registration protocol both registrars run (claim -> own -> commit -> done), on a local
ledger: one retry policy for every writer, ownership of shared files, crash recovery."""

from pathlib import Path

import pyarrow.fs as pafs
import pytest

from stream_edge.lake.registrar import Claim, Registrar
from stream_edge.lake.registration_ledger import LedgerError, RegistrationLedger


@pytest.fixture()
def registrar(tmp_path):
    return Registrar(RegistrationLedger(pafs.LocalFileSystem(), str(tmp_path), "iceberg-t", local=True), "db.t")


def _listing_once_behind(registrar: Registrar) -> None:
    """The writer's next listing misses the newest batch (another writer claimed it meanwhile)."""
    real = registrar.ledger.next_number
    calls = []

    def stale() -> int:
        calls.append(1)
        return real() - (1 if len(calls) == 1 else 0)

    registrar.ledger.next_number = stale  # type: ignore[method-assign]


def test_a_number_another_writer_took_is_skipped(registrar):
    registrar.claim("edge:t:0", ["a"])
    _listing_once_behind(registrar)
    claim = registrar.claim("job", ["b"])
    assert (claim.number, claim.files) == (2, ("b",))
    assert [(b.number, b.writer) for b in registrar.ledger.batches()] == [(1, "edge:t:0"), (2, "job")]


def test_a_number_the_same_writer_took_is_two_instances_of_one_writer(registrar):
    registrar.claim("job", ["a"])
    _listing_once_behind(registrar)
    with pytest.raises(LedgerError, match="another 'job' writer"):
        registrar.claim("job", ["b"])
    assert [b.files for b in registrar.ledger.batches()] == [("a",)], "nothing recorded for the second instance"


def test_files_a_lower_batch_owns_are_not_committed_and_the_batch_is_done(registrar):
    registrar.claim("edge:t:0", ["x", "y"])  # pending: the sink is registering x and y
    committed: list[Claim] = []
    claims = registrar.register([("job", ["y", "z"])], committed.extend)
    assert [(c.number, c.files) for c in committed] == [(2, ("z",))]
    assert [c.number for c in claims] == [2]
    assert [(b.number, b.done) for b in registrar.ledger.batches()] == [(1, False), (2, True)]
    assert registrar.register([("job", ["x"])], committed.extend)[0].files == ()  # owned by batch 1
    assert len(committed) == 1


def test_resume_finishes_only_its_own_pending_batches(registrar, tmp_path: Path):
    for name in ("a", "b"):
        (tmp_path / name).write_text("data")
    registrar.claim("edge:t:0", ["a", "gone"])  # not committed before the crash; "gone" was compacted
    registrar.claim("edge:t:0", ["b"])          # committed, its done marker lost
    registrar.claim("edge:t:1", ["c"])          # another partition's
    committed: list[Claim] = []
    finished = registrar.resume("edge:t:0", lambda number: number == 2, committed.extend)
    assert committed == [Claim(1, "edge:t:0", ("a",))]
    assert [c.number for c in finished] == [1, 2]
    assert [(b.number, b.done) for b in registrar.ledger.batches()] == [(1, True), (2, True), (3, False)]


def test_a_commit_that_fails_leaves_the_batch_pending_for_its_writer(registrar):
    def crash(claims):
        raise RuntimeError("the catalog went away")

    with pytest.raises(RuntimeError):
        registrar.register([("job", ["a"])], crash)
    [batch] = registrar.ledger.batches()
    assert (batch.done, batch.writer) == (False, "job")
    assert registrar.unregistered(["a", "b"]) == ["b"]
