"""A partition paused by backpressure and then revoked or lost is resumed in the consumer before
it goes: librdkafka keeps a partition's pause across a rebalance, so one that comes back to this
instance (a fenced lake writer's partition, typically) would otherwise never be read again."""

from __future__ import annotations

from stream_edge.processing.pausing import PausingManager


class RecordingConsumer:
    """Records pause/seek/resume calls as (call, topic, partition)."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, str, int]] = []

    def pause(self, tps) -> None:
        self.calls.extend(("pause", tp.topic, tp.partition) for tp in tps)

    def seek(self, tp) -> None:
        self.calls.append(("seek", tp.topic, tp.partition))

    def resume(self, tps) -> None:
        self.calls.extend(("resume", tp.topic, tp.partition) for tp in tps)


def test_a_paused_partition_is_resumed_when_revoked():
    consumer = RecordingConsumer()
    pausing = PausingManager(consumer)
    pausing.pause("t", 1, offset_to_seek=400, resume_after=5.0)
    pausing.revoke("t", 1)
    assert consumer.calls == [("pause", "t", 1), ("seek", "t", 1), ("resume", "t", 1)]
    assert not pausing.paused and not pausing.is_paused("t", 1)


def test_revoking_a_partition_that_is_not_paused_touches_nothing():
    consumer = RecordingConsumer()
    pausing = PausingManager(consumer)
    pausing.pause("t", 0, offset_to_seek=7, resume_after=5.0)
    pausing.revoke("t", 1)
    assert consumer.calls == [("pause", "t", 0), ("seek", "t", 0)]
    assert pausing.is_paused("t", 0)
