"""Fencing on the real broker: an edge instance frozen (SIGSTOP) in the middle of a lake commit
past the group's session timeout, a replacement takes its partitions and commits, the frozen one
resumes (SIGCONT): its commit is refused (it no longer owns the partitions), and every record is
in the lake exactly once. On the local disk (exclusive link) and on the S3 server (conditional PUT).

Without fencing the resumed instance's commit record was an unconditional write: it could name
staged files the replacement's clean-up had deleted (a commit of files that no longer exist), or,
staged after the replacement's commit, publish the same records a second time.
"""

from __future__ import annotations

import io
import json
import os
import signal
import sys
import time
import uuid
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from confluent_kafka import Producer
from tests.integration.running_program import RunningProgram

pytestmark = pytest.mark.integration

PROGRAM = str(Path(__file__).with_name("datalake_fencing_program.py"))
REPO = Path(__file__).resolve().parents[3]
FIRST_WAVE, SECOND_WAVE = 2000, 600


def produce(bootstrap: str, topic: str, ids: range) -> None:
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5})
    for i in ids:
        value = {"id": i, "sensor": f"s{i % 3}"}
        producer.produce(topic, key=f"k{i % 11}".encode(), value=json.dumps(value).encode())
    assert producer.flush(30) == 0


class Lake:
    """Reads the visible rows' ids of the ``events`` table, locally or on S3."""

    def __init__(self, local_root: Path | None = None, s3_client=None, bucket: str = "") -> None:
        self.local_root, self.s3, self.bucket = local_root, s3_client, bucket

    def ids(self) -> list[int]:
        ids: list[int] = []
        if self.local_root is not None:
            # Walked while the instances write: hidden folders (staging, commit log) are skipped,
            # as readers skip them, and may vanish under the walk; published files never do.
            for folder, subfolders, files in os.walk(self.local_root / "events"):
                subfolders[:] = [d for d in subfolders if not d.startswith(("_", "."))]
                ids.extend(i for f in files if f.endswith(".parquet")
                           for i in pq.read_table(os.path.join(folder, f), columns=["id"]).column("id").to_pylist())
            return sorted(ids)
        for page in self.s3.get_paginator("list_objects_v2").paginate(Bucket=self.bucket, Prefix="events/"):
            for obj in page.get("Contents", []):
                key = obj["Key"]
                if key.endswith(".parquet") and not any(p.startswith(("_", ".")) for p in key.split("/")[1:]):
                    body = self.s3.get_object(Bucket=self.bucket, Key=key)["Body"].read()
                    ids.extend(pq.read_table(io.BytesIO(body), columns=["id"]).column("id").to_pylist())
        return sorted(ids)


def wait_until(what: str, condition, timeout: float, *programs: RunningProgram) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return
        time.sleep(0.5)
    logs = "\n\n".join(f"[{p.name}]\n" + "".join(p.lines())[-4000:] for p in programs)
    pytest.fail(f"timed out waiting for {what}:\n{logs}")


def run_frozen_writer_scenario(kafka_bootstrap: str, topic: str, storage_url: str, lake: Lake,
                               point: str = "after-stage") -> None:
    group = f"lake-fencing-{uuid.uuid4().hex[:8]}"
    produce(kafka_bootstrap, topic, range(FIRST_WAVE))
    args = [sys.executable, PROGRAM, kafka_bootstrap, topic, group, storage_url]
    # A freezes in its 3rd lake commit (the 2nd checkpoint's first partition) at ``point``.
    a = RunningProgram(args + ["A", "3", point], name="A", merge_stderr=True)
    b = None
    try:
        a.wait_for("A frozen mid-commit", lambda lines: any("FROZEN" in line for line in lines), timeout=90)
        assert a.proc.poll() is None
        # The replacement joins; the group waits out A's session (6 s) and gives B every partition.
        b = RunningProgram(args + ["B"], name="B", merge_stderr=True)
        wait_until("B to write the whole first wave", lambda: len(lake.ids()) >= FIRST_WAVE, 120, a, b)
        a.signal(signal.SIGCONT)
        a.wait_for("A resumed", lambda lines: any("A RESUMED" in line for line in lines), timeout=30)
        # A's commit is refused, and the consumer tells A it lost its partitions; it rejoins.
        a.wait_for("A fenced", lambda lines: any("no longer owns the partition" in line for line in lines),
                   timeout=60)
        a.wait_for("A to rejoin with partitions", lambda lines: any(
            "partitions assigned" in line for line in lines[next(i for i, line in enumerate(lines)
                                                                  if "A RESUMED" in line):]), timeout=90)
        # Both instances write the second wave.
        produce(kafka_bootstrap, topic, range(FIRST_WAVE, FIRST_WAVE + SECOND_WAVE))
        total = FIRST_WAVE + SECOND_WAVE
        wait_until("the second wave", lambda: len(lake.ids()) >= total, 120, a, b)
    finally:
        # SIGTERM: each instance commits its last checkpoint before it exits, so a duplicate (a
        # stale commit of A's) would be in the lake read below; no waiting on time needed.
        a.signal(signal.SIGCONT)
        code_a, out_a, _ = a.finish(60, sig=signal.SIGTERM)
        code_b, out_b, _ = b.finish(60, sig=signal.SIGTERM) if b is not None else (0, "", "")
    ids = lake.ids()
    assert len(ids) == len(set(ids)), f"duplicates in the lake:\n[A]\n{out_a[-3000:]}\n[B]\n{out_b[-3000:]}"
    assert ids == list(range(FIRST_WAVE + SECOND_WAVE))
    assert (code_a, code_b) == (0, 0), f"[A]\n{out_a[-3000:]}\n[B]\n{out_b[-3000:]}"
    assert "A DONE" in out_a and "B DONE" in out_b


@pytest.mark.parametrize("point", ["after-stage", "before-stage"])
def test_a_frozen_writer_cannot_commit_after_its_replacement_local(kafka_bootstrap, make_topic, tmp_path,
                                                                    monkeypatch, point):
    """``after-stage``: the replacement deletes the frozen writer's staged files, which its commit
    would have referenced. ``before-stage``: the frozen writer stages after the replacement's
    commit, and would have published those records a second time."""
    monkeypatch.setenv("PYTHONPATH", str(REPO))
    topic = make_topic(partitions=2, prefix="lake-fencing")
    lake_dir = tmp_path / "lake"
    run_frozen_writer_scenario(kafka_bootstrap, topic, lake_dir.as_uri(), Lake(local_root=lake_dir), point)
    staged = [p for p in (lake_dir / "events" / "_tmp").rglob("*") if p.is_file()]
    assert staged == [], "A's staged files were the new owner's to delete"


def test_a_frozen_writer_cannot_commit_after_its_replacement_s3(kafka_bootstrap, make_topic, s3_bucket,
                                                                 s3_client, monkeypatch):
    monkeypatch.setenv("PYTHONPATH", str(REPO))
    topic = make_topic(partitions=2, prefix="lake-fencing-s3")
    run_frozen_writer_scenario(kafka_bootstrap, topic, f"s3://{s3_bucket}", Lake(s3_client=s3_client, bucket=s3_bucket))


def test_the_slot_of_a_stalled_commit_is_taken_on_the_s3_server(s3_bucket, s3_client):
    """In-process, on the S3 server: A stalls after staging, B claims the partition and commits;
    A's commit record is a conditional PUT into a taken slot: 412, fenced, nothing of it lands."""
    from stream_edge.lake.exclusive_create import ExclusiveCreator
    from stream_edge.sinks.core.datalake import DataLakeSink
    from stream_edge.sinks.core.datalake.lake_writer import LakeCommitFencedError

    def make_sink() -> DataLakeSink:
        sink = DataLakeSink(table_name="events", storage_url=f"s3://{s3_bucket}", hive_columns=["sensor"])
        sink.setup()
        return sink

    def feed(sink: DataLakeSink, first: int, last: int) -> None:
        for i in range(first, last + 1):
            sink.add({"id": i, "sensor": f"s{i % 3}"}, None, 0, [], "t", 0, i)

    a, b = make_sink(), make_sink()
    feed(a, 0, 4)
    a.flush("t", 0)
    entries_before_b = []

    def stall(where: str) -> None:
        if where == "after-stage":
            a._writer.crash_hook = None
            keys = [o["Key"] for o in s3_client.list_objects_v2(Bucket=s3_bucket, Prefix="events/_commits/")["Contents"]]
            entries_before_b.extend(keys)
            feed(b, 5, 20)
            b.flush("t", 0)

    a._writer.crash_hook = stall
    feed(a, 5, 9)
    with pytest.raises(LakeCommitFencedError):
        a.flush("t", 0)
    assert Lake(s3_client=s3_client, bucket=s3_bucket).ids() == list(range(21))
    slot = f"events/_commits/t/0/{len(entries_before_b):020d}.json"  # the slot A was committing into
    taken = json.loads(s3_client.get_object(Bucket=s3_bucket, Key=slot)["Body"].read())
    assert (taken["kind"], taken["epoch"]) == ("claim", 2), "B's claim holds the slot A lost"
    # The primitive itself: a second create of one key is refused and leaves the first untouched.
    create = ExclusiveCreator(a._writer.fs, local=False)
    with pytest.raises(FileExistsError):
        create(f"{s3_bucket}/{slot}", b"overwritten")
    assert json.loads(s3_client.get_object(Bucket=s3_bucket, Key=slot)["Body"].read()) == taken
