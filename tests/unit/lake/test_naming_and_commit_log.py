"""File naming and the commit-log decisions of the exactly-once protocol (pure functions)."""

from __future__ import annotations

import pytest

from stream_edge.lake import (
    CommitLogError,
    CommitRecord,
    CommittedFile,
    commit_record_path,
    committed_files,
    data_file_name,
    decode_commit_record,
    encode_commit_record,
    final_file_path,
    first_unwritten_index,
    is_hidden_name,
    latest_commit_name,
    names_to_prune,
    parse_data_file_name,
    plan_recovery,
    staged_file_path,
    staging_prefix,
    table_root,
)


def test_data_file_names_are_deterministic_sortable_and_parseable():
    name = data_file_name("sensors.raw", 3, 7, 1234)
    assert name == "part-sensors.raw-p3-o00000000000000000007-00000000000000001234.parquet"
    assert parse_data_file_name("year=2024/" + name) == ("sensors.raw", 3, 7, 1234)
    assert parse_data_file_name("random.parquet") is None
    assert data_file_name("t", 0, 9, 10) < data_file_name("t", 0, 11, 12)
    with pytest.raises(ValueError):
        data_file_name("t", 0, 10, 9)


def test_staged_and_final_paths():
    staged = staged_file_path("t", 1, 5, 9, "year=2024/month=01")
    final = final_file_path("t", 1, 5, 9, "year=2024/month=01")
    assert staged.startswith(staging_prefix("t", 1) + "/")
    assert staged.endswith("/year=2024/month=01/" + data_file_name("t", 1, 5, 9))
    assert final == "year=2024/month=01/" + data_file_name("t", 1, 5, 9)
    assert final_file_path("t", 1, 5, 9, "") == data_file_name("t", 1, 5, 9)
    # Everything staged lives under a hidden top-level folder.
    assert is_hidden_name(staged.split("/")[0])


def test_hidden_names_follow_spark_listing_rules():
    assert is_hidden_name("_tmp") and is_hidden_name("_commits") and is_hidden_name(".x.parquet")
    assert not is_hidden_name("_col=1")  # a partition folder of a column named _col is data
    assert not is_hidden_name("part-0.parquet")


def test_table_root():
    assert table_root("s3://bucket", "data-lake/time-series", "t") == "s3://bucket/data-lake/time-series/t"
    assert table_root("/abs/lake/", "", "t") == "/abs/lake/t"
    for bad in ("", "a/b", "..", "."):
        with pytest.raises(ValueError):
            table_root("/lake", "p", bad)
    with pytest.raises(ValueError):
        table_root("/lake", "p/../../etc", "t")


def test_topic_dot_dot_never_becomes_a_path_level():
    assert staging_prefix("..", 0) == "_tmp/%2E%2E/0"


def record(last, first=None, files=()):
    return CommitRecord("t", 0, first if first is not None else last, last, files=list(files), rows=len(files))


def test_commit_record_round_trip_and_corruption():
    rec = CommitRecord("t", 2, 10, 20, files=[CommittedFile("a=%2F/part.parquet", "_tmp/t/2/x/a=%2F/part.parquet", 3,
                                                            (("a", "/"),))],
                       rows=3, schema={"x": "int64"}, schema_ipc="QUJD", created_ms=5, writer="host:1")
    assert decode_commit_record(encode_commit_record(rec)) == rec
    with pytest.raises(CommitLogError):
        decode_commit_record(b"{not json")
    with pytest.raises(CommitLogError):
        decode_commit_record(b'{"version": 99}')
    with pytest.raises(CommitLogError):
        decode_commit_record(b'{"version": 1, "topic": "t"}')
    with pytest.raises(CommitLogError):
        CommitRecord("t", 0, 5, 4)


def test_latest_commit_name_by_offset_not_listing_order():
    names = [commit_record_path("t", 0, o) for o in (99, 1000, 7)] + ["_commits/t/0/.tmp-123.json", "junk"]
    assert latest_commit_name(names) == commit_record_path("t", 0, 1000)
    assert latest_commit_name([]) is None


@pytest.mark.parametrize("offsets, committed, index", [
    ([1, 2, 3], None, 0),
    ([1, 2, 3], 0, 0),
    ([1, 2, 3], 2, 2),
    ([1, 2, 3], 3, 3),
    ([1, 2, 3], 100, 3),
    ([5, 9, 14], 10, 2),  # gaps (filtered records) are fine
])
def test_first_unwritten_index(offsets, committed, index):
    assert first_unwritten_index(offsets, committed) == index


def test_recovery_rolls_the_latest_commit_forward_and_drops_uncommitted_files():
    committed = [CommittedFile("y=1/a.parquet", "_tmp/t/0/r/y=1/a.parquet", 1),
                 CommittedFile("y=2/a.parquet", "_tmp/t/0/r/y=2/a.parquet", 1),
                 CommittedFile("y=3/a.parquet", "_tmp/t/0/r/y=3/a.parquet", 1)]
    latest = record(10, files=committed)
    staged = ["_tmp/t/0/r/y=1/a.parquet",        # committed, not yet published
              "_tmp/t/0/r/y=2/a.parquet",        # committed, published by a copy whose delete died
              "_tmp/t/0/s/y=1/b.parquet"]        # staged by a flush that never committed
    plan = plan_recovery(latest, staged, existing_final_paths=["y=2/a.parquet"])
    assert plan.publish == [("_tmp/t/0/r/y=1/a.parquet", "y=1/a.parquet")]
    assert plan.delete == ["_tmp/t/0/r/y=2/a.parquet", "_tmp/t/0/s/y=1/b.parquet"]


def test_recovery_without_any_commit_deletes_everything_staged():
    plan = plan_recovery(None, ["_tmp/t/0/x/f.parquet"])
    assert plan.publish == [] and plan.delete == ["_tmp/t/0/x/f.parquet"] and not plan.empty
    assert plan_recovery(None, []).empty


def test_committed_files_in_commit_order():
    r1 = record(5, files=[CommittedFile("a", "sa", 1)])
    r2 = record(9, files=[CommittedFile("b", "sb", 1), CommittedFile("c", "sc", 1)])
    assert committed_files([r2, r1]) == ["a", "b", "c"]


def test_prune_keeps_the_newest():
    names = [commit_record_path("t", 0, o) for o in (1, 2, 3, 4, 5)]
    assert names_to_prune(names, keep=2) == names[:3]
    assert names_to_prune(names, keep=10) == []
    assert names_to_prune(names, keep=0) == names[:4]  # the newest is always kept
