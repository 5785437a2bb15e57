"""Modules meet at public seams: none reads or writes another module's private names, and the
edge's modules import one another without circles (issue 52, item 4).

An AST scan of ``stream_edge/``, ``lakehouse/`` and ``pipelines/``. A *private name* is one with a
leading underscore (dunders excepted) that a module of these packages defines: a function, class,
module-level name, ``self.`` attribute or ``__slots__`` entry. A module may use its own private
names on any object (another instance of its class, an object it builds); it may not use, through
``obj._name`` (``self``/``cls`` excepted), ``getattr``/``setattr`` or ``from m import _name``, one
that only other modules define. The few exceptions are listed below with their reason. Then the
behaviour the seams promise: windows and joins need only the dataframe's public methods.
"""

from __future__ import annotations

import ast
import functools
from pathlib import Path
from typing import Dict, Iterator, List, Set, Tuple

import pytest

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("stream_edge", "lakehouse", "pipelines")

#: (module, private name) -> why it is used across modules anyway (none today: add a public seam)
ALLOWED_PRIVATE: Dict[Tuple[str, str], str] = {}

#: import circles among stream_edge's modules still allowed -> why (none today); a circle is allowed
#: when each of its modules is one of the key's modules or inside one of its packages
ALLOWED_CYCLES: Dict[Tuple[str, ...], str] = {}


@functools.lru_cache(maxsize=1)
def _sources() -> Tuple[Tuple[str, ast.Module], ...]:
    """Every module of the packages, parsed once for all the scans."""
    return tuple((path.relative_to(ROOT).as_posix(), ast.parse(path.read_text(), filename=str(path)))
                 for package in PACKAGES for path in sorted((ROOT / package).rglob("*.py")))


# A named tuple's public API starts with an underscore so as not to clash with its fields.
NAMED_TUPLE_API = {"_replace", "_asdict", "_fields", "_make", "_field_defaults"}


def _is_private(name: str) -> bool:
    return name.startswith("_") and not name.startswith("__") and name not in NAMED_TUPLE_API


def _defined_names(tree: ast.Module) -> Set[str]:
    """The names a module defines: functions, classes, assigned names, ``self.``/``cls.``
    attributes and ``__slots__`` entries."""
    names: Set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            names.add(node.id)
        elif (isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store) and _is_self(node.value)):
            names.add(node.attr)
        elif isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "__slots__"
                                                 for t in node.targets):
            names |= {c.value for c in ast.walk(node.value)
                      if isinstance(c, ast.Constant) and isinstance(c.value, str)}
    return names


def _is_self(node: ast.AST) -> bool:
    return isinstance(node, ast.Name) and node.id in {"self", "cls"}


def _private_uses(tree: ast.Module) -> Iterator[Tuple[int, str, str]]:
    """``(line, name, text)`` of each use of a private name on something other than self/cls."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and _is_private(node.attr) and not _is_self(node.value):
            yield node.lineno, node.attr, ast.unparse(node)
        elif isinstance(node, ast.ImportFrom):
            for alias in node.names:
                if _is_private(alias.name):
                    yield node.lineno, alias.name, f"from {'.' * node.level}{node.module or ''} import {alias.name}"
        elif (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
              and node.func.id in {"getattr", "setattr", "hasattr", "delattr"} and len(node.args) >= 2
              and isinstance(node.args[1], ast.Constant) and isinstance(node.args[1].value, str)
              and _is_private(node.args[1].value) and not _is_self(node.args[0])):
            yield node.lineno, node.args[1].value, ast.unparse(node)


def _cross_module_uses(sources) -> List[Tuple[str, int, str, str]]:
    """``(module, line, name, text)`` where a module uses a private name only other modules define."""
    sources = list(sources)
    defined = {name: _defined_names(tree) for name, tree in sources}
    everywhere: Set[str] = set().union(*defined.values()) if defined else set()
    return [(name, line, private, text) for name, tree in sources for line, private, text in _private_uses(tree)
            if private not in defined[name] and private in everywhere]


def test_no_module_uses_another_modules_private_names():
    found = _cross_module_uses(_sources())
    offenders = [f"{name}:{line} {text}" for name, line, private, text in found
                 if (name, private) not in ALLOWED_PRIVATE]
    assert offenders == [], f"private names used across modules (add a public seam): {offenders}"
    stale = set(ALLOWED_PRIVATE) - {(name, private) for name, _, private, _ in found}
    assert not stale, f"exceptions no longer needed, remove them from ALLOWED_PRIVATE: {sorted(stale)}"


def test_the_private_name_scan_finds_each_kind_of_use():
    modules = {
        "owner.py": "class Box:\n    __slots__ = ('_items',)\n    def __init__(self):\n        self._items = []\n"
                    "    def _grow(self):\n        pass\n    def merge(self, other):\n        return other._items\n"
                    "def _helper():\n    pass\n",
        "reads.py": "def peek(box):\n    return box._items\n",
        "writes.py": "def poke(box):\n    box._items = None\n",
        "calls.py": "def grow(box):\n    box._grow()\n",
        "imports.py": "from owner import _helper\n",
        "getattr.py": "def peek(box):\n    return getattr(box, '_items')\n",
        "own.py": "class Other:\n    def __init__(self):\n        self._items = 1\n"
                  "def copy(a, b):\n    b._items = a._items\n",  # its own name on another object: fine
        "external.py": "import os\ndef stop():\n    os._exit(1)\n",  # no module here defines _exit
    }
    found = _cross_module_uses((name, ast.parse(text)) for name, text in modules.items())
    assert sorted({name for name, *_ in found}) == ["calls.py", "getattr.py", "imports.py", "reads.py", "writes.py"]


# -- import circles -------------------------------------------------------------------------------
def _module_name(path: str) -> str:
    parts = path[:-3].split("/")
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _imports(path: str, tree: ast.Module, known: Set[str]) -> Set[str]:
    """The known modules a module imports, anywhere in it (``TYPE_CHECKING`` blocks and function
    bodies included: a circle of type-only or lazy imports is still a circle in the design)."""
    name = _module_name(path)
    package = name if path.endswith("__init__.py") else name.rpartition(".")[0]
    found: Set[str] = set()
    for node in ast.walk(tree):
        candidates: List[str] = []
        if isinstance(node, ast.Import):
            candidates = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")
                parts = parts[:len(parts) - (node.level - 1)]
                base = ".".join(parts + ([node.module] if node.module else []))
            # ``from p import m`` of a submodule depends on m; of a name, on p itself
            candidates = [f"{base}.{alias.name}" if f"{base}.{alias.name}" in known else base
                          for alias in node.names]
        for candidate in candidates:
            while candidate and candidate not in known:
                candidate = candidate.rpartition(".")[0]
            if candidate and candidate != name:
                found.add(candidate)
    return found


def _cycles(graph: Dict[str, Set[str]]) -> List[Tuple[str, ...]]:
    """The strongly connected components of more than one module (Tarjan, iterative)."""
    index: Dict[str, int] = {}
    low: Dict[str, int] = {}
    stack: List[str] = []
    on_stack: Set[str] = set()
    components: List[Tuple[str, ...]] = []
    for start in sorted(graph):
        if start in index:
            continue
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, edges = work[-1]
            for target in edges:
                if target not in index:
                    index[target] = low[target] = len(index)
                    stack.append(target)
                    on_stack.add(target)
                    work.append((target, iter(sorted(graph[target]))))
                    break
                if target in on_stack:
                    low[node] = min(low[node], index[target])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    component = []
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        component.append(member)
                        if member == node:
                            break
                    if len(component) > 1:
                        components.append(tuple(sorted(component)))
    return components


def _edge_graph() -> Dict[str, Set[str]]:
    edge = [(path, tree) for path, tree in _sources() if path.startswith("stream_edge/")]
    known = {_module_name(path) for path, _ in edge}
    return {_module_name(path): _imports(path, tree, known) for path, tree in edge}


def _allowed_by(cycle: Tuple[str, ...], allowed: Tuple[str, ...]) -> bool:
    return all(any(module == name or module.startswith(name + ".") for name in allowed) for module in cycle)


def test_the_edge_has_no_import_circles():
    found = _cycles(_edge_graph())
    cycles = [cycle for cycle in found if not any(_allowed_by(cycle, allowed) for allowed in ALLOWED_CYCLES)]
    assert cycles == [], f"modules importing each other (type the seam with a Protocol instead): {cycles}"
    stale = [allowed for allowed in ALLOWED_CYCLES if not any(_allowed_by(cycle, allowed) for cycle in found)]
    assert not stale, f"circles gone, remove them from ALLOWED_CYCLES: {stale}"


def test_the_cycle_finder_finds_circles_of_any_length():
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}, "e": {"f"}, "f": {"e"}, "g": set()}
    assert sorted(_cycles(graph)) == [("a", "b", "c"), ("e", "f")]


# -- what the seams promise --------------------------------------------------------------------------
@pytest.fixture()
def dataframe(tmp_path):
    """A StreamingDataFrame of topic ``in`` with a memory state manager, partition 0 assigned."""
    from stream_edge.dataframe import DataframeRegistry, StreamingDataFrame
    from stream_edge.models import Topic
    from stream_edge.processing.context import ProcessingContext
    from stream_edge.state import StateStoreManager

    manager = StateStoreManager(group_id="g", state_dir=tmp_path, use_changelog_topics=False,
                                default_store_type="memory")
    ctx = ProcessingContext(state_manager_factory=lambda: manager)
    registry = DataframeRegistry()
    sdf = StreamingDataFrame(Topic("in", value_deserializer="json"), topic_manager=None, registry=registry,
                             processing_context=ctx)
    registry.register_root(sdf)
    return sdf, manager


def test_an_operator_built_from_the_public_seams_keeps_state_per_partition(dataframe):
    """What a window does, through the public seams only: register a store, read the current
    transaction per message, add an expanding operation."""
    sdf, manager = dataframe
    ref = sdf.register_store(store_name="counts")
    transaction = sdf.current_transaction(ref)

    def count(value, key, timestamp, headers):
        state = transaction().as_state(prefix=key)
        seen = state.get("n", 0) + 1
        state.set("n", seen)
        return [(seen, key, timestamp, headers)] * (2 if seen == 2 else 1)

    counted = sdf.add_expanding_op(count)
    manager.on_partition_assign("in", 0, -1001)
    assert [r[0] for r in counted.test({}, key=b"a")] == [1]
    assert [r[0] for r in counted.test({}, key=b"a")] == [2, 2]
    assert [r[0] for r in counted.test({}, key=b"b")] == [1]
    assert ref.stream_id == "in" and "counts" in manager.stores["in"]


def test_dataframe_clone_names_the_stream_as_quix_streams_does(dataframe):
    from stream_edge.models import Topic

    sdf, _ = dataframe
    other, extra = Topic("b-topic", value_deserializer="json"), Topic("a-topic", value_deserializer="json")
    merged = sdf.__dataframe_clone__(*sdf.topics, other, extra, other)
    assert [t.name for t in merged.topics] == ["in", "b-topic", "a-topic"]
    assert merged.stream_id == "a-topic--b-topic--in"
    branch = sdf.__dataframe_clone__(stream=sdf.stream, stream_id="in--x")
    assert branch.topics == sdf.topics and branch.stream_id == "in--x" and branch.stream is sdf.stream
    with pytest.raises(ValueError, match="both"):
        sdf.__dataframe_clone__(other, stream_id="x")


def test_the_checkpoints_store_lookup_is_keyed_by_stream_as_in_quix_streams(dataframe):
    from stream_edge.checkpointing import Checkpoint

    sdf, manager = dataframe
    ref = sdf.register_store()
    manager.on_partition_assign("in", 0, -1001)
    checkpoint = Checkpoint(commit_interval=60, commit_every=0, producer=None, consumer=None,
                            state_manager=manager)
    assert checkpoint.get_store_transaction(stream_id=sdf.stream_id, partition=0) is ref.transaction(0)
