"""The dead-letter topic on the real broker: records failing deserialization, processing or a
sink's add() land there with their original bytes and headers naming the error and the source;
good records are unaffected; the error callbacks decide first; exactly once under exactly-once."""

from __future__ import annotations

import orjson
import pytest

from stream_edge.processing.dead_letter import HEADER_PREFIX
from stream_edge.service.metrics import EdgeMetrics
from stream_edge.sinks import BatchingSink

pytestmark = pytest.mark.integration


class PickySink(BatchingSink):
    """Writes the records it accepts; ``add()`` rejects a record whose value says so (a content
    error found per record, as the data-lake sink's are)."""

    def __init__(self) -> None:
        super().__init__()
        self.written: list = []

    def add(self, value, key, timestamp, headers, topic, partition, offset):
        if value.get("sink") == "reject":
            raise TypeError(f"field 'sink': cannot write {value['sink']!r}")
        super().add(value, key, timestamp, headers, topic, partition, offset)

    def write(self, batch):
        self.written.extend(item.value["i"] for item in batch)


def _feed(produce, src):
    """Per partition: good records 0..5 with three poison records among them (one of each kind)."""
    poison = {}
    for partition in (0, 1):
        base = partition * 100
        items = [(b"g", {"i": base + i, "d": 1}) for i in range(3)]
        items.append((b"bad-json", b"{not json"))                       # deserialization
        items.append((b"zero", {"i": base + 50, "d": 0}))               # processing: 1 // 0
        items.append((b"sink", {"i": base + 60, "d": 1, "sink": "reject"}))  # the sink's add()
        items.extend((b"g", {"i": base + i, "d": 1}) for i in range(3, 6))
        produce(src, items, partition=partition, headers=[("origin", b"device-7")])
        poison[partition] = {3: ("deserialization", b"{not json"), 4: ("processing", orjson.dumps(items[4][1])),
                             5: ("processing", orjson.dumps(items[5][1]))}
    return poison


def _headers(msg) -> dict:
    return {k: v for k, v in (msg.headers() or [])}


def test_failing_records_reach_the_dead_letter_topic_with_original_bytes_and_error_headers(
        new_app, make_topic, produce, read_topic, committed):
    src, dlq = make_topic(partitions=2), make_topic(partitions=1)
    poison = _feed(produce, src)
    sink = PickySink()
    app, group = new_app(dead_letter_topic=dlq, commit_interval=0.5)  # no callback: dead-lettered by default
    app.dataframe(app.topic(src)).apply(lambda v: {**v, "r": 1 // v["d"]}).sink(sink)
    metrics = EdgeMetrics()
    app.add_run_observer(metrics)
    app.run(timeout=3)
    counted = {stage: metrics.registry.get_sample_value("stream_edge_dead_letters_total", {"stage": stage})
               for stage in ("deserialization", "processing")}
    assert counted == {"deserialization": 2.0, "processing": 4.0}

    assert sorted(sink.written) == sorted(p * 100 + i for p in (0, 1) for i in range(6))  # every good record
    letters = read_topic(dlq, 6, settle=0.5)
    assert len(letters) == 6
    seen = set()
    for msg in letters:
        h = _headers(msg)
        partition, offset = int(h[HEADER_PREFIX + "partition"]), int(h[HEADER_PREFIX + "offset"])
        stage, value = poison[partition][offset]
        seen.add((partition, offset))
        assert h[HEADER_PREFIX + "topic"] == src.encode()
        assert h[HEADER_PREFIX + "stage"] == stage.encode()
        assert msg.value() == value  # the original bytes, not a re-serialization
        assert h["origin"] == b"device-7"  # the record's own headers are kept
        kind = h[HEADER_PREFIX + "exception.class.name"].decode()
        text = h[HEADER_PREFIX + "exception.message"].decode()
        if offset == 3:
            assert kind.endswith("SerializationError") and f"offset 3" in text
            assert msg.key() == b"bad-json"
        elif offset == 4:
            assert kind == "ZeroDivisionError" and msg.key() == b"zero"
        else:
            assert kind == "TypeError" and text == "field 'sink': cannot write 'reject'" and msg.key() == b"sink"
    assert seen == {(p, o) for p in (0, 1) for o in (3, 4, 5)}
    assert committed(group, src, partitions=2) == {0: 9, 1: 9}


def test_the_callback_runs_first_skip_dead_letters_and_false_stops(new_app, make_topic, produce, read_topic,
                                                                    committed):
    src, out, dlq = make_topic(), make_topic(), make_topic()
    produce(src, [(b"k", {"i": 0, "d": 1}), (b"k", {"i": 1, "d": 0}), (b"k", {"i": 2, "d": 1}),
                  (b"k", {"i": 3, "d": 0, "fatal": True}), (b"k", {"i": 4, "d": 1})])
    decided = []

    def on_processing_error(exc, row, logger):
        decided.append((row.offset, type(exc).__name__))
        return not row.value.get("fatal")  # skip (-> dead-letter topic) unless fatal

    app, group = new_app(dead_letter_topic=dlq, on_processing_error=on_processing_error, commit_every=1)
    sdf = app.dataframe(app.topic(src)).apply(lambda v: {**v, "r": 1 // v["d"]})
    sdf.to_topic(app.topic(out))
    with pytest.raises(ZeroDivisionError):
        app.run(timeout=20)
    assert decided == [(1, "ZeroDivisionError"), (3, "ZeroDivisionError")]
    letters = read_topic(dlq, 1, settle=0.5)
    assert [int(_headers(m)[HEADER_PREFIX + "offset"]) for m in letters] == [1]  # the fatal one is not
    assert committed(group, src)[0] == 3  # stopped at offset 3: nothing after it committed


def test_exactly_once_an_aborted_checkpoint_takes_its_dead_letters_with_it(new_app, make_topic, produce,
                                                                            read_topic, committed):
    """A run dead-letters a record, then fails before its checkpoint commits (transaction
    aborted); the restart processes the record again: read_committed sees its dead letter once."""
    src, out, dlq = make_topic(), make_topic(), make_topic()
    produce(src, [(b"k", {"i": 0, "d": 1}), (b"k", {"i": 1, "d": 0}), (b"k", {"i": 2, "d": 1, "stop": True}),
                  (b"k", {"i": 3, "d": 1})])
    group = None
    for attempt in (1, 2):
        def step(v, attempt=attempt):
            if v.get("stop") and attempt == 1:
                raise RuntimeError("crash before the checkpoint")
            return {**v, "r": 1 // v["d"]}

        def on_processing_error(exc, row, logger):
            return not isinstance(exc, RuntimeError)

        app, group = new_app(consumer_group=group, dead_letter_topic=dlq, processing_guarantee="exactly-once",
                             on_processing_error=on_processing_error, commit_interval=60)
        sdf = app.dataframe(app.topic(src)).apply(step)
        sdf.to_topic(app.topic(out))
        if attempt == 1:
            with pytest.raises(RuntimeError, match="crash before the checkpoint"):
                app.run(timeout=20)
            assert committed(group, src)[0] == -1001
        else:
            app.run(timeout=2)
    letters = read_topic(dlq, 1, settle=1.0)  # read_committed
    assert [(m.value(), int(_headers(m)[HEADER_PREFIX + "offset"])) for m in letters] == \
        [(orjson.dumps({"i": 1, "d": 0}), 1)]
    assert sorted(orjson.loads(m.value())["i"] for m in read_topic(out, 3, settle=0.5)) == [0, 2, 3]
    assert committed(group, src)[0] == 4


def test_an_input_topic_cannot_be_the_dead_letter_topic(new_app, make_topic):
    src = make_topic()
    app, _ = new_app(dead_letter_topic=src)
    app.dataframe(app.topic(src)).update(lambda v: None)
    with pytest.raises(ValueError, match="is an input topic of this application"):
        app.run(timeout=1)
