"""Compatibility tests: the same Quix Streams 3.28 program on stream_edge and on the real package.

``run_both(source)`` runs a program written against ``quixstreams`` twice, each in a process of its
own (forked from an interpreter that imported the package: ``fork_server.py``): once
with the real quixstreams==3.28.1 (its own venv, see ``bench/quix_venv.py``), once with every
``quixstreams`` replaced by ``stream_edge`` in the project's venv. It returns both standard outputs,
which a test compares byte for byte. A program prints what it wants compared (e.g. ``repr`` of
results, or JSON).
"""

from __future__ import annotations

import atexit
import subprocess
import sys
from pathlib import Path
from typing import Callable, Dict, List, NamedTuple

import pytest
from tests.compat.fork_server import ForkServer

ROOT = Path(__file__).resolve().parents[2]


class BothOutputs(NamedTuple):
    edge: str
    quix: str


# One fork server per interpreter and package on each test worker (tests/compat/fork_server.py):
# a program runs in a fresh process forked from an interpreter that has imported the package.
_SERVERS: Dict[tuple, ForkServer] = {}


def _server(python: str, package: str, env: dict) -> ForkServer:
    key = (python, package, env.get("PYTHONPATH"))
    server = _SERVERS.get(key)
    if server is None or not server.alive():
        server = _SERVERS[key] = ForkServer(python, [package], env=env, flags=("-W", "ignore"))
    return server


@atexit.register
def _close_servers() -> None:
    for server in _SERVERS.values():
        server.close()


def _run(python: str, package: str, source: str, workdir: Path, name: str, timeout: float, env: dict) -> str:
    """Run ``source`` as ``python -W ignore <name>.py`` would, in ``workdir``; its standard output."""
    script = workdir / f"{name}.py"
    script.write_text(source)
    code, out, err = _server(python, package, env).run(script, cwd=workdir, env=env, timeout=timeout)
    if code != 0:
        raise AssertionError(f"{name} failed (exit {code}):\n{err[-4000:]}")
    return out


@pytest.fixture(scope="session")
def quix_python() -> str:
    """The python of the quixstreams==3.28.1 venv (created on first use)."""
    sys.path.insert(0, str(ROOT / "bench"))
    try:
        from quix_venv import quix_python as make
    finally:
        sys.path.remove(str(ROOT / "bench"))
    return str(make())


def ensure_quix_packages(quix_python: str, *pins: str) -> None:
    """Install ``name==version`` pins into the quixstreams venv unless present (a connector's client
    library, e.g. ``paho-mqtt``, that quixstreams only has as an extra); the project pins the same
    versions in pyproject.toml. Parallel callers take turns on the venv's lock file."""
    import fcntl

    wanted = dict(pin.split("==") for pin in pins)
    probe = ("import importlib.metadata as m, sys\n"
             "def v(n):\n    try:\n        return m.version(n)\n    except m.PackageNotFoundError:\n        return None\n"
             f"sys.exit(0 if all(v(n) == want for n, want in {wanted!r}.items()) else 1)")
    venv = Path(quix_python).parents[1]  # <venv>/bin/python (not resolved: it links to the base python)
    with open(venv.parent / f"{venv.name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if subprocess.run([quix_python, "-c", probe]).returncode != 0:
            subprocess.run([quix_python, "-m", "pip", "install", "-q", "--disable-pip-version-check", *pins],
                           check=True)


def _runner(quix_python: str, tmp_path: Path) -> Callable[..., BothOutputs]:
    """The ``run_both`` function, writing its programs under ``tmp_path``."""

    def run(source: str, timeout: float = 120, env: dict | None = None, quix_attempts: int = 1) -> BothOutputs:
        import os

        full_env = dict(os.environ, **(env or {}), PYTHONPATH=str(ROOT))
        quix_dir, edge_dir = tmp_path / "quix", tmp_path / "edge"
        quix_dir.mkdir(exist_ok=True)
        edge_dir.mkdir(exist_ok=True)
        edge = _run(sys.executable, "stream_edge", source.replace("quixstreams", "stream_edge"), edge_dir,
                    "edge_program", timeout, full_env)
        quix = ""
        for _ in range(quix_attempts):
            quix = _run(quix_python, "quixstreams", source, quix_dir, "quix_program", timeout,
                        dict(full_env, PYTHONPATH=""))
            if quix == edge:
                break
        return BothOutputs(edge=edge, quix=quix)

    return run


@pytest.fixture()
def run_both(quix_python: str, tmp_path: Path) -> Callable[..., BothOutputs]:
    """``run_both(source, timeout=120, env=None, quix_attempts=1) -> BothOutputs(edge, quix)``.

    ``quix_attempts`` > 1 is for programs whose output Quix itself does not always reproduce (its
    cross-topic timestamp order is documented as "not guaranteed 100% of the time"): quixstreams
    runs again, up to that many times, until one of its outputs equals stream_edge's; the last
    quixstreams output is returned, so a test comparing the two still fails when none matched.
    """
    return _runner(quix_python, tmp_path)


@pytest.fixture(scope="module")
def run_both_module(quix_python: str, tmp_path_factory: pytest.TempPathFactory) -> Callable[..., BothOutputs]:
    """``run_both`` for module-scoped fixtures: one shared run whose printed sections several
    tests compare (see :func:`sections`)."""
    return _runner(quix_python, tmp_path_factory.mktemp("compat"))


def sections(output: str) -> Dict[str, str]:
    """Split a program's output into sections: a line ``== name`` starts section ``name``."""
    found: Dict[str, List[str]] = {}
    current = found.setdefault("", [])
    for line in output.splitlines():
        if line.startswith("== "):
            current = found.setdefault(line[3:].strip(), [])
        else:
            current.append(line)
    return {name: "\n".join(lines) for name, lines in found.items()}


def compare_section(outputs: BothOutputs, name: str) -> str:
    """Assert section ``name`` exists and is the same on both packages; return stream_edge's."""
    edge, quix = sections(outputs.edge), sections(outputs.quix)
    assert name in quix, f"quixstreams printed no section {name!r}"
    assert name in edge, f"stream_edge printed no section {name!r}"
    assert edge[name] == quix[name]
    return edge[name]
