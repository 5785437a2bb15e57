"""join_asof and join_interval against quixstreams 3.28.1: the same program on both packages, two
co-partitioned topics on the real broker with a recorded random stream (several keys, out-of-order
timestamps, records past grace), every ``how`` and ``on_merge`` kind; outputs compared byte for byte."""

from __future__ import annotations

import json
import random

import pytest

pytestmark = pytest.mark.integration

PARTITIONS = 2

PROGRAM = r'''
import json
from datetime import timedelta
from quixstreams import Application, message_context

app = Application(broker_address=BROKER, consumer_group=GROUP, auto_offset_reset="earliest", loglevel=None,
                  state_dir=STATE_DIR)
left = app.dataframe(app.topic(LEFT, key_deserializer="str"))
right = app.dataframe(app.topic(RIGHT, key_deserializer="str"))
lines = {}

def show(tag):
    def record(value, key, timestamp, headers):
        lines.setdefault(message_context().partition, []).append(json.dumps([tag, key, timestamp, value]))
    return record

JOINS
app.run(timeout=3)
for partition in sorted(lines):
    print(partition, len(lines[partition]))
    for line in lines[partition]:
        print(line)
'''

JOINS = {
    "asof-inner": 'left.join_asof(right, on_merge="keep-left", grace_ms=40, name="a1")',
    "asof-left": 'left.join_asof(right, how="left", on_merge="keep-right", grace_ms=timedelta(milliseconds=25), name="a2")',
    "asof-left-callable": 'left.join_asof(right, how="left", on_merge=lambda l, r: {"l": l, "r": r}, grace_ms=60, name="a3")',
    "interval-inner": 'left.join_interval(right, on_merge="keep-left", grace_ms=40, backward_ms=15, forward_ms=10, name="i1")',
    "interval-left": 'left.join_interval(right, how="left", on_merge="keep-right", grace_ms=30, backward_ms=20, name="i2")',
    "interval-right": 'left.join_interval(right, how="right", on_merge="keep-left", grace_ms=50, forward_ms=20, name="i3")',
    "interval-outer": 'left.join_interval(right, how="outer", on_merge=lambda l, r: [l, r], grace_ms=20, backward_ms=5, forward_ms=5, name="i4")',
}


def recorded_stream(seed: int, per_side: int = 80) -> list[tuple[str, str, int, dict]]:
    """(side, key, timestamp, value): timestamps mostly rising with jitter, some far in the past."""
    rng = random.Random(seed)
    events = []
    for side, field in (("L", "l"), ("R", "r")):
        clock = 1_000
        for i in range(per_side):
            clock += rng.randint(0, 12)
            late = rng.random() < 0.1
            ts = clock - rng.randint(30, 100) if late else clock - rng.randint(0, 8)
            # left timestamps even, right odd: no cross-topic tie (Quix breaks ties by fetch order)
            events.append((side, rng.choice("abcde"), 2 * max(ts, 0) + (side == "R"), {field: i, "x": side}))
    return events


@pytest.fixture(scope="module")
def joined_topics(kafka_bootstrap, kafka_admin):
    from uuid import uuid4

    from confluent_kafka import Producer
    from confluent_kafka.admin import NewTopic

    left, right = f"compat-join-l-{uuid4().hex[:8]}", f"compat-join-r-{uuid4().hex[:8]}"
    for future in kafka_admin.create_topics([NewTopic(t, PARTITIONS, 1) for t in (left, right)]).values():
        future.result(timeout=30)
    producer = Producer({"bootstrap.servers": kafka_bootstrap})
    for side, key, ts, value in recorded_stream(seed=20240612):
        producer.produce(left if side == "L" else right, json.dumps(value).encode(), key.encode(), timestamp=ts)
    assert producer.flush(30) == 0
    return left, right


def _program(kafka_bootstrap: str, left: str, right: str, joins: list[str]) -> str:
    body = "\n".join(f"{expr}.update(show({name!r}), metadata=True)" for name, expr in
                     ((name, JOINS[name]) for name in joins))
    header = (f"BROKER = {kafka_bootstrap!r}\nLEFT = {left!r}\nRIGHT = {right!r}\n"
              "GROUP = 'join-' + __import__('uuid').uuid4().hex[:8]\nSTATE_DIR = __import__('tempfile').mkdtemp()\n")
    return header + PROGRAM.replace("JOINS", body)


@pytest.mark.parametrize("joins", [["asof-inner", "asof-left", "asof-left-callable"],
                                   ["interval-inner", "interval-left", "interval-right", "interval-outer"]],
                         ids=["asof", "interval"])
def test_time_joins_match_quixstreams(run_both, kafka_bootstrap, joined_topics, joins):
    # quixstreams itself is not deterministic on this stream: in 12 runs on the same topics its
    # interval joins gave 168 rows on partition 0 ten times and 167 twice (the late left record at
    # 2800 processed before the right one at 2799, so not joined); stream_edge gave 168 every time.
    # So quixstreams may run again, and stream_edge's output must be one that quixstreams produced.
    out = run_both(_program(kafka_bootstrap, *joined_topics, joins), quix_attempts=4)
    for edge_line, quix_line in zip(out.edge.splitlines(), out.quix.splitlines()):
        assert edge_line == quix_line
    assert out.edge == out.quix
    tags = {json.loads(line)[0] for line in out.edge.splitlines() if line.startswith("[")}
    assert tags == set(joins)  # every join emitted something


def test_join_errors_match_quixstreams(run_both, kafka_bootstrap, make_topic):
    one, other, two = make_topic(prefix="compat-join-e1"), make_topic(prefix="compat-join-e2"), make_topic(2, "compat-join-e3")
    program = f'''
from quixstreams import Application
app = Application(broker_address={kafka_bootstrap!r}, consumer_group="g", loglevel=None,
                  state_dir=__import__("tempfile").mkdtemp())
a, b, c = (app.dataframe(app.topic(name)) for name in ({one!r}, {other!r}, {two!r}))
attempts = [lambda: a.join_asof(c), lambda: a.join_asof(a), lambda: a.join_asof(a.apply(lambda v: v)),
            lambda: a.join_asof(b, how="right"), lambda: a.join_asof(b, on_merge="x"),
            lambda: a.join_interval(b, how="full"), lambda: a.join_interval(b, backward_ms=10, grace_ms=5),
            lambda: a.join_asof(b), lambda: a.join_asof(b), lambda: a.join_interval(b, name="i"),
            lambda: a.join_interval(b, name="i")]
for attempt in attempts:
    try:
        print("ok", type(attempt()).__name__)
    except Exception as exc:
        print(type(exc).__name__, str(exc).replace({one!r}, "A").replace({other!r}, "B").replace({two!r}, "C"))
'''
    out = run_both(program)
    assert out.edge == out.quix
    assert out.edge.count("Error") + out.edge.count("Mismatch") >= 8
