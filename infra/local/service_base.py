"""Service: one local server process (start, readiness, stop, logs) and the helpers every service
shares (state folder, env file, free ports, the jar cache). ``infra/local/services.py`` holds the
default services and the manager; optional ones live in their own modules.
"""

from __future__ import annotations

import contextlib
import os
import shlex
import signal
import socket
import subprocess
import time
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from typing import Mapping

REPO_ROOT = Path(__file__).resolve().parents[2]


def jar_cache() -> Path:
    """Folder holding the jar sets fetched by ``infra/jars/fetch.sh``."""
    env = os.environ.get("STREAMLAKE_JAR_CACHE")
    if env:
        return Path(env)
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(Path.home(), ".cache")
    return Path(base) / "streaming-lakehouse" / "jars"


def local_dir() -> Path:
    """State directory of the local services (data, logs, pid files, env file)."""
    return Path(os.environ.get("STREAMLAKE_LOCAL_DIR") or REPO_ROOT / ".local").resolve()


def env_file() -> Path:
    return local_dir() / "services.env"


#: starts of a service whose remembered port another process took before it bound it
_START_ATTEMPTS = 3


class ServiceError(RuntimeError):
    """A local service could not be started or is not answering."""


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _http_ok(url: str) -> bool:
    try:
        with urllib.request.urlopen(url, timeout=2) as resp:
            return 200 <= resp.status < 500
    except urllib.error.HTTPError as exc:
        return exc.code < 500
    except OSError:
        return False


def _require_jars(set_name: str) -> Path:
    folder = jar_cache() / set_name
    if not any(folder.glob("*.jar")):
        raise ServiceError(
            f"jar set '{set_name}' is missing from {folder}; fetch it once with "
            f"'infra/jars/fetch.sh {set_name}' (or './dev bootstrap')"
        )
    return folder


@dataclass
class Service:
    """One background process with a pid file, a log file and a readiness probe."""

    name: str

    @property
    def home(self) -> Path:
        return local_dir() / self.name

    @property
    def pid_file(self) -> Path:
        return self.home / "pid"

    @property
    def log_file(self) -> Path:
        return self.home / f"{self.name}.log"

    # -- to be provided by each service ------------------------------------------------------
    def command(self) -> tuple[list[str], dict[str, str]]:  # pragma: no cover - abstract
        raise ServiceError(f"{self.name}: no command defined")

    def env_entries(self) -> dict[str, str]:  # pragma: no cover - abstract
        return {}

    def ready(self) -> bool:  # pragma: no cover - abstract
        return False

    def prepare(self) -> None:
        """Write configuration and allocate ports before the first start."""

    startup_timeout = 90.0

    # -- shared mechanics --------------------------------------------------------------------
    def pid(self) -> int | None:
        try:
            pid = int(self.pid_file.read_text().strip())
        except (OSError, ValueError):
            return None
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return None
        except PermissionError:
            return pid
        if not _alive(pid):  # killed but not yet reaped by its parent (a zombie): gone
            return None
        # A reused pid of an unrelated process is not ours: check our marker in its environment.
        try:
            environ = Path(f"/proc/{pid}/environ").read_bytes()
        except OSError:
            return pid
        marker = f"STREAMLAKE_SERVICE={self.name}@{local_dir()}".encode()
        return pid if marker in environ else None

    def running(self) -> bool:
        return self.pid() is not None

    def start(self) -> bool:
        """Start unless already running; wait until ready. Returns True if it started it."""
        if self.running():
            if not self.wait_ready(timeout=self.startup_timeout):
                raise ServiceError(f"{self.name} is running but not answering; see {self.log_file}")
            return False
        self.home.mkdir(parents=True, exist_ok=True)
        # A port is picked free (``_port``) before the service binds it, seconds later (initdb, a
        # JVM's start); any process may take it meanwhile (an outgoing connection's ephemeral
        # port: the suite opens thousands). The service then exits at start-up; it is started
        # again on new ports, a bounded number of times.
        attempt = 1
        while True:
            self.prepare()
            code = self._launch()
            if code is None:
                return True
            taken = self._taken_ports()
            if not taken or attempt == _START_ATTEMPTS:
                why = f" (port {', '.join(map(str, taken))} taken by another process)" if taken else ""
                raise ServiceError(f"{self.name} exited with code {code} during start-up{why}; "
                                   f"last log lines:\n{self.tail(30)}")
            attempt += 1

    def _launch(self) -> int | None:
        """Start the process and wait until ready: None, or its exit code if it exited first."""
        argv, extra_env = self.command()
        env = dict(os.environ, **extra_env, STREAMLAKE_SERVICE=f"{self.name}@{local_dir()}")
        with open(self.log_file, "ab") as log:
            proc = subprocess.Popen(
                argv, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                env=env, cwd=self.home, start_new_session=True,
            )
        self.pid_file.write_text(str(proc.pid))
        deadline = time.monotonic() + self.startup_timeout
        while time.monotonic() < deadline:
            if proc.poll() is not None:
                self.pid_file.unlink(missing_ok=True)
                return proc.returncode
            if self.ready():
                return None
            time.sleep(0.3)
        self.stop()
        raise ServiceError(f"{self.name} not ready after {self.startup_timeout:.0f}s; log: {self.log_file}")

    def _taken_ports(self) -> list[int]:
        """This service's remembered ports that cannot be bound now (checked after it exited)."""
        taken = []
        for path in sorted(self.home.glob("*.port")):
            port = int(path.read_text())
            with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
                try:
                    sock.bind(("127.0.0.1", port))
                except OSError:
                    taken.append(port)
        return taken

    def wait_ready(self, timeout: float) -> bool:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.ready():
                return True
            time.sleep(0.3)
        return False

    def stop(self, timeout: float = 20.0) -> bool:
        """SIGTERM the whole process group, SIGKILL what is left after ``timeout``."""
        pid = self.pid()
        if pid is None:
            self.pid_file.unlink(missing_ok=True)
            return False
        with contextlib.suppress(ProcessLookupError):
            os.killpg(pid, signal.SIGTERM)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline and _alive(pid):
            time.sleep(0.2)
        if _alive(pid):
            with contextlib.suppress(ProcessLookupError):
                os.killpg(pid, signal.SIGKILL)
            while _alive(pid):
                time.sleep(0.1)
        self.pid_file.unlink(missing_ok=True)
        return True

    def tail(self, lines: int = 50) -> str:
        try:
            return "\n".join(self.log_file.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return "(no log yet)"

    def _port(self, key: str) -> int:
        """A port remembered across restarts, so the env file stays valid."""
        path = self.home / f"{key}.port"
        if path.exists():
            port = int(path.read_text())
            with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
                try:
                    sock.bind(("127.0.0.1", port))
                    return port
                except OSError:
                    pass  # taken by someone else meanwhile: pick a new one
        port = free_port()
        path.write_text(str(port))
        return port

    def _saved_port(self, key: str) -> int | None:
        path = self.home / f"{key}.port"
        return int(path.read_text()) if path.exists() else None


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # A zombie child of ours counts as gone.
    try:
        state = Path(f"/proc/{pid}/stat").read_text().split(")")[-1].split()[0]
        return state != "Z"
    except OSError:
        return False


def _java() -> str:
    home = os.environ.get("JAVA_HOME")
    return str(Path(home) / "bin" / "java") if home else "java"


#: extra flags for the long-running service JVMs (Kafka, Iceberg REST, Kafka Connect), e.g. the
#: test runner's ``-XX:TieredStopAtLevel=1``; empty by default, so benchmarks meet full-JIT servers
SERVICE_JVM_OPTS_VAR = "STREAMLAKE_SERVICE_JVM_OPTS"


def service_jvm_opts(env: Mapping[str, str] = os.environ) -> list[str]:
    """The flags of :data:`SERVICE_JVM_OPTS_VAR` in ``env``, split as a shell would.

    >>> service_jvm_opts({SERVICE_JVM_OPTS_VAR: "-XX:TieredStopAtLevel=1  -Xss1m"})
    ['-XX:TieredStopAtLevel=1', '-Xss1m']
    >>> service_jvm_opts({})
    []
    """
    return shlex.split(env.get(SERVICE_JVM_OPTS_VAR, ""))
