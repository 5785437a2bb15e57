"""The error model's table (docs/operations.md, "The error model") as pure logic: what is a record's
error, an outage or a permanent fault; the dead letter always deliverable (cut to fit, secrets
masked, text cut on a character boundary); the outage tracker's backoff and give-up bound; the
batch loop's decisions (an outage interrupts, a permanent fault stops, the user's callback decides).
The broker-side behaviour is in tests/integration/runtime/test_outages.py."""

from __future__ import annotations

import errno
import hashlib
import logging

import pytest
from confluent_kafka import KafkaError, KafkaException, Message

from stream_edge import OutageError, is_outage
from stream_edge.errors import OUTAGE, PERMANENT, RECORD, OutageTimeoutError, error_kind
from stream_edge.processing.dead_letter import HEADER_PREFIX, MESSAGE_LIMIT, DeadLetterTopic, error_headers
from stream_edge.processing.loop import BatchProcessor, Interruption, TopicRoute
from stream_edge.processing.outage import OutageTracker
from stream_edge.sinks.storage_faults import PERMANENT as STORAGE_PERMANENT, classify


class _Status(Exception):
    """An HTTP client's error carrying the server's status (as requests' and httpx's do)."""

    __module__ = "requests.exceptions"

    def __init__(self, status: int) -> None:
        super().__init__(f"HTTP {status}")
        self.status_code = status


def _botocore(name: str) -> Exception:
    return type(name, (Exception,), {"__module__": "botocore.exceptions"})("boto")


def _registry_unavailable() -> Exception:
    from stream_edge.models.serializers.schema_registry import SchemaRegistryUnavailable

    return SchemaRegistryUnavailable("the Schema Registry at http://registry:8081", "ConnectError")


def _record_type_error() -> Exception:
    from stream_edge.sinks.core.datalake.records import RecordTypeError

    return RecordTypeError([1, 2], "t", 0, 5)


# one row per row of the table in docs/operations.md
TABLE = [
    ("a value the deserializer cannot read", lambda: ValueError("bad byte 0xff"), RECORD),
    ("the user's code raised for the content", lambda: ZeroDivisionError("division by zero"), RECORD),
    ("a sink's declared record error", _record_type_error, RECORD),
    ("a request the service refused as such (HTTP 404)", lambda: _Status(404), RECORD),
    ("ConnectionError", lambda: ConnectionRefusedError(errno.ECONNREFUSED, "Connection refused"), OUTAGE),
    ("TimeoutError", lambda: TimeoutError("timed out"), OUTAGE),
    ("another OSError", lambda: OSError(errno.EIO, "I/O error"), OUTAGE),
    ("HTTP 5xx / 429", lambda: _Status(503), OUTAGE),
    ("credentials refused (HTTP 401 / 403)", lambda: _Status(401), OUTAGE),
    ("an HTTP client's connection error", lambda: _botocore("EndpointConnectionError"), OUTAGE),
    ("a registry that does not answer", _registry_unavailable, OUTAGE),
    ("a catalog / broker that does not answer", lambda: OutageError("the Iceberg catalog", "refused"), OUTAGE),
    ("a sink's retriable error", lambda: __import__("stream_edge.sinks", fromlist=["x"]).SinkBackpressureError(1.0),
     OUTAGE),
    ("an errno no retry fixes", lambda: PermissionError(errno.EACCES, "Permission denied"), PERMANENT),
    ("a filesystem without an operation", lambda: OSError(errno.EOPNOTSUPP, "Operation not supported"), PERMANENT),
    ("no cloud credentials", lambda: _botocore("NoCredentialsError"), PERMANENT),
]


@pytest.mark.parametrize("case,make,kind", TABLE, ids=[row[0] for row in TABLE])
def test_every_row_of_the_error_model_table(case, make, kind):
    exc = make()
    assert error_kind(exc) == kind
    assert is_outage(exc) is (kind == OUTAGE)


def test_an_explicit_cause_decides_and_is_outage_is_exported():
    wrapped = ValueError("cannot deserialize")
    wrapped.__cause__ = ConnectionResetError(errno.ECONNRESET, "reset")
    assert is_outage(wrapped)
    import stream_edge

    assert stream_edge.is_outage is is_outage


@pytest.mark.parametrize("code", [errno.EOPNOTSUPP, errno.ENOSYS, errno.EMLINK])
def test_storage_faults_no_filesystem_fixes_are_permanent(code):
    assert classify(OSError(code, "x")) == STORAGE_PERMANENT
    assert classify(_botocore("NoCredentialsError")) == STORAGE_PERMANENT


# -- the dead letter ------------------------------------------------------------------------------
class Recorder:
    def __init__(self, limit: int = 10**9) -> None:
        self.produced: list = []
        self.limit = limit

    def __call__(self, topic, **kwargs) -> None:
        size = len(kwargs["value"] or b"") + sum(len(k) + len(v) for k, v in kwargs["headers"])
        if size > self.limit:
            raise KafkaException(KafkaError(KafkaError.MSG_SIZE_TOO_LARGE))
        self.produced.append(kwargs)


def test_a_dead_letter_too_large_is_cut_to_fit_with_its_size_and_hash():
    produce = Recorder()
    dlq = DeadLetterTopic("dlq", produce, None, None)
    value = b"\xfe" * 999_700
    msg = Message(topic="orders", partition=0, offset=3, key=b"k", value=value)
    dlq.send(msg, ValueError("not JSON"), "deserialization")
    [sent] = produce.produced
    headers = dict(sent["headers"])
    assert len(sent["value"]) + sum(len(k) + len(v) for k, v in sent["headers"]) < dlq.max_bytes
    assert value.startswith(sent["value"]) and len(sent["value"]) > 990_000
    assert headers[HEADER_PREFIX + "value.original.size"] == b"999700"
    assert headers[HEADER_PREFIX + "value.sha256"] == hashlib.sha256(value).hexdigest().encode()


def test_a_dead_letter_the_producer_still_refuses_goes_without_its_value():
    produce = Recorder(limit=50_000)  # the record's own headers take the room
    dlq = DeadLetterTopic("dlq", produce, None, None)
    msg = Message(topic="orders", partition=0, offset=3, value=b"v" * 20_000, headers=[("big", b"h" * 40_000)])
    dlq.send(msg, ValueError("bad"), "processing")
    [sent] = produce.produced
    assert sent["value"] == b"" and dict(sent["headers"])[HEADER_PREFIX + "value.original.size"] == b"20000"


def test_headers_mask_secrets_and_cut_the_message_on_a_character_boundary():
    exc = ValueError("registry http://edge:hunter2@registry:8081 said " + "é" * 3000)
    headers = dict(error_headers(Message(topic="t", partition=0, offset=1), exc, "processing"))
    text = headers[HEADER_PREFIX + "exception.message"]
    assert len(text) <= MESSAGE_LIMIT and b"hunter2" not in text
    assert text.decode("utf-8").startswith("registry http://edge:***@registry:8081 said é")  # never half a character


# -- the outage tracker -----------------------------------------------------------------------------
def test_the_tracker_backs_off_exponentially_and_gives_up_naming_the_service_and_record():
    now = [0.0]
    tracker = OutageTracker(max_retry_seconds=60, cap_seconds=8, clock=lambda: now[0])
    exc = OutageError("the Schema Registry at http://u:pw@registry", "refused")
    delays = [tracker.failed(("t", 1), exc, "topic 't' partition 1 offset 9", 9) for _ in range(5)]
    assert delays == [1.0, 2.0, 4.0, 8.0, 8.0] and tracker.active
    now[0] = 61.0
    with pytest.raises(OutageTimeoutError) as stopped:
        tracker.failed(("t", 1), exc, "topic 't' partition 1 offset 9", 9)
    text = str(stopped.value)
    assert "the Schema Registry at http://u:***@registry" in text and "partition 1 offset 9" in text
    assert "pw@" not in text
    tracker.recovered({("t", 1): 8})  # committed before the record: still waiting
    assert tracker.active
    tracker.recovered({("t", 1): 9})
    assert not tracker.active


# -- the loop's decisions ------------------------------------------------------------------------------
class _Ctx:
    class cursor:  # noqa: N801 - a stand-in for the MessageCursor the loop writes
        message = None


def _processor(fail, **kwargs) -> BatchProcessor:
    def executor(value, key, timestamp, headers):
        fail(value)

    route = TopicRoute(None, None, None, False, executor)
    return BatchProcessor({"t": route}, _Ctx(), kwargs.pop("on_consumer_error", lambda *a: False),
                          kwargs.pop("on_processing_error", lambda *a: False), **kwargs)


def _batch(n: int) -> list:
    return [Message(topic="t", partition=0, offset=i, value=b"%d" % i, timestamp=(1, 0)) for i in range(n)]


def _raise(exc):
    def fail(value):
        if value == b"2":
            raise exc
    return fail


def test_an_outage_without_a_callback_interrupts_the_batch_before_the_record():
    from stream_edge.error_callbacks import default_on_processing_error

    process = _processor(_raise(ConnectionRefusedError("refused")), on_processing_error=default_on_processing_error)
    assert process(_batch(5)) == 2  # offsets 0 and 1 done; 2 and after are read again
    assert isinstance(process.interruption, Interruption) and not process.interruption.replay
    assert process.interruption.msg.offset() == 2


def test_an_outage_is_not_dead_lettered_and_a_permanent_fault_stops(caplog):
    produce = Recorder()
    dlq = DeadLetterTopic("dlq", produce, None, None)
    process = _processor(_raise(TimeoutError("no answer")), dead_letter=dlq)
    assert process(_batch(5)) == 2 and produce.produced == []
    process = _processor(_raise(PermissionError(errno.EACCES, "denied")), dead_letter=dlq)
    with caplog.at_level(logging.ERROR, logger="stream_edge"), pytest.raises(PermissionError):
        process(_batch(5))
    assert produce.produced == [] and "no retry fixes" in caplog.text


def test_the_users_callback_still_decides_on_an_outage():
    seen = []

    def on_processing_error(exc, row, logger):
        seen.append(is_outage(exc))
        return True  # skip it anyway

    process = _processor(_raise(ConnectionRefusedError("refused")), on_processing_error=on_processing_error)
    assert process(_batch(5)) == 5 and process.interruption is None and seen == [True]


def test_under_exactly_once_a_record_to_dead_letter_interrupts_for_a_replay_then_is_skipped():
    produce = Recorder()
    dlq = DeadLetterTopic("dlq", produce, None, None)
    ran = []

    def fail(value):
        ran.append(value)
        if value == b"2":
            raise KeyError("field")

    process = _processor(fail, dead_letter=dlq, exactly_once=True)
    assert process(_batch(5)) == 2 and process.interruption.replay and produce.produced == []
    stop = process.interruption
    process.skip[("t", 0, 2)] = {stop.row: (stop.exc, stop.stage)}
    ran.clear()
    assert process(_batch(5)) == 5
    assert ran == [b"0", b"1", b"3", b"4"] and len(produce.produced) == 1  # dead-lettered before it ran


def test_a_dead_letters_failed_delivery_is_never_left_to_on_producer_error():
    from stream_edge.rowproducer import ProducerError, RowProducer

    producer = RowProducer("127.0.0.1:1", on_error=lambda exc, row, logger: True)  # would ignore any error
    try:
        produce = Recorder()
        producer.guard_topic("dlq", DeadLetterTopic("dlq", produce, None, None).resend_smaller)
        producer._on_delivery(KafkaError(KafkaError._MSG_TIMED_OUT), Message(topic="out", value=b"o"))
        producer.poll(0)  # an output's failure: the user's callback decided to go on
        # too large for the topic: sent again without its value, nothing raised
        producer._on_delivery(KafkaError(KafkaError.MSG_SIZE_TOO_LARGE),
                              Message(topic="dlq", value=b"x" * 100, headers=[("h", b"1")], timestamp=(1, 5)))
        producer.poll(0)
        [again] = produce.produced
        assert again["value"] == b"" and dict(again["headers"])[HEADER_PREFIX + "value.original.size"] == b"100"
        # any other failure of a dead letter fails the checkpoint: its offset is not committed
        producer._on_delivery(KafkaError(KafkaError._MSG_TIMED_OUT), Message(topic="dlq", value=b"v"))
        with pytest.raises(ProducerError, match="delivery of a dead letter to topic 'dlq' failed"):
            producer.poll(0)
    finally:
        producer.release()


def test_run_outputs_of_an_aborted_checkpoint_are_forgotten_before_its_replay():
    from stream_edge.processing.collector import OutputCollector

    collector = OutputCollector(_Ctx.cursor, count_limit=0, collect=True, metadata=False)
    collector.sink({"i": 0}, None, 0, None)
    collector.mark()  # a checkpoint starts
    collector.sink({"i": 1}, None, 0, None)
    collector.rewind()  # aborted: replayed
    collector.sink({"i": 1}, None, 0, None)
    assert collector.items == [{"i": 0}, {"i": 1}] and collector.count == 2
