"""The baseline venv needs quixstreams' optional serializer packages (fastavro, protobuf) too."""

from __future__ import annotations

import subprocess

import pytest


@pytest.fixture(scope="session")
def quix_with_serializers(quix_python: str) -> str:
    """The quixstreams venv's python with ``quixstreams[avro,protobuf]`` installed (once)."""
    probe = subprocess.run([quix_python, "-c", "import fastavro, google.protobuf"], capture_output=True)
    if probe.returncode != 0:
        subprocess.run([quix_python, "-m", "pip", "install", "-q", "--disable-pip-version-check",
                        "quixstreams[avro,protobuf]==3.28.1"], check=True)
    return quix_python
