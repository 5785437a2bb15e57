"""The registration ledger is folded on every run, --since or not: what a path is forgotten for,
and what a fold leaves of other writers' folds (local files, no Spark)."""

from __future__ import annotations

from datetime import datetime, timezone

import pyarrow.fs as pafs

from lakehouse.register import _listed_since
from stream_edge.lake.registration_ledger import RegistrationLedger

OLD = "year=2026/month=01/day=01/f-old.parquet"
OLD_GONE = "year=2026/month=01/day=01/f-old-gone.parquet"
NEW = "year=2026/month=01/day=03/f-new.parquet"
NEW_GONE = "year=2026/month=01/day=03/f-new-gone.parquet"
LATE = "year=2026/month=01/day=03/f-late.parquet"


def ledger_with(tmp_path, batches):
    for files in batches:
        for path in files:
            (tmp_path / path).parent.mkdir(parents=True, exist_ok=True)
            (tmp_path / path).write_bytes(b"x")
    ledger = RegistrationLedger(pafs.LocalFileSystem(), str(tmp_path), "iceberg-t", local=True)
    for files in batches:
        number = ledger.next_number()
        ledger.write_intent(number, list(files), "lake.db.t", writer="job")
        ledger.mark_done(number)
    return ledger


def test_a_since_run_forgets_only_gone_files_its_listing_covered(tmp_path):
    ledger = ledger_with(tmp_path, [[OLD, OLD_GONE], [NEW, NEW_GONE], [LATE]])
    (tmp_path / OLD_GONE).unlink()
    (tmp_path / NEW_GONE).unlink()
    since = datetime(2026, 1, 2, tzinfo=timezone.utc)
    # the --since listing saw day 3 only, and ran before LATE was committed
    assert ledger.checkpoint({NEW}, min_batches=3, listed=_listed_since(since)) == 3
    (checkpoint,) = ledger.batches()
    assert set(checkpoint.files) == {OLD, OLD_GONE, NEW, LATE}  # NEW_GONE: covered, absent and gone
    assert checkpoint.writer == "checkpoint"


def test_without_a_listing_every_path_is_kept(tmp_path):
    ledger = ledger_with(tmp_path, [[OLD], [NEW_GONE]])
    (tmp_path / NEW_GONE).unlink()
    assert ledger.checkpoint(None, min_batches=2) == 2
    assert set(ledger.batches()[0].files) == {OLD, NEW_GONE}


def test_a_fold_keeps_a_newer_checkpoint_another_writer_wrote(tmp_path):
    ledger = ledger_with(tmp_path, [[OLD], [NEW]])
    stale_view = ledger.batches()  # what a slow writer read: batches 1 and 2, done
    other = RegistrationLedger(pafs.LocalFileSystem(), str(tmp_path), "iceberg-t", local=True)
    for path in ([LATE], [OLD_GONE]):
        number = other.next_number()
        other.write_intent(number, path, "lake.db.t", writer="edge:t:0")
        other.mark_done(number)
    assert other.checkpoint(None, min_batches=4) == 4  # the other writer folds 1..4 first
    ledger.batches = lambda: stale_view  # type: ignore[method-assign]
    assert ledger.checkpoint(None, min_batches=2) == 2  # the slow writer's fold, from its old read
    names = {p.name for p in (tmp_path / "_lakehouse/register/iceberg-t").iterdir()}
    assert "checkpoint-000004.json" in names  # never deleted by an older fold
    assert set(other.batches()[0].files) == {OLD, NEW, LATE, OLD_GONE}
