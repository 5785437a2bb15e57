"""The demo's keyed table: a device registry topic (registrations, updates, decommissions as
tombstones, a re-registration) landed by the edge as a changelog, mirrored by ``lakehouse upsert``
into ``lake.demo.devices`` and joined with the readings in SQL.

Example::

    >>> registry = DeviceRegistry(["sensor-01", "sensor-02", "sensor-03"], seed=1)
    >>> sorted(registry.expected())        # sensor-02 is decommissioned, then registered again
    ['sensor-01', 'sensor-02']
    >>> registry.expected()["sensor-02"]["site"]
    'dock'
"""

from __future__ import annotations

import json
import random
import threading
import time
from pathlib import Path
from typing import Dict, List, Optional, Sequence, Tuple

SITES = ("north hall", "south hall", "roof", "lab")
MODELS = ("TH-100", "TH-200")
Message = Tuple[bytes, Optional[bytes], int]  # (key, value or None for a tombstone, timestamp ms)


class DeviceRegistry:
    """Registry changes for ``sensors``: every sensor registered, a third re-flashed (an update),
    the last two decommissioned (tombstones), and the first of those registered again at a new site."""

    def __init__(self, sensors: Sequence[str], seed: int = 1, start_ms: int = 0) -> None:
        rng = random.Random(seed)
        self.changes: List[Tuple[str, Optional[dict]]] = []
        for sensor in sensors:
            self.changes.append((sensor, {"sensor": sensor, "site": rng.choice(SITES), "model": rng.choice(MODELS),
                                          "firmware": "1.0"}))
        for sensor in sensors[::3]:
            current = dict(self._last(sensor) or {})
            self.changes.append((sensor, {**current, "firmware": "1.1"}))
        retired = list(sensors[-2:]) if len(sensors) > 2 else []
        for sensor in retired:
            self.changes.append((sensor, None))
        if retired:
            self.changes.append((retired[0], {"sensor": retired[0], "site": "dock", "model": "TH-200",
                                              "firmware": "2.0"}))
        self.start_ms = start_ms

    def _last(self, sensor: str) -> Optional[dict]:
        for key, value in reversed(self.changes):
            if key == sensor:
                return value
        return None

    def messages(self) -> List[Message]:
        """The changes as Kafka records (JSON values; a tombstone's value is None)."""
        return [(key.encode(), None if value is None else json.dumps(value).encode(), self.start_ms + i)
                for i, (key, value) in enumerate(self.changes)]

    def expected(self) -> Dict[str, dict]:
        """The replay: each sensor's last change, decommissioned ones absent."""
        state: Dict[str, dict] = {}
        for key, value in self.changes:
            if value is None:
                state.pop(key, None)
            else:
                state[key] = value
        return state


def land_registry(bootstrap: str, topic: str, lake: Path, consumer_group: str, rows: int,
                  timeout_s: float = 120.0) -> Path:
    """Run an edge application that lands ``topic`` with the Kafka metadata (tombstones included)
    under ``lake``/devices until ``rows`` rows are committed; returns the table root."""
    import pyarrow.parquet as pq

    from stream_edge import Application
    from stream_edge.sinks.core.datalake import DataLakeSink

    root = lake / "devices"
    app = Application(broker_address=bootstrap, consumer_group=consumer_group, auto_offset_reset="earliest",
                      commit_interval=0.5)
    sink = DataLakeSink("devices", storage_url=lake.as_uri(), include_kafka_metadata=True)
    app.dataframe(topic=app.topic(topic)).sink(sink)

    def committed() -> int:
        files = [p for p in root.rglob("*.parquet")
                 if not any(part.startswith(("_", ".")) for part in p.relative_to(root).parts)] if root.exists() else []
        return sum(pq.ParquetFile(p).metadata.num_rows for p in files)

    def watch() -> None:
        deadline = time.monotonic() + timeout_s
        while committed() < rows and time.monotonic() < deadline:
            time.sleep(0.3)
        app.stop()

    threading.Thread(target=watch, name="registry-watch", daemon=True).start()
    app.run()
    landed = committed()
    if landed != rows:
        raise RuntimeError(f"the edge landed {landed} of the {rows} registry changes under {root}")
    return root
