"""A windowed stream_edge program for the state crash/takeover tests, run as a subprocess.

    python window_program.py BROKER INPUT OUTPUT GROUP STATE_DIR SLEEP_S IDLE_TIMEOUT_S

``tumbling_window(100 ms).sum().final()`` over ``value["x"]`` per key, results to OUTPUT.
Prints "processed <partition> <offset>" per input message and "stopped cleanly" at the end.
IDLE_TIMEOUT_S > 0 stops after that many idle seconds; 0 runs until signalled.
"""

import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[3]))

from stream_edge import Application, message_context  # noqa: E402


def main() -> None:
    broker, src, dst, group, state_dir, sleep_s, idle = sys.argv[1:8]
    app = Application(broker, consumer_group=group, auto_offset_reset="earliest", commit_interval=0.3,
                      state_dir=state_dir, loglevel="INFO",
                      consumer_extra_config={"session.timeout.ms": 6000, "max.poll.interval.ms": 60000})
    pause = float(sleep_s)

    def progress(value):
        ctx = message_context()
        if pause:
            time.sleep(pause)
        print(f"processed {ctx.partition} {ctx.offset}", flush=True)

    sdf = app.dataframe(app.topic(src))
    sdf = sdf.update(progress).apply(lambda v: v["x"]).tumbling_window(100).sum().final()
    sdf.to_topic(app.topic(dst))
    app.run(timeout=float(idle))
    print("stopped cleanly", flush=True)


if __name__ == "__main__":
    main()
