"""RunSummaryLog: one line per interval with the messages of that interval, a final line at stop."""

import logging

import pytest

from stream_edge.service.summary import RunSummaryLog


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_lines_cover_each_interval_and_the_final_one(caplog):
    clock = Clock()
    summary = RunSummaryLog(interval=10, clock=clock)
    summary.on_start(["in"], None)
    summary.on_assign([("in", 0), ("in", 1)])
    with caplog.at_level(logging.INFO, logger="stream_edge.summary"):
        summary.on_batch([], 300, 0.01)
        clock.now += 4
        summary.on_batch([], 200, 0.01)  # not yet: 4 s of 10
        summary.on_checkpoint(0.004, {("in", 0): 10})
        clock.now += 6
        summary.on_batch([], 500, 0.01)  # 10 s: a line for 1,000 messages
        summary.on_processing_error(ValueError("bad"))
        summary.on_dead_letter("processing", ValueError("bad"))
        clock.now += 2
        summary.on_batch([], 40, 0.01)
        summary.on_stop(None)
    lines = [r.getMessage() for r in caplog.records]
    assert lines == [
        "summary: 1,000 messages in 10.0s (100/s), total 1,000; checkpoints 1 (last 4 ms); errors 0; "
        "partitions 2; rebalances 1",
        "final summary: 40 messages in 2.0s (20/s), total 1,040; checkpoints 1 (last 4 ms); errors 1; "
        "dead-lettered 1; partitions 2; rebalances 1",
    ]


def test_interval_must_be_positive():
    with pytest.raises(ValueError, match="interval must be a positive number"):
        RunSummaryLog(interval=0)
