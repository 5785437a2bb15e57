"""Pure logic behind the round-2 fidelity fixes: column errors, the two sink-flush forms, the
application config's validation, the ascending window ranges."""

from __future__ import annotations

import pytest

from stream_edge.app_config import ApplicationConfig
from stream_edge.dataframe.columns import column_getter, column_of, column_operation
from stream_edge.dataframe.exceptions import ColumnDoesNotExist, InvalidColumnReference
from stream_edge.dataframe.windows.base import get_window_ranges
from stream_edge.kafka.configuration import ConnectionConfig
from stream_edge.sinks.base.manager import takes_partition
from stream_edge.sinks.base.sink import partition_args


def test_column_getter_raises_quix_column_errors():
    get = column_getter("a")
    assert get({"a": 1}) == 1 and column_of(get) == "a" and column_of(len) is None
    with pytest.raises(ColumnDoesNotExist, match="Column 'a' does not exist in the message value"):
        get({})
    with pytest.raises(InvalidColumnReference, match="expects message value type 'dict', not 'list'"):
        get([1])
    greater = column_operation("a", lambda x, y: x > y, 2)
    assert greater({"a": 3}) is True
    with pytest.raises(ColumnDoesNotExist):
        greater({"b": 3})


def test_flush_forms_are_told_apart_by_their_signature():
    def quix_form():
        return None

    def contract_form(topic, partition):
        return None

    def either(*args, **kwargs):
        return None

    assert not takes_partition(quix_form)
    assert takes_partition(contract_form) and takes_partition(either)
    assert partition_args(("t", 1), {}) == ("t", 1)
    assert partition_args((), {"topic": "t", "partition": 2}) == ("t", 2)
    assert partition_args((), {}) == (None, None)


def test_application_config_is_frozen_and_validated():
    broker = ConnectionConfig(bootstrap_servers="localhost:9092")
    config = ApplicationConfig(broker_address=broker, consumer_group="g")
    assert config.consumer_group_prefix == "" and config.flush_timeout == 300.0
    with pytest.raises(ValueError, match=r"commit_interval:?\s+Instance is frozen"):  # pydantic's, as Quix's
        config.commit_interval = 1  # type: ignore[misc]
    with pytest.raises(ValueError, match=r"zzz:?\s+Extra inputs are not permitted"):
        config.copy(zzz=1)
    with pytest.raises(ValueError, match="processing_guarantee"):
        config.copy(processing_guarantee="twice")
    with pytest.raises(ValueError, match="consumer_group: Field required"):
        ApplicationConfig(broker_address=broker)
    assert config.copy(commit_interval=4).commit_interval == 4
    assert ApplicationConfig(broker_address="h:1", consumer_group="g", commit_every=2.0).commit_every == 2


def test_window_ranges_are_oldest_first():
    assert list(get_window_ranges(12, 10, 3)) == [(3, 13), (6, 16), (9, 19), (12, 22)]
    assert list(get_window_ranges(3, 10, 5)) == [(0, 10)]
