"""``StartupFreezer`` (``stream_edge.processing.gc_freeze``): start-up objects out of the cyclic
collector's scans, again after lazy imports, and given back at the end of a run."""

from __future__ import annotations

import gc
import sys
import types
import uuid

import pytest

from stream_edge.processing.gc_freeze import StartupFreezer


@pytest.fixture(autouse=True)
def unfrozen():
    gc.unfreeze()
    yield
    gc.unfreeze()


def test_freeze_moves_what_is_alive_out_of_the_collectors_scans_and_unfreeze_gives_it_back():
    freezer = StartupFreezer()
    freezer.freeze()
    assert gc.get_freeze_count() > 0
    StartupFreezer.unfreeze()
    assert gc.get_freeze_count() == 0


def collected_ids() -> set:
    """The objects the cyclic collector scans (generations 0-2; frozen ones are in none)."""
    return {id(o) for generation in range(3) for o in gc.get_objects(generation)}


def test_freezes_again_only_after_modules_were_imported():
    freezer = StartupFreezer()
    freezer.freeze()
    assert not freezer.freeze_if_imported()
    name = f"lazily_imported_{uuid.uuid4().hex}"
    sys.modules[name] = types.ModuleType(name)  # what an import leaves behind
    try:
        lazy = [object() for _ in range(1000)]  # a lazily imported library's long-lived objects
        assert id(lazy) in collected_ids()
        assert freezer.freeze_if_imported()
        # out of the collector's generations, into the permanent one (the freeze count alone can
        # stay level: frozen objects other code releases leave it as the new ones enter)
        assert id(lazy) not in collected_ids()
        assert not freezer.freeze_if_imported()
        assert freezer.freezes == 2
        del lazy
    finally:
        del sys.modules[name]


def test_garbage_cycles_are_collected_before_freezing():
    class Node:
        pass

    a, b = Node(), Node()
    a.other, b.other = b, a
    del a, b  # a cycle: only the collector frees it
    StartupFreezer().freeze()
    assert not any(isinstance(o, Node) for o in gc.get_objects())
