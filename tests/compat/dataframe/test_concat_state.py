"""``concat`` of two co-partitioned topics followed by state, a window and a join: the same program
on quixstreams 3.28.1 and on stream_edge, on the real broker, outputs compared.

The concatenated stream (``<left>--<right>``) owns three stores (a stateful ``apply``'s, a
tumbling window's and, as the right side of an as-of join, the join's). The program runs twice
with the same consumer group: the second run starts from an empty state directory, so its stores
come back from their changelog topics, which carry the offsets of both input topics.
"""

import json
import random

import pytest

pytestmark = pytest.mark.integration

PROGRAM = r'''
import json, tempfile
from quixstreams import Application


def build():
    app = Application(broker_address=BROKER, consumer_group=GROUP, auto_offset_reset="earliest", loglevel=None,
                      state_dir=tempfile.mkdtemp())
    left = app.dataframe(app.topic(LEFT, value_deserializer="json"))
    right = app.dataframe(app.topic(RIGHT, value_deserializer="json"))
    lookups = app.dataframe(app.topic(LOOKUPS, value_deserializer="json"))
    both = left.concat(right)
    print("stream_id:", both.stream_id == "--".join(sorted([LEFT, RIGHT])))

    def count(value, state):
        n = state.get("n", 0) + 1
        total = state.get("total", 0) + value["x"]
        state.set("n", n)
        state.set("total", total)
        return {"x": value["x"], "n": n, "total": total}

    counted = both.apply(count, stateful=True)
    counted.update(lambda v, k, t, h: print("count", k, t, json.dumps(v, sort_keys=True)), metadata=True)
    windows = both.apply(lambda v: v["x"]).tumbling_window(30).sum().final()
    windows.update(lambda v, k, t, h: print("window", k, t, json.dumps(v, sort_keys=True)), metadata=True)
    joined = lookups.join_asof(both, how="left", on_merge="keep-left")
    joined.update(lambda v, k, t, h: print("join", k, t, json.dumps(v, sort_keys=True)), metadata=True)
    return app


for phase in ("first", "second"):
    produce(phase)
    print("== " + phase)
    build().run(timeout=5)
'''


def _header(bootstrap: str, events: dict) -> str:
    """Each run makes its own topics (2 partitions each) and produces the phases into them."""
    return (f"BROKER = {bootstrap!r}\n"
            "import uuid as _uuid, json as _json\n"
            "from confluent_kafka import Producer as _Producer\n"
            "from confluent_kafka.admin import AdminClient as _Admin, NewTopic as _NewTopic\n"
            "_run = _uuid.uuid4().hex[:8]\n"
            "GROUP = 'concat-state-' + _run\n"
            "LEFT, RIGHT, LOOKUPS = ('compat-cs-' + side + '-' + _run for side in 'lrj')\n"
            "_admin = _Admin({'bootstrap.servers': BROKER})\n"
            "for _f in _admin.create_topics(\n"
            "        [_NewTopic(t, num_partitions=2, replication_factor=1) for t in (LEFT, RIGHT, LOOKUPS)]).values():\n"
            "    _f.result(30)\n"
            f"EVENTS = {json.dumps(events)!r}\n"
            "def produce(phase):\n"
            "    producer = _Producer({'bootstrap.servers': BROKER})\n"
            "    names = {'l': LEFT, 'r': RIGHT, 'j': LOOKUPS}\n"
            "    for side, key, ts, value in _json.loads(EVENTS)[phase]:\n"
            "        producer.produce(names[side], _json.dumps(value).encode(), key.encode(), timestamp=ts)\n"
            "    assert producer.flush(30) == 0\n")


def _events(rng: random.Random) -> dict:
    """Two phases of records; timestamps never tie across topics (Quix orders ties arbitrarily)."""
    phases, ts = {}, 1_000
    for phase in ("first", "second"):
        records = []
        for i in range(36):
            ts += rng.choice([3, 6, 9])
            topic, offset = [("l", 0), ("r", 1), ("j", 2)][rng.randrange(3)]
            value = {"x": i} if topic != "j" else {"lookup": i}
            records.append((topic, rng.choice(["a", "b", "c", "d"]), ts + offset, value))
        phases[phase] = records
    return phases


def _sorted_sections(output: str) -> dict:
    """Each phase's lines, sorted: partitions interleave differently on the two packages."""
    from tests.compat.conftest import sections

    return {name: sorted(text.splitlines()) for name, text in sections(output).items()}


@pytest.mark.parametrize("seed", [3])
def test_concat_then_state_window_and_join_matches_quixstreams(run_both, kafka_bootstrap, seed):
    out = run_both(_header(kafka_bootstrap, _events(random.Random(seed))) + PROGRAM, quix_attempts=2)
    edge, quix = _sorted_sections(out.edge), _sorted_sections(out.quix)
    assert edge == quix
    assert "stream_id: True" in edge["first"] and "stream_id: True" in edge["second"]
    # the second run's stores came back from the changelogs: each key's count goes on from the first run's
    counts = {phase: [line.split(" ", 3) for line in edge[phase] if line.startswith("count")]
              for phase in ("first", "second")}
    first_keys = {key for _, key, _, _ in counts["first"]}
    resumed = [json.loads(value)["n"] for _, key, _, value in counts["second"] if key in first_keys]
    assert resumed and min(resumed) > 1
    assert sum(line.startswith("window") for line in edge["second"]) > 0
    assert any(line.startswith("join") and '"x"' in line for line in edge["second"])
