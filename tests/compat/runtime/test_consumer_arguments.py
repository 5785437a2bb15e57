"""``Consumer.store_offsets`` / ``commit`` refuse their arguments as quixstreams 3.28.1 does (no
broker needed: the checks come before any call to the client)."""

PROGRAM = r'''
from quixstreams.kafka import Consumer


def show(label, func):
    try:
        print(label, "=", func())
    except Exception as exc:
        print(label, "->", type(exc).__name__, repr(str(exc)))


consumer = Consumer(broker_address="127.0.0.1:1", consumer_group="g", auto_offset_reset="earliest")
show("store_offsets()", lambda: consumer.store_offsets())
show("store_offsets(offsets, message)", lambda: consumer.store_offsets(offsets=[], message=123))
show("commit(offsets, message)", lambda: consumer.commit(offsets=[], message=123))
consumer.close()
'''


def test_store_offsets_and_commit_argument_errors_match_quixstreams(run_both):
    out = run_both(PROGRAM)
    assert out.edge == out.quix
    assert """store_offsets() -> ValueError 'One of "message" or "offsets" must be passed'""" in out.edge
