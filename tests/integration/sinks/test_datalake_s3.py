"""DataLakeSink against the real local S3 server: layout, recovery after a crash, Spark over s3a."""

from __future__ import annotations

import io

import pyarrow.parquet as pq
import pytest

from stream_edge.sinks.core.datalake import DataLakeSink

pytestmark = pytest.mark.integration

TS = 1_745_311_234_567


class Crash(Exception):
    pass


def make_sink(bucket, **kw):
    sink = DataLakeSink("readings", storage_url=f"s3://{bucket}", s3_prefix="edge",
                        hive_columns=["sensor", "day"], timestamp_column="ts_ms", **kw)
    sink.setup()
    return sink


def feed(sink, start, stop):
    for i in range(start, stop):
        sink.add({"sensor": "a/b" if i % 2 else "c", "ts_ms": TS, "i": i}, b"k", TS, [], "sensors", 0, i)


def rows_in(s3_client, bucket, keys):
    out = []
    for key in keys:
        if key.endswith(".parquet") and "/_" not in "/" + key.split("edge/readings/", 1)[1]:
            body = s3_client.get_object(Bucket=bucket, Key=key)["Body"].read()
            out.extend(pq.read_table(io.BytesIO(body)).to_pylist())
    return out


def test_s3_layout_and_exactly_once_after_crash(s3_bucket, s3_client, list_keys):
    sink = make_sink(s3_bucket, compression="zstd")
    feed(sink, 0, 4)
    sink.flush("sensors", 0)
    name = "part-sensors-p0-o00000000000000000000-00000000000000000003.parquet"
    assert [k for k in list_keys(s3_bucket) if not k.endswith("/")] == [
        "edge/readings/_commits/sensors/0/00000000000000000000.json",  # the sink's claim of the partition
        "edge/readings/_commits/sensors/0/00000000000000000001.json",  # the commit of offsets 0-3
        f"edge/readings/sensor=a%2Fb/day=22/{name}",
        f"edge/readings/sensor=c/day=22/{name}",
    ]
    # Crash after the commit record, before publishing: files stay staged (invisible).
    def crash(point):
        if point == "after-commit-record":
            raise Crash(point)

    sink._writer.crash_hook = crash
    feed(sink, 4, 8)
    with pytest.raises(Crash):
        sink.flush("sensors", 0)
    assert sorted(r["i"] for r in rows_in(s3_client, s3_bucket, list_keys(s3_bucket))) == [0, 1, 2, 3]
    assert any(k.startswith("edge/readings/_tmp/") and k.endswith(".parquet") for k in list_keys(s3_bucket))
    # A new process replays offsets 4.. (Kafka commit never happened) and rolls forward.
    restarted = make_sink(s3_bucket)
    feed(restarted, 4, 10)
    restarted.flush("sensors", 0)
    keys = list_keys(s3_bucket)
    # Nothing left staged (pyarrow may keep a bare folder marker for a partition's staging folder,
    # one per partition: each owner's epoch folder below it is removed).
    assert [k for k in keys if k.startswith("edge/readings/_tmp/") and not k.endswith("/")] == []
    assert all(k.count("/") <= 5 for k in keys if k.startswith("edge/readings/_tmp/")), [k for k in keys if "_tmp" in k]
    assert sorted(r["i"] for r in rows_in(s3_client, s3_bucket, keys)) == list(range(10))


@pytest.mark.spark
def test_spark_reads_the_s3_lake(s3_bucket, spark):
    sink = make_sink(s3_bucket)
    feed(sink, 0, 6)
    sink.flush("sensors", 0)
    df = spark.read.parquet(f"s3a://{s3_bucket}/edge/readings")
    assert sorted((r["sensor"], r["i"]) for r in df.select("sensor", "i").collect()) == [
        ("a/b", 1), ("a/b", 3), ("a/b", 5), ("c", 0), ("c", 2), ("c", 4)]


def test_missing_bucket_is_a_clear_setup_error(s3_env):
    sink = DataLakeSink("t", storage_url="s3://no-such-bucket-here")
    with pytest.raises(FileNotFoundError, match="no-such-bucket-here"):
        sink.setup()
