"""What an application says, as quixstreams 3.28.1 words it: no broker address, the stop
conditions of ``run(count=..., timeout=...)`` and the one reached (real broker, one empty topic,
one run)."""

import pytest

pytestmark = pytest.mark.integration

PROGRAM = r'''
import logging
import os
import sys

from quixstreams import Application

for name in [n for n in os.environ if n.startswith("Quix__")]:
    del os.environ[name]
try:
    Application(loglevel=None)
except Exception as exc:
    print("no broker ->", type(exc).__name__, str(exc))

WANTED = ("APP STOP CONDITIONS SET", "Timeout of", "Count of")


class Lines(logging.Handler):
    def emit(self, record):
        message = record.getMessage()
        if message.startswith(WANTED):
            print(record.levelname, message)


app = Application(broker_address=BROKER, consumer_group=GROUP, auto_offset_reset="earliest", loglevel=None)
logging.getLogger("quixstreams").addHandler(Lines())
logging.getLogger("quixstreams").setLevel(logging.INFO)
app.dataframe(app.topic(TOPIC))
app.run(timeout=1.5, count=5)
'''


def test_missing_broker_and_run_stop_logs_match_quixstreams(run_both, kafka_bootstrap, make_topic):
    header = (f"BROKER = {kafka_bootstrap!r}\nTOPIC = {make_topic(prefix='compat-run-logs')!r}\n"
              f"GROUP = 'run-logs-' + __import__('uuid').uuid4().hex[:8]\n")
    out = run_both(header + PROGRAM)
    assert out.edge == out.quix
    assert "INFO APP STOP CONDITIONS SET: timeout=1.5 seconds OR count=5 records" in out.edge
    assert "INFO Timeout of 1.5s reached." in out.edge
