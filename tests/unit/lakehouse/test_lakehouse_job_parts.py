"""Pure pieces of the jobs: argument parsing, predicates, partition selection, output, secrets."""

from __future__ import annotations

import argparse
from datetime import datetime, timedelta, timezone

import pytest

from lakehouse.compaction import CompactOptions, _needing_partitions, partition_predicate, since_predicate
from lakehouse.job_report import JobReport, redact
from lakehouse.lake_files import LakeLocation
from lakehouse.register_ledger import LedgerError, open_ledger
from lakehouse.sql_query import format_table
from pipelines.cli import parse_duration, parse_size


def test_sizes_and_durations():
    assert parse_size("128MB") == 128 << 20
    assert parse_size("1g") == 1 << 30
    assert parse_size("4096") == 4096
    assert parse_duration("36h") == timedelta(hours=36)
    for bad in ("big", "0", "-1MB"):
        with pytest.raises(argparse.ArgumentTypeError):
            parse_size(bad)
    with pytest.raises(argparse.ArgumentTypeError):
        parse_duration("7 days")


def test_partition_predicate_quotes_and_nulls():
    pred = partition_predicate([{"hour": 1, "sensor": "it's\\x"}, {"hour": 2, "sensor": None}],
                               {"hour": "int", "sensor": "string"})
    assert pred == "(`hour` = 1 AND `sensor` = 'it\\'s\\\\x') OR (`hour` = 2 AND `sensor` IS NULL)"


def test_since_predicate_is_lexicographic_on_time_columns():
    since = datetime(2026, 3, 5, 6, tzinfo=timezone.utc)
    assert since_predicate(since, ["year", "month", "day", "hour"]) == (
        "(`year` > 2026) OR (`year` = 2026 AND `month` > 3) OR (`year` = 2026 AND `month` = 3 AND `day` > 5) "
        "OR (`year` = 2026 AND `month` = 3 AND `day` = 5 AND `hour` >= 6)")
    assert since_predicate(since, ["sensor"]) is None


def test_only_partitions_with_enough_small_files_are_selected():
    opts = CompactOptions(table="t", target_file_size=100, min_input_files=2)
    files = ([{"partition": {"hour": 1}, "size": 10}] * 3 + [{"partition": {"hour": 2}, "size": 10}]
             + [{"partition": {"hour": 3}, "size": 90}] * 4)
    assert _needing_partitions(files, opts, ["hour"]) == [{"hour": 1}]


def test_redact_masks_known_secrets(monkeypatch):
    monkeypatch.setenv("ICEBERG_CREDENTIAL", "client:sup3rs3cret")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "abcd1234")
    text = redact("uri?credential=client:sup3rs3cret key=abcd1234 secret=sup3rs3cret")
    assert "sup3rs3cret" not in text and "abcd1234" not in text


def test_summary_line():
    report = JobReport("compact", "lake.db.t", "iceberg")
    report.before(10, 100, 2048)
    report.after(2, 100, 1024)
    report.extra["partitions compacted"] = 1
    line = report.summary_line()
    assert line.startswith("compact lake.db.t (iceberg): files 10 -> 2, rows 100 -> 100, "
                           "bytes 2.0 KiB -> 1.0 KiB, partitions compacted 1, in ")


def test_format_table():
    assert format_table(["a", "bb"], [(1, None), (22, "x" * 50)], max_width=10).splitlines() == [
        " a  | bb", "----+------------", " 1  | NULL", " 22 | xxxxxxx..."]


def test_ledger_intents_done_markers_and_exclusive_batches(tmp_path):
    ledger = open_ledger(LakeLocation.parse(str(tmp_path)), "iceberg-uuid-1")
    ledger.write_intent(1, ["a=1/f1.parquet", "a=1/f2.parquet"], "lake.db.t")
    ledger.mark_done(1)
    ledger.write_intent(2, ["a=2/f3.parquet"], "lake.db.t")
    assert [(b.number, b.done) for b in ledger.batches()] == [(1, True), (2, False)]
    assert ledger.registered() == {"a=1/f1.parquet", "a=1/f2.parquet", "a=2/f3.parquet"}
    with pytest.raises(LedgerError, match="another register run"):
        ledger.write_intent(2, ["a=2/f4.parquet"], "lake.db.t")
    assert (tmp_path / "_lakehouse" / "register" / "iceberg-uuid-1").is_dir()


def test_ledger_checkpoint_folds_done_batches_and_forgets_deleted_files(tmp_path):
    ledger = open_ledger(LakeLocation.parse(str(tmp_path)), "delta-uuid-2")
    for n in range(1, 5):
        ledger.write_intent(n, [f"h={n}/a.parquet", f"h={n}/b.parquet"], "db.t")
        ledger.mark_done(n)
    ledger.write_intent(5, ["h=5/a.parquet"], "db.t")  # pending: stays a batch of its own
    assert ledger.checkpoint(set(), min_batches=5) is None  # not worth it yet
    existing = {"h=3/a.parquet", "h=4/b.parquet", "h=5/a.parquet"}
    assert ledger.checkpoint(existing, min_batches=3) == 4
    batches = ledger.batches()
    assert [(b.number, b.done) for b in batches] == [(4, True), (5, False)]
    assert ledger.registered() == existing
    names = sorted(p.name for p in (tmp_path / "_lakehouse" / "register" / "delta-uuid-2").iterdir())
    assert names == ["batch-000005.json", "checkpoint-000004.json"]
    ledger.mark_done(5)
    ledger.write_intent(6, ["h=6/a.parquet"], "db.t")
    assert [b.number for b in ledger.batches()] == [4, 5, 6]
