"""DataLakeSink lands a changelog: tombstones (value None) as rows with ``_kafka_tombstone = true`` when the
Kafka metadata is landed, a record's error otherwise."""

from __future__ import annotations

from pathlib import Path

import pyarrow.parquet as pq
import pytest

from stream_edge.lake import parse_partition_path
from stream_edge.sinks.base import SinkBatch
from stream_edge.sinks.core.datalake import DataLakeSink, RecordTypeError
from stream_edge.sinks.core.datalake.lake_writer import CRASH_POINTS
from stream_edge.sinks.core.stream_timeout_tracker import StreamTimeoutTracker

TS = 1_745_311_234_567  # 2025-04-22 08:40:34.567 UTC
HOUR = 3_600_000


def rows_by_path(root: Path) -> dict[str, list[dict]]:
    found: dict[str, list[dict]] = {}
    for path in sorted(root.rglob("*.parquet")):
        rel = str(path.relative_to(root))
        if not rel.startswith("_"):
            found.setdefault(str(path.parent.relative_to(root)), []).extend(pq.read_table(path).to_pylist())
    return found


def all_rows(root: Path) -> list[dict]:
    return sorted((r for rows in rows_by_path(root).values() for r in rows), key=lambda r: r["_kafka_offset"])


def make_sink(tmp_path: Path, **kw) -> DataLakeSink:
    sink = DataLakeSink("devices", storage_url=(tmp_path / "lake").as_uri(), **kw)
    sink.setup()
    return sink


def test_tombstones_are_rows_with_deleted_true(tmp_path):
    sink = make_sink(tmp_path, include_kafka_metadata=True)
    sink.add({"name": "a", "v": 1}, b"k1", TS, [], "devices", 0, 10)
    sink.add(None, b"k1", TS + 1, [], "devices", 0, 11)
    sink.add({"name": "b", "v": 2}, b"k2", TS + 2, [], "devices", 0, 12)
    sink.flush("devices", 0)
    rows = all_rows(tmp_path / "lake" / "devices")
    assert [(r["_kafka_offset"], r["_kafka_key"], r["_kafka_tombstone"], r["name"], r["v"]) for r in rows] == [
        (10, b"k1", False, "a", 1), (11, b"k1", True, None, None), (12, b"k2", False, "b", 2)]
    assert rows[1]["_kafka_timestamp"] == TS + 1 and rows[1]["_kafka_partition"] == 0


def test_a_batch_of_tombstones_only_and_a_sealed_buffer(tmp_path):
    sink = make_sink(tmp_path, include_kafka_metadata=True)
    sink.add(None, b"gone", TS, [], "devices", 1, 0)
    sink.flush("devices", 1)
    # more than one Arrow chunk (512 records): the tombstones are known by offset, not by the dicts
    for offset in range(1, 1201):
        sink.add(None if offset % 100 == 0 else {"v": offset}, b"k%d" % (offset % 7), TS, [], "devices", 1, offset)
    sink.flush("devices", 1)
    rows = all_rows(tmp_path / "lake" / "devices")
    assert [r["_kafka_offset"] for r in rows] == list(range(1201))
    assert [r["_kafka_offset"] for r in rows if r["_kafka_tombstone"]] == [0, *range(100, 1201, 100)]
    assert all(r.get("v") is None for r in rows if r["_kafka_tombstone"])
    assert all(r["v"] == r["_kafka_offset"] for r in rows if not r["_kafka_tombstone"])


def test_a_tombstone_goes_to_the_hour_of_its_kafka_timestamp(tmp_path):
    sink = make_sink(tmp_path, include_kafka_metadata=True, hive_columns=["year", "month", "day", "hour"],
                     timestamp_column="ts_ms")
    sink.add({"ts_ms": TS, "v": 1}, b"k", TS + 5 * HOUR, [], "devices", 0, 0)  # its own ts_ms decides
    sink.add(None, b"k", TS + 2 * HOUR, [], "devices", 0, 1)  # no ts_ms: the Kafka timestamp decides
    sink.flush("devices", 0)
    by_path = rows_by_path(tmp_path / "lake" / "devices")
    placed = {row["_kafka_offset"]: dict(parse_partition_path(path)) for path, rows in by_path.items() for row in rows}
    assert placed[0]["hour"] == "08" and placed[1]["hour"] == "10"
    assert [r["hour"] for r in by_path["year=2025/month=04/day=22/hour=10"]] == [10]


def test_write_api_lands_tombstones_too(tmp_path):
    sink = make_sink(tmp_path, include_kafka_metadata=True)
    batch = SinkBatch("devices", 2)
    batch.append(None, b"k", TS, [], 5)
    batch.append({"v": 1}, b"k", TS, [], 6)
    sink.write(batch)
    assert [(r["_kafka_offset"], r["_kafka_tombstone"]) for r in all_rows(tmp_path / "lake" / "devices")] == [(5, True), (6, False)]


def test_without_metadata_a_tombstone_is_that_records_error(tmp_path):
    sink = make_sink(tmp_path)
    with pytest.raises(RecordTypeError, match=r"tombstone \(value None\) at devices\[3\] offset 7.*include_kafka_metadata"):
        sink.add(None, b"k", TS, [], "devices", 3, 7)
    with pytest.raises(RecordTypeError, match=r"needs dict records; got list at devices\[3\] offset 8"):
        sink.add([1], b"k", TS, [], "devices", 3, 8)


def test_a_tombstone_is_not_the_stream_publishing(tmp_path):
    fired: list = []
    sink = make_sink(tmp_path, include_kafka_metadata=True)
    sink._timeout = StreamTimeoutTracker(1000, fired.append)
    sink.add(None, b"deleted-only", TS, [], "devices", 0, 0)
    assert b"deleted-only" not in sink._timeout
    sink.add({"v": 1}, b"live", TS, [], "devices", 0, 1)
    assert b"live" in sink._timeout and len(sink._timeout) == 1


class Crash(Exception):
    pass


@pytest.mark.parametrize("point", CRASH_POINTS)
def test_a_crash_at_each_protocol_point_then_replay_lands_every_tombstone_once(tmp_path, point):
    """The writer dies at each point of its commit protocol with tombstones in the batch; a new
    sink replays from Kafka: every offset once, the tombstones still tombstones."""
    values = [{"v": 0}, None, {"v": 2}, None, {"v": 4}, {"v": 5}]
    sink = make_sink(tmp_path, include_kafka_metadata=True)
    for offset in range(2):
        sink.add(values[offset], b"k", TS, [], "devices", 0, offset)
    sink.flush("devices", 0)

    def crash(where: str) -> None:
        if where == point:
            raise Crash(where)

    sink._writer.crash_hook = crash
    for offset in range(2, 5):
        sink.add(values[offset], b"k", TS, [], "devices", 0, offset)
    with pytest.raises(Crash):
        sink.flush("devices", 0)
    restarted = make_sink(tmp_path, include_kafka_metadata=True)
    for offset in range(2, 6):  # Kafka replays from the last committed offset
        restarted.add(values[offset], b"k", TS, [], "devices", 0, offset)
    restarted.flush("devices", 0)
    rows = all_rows(tmp_path / "lake" / "devices")
    assert [(r["_kafka_offset"], r["_kafka_tombstone"]) for r in rows] == [
        (offset, value is None) for offset, value in enumerate(values)]
