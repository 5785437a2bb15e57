"""IcebergSink's fault handling as pure logic: a stand-in table raising what pyiceberg raises
(the real catalog runs in tests/integration/connectors/test_iceberg_sink.py and
tests/integration/sinks/test_sink_fault_injection.py)."""

from __future__ import annotations

import pytest
from pyiceberg.exceptions import BadRequestError, ForbiddenError, ServiceUnavailableError, TooManyRequestsError

from stream_edge.sinks.base import SinkBackpressureError
from stream_edge.sinks.community.iceberg import IcebergSink, IcebergSinkException, RESTIcebergConfig
from stream_edge.sinks.storage_faults import PermanentStorageError


class RefusingTable:
    """Every catalog call raises ``error`` (the first thing an append does is ``refresh()``)."""

    def __init__(self, error: Exception) -> None:
        self.error = error

    def refresh(self) -> None:
        raise self.error


def sink_with(error: Exception) -> IcebergSink:
    sink = IcebergSink("db.readings", RESTIcebergConfig("http://127.0.0.1:1"), "rest",
                       backpressure_retry_seconds=0.5)
    sink._table = RefusingTable(error)  # set up: setup() would load it from the catalog
    return sink


def feed(sink: IcebergSink, count: int, partition: int = 0) -> None:
    for offset in range(count):
        sink.add({"id": offset, "v": offset / 2}, f"k{offset}".encode(), 1_767_571_200_000, [], "t", partition, offset)


@pytest.mark.parametrize("error", [
    ServiceUnavailableError("503 Service Unavailable"),
    ForbiddenError("Forbidden: credentials refused"),  # the error model: a 401/403 is an outage
    TooManyRequestsError("429 Too Many Requests"),
    ConnectionRefusedError(111, "Connection refused"),
])
def test_a_transient_refusal_backs_off_and_keeps_every_partitions_records(error):
    sink = sink_with(error)
    feed(sink, 5, partition=0)
    feed(sink, 3, partition=1)
    delays = []
    for _ in range(3):
        with pytest.raises(SinkBackpressureError) as info:
            sink.flush("t", 0)
        assert (info.value.topic, info.value.partition) == ("t", 0)
        delays.append(info.value.retry_after)
        assert len(sink._pool.get(("t", 0))) == 5 and len(sink._pool.get(("t", 1))) == 3  # nothing dropped
    assert delays == [0.5, 1.0, 2.0] and sink.stats()["storage_faults_transient"] == 3


@pytest.mark.parametrize("error, words", [
    (BadRequestError("BadRequest: malformed update of db.readings"), "malformed update"),
    (OSError("AWS Error ACCESS_DENIED during PutObject operation: Access Denied"), "ACCESS_DENIED"),
])
def test_a_permanent_refusal_stops_naming_table_and_partitions(error, words):
    sink = sink_with(error)
    feed(sink, 2, partition=0)
    feed(sink, 2, partition=1)
    with pytest.raises(PermanentStorageError) as info:
        sink.flush("t", 1)
    text = str(info.value)
    assert "'db.readings'" in text and "t[0], t[1]" in text and words in text and "not retrying" in text
    assert sink.stats() == {"storage_faults_transient": 0, "storage_faults_permanent": 1}


@pytest.mark.parametrize("value, key, words", [
    ([1], b"k", "it is list, not a dict"),
    ({"id": "x"}, b"k", "field 'id' of topic 't' partition 0 offset 9: str 'x' does not fit column type int64"),
    ({"_key": "mine"}, b"k", "field '_key'"),
    ({"id": 1}, b"\xff\xfe", "the key is not UTF-8"),
])
def test_a_record_the_table_cannot_hold_is_refused_by_add(value, key, words):
    sink = sink_with(ServiceUnavailableError("unused"))
    sink.add({"id": 1}, b"k", 0, [], "t", 0, 8)
    with pytest.raises(IcebergSinkException, match=words.replace("(", r"\(").replace(")", r"\)")):
        sink.add(value, key, 0, [], "t", 0, 9)
    assert list(sink._pool.get(("t", 0)).offsets) == [8]
