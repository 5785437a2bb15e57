"""A run's memory does not grow with the number of records it processes (real broker).

What a long backlog used to cost: ``run(timeout=...)`` kept a copy of every output for its return
value (~0.3-0.7 KB per small JSON record: 245 MB after 500k records, 1,975 MB after 6M). The
Python heap is measured with tracemalloc at 20k and at 60k records: what is still allocated then
grows by far less than one object per record. RSS over millions of records is
``bench/edge_soak.py``'s job (docs/operations.md, "Memory sizing").
"""

from __future__ import annotations

import logging
import tracemalloc
from typing import Callable, Dict, Iterator

import pytest

from stream_edge.processing.collector import DEFAULT_COLLECT_LIMIT
from stream_edge.processing.observer import RunObserver
from stream_edge.sinks.base.sink import BaseSink

pytestmark = pytest.mark.integration

RECORDS = 60_000
FIRST_MARK = 20_000
# Records processed between the two marks, and what they may leave behind in all: 4 bytes each
# (a per-record copy of a small dict costs 300+ bytes, offsets stored per record 50+).
GROWTH_BOUND = (RECORDS - FIRST_MARK) * 4


class HeapAtMarks(RunObserver):
    """Python heap bytes (tracemalloc) when the processed count first reaches each mark, taken
    between batches (no batch of messages is alive then)."""

    def __init__(self, marks: tuple) -> None:
        self.marks, self.processed = list(marks), 0
        self.heap: Dict[int, int] = {}

    def on_batch(self, messages, processed: int, seconds: float) -> None:
        self.processed += processed
        while self.marks and self.processed >= self.marks[0]:
            self.heap[self.marks.pop(0)] = tracemalloc.get_traced_memory()[0]


class CountingSink(BaseSink):
    """A sink that keeps nothing: counts what it is given and flushes nothing."""

    def __init__(self) -> None:
        super().__init__()
        self.added = 0

    def add(self, value, key, timestamp, headers, topic, partition, offset) -> None:
        self.added += 1

    def flush(self, topic=None, partition=None) -> None:
        pass


@pytest.fixture(scope="module")
def backlog(kafka_admin, kafka_bootstrap: str) -> str:
    """One 2-partition topic of RECORDS small JSON readings, shared by this module's tests."""
    import uuid

    import orjson
    from confluent_kafka import Producer
    from confluent_kafka.admin import NewTopic

    name = f"memory-{uuid.uuid4().hex[:10]}"
    kafka_admin.create_topics([NewTopic(name, num_partitions=2, replication_factor=1)])[name].result(timeout=30)
    producer = Producer({"bootstrap.servers": kafka_bootstrap, "linger.ms": 20})
    for i in range(RECORDS):
        value = orjson.dumps({"sensor": i % 500, "seq": i, "ts_ms": 1_700_000_000_000 + i, "temp": 20.5 + i % 7,
                              "level": "info"})
        producer.produce(name, value, str(i % 500).encode())
        if i % 10_000 == 0:
            producer.poll(0)
    assert producer.flush(60) == 0
    return name


@pytest.fixture()
def traced() -> Iterator[None]:
    tracemalloc.start()
    try:
        yield
    finally:
        tracemalloc.stop()


def _growth(heap: Dict[int, int]) -> int:
    assert set(heap) == {FIRST_MARK, RECORDS}, f"the run did not reach both marks: {heap}"
    return heap[RECORDS] - heap[FIRST_MARK]


def test_a_noop_run_with_timeout_keeps_a_bounded_number_of_outputs(new_app, backlog, traced, caplog) -> None:
    """The issue's program: ``sdf.update(lambda v: None)``, ``app.run(timeout=...)``, defaults."""
    app, _ = new_app()
    heap = HeapAtMarks((FIRST_MARK, RECORDS))
    app.add_run_observer(heap)
    sdf = app.dataframe(app.topic(backlog, value_deserializer="json"))
    sdf.update(lambda v: None)
    with caplog.at_level(logging.WARNING, logger="stream_edge"):
        rows = app.run(timeout=2)
    assert _growth(heap.heap) < GROWTH_BOUND
    # The outputs past the bound were processed (counted by the observer), not returned.
    assert heap.processed == RECORDS and len(rows) == DEFAULT_COLLECT_LIMIT
    assert rows[0].keys() == {"sensor", "seq", "ts_ms", "temp", "level"}
    warnings = [r.getMessage() for r in caplog.records if "collect_limit" in r.getMessage()]
    assert len(warnings) == 1 and f"{DEFAULT_COLLECT_LIMIT} outputs collected" in warnings[0]


def test_checkpoints_sinks_and_outputs_keep_nothing_per_record(new_app, make_topic, backlog, traced,
                                                               read_topic: Callable) -> None:
    """Exactly-once with a checkpoint every 0.2 s, a sink and a produced output per record:
    stored offsets, sink calls and producer deliveries leave nothing behind per record."""
    out = make_topic(partitions=2)
    app, _ = new_app(processing_guarantee="exactly-once", commit_interval=0.2)
    heap = HeapAtMarks((FIRST_MARK, RECORDS))
    app.add_run_observer(heap)
    sink = CountingSink()
    sdf = app.dataframe(app.topic(backlog, value_deserializer="json"))
    sdf = sdf.filter(lambda v: v["seq"] % 10 == 0)
    sdf.to_topic(app.topic(out, value_serializer="json"))
    sdf.sink(sink)
    assert app.run(timeout=2, collect=False) == []
    assert _growth(heap.heap) < GROWTH_BOUND
    assert sink.added == RECORDS // 10
    assert len(read_topic(out, RECORDS // 10, settle=0.5)) == RECORDS // 10


def test_collect_limit_zero_keeps_every_output(new_app, make_topic, produce) -> None:
    src = make_topic(partitions=2)
    produce(src, [(None, {"i": i}) for i in range(300)])
    app, _ = new_app()
    app.dataframe(app.topic(src, value_deserializer="json"))
    rows = app.run(timeout=2, collect_limit=0)
    assert sorted(r["i"] for r in rows) == list(range(300))
    with pytest.raises(ValueError, match="collect_limit"):
        app.run(timeout=1, collect_limit=-1)
