"""OutputCollector: what run(count=..., timeout=...) keeps of its outputs, within collect_limit."""

from __future__ import annotations

import logging

import pytest

from stream_edge.processing.collector import DEFAULT_COLLECT_LIMIT, OutputCollector, collect_limit_for
from stream_edge.processing.context import ProcessingContext


def test_past_the_bound_outputs_are_counted_not_kept_and_one_warning_says_so(caplog) -> None:
    collector = OutputCollector(ProcessingContext().cursor, count_limit=0, collect=True, metadata=False, keep=3)
    with caplog.at_level(logging.WARNING, logger="stream_edge"):
        for i in range(7):
            collector.sink({"i": i} if i % 2 else i, None, 0, None)
    assert collector.items == [{"_value": 0}, {"i": 1}, {"_value": 2}]
    assert collector.count == 7 and collector.dropped == 4
    warnings = [r.getMessage() for r in caplog.records]
    assert len(warnings) == 1 and "3 outputs collected (collect_limit)" in warnings[0]


def test_kept_outputs_are_copies() -> None:
    collector = OutputCollector(ProcessingContext().cursor, count_limit=0, collect=True, metadata=False, keep=2)
    value = {"x": 1}
    collector.sink(value, None, 0, None)
    value["x"] = 2  # a later step changing the value does not change what run() returns
    assert collector.items == [{"x": 1}]


def test_collect_false_keeps_nothing() -> None:
    collector = OutputCollector(ProcessingContext().cursor, count_limit=5, collect=False, metadata=False)
    for i in range(5):
        collector.sink(i, None, 0, None)
    assert collector.items == [] and collector.count == 5 == collector.limit


def test_the_bound_for_each_run_mode() -> None:
    assert collect_limit_for(0, None) == DEFAULT_COLLECT_LIMIT  # run(timeout=...)
    assert collect_limit_for(DEFAULT_COLLECT_LIMIT * 3, None) == DEFAULT_COLLECT_LIMIT * 3  # run(count=n): n
    assert collect_limit_for(10, 50) == 50 and collect_limit_for(0, 0) == float("inf")
    with pytest.raises(ValueError, match="collect_limit must be >= 0"):
        collect_limit_for(0, -1)
