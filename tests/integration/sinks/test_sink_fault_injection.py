"""Fault injection on the real broker: poison records and a permanent storage fault against the
data-lake sink, run by a real Application (issue 42: a record is responsible for itself).

- skip policy (``on_processing_error`` returns True): every good record lands in the lake exactly
  once, each poison record reaches the callback exactly once with its topic, partition and offset,
  and the application never stops;
- no callback: a clean stop whose error names the topic, partition, offset and field;
- a 300-character partition value (``ENAMETOOLONG`` on the local filesystem): the application stops
  with an error naming the table, the topic partition and the file, instead of retrying forever.
"""

from __future__ import annotations

import json
import uuid
from pathlib import Path

import pyarrow.dataset as ds
import pytest
from confluent_kafka import Producer

from stream_edge import Application
from stream_edge.sinks.core.quix_ts_datalake_sink import QuixTSDataLakeSink
from stream_edge.sinks.storage_faults import PermanentStorageError

pytestmark = pytest.mark.integration

BASE_TS = 1_767_571_200_000  # 2026-01-05 00:00 UTC
GOOD = 2_000
# (partition, position among that partition's records, poison value, field the error names)
POISON = [
    (0, 300, {"sensor": 1, "seq": -1, "ts_ms": BASE_TS, "v": "twenty"}, "v"),  # a string where an int was
    # an int past int64 (orjson reads ints up to 2^64 - 1; longer ones fail deserialization already)
    (0, 700, {"sensor": 1, "seq": -2, "ts_ms": BASE_TS, "v": 2 ** 63 + 5}, "v"),
    (1, 400, {"sensor": 2, "seq": -3, "ts_ms": 10 ** 17, "v": 1}, "ts_ms"),  # a timestamp far out of range
    (1, 800, {"sensor": 2, "seq": -4, "ts_ms": BASE_TS, "v": [1, 2]}, "v"),  # a list where an int was
]


def good(seq: int) -> dict:
    return {"sensor": seq % 5, "seq": seq, "ts_ms": BASE_TS + seq * 7_000, "v": seq, "temp": 20.5 + seq % 3}


def produce(bootstrap: str, topic: str, poison: list) -> dict:
    """Good readings split over partitions 0 and 1, poison records at their positions; returns
    ``{(partition, offset): (field, record)}`` of the poison records."""
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5})
    positions = {(p, at): (record, field) for p, at, record, field in poison}
    placed, next_offset, seq = {}, {0: 0, 1: 0}, 0
    while seq < GOOD or any(next_offset[p] <= at for p, at in positions):
        partition = seq % 2 if seq < GOOD else next(p for p, at in positions if next_offset[p] <= at)
        here = (partition, next_offset[partition])
        if here in positions:
            record, field = positions[here]
            placed[here] = (field, record)
        elif seq < GOOD:
            record = good(seq)
            seq += 1
        else:
            record = {"sensor": 0, "seq": -100 - next_offset[partition], "ts_ms": BASE_TS, "v": 0}  # filler
        producer.produce(topic, key=f"sensor-{record['sensor']}".encode(), value=json.dumps(record).encode(),
                         partition=partition)
        next_offset[partition] += 1
    assert producer.flush(30) == 0
    return placed


def lake_rows(root: Path) -> list[dict]:
    files = [str(p) for p in root.rglob("*.parquet")
             if not any(part.startswith(("_", ".")) for part in p.relative_to(root).parts)]
    return ds.dataset(files, format="parquet").to_table().to_pylist() if files else []


def make_app(bootstrap: str, on_processing_error=None) -> Application:
    return Application(broker_address=bootstrap, consumer_group=f"faults-{uuid.uuid4().hex[:8]}",
                       auto_offset_reset="earliest", commit_interval=0.5, on_processing_error=on_processing_error)


def lake_sink(tmp_path: Path, **kw) -> QuixTSDataLakeSink:
    kw.setdefault("hive_columns", ["year", "month", "day", "hour"])
    return QuixTSDataLakeSink(s3_prefix="", table_name="readings", timestamp_column="ts_ms",
                              storage_url=(tmp_path / "lake").as_uri(), **kw)


def test_poison_records_are_skipped_one_by_one_and_every_good_record_lands_once(kafka_bootstrap, make_topic,
                                                                                tmp_path):
    topic = make_topic(partitions=2, prefix="poison")
    placed = produce(kafka_bootstrap, topic, POISON)
    reported = []

    def skip(exc, row, logger):
        reported.append((row.topic, row.partition, row.offset, exc))
        return True

    app = make_app(kafka_bootstrap, skip)
    app.dataframe(app.topic(topic)).sink(lake_sink(tmp_path))
    app.run(timeout=4)  # returns once idle: the app never stopped on a poison record

    assert sorted((t, p, o) for t, p, o, _ in reported) == sorted((topic, p, o) for p, o in placed)
    for t, p, o, exc in reported:
        field, record = placed[(p, o)]
        assert f"column '{field}' at {topic}[{p}] offset {o}" in str(exc)
        assert type(record[field]).__name__ in str(exc)  # the value's type
    rows = lake_rows(tmp_path / "lake" / "readings")
    seqs = sorted(r["seq"] for r in rows if r["seq"] >= 0)
    assert seqs == list(range(GOOD))  # every good record, exactly once
    assert not any(-4 <= r["seq"] <= -1 for r in rows)  # no poison record written
    assert {(r["year"], r["month"], r["day"]) for r in rows if r["seq"] >= 0} == {(2026, 1, 5)}


def test_without_a_callback_the_app_stops_cleanly_naming_the_record_and_field(kafka_bootstrap, make_topic,
                                                                              tmp_path):
    topic = make_topic(partitions=2, prefix="poison-stop")
    placed = produce(kafka_bootstrap, topic, POISON[3:])
    ((partition, offset),) = placed
    app = make_app(kafka_bootstrap)
    app.dataframe(app.topic(topic)).sink(lake_sink(tmp_path))
    with pytest.raises(Exception) as info:
        app.run(timeout=4)
    text = str(info.value)
    assert f"column 'v' at {topic}[{partition}] offset {offset}" in text and "list" in text and "int64" in text


def test_a_permanent_storage_fault_stops_the_app_naming_table_partition_and_file(kafka_bootstrap, make_topic,
                                                                                  tmp_path):
    topic = make_topic(partitions=1, prefix="name-too-long")
    producer = Producer({"bootstrap.servers": kafka_bootstrap})
    for seq in range(20):
        device = "d" * 300 if seq == 10 else f"dev-{seq % 2}"
        producer.produce(topic, value=json.dumps({"device": device, "seq": seq, "ts_ms": BASE_TS}).encode())
    assert producer.flush(30) == 0
    app = make_app(kafka_bootstrap)
    app.dataframe(app.topic(topic)).sink(lake_sink(tmp_path, hive_columns=["device"]))
    with pytest.raises(Exception) as info:
        app.run(timeout=4)
    chain, error = [], info.value
    while error is not None:
        chain.append(error)
        error = error.__cause__ or error.__context__
    permanent = next(e for e in chain if isinstance(e, PermanentStorageError))
    text = str(permanent)
    assert "'readings'" in text and f"{topic}[0]" in text and "device=" + "d" * 300 in text
    assert "File name too long" in text and "not retrying" in text


# -- IcebergSink: the same poison, on the real Iceberg REST catalog ------------------------------

ICEBERG_POISON = [
    (0, 300, {"sensor": 1, "seq": -1, "ts_ms": BASE_TS, "v": "twenty"}, "v"),
    (0, 700, {"sensor": 1, "seq": -2, "ts_ms": BASE_TS, "v": 2 ** 63 + 5}, "v"),
    (1, 800, {"sensor": 2, "seq": -4, "ts_ms": BASE_TS, "v": [1, 2]}, "v"),
]


def test_iceberg_sink_skips_poison_records_one_by_one(kafka_bootstrap, make_topic, services_env):
    from pyiceberg.catalog import load_catalog

    from stream_edge.sinks.community.iceberg import IcebergSink, RESTIcebergConfig

    uri = services_env["ICEBERG_REST_URI"]
    topic = make_topic(partitions=2, prefix="poison-iceberg")
    placed = produce(kafka_bootstrap, topic, ICEBERG_POISON)
    reported = []

    def skip(exc, row, logger):
        reported.append((row.topic, row.partition, row.offset, exc))
        return True

    name = f"edge_faults.t_{uuid.uuid4().hex[:10]}"
    app = make_app(kafka_bootstrap, skip)
    app.dataframe(app.topic(topic)).sink(IcebergSink(name, RESTIcebergConfig(uri), "rest"))
    app.run(timeout=4)

    assert sorted((t, p, o) for t, p, o, _ in reported) == sorted((topic, p, o) for p, o in placed)
    for t, p, o, exc in reported:
        field, record = placed[(p, o)]
        assert f"field '{field}' of topic '{topic}' partition {p} offset {o}" in str(exc)
        assert type(record[field]).__name__ in str(exc)
    rows = load_catalog("rest", type="rest", uri=uri).load_table(name).scan().to_arrow().to_pylist()
    assert sorted(r["seq"] for r in rows if r["seq"] >= 0) == list(range(GOOD))
    assert not any(-4 <= r["seq"] <= -1 for r in rows)


def test_a_bucket_gone_on_the_real_s3_server_is_permanent(s3_bucket, s3_client):
    """On the real S3 server: the bucket deleted under a running sink is refused for good (not
    retried as backpressure forever), naming the table and the partition."""
    from stream_edge.sinks.core.datalake import DataLakeSink

    sink = DataLakeSink("readings", storage_url=f"s3://{s3_bucket}", hive_columns=["device"])
    sink.setup()
    s3_client.delete_bucket(Bucket=s3_bucket)
    sink.add({"device": "d-1", "seq": 1}, None, BASE_TS, [], "sensors", 3, 17)
    with pytest.raises(PermanentStorageError) as info:
        sink.flush("sensors", 3)
    text = str(info.value)
    assert "'readings'" in text and "sensors[3]" in text and s3_bucket in text
    assert sink.stats()["storage_faults_permanent"] == 1 and sink.stats()["storage_faults_transient"] == 0
