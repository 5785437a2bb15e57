"""A source's error as quixstreams 3.28.1 reports it (real broker): raised in ``run()``, in
``cleanup()`` or in ``stop()``, an exception that pickles arrives as itself and one that does not
as ``RuntimeError(str(error))``; ``app.run()`` (or the source manager's ``stop_sources()``) raises
``SourceException`` from it, with the process's exit code."""

import pytest

pytestmark = [pytest.mark.integration, pytest.mark.xdist_group("compat-source-errors")]

PROGRAM = r'''
import os
import tempfile
import threading
import time
import uuid

from quixstreams import Application
from quixstreams.sources import Source, SourceException


class Unpicklable(Exception):
    def __init__(self, message):
        super().__init__(message)
        self.lock = threading.Lock()  # an attribute pickle refuses


class Failing(Source):
    def __init__(self, name, where, pickleable, marker):
        super().__init__(name=name, shutdown_timeout=3)
        self.where, self.pickleable, self.marker = where, pickleable, marker

    def _fail(self, where):
        if where == self.where:
            error = ValueError if self.pickleable else Unpicklable
            raise error(f"test {where} error")

    def run(self):
        self._fail("run")
        while self.where == "stop" and self.running:  # runs until the application stops it
            if not os.path.exists(self.marker):
                open(self.marker, "w").close()  # in its loop: the application may stop it now
            time.sleep(0.05)

    def cleanup(self, failed):
        self._fail("cleanup")

    def stop(self):
        super().stop()
        self._fail("stop")


def stop_when_running(app, marker):
    deadline = time.monotonic() + 120
    while not os.path.exists(marker) and time.monotonic() < deadline:
        time.sleep(0.05)
    app.stop()


def main():
    suffix = uuid.uuid4().hex[:8]
    for where in ("run", "cleanup", "stop"):
        for pickleable in (True, False):
            app = Application(broker_address=BROKER, consumer_group="g-" + suffix, loglevel=None,
                              state_dir=tempfile.mkdtemp())
            marker = os.path.join(tempfile.mkdtemp(), "running")
            source = Failing(f"failing-{where}-{pickleable}-{suffix}", where, pickleable, marker)
            app.add_source(source)
            if where == "stop":  # the source runs until the application stops it, once it runs:
                # a stop that comes while the source process is still starting is another path
                # (on a loaded machine 3.28.1 then reports no error), not the one compared here
                threading.Thread(target=stop_when_running, args=(app, marker), daemon=True).start()
            try:
                app.run()
                print(where, pickleable, "no error")
            except SourceException as exc:
                cause = exc.__cause__
                print(where, pickleable, exc.exitcode, type(cause).__name__, cause,
                      str(exc).replace(suffix, "S").replace(str(exc.pid), "PID"))


if __name__ == "__main__":
    main()
'''


def test_source_errors_match_quixstreams(run_both, kafka_bootstrap):
    out = run_both(f"BROKER = {kafka_bootstrap!r}\n" + PROGRAM, timeout=180)
    assert out.edge == out.quix
    assert "run False 0 RuntimeError test run error" in out.edge
    assert "cleanup True 0 ValueError test cleanup error" in out.edge
    assert "stop False 0 RuntimeError test stop error" in out.edge
