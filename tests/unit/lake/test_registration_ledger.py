"""The registration ledger's pure rules: writers, exclusive numbers, ownership of shared files."""

import pyarrow.fs as pafs
import pytest

from stream_edge.lake.registration_ledger import JOB_WRITER, LedgerError, RegistrationLedger, edge_writer


@pytest.fixture()
def ledger(tmp_path):
    return RegistrationLedger(pafs.LocalFileSystem(), str(tmp_path), "iceberg-1234", local=True)


def test_batches_record_their_writer_and_numbers_are_exclusive(ledger):
    ledger.write_intent(1, ["a.parquet"], "t", writer=edge_writer("s", 0))
    with pytest.raises(LedgerError, match="already exists"):
        ledger.write_intent(1, ["b.parquet"], "t")
    assert ledger.writer_of(1) == "edge:s:0" and ledger.writer_of(2) is None
    ledger.write_intent(ledger.next_number(), ["b.parquet"], "t")
    assert [(b.number, b.writer, b.done) for b in ledger.batches()] == [(1, "edge:s:0", False), (2, JOB_WRITER, False)]
    assert ledger.registered() == {"a.parquet", "b.parquet"}


def test_the_lowest_batch_owns_a_file_listed_twice(ledger):
    ledger.write_intent(1, ["x", "y"], "t", writer=edge_writer("s", 0))
    ledger.write_intent(2, ["y", "z"], "t")  # the job listed y while the sink was registering it
    assert ledger.owned_files(1) == ["x", "y"]
    assert ledger.owned_files(2) == ["z"]


def test_a_checkpoint_keeps_existing_files_and_stops_at_a_pending_batch(ledger):
    for number in range(1, 4):
        ledger.write_intent(number, [f"f{number}"], "t")
        ledger.mark_done(number)
    ledger.write_intent(4, ["f4"], "t", writer=edge_writer("s", 1))  # pending
    assert ledger.checkpoint({"f1", "f3"}, min_batches=2) == 3
    batches = ledger.batches()
    assert [(b.number, b.files, b.done) for b in batches] == [(3, ("f1", "f3"), True), (4, ("f4",), False)]
