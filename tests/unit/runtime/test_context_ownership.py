"""The processing context does not change under the code (issue 44, acceptance).

An AST scan of ``stream_edge/``: the ProcessingContext's attributes are assigned only in its own
module, the MessageCursor's only by its module and the per-message loop, and no module global is
reassigned at run time (no ``global`` statement, no ``module.X = ...``, no ``globals()[...] = ...``
except the PEP 562 lazy-import cache of a package's ``__getattr__``). Then the behaviour the scan
protects: ``message_context()`` reads the running application's cursor, per thread.
"""

from __future__ import annotations

import ast
import dataclasses
import functools
import importlib
import threading
import types
from pathlib import Path
from typing import Dict, Iterator, List, Optional, Set, Tuple

import pytest
from confluent_kafka import Message

from stream_edge.context import MessageContextNotSetError, message_context, set_message_context
from stream_edge.models import MessageContext
from stream_edge.processing.context import ProcessingContext
from stream_edge.processing.cursor import MessageCursor, activate, deactivate

PACKAGE = Path(__file__).resolve().parents[3] / "stream_edge"
CONTEXT_OWNER = "processing/context.py"
CURSOR_WRITERS = {"processing/cursor.py", "processing/loop.py"}


@functools.lru_cache(maxsize=1)
def _sources() -> Tuple[Tuple[str, ast.Module], ...]:
    """Every module of the package, parsed once for all the scans."""
    return tuple((path.relative_to(PACKAGE).as_posix(), ast.parse(path.read_text(), filename=str(path)))
                 for path in sorted(PACKAGE.rglob("*.py")))


def _context_attributes() -> Set[str]:
    """The names a ProcessingContext lets one assign: its fields and properties with a setter (a
    read-only property such as ``topic`` or ``current_message`` refuses assignment by itself)."""
    names = {f.name for f in dataclasses.fields(ProcessingContext)}
    names |= {n for n, v in vars(ProcessingContext).items() if isinstance(v, property) and v.fset is not None}
    return names


def _assigned_attributes(tree: ast.AST) -> Iterator[Tuple[ast.Attribute, int]]:
    """Attribute targets of assignments (``a.b =``, ``a.b +=``, ``a.b: T =``, ``del a.b``, and
    ``setattr(a, "b", ...)`` as a synthetic Attribute)."""
    for node in ast.walk(tree):
        targets: List[ast.AST] = []
        if isinstance(node, ast.Assign):
            targets = list(node.targets)
        elif isinstance(node, (ast.AugAssign, ast.AnnAssign)):
            targets = [node.target]
        elif isinstance(node, ast.Delete):
            targets = list(node.targets)
        elif (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "setattr"
              and len(node.args) >= 2 and isinstance(node.args[1], ast.Constant)
              and isinstance(node.args[1].value, str)):
            targets = [ast.Attribute(value=node.args[0], attr=node.args[1].value, ctx=ast.Store())]
        while targets:
            target = targets.pop()
            if isinstance(target, (ast.Tuple, ast.List)):
                targets.extend(target.elts)
            elif isinstance(target, ast.Starred):
                targets.append(target.value)
            elif isinstance(target, ast.Attribute):
                yield target, node.lineno


def _is_self(node: ast.AST) -> bool:
    return isinstance(node, ast.Name) and node.id in {"self", "cls"}


def test_no_processing_context_attribute_is_assigned_outside_its_module():
    attributes = _context_attributes()
    offenders = [f"{name}:{line} .{target.attr}" for name, tree in _sources() if name != CONTEXT_OWNER
                 for target, line in _assigned_attributes(tree)
                 if target.attr in attributes and not _is_self(target.value)]
    assert offenders == [], f"ProcessingContext attributes assigned outside {CONTEXT_OWNER}: {offenders}"


def test_the_cursor_is_moved_only_by_the_loop_and_its_own_module():
    slots = set(MessageCursor.__slots__)
    offenders = [f"{name}:{line} .{target.attr}" for name, tree in _sources() if name not in CURSOR_WRITERS
                 for target, line in _assigned_attributes(tree)
                 if target.attr in slots and not _is_self(target.value)]
    assert offenders == [], f"MessageCursor attributes assigned outside {sorted(CURSOR_WRITERS)}: {offenders}"


def _module_names(tree: ast.Module) -> Set[str]:
    """Names bound to modules in this file by ``import a.b [as c]`` (``from p import m`` is
    resolved by :func:`_from_imported_module`, only for the names assigned through)."""
    found: Set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found |= {alias.asname or alias.name.split(".")[0] for alias in node.names}
    return found


def _from_imports(tree: ast.Module, file: str) -> Dict[str, Tuple[str, str]]:
    """``{local name: (absolute package, imported name)}`` of this file's ``from p import m``."""
    package = "stream_edge." + file[:-3].replace("/", ".")
    found: Dict[str, Tuple[str, str]] = {}
    for node in ast.walk(tree):
        if not isinstance(node, ast.ImportFrom):
            continue
        base = node.module or ""
        if node.level:
            parts = package.split(".")
            parts = parts[:len(parts) - node.level + (1 if file.endswith("__init__.py") else 0)]
            base = ".".join(parts + ([node.module] if node.module else []))
        for alias in node.names:
            found[alias.asname or alias.name] = (base, alias.name)
    return found


def _is_module(origin: Optional[Tuple[str, str]]) -> bool:
    """Whether ``from origin[0] import origin[1]`` binds a module (imported only when asked)."""
    if origin is None:
        return False
    try:
        value = getattr(importlib.import_module(origin[0]), origin[1], None)
    except ImportError:
        return False
    return isinstance(value, types.ModuleType)


def _global_writes(sources) -> List[str]:
    """Where ``sources`` ((file, tree) pairs) reassign a module global at run time."""
    offenders: List[str] = []
    for name, tree in sources:
        modules, from_imports = _module_names(tree), _from_imports(tree, name)
        for node in ast.walk(tree):
            if isinstance(node, ast.Global):
                offenders.append(f"{name}:{node.lineno} global {', '.join(node.names)}")
        for target, line in _assigned_attributes(tree):
            base = target.value
            if isinstance(base, ast.Name) and (base.id in modules or base.id in {"sys", "builtins"}
                                               or _is_module(from_imports.get(base.id))):
                offenders.append(f"{name}:{line} {base.id}.{target.attr} = ...")
        # PEP 562: a package's module-level __getattr__ may cache what it lazily imported
        lazy_caches = {id(n) for f in tree.body if isinstance(f, ast.FunctionDef) and f.name == "__getattr__"
                       for n in ast.walk(f)}
        for node in ast.walk(tree):
            if not isinstance(node, (ast.Subscript, ast.Attribute)) or id(node) in lazy_caches:
                continue
            call = node.value
            if not (isinstance(call, ast.Call) and isinstance(call.func, ast.Name) and call.func.id == "globals"):
                continue
            if isinstance(node, ast.Attribute) or not isinstance(node.ctx, ast.Load):  # globals().update / [..] =
                offenders.append(f"{name}:{node.lineno} globals() written")
    return offenders


def test_no_module_global_is_reassigned_at_run_time():
    offenders = _global_writes(_sources())
    assert offenders == [], f"module globals reassigned at run time: {offenders}"


def test_the_scan_finds_each_kind_of_global_write():
    bad = {
        "a.py": "counter = 0\ndef bump():\n    global counter\n    counter += 1\n",
        "b.py": "import logging\ndef mute():\n    logging.root = None\n",
        "c.py": "from stream_edge import context\ndef swap(x):\n    context.MessageContext = x\n",
        "d.py": "def put(k, v):\n    globals()[k] = v\n",
        "e.py": "def put(d):\n    globals().update(d)\n",
        "ok.py": "def __getattr__(name):\n    value = 1\n    globals()[name] = value\n    return value\n"
                 "def read(k):\n    return globals()[k]\n",
    }
    found = _global_writes((name, ast.parse(text)) for name, text in bad.items())
    assert [f.split(":")[0] for f in found] == ["a.py", "b.py", "c.py", "d.py", "e.py"]


# -- what the scan protects ----------------------------------------------------------------------
def _message(topic: str, partition: int, offset: int) -> Message:
    return Message(topic=topic, partition=partition, offset=offset, key=b"k", value=b"12345",
                   timestamp=(1, 1000), headers=None)


def test_message_context_reads_the_active_cursor_and_only_while_it_is_active():
    cursor = MessageCursor()
    cursor.message = _message("t", 3, 7)  # as the loop does
    with pytest.raises(MessageContextNotSetError):
        message_context()
    token = activate(cursor)
    try:
        assert message_context() == MessageContext("t", 3, 7, 5, None)
        replacement = MessageContext("other", 0, 1, 0, None)
        set_message_context(replacement)
        assert message_context() is replacement
        cursor.message = _message("t", 3, 8)  # the loop moved on: the replacement was for the last one
        assert message_context().offset == 8
    finally:
        deactivate(token)
    with pytest.raises(MessageContextNotSetError):
        message_context()


def test_two_applications_in_two_threads_each_see_their_own_message():
    seen = {}
    ready = threading.Barrier(2)

    def run(name: str, partition: int) -> None:
        ctx = ProcessingContext()
        token = activate(ctx.cursor)
        ctx.cursor.message = _message(name, partition, partition * 10)
        ready.wait(timeout=10)  # both cursors set before either reads
        seen[name] = (message_context().topic, message_context().partition)
        deactivate(token)

    threads = [threading.Thread(target=run, args=(n, p)) for n, p in (("a", 1), ("b", 2))]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=10)
    assert seen == {"a": ("a", 1), "b": ("b", 2)}


def test_the_context_keeps_one_cursor_and_asks_the_application_for_its_runner():
    class Driver:
        def __init__(self) -> None:
            self.calls: list = []

        def commit_checkpoint(self, force: bool = False) -> None:
            self.calls.append(("commit", force))

        def start_checkpoint(self) -> None:
            self.calls.append(("start",))

        def store_offset(self, topic: str, partition: int, offset: int) -> None:
            self.calls.append(("store", topic, partition, offset))

    running: list = []
    ctx = ProcessingContext(runner_lookup=lambda: running[0] if running else None)
    cursor = ctx.cursor
    with pytest.raises(RuntimeError, match="running Application"):
        ctx.commit_checkpoint()
    driver = Driver()
    running.append(driver)
    ctx.store_offset("t", 0, 5)
    ctx.commit_checkpoint(force=True)
    ctx.init_checkpoint()
    assert driver.calls == [("store", "t", 0, 5), ("commit", True), ("start",)]
    with cursor.visiting(_message("t", 1, 2)):
        assert (ctx.topic, ctx.partition, ctx.offset) == ("t", 1, 2) and ctx.current_message is cursor.message
    assert ctx.cursor is cursor and cursor.message is None
    with pytest.raises(AttributeError):
        ctx.current_message = None  # type: ignore[misc]  # read-only: the loop moves the cursor


# The seams issue 44 named, where one module read another's private attributes.
NO_PRIVATE_READS = ("dataframe/one_record.py", "state/manager.py", "service/cli.py", "processing/runner.py",
                    "processing/context.py", "processing/cursor.py", "context.py", "app.py")


def test_the_runtime_seams_read_no_private_attribute_of_another_object():
    sources = dict(_sources())
    offenders = [f"{name}:{node.lineno} {ast.unparse(node)}" for name in NO_PRIVATE_READS
                 for node in ast.walk(sources[name])
                 if isinstance(node, ast.Attribute) and node.attr.startswith("_") and not node.attr.startswith("__")
                 and not _is_self(node.value)]
    assert offenders == [], f"private attributes read across objects: {offenders}"
