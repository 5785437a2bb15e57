"""Discovery of committed edge files: visibility, partition parsing, --since pruning."""

from __future__ import annotations

from datetime import datetime, timezone

import pytest

from lakehouse.lake_files import (
    LakeLayoutError,
    LakeLocation,
    edge_file_at,
    list_committed_files,
    parse_since,
    partition_time_end,
)
from stream_edge.sinks.core.datalake import DataLakeSink

TS = 1_767_225_600_000  # 2026-01-01T00:00:00Z


def write(tmp_path, records, hive_columns=("year", "month", "day", "hour", "sensor")):
    sink = DataLakeSink("t", storage_url=tmp_path.as_uri(), hive_columns=list(hive_columns),
                        timestamp_column="ts_ms")
    sink.setup()
    for offset, record in enumerate(records):
        sink.add(record, None, record["ts_ms"], [], "topic", 0, offset)
    sink.flush("topic", 0)
    return tmp_path / "t"


def test_lists_only_committed_files_with_unescaped_partition_values(tmp_path):
    root = write(tmp_path, [{"ts_ms": TS, "sensor": "a/b=c%", "v": 1}, {"ts_ms": TS + 3_600_000, "sensor": None, "v": 2}])
    (root / "_tmp" / "x").mkdir(parents=True)
    (root / "_tmp" / "x" / "staged.parquet").write_bytes(b"uncommitted")
    (root / "year=2026" / ".hidden.parquet").write_bytes(b"invisible")
    files = list(list_committed_files(LakeLocation.parse(str(root))))
    assert sorted(f.partition_dict()["sensor"] or "NULL" for f in files) == ["NULL", "a/b=c%"]
    assert {f.partition_dict()["hour"] for f in files} == {"00", "01"}
    assert all(f.size > 0 and f.relative_path.endswith(".parquet") for f in files)
    again = edge_file_at(LakeLocation.parse(str(root)), files[0].relative_path)
    assert again == files[0]


def test_since_prunes_whole_partitions(tmp_path):
    root = write(tmp_path, [{"ts_ms": TS + h * 3_600_000, "sensor": "s", "v": h} for h in range(4)])
    since = datetime(2026, 1, 1, 2, 30, tzinfo=timezone.utc)
    files = list(list_committed_files(LakeLocation.parse(root.as_uri()), since=since))
    assert sorted(f.partition_dict()["hour"] for f in files) == ["02", "03"]


def test_a_foreign_directory_is_a_layout_error(tmp_path):
    root = write(tmp_path, [{"ts_ms": TS, "sensor": "s", "v": 1}])
    (root / "not-a-partition").mkdir()
    with pytest.raises(LakeLayoutError, match="not a Hive partition"):
        list(list_committed_files(LakeLocation.parse(str(root))))


def test_missing_root_lists_nothing(tmp_path):
    assert list(list_committed_files(LakeLocation.parse(str(tmp_path / "nope")))) == []


@pytest.mark.parametrize("text, uri", [("/data/lake/t/", "file:///data/lake/t"), ("file:///data/t", "file:///data/t"),
                                       ("s3://bucket/p/t", "s3a://bucket/p/t"), ("s3a://b/t", "s3a://b/t")])
def test_locations_normalise(text, uri):
    assert LakeLocation.parse(text).uri == uri


def test_unsupported_scheme_is_refused():
    with pytest.raises(LakeLayoutError, match="unsupported"):
        LakeLocation.parse("hdfs://nn/t")


def test_parse_since_forms():
    now = datetime(2026, 1, 10, 12, tzinfo=timezone.utc)
    assert parse_since("2d", now=now) == datetime(2026, 1, 8, 12, tzinfo=timezone.utc)
    assert parse_since("2026-01-02") == datetime(2026, 1, 2, tzinfo=timezone.utc)
    assert parse_since("2026-01-02T03:00+01:00") == datetime(2026, 1, 2, 2, tzinfo=timezone.utc)
    assert parse_since(None) is None
    with pytest.raises(ValueError, match="relative age"):
        parse_since("last tuesday")


def test_partition_time_end():
    assert partition_time_end({"year": "2026"}) == datetime(2027, 1, 1, tzinfo=timezone.utc)
    assert partition_time_end({"year": "2026", "month": "12"}) == datetime(2027, 1, 1, tzinfo=timezone.utc)
    assert partition_time_end({"year": "2026", "month": "02", "day": "28", "hour": "23"}) == \
        datetime(2026, 3, 1, tzinfo=timezone.utc)
    assert partition_time_end({"sensor": "x"}) is None
    assert partition_time_end({"year": None}) is None
