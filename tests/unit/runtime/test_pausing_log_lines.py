"""The pausing manager logs a backpressure streak once, not once per retry."""

import logging

from stream_edge.processing.pausing import PausingManager


class RecordingConsumer:
    """Stands in for the Kafka consumer: the manager only pauses, seeks and resumes."""

    def __init__(self):
        self.calls = []

    def pause(self, tps):
        self.calls.append(("pause", [(tp.topic, tp.partition) for tp in tps]))

    def seek(self, tp):
        self.calls.append(("seek", (tp.topic, tp.partition, tp.offset)))

    def resume(self, tps):
        self.calls.append(("resume", [(tp.topic, tp.partition) for tp in tps]))


def test_a_streak_of_pauses_logs_one_warning_and_one_recovery(caplog):
    consumer = RecordingConsumer()
    pausing = PausingManager(consumer)
    with caplog.at_level(logging.DEBUG, logger="stream_edge"):
        for _ in range(5):
            pausing.pause("t", 0, 7, resume_after=0)
            pausing.resume_if_ready()
        pausing.committed([("t", 0)])
        pausing.pause("t", 0, 9, resume_after=0)  # a new streak after the commit
    warnings = [r for r in caplog.records if r.levelno == logging.WARNING]
    infos = [r for r in caplog.records if r.levelno == logging.INFO]
    assert len(warnings) == 2
    assert "offset 7" in warnings[0].getMessage() and "offset 9" in warnings[1].getMessage()
    assert len(infos) == 1 and "committed again" in infos[0].getMessage()
    assert consumer.calls.count(("seek", ("t", 0, 7))) == 5  # every retry still seeks back
