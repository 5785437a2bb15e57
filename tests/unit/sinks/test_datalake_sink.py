"""DataLakeSink on a real local filesystem: layout, contents, schema rules, exactly-once decisions.

The protocol's crash points are exercised here in-process (a hook raising at each point); the
kill -9 versions against a real broker live in tests/integration/sinks.
"""

from __future__ import annotations

import json
import logging
import os
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from stream_edge.lake import parse_partition_path
from stream_edge.sinks.core.datalake import DataLakeSink, RecordTypeError, SchemaConflictError
from stream_edge.sinks.core.datalake.lake_writer import CRASH_POINTS
from stream_edge.sinks.core.quix_ts_datalake_sink import QuixTSDataLakeSink
from stream_edge.sinks.core.stream_timeout_tracker import StreamTimeoutTracker

TS = 1_745_311_234_567  # 2025-04-22 08:40:34.567 UTC


def files_under(root: Path) -> list[str]:
    return sorted(str(p.relative_to(root)) for p in root.rglob("*") if p.is_file())


def data_files(root: Path) -> list[str]:
    return [f for f in files_under(root) if not f.startswith("_")]


def read_rows(root: Path) -> list[dict]:
    rows = []
    for rel in data_files(root):
        rows.extend(pq.read_table(root / rel).to_pylist())
    return rows


def make_sink(tmp_path, **kw) -> DataLakeSink:
    kw.setdefault("storage_url", (tmp_path / "lake").as_uri())
    kw.setdefault("table_name", "readings")
    sink = DataLakeSink(**kw)
    sink.setup()
    return sink


def feed(sink, values, topic="sensors", partition=0, start=0, key=b"k", timestamp=TS):
    for i, value in enumerate(values):
        sink.add(value, key, timestamp + i, [], topic, partition, start + i)


# -- layout and contents ----------------------------------------------------------------------

def test_layout_without_hive_columns(tmp_path):
    sink = make_sink(tmp_path, s3_prefix="edge/ts")
    feed(sink, [{"v": 1}, {"v": 2}], start=100)
    sink.flush("sensors", 0)
    root = tmp_path / "lake" / "edge" / "ts" / "readings"
    assert files_under(root) == [
        "_commits/sensors/0/00000000000000000000.json",  # slot 0: the sink claims the partition
        "_commits/sensors/0/00000000000000000001.json",  # slot 1: the commit of offsets 100-101
        "part-sensors-p0-o00000000000000000100-00000000000000000101.parquet",
    ]
    assert read_rows(root) == [{"v": 1}, {"v": 2}]
    assert sink.table_uri == str(root)


def test_layout_year_month_day_from_timestamp_column(tmp_path):
    sink = make_sink(tmp_path, hive_columns=["year", "month", "day"], timestamp_column="ts_ms")
    day1, day2 = 1_704_067_199_000, 1_704_067_200_000  # 2023-12-31 23:59:59, 2024-01-01 00:00:00
    feed(sink, [{"ts_ms": day1, "v": 1}, {"ts_ms": day2, "v": 2}, {"ts_ms": day1, "v": 3}])
    sink.flush("sensors", 0)
    root = tmp_path / "lake" / "readings"
    name = "part-sensors-p0-o00000000000000000000-00000000000000000002.parquet"
    assert data_files(root) == [f"year=2023/month=12/day=31/{name}", f"year=2024/month=01/day=01/{name}"]
    assert pq.read_table(root / f"year=2023/month=12/day=31/{name}").to_pylist() == [
        {"ts_ms": day1, "v": 1, "year": 2023, "month": 12, "day": 31},
        {"ts_ms": day1, "v": 3, "year": 2023, "month": 12, "day": 31},
    ]
    assert pq.read_table(root / f"year=2024/month=01/day=01/{name}").column("v").to_pylist() == [2]


def test_layout_value_and_hour_columns_with_hostile_values(tmp_path):
    sink = make_sink(tmp_path, hive_columns=["sensor", "hour"], timestamp_column="ts_ms")
    hostile = ["../x", "a/b", "=", "%", "ünï ✓", "", None, ".."]
    feed(sink, [{"sensor": s, "ts_ms": TS, "i": i} for i, s in enumerate(hostile)])
    sink.flush("sensors", 0)
    root = tmp_path / "lake" / "readings"
    dirs = sorted({f.rsplit("/", 1)[0] for f in data_files(root)})
    assert dirs == sorted([
        "sensor=..%2Fx/hour=08", "sensor=a%2Fb/hour=08", "sensor=%3D/hour=08", "sensor=%25/hour=08",
        "sensor=ünï ✓/hour=08", "sensor=__HIVE_DEFAULT_PARTITION__/hour=08", "sensor=../hour=08",
    ])
    # Every file is inside the table root, and the path gives back the value.
    for rel in data_files(root):
        assert (root / rel).resolve().is_relative_to(root.resolve())
        (column, value), _ = parse_partition_path(rel.rsplit("/", 1)[0])
        rows = pq.read_table(root / rel).to_pylist()
        assert {r["sensor"] or None for r in rows} == {value}
    # The file keeps the exact value, including '' (which the path can only say as NULL).
    assert sorted(r["i"] for r in read_rows(root)) == list(range(len(hostile)))
    assert {r["sensor"] for r in read_rows(root)} == set(hostile)


def test_time_partitions_from_kafka_timestamp_when_no_column(tmp_path):
    sink = make_sink(tmp_path, hive_columns=["year", "hour"])
    feed(sink, [{"v": 1}], timestamp=0)
    sink.flush("sensors", 0)
    assert data_files(tmp_path / "lake" / "readings")[0].startswith("year=1970/hour=00/")


def test_missing_timestamp_goes_to_default_partition(tmp_path):
    sink = make_sink(tmp_path, hive_columns=["day"], timestamp_column="ts_ms")
    feed(sink, [{"v": 1}, {"ts_ms": None, "v": 2}])
    sink.flush("sensors", 0)
    (rel,) = data_files(tmp_path / "lake" / "readings")
    assert rel.startswith("day=__HIVE_DEFAULT_PARTITION__/")


def test_partitions_of_a_topic_have_separate_files_and_logs(tmp_path):
    sink = make_sink(tmp_path)
    feed(sink, [{"v": 1}], partition=0, start=5)
    feed(sink, [{"v": 2}], partition=1, start=5)
    feed(sink, [{"v": 3}], topic="other", partition=0, start=5)
    for topic, partition in (("sensors", 0), ("sensors", 1), ("other", 0)):
        sink.flush(topic, partition)
    root = tmp_path / "lake" / "readings"
    assert [f for f in files_under(root) if f.startswith("_commits")] == [
        f"_commits/{log}/{slot:020d}.json" for log in ("other/0", "sensors/0", "sensors/1") for slot in (0, 1)
    ]
    assert len(data_files(root)) == 3


def test_commit_record_content(tmp_path):
    sink = make_sink(tmp_path, hive_columns=["sensor"])
    feed(sink, [{"sensor": "a", "v": 1}, {"sensor": "b", "v": 2}], start=7)
    sink.flush("sensors", 0)
    claim = json.loads((tmp_path / "lake/readings/_commits/sensors/0/00000000000000000000.json").read_text())
    assert (claim["kind"], claim["epoch"], claim["last_offset"], claim["files"]) == ("claim", 1, -1, [])
    record = json.loads((tmp_path / "lake/readings/_commits/sensors/0/00000000000000000001.json").read_text())
    assert (record["kind"], record["epoch"], record["writer"]) == ("commit", 1, claim["writer"])
    assert (record["topic"], record["partition"], record["first_offset"], record["last_offset"]) == ("sensors", 0, 7, 8)
    assert record["rows"] == 2
    assert [f["path"] for f in record["files"]] == [
        "sensor=a/part-sensors-p0-o00000000000000000007-00000000000000000008.parquet",
        "sensor=b/part-sensors-p0-o00000000000000000007-00000000000000000008.parquet",
    ]
    assert record["schema"] == {"sensor": "string", "v": "int64"}


def test_compression_and_row_group_size(tmp_path):
    sink = make_sink(tmp_path, compression="zstd", row_group_size=10)
    feed(sink, [{"v": i} for i in range(25)])
    sink.flush("sensors", 0)
    (rel,) = data_files(tmp_path / "lake" / "readings")
    meta = pq.ParquetFile(tmp_path / "lake" / "readings" / rel).metadata
    assert meta.num_row_groups == 3 and meta.num_rows == 25
    assert meta.row_group(0).column(0).compression == "ZSTD"
    with pytest.raises(ValueError):
        DataLakeSink("t", storage_url=str(tmp_path), compression="lzo")


def column_encodings(tmp_path, **kw) -> dict:
    sink = make_sink(tmp_path, **kw)
    feed(sink, [{"id": i, "sensor": f"s{i % 3}", "temp": i / 4, "raw": b"x"} for i in range(50)])
    sink.flush("sensors", 0)
    (rel,) = data_files(tmp_path / "lake" / "readings")
    group = pq.ParquetFile(tmp_path / "lake" / "readings" / rel).metadata.row_group(0)
    return {group.column(i).path_in_schema: "RLE_DICTIONARY" in group.column(i).encodings
            for i in range(group.num_columns)}


def test_only_string_and_binary_columns_are_dictionary_encoded_by_default(tmp_path):
    assert column_encodings(tmp_path) == {"id": False, "sensor": True, "temp": False, "raw": True}


@pytest.mark.parametrize("setting, expected", [("all", True), ("none", False)])
def test_dictionary_encoding_of_every_column_or_none(tmp_path, setting, expected):
    assert set(column_encodings(tmp_path, dictionary_encoding=setting).values()) == {expected}


def test_an_unknown_dictionary_encoding_is_refused(tmp_path):
    with pytest.raises(ValueError, match="dictionary_encoding"):
        DataLakeSink("t", storage_url=str(tmp_path), dictionary_encoding="ints")

def test_staging_folders_are_gone_after_each_commit(tmp_path):
    sink = make_sink(tmp_path, hive_columns=["year", "month", "day"], timestamp_column="ts_ms")
    day1, day2 = 1_704_067_199_000, 1_704_067_200_000
    feed(sink, [{"ts_ms": day1, "v": 1}, {"ts_ms": day2, "v": 2}])
    sink.flush("sensors", 0)
    staging = tmp_path / "lake" / "readings" / "_tmp" / "sensors" / "0"
    assert list(staging.iterdir()) == []  # every folder the files were staged in, the owner's too
    assert sorted(r["v"] for r in read_rows(tmp_path / "lake" / "readings")) == [1, 2]


def test_leftovers_of_a_failed_commit_go_with_the_next_commits_staging_folder(tmp_path):
    sink = make_sink(tmp_path, hive_columns=["day"], timestamp_column="ts_ms")
    feed(sink, [{"ts_ms": TS, "v": 1}])
    sink.flush("sensors", 0)
    staging = tmp_path / "lake" / "readings" / "_tmp" / "sensors" / "0"
    epoch = sink._writer._epochs[("sensors", 0)]
    stray = staging / f"e{epoch}" / "00000000000000000005-00000000000000000009" / "day=2025-04-22" / "part.parquet"
    stray.parent.mkdir(parents=True)
    stray.write_bytes(b"staged by a commit that failed")
    feed(sink, [{"ts_ms": TS, "v": 2}], start=1)
    sink.flush("sensors", 0)
    assert list(staging.iterdir()) == []
    assert sorted(r["v"] for r in read_rows(tmp_path / "lake" / "readings")) == [1, 2]

def test_kafka_metadata_columns(tmp_path):
    sink = make_sink(tmp_path, include_kafka_metadata=True)
    sink.add({"v": 1}, b"\x00raw", 11, [], "sensors", 3, 42)
    sink.add({"v": 2}, "text", 12, [], "sensors", 3, 43)
    sink.add({"v": 3}, None, 13, [], "sensors", 3, 44)
    sink.flush("sensors", 3)
    rows = read_rows(tmp_path / "lake" / "readings")
    assert [(r["_kafka_topic"], r["_kafka_partition"], r["_kafka_offset"], r["_kafka_timestamp"], r["_kafka_key"])
            for r in rows] == [("sensors", 3, 42, 11, b"\x00raw"), ("sensors", 3, 43, 12, b"text"),
                               ("sensors", 3, 44, 13, None)]


def test_quix_constructor(tmp_path):
    sink = QuixTSDataLakeSink(
        s3_prefix="data-lake/time-series", table_name="sensor_readings", workspace_id="",
        hive_columns=["year", "month", "day"], timestamp_column="ts_ms",
        catalog_url="http://catalog.invalid", catalog_auth_token="secret", auto_discover=True,
        storage_url=str(tmp_path / "lake"),
    )
    sink.setup()
    feed(sink, [{"ts_ms": TS, "v": 1}])
    sink.flush("sensors", 0)
    assert data_files(tmp_path / "lake/data-lake/time-series/sensor_readings")[0].startswith("year=2025/month=04/day=22/")
    assert isinstance(sink._timeout, StreamTimeoutTracker) and not sink._timeout.enabled


def test_storage_url_from_environment(tmp_path, monkeypatch):
    monkeypatch.setenv("STREAM_EDGE_STORAGE_URL", (tmp_path / "envlake").as_uri())
    sink = DataLakeSink("t")
    sink.setup()
    feed(sink, [{"v": 1}])
    sink.flush("sensors", 0)
    assert len(data_files(tmp_path / "envlake" / "t")) == 1


def test_no_staging_left_and_no_empty_write(tmp_path):
    sink = make_sink(tmp_path)
    sink.flush("sensors", 0)  # nothing added: nothing written
    feed(sink, [{"v": 1}])
    sink.flush("sensors", 0)
    root = tmp_path / "lake" / "readings"
    assert not (root / "_tmp").exists() or files_under(root / "_tmp") == []
    assert len(data_files(root)) == 1


# -- schema -----------------------------------------------------------------------------------

def test_new_columns_appear_in_later_files(tmp_path):
    sink = make_sink(tmp_path)
    feed(sink, [{"a": 1}], start=0)
    sink.flush("sensors", 0)
    feed(sink, [{"a": 2, "b": "new"}, {"a": 3, "c": [1, 2]}], start=1)
    sink.flush("sensors", 0)
    root = tmp_path / "lake" / "readings"
    first, second = data_files(root)
    assert pq.read_table(root / first).column_names == ["a"]
    assert pq.read_table(root / second).to_pylist() == [{"a": 2, "b": "new", "c": None}, {"a": 3, "b": None, "c": [1, 2]}]


def add_all(sink, values, topic="sensors", partition=0, start=0):
    """Add every record; returns {offset: error} of the ones add() refused (the others are buffered)."""
    refused = {}
    for i, value in enumerate(values):
        try:
            sink.add(value, b"k", TS + i, [], topic, partition, start + i)
        except SchemaConflictError as exc:
            refused[start + i] = exc
    return refused


def lake_values(root, column):
    return sorted((r[column] for r in read_rows(root)), key=repr)


def test_type_conflict_is_the_records_error_at_add(tmp_path):
    sink = make_sink(tmp_path)
    refused = add_all(sink, [{"v": 1}, {"v": 2}, {"v": "three"}, {"v": 4}], start=40)
    err = refused.pop(42)
    assert refused == {}
    assert (err.column, err.topic, err.partition, err.offset) == ("v", "sensors", 0, 42)
    assert "type conflict in column 'v' at sensors[0] offset 42" in str(err) and "'three'" in str(err)
    assert "str" in str(err) and "int64" in str(err)
    sink.flush("sensors", 0)  # no content error at the checkpoint: the others are written
    assert lake_values(tmp_path / "lake" / "readings", "v") == [1, 2, 4]


def test_type_conflict_across_batches_and_restarts(tmp_path):
    sink = make_sink(tmp_path)
    feed(sink, [{"v": 1}])
    sink.flush("sensors", 0)
    refused = add_all(sink, [{"v": None}, {"v": "x"}], start=1)
    assert list(refused) == [2] and "column 'v' at sensors[0] offset 2" in str(refused[2])
    sink.flush("sensors", 0)
    restarted = make_sink(tmp_path)  # learns the schema from the commit log
    with pytest.raises(SchemaConflictError, match="int64"):
        restarted.add({"v": "x"}, b"k", TS, [], "sensors", 1, 0)
    restarted.flush("sensors", 1)
    assert [r["v"] for r in read_rows(tmp_path / "lake" / "readings")] == [1, None]


def test_bool_is_not_coerced_to_int(tmp_path):
    sink = make_sink(tmp_path)
    refused = add_all(sink, [{"flag": 1}, {"flag": True}], start=3)
    assert list(refused) == [4] and refused[4].column == "flag"


def test_int_and_float_mix_becomes_float_only_when_exact(tmp_path):
    sink = make_sink(tmp_path)
    feed(sink, [{"t": 20}, {"t": 20.5}])  # not written yet, every int exact: the column is double
    sink.flush("sensors", 0)
    feed(sink, [{"t": 21}], start=2)  # an int into a double column: exact, stored as a double
    sink.flush("sensors", 0)
    rows = read_rows(tmp_path / "lake" / "readings")
    assert [r["t"] for r in rows] == [20.0, 20.5, 21.0]
    assert list(add_all(sink, [{"t": 2**60}], start=3)) == [3]  # not exact in float64: refused
    refused = add_all(sink, [{"big": 2**60}, {"big": 0.5}], start=4)
    assert list(refused) == [5] and "2^53" in str(refused[5])


def test_float_column_refuses_to_become_int_after_float(tmp_path):
    sink = make_sink(tmp_path)
    feed(sink, [{"n": 1}])
    sink.flush("sensors", 0)
    refused = add_all(sink, [{"n": 1.5}], start=1)
    assert list(refused) == [1] and "written as integers" in str(refused[1])


@pytest.mark.parametrize("poison, column, words", [
    ({"v": 2**63}, "v", "past int64"),
    ({"v": -(2**63) - 1}, "v", "past int64"),
    ({"v": [1, 2]}, "v", "list"),
    ({"v": {"a": 1}}, "v", "dict"),
    ({"v": b"raw"}, "v", "bytes"),
    ({"nested": [1, "a"]}, "nested", "no single Arrow type"),
    ({1: "x"}, "1", "field names must be strings"),
])
def test_each_kind_of_poison_is_refused_alone(tmp_path, poison, column, words):
    sink = make_sink(tmp_path)
    refused = add_all(sink, [{"v": 1}, poison, {"v": 3}])
    assert list(refused) == [1]
    assert refused[1].column == column and words in str(refused[1]) and refused[1].offset == 1
    sink.flush("sensors", 0)
    assert [r["v"] for r in read_rows(tmp_path / "lake" / "readings")] == [1, 3]


def test_nested_values_merge_or_are_refused(tmp_path):
    sink = make_sink(tmp_path)
    refused = add_all(sink, [{"s": {"a": 1}}, {"s": {"b": "x"}}, {"s": {"a": "no"}}, {"l": []}, {"l": [2]},
                             {"l": ["x"]}])
    assert list(refused) == [2, 5]
    sink.flush("sensors", 0)
    rows = read_rows(tmp_path / "lake" / "readings")
    assert [r["s"] for r in rows] == [{"a": 1, "b": None}, {"a": None, "b": "x"}, None, None]
    assert [r["l"] for r in rows] == [None, None, [], [2]]


def test_promotion_from_the_lake_int32_to_int64(tmp_path):
    import pyarrow as pa

    sink = make_sink(tmp_path)
    sink._types.adopt(pa.schema([pa.field("small", pa.int32())]))  # as a Spark job may have written it
    refused = add_all(sink, [{"small": 5}, {"small": 2**40}])
    assert refused == {} and sink._types.types["small"] == pa.int64()  # Iceberg's int -> long


def test_all_null_column_waits_for_a_type(tmp_path):
    sink = make_sink(tmp_path)
    feed(sink, [{"a": 1, "later": None}])
    sink.flush("sensors", 0)
    feed(sink, [{"a": 2, "later": "x"}], start=1)
    sink.flush("sensors", 0)
    feed(sink, [{"a": 3, "later": None}], start=2)
    sink.flush("sensors", 0)
    root = tmp_path / "lake" / "readings"
    schemas = [pq.read_schema(root / f) for f in data_files(root)]
    assert [s.names for s in schemas] == [["a"], ["a", "later"], ["a", "later"]]
    assert str(schemas[2].field("later").type) == "string"


def test_non_dict_record_is_a_clear_error(tmp_path):
    sink = make_sink(tmp_path)
    with pytest.raises(RecordTypeError, match=r"needs dict records; got list at sensors\[2\] offset 9"):
        sink.add([1, 2], b"k", 0, [], "sensors", 2, 9)
    with pytest.raises(RecordTypeError, match="got str"):
        sink.add("text", b"k", 0, [], "sensors", 2, 10)


def test_field_named_like_a_time_column_is_refused(tmp_path):
    sink = make_sink(tmp_path, hive_columns=["year"], timestamp_column="ts_ms")
    with pytest.raises(SchemaConflictError, match="hive column derived from the timestamp"):
        sink.add({"ts_ms": TS, "year": "fiscal-24"}, b"k", TS, [], "sensors", 0, 0)


@pytest.mark.parametrize("moment, words", [("2024-01-01", "epoch milliseconds"), (True, "epoch milliseconds"),
                                           (10**17, "outside years 1..9999"), (-(10**15), "outside years"),
                                           (1e300, "outside years")])
def test_a_bad_timestamp_is_that_records_error(tmp_path, moment, words):
    sink = make_sink(tmp_path, hive_columns=["year", "month", "day", "hour"], timestamp_column="ts")
    refused = add_all(sink, [{"ts": TS}, {"ts": moment}, {"ts": TS + 1}])
    assert list(refused) == [1] and words in str(refused[1]) and refused[1].column == "ts"
    sink.flush("sensors", 0)
    assert len(read_rows(tmp_path / "lake" / "readings")) == 2


def test_a_hive_value_column_must_hold_scalars(tmp_path):
    sink = make_sink(tmp_path, hive_columns=["device"])
    refused = add_all(sink, [{"device": {"id": 1}}, {"device": "a"}])
    assert list(refused) == [0] and "scalar" in str(refused[0])


# -- exactly once: skipping and recovery ------------------------------------------------------

def test_restart_skips_records_already_committed(tmp_path, caplog):
    sink = make_sink(tmp_path)
    feed(sink, [{"i": i} for i in range(10)])
    sink.flush("sensors", 0)
    # The Kafka commit never happened: a new process gets offsets 0..14 again.
    restarted = make_sink(tmp_path)
    feed(restarted, [{"i": i} for i in range(15)])
    with caplog.at_level(logging.INFO):
        restarted.flush("sensors", 0)
    assert sorted(r["i"] for r in read_rows(tmp_path / "lake" / "readings")) == list(range(15))
    assert any("skipping 10 record(s) at offsets 0..9" in r.getMessage() for r in caplog.records)
    feed(restarted, [{"i": i} for i in range(15)])  # a full replay writes nothing
    restarted.flush("sensors", 0)
    assert len(read_rows(tmp_path / "lake" / "readings")) == 15


def test_other_writer_progress_is_seen_before_each_flush(tmp_path):
    a, b = make_sink(tmp_path), make_sink(tmp_path)
    feed(a, [{"i": i} for i in range(5)])
    a.flush("sensors", 0)
    a.on_revoke("sensors", 0)
    feed(b, [{"i": i} for i in range(8)])  # partition moved to b, which replays from 0
    b.flush("sensors", 0)
    b.on_revoke("sensors", 0)
    feed(a, [{"i": i} for i in range(8, 10)], start=8)  # and back to a
    a.flush("sensors", 0)
    assert sorted(r["i"] for r in read_rows(tmp_path / "lake" / "readings")) == list(range(10))


class Crash(Exception):
    pass


@pytest.mark.parametrize("point", CRASH_POINTS)
def test_crash_at_each_protocol_point_then_replay_is_exactly_once(tmp_path, point):
    sink = make_sink(tmp_path, hive_columns=["sensor"])
    feed(sink, [{"sensor": "a", "i": 0}, {"sensor": "b", "i": 1}])
    sink.flush("sensors", 0)

    def crash(where):
        if where == point:
            raise Crash(where)

    sink._writer.crash_hook = crash
    feed(sink, [{"sensor": s, "i": i} for i, s in zip(range(2, 6), "abab")], start=2)
    with pytest.raises(Crash):
        sink.flush("sensors", 0)
    root = tmp_path / "lake" / "readings"
    visible = sorted(r["i"] for r in read_rows(root))
    committed = point in ("after-commit-record", "after-publish")
    if point == "after-commit-record":
        assert visible == [0, 1]  # committed but not yet published: still invisible
    else:
        assert visible == ([0, 1, 2, 3, 4, 5] if committed else [0, 1])
    # Restart: Kafka replays from the last committed Kafka offset (2) and beyond.
    restarted = make_sink(tmp_path, hive_columns=["sensor"])
    feed(restarted, [{"sensor": s, "i": i} for i, s in zip(range(2, 8), "ababab")], start=2)
    restarted.flush("sensors", 0)
    assert sorted(r["i"] for r in read_rows(root)) == list(range(8))
    assert not (root / "_tmp").exists() or files_under(root / "_tmp") == []


def test_commit_log_is_pruned(tmp_path):
    sink = make_sink(tmp_path, commit_log_retention=3)
    for i in range(6):
        feed(sink, [{"i": i}], start=i)
        sink.flush("sensors", 0)
    logs = [f for f in files_under(tmp_path / "lake" / "readings") if f.startswith("_commits")]
    # Slot 0 is the sink's claim of the partition, slots 1-6 the commits of offsets 0-5.
    assert [f.rsplit("/", 1)[1] for f in logs] == [f"{slot:020d}.json" for slot in (4, 5, 6)]
    root = tmp_path / "lake" / "readings"
    assert [json.loads((root / f).read_text())["last_offset"] for f in logs] == [3, 4, 5]


def test_backpressure_on_storage_failure(tmp_path):
    from stream_edge.sinks import SinkBackpressureError

    sink = make_sink(tmp_path)

    def fail(where):
        if where == "after-stage":
            raise OSError("disk full")

    sink._writer.crash_hook = fail
    feed(sink, [{"i": 1}])
    with pytest.raises(SinkBackpressureError) as info:
        sink.flush("sensors", 0)
    assert (info.value.topic, info.value.partition) == ("sensors", 0)


def test_on_paused_drops_the_buffer(tmp_path):
    sink = make_sink(tmp_path)
    feed(sink, [{"i": 1}])
    sink.on_paused("sensors", 0)
    sink.flush("sensors", 0)
    assert data_files(tmp_path / "lake" / "readings") == []


def test_write_accepts_a_sink_batch(tmp_path):
    from stream_edge.sinks import SinkBatch

    sink = make_sink(tmp_path)
    batch = SinkBatch("sensors", 0)
    batch.append({"v": 1}, b"k", 0, [], 3)
    sink.write(batch)
    assert read_rows(tmp_path / "lake" / "readings") == [{"v": 1}]


# -- silence tracker wiring -------------------------------------------------------------------

class FakeClock:
    def __init__(self):
        self.now = 0.0

    def __call__(self):
        return self.now


def test_tracker_is_wired_through_add_flush_setup_cleanup(tmp_path):
    fired = []
    sink = DataLakeSink("t", storage_url=str(tmp_path), stream_timeout_ms=1000, on_stream_timeout=fired.append)
    assert isinstance(sink._timeout, StreamTimeoutTracker) and sink._timeout.enabled
    clock = FakeClock()
    sink._timeout = StreamTimeoutTracker(1000, fired.append, clock=clock, check_interval_ms=10_000)
    sink.setup()
    assert sink._timeout.running  # setup() starts the background checks
    sink.add({"v": 1}, b"sensor-a", 0, [], "sensors", 0, 0)
    sink.add({"v": 2}, None, 0, [], "sensors", 0, 1)  # None keys are not tracked
    assert b"sensor-a" in sink._timeout and len(sink._timeout) == 1
    clock.now = 999
    sink.flush("sensors", 0)
    assert fired == []
    clock.now = 1000
    sink.flush("sensors", 0)  # a flush with nothing to write still runs the check
    assert fired == [b"sensor-a"]
    sink.cleanup()
    assert not sink._timeout.running


def test_flush_runs_the_check_even_when_the_write_fails(tmp_path):
    fired = []
    sink = make_sink(tmp_path)
    clock = FakeClock()
    sink._timeout = StreamTimeoutTracker(10, fired.append, clock=clock)
    feed(sink, [{"v": 1}], key=b"k")

    def fail(point: str) -> None:
        raise OSError(13, "Permission denied")

    sink._writer.crash_hook = fail
    clock.now = 15
    with pytest.raises(OSError):
        sink.flush("sensors", 0)
    assert fired == [b"k"]


def test_disabled_tracker_starts_no_thread(tmp_path):
    sink = make_sink(tmp_path, stream_timeout_ms=0, on_stream_timeout=print)
    assert not sink._timeout.enabled and not sink._timeout.running
    feed(sink, [{"v": 1}])
    assert len(sink._timeout) == 0
    sink.cleanup()


def test_rewound_partition_keeps_one_copy_in_the_buffer(tmp_path):
    sink = make_sink(tmp_path)
    feed(sink, [{"i": i} for i in range(6)])
    feed(sink, [{"i": i} for i in range(3, 8)], start=3)  # rewound to offset 3 without on_paused
    sink.flush("sensors", 0)
    assert sorted(r["i"] for r in read_rows(tmp_path / "lake" / "readings")) == list(range(8))


def test_leftover_commit_record_temp_file_is_removed(tmp_path):
    sink = make_sink(tmp_path)
    feed(sink, [{"i": 0}])
    sink.flush("sensors", 0)
    commits = tmp_path / "lake" / "readings" / "_commits" / "sensors" / "0"
    (commits / ".00000000000000000009.json.123.tmp").write_bytes(b"{half")
    feed(sink, [{"i": 1}], start=1)
    sink.flush("sensors", 0)
    assert sorted(p.name for p in commits.iterdir()) == [f"{slot:020d}.json" for slot in (0, 1, 2)]


def test_catalog_token_goes_to_pyiceberg_but_not_to_logs(tmp_path, caplog, monkeypatch):
    from stream_edge.sinks.core.datalake.catalog import IcebergRegistrar

    monkeypatch.setenv("AWS_ENDPOINT_URL", "http://127.0.0.1:9")
    registrar = IcebergRegistrar("http://127.0.0.1:9/catalog", "ns", "t", token="s3cr3t", hive_columns=["day"])
    props = registrar._catalog_properties()
    assert props["token"] == "s3cr3t" and props["type"] == "rest" and props["s3.endpoint"] == "http://127.0.0.1:9"
    with caplog.at_level(logging.DEBUG):
        DataLakeSink("t", storage_url=str(tmp_path), catalog_url="http://127.0.0.1:9/catalog",
                     catalog_auth_token="s3cr3t")
    assert caplog.records and all("s3cr3t" not in r.getMessage() for r in caplog.records)


# -- storage faults: transient -> backpressure with backoff, permanent -> a stop naming the file --

def test_a_permanent_storage_fault_stops_with_table_partition_and_file(tmp_path):
    from stream_edge.sinks.storage_faults import PermanentStorageError

    sink = make_sink(tmp_path, hive_columns=["device"])
    feed(sink, [{"device": "d" * 300, "v": 1}], partition=1)  # one path component past NAME_MAX
    with pytest.raises(PermanentStorageError) as info:
        sink.flush("sensors", 1)
    text = str(info.value)
    assert "'readings'" in text and "sensors[1]" in text and "device=" + "d" * 300 in text
    assert "File name too long" in text
    assert sink.stats()["storage_faults_permanent"] == 1
    assert len(sink._buffers[("sensors", 1)].offsets) == 1  # nothing dropped


def test_a_transient_storage_fault_backs_off_exponentially(tmp_path):
    from stream_edge.sinks.base import SinkBackpressureError

    sink = make_sink(tmp_path)

    def reset(point: str) -> None:
        raise ConnectionResetError(104, "Connection reset by peer")

    sink._writer.crash_hook = reset
    delays = []
    for _ in range(3):
        feed(sink, [{"v": 1}])
        with pytest.raises(SinkBackpressureError) as info:
            sink.flush("sensors", 0)
        sink.on_paused("sensors", 0)  # what the runtime does: pause and replay
        delays.append(info.value.retry_after)
    assert delays == [1.0, 2.0, 4.0] and sink.stats()["storage_faults_transient"] == 3
    sink._writer.crash_hook = None
    feed(sink, [{"v": 1}])
    sink.flush("sensors", 0)
    assert sink._backoff.failing == 0 and len(read_rows(tmp_path / "lake" / "readings")) == 1
