"""Windows (stream_edge.dataframe.windows) driven by the runtime on the real broker: the
add_expanding_op seam, windowed stores through the state manager, results to a topic."""

from __future__ import annotations

from datetime import timedelta

import orjson
import pytest

pytestmark = pytest.mark.integration

BASE = 1_700_000_000_000


def test_tumbling_window_final_results_to_topic(new_app, make_topic, produce, read_topic):
    src, dst = make_topic(), make_topic()
    for i in range(10):  # two events per 1 s window, the last window stays open
        produce(src, [(b"sensor", {"v": i})], timestamp=BASE + i * 500)
    app, _ = new_app()
    sdf = app.dataframe(app.topic(src))
    sdf = sdf.apply(lambda v: v["v"]).tumbling_window(timedelta(seconds=1)).sum().final()
    sdf.to_topic(app.topic(dst))
    rows = app.run(count=4, timeout=30)
    assert [(r["start"] - BASE, r["value"]) for r in rows] == [(0, 1), (1000, 5), (2000, 9), (3000, 13)]
    out = read_topic(dst, 4)
    assert [orjson.loads(m.value())["value"] for m in out] == [1, 5, 9, 13]
    assert [m.timestamp()[1] - BASE for m in out] == [0, 1000, 2000, 3000]  # result timestamp = window start
