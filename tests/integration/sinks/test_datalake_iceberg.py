"""Optional Iceberg registration through the real REST catalog server (pyiceberg add_files)."""

from __future__ import annotations

import logging
import uuid

import pytest

from stream_edge.sinks.core.datalake import DataLakeSink
from stream_edge.sinks.core.datalake.catalog import offset_property

pytestmark = pytest.mark.integration

TS = 1_745_311_234_567
TOKEN = "edge-secret-token-123"


class Crash(Exception):
    pass


def make_sink(tmp_path, rest_uri, namespace, **kw):
    sink = DataLakeSink("readings", storage_url=(tmp_path / "lake").as_uri(), hive_columns=["sensor", "day"],
                        timestamp_column="ts_ms", catalog_url=rest_uri, catalog_auth_token=TOKEN,
                        catalog_namespace=namespace, register_in_catalog=True, **kw)
    sink.setup()
    return sink


def feed(sink, start, stop, extra=None):
    for i in range(start, stop):
        value = {"sensor": "a" if i % 2 else "b/c", "ts_ms": TS, "i": i}
        value.update(extra or {})
        sink.add(value, b"k", TS, [], "sensors", 0, i)


def load(rest_uri, namespace):
    from pyiceberg.catalog import load_catalog

    return load_catalog("check", type="rest", uri=rest_uri).load_table((namespace, "readings"))


def test_commits_are_registered_with_offsets_and_partition_values(services_env, tmp_path, caplog):
    rest = services_env["ICEBERG_REST_URI"]
    namespace = f"edge_{uuid.uuid4().hex[:8]}"
    with caplog.at_level(logging.DEBUG):
        sink = make_sink(tmp_path, rest, namespace)
        feed(sink, 0, 4)
        sink.flush("sensors", 0)
        feed(sink, 4, 6, extra={"new_col": "x"})  # schema evolution on registration
        sink.flush("sensors", 0)
    table = load(rest, namespace)
    rows = table.scan().to_arrow().to_pylist()
    assert sorted(r["i"] for r in rows) == list(range(6))
    assert {r["new_col"] for r in rows if r["i"] >= 4} == {"x"}
    summaries = [s.summary.get(offset_property("sensors", 0)) for s in table.metadata.snapshots]
    assert [v for v in summaries if v is not None] == ["3", "5"]
    # Identity partitions hold real values (the hive columns are written into the files).
    partitions = set()
    for task in table.scan().plan_files():
        record = task.file.partition
        partitions.add(tuple(record[i] for i in range(len(record))))
    assert partitions == {("a", 22), ("b/c", 22)}
    assert {r["sensor"] for r in table.scan(row_filter="sensor == 'b/c'").to_arrow().to_pylist()} == {"b/c"}
    assert all(TOKEN not in r.getMessage() for r in caplog.records)


def test_crash_before_registration_registers_once_on_restart(services_env, tmp_path):
    rest = services_env["ICEBERG_REST_URI"]
    namespace = f"edge_{uuid.uuid4().hex[:8]}"
    sink = make_sink(tmp_path, rest, namespace)
    feed(sink, 0, 2)
    sink.flush("sensors", 0)

    def crash(point):
        if point == "after-publish":  # lake committed; neither registration nor Kafka commit done
            raise Crash(point)

    sink._writer.crash_hook = crash
    feed(sink, 2, 5)
    with pytest.raises(Crash):
        sink.flush("sensors", 0)
    assert sorted(r["i"] for r in load(rest, namespace).scan().to_arrow().to_pylist()) == [0, 1]
    restarted = make_sink(tmp_path, rest, namespace)
    feed(restarted, 2, 7)  # Kafka replays 2..4 (already in the lake) and brings 5..6
    restarted.flush("sensors", 0)
    again = make_sink(tmp_path, rest, namespace)  # and one more replay registers nothing twice
    feed(again, 2, 7)
    again.flush("sensors", 0)
    assert sorted(r["i"] for r in load(rest, namespace).scan().to_arrow().to_pylist()) == list(range(7))


def test_registration_needs_a_catalog_url(tmp_path):
    with pytest.raises(ValueError, match="catalog_url"):
        DataLakeSink("t", storage_url=str(tmp_path), register_in_catalog=True)


def test_registration_of_s3_files(services_env, s3_bucket):
    """Files on the S3 server registered by s3a:// URI (as `lakehouse register` does); pyiceberg reads them back."""
    rest = services_env["ICEBERG_REST_URI"]
    namespace = f"edge_{uuid.uuid4().hex[:8]}"
    sink = DataLakeSink("readings", storage_url=f"s3://{s3_bucket}", s3_prefix="lake", hive_columns=["sensor"],
                        catalog_url=rest, catalog_namespace=namespace, register_in_catalog=True)
    sink.setup()
    feed(sink, 0, 4)
    sink.flush("sensors", 0)
    from pyiceberg.catalog import load_catalog

    catalog = load_catalog("check", type="rest", uri=rest, **{
        "s3.endpoint": services_env["S3_ENDPOINT"], "s3.access-key-id": services_env["AWS_ACCESS_KEY_ID"],
        "s3.secret-access-key": services_env["AWS_SECRET_ACCESS_KEY"], "s3.region": services_env["AWS_REGION"]})
    table = catalog.load_table((namespace, "readings"))
    paths = sorted(task.file.file_path for task in table.scan().plan_files())
    # the path form `lakehouse register` uses (Spark reads it through S3A)
    assert all(p.startswith(f"s3a://{s3_bucket}/lake/readings/sensor=") for p in paths) and len(paths) == 2
    assert sorted(r["i"] for r in table.scan().to_arrow().to_pylist()) == [0, 1, 2, 3]
