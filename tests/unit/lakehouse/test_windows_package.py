"""The windows package's shape: imports go one way (definition -> native -> proven -> plan ->
committer -> incremental planner -> job), no module imports one below it, and nothing reaches
into the JVM (it runs over Spark Connect)."""

from __future__ import annotations

import ast
import re
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[3] / "lakehouse" / "windows"
#: each module may import only modules of a lower layer
LAYERS = {"definition": 0, "strategy": 0, "engine": 1, "native": 1, "proven": 2, "plan": 3, "history": 4,
          "state": 5, "tail": 5, "commit": 6, "incremental": 7, "job": 8, "__init__": 9}


def imported_siblings(path: Path) -> set[str]:
    tree = ast.parse(path.read_text())
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("lakehouse.windows."):
            found.add(node.module.rsplit(".", 1)[1])
        if isinstance(node, ast.ImportFrom) and node.module == "lakehouse.windows":
            found.update(alias.name for alias in node.names)
    return found


def test_every_module_has_a_layer():
    assert {p.stem for p in PACKAGE.glob("*.py")} == set(LAYERS)


def test_imports_go_one_way():
    wrong = [f"{path.stem} imports {name}" for path in PACKAGE.glob("*.py") for name in imported_siblings(path)
             if name in LAYERS and LAYERS[name] >= LAYERS[path.stem]]
    assert not wrong, wrong


def test_nothing_reaches_into_the_jvm():
    pattern = re.compile(r"\._(jvm|jdf|jsparkSession|jsc)\b|java_table|py4j")
    hits = [f"{path.name}:{number}" for path in PACKAGE.glob("*.py")
            for number, line in enumerate(path.read_text().splitlines(), 1) if pattern.search(line)]
    assert not hits, hits
