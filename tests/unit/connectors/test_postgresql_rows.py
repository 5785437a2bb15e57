"""PostgreSQLSink's row shaping (pure: no server): the values handed to COPY, in column order."""

from stream_edge.sinks.community.postgresql import _column_values


def test_rows_holding_every_column_and_rows_missing_some_give_the_same_layout():
    columns = ["id", "name", "extra"]
    full = [{"id": 1, "name": "a", "extra": 3}, {"extra": 4, "id": 2, "name": "b"}]
    assert _column_values(full, columns, mutable=False) == [(1, "a", 3), (2, "b", 4)]
    assert _column_values(full, columns, mutable=True) == [[1, "a", 3], [2, "b", 4]]
    ragged = full + [{"id": 3}]  # a record without the newer columns: NULLs there
    assert _column_values(ragged, columns, mutable=False) == [[1, "a", 3], [2, "b", 4], [3, None, None]]
    assert _column_values([{"id": 7}, {}], ["id"], mutable=False) == [[7], [None]]
