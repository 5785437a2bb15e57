"""CSVSink and FileSink (JSON/Parquet formats, local destination) on real files."""

from __future__ import annotations

import csv
import gzip
import json

import pyarrow.parquet as pq
import pytest

from stream_edge.sinks import SinkBackpressureError, SinkBatch
from stream_edge.sinks.community.file import (
    FileSink,
    InvalidFormatError,
    JSONFormat,
    LocalDestination,
    ParquetFormat,
    resolve_format,
)
from stream_edge.sinks.community.file.destinations import Destination
from stream_edge.sinks.core.csv import CSVSink


def feed(sink, records, topic="events", partition=0, start=0):
    for i, (key, value) in enumerate(records):
        sink.add(value, key, 1_700_000_000_000 + i, [], topic, partition, start + i)


def test_csv_sink_writes_header_once_and_rows(tmp_path):
    path = tmp_path / "out.csv"
    sink = CSVSink(str(path), key_serializer=lambda k: k.decode())
    feed(sink, [(b"a", {"x": 1}), (b"b", {"x": "two"})])
    sink.flush("events", 0)
    feed(sink, [(b"c", [1, 2])], partition=1, start=7)
    sink.flush("events", 1)
    rows = list(csv.reader(path.open(newline="")))
    assert rows == [
        ["key", "value", "timestamp", "topic", "partition", "offset"],
        ["a", '{"x": 1}', "1700000000000", "events", "0", "0"],
        ["b", '{"x": "two"}', "1700000000001", "events", "0", "1"],
        ["c", "[1, 2]", "1700000000000", "events", "1", "7"],
    ]


def test_file_sink_json_layout_and_content(tmp_path):
    sink = FileSink(directory=str(tmp_path / "out"), format="json")
    feed(sink, [(b"k1", {"v": 1}), (None, {"v": 2})], start=40)
    sink.flush("events", 0)
    files = sorted(p.relative_to(tmp_path) for p in (tmp_path / "out").rglob("*") if p.is_file())
    assert [str(p) for p in files] == ["out/events/0/0000000000000000040.jsonl"]
    lines = [json.loads(line) for line in (tmp_path / files[0]).read_text().splitlines()]
    assert lines == [
        {"_timestamp": 1_700_000_000_000, "_key": "k1", "_value": {"v": 1}},
        {"_timestamp": 1_700_000_000_001, "_key": None, "_value": {"v": 2}},
    ]


def test_file_sink_json_gzip_and_append(tmp_path):
    sink = FileSink(directory=str(tmp_path), format=JSONFormat(compress=True),
                    destination=LocalDestination(append=True))
    feed(sink, [(b"a", 1)], topic="t")
    sink.flush("t", 0)
    feed(sink, [(b"b", 2)], topic="t", start=1)
    sink.flush("t", 0)
    files = list((tmp_path / "t" / "0").iterdir())
    assert [f.name for f in files] == ["0000000000000000000.jsonl.gz"]
    lines = gzip.decompress(files[0].read_bytes()).decode().splitlines()
    assert [json.loads(line)["_value"] for line in lines] == [1, 2]


def test_file_sink_parquet_fills_missing_columns(tmp_path):
    sink = FileSink(directory=str(tmp_path), format=ParquetFormat(compression="zstd"))
    feed(sink, [(b"a", {"x": 1}), (b"b", {"y": "s"})], topic="t", partition=2, start=5)
    sink.flush("t", 2)
    path = tmp_path / "t" / "2" / "0000000000000000005.parquet"
    table = pq.read_table(path)
    assert table.to_pylist() == [
        {"_timestamp": 1_700_000_000_000, "_key": "a", "x": 1, "y": None},
        {"_timestamp": 1_700_000_000_001, "_key": "b", "x": None, "y": "s"},
    ]
    assert pq.ParquetFile(path).metadata.row_group(0).column(0).compression == "ZSTD"


def test_parquet_format_rejects_non_dict_values_naming_the_record(tmp_path):
    sink = FileSink(directory=str(tmp_path), format="parquet")
    feed(sink, [(b"a", {"x": 1}), (b"b", "not a dict")], topic="t", start=10)
    with pytest.raises(TypeError, match=r"dict values; got str at t\[0\] offset 11"):
        sink.flush("t", 0)


def test_parquet_cannot_append():
    with pytest.raises(ValueError):
        FileSink(format="parquet", destination=LocalDestination(append=True))


def test_resolve_format():
    assert isinstance(resolve_format("json"), JSONFormat)
    assert isinstance(resolve_format("parquet"), ParquetFormat)
    fmt = JSONFormat()
    assert resolve_format(fmt) is fmt
    with pytest.raises(InvalidFormatError):
        resolve_format("avro")
    with pytest.raises(ValueError):
        ParquetFormat(compression="lzo")


@pytest.mark.parametrize("directory", ["bad*dir", "a/../../etc", "x;rm"])
def test_directory_is_validated(directory):
    with pytest.raises(ValueError):
        FileSink(directory=directory)


def test_destination_failure_becomes_backpressure(tmp_path):
    class Failing(Destination):
        def write(self, data, batch):
            raise OSError("disk full")

    sink = FileSink(directory="out", destination=Failing())
    feed(sink, [(b"a", {"x": 1})], topic="t", partition=3)
    with pytest.raises(SinkBackpressureError) as info:
        sink.flush("t", 3)
    assert (info.value.retry_after, info.value.topic, info.value.partition) == (5.0, "t", 3)


def test_no_temp_file_left_behind(tmp_path):
    sink = FileSink(directory=str(tmp_path), format="json")
    feed(sink, [(b"a", 1)], topic="t")
    sink.flush("t", 0)
    assert [p.name for p in (tmp_path / "t" / "0").iterdir()] == ["0000000000000000000.jsonl"]


def test_sink_batch_from_file_sink_perspective():
    batch = SinkBatch("t", 0)
    batch.append({"a": 1}, b"k", 1, [], 3)
    data = JSONFormat().serialize(batch)
    assert json.loads(data) == {"_timestamp": 1, "_key": "k", "_value": {"a": 1}}


def test_json_lines_written_directly_equal_the_encoded_wrapper():
    import json

    from stream_edge.sinks.community.file.formats.json import _default_line

    encode = json.JSONEncoder(separators=(",", ":"), default=str, ensure_ascii=False).encode
    for ts, key, value in [(1, b"k\xc3\xa9\"\\\n", {"a": [1.5, None, "\u2028"]}), (0, "plain", 3),
                           (-5, b"\xff\xfe", "x"), (7, None, {}), (True, "k", 1), (1.5, "k", 1), (2, 42, [])]:
        text = key.decode("utf-8", errors="replace") if isinstance(key, bytes) else key
        assert _default_line(ts, key, value) == encode({"_timestamp": ts, "_key": text, "_value": value})
