"""The comparison baseline's own virtual environment: quixstreams==3.28.1 from PyPI, kept apart
from the project's venv so the two never share a dependency resolution.

Created once under ``~/.cache/streaming-lakehouse/venv-quixstreams`` (``$XDG_CACHE_HOME``
respected) with quixstreams, orjson and pyarrow; completed if an older run lacked a package.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

QUIX_VERSION = "3.28.1"
PACKAGES = (f"quixstreams=={QUIX_VERSION}", "orjson", "pyarrow==26.0.1")
CACHE = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "streaming-lakehouse"
QUIX_VENV = CACHE / "venv-quixstreams"


def quix_python() -> Path:
    """The baseline venv's python, created or completed on first use."""
    python = QUIX_VENV / "bin" / "python"
    probe = [str(python), "-c", "import importlib.metadata as m, orjson, pyarrow; print(m.version('quixstreams'))"]
    if python.exists():
        found = subprocess.run(probe, capture_output=True, text=True)
        if found.returncode == 0 and found.stdout.strip() == QUIX_VERSION:
            return python
    else:
        print(f"creating {QUIX_VENV} with quixstreams=={QUIX_VERSION} (once)", file=sys.stderr)
        subprocess.run([sys.executable, "-m", "venv", str(QUIX_VENV)], check=True)
    subprocess.run([str(python), "-m", "pip", "install", "-q", "--disable-pip-version-check", *PACKAGES],
                   check=True)
    return python
