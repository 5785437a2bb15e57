"""ListSink's list behaviour, and the connector modules importing without their client libraries."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from stream_edge.sinks.base.sink import BaseSink
from stream_edge.sinks.core.list import ListSink

REPO = Path(__file__).resolve().parents[3]


def test_list_sink_appends_dicts_as_is_and_wraps_other_values():
    sink = ListSink()
    value = {"a": 1}
    sink.add(value, b"k", 10, [], "t", 0, 5)
    sink.add(7, b"k", 11, [], "t", 0, 6)
    sink.add(None, None, 12, [], "t", 1, 0)
    sink.flush("t", 0)
    assert sink == [{"a": 1}, {"value": 7}, {"value": None}]
    assert sink[0] is value and len(sink) == 3 and isinstance(sink, BaseSink)
    assert repr(sink) == "[{'a': 1}, {'value': 7}, {'value': None}]"


def test_list_sink_metadata_prefixes_each_record_and_value_fields_win():
    sink = ListSink(metadata=True)
    value = {"a": 1, "_key": "mine"}
    sink.add(value, b"k", 10, [("h", b"v")], "t", 2, 5)
    sink.add([1], "k2", 11, None, "t", 0, 6)
    assert list(sink) == [
        {"_key": "mine", "_timestamp": 10, "_headers": [("h", b"v")], "_topic": "t", "_partition": 2, "_offset": 5,
         "a": 1},
        {"_key": "k2", "_timestamp": 11, "_headers": None, "_topic": "t", "_partition": 0, "_offset": 6,
         "value": [1]},
    ]
    assert list(sink[0]) == ["_key", "_timestamp", "_headers", "_topic", "_partition", "_offset", "a"]
    assert value == {"a": 1, "_key": "mine"}  # the record's own dict is not changed


def test_list_sink_takes_an_initial_iterable_like_list():
    assert ListSink([1, 2]) == [1, 2]
    with pytest.raises(TypeError):
        ListSink(1)


@pytest.mark.parametrize("module, cls, nargs, package, extra", [
    ("stream_edge.sinks.community.postgresql", "PostgreSQLSink", 6, "psycopg", "edge-postgres"),
    ("stream_edge.sinks.community.redis", "RedisSink", 3, "redis", "edge-redis"),
    ("stream_edge.sinks.community.mqtt", "MQTTSink", 4, "paho", "edge-mqtt"),
])
def test_connector_imports_without_its_client_and_names_the_extra_at_use(module, cls, nargs, package, extra):
    program = (
        "import sys\n"
        f"sys.modules[{package!r}] = None  # the client library is not installed\n"
        f"from {module} import {cls}\n"
        "try:\n"
        f"    {cls}(*(['x'] * {nargs}))\n"
        "except ImportError as exc:\n"
        "    print(exc)\n"
    )
    done = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True, cwd=REPO)
    assert done.returncode == 0, done.stderr
    assert f"pip install streaming-lakehouse[{extra}]" in done.stdout
