"""A burst of dead letters: the first five of a minute get a WARNING each, the rest one line with
their count, and none is produced less because it was not logged."""

import logging

import pytest
from confluent_kafka import Message

from stream_edge.processing.dead_letter import DeadLetterTopic
from stream_edge.processing.log_budget import LogBudget


def message(offset: int) -> Message:
    return Message(topic="orders", partition=0, offset=offset, key=b"k", value=b"{bad", timestamp=(1, 1_000))


def test_a_burst_logs_five_lines_then_one_count_and_sends_every_record(caplog):
    produced = []
    dlq = DeadLetterTopic("orders-dlq", lambda topic, **kw: produced.append(kw), None, None)
    with caplog.at_level(logging.WARNING, logger="stream_edge"):
        for offset in range(23):
            assert dlq.deserialization_failed(ValueError(f"bad JSON at {offset}"), message(offset))
        dlq.report_unlogged()
        dlq.report_unlogged()  # nothing left: no second line
    lines = [r.getMessage() for r in caplog.records]
    assert len(produced) == 23 and dlq.sent == 23
    assert [line for line in lines if line.startswith("deserialization failed")] == [
        f"deserialization failed at topic 'orders' partition 0 offset {o} (ValueError: bad JSON at {o}): "
        f"sent to the dead-letter topic 'orders-dlq'" for o in range(5)]
    assert lines[-1].startswith("18 more records were sent to the dead-letter topic 'orders-dlq'")
    assert len(lines) == 6


def test_the_next_minute_reports_the_previous_count_before_its_own_lines():
    now = [0.0]
    budget = LogBudget(first=1, period=60.0, clock=lambda: now[0])
    assert budget.allow() and not budget.allow() and not budget.allow()
    now[0] = 59.9
    assert not budget.allow() and budget.pending == 3
    now[0] = 60.0
    assert budget.allow() and budget.take_pending() == 3 and budget.pending == 0


@pytest.mark.parametrize("first, period", [(0, 1.0), (1, 0.0)])
def test_a_budget_that_would_log_nothing_is_refused(first, period):
    with pytest.raises(ValueError, match="LogBudget needs"):
        LogBudget(first=first, period=period)
