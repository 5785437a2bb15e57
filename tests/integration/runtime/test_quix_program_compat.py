"""The compatibility contract: a Quix Streams 3.x program runs after replacing ``quixstreams`` with
``stream_edge`` in its imports (module paths included)."""

from __future__ import annotations

import uuid

import orjson
import pytest

pytestmark = pytest.mark.integration

QUIX_PROGRAM = '''
from datetime import timedelta

from quixstreams import Application, State
from quixstreams.models import TopicConfig
from quixstreams.models.serializers.json import JSONSerializer
from quixstreams.sinks.base import BatchingSink
from quixstreams.dataframe.utils import ensure_milliseconds


class Collect(BatchingSink):
    def __init__(self):
        super().__init__()
        self.rows = []

    def write(self, batch):
        self.rows.extend(item.value for item in batch)


def count_by_key(value, state: State):
    seen = state.get("seen", 0) + 1
    state.set("seen", seen)
    return {**value, "seen": seen}


app = Application(broker_address=BROKER, consumer_group=GROUP, auto_offset_reset="earliest",
                  commit_interval=1.0, state_dir=STATE_DIR, loglevel=None)
readings = app.topic(SOURCE, value_deserializer="json")
enriched = app.topic(OUTPUT, value_serializer=JSONSerializer(), key_serializer="str",
                     config=TopicConfig(num_partitions=2, replication_factor=1))

sdf = app.dataframe(readings)
sdf = sdf[sdf["temp"].notnull()]
sdf["temp_f"] = sdf["temp"] * 9 / 5 + 32
sdf["hot"] = (sdf["temp_f"] > 80) & sdf["room"].isin(["lab", "office"])
sdf = sdf.apply(count_by_key, stateful=True)
sdf = sdf.update(lambda value: value.pop("debug", None))
sdf.to_topic(enriched, key=lambda value: value["room"])
sink = Collect()
sdf.sink(sink)
windows = (sdf.apply(lambda value: value["temp"])
           .tumbling_window(timedelta(milliseconds=ensure_milliseconds(timedelta(seconds=10))))
           .count().final())
RESULT = app.run(count=N_OUTPUTS, timeout=30)
'''


def test_quix_program_runs_with_imports_replaced(kafka_bootstrap, make_topic, produce, read_topic, tmp_path):
    src, dst = make_topic(partitions=2), make_topic(partitions=2)
    base = 1_700_000_000_000
    rooms = ["lab", "office", "hall"]
    produce(src, [(f"sensor-{i % 3}".encode(), {"room": rooms[i % 3], "temp": 20 + i, "debug": True})
                  for i in range(9)], timestamp=base)
    produce(src, [(b"sensor-0", {"room": "lab", "temp": None})], timestamp=base)
    produce(src, [(f"sensor-{i}".encode(), {"room": rooms[i], "temp": 0}) for i in range(3)],
            timestamp=base + 60_000)  # moves event time on: the first windows close
    namespace = {"BROKER": kafka_bootstrap, "GROUP": f"compat-{uuid.uuid4().hex[:8]}", "SOURCE": src,
                 "OUTPUT": dst, "STATE_DIR": str(tmp_path / "state"), "N_OUTPUTS": 12 + 3}
    # outputs = the leaves of the tree: 12 records into the sink + 3 closed windows
    exec(compile(QUIX_PROGRAM.replace("quixstreams", "stream_edge"), "quix_program", "exec"), namespace)

    out = read_topic(dst, 12)
    values = [orjson.loads(m.value()) for m in out]
    assert sorted(m.key() for m in out) == sorted(r.encode() for r in rooms * 4)
    assert all("debug" not in v and v["temp_f"] == v["temp"] * 9 / 5 + 32 for v in values)
    hot = {v["temp"]: v["hot"] for v in values}
    assert hot[28] is False and hot[27] is True and hot[26] is False  # 82.4 F hall, 80.6 F office, 78.8 F lab
    assert max(v["seen"] for v in values) == 4  # per-key state: four readings per sensor
    assert len(namespace["sink"].rows) == 12
    window_counts = [r for r in namespace["RESULT"] if set(r) == {"start", "end", "value"}]
    assert sorted(r["value"] for r in window_counts) == [3, 3, 3]
