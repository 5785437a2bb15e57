"""The common route's batch loop with the generated chain inlined (processing/inline_batch.py)."""

import orjson
from confluent_kafka import Message

from stream_edge.core.stream import Stream
from stream_edge.core.stream.codegen import GeneratedFunction
from stream_edge.error_callbacks import default_on_consumer_error
from stream_edge.models import Topic
from stream_edge.processing.collector import CountingSink
from stream_edge.processing.context import ProcessingContext
from stream_edge.processing.inline_batch import inlinable_lines
from stream_edge.processing.loop import BatchProcessor, Interruption, OutputCounter, TopicRoute


def msg(value, offset):
    return Message(topic="t", partition=0, offset=offset, key=b"k", value=orjson.dumps(value),
                   timestamp=(1, 1000 + offset), headers=None)


def chain(sink):
    def enrich(v):
        if v["n"] == 3:
            raise ValueError("bad record 3")
        return {**v, "double": v["n"] * 2}

    return Stream().add_apply(enrich).add_filter(lambda v: v["n"] % 2 == 0).compose_single(sink=sink)


def processor(executor, on_processing_error, counter=None):
    route = TopicRoute.of(Topic("t", value_deserializer="json"), executor)
    return BatchProcessor({"t": route}, ProcessingContext(), default_on_consumer_error, on_processing_error,
                          counter=counter)


def test_the_chain_runs_inline_with_the_same_outputs_drops_and_errors():
    out, failures = [], []

    def on_error(exc, row, logger):
        failures.append((str(exc), row.value, row.key, row.timestamp, row.offset))
        return True

    process = processor(chain(lambda v, k, t, h: out.append((v, k, t))), on_error)
    assert process._inlined is not None
    assert process([msg({"n": n}, n) for n in range(6)]) == 6
    assert out == [({"n": 0, "double": 0}, b"k", 1000), ({"n": 2, "double": 4}, b"k", 1002),
                   ({"n": 4, "double": 8}, b"k", 1004)]
    # the failing record reaches the callback as deserialized, with its coordinates
    assert failures == [("bad record 3", {"n": 3}, b"k", 1003, 3)]


def test_count_stops_after_the_nth_output_and_an_interruption_rewinds_to_its_record():
    counter = OutputCounter(limit=2)
    process = processor(chain(CountingSink(counter)), lambda exc, row, logger: True, counter)
    assert process._inlined is not None
    assert process([msg({"n": n}, n) for n in range(6)]) == 3  # outputs n=0 and n=2: stops after n=2
    assert counter.count == 2

    def interrupt(exc, row, logger):
        raise Interruption(exc, None, "processing", replay=False)

    process = processor(chain(lambda *record: None), interrupt)
    assert process([msg({"n": n}, n) for n in range(6)]) == 3  # n=3 was not processed
    assert str(process.interruption) == "bad record 3"
    assert process([msg({"n": 4}, 4)]) == 1 and process.interruption is None


def test_a_return_inside_a_loop_of_the_chain_keeps_the_call():
    gen = GeneratedFunction("loop")
    gen.add("for item in value:", "    if item:", "        return", "value = 1")
    assert inlinable_lines(gen.compile()) is None
    gen = GeneratedFunction("flat")
    gen.add("if not value:", "    return", "for item in value:", "    pass")
    assert inlinable_lines(gen.compile()) == ["if not value:", "    continue", "for item in value:", "    pass"]
    assert inlinable_lines(lambda value, key, timestamp, headers: None) is None
