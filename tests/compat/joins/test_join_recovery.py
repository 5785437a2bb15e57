"""A join's state survives a restart through its changelog: the first run stores the right side,
the local state is deleted, and the second run (same consumer group) joins new left records with
the right records recovered from the changelog topic. Same program on quixstreams 3.28.1 and
stream_edge, outputs compared byte for byte."""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.integration

PROGRAM = r'''
import json, shutil, tempfile, uuid
from confluent_kafka import Producer
from quixstreams import Application

from confluent_kafka.admin import AdminClient, NewTopic

GROUP = "join-recovery-" + uuid.uuid4().hex[:8]
STATE_DIR = tempfile.mkdtemp()
LEFT, RIGHT = GROUP + "-left", GROUP + "-right"  # this program's own topics (both programs run)
admin = AdminClient({"bootstrap.servers": BROKER})
for future in admin.create_topics([NewTopic(LEFT, 2, 1), NewTopic(RIGHT, 2, 1)]).values():
    future.result(30)
producer = Producer({"bootstrap.servers": BROKER})
for side, key, ts, value in FIRST:
    producer.produce(LEFT if side == "L" else RIGHT, json.dumps(value).encode(), key.encode(), timestamp=ts)
producer.flush(30)

def run(phase):
    app = Application(broker_address=BROKER, consumer_group=GROUP, auto_offset_reset="earliest", loglevel=None,
                      state_dir=STATE_DIR)
    left = app.dataframe(app.topic(LEFT, key_deserializer="str"))
    right = app.dataframe(app.topic(RIGHT, key_deserializer="str"))
    asof = left.join_asof(right, how="left", on_merge="keep-left", grace_ms=1000, name="asof")
    asof.update(lambda v, k, t, h: print(phase, "asof", k, t, json.dumps(v)), metadata=True)
    interval = left.join_interval(right, how="outer", on_merge="keep-left", grace_ms=1000, backward_ms=50,
                                  forward_ms=50, name="interval")
    interval.update(lambda v, k, t, h: print(phase, "interval", k, t, json.dumps(v)), metadata=True)
    app.run(timeout=3)

run(1)
shutil.rmtree(STATE_DIR)  # the second run must recover the join state from the changelog topics
for key, ts, n in [("a", 1130, 10), ("b", 1210, 11), ("a", 1090, 12), ("c", 1300, 13)]:
    producer.produce(LEFT, json.dumps({"l": n}).encode(), key.encode(), timestamp=ts)
producer.flush(30)
run(2)
'''

FIRST = [("R", "a", 1000, {"r": 1, "x": "R"}), ("R", "b", 1100, {"r": 2, "x": "R"}),
         ("R", "a", 1100, {"r": 3, "x": "R"}), ("L", "a", 1050, {"l": 1, "x": "L"}),
         ("R", "b", 1200, {"r": 4, "x": "R"}), ("L", "b", 1150, {"l": 2, "x": "L"})]


def test_join_state_is_recovered_from_the_changelog(run_both, kafka_bootstrap):
    header = f"BROKER = {kafka_bootstrap!r}\nFIRST = {FIRST!r}\n"
    out = run_both(header + PROGRAM, timeout=180)
    assert out.edge == out.quix
    second = sorted(line for line in out.edge.splitlines() if line.startswith("2 "))
    # new left records joined with right records stored by the first run
    assert '2 asof a 1130 {"r": 3, "x": "R", "l": 10}' in second
    assert any(line.startswith("2 interval b 1210") and '"r": 4' in line for line in second)
