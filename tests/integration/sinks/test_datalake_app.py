"""End to end through a real Application on the real broker: the data-lake sink and its
side-channel example (docs/design.md) (silence events produced to a ``stream-timeouts`` topic with the raw key)."""

from __future__ import annotations

import json
import threading
import time
import uuid
from pathlib import Path

import pyarrow.dataset as ds
import pytest
from confluent_kafka import Consumer, Producer

from stream_edge import Application
from stream_edge.sinks.core.quix_ts_datalake_sink import QuixTSDataLakeSink

pytestmark = pytest.mark.integration


def visible_rows(root: Path) -> list[dict]:
    files = [str(p) for p in root.rglob("*.parquet")
             if not any(part.startswith(("_", ".")) for part in p.relative_to(root).parts)]
    return ds.dataset(files, format="parquet").to_table().to_pylist() if files else []


def read_all(bootstrap: str, topic: str, timeout: float = 10.0) -> list:
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": f"check-{uuid.uuid4().hex}",
                         "auto.offset.reset": "earliest", "enable.auto.commit": False})
    consumer.subscribe([topic])
    out, deadline = [], time.monotonic() + timeout
    try:
        while time.monotonic() < deadline:
            batch = [m for m in consumer.consume(100, 0.5) if m.error() is None]
            out.extend(batch)
            if out and not batch:
                break
    finally:
        consumer.close()
    return out


def test_side_channel_example_end_to_end(kafka_bootstrap, make_topic, tmp_path, monkeypatch):
    monkeypatch.setenv("STREAM_EDGE_STORAGE_URL", (tmp_path / "lake").as_uri())
    readings = make_topic(prefix="sensor_readings")
    timeouts_name = make_topic(prefix="stream-timeouts")

    # ---- the contract's example, as written (topic names made unique for the test) ----
    app = Application(broker_address=kafka_bootstrap, commit_interval=0.5,
                      consumer_group=f"lake-{uuid.uuid4().hex[:8]}", auto_offset_reset="earliest")
    side_producer = app.get_producer()
    timeout_topic = app.topic(timeouts_name, key_serializer="bytes", value_serializer="bytes")

    def on_stream_timeout(stream):
        stream_str = stream.decode("utf-8", errors="replace") if isinstance(stream, bytes) else str(stream)
        side_producer.produce(
            topic=timeout_topic.name,
            key=stream,
            value=json.dumps({"ts_ms": int(time.time() * 1000), "stream": stream_str,
                              "event": "stream_timeout"}).encode(),
        )

    sink = QuixTSDataLakeSink(
        s3_prefix="data-lake/time-series", table_name="sensor_readings", workspace_id="",
        hive_columns=["year", "month", "day"], timestamp_column="ts_ms",
        stream_timeout_ms=2_500, on_stream_timeout=on_stream_timeout,
    )
    sdf = app.dataframe(topic=app.topic(readings))
    sdf.sink(sink)
    # ---- end of the example ----

    feeder = Producer({"bootstrap.servers": kafka_bootstrap, "linger.ms": 0})
    sent = []
    b_stopped_ms = {}

    def feed():
        now = int(time.time() * 1000)
        for i in range(3):  # sensor-a publishes a little, then goes quiet
            feeder.produce(readings, key=b"sensor-a", value=json.dumps({"ts_ms": now + i, "v": i, "s": "a"}))
            sent.append(("a", i))
        for i in range(40):  # sensor-b keeps publishing for ~8 s
            feeder.produce(readings, key=b"sensor-b",
                           value=json.dumps({"ts_ms": int(time.time() * 1000), "v": i, "s": "b"}))
            feeder.flush(5)
            sent.append(("b", i))
            time.sleep(0.2)
        b_stopped_ms["t"] = int(time.time() * 1000)
        time.sleep(0.5)
        app.stop()

    thread = threading.Thread(target=feed, daemon=True)
    thread.start()
    with side_producer:
        app.run()
    thread.join(30)
    assert not sink._timeout.running  # the runtime's shutdown stopped the tracker thread

    events = read_all(kafka_bootstrap, timeouts_name)
    by_key = {}
    for message in events:
        by_key.setdefault(message.key(), []).append(json.loads(message.value()))
    assert len(by_key.get(b"sensor-a", [])) == 1, by_key
    event = by_key[b"sensor-a"][0]
    assert set(event) == {"ts_ms", "stream", "event"}
    assert event["stream"] == "sensor-a" and event["event"] == "stream_timeout"
    # sensor-b never went quiet while it was publishing
    assert all(e["ts_ms"] >= b_stopped_ms["t"] for e in by_key.get(b"sensor-b", []))
    assert event["ts_ms"] < b_stopped_ms["t"]
    rows = visible_rows(tmp_path / "lake" / "data-lake" / "time-series" / "sensor_readings")
    assert sorted((r["s"], r["v"]) for r in rows) == sorted(sent)
