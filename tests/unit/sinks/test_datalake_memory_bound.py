"""DataLakeSink's memory bound: records held as Arrow chunks, ``max_buffer_bytes`` commits early.

Behaviour only (what is held, what is written, when, and that it stays exactly once); the
memory and throughput figures live in bench/lake_ingest.py.
"""

from __future__ import annotations

import json

from pathlib import Path

import pyarrow.parquet as pq
import pytest

from stream_edge.kafka.consumer import PREFETCH_DEFAULTS, BaseConsumer
from stream_edge.sinks.base import SinkBackpressureError
from stream_edge.sinks.core.datalake import DataLakeSink, SchemaConflictError
from stream_edge.sinks.core.datalake import sink as sink_module

CHUNK = sink_module._CHUNK_ROWS
TS = 1_767_571_200_000  # 2026-01-05 00:00 UTC


def make_sink(tmp_path: Path, **kw) -> DataLakeSink:
    sink = DataLakeSink("readings", storage_url=(tmp_path / "lake").as_uri(), fsync=False, **kw)
    sink.setup()
    return sink


def feed(sink: DataLakeSink, count: int, partition: int = 0, start: int = 0, value=None) -> None:
    for offset in range(start, start + count):
        record = value(offset) if value else {"id": offset, "sensor": f"s-{offset % 7}", "ts_ms": TS + offset,
                                              "temp": offset / 4}
        sink.add(record, b"k", TS, [], "t", partition, offset)


def lake_rows(tmp_path: Path) -> list[dict]:
    root = tmp_path / "lake" / "readings"
    rows = []
    for path in sorted(root.rglob("*.parquet")):
        if not any(part.startswith(("_", ".")) for part in path.relative_to(root).parts):
            rows.extend(pq.read_table(path).to_pylist())
    return sorted(rows, key=lambda r: r["id"])


def commits(tmp_path: Path, partition: int = 0) -> list[int]:
    """The last offsets of the partition's lake commits, in log order (ownership claims skipped)."""
    folder = tmp_path / "lake" / "readings" / "_commits" / "t" / str(partition)
    records = [json.loads(p.read_text()) for p in sorted(folder.glob("*.json"))]
    return [r["last_offset"] for r in records if r["kind"] == "commit"]


def test_records_are_held_as_arrow_chunks_and_written_unchanged(tmp_path):
    sink = make_sink(tmp_path, max_buffer_bytes=None)
    feed(sink, CHUNK - 1)
    assert sink.buffered_bytes == 0  # below one chunk: still dicts, not counted as Arrow yet
    feed(sink, 2 * CHUNK + 5, start=CHUNK - 1)
    buffer = sink._buffers[("t", 0)]
    assert len(buffer.chunks) == 3 and len(buffer.values) == 4
    assert sink.buffered_bytes == sum(c.nbytes for c in buffer.chunks)
    sink.flush("t", 0)
    rows = lake_rows(tmp_path)
    assert [r["id"] for r in rows] == list(range(3 * CHUNK + 4))
    assert rows[10] == {"id": 10, "sensor": "s-3", "ts_ms": TS + 10, "temp": 2.5}
    assert sink.buffered_bytes == 0


def test_reaching_the_bound_commits_every_buffer_before_the_checkpoint(tmp_path):
    sink = make_sink(tmp_path, max_buffer_bytes=1)  # every sealed chunk reaches the bound
    feed(sink, 10, partition=1)
    feed(sink, CHUNK, partition=0)  # the first chunk of partition 0 reaches the bound
    assert sink.early_commits == 2
    assert commits(tmp_path, 0) == [CHUNK - 1]
    assert commits(tmp_path, 1) == [9]
    assert len(lake_rows(tmp_path)) == CHUNK + 10  # visible before any flush()
    assert sink.buffered_bytes == 0
    feed(sink, 3, partition=0, start=CHUNK)
    sink.flush("t", 0)
    sink.flush("t", 1)
    assert [r["id"] for r in lake_rows(tmp_path) if r["id"] >= CHUNK] == [CHUNK, CHUNK + 1, CHUNK + 2]
    assert commits(tmp_path, 0)[-1] == CHUNK + 2


def test_no_bound_means_no_early_commit(tmp_path):
    sink = make_sink(tmp_path, max_buffer_bytes=None)
    feed(sink, 5 * CHUNK)
    assert sink.early_commits == 0 and commits(tmp_path) == [] and sink.buffered_bytes > 0


def test_a_replay_after_a_crash_skips_what_early_commits_wrote(tmp_path):
    first = make_sink(tmp_path, max_buffer_bytes=1)
    feed(first, 2 * CHUNK + 7)  # two early commits, 7 records lost with the process
    assert first.early_commits == 2
    second = make_sink(tmp_path, max_buffer_bytes=1)  # Kafka replays from the last checkpoint: 0
    feed(second, 3 * CHUNK)
    second.flush("t", 0)
    ids = [r["id"] for r in lake_rows(tmp_path)]
    assert ids == list(range(3 * CHUNK))  # every id once


def test_a_rewind_inside_a_chunk_keeps_one_copy(tmp_path):
    sink = make_sink(tmp_path, max_buffer_bytes=None)
    feed(sink, 2 * CHUNK + 3)
    feed(sink, CHUNK, start=CHUNK // 2)  # the partition was rewound to the middle of chunk one
    buffer = sink._buffers[("t", 0)]
    assert list(buffer.offsets) == list(range(CHUNK // 2 + CHUNK))
    sink.flush("t", 0)
    assert [r["id"] for r in lake_rows(tmp_path)] == list(range(CHUNK // 2 + CHUNK))


def test_types_that_differ_between_chunks_are_inferred_over_the_whole_batch(tmp_path):
    sink = make_sink(tmp_path, max_buffer_bytes=None)
    feed(sink, CHUNK, value=lambda o: {"id": o, "v": o})  # ints
    feed(sink, CHUNK, start=CHUNK, value=lambda o: {"id": o, "v": o + 0.5})  # floats
    sink.flush("t", 0)
    rows = lake_rows(tmp_path)
    assert rows[0]["v"] == 0.0 and isinstance(rows[0]["v"], float) and rows[-1]["v"] == 2 * CHUNK - 0.5


def test_a_conflict_across_chunks_still_names_the_record(tmp_path):
    sink = make_sink(tmp_path, max_buffer_bytes=None)
    feed(sink, CHUNK, value=lambda o: {"id": o, "v": o})
    feed(sink, 3, start=CHUNK, value=lambda o: {"id": o, "v": "text"})
    with pytest.raises(SchemaConflictError) as err:
        sink.flush("t", 0)
    assert err.value.column == "v" and err.value.offset == CHUNK


def test_storage_failure_during_an_early_commit_keeps_the_records_for_the_checkpoint(tmp_path):
    sink = make_sink(tmp_path, max_buffer_bytes=1)

    def fail(point: str) -> None:
        if point == "before-stage":
            raise OSError("disk full")

    sink._writer.crash_hook = fail
    feed(sink, CHUNK + 4)  # reaches the bound: the early commit fails, add() does not raise
    assert sink.early_commits == 0 and len(sink._buffers[("t", 0)].offsets) == CHUNK + 4
    with pytest.raises(SinkBackpressureError):
        sink.flush("t", 0)  # the checkpoint reports it to the runtime (pause and replay)
    sink._writer.crash_hook = None
    feed(sink, CHUNK + 4)
    sink.flush("t", 0)
    assert [r["id"] for r in lake_rows(tmp_path)] == list(range(CHUNK + 4))


def test_max_buffer_bytes_is_validated():
    with pytest.raises(ValueError, match="max_buffer_bytes"):
        DataLakeSink("t", storage_url="/tmp/unused", max_buffer_bytes=0)
    assert DataLakeSink("t", storage_url="/tmp/unused").max_buffer_bytes == sink_module.DEFAULT_MAX_BUFFER_BYTES


def test_consumer_prefetch_is_bounded_by_default_and_overridable():
    plain = BaseConsumer("127.0.0.1:1", "g", "earliest")
    assert {k: plain._config[k] for k in PREFETCH_DEFAULTS} == PREFETCH_DEFAULTS
    tuned = BaseConsumer("127.0.0.1:1", "g", "earliest", extra_config={"queued.max.messages.kbytes": 65536})
    assert tuned._config["queued.max.messages.kbytes"] == 65536
    assert tuned._config["fetch.queue.backoff.ms"] == PREFETCH_DEFAULTS["fetch.queue.backoff.ms"]
