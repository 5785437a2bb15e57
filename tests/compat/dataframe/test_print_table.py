"""StreamingDataFrame.print_table in non-interactive mode (stdout is a pipe): the same program on
quixstreams 3.28.1 and on stream_edge, on the real broker, outputs compared byte for byte
(titles, metadata columns, columns seen so far, column widths, long cells cut to the console).

stream_edge prints a table as soon as it fills, Quix once the message went through the whole
pipeline (docs/compatibility.md): the program prints nothing else between tables."""

import json
import random

import pytest

pytestmark = pytest.mark.integration

PROGRAM = r'''
from quixstreams import Application

app = Application(broker_address=BROKER, consumer_group=GROUP, auto_offset_reset="earliest", loglevel=None,
                  state_dir=STATE_DIR)
sdf = app.dataframe(app.topic(TOPIC, value_deserializer="json"))
sdf.print_table(size=3, title="Live Records", timeout=120)
sdf.apply(lambda v: v["x"]).print_table(size=4, metadata=False, timeout=120)
sdf.print_table(size=2, columns=["name", "x"], column_widths={"name": 5}, timeout=120)
sdf.print_table(size=6, columns=[], title="keys only", timeout=120)
sdf = sdf.print_table(size=12, metadata=False, timeout=120)
app.run(timeout=4)
print("done")
'''

WORDS = ["alpha", "beta", "gamma delta epsilon", "Ümlaut", "averyveryverylongwordwithoutanyspacesatallreally", ""]


def _values(rng: random.Random, n: int) -> list:
    values = []
    for i in range(n):
        value = {"x": rng.choice([i, -i, i * 1.5, i * 1000])}
        if rng.random() < 0.6:
            value["name"] = rng.choice(WORDS + [None])
        if rng.random() < 0.3:
            value[rng.choice(["score", "active", "nested"])] = rng.choice([27.74, True, {"a": [1, 2]}, None])
        values.append(value)
    return values


@pytest.mark.parametrize("seed", [5, 8])
def test_print_table_matches_quixstreams(run_both, kafka_bootstrap, make_topic, seed):
    from confluent_kafka import Producer

    topic = make_topic(prefix="compat-table")
    producer = Producer({"bootstrap.servers": kafka_bootstrap})
    for i, value in enumerate(_values(random.Random(seed), 24)):
        producer.produce(topic, json.dumps(value).encode(), f"key{i % 5}".encode(), timestamp=1_700_000_000_000 + i)
    assert producer.flush(30) == 0
    header = (f"BROKER = {kafka_bootstrap!r}\nTOPIC = {topic!r}\nGROUP = 'table-' + __import__('uuid').uuid4().hex[:8]\n"
              f"STATE_DIR = __import__('tempfile').mkdtemp()\n")
    out = run_both(header + PROGRAM)
    for edge_line, quix_line in zip(out.edge.splitlines(), out.quix.splitlines()):
        assert edge_line == quix_line
    assert out.edge == out.quix
    assert out.edge.count("Live Records") == 8 and out.edge.count("keys only") == 4
    assert out.edge.count("┏") == 8 + 6 + 12 + 4 + 2 and out.edge.endswith("done\n")
