"""The data-lake sink's column-by-column conversion gives what ``pa.array(records)`` gives."""

import pyarrow as pa
import pytest

from stream_edge.sinks.core.datalake.sink import _struct_chunk

SAME = [
    [{"id": 1, "sensor": "a", "temp": 17.5}, {"id": 2, "sensor": "b", "temp": 18.0}],
    [{"id": 1}, {"id": 2, "late": "x"}, {"late": "y", "id": 3}],  # a field appearing later, other key order
    [{"a": 1}, {"a": 2.5}],  # ints and floats: double
    [{"a": None}, {"a": None}],  # all null: null type
    [{"a": {"x": 1}}, {"a": {"y": [1, 2]}}],  # nested structs and lists
    [{"a": 1, "b": None}, {"b": True}],
    [{}, {"a": 1}],
]


@pytest.mark.parametrize("records", SAME)
def test_same_fields_types_and_values_as_pa_array(records):
    expected = pa.array(records)
    chunk = _struct_chunk(records)
    assert chunk.type == expected.type
    assert chunk.to_pylist() == expected.to_pylist()


def test_empty_dicts_and_non_string_names_take_arrows_own_path():
    assert _struct_chunk([{}, {}]).type == pa.array([{}, {}]).type
    with pytest.raises((pa.ArrowInvalid, pa.ArrowTypeError, TypeError)):
        _struct_chunk([{1: "x"}])


@pytest.mark.parametrize("records", [[{"a": 1}, {"a": "x"}], [{"a": [1]}, {"a": "x"}], [{"a": 2 ** 64}]])
def test_what_pa_array_refuses_is_refused(records):
    with pytest.raises((pa.ArrowInvalid, pa.ArrowTypeError, OverflowError)):
        pa.array(records)
    with pytest.raises((pa.ArrowInvalid, pa.ArrowTypeError, OverflowError)):
        _struct_chunk(records)
