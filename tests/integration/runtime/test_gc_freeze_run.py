"""A run keeps its start-up objects out of the cyclic collector's scans while it consumes, and gives
them back when it ends (``stream_edge.processing.gc_freeze``), real broker."""

from __future__ import annotations

import gc

import pytest

from stream_edge.processing.observer import RunObserver

pytestmark = pytest.mark.integration


class FreezeCount(RunObserver):
    def __init__(self) -> None:
        self.during = []

    def on_batch(self, messages, processed: int, seconds: float) -> None:
        self.during.append(gc.get_freeze_count())


def test_start_up_objects_are_frozen_during_a_run_and_given_back_after(new_app, make_topic, produce):
    topic = make_topic(partitions=1)
    produce(topic, [(b"k", {"i": i}) for i in range(20)])
    app, _ = new_app()
    seen = FreezeCount()
    app.add_run_observer(seen)
    app.dataframe(app.topic(topic, value_deserializer="json"))
    rows = app.run(count=20, timeout=30)
    assert [r["i"] for r in rows] == list(range(20))
    assert seen.during and min(seen.during) > 1000  # the runtime, confluent-kafka, ...
    assert gc.get_freeze_count() == 0
