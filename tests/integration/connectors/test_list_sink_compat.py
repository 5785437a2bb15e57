"""ListSink compared with quixstreams 3.28.1 on the real broker: the same program, the same topic,
byte-identical output (the program's ``quixstreams`` imports replaced by ``stream_edge``)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.integration

REPO = Path(__file__).resolve().parents[3]

PROGRAM = """
import sys
from quixstreams import Application
from quixstreams.sinks.core.list import ListSink

bootstrap, topic, group = sys.argv[1:4]
app = Application(broker_address=bootstrap, consumer_group=group, auto_offset_reset="earliest")
plain, meta = ListSink(), ListSink(metadata=True)
sdf = app.dataframe(app.topic(topic))
sdf.sink(plain)
sdf = sdf.apply(lambda v: v["n"] if v["n"] % 2 else v)
sdf.sink(meta)
app.run(count=6, timeout=10)
print(sorted(map(repr, plain)))
print(sorted(map(repr, meta)))
print(len(plain), len(meta), type(plain[0]).__name__, plain == list(plain))
"""


def quix_python() -> str:
    sys.path.insert(0, str(REPO / "bench"))
    try:
        from quix_venv import quix_python as make
    finally:
        sys.path.remove(str(REPO / "bench"))
    return str(make())


def test_list_sink_output_equals_quixstreams(make_topic, kafka_bootstrap, tmp_path, unique_name):
    from confluent_kafka import Producer

    topic = make_topic(partitions=1, prefix="list-compat")
    producer = Producer({"bootstrap.servers": kafka_bootstrap})
    for n in range(6):
        producer.produce(topic, key=f"k{n}".encode(), value=json.dumps({"n": n}).encode(), timestamp=1000 + n,
                         headers=[("h", b"v")] if n == 2 else None)
    assert producer.flush(30) == 0
    outputs = {}
    for name, python, source in (("quix", quix_python(), PROGRAM),
                                 ("edge", sys.executable, PROGRAM.replace("quixstreams", "stream_edge"))):
        script = tmp_path / f"{name}.py"
        script.write_text(source)
        env = dict(os.environ, PYTHONPATH=str(REPO) if name == "edge" else "")
        done = subprocess.run([python, "-W", "ignore", str(script), kafka_bootstrap, topic, unique_name(name)],
                              capture_output=True, text=True, timeout=120, env=env, cwd=tmp_path)
        assert done.returncode == 0, done.stderr[-3000:]
        outputs[name] = done.stdout
    assert "'_headers': [('h', b'v')]" in outputs["quix"]
    assert outputs["edge"] == outputs["quix"]
