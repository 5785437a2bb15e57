"""The seam between the edge and the lakehouse: imports go one way, and the lake's protocols are
written once, in ``stream_edge/lake``.

An AST scan of ``stream_edge/`` and ``lakehouse/`` (every import statement, inside functions and
``TYPE_CHECKING`` blocks too, and ``importlib.import_module("...")`` calls):

- the edge imports nothing of ``lakehouse`` or ``pipelines``;
- the lakehouse imports from the edge only ``stream_edge.lake`` and the window rules
  (``stream_edge.dataframe.windows``), the two layers the Spark jobs share with the edge;
- ``stream_edge.lake`` is a layer of its own: no other part of the edge, no Kafka client, no Spark;
- the registration protocol, the conditional PUT, the time partition columns and the S3
  environment are each in one module.
"""

from __future__ import annotations

import ast
import functools
from pathlib import Path
from typing import Iterator, Tuple

REPO = Path(__file__).resolve().parents[3]
#: what the lakehouse may import from the edge (a module or anything below it)
LAKEHOUSE_MAY_IMPORT = ("stream_edge.lake", "stream_edge.dataframe.windows")
#: what the lake layer may import besides itself (lazily, where it needs them)
LAKE_FORBIDDEN = ("confluent_kafka", "pyspark", "py4j", "rocksdict", "lakehouse", "pipelines")
ENDPOINT_VARIABLES = {"AWS_ENDPOINT_URL_S3", "AWS_ENDPOINT_URL", "S3_ENDPOINT"}


@functools.lru_cache(maxsize=None)
def _parsed(package: str) -> Tuple[Tuple[str, ast.Module], ...]:
    root = REPO / package
    return tuple((path.relative_to(REPO).as_posix(), ast.parse(path.read_text(), filename=str(path)))
                 for path in sorted(root.rglob("*.py")))


def _module_name(path: str) -> str:
    name = path[:-3].replace("/", ".")
    return name[: -len(".__init__")] if name.endswith(".__init__") else name


def _imports(path: str, tree: ast.Module) -> Iterator[Tuple[str, int]]:
    """Every module ``path`` imports (absolute names; relative imports resolved), with its line."""
    package = _module_name(path) if path.endswith("__init__.py") else _module_name(path).rpartition(".")[0]
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield alias.name, node.lineno
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")
                base = ".".join(parts[: len(parts) - node.level + 1] + ([base] if base else []))
            for alias in node.names:  # ``from a import b`` may import the module a.b
                yield (f"{base}.{alias.name}" if base else alias.name), node.lineno
        elif (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
              and node.func.attr == "import_module" and node.args and isinstance(node.args[0], ast.Constant)
              and isinstance(node.args[0].value, str)):
            yield node.args[0].value, node.lineno


def _under(name: str, prefixes: Tuple[str, ...]) -> bool:
    return any(name == p or name.startswith(p + ".") for p in prefixes)


def test_the_edge_imports_nothing_of_the_lakehouse():
    wrong = [f"{path}:{line} imports {name}" for path, tree in _parsed("stream_edge")
             for name, line in _imports(path, tree) if _under(name, ("lakehouse", "pipelines"))]
    assert not wrong, wrong


def test_the_lakehouse_imports_only_the_lake_and_the_window_rules_from_the_edge():
    wrong = [f"{path}:{line} imports {name}" for path, tree in _parsed("lakehouse")
             for name, line in _imports(path, tree)
             if _under(name, ("stream_edge",)) and not _under(name, LAKEHOUSE_MAY_IMPORT)]
    assert not wrong, wrong


def test_the_lake_is_a_layer_of_its_own():
    wrong = [f"{path}:{line} imports {name}" for path, tree in _parsed("stream_edge")
             if path.startswith("stream_edge/lake/")
             for name, line in _imports(path, tree)
             if (_under(name, ("stream_edge",)) and not _under(name, ("stream_edge.lake",)))
             or _under(name, LAKE_FORBIDDEN)]
    assert not wrong, wrong


def _sources() -> Iterator[Tuple[str, ast.Module]]:
    yield from _parsed("stream_edge")
    yield from _parsed("lakehouse")


def _docstrings(tree: ast.Module) -> set:
    return {id(node.value) for node in ast.walk(tree)
            if isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant)}


def test_each_lake_protocol_is_written_once():
    """The conditional PUT, the claim of a registration batch and the time partition columns each
    have one home; everyone else calls it."""
    homes = {
        "IfNoneMatch": ("stream_edge/lake/exclusive_create.py",),  # the keyword of boto3's conditional PUT
        "write_intent": ("stream_edge/lake/registrar.py", "stream_edge/lake/registration_ledger.py"),
        "TIME_PARTITION_COLUMNS =": ("stream_edge/lake/partitioning.py",),
    }
    found = {key: set() for key in homes}
    for path, tree in _sources():
        for node in ast.walk(tree):
            if isinstance(node, ast.keyword) and node.arg == "IfNoneMatch":
                found["IfNoneMatch"].add(path)
            if isinstance(node, ast.Attribute) and node.attr == "write_intent" and isinstance(node.ctx, ast.Load):
                found["write_intent"].add(path)
            if isinstance(node, ast.FunctionDef) and node.name == "write_intent":
                found["write_intent"].add(path)
            if isinstance(node, (ast.Assign, ast.AnnAssign)):
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                if any(isinstance(t, ast.Name) and t.id == "TIME_PARTITION_COLUMNS" for t in targets):
                    found["TIME_PARTITION_COLUMNS ="].add(path)
    assert {k: sorted(v) for k, v in found.items()} == {k: sorted(v) for k, v in homes.items()}


def test_the_s3_environment_is_read_in_one_place():
    """Only ``stream_edge/lake/s3_settings.py`` reads the S3 endpoint variables; the Quix-compatible
    community connectors name ``AWS_ENDPOINT_URL_S3`` as a signature default (as Quix does) and hand
    it to the same settings object as an explicit argument."""
    allowed = ("stream_edge/lake/s3_settings.py", "stream_edge/sinks/community/", "stream_edge/sources/community/")
    wrong = []
    for path, tree in _sources():
        if path.startswith(allowed):
            continue
        docstrings = _docstrings(tree)
        wrong += [f"{path}:{node.lineno} {node.value}" for node in ast.walk(tree)
                  if isinstance(node, ast.Constant) and node.value in ENDPOINT_VARIABLES
                  and id(node) not in docstrings]
    assert not wrong, wrong
