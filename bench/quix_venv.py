"""The comparison baseline's own virtual environment: quixstreams==3.28.1 from PyPI, kept apart
from the project's venv so the two never share a dependency resolution.

Created once under ``~/.cache/streaming-lakehouse/venv-quixstreams`` (``$XDG_CACHE_HOME``
respected) with quixstreams, orjson and pyarrow; completed if an older run lacked a package.
The libraries both sides call into for serialization (protobuf, fastavro, jsonschema) get the
project's own pins from ``pyproject.toml``: otherwise pip picks their newest release for Quix, and
a comparison measures two protobuf versions (7.x words its parse errors differently from 6.x).
"""

from __future__ import annotations

import fcntl
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Callable

QUIX_VERSION = "3.28.1"
SHARED = ("protobuf", "fastavro", "jsonschema")
CACHE = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "streaming-lakehouse"
QUIX_VENV = CACHE / "venv-quixstreams"


def shared_pins(pyproject: Path = Path(__file__).resolve().parents[1] / "pyproject.toml") -> dict[str, str]:
    """``{name: version}`` of the :data:`SHARED` libraries as ``pyproject.toml`` pins them."""
    found = dict(re.findall(r'"(%s)==([^"]+)"' % "|".join(SHARED), pyproject.read_text()))
    missing = [name for name in SHARED if name not in found]
    if missing:
        raise RuntimeError(f"pyproject.toml pins no version of {', '.join(missing)}")
    return found


def quix_python() -> Path:
    """The baseline venv's python, created or completed on first use.

    Parallel callers (pytest-xdist workers, a bench beside a test run) take turns on a lock file,
    so one creates the venv and the others find it ready.
    """
    return under_cache_lock("venv-quixstreams.lock", _ensure_quix_venv)


def under_cache_lock(lock_name: str, ensure: Callable[[], Path]) -> Path:
    """``ensure()`` while holding the lock file ``CACHE/lock_name``: parallel callers take turns,
    so one builds a venv and the others find it ready."""
    CACHE.mkdir(parents=True, exist_ok=True)
    with open(CACHE / lock_name, "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        return ensure()


def _ensure_quix_venv() -> Path:
    python = QUIX_VENV / "bin" / "python"
    want = {"quixstreams": QUIX_VERSION, "pyarrow": "26.0.1", **shared_pins()}
    packages = [f"{name}=={version}" for name, version in want.items()] + ["orjson"]
    probe = [str(python), "-c", "import importlib.metadata as m, orjson; "
             f"print(all(m.version(n) == v for n, v in {want!r}.items()))"]
    if python.exists():
        found = subprocess.run(probe, capture_output=True, text=True)
        if found.returncode == 0 and found.stdout.strip() == "True":
            return python
    else:
        print(f"creating {QUIX_VENV} with quixstreams=={QUIX_VERSION} (once)", file=sys.stderr)
        subprocess.run([sys.executable, "-m", "venv", str(QUIX_VENV)], check=True)
    subprocess.run([str(python), "-m", "pip", "install", "-q", "--disable-pip-version-check", *packages],
                   check=True)
    return python


if __name__ == "__main__":  # ./dev test prepares the venv beside the services' start-up
    print(quix_python())
