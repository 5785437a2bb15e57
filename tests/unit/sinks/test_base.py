"""BaseSink / BatchingSink / SinkBatch / SinkManager: the v3 sink contract."""

from __future__ import annotations

import pytest

from stream_edge.sinks import BaseSink, BatchingSink, SinkBackpressureError, SinkBatch, SinkManager
from stream_edge.sinks.base import SinkItem


class ListSink(BatchingSink):
    def __init__(self, fail_with=None, **kw):
        super().__init__(**kw)
        self.written = []
        self.fail_with = fail_with
        self.cleaned = 0

    def write(self, batch):
        if self.fail_with is not None:
            raise self.fail_with
        self.written.append((batch.topic, batch.partition, [(i.offset, i.value) for i in batch]))

    def cleanup(self):
        self.cleaned += 1


def add(sink, value, topic="t", partition=0, offset=0, key=b"k"):
    sink.add(value, key, 1000 + offset, [("h", b"v")], topic, partition, offset)


def test_sink_batch_accumulates_in_order_and_chunks():
    batch = SinkBatch("t", 3)
    assert batch.start_offset is None and len(batch) == 0
    for offset in range(7):
        batch.append({"n": offset}, b"k", offset, [], offset + 100)
    assert (batch.topic, batch.partition, batch.size) == ("t", 3, 7)
    assert batch.start_offset == 100 and batch.end_offset == 106
    chunks = [[item.offset for item in chunk] for chunk in batch.iter_chunks(3)]
    assert all(isinstance(chunk, tuple) for chunk in batch.iter_chunks(3)) and not batch.empty()
    assert chunks == [[100, 101, 102], [103, 104, 105], [106]]
    assert all(isinstance(item, SinkItem) for item in batch)
    with pytest.raises(ValueError):
        list(batch.iter_chunks(0))


def test_batching_sink_keeps_one_batch_per_partition_and_drops_after_flush():
    sink = ListSink()
    add(sink, "a", partition=0, offset=1)
    add(sink, "b", partition=1, offset=5)
    add(sink, "c", partition=0, offset=2)
    sink.flush("t", 0)
    assert sink.written == [("t", 0, [(1, "a"), (2, "c")])]
    sink.flush("t", 0)  # nothing left: no empty write
    sink.flush("other", 9)
    assert len(sink.written) == 1
    sink.flush("t", 1)
    assert sink.written[1] == ("t", 1, [(5, "b")])


def test_failed_write_drops_the_batch_and_propagates():
    sink = ListSink(fail_with=OSError("disk full"))
    add(sink, "a")
    with pytest.raises(OSError):
        sink.flush("t", 0)
    sink.fail_with = None
    sink.flush("t", 0)
    assert sink.written == []  # replay from the committed offset brings the records back


def test_backpressure_error_gets_topic_and_partition():
    sink = ListSink(fail_with=SinkBackpressureError(retry_after=2.5))
    add(sink, "a", topic="events", partition=4)
    with pytest.raises(SinkBackpressureError) as info:
        sink.flush("events", 4)
    assert (info.value.retry_after, info.value.topic, info.value.partition) == (2.5, "events", 4)


def test_on_paused_drops_the_batch():
    sink = ListSink()
    add(sink, "a", partition=0)
    add(sink, "b", partition=1)
    sink.on_paused("t", 0)
    sink.flush("t", 0)
    sink.flush("t", 1)
    assert sink.written == [("t", 1, [(0, "b")])]


def test_start_runs_setup_then_success_callback():
    events = []

    class S(ListSink):
        def setup(self):
            events.append("setup")

    S(on_client_connect_success=lambda: events.append("ok")).start()
    assert events == ["setup", "ok"]


def test_start_failure_goes_to_callback_or_raises():
    class S(ListSink):
        def setup(self):
            raise ConnectionError("unreachable")

    seen = []
    S(on_client_connect_failure=seen.append).start()
    assert isinstance(seen[0], ConnectionError)
    with pytest.raises(ConnectionError):
        S().start()


def test_base_sink_is_abstract():
    with pytest.raises(TypeError):
        BaseSink()

    class Minimal(BaseSink):
        def add(self, *args):
            pass

        def flush(self, topic, partition):
            pass

    sink = Minimal()
    sink.start()
    sink.on_paused("t", 0)
    sink.cleanup()
    assert isinstance(sink, BaseSink)


def test_manager_registers_once_starts_once_flushes_all():
    started = []

    class S(ListSink):
        def setup(self):
            started.append(self)

    one, two = S(), S()
    manager = SinkManager()
    for sink in (one, two, one):
        manager.register(sink)
    assert manager.sinks == [one, two]
    manager.start_sinks()
    manager.start_sinks()
    assert started == [one, two]
    add(one, "x")
    add(two, "y")
    manager.flush("t", 0)
    assert one.written == [("t", 0, [(0, "x")])] and two.written == [("t", 0, [(0, "y")])]
    manager.close()
    assert one.cleaned == 1 and two.cleaned == 1
    with pytest.raises(TypeError):
        manager.register(object())


def test_manager_backpressure_drops_every_sinks_batch_for_the_partition():
    slow, other = ListSink(fail_with=SinkBackpressureError(1.0)), ListSink()
    manager = SinkManager()
    manager.register(slow)
    manager.register(other)
    add(slow, "a")
    add(other, "b")
    add(other, "c", partition=1)
    with pytest.raises(SinkBackpressureError) as info:
        manager.flush("t", 0)
    assert (info.value.topic, info.value.partition) == ("t", 0)
    manager.flush("t", 0)
    assert other.written == []  # dropped: the partition is replayed from the committed offset
    manager.flush("t", 1)
    assert other.written == [("t", 1, [(0, "c")])]


def test_manager_close_reaches_every_sink_even_if_one_fails():
    class Broken(ListSink):
        def cleanup(self):
            raise RuntimeError("boom")

    broken, fine = Broken(), ListSink()
    manager = SinkManager()
    manager.register(broken)
    manager.register(fine)
    manager.close()
    assert fine.cleaned == 1


class QuixFormSink(BaseSink):
    """A sink written for Quix Streams 3.28.1: ``flush()`` and ``on_paused()`` without arguments."""

    def __init__(self, fail_with=None):
        super().__init__()
        self.pending, self.flushed, self.paused, self.fail_with = [], [], 0, fail_with

    def add(self, value, key, timestamp, headers, topic, partition, offset):
        self.pending.append((topic, partition, value))

    def flush(self):
        if self.fail_with is not None:
            raise self.fail_with
        self.flushed.extend(self.pending)
        self.pending.clear()

    def on_paused(self):
        self.paused += 1
        self.pending.clear()


def test_manager_flushes_sinks_of_quix_form_once_and_contract_form_per_partition():
    quix_form, contract_form = QuixFormSink(), ListSink()
    manager = SinkManager()
    manager.register(quix_form)
    manager.register(contract_form)
    assert manager.has_whole_sinks
    for sink in (quix_form, contract_form):
        add(sink, "a")
        add(sink, "b", partition=1)
    flushed = []
    manager.flush_whole(lambda sink, topic, partition, seconds: flushed.append((sink, topic, partition)))
    assert quix_form.flushed == [("t", 0, "a"), ("t", 1, "b")] and flushed == [(quix_form, "", -1)]
    assert contract_form.written == []
    manager.flush("t", 0)
    manager.flush("t", 1)
    assert contract_form.written == [("t", 0, [(0, "a")]), ("t", 1, [(0, "b")])]


def test_manager_pause_all_calls_argumentless_on_paused_once():
    quix_form, contract_form = QuixFormSink(fail_with=SinkBackpressureError(2.0)), ListSink()
    manager = SinkManager()
    manager.register(quix_form)
    manager.register(contract_form)
    add(contract_form, "a")
    add(contract_form, "b", partition=1)
    with pytest.raises(SinkBackpressureError):
        manager.flush_whole()
    manager.pause_all([("t", 0), ("t", 1)])
    assert quix_form.paused == 1
    manager.flush("t", 0)
    manager.flush("t", 1)
    assert contract_form.written == []  # every partition is replayed


def test_batching_sink_flush_without_arguments_writes_every_partition():
    sink = ListSink()
    add(sink, "a")
    add(sink, "b", partition=1)
    sink.flush()
    assert sink.written == [("t", 0, [(0, "a")]), ("t", 1, [(0, "b")])]
    add(sink, "c")
    sink.on_paused()
    sink.flush()
    assert len(sink.written) == 2
