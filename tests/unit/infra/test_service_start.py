"""A service whose port another process takes between the pick and the bind (the race of every
pick-then-bind start) is started again on a new port; any other start-up exit fails at once."""

from __future__ import annotations

import socket
import sys
from pathlib import Path

import pytest

from infra.local.service_base import Service, ServiceError

# listens on the port given until stopped, or exits 1 when it cannot bind it (as PostgreSQL does)
_SERVER = """
import signal, socket, sys
sock = socket.socket()
try:
    sock.bind(("127.0.0.1", int(sys.argv[1])))
except OSError as error:
    print("could not bind:", error, flush=True)
    sys.exit(1)
sock.listen()
signal.pause()  # until the service is stopped
"""


class StolenPortService(Service):
    """Its first ``steal`` starts find their freshly picked port bound by another socket."""

    def __init__(self, steal: int) -> None:
        super().__init__("stolen-port")
        self.steal = steal
        self.thieves: list[socket.socket] = []
        self.launches = 0

    def prepare(self) -> None:
        port = self._port("tcp")
        if len(self.thieves) < self.steal:
            thief = socket.socket()
            thief.bind(("127.0.0.1", port))  # bound, not listening: the server's probe stays refused
            self.thieves.append(thief)

    def command(self) -> tuple[list[str], dict[str, str]]:
        self.launches += 1
        return [sys.executable, "-c", _SERVER, str(self._saved_port("tcp"))], {}

    def ready(self) -> bool:
        try:
            socket.create_connection(("127.0.0.1", self._saved_port("tcp")), timeout=1).close()
            return True
        except OSError:
            return False


@pytest.fixture()
def local_dir(tmp_path: Path, monkeypatch) -> Path:
    monkeypatch.setenv("STREAMLAKE_LOCAL_DIR", str(tmp_path))
    return tmp_path


def test_a_port_taken_before_the_bind_means_a_new_port_and_a_second_start(local_dir: Path) -> None:
    service = StolenPortService(steal=1)
    try:
        assert service.start() is True
        stolen = service.thieves[0].getsockname()[1]
        assert service.launches == 2
        assert service._saved_port("tcp") != stolen
        assert service.ready()
    finally:
        service.stop()
        for thief in service.thieves:
            thief.close()


def test_it_gives_up_after_three_starts_naming_the_taken_port(local_dir: Path) -> None:
    service = StolenPortService(steal=3)
    try:
        with pytest.raises(ServiceError, match=r"exited with code 1 during start-up \(port \d+ taken") as error:
            service.start()
        assert service.launches == 3
        assert str(service.thieves[-1].getsockname()[1]) in str(error.value)
        assert "could not bind" in str(error.value)  # the log's last lines
        assert not service.running()
    finally:
        for thief in service.thieves:
            thief.close()


def test_an_exit_for_another_reason_fails_the_first_start(local_dir: Path) -> None:
    class Crashing(StolenPortService):
        def command(self) -> tuple[list[str], dict[str, str]]:
            self.launches += 1
            return [sys.executable, "-c", "import sys; print('bad config'); sys.exit(3)"], {}

    service = Crashing(steal=0)
    with pytest.raises(ServiceError, match="exited with code 3 during start-up; last log lines:\nbad config"):
        service.start()
    assert service.launches == 1
