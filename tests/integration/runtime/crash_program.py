"""A stream_edge program for the crash tests, run as a subprocess (killed with SIGKILL/SIGTERM).

    python crash_program.py BROKER INPUT OUTPUT GROUP GUARANTEE SLEEP_S [TIMEOUT_S]

Copies each input {"id": n} to OUTPUT as {"id": n, "by": pid}; prints "processed <n>" lines.
With TIMEOUT_S it stops after that many idle seconds, else it runs until signalled.
"""

import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[3]))

from stream_edge import Application  # noqa: E402


def main() -> None:
    broker, src, dst, group, guarantee, sleep_s = sys.argv[1:7]
    timeout = float(sys.argv[7]) if len(sys.argv) > 7 else 0.0
    app = Application(broker, consumer_group=group, auto_offset_reset="earliest", commit_interval=0.5,
                      processing_guarantee=guarantee, loglevel="INFO",
                      # the killed instance's partitions are released after this (broker minimum)
                      consumer_extra_config={"session.timeout.ms": 6000})
    pause = float(sleep_s)

    def work(value):
        time.sleep(pause)
        print(f"processed {value['id']}", flush=True)
        return {**value, "by": os.getpid()}

    app.dataframe(app.topic(src)).apply(work).to_topic(app.topic(dst))
    app.run(timeout=timeout)
    print("stopped cleanly", flush=True)


if __name__ == "__main__":
    main()
