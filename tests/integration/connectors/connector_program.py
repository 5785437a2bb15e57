"""A Quix-style program for the connector tests: Kafka topic -> one connector sink.

    python connector_program.py BOOTSTRAP TOPIC GROUP SINK_JSON [CRASH_AFTER_RECORDS]

``SINK_JSON`` is ``{"class": "module:Class", "kwargs": {...}}``. The program runs until 5 s pass
without a new message. With ``CRASH_AFTER_RECORDS`` it SIGKILLs itself right after the first sink
flush that completes once that many records were added: the writes of that checkpoint are on the
server but its offsets are not committed, so a restart replays them.
"""

from __future__ import annotations

import importlib
import json
import os
import signal
import sys

from stream_edge import Application


def main() -> int:
    bootstrap, topic, group, sink_json = sys.argv[1:5]
    crash_after = int(sys.argv[5]) if len(sys.argv) > 5 else 0
    spec = json.loads(sink_json)
    module_name, _, class_name = spec["class"].partition(":")
    sink = getattr(importlib.import_module(module_name), class_name)(**spec["kwargs"])
    app = Application(broker_address=bootstrap, consumer_group=group, auto_offset_reset="earliest",
                      commit_every=int(spec.get("commit_every", 250)), commit_interval=30,
                      # The restarted program replaces its killed predecessor at once.
                      consumer_extra_config={"group.instance.id": f"{group}-program",
                                             "session.timeout.ms": 6000})
    added = {"n": 0}
    original_add, original_flush = sink.add, sink.flush

    def add(*args, **kwargs):
        added["n"] += 1
        return original_add(*args, **kwargs)

    def flush(topic_name, partition):
        original_flush(topic_name, partition)
        if crash_after and added["n"] >= crash_after:
            print(f"CRASHING after {added['n']} records", flush=True)
            os.kill(os.getpid(), signal.SIGKILL)

    sink.add, sink.flush = add, flush
    app.dataframe(app.topic(topic)).sink(sink)
    app.run(timeout=float(spec.get("idle_timeout", 5)))
    print(f"DONE after {added['n']} records", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
