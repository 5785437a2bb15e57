"""Two data-lake sinks on one table on a real local disk, one stalled in the middle of its lake
commit while the other takes its partition: every record once, nothing a commit lists deleted.

The stall is the writer's own test hook (``crash_hook``, called at each point of the protocol):
the replacement's whole flush runs inside it, so the two interleave exactly there. The same
with real processes, a real broker and SIGSTOP is tests/integration/sinks/test_datalake_fencing.py.
"""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from stream_edge.sinks import SinkBackpressureError
from stream_edge.sinks.core.datalake import DataLakeSink
from stream_edge.sinks.core.datalake.lake_writer import CRASH_POINTS, LakeCommitFencedError


def make_sink(tmp_path: Path) -> DataLakeSink:
    sink = DataLakeSink(table_name="readings", storage_url=(tmp_path / "lake").as_uri(), hive_columns=["sensor"])
    sink.setup()
    return sink


def feed(sink: DataLakeSink, first: int, last: int) -> None:
    for offset in range(first, last + 1):
        sink.add({"i": offset, "sensor": "ab"[offset % 2]}, None, 0, [], "t", 0, offset)


def lake_ids(root: Path) -> list[int]:
    ids: list[int] = []
    for path in root.rglob("*.parquet"):
        if not any(part.startswith(("_", ".")) for part in path.relative_to(root).parts):
            ids.extend(pq.read_table(path).column("i").to_pylist())
    return sorted(ids)


def log_entries(root: Path) -> list[dict]:
    return [json.loads(p.read_text()) for p in sorted((root / "_commits" / "t" / "0").glob("*.json"))]


@pytest.mark.parametrize("point", CRASH_POINTS)
def test_a_writer_stalled_at_each_point_and_its_replacement_write_every_record_once(tmp_path, point):
    root = tmp_path / "lake" / "readings"
    a, b = make_sink(tmp_path), make_sink(tmp_path)
    feed(a, 0, 4)
    a.flush("t", 0)  # A owns the partition: offsets 0..4 committed, Kafka offset committed at 5

    def replacement_takes_over(where: str) -> None:
        if where != point:
            return
        a._writer.crash_hook = None
        # A stalls here past the session timeout: B is assigned the partition and replays
        # from the committed Kafka offset, 5.
        feed(b, 5, 19)
        b.flush("t", 0)

    a._writer.crash_hook = replacement_takes_over
    feed(a, 5, 12)
    committed_before_b = point in ("after-commit-record", "after-publish")
    if committed_before_b:
        a.flush("t", 0)  # A's commit landed before B's claim: legitimate, B skips those offsets
    else:
        with pytest.raises(LakeCommitFencedError) as info:
            a.flush("t", 0)
        assert isinstance(info.value, SinkBackpressureError)  # the runtime drops A's batch, replays nothing
        assert "no longer owns the partition" in str(info.value) and "t[0]" in str(info.value)
    assert lake_ids(root) == list(range(20))
    entries = log_entries(root)
    live = [f["path"] for e in entries if e["kind"] == "commit" for f in e["files"]]
    assert all((root / path).is_file() for path in live), "every file a commit lists exists"
    assert [e["epoch"] for e in entries] == sorted(e["epoch"] for e in entries)  # epochs only grow
    # A, resumed, is fenced until the runtime tells it the partition was revoked.
    feed(a, 20, 21)
    with pytest.raises(LakeCommitFencedError):
        a.flush("t", 0)
    assert lake_ids(root) == list(range(20))
    # B flushes on, and its staging area ends empty: A's leftovers were its to delete.
    feed(b, 20, 22)
    b.flush("t", 0)
    assert lake_ids(root) == list(range(23))
    assert [p for p in (root / "_tmp").rglob("*") if p.is_file()] == []


def test_a_partition_that_comes_back_is_claimed_anew(tmp_path):
    root = tmp_path / "lake" / "readings"
    a, b = make_sink(tmp_path), make_sink(tmp_path)
    feed(a, 0, 2)
    a.flush("t", 0)
    a.on_revoke("t", 0)
    feed(b, 3, 5)
    b.flush("t", 0)
    b.on_revoke("t", 0)
    feed(a, 6, 8)
    a.flush("t", 0)
    assert lake_ids(root) == list(range(9))
    entries = log_entries(root)
    assert [(e["kind"], e["epoch"]) for e in entries] == [
        ("claim", 1), ("commit", 1), ("claim", 2), ("commit", 2), ("claim", 3), ("commit", 3)]
    assert len({entries[0]["writer"], entries[2]["writer"]}) == 2


def test_a_newer_owners_staged_files_are_never_deleted(tmp_path):
    root = tmp_path / "lake" / "readings"
    a, b = make_sink(tmp_path), make_sink(tmp_path)
    feed(a, 0, 2)
    a.flush("t", 0)
    staged_by_b = []

    def stall_after_stage(where: str) -> None:
        if where == "after-stage":
            b._writer.crash_hook = None
            staged_by_b.extend(p for p in (root / "_tmp").rglob("*.parquet"))
            # B's files are staged, not committed; stale A wakes and flushes: fenced, deletes nothing.
            feed(a, 3, 4)
            with pytest.raises(LakeCommitFencedError):
                a.flush("t", 0)
            assert all(p.is_file() for p in staged_by_b)

    b._writer.crash_hook = stall_after_stage
    feed(b, 3, 6)
    b.flush("t", 0)
    assert staged_by_b and lake_ids(root) == list(range(7))


def test_a_lake_written_before_fencing_is_taken_over(tmp_path):
    root = tmp_path / "lake" / "readings"
    a = make_sink(tmp_path)
    feed(a, 0, 3)
    a.flush("t", 0)
    # Rewrite the log as the previous version wrote it: one record named by its last offset,
    # version 1, no epoch, files staged under the partition's folder directly.
    commits = root / "_commits" / "t" / "0"
    record = [e for e in log_entries(root) if e["kind"] == "commit"][0]
    for path in commits.iterdir():
        path.unlink()
    for key in ("epoch", "kind"):
        record.pop(key)
    record["version"] = 1
    (commits / f"{3:020d}.json").write_text(json.dumps(record))
    leftover = root / "_tmp" / "t" / "0" / f"{4:020d}-{5:020d}" / "sensor=a" / "x.parquet"
    leftover.parent.mkdir(parents=True)
    leftover.write_bytes(b"never committed")
    b = make_sink(tmp_path)
    feed(b, 2, 6)  # Kafka replays from before the last commit: 2 and 3 are skipped
    b.flush("t", 0)
    assert lake_ids(root) == list(range(7))
    assert not leftover.exists()
    assert sorted(p.name for p in commits.iterdir()) == [f"{slot:020d}.json" for slot in (3, 4, 5)]


class Crash(Exception):
    pass


def test_a_crash_right_after_a_claim_leaves_nothing_to_lose(tmp_path):
    root = tmp_path / "lake" / "readings"
    a = make_sink(tmp_path)
    feed(a, 0, 4)
    a.flush("t", 0)

    def die(where: str) -> None:
        if where == "after-stage":
            raise Crash(where)  # A dies with staged files: never committed

    a._writer.crash_hook = die
    feed(a, 5, 9)
    with pytest.raises(Crash):
        a.flush("t", 0)
    b = make_sink(tmp_path)

    def die_after_claim(where: str) -> None:
        if where == "after-claim":
            raise Crash(where)  # B dies with its claim in the log, before any clean-up

    b._writer.crash_hook = die_after_claim
    feed(b, 5, 9)
    with pytest.raises(Crash):
        b.flush("t", 0)
    c = make_sink(tmp_path)
    feed(c, 5, 12)
    c.flush("t", 0)
    assert lake_ids(root) == list(range(13))
    assert [(e["kind"], e["epoch"]) for e in log_entries(root)] == [
        ("claim", 1), ("commit", 1), ("claim", 2), ("claim", 3), ("commit", 3)]
    assert [p for p in (root / "_tmp").rglob("*") if p.is_file()] == []
