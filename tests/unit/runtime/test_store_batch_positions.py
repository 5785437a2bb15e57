"""The runner's per-batch offsets: first offsets from the positions taken before consume()."""

from typing import Dict, List, Tuple

from confluent_kafka import Message, TopicPartition

from stream_edge.processing.runner import Runner, RunnerParts


class PositionConsumer:
    """The consumer's position() only: the next offset per partition."""

    def __init__(self, positions: Dict[Tuple[str, int], int]) -> None:
        self.positions = positions

    def position(self, partitions: List[TopicPartition]) -> List[TopicPartition]:
        return [TopicPartition(tp.topic, tp.partition, self.positions.get((tp.topic, tp.partition), -1001))
                for tp in partitions]


class Recorder:
    """What the checkpoint receives from _store_batch."""

    def __init__(self) -> None:
        self.stored: List[tuple] = []

    def starts_known(self) -> int:
        return 0

    def store_batch(self, last, first, count) -> None:
        self.stored.append((last, first, count))


def runner(positions: Dict[Tuple[str, int], int], assigned) -> Runner:
    parts = RunnerParts(config=None, consumer=PositionConsumer(positions), producer=None, registry=None,  # type: ignore[arg-type]
                        context=None, state_manager=None, sink_manager=None, sources=None,  # type: ignore[arg-type]
                        on_consumer_error=None, on_processing_error=None, on_message_processed=None,  # type: ignore[arg-type]
                        setup_topics=lambda: None)
    run = Runner(parts)
    run._assigned = set(assigned)
    run._positions = [TopicPartition(t, p) for t, p in sorted(assigned)]
    return run


def batch(pairs):
    return [Message(topic="t", partition=p, offset=o, value=b"{}") for p, o in pairs]


def test_first_offsets_come_from_the_positions_before_the_batch():
    msgs = batch([(0, 10), (0, 11), (1, 5), (0, 12), (1, 6)])
    run = runner({("t", 0): 13, ("t", 1): 7, ("t", 2): 40}, [("t", 0), ("t", 1), ("t", 2)])
    checkpoint = Recorder()
    run._store_batch(checkpoint, msgs, len(msgs), True, before={("t", 0): 10, ("t", 1): 5, ("t", 2): 40})
    last, first, count = checkpoint.stored[0]
    assert last == {("t", 0): 12, ("t", 1): 6, ("t", 2): 39}
    assert first == {("t", 0): 10, ("t", 1): 5}  # partition 2 did not move: not in this batch
    assert count == 5


def test_a_gap_before_the_first_message_rewinds_to_the_old_position():
    # Offset 20 is a transaction marker: the position was 20, the first message is 21.
    msgs = batch([(0, 21), (0, 22)])
    run = runner({("t", 0): 23}, [("t", 0)])
    checkpoint = Recorder()
    run._store_batch(checkpoint, msgs, 2, True, before={("t", 0): 20})
    assert checkpoint.stored[0][1] == {("t", 0): 20}


def test_a_new_or_rewound_partition_falls_back_to_the_scan():
    msgs = batch([(0, 10), (1, 3), (1, 4)])
    positions = {("t", 0): 11, ("t", 1): 5}
    for before in ({("t", 0): 10},  # partition 1 had no position (new, or reset by a seek)
                   {("t", 0): 10, ("t", 1): 90},  # partition 1 went back: a seek
                   None):  # a rebalance happened inside consume()
        checkpoint = Recorder()
        runner(positions, [("t", 0), ("t", 1)])._store_batch(checkpoint, msgs, 3, True, before=before)
        assert checkpoint.stored[0][1] == {("t", 0): 10, ("t", 1): 3}


def test_a_partly_processed_batch_scans():
    msgs = batch([(0, 10), (0, 11), (1, 3)])
    checkpoint = Recorder()
    runner({("t", 0): 12, ("t", 1): 4}, [("t", 0), ("t", 1)])._store_batch(
        checkpoint, msgs, 2, True, before={("t", 0): 10, ("t", 1): 3})
    last, first, count = checkpoint.stored[0]
    assert last == {("t", 0): 11} and first == {("t", 0): 10} and count == 2
