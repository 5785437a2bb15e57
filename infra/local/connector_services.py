"""Optional local servers for the connector sinks: PostgreSQL, Redis and Mosquitto (MQTT).

Each is a :class:`~infra.local.services.Service` registered in ``OPTIONAL_SERVICES``, so people
and tests start them the same way::

    ./dev services up postgres redis mosquitto

They listen on loopback and free ports and keep their data under ``.local/<name>/``. The servers
come from Debian packages (``postgresql``, ``redis-server``, ``mosquitto``); a missing package is
installed with ``apt-get`` when running as root (``apt-get update`` once per process), otherwise
start-up fails with the install command to run.

Env entries (``.local/services.env``)::

    POSTGRES_HOST=127.0.0.1  POSTGRES_PORT=...  POSTGRES_USER=postgres  POSTGRES_DB=postgres
    REDIS_HOST=127.0.0.1     REDIS_PORT=...
    MQTT_HOST=127.0.0.1      MQTT_PORT=...
"""

from __future__ import annotations

import contextlib
import getpass
import hashlib
import os
import pwd
import shutil
import signal
import socket
import stat
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Callable

from infra.local.services import Service, ServiceError, _alive

__all__ = ("PostgreSQL", "Redis", "Mosquitto", "ensure_debian_package")

_APT_UPDATED = False


def _is_root() -> bool:
    return os.geteuid() == 0


def ensure_debian_package(package: str, found: Callable[[], str | None]) -> str:
    """Return ``found()`` (a binary path), installing the Debian ``package`` first if it is missing.

    As root the package is installed with ``apt-get update`` (once per process) and
    ``apt-get install -y``; otherwise a :class:`ServiceError` names the command to run.
    """
    global _APT_UPDATED
    path = found()
    if path:
        return path
    command = f"apt-get install -y {package}"
    if not _is_root() or shutil.which("apt-get") is None:
        raise ServiceError(f"the Debian package '{package}' is missing; install it with "
                           f"'sudo apt-get update && sudo {command}'")
    apt = ["apt-get", "-o", "DPkg::Lock::Timeout=600", "-q"]
    env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
    steps = ([] if _APT_UPDATED else [apt + ["update"]]) + [apt + ["install", "-y", package]]
    for step in steps:
        done = subprocess.run(step, capture_output=True, text=True, env=env)
        if done.returncode != 0:
            raise ServiceError(f"'{' '.join(step)}' failed ({done.returncode}):\n{done.stderr[-2000:]}")
        if step[-1] == "update":
            _APT_UPDATED = True
    path = found()
    if not path:
        raise ServiceError(f"installed '{package}' but its server binary is still not found")
    return path


def _tcp_open(port: int | None) -> bool:
    if port is None:
        return False
    with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), 1):
        return True
    return False


def _postgres_bindir() -> str | None:
    """The newest ``/usr/lib/postgresql/<v>/bin`` (Debian's layout), else ``postgres`` on PATH."""
    candidates = sorted(Path("/usr/lib/postgresql").glob("*/bin/postgres"),
                        key=lambda p: int(p.parent.parent.name) if p.parent.parent.name.isdigit() else 0)
    if candidates:
        return str(candidates[-1].parent)
    on_path = shutil.which("postgres")
    return str(Path(on_path).resolve().parent) if on_path else None


class PostgreSQL(Service):
    """PostgreSQL from the Debian package, one cluster in ``.local/postgres/data``, trust auth on
    loopback TCP only. As root the server runs as the ``postgres`` system user (it refuses root)."""

    startup_timeout = 60.0
    user = "postgres"
    database = "postgres"

    def __init__(self, name: str = "postgres") -> None:
        super().__init__(name)

    def _bindir(self) -> Path:
        return Path(ensure_debian_package("postgresql", _postgres_bindir))

    def _run_as(self) -> list[str]:
        """Prefix that drops root to the ``postgres`` user; nothing when not root."""
        if not _is_root():
            return []
        try:
            pwd.getpwnam("postgres")
        except KeyError:
            raise ServiceError("running as root needs the 'postgres' system user (created by the "
                               "Debian 'postgresql' package): apt-get install -y postgresql") from None
        return ["setpriv", "--reuid=postgres", "--regid=postgres", "--init-groups", "--"]

    @property
    def data_dir(self) -> Path:
        """``.local/postgres/data``; as root, when a folder above the checkout is private (``/root``,
        a ``mktemp -d`` folder) and the ``postgres`` user cannot reach it, a folder of the system
        temp directory named after this checkout instead."""
        inside = self.home / "data"
        if not _is_root() or all(folder.stat().st_mode & stat.S_IXOTH for folder in self.home.parent.parents):
            return inside
        digest = hashlib.sha256(str(self.home).encode()).hexdigest()[:12]
        return Path(tempfile.gettempdir()) / f"streamlake-postgres-{digest}" / "data"

    def prepare(self) -> None:
        bindir = self._bindir()
        self._port("tcp")
        if _is_root():
            pw = pwd.getpwnam("postgres")
            # The server user must reach its data directory through .local.
            for folder in (self.home.parent, self.home):
                folder.chmod(folder.stat().st_mode | 0o711)
        if not (self.data_dir / "PG_VERSION").exists():
            shutil.rmtree(self.data_dir, ignore_errors=True)
            self.data_dir.mkdir(parents=True)
            self.data_dir.parent.chmod(self.data_dir.parent.stat().st_mode | 0o711)
            if _is_root():
                os.chown(self.data_dir, pw.pw_uid, pw.pw_gid)
            self.data_dir.chmod(0o700)
            done = subprocess.run(
                self._run_as() + [str(bindir / "initdb"), "-D", str(self.data_dir), "-U", self.user,
                                  "--auth=trust", "--encoding=UTF8", "--locale=C.UTF-8"],
                capture_output=True, text=True, cwd="/",
            )
            if done.returncode != 0:
                raise ServiceError(f"initdb failed ({done.returncode}):\n{done.stdout[-1500:]}{done.stderr[-1500:]}")

    def command(self) -> tuple[list[str], dict[str, str]]:
        bindir = self._bindir()
        port = self._saved_port("tcp")
        return self._run_as() + [
            str(bindir / "postgres"), "-D", str(self.data_dir), "-p", str(port),
            "-c", "listen_addresses=127.0.0.1", "-c", "unix_socket_directories=",
            "-c", "max_connections=200", "-c", "shared_buffers=128MB",
            "-c", "logging_collector=off",
        ], {}

    def stop(self, timeout: float = 20.0) -> bool:
        """SIGINT first (PostgreSQL's fast shutdown: open sessions are ended), then the default."""
        pid = self.pid()
        if pid is not None:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGINT)
            deadline = time.monotonic() + timeout
            while time.monotonic() < deadline and _alive(pid):
                time.sleep(0.2)
        return super().stop(timeout) or pid is not None

    def env_entries(self) -> dict[str, str]:
        return {"POSTGRES_HOST": "127.0.0.1", "POSTGRES_PORT": str(self._saved_port("tcp")),
                "POSTGRES_USER": self.user, "POSTGRES_DB": self.database}

    def ready(self) -> bool:
        port = self._saved_port("tcp")
        if not _tcp_open(port):
            return False
        bindir = _postgres_bindir()
        if bindir is None:
            return False
        probe = subprocess.run([str(Path(bindir) / "pg_isready"), "-h", "127.0.0.1", "-p", str(port),
                                "-U", self.user, "-d", self.database], capture_output=True)
        return probe.returncode == 0


class Redis(Service):
    """redis-server from the Debian package; append-only file under ``.local/redis``."""

    startup_timeout = 30.0

    def __init__(self, name: str = "redis") -> None:
        super().__init__(name)

    def prepare(self) -> None:
        ensure_debian_package("redis-server", lambda: shutil.which("redis-server"))
        self._port("tcp")

    def command(self) -> tuple[list[str], dict[str, str]]:
        exe = ensure_debian_package("redis-server", lambda: shutil.which("redis-server"))
        return [exe, "--port", str(self._saved_port("tcp")), "--bind", "127.0.0.1",
                "--dir", str(self.home), "--daemonize", "no", "--save", "",
                # keep the environment (our pid marker) readable: no process-title rewrite
                "--set-proc-title", "no",
                "--appendonly", "yes", "--appendfsync", "everysec", "--logfile", ""], {}

    def port(self) -> int | None:
        return self._saved_port("tcp")

    def env_entries(self) -> dict[str, str]:
        return {"REDIS_HOST": "127.0.0.1", "REDIS_PORT": str(self._saved_port("tcp"))}

    def ready(self) -> bool:
        port = self._saved_port("tcp")
        if port is None:
            return False
        try:
            with socket.create_connection(("127.0.0.1", port), 1) as sock:
                sock.sendall(b"PING\r\n")
                return sock.recv(16).startswith(b"+PONG")
        except OSError:
            return False


# MQTT 3.1.1 CONNECT (clean session, keep-alive 60 s, client id "probe") and DISCONNECT packets.
_MQTT_CONNECT = bytes([0x10, 17, 0, 4]) + b"MQTT" + bytes([4, 0x02, 0, 60, 0, 5]) + b"probe"
_MQTT_DISCONNECT = bytes([0xE0, 0])


class Mosquitto(Service):
    """Eclipse Mosquitto from the Debian package: anonymous loopback listener, persistence under
    ``.local/mosquitto``."""

    startup_timeout = 30.0

    def __init__(self, name: str = "mosquitto") -> None:
        super().__init__(name)

    def _exe(self) -> str:
        return ensure_debian_package(
            "mosquitto", lambda: shutil.which("mosquitto") or
            (p if os.path.exists(p := "/usr/sbin/mosquitto") else None))

    def prepare(self) -> None:
        self._exe()
        port = self._port("tcp")
        data = self.home / "data"
        data.mkdir(parents=True, exist_ok=True)
        (self.home / "mosquitto.conf").write_text(
            f"listener {port} 127.0.0.1\n"
            "allow_anonymous true\n"
            f"user {getpass.getuser()}\n"
            "persistence true\n"
            f"persistence_location {data}/\n"
            "log_dest stdout\n"
            "max_queued_messages 100000\n"
            "max_inflight_messages 0\n"
        )

    def command(self) -> tuple[list[str], dict[str, str]]:
        return [self._exe(), "-c", str(self.home / "mosquitto.conf")], {}

    def port(self) -> int | None:
        return self._saved_port("tcp")

    def env_entries(self) -> dict[str, str]:
        return {"MQTT_HOST": "127.0.0.1", "MQTT_PORT": str(self._saved_port("tcp"))}

    def ready(self) -> bool:
        port = self._saved_port("tcp")
        if port is None:
            return False
        try:
            with socket.create_connection(("127.0.0.1", port), 1) as sock:
                sock.settimeout(1)
                sock.sendall(_MQTT_CONNECT)
                ack = sock.recv(4)
                sock.sendall(_MQTT_DISCONNECT)
                return ack == bytes([0x20, 2, 0, 0])
        except OSError:
            return False
