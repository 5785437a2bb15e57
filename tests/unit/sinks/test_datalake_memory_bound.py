"""DataLakeSink's memory bound: records held as Arrow chunks (the shared ``arrow_buffer``),
``max_buffer_bytes`` commits early, and a failing early commit never drops a partition's records.

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
from stream_edge.sinks.arrow_buffer import CHUNK_ROWS, SAMPLE_EVERY, estimated_size
from stream_edge.sinks.core.datalake import DataLakeSink
from stream_edge.sinks.core.datalake import sink as sink_module

CHUNK = CHUNK_ROWS
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
    record = {"id": 1, "sensor": "s-1", "ts_ms": TS, "temp": 0.25}
    # below one chunk: still dicts, counted at their measured size (not a flat 512 B)
    assert sink.buffered_bytes >= (CHUNK - 1) * estimated_size(record) * 0.8
    feed(sink, 2 * CHUNK + 5, start=CHUNK - 1)
    buffer = sink._buffers[("t", 0)]
    assert len(buffer.chunks) == 3 and len(buffer.values) == 4
    assert sink.buffered_bytes == sum(c.nbytes for c in buffer.chunks) + 4 * buffer.row_bytes + 8 * len(buffer)
    sink.flush("t", 0)
    rows = lake_rows(tmp_path)
    assert [r["id"] for r in rows] == list(range(3 * CHUNK + 4))
    assert rows[10] == {"id": 10, "sensor": "s-3", "ts_ms": TS + 10, "temp": 2.5}
    assert sink.buffered_bytes == 0


def test_reaching_the_bound_commits_every_buffer_before_the_checkpoint(tmp_path):
    sink = make_sink(tmp_path, max_buffer_bytes=200 * 1024)
    feed(sink, 10, partition=1)
    assert sink.early_commits == 0
    feed(sink, CHUNK, partition=0)  # about 450 kB of dicts: past the bound before the first chunk
    assert sink.early_commits >= 2 and commits(tmp_path, 1) == [9]
    assert len(lake_rows(tmp_path)) >= SAMPLE_EVERY  # visible before any flush()
    assert sink.buffered_bytes < 200 * 1024
    feed(sink, 3, partition=0, start=CHUNK)
    sink.flush("t", 0)
    sink.flush("t", 1)
    assert [r["id"] for r in lake_rows(tmp_path)] == sorted(list(range(CHUNK + 3)) + list(range(10)))
    assert commits(tmp_path, 0)[-1] == CHUNK + 2


def test_no_bound_means_no_early_commit(tmp_path):
    sink = make_sink(tmp_path, max_buffer_bytes=None)
    feed(sink, 5 * CHUNK)
    assert sink.early_commits == 0 and commits(tmp_path) == [] and sink.buffered_bytes > 0


def test_a_replay_after_a_crash_skips_what_early_commits_wrote(tmp_path):
    first = make_sink(tmp_path, max_buffer_bytes=64 * 1024)
    feed(first, 2 * CHUNK + 7)  # early commits; what is still buffered is lost with the process
    assert first.early_commits >= 2 and 0 < len(lake_rows(tmp_path)) < 2 * CHUNK + 7
    second = make_sink(tmp_path, max_buffer_bytes=64 * 1024)  # Kafka replays from the last checkpoint: 0
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


def test_a_column_widened_after_a_chunk_is_written_as_double(tmp_path):
    sink = make_sink(tmp_path, max_buffer_bytes=None)
    feed(sink, CHUNK, value=lambda o: {"id": o, "v": o})  # ints: a chunk of int64
    feed(sink, CHUNK, start=CHUNK, value=lambda o: {"id": o, "v": o + 0.5})  # floats: the column becomes double
    sink.flush("t", 0)
    rows = lake_rows(tmp_path)
    assert rows[0]["v"] == 0.0 and isinstance(rows[0]["v"], float) and rows[-1]["v"] == 2 * CHUNK - 0.5


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


@pytest.mark.parametrize("error", [OSError(36, "File name too long"), RuntimeError("unexpected")])
def test_any_error_of_an_early_commit_keeps_every_partitions_records(tmp_path, error):
    """Review finding: an early commit that failed with anything but backpressure dropped the
    partition's buffer, and a skip policy then committed its offsets (records lost)."""
    sink = make_sink(tmp_path, max_buffer_bytes=1)
    sink._writer.crash_hook = lambda point: (_ for _ in ()).throw(error) if point == "before-stage" else None
    feed(sink, 7, partition=0)
    feed(sink, 5, partition=1)
    assert sink.early_commits == 0
    assert list(sink._buffers[("t", 0)].offsets) == list(range(7))
    assert list(sink._buffers[("t", 1)].offsets) == list(range(5))
    with pytest.raises(type(error)):
        sink.flush("t", 0)  # the checkpoint meets the failure and reports it
    assert list(sink._buffers[("t", 0)].offsets) == list(range(7))  # still held (the runtime decides)
    sink._writer.crash_hook = None
    sink.flush("t", 0)
    sink.flush("t", 1)
    assert sorted((r["id"]) for r in lake_rows(tmp_path)) == sorted(list(range(7)) + list(range(5)))
