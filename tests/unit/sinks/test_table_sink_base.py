"""The table sinks share one buffer implementation, one record type checker and one fault
classifier (``stream_edge.sinks.buffered_table``); each keeps only what differs.

An AST scan of ``stream_edge/`` for the buffers, the sinks' classes for the rest, and the
classifier on the faults the sinks meet.
"""

from __future__ import annotations

import ast
from pathlib import Path
from typing import Iterator, Tuple

import pytest

from stream_edge.errors import OUTAGE, PERMANENT
from stream_edge.sinks.arrow_buffer import PartitionBuffer
from stream_edge.sinks.buffered_table import BufferedTableSink, write_fault_kind
from stream_edge.sinks.community.iceberg import IcebergSink
from stream_edge.sinks.core.datalake import DataLakeSink
from stream_edge.sinks.core.quix_ts_datalake_sink import QuixTSDataLakeSink

ROOT = Path(__file__).resolve().parents[3]
BUFFER = "stream_edge/sinks/arrow_buffer.py"
BASE = "stream_edge/sinks/buffered_table.py"
TABLE_SINK_MODULES = ("stream_edge/sinks/core/datalake/sink.py", "stream_edge/sinks/core/datalake/records.py",
                      "stream_edge/sinks/core/datalake/lake_writer.py", "stream_edge/sinks/community/iceberg.py")
#: what the base owns: a table sink that defines one of these has its own copy of the behaviour
BASE_BEHAVIOUR = ("add", "_add_keyed", "_add_values", "_sample", "buffered_bytes", "early_writes", "fault")


def _modules() -> Iterator[Tuple[str, ast.Module]]:
    for path in sorted((ROOT / "stream_edge").rglob("*.py")):
        yield path.relative_to(ROOT).as_posix(), ast.parse(path.read_text(), filename=str(path))


def _is_self(node: ast.AST) -> bool:
    return isinstance(node, ast.Name) and node.id in ("self", "cls")


def _buffer_uses(tree: ast.Module) -> Iterator[Tuple[int, str]]:
    """Buffers built (``BufferPool(...)``, ``PartitionBuffer(...)``) and a buffer's fields written
    (assigned, deleted, appended to) on anything but ``self``."""
    fields = set(PartitionBuffer.__slots__)
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            func = node.func
            name = func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else ""
            if name in ("BufferPool", "PartitionBuffer"):
                yield node.lineno, f"{name}(...)"
            elif (isinstance(func, ast.Attribute) and func.attr in ("append", "extend", "insert")
                  and isinstance(func.value, ast.Attribute) and func.value.attr in fields
                  and not _is_self(func.value.value) and func.value.attr in ("values", "offsets", "keys",
                                                                              "timestamps", "chunks")):
                yield node.lineno, f".{func.value.attr}.{func.attr}(...)"
        elif (isinstance(node, ast.Attribute) and isinstance(node.ctx, (ast.Store, ast.Del))
              and node.attr in fields and not _is_self(node.value)):
            yield node.lineno, f".{node.attr} written"


def test_one_buffer_implementation():
    """Only the buffer module and the table sinks' base build buffers or write their fields."""
    found = [f"{module}:{line}: {what}" for module, tree in _modules() if module not in (BUFFER, BASE)
             for line, what in _buffer_uses(tree)]
    assert found == [], "buffers handled outside arrow_buffer.py / buffered_table.py:\n" + "\n".join(found)


@pytest.mark.parametrize("sink", [DataLakeSink, QuixTSDataLakeSink, IcebergSink])
def test_the_table_sinks_keep_only_what_differs(sink):
    assert issubclass(sink, BufferedTableSink)
    for cls in sink.__mro__[:sink.__mro__.index(BufferedTableSink)]:
        own = sorted(set(vars(cls)) & set(BASE_BEHAVIOUR))
        assert own == [], f"{cls.__name__} defines {own}: the base's behaviour, copied"


def test_one_record_type_checker_and_one_fault_classifier():
    """The table sinks' modules neither check column types nor classify faults themselves: the
    base's ColumnTypes and write_fault_kind do, for every table sink."""
    classifiers = {"classify", "error_kind"}  # storage_faults', the error model's: read by write_fault_kind
    found = []
    for module, tree in _modules():
        if module not in TABLE_SINK_MODULES:
            continue
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and {a.name for a in node.names} & classifiers:
                found.append(f"{module}:{node.lineno}: imports {sorted({a.name for a in node.names} & classifiers)}")
            elif isinstance(node, ast.Attribute) and node.attr in ("unify_schemas", "check") \
                    and not _is_self(node.value):  # merging column types, a record check: ColumnTypes'
                found.append(f"{module}:{node.lineno}: .{node.attr}")
    assert found == [], "\n".join(found)


def _error(name: str, module: str) -> Exception:
    """An exception of pyiceberg's or botocore's class name, as the error model reads them."""
    return type(name, (Exception,), {"__module__": module})("refused")


@pytest.mark.parametrize("exc, kind", [
    (ConnectionRefusedError(111, "Connection refused"), OUTAGE),
    (TimeoutError("timed out"), OUTAGE),
    (OSError("AWS Error SLOW_DOWN during PutObject operation: Please reduce your request rate"), OUTAGE),
    (OSError(28, "No space left on device"), OUTAGE),
    (_error("ServiceUnavailableError", "pyiceberg.exceptions"), OUTAGE),
    (_error("TooManyRequestsError", "pyiceberg.exceptions"), OUTAGE),
    (_error("CommitFailedException", "pyiceberg.exceptions"), OUTAGE),
    (_error("HTTPClientError", "botocore.exceptions"), OUTAGE),
    (OSError(36, "File name too long"), PERMANENT),
    (OSError("AWS Error ACCESS_DENIED during PutObject operation: Access Denied"), PERMANENT),
    (_error("NoCredentialsError", "botocore.exceptions"), PERMANENT),
    (_error("BadRequestError", "pyiceberg.exceptions"), PERMANENT),
    (ValueError("a bug"), PERMANENT),
])
def test_the_fault_classifier_reads_the_error_model(exc, kind):
    assert write_fault_kind(exc) == kind
