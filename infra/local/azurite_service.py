"""Azurite, Microsoft's Azure Storage emulator (Blob service only), as an optional local service.

::

    ./dev services up azurite

Azurite is an npm package; when ``azurite-blob`` is missing it is installed once with
``npm install azurite@<version>`` into ``~/.cache/streaming-lakehouse/azurite`` (or
``$STREAMLAKE_AZURITE_DIR``). Without ``npm`` on the PATH start-up fails naming the command to run.
The server listens on loopback and a free port and keeps its blobs under ``.local/azurite/data``.

Env entries (``.local/services.env``)::

    AZURITE_BLOB_ENDPOINT=http://127.0.0.1:<port>/devstoreaccount1
    AZURE_STORAGE_CONNECTION_STRING=DefaultEndpointsProtocol=http;AccountName=devstoreaccount1;...

The account name and key are Azurite's published development credentials, not secrets.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import socket
import subprocess
from pathlib import Path

from infra.local.services import Service, ServiceError

__all__ = ("Azurite", "azurite_connection_string", "AZURITE_ACCOUNT", "AZURITE_KEY")

AZURITE_VERSION = "3.37.0"
AZURITE_ACCOUNT = "devstoreaccount1"
# Azurite's well-known development account key (documented by Microsoft; not a secret).
AZURITE_KEY = "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw=="


def azurite_connection_string(port: int, host: str = "127.0.0.1") -> str:
    """The connection string of the Azurite blob endpoint on ``host:port``."""
    return (f"DefaultEndpointsProtocol=http;AccountName={AZURITE_ACCOUNT};AccountKey={AZURITE_KEY};"
            f"BlobEndpoint=http://{host}:{port}/{AZURITE_ACCOUNT};")


def azurite_dir() -> Path:
    """Where the npm package is installed (a cache shared by every checkout)."""
    env = os.environ.get("STREAMLAKE_AZURITE_DIR")
    if env:
        return Path(env)
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(Path.home(), ".cache")
    return Path(base) / "streaming-lakehouse" / "azurite"


def ensure_azurite() -> Path:
    """The ``azurite-blob`` executable, installing the npm package first if it is missing."""
    folder = azurite_dir()
    exe = folder / "node_modules" / ".bin" / "azurite-blob"
    if exe.exists():
        return exe
    command = f"npm install --prefix {folder} azurite@{AZURITE_VERSION}"
    npm = shutil.which("npm")
    if npm is None:
        raise ServiceError(f"Azurite is missing and npm is not on the PATH; install Node.js and npm "
                           f"(e.g. 'apt-get install -y nodejs npm'), then run '{command}'")
    folder.mkdir(parents=True, exist_ok=True)
    done = subprocess.run([npm, "install", "--prefix", str(folder), "--no-audit", "--no-fund",
                           f"azurite@{AZURITE_VERSION}"], capture_output=True, text=True, timeout=900)
    if done.returncode != 0 or not exe.exists():
        raise ServiceError(f"'{command}' failed ({done.returncode}):\n{done.stderr[-2000:]}")
    return exe


class Azurite(Service):
    """Azurite's Blob service on loopback, data under ``.local/<name>/data``."""

    startup_timeout = 60.0

    def __init__(self, name: str = "azurite") -> None:
        super().__init__(name)

    def prepare(self) -> None:
        ensure_azurite()
        self._port("blob")
        (self.home / "data").mkdir(parents=True, exist_ok=True)

    def command(self) -> tuple[list[str], dict[str, str]]:
        exe = ensure_azurite()
        return [str(exe), "--blobHost", "127.0.0.1", "--blobPort", str(self._saved_port("blob")),
                "--location", str(self.home / "data"), "--skipApiVersionCheck", "--loose",
                "--disableProductStyleUrl", "--silent"], {}

    def port(self) -> int | None:
        return self._saved_port("blob")

    def connection_string(self) -> str:
        port = self._saved_port("blob")
        if port is None:
            raise ServiceError(f"{self.name} has no port yet: start it first")
        return azurite_connection_string(port)

    def env_entries(self) -> dict[str, str]:
        port = self._saved_port("blob")
        return {"AZURITE_BLOB_ENDPOINT": f"http://127.0.0.1:{port}/{AZURITE_ACCOUNT}",
                "AZURE_STORAGE_CONNECTION_STRING": self.connection_string()}

    def ready(self) -> bool:
        port = self._saved_port("blob")
        if port is None:
            return False
        # Any HTTP answer (Azurite replies 400 to an unsigned request) means it is serving.
        with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), 1) as sock:
            sock.settimeout(2)
            sock.sendall(f"GET /{AZURITE_ACCOUNT}?comp=list HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                         f"Connection: close\r\n\r\n".encode())
            return sock.recv(12).startswith(b"HTTP/1.1")
        return False
