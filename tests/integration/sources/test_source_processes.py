"""Sources run in their own processes: a source's error stops ``app.run()`` with that error (while
dataframes run and when only sources run), a source's process that dies is reported, and the
S3FileSource reads a real S3 server (the project's moto) on the real broker."""

from __future__ import annotations

import gzip
import io
import json
import os
import signal
import uuid

import orjson
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from stream_edge.sources import Source, SourceException
from stream_edge.sources.community.file.s3 import S3FileSource

pytestmark = pytest.mark.integration


class Failing(Source):
    def run(self):
        msg = self.serialize(key=b"a", value={"ok": 1})
        self.produce(key=msg.key, value=msg.value)
        self.flush()
        raise ValueError("sensor feed closed: record 3 has no field 'reading'")


class Sleeper(Source):
    def run(self):
        with open(self.pid_file, "w") as handle:
            handle.write(str(os.getpid()))
        while self.running:
            self.flush(0.1)


def test_a_failing_source_stops_running_dataframes_with_its_error(new_app, make_topic, kafka_bootstrap):
    from confluent_kafka import Producer

    other = make_topic(prefix="busy")
    producer = Producer({"bootstrap.servers": kafka_bootstrap})
    for i in range(50):
        producer.produce(other, json.dumps({"i": i}).encode())
    producer.flush(30)
    app = new_app()
    seen = []
    app.dataframe(app.topic(other)).update(lambda v: seen.append(v["i"]))
    app.dataframe(source=Failing(name=f"failing-{uuid.uuid4().hex[:6]}")).update(lambda v: seen.append(v))
    with pytest.raises(SourceException) as info:
        app.run()  # no timeout: only the source's error can stop it
    assert isinstance(info.value.__cause__, ValueError)
    assert "record 3 has no field 'reading'" in str(info.value.__cause__)
    assert str(info.value) == f"{info.value.process.name} with PID {info.value.pid} failed"
    assert info.value.exitcode == 0


def test_a_failing_source_stops_an_app_with_only_sources(new_app):
    app = new_app()
    app.add_source(Failing(name=f"failing-{uuid.uuid4().hex[:6]}"))
    with pytest.raises(SourceException) as info:
        app.run()
    assert "record 3" in str(info.value.__cause__)


def test_a_killed_source_process_stops_the_app(new_app, tmp_path):
    app = new_app()
    source = Sleeper(name=f"sleeper-{uuid.uuid4().hex[:6]}")
    source.pid_file = str(tmp_path / "pid")
    app.add_source(source)

    import threading

    def kill_when_started():
        import time

        for _ in range(600):
            if os.path.exists(source.pid_file) and os.path.getsize(source.pid_file):
                os.kill(int(open(source.pid_file).read()), signal.SIGKILL)
                return
            time.sleep(0.05)

    threading.Thread(target=kill_when_started, daemon=True).start()
    with pytest.raises(SourceException, match=r"failed with exitcode -9") as info:
        app.run()
    assert info.value.__cause__ is None


def test_s3_file_source_reads_json_gzip_and_parquet_objects(new_app, services_env, read_all):
    import boto3

    endpoint = services_env["S3_ENDPOINT"]
    bucket = f"files-{uuid.uuid4().hex[:8]}"
    s3 = boto3.client("s3", endpoint_url=endpoint, region_name=services_env.get("AWS_REGION", "us-east-1"),
                      aws_access_key_id=services_env["AWS_ACCESS_KEY_ID"],
                      aws_secret_access_key=services_env["AWS_SECRET_ACCESS_KEY"])
    s3.create_bucket(Bucket=bucket)

    def put_json(key, records):
        body = gzip.compress("".join(json.dumps(r) + "\n" for r in records).encode())
        s3.put_object(Bucket=bucket, Key=key, Body=body)

    records = [{"_key": f"k{i}", "_value": {"i": i}, "_timestamp": 1_700_000_000_000 + i} for i in range(9)]
    put_json("topics/readings/1/0000.jsonl.gz", records[6:])
    put_json("topics/readings/0/0003.jsonl.gz", records[3:6])
    put_json("topics/readings/0/0000.jsonl.gz", records[:3])
    buffer = io.BytesIO()
    pq.write_table(pa.table({"_key": ["p"], "_timestamp": [1_700_000_000_500], "x": [1.5]}), buffer)
    s3.put_object(Bucket=bucket, Key="tables/one.parquet", Body=buffer.getvalue())

    creds = dict(bucket=bucket, endpoint_url=endpoint, region_name=services_env.get("AWS_REGION", "us-east-1"),
                 aws_access_key_id=services_env["AWS_ACCESS_KEY_ID"],
                 aws_secret_access_key=services_env["AWS_SECRET_ACCESS_KEY"])
    source = S3FileSource("topics/readings", compression="gzip", replay_speed=0, has_partition_folders=True,
                          name=f"s3-{uuid.uuid4().hex[:6]}", **creds)
    assert source.file_partition_counter() == 2
    app = new_app()
    app.dataframe(source=source)
    rows = app.run(count=9, timeout=60, metadata=True)
    assert sorted((r["_key"], r["_timestamp"], r["i"]) for r in rows) == [
        (f"k{i}".encode(), 1_700_000_000_000 + i, i) for i in range(9)]
    topic = f"source__{source.name}"
    assert app.topic_manager.all_topics[topic].create_config.num_partitions == 2
    by_partition = [[orjson.loads(m.value())["i"] for m in read_all(topic, p)] for p in (0, 1)]
    in_order = [i for part in by_partition for i in part]
    assert sorted(in_order) == list(range(9))
    # within a partition, files arrive in key order: 0/0000 before 0/0003 before 1/0000
    for part in by_partition:
        assert part == sorted(part)

    parquet = S3FileSource("tables/one.parquet", file_format="parquet", replay_speed=0,
                           name=f"s3pq-{uuid.uuid4().hex[:6]}", **creds)
    app = new_app()
    app.dataframe(source=parquet)
    assert app.run(count=1, timeout=60, metadata=True)[0] | {"_topic": None} == {
        "_key": b"p", "_timestamp": 1_700_000_000_500, "_headers": None, "_topic": None, "_partition": 0,
        "_offset": 0, "x": 1.5}


class Numbers(Source):
    def run(self):
        for i in range(4):
            msg = self.serialize(key=f"n{i}", value={"n": i, "pid": os.getpid()})
            self.produce(key=msg.key, value=msg.value)


def test_sources_also_run_with_the_spawn_start_method(new_app, monkeypatch):
    monkeypatch.setenv("STREAM_EDGE_SOURCE_START_METHOD", "spawn")
    app = new_app()
    app.dataframe(source=Numbers(name=f"spawned-{uuid.uuid4().hex[:6]}"))
    rows = app.run(count=4, timeout=60, metadata=True)
    assert [(r["_key"], r["n"]) for r in rows] == [(f"n{i}".encode(), i) for i in range(4)]
    assert {r["pid"] for r in rows} != {os.getpid()}
