"""DemoFeed: realistic synthetic sensor traffic for the demo, and what it should produce.

Many sensors report every ``interval_ms`` of event time with jitter (the device's clock is the
Kafka record's timestamp, which the edge's window uses); a few records arrive out of
order (swapped with a neighbour, inside the window's grace) and a few arrive late (delivered about
about 75 s after their neighbours, past the grace: the edge's window drops them, the
lake keeps them); some sensors go silent halfway; a few records are malformed (truncated JSON,
a non-numeric temperature, a missing field, a JSON list). Everything is seeded, so a run is
reproducible, and the feed knows what the pipeline must end up with (the expected counts).

Example::

    >>> feed = DemoFeed(records=400, sensors=8, silent=2, start_ms=1_700_000_000_000, seed=1)
    >>> first, second = feed.phases()
    >>> len(first) + len(second) == 400, feed.valid + feed.malformed == 400
    (True, True)
    >>> sorted(feed.silent_sensors)
    ['sensor-07', 'sensor-08']
"""

from __future__ import annotations

import json
import random
from dataclasses import dataclass, field
from typing import List, Tuple

Message = Tuple[bytes, bytes, int]  # (key, value, event time in ms: the Kafka record's timestamp)

# Malformed payloads (a sensor's key, a value the pipeline must quarantine) and why.
_MALFORMED = [
    lambda sensor, ts: f'{{"sensor": "{sensor}", "ts_ms": {ts}, "temperature": '.encode(),  # truncated
    lambda sensor, ts: json.dumps({"sensor": sensor, "ts_ms": ts, "temperature": "n/a", "humidity": 40}).encode(),
    lambda sensor, ts: json.dumps({"sensor": sensor, "temperature": 21.5, "humidity": 40}).encode(),  # no ts_ms
    lambda sensor, ts: json.dumps([sensor, ts, 21.5]).encode(),  # not an object
]


@dataclass
class DemoFeed:
    """The demo's traffic: ``phases()`` gives what is sent before and while the edge runs."""

    records: int = 4000
    sensors: int = 24
    silent: int = 3
    start_ms: int = 0
    seed: int = 1
    interval_ms: int = 2000
    malformed_every: int = 200  # one record in this many is malformed
    late_every: int = 150  # one record in this many is delivered late
    late_by: int = 0  # positions a late record is pushed back (default: ~90 s of traffic)
    silent_sensors: List[str] = field(default_factory=list)
    valid: int = 0
    malformed: int = 0
    late: int = 0

    def __post_init__(self) -> None:
        if self.records < 2 * self.sensors:
            raise ValueError(f"records ({self.records}) must be at least twice the sensors ({self.sensors})")
        if not 0 <= self.silent < self.sensors:
            raise ValueError(f"silent ({self.silent}) must be between 0 and sensors - 1 ({self.sensors - 1})")
        self.names = [f"sensor-{i + 1:02d}" for i in range(self.sensors)]
        self.silent_sensors = self.names[self.sensors - self.silent:]
        # ~75 s of traffic: past the window (1 min) and its grace, so the edge's window drops it
        self.late_by = self.late_by or max(1, 75_000 // self.interval_ms * (self.sensors - self.silent))
        self._first, self._second = self._generate()

    def phases(self) -> Tuple[List[Message], List[Message]]:
        """(sent before the edge starts, sent while it runs); silent sensors only in the first."""
        return self._first, self._second

    def _generate(self) -> Tuple[List[Message], List[Message]]:
        rng = random.Random(self.seed)
        half = self.records // 2
        first = self._readings(rng, self.names, half, self.start_ms)
        active = [n for n in self.names if n not in self.silent_sensors]
        resume_ms = self.start_ms + (half // len(self.names) + 1) * self.interval_ms
        second = self._readings(rng, active, self.records - half, resume_ms)
        return self._disorder(rng, first), self._disorder(rng, second)

    def _readings(self, rng: random.Random, sensors: List[str], count: int, start_ms: int) -> List[Message]:
        out: List[Message] = []
        for i in range(count):
            sensor = sensors[i % len(sensors)]
            # Jitter stays inside the reporting interval: each sensor's timestamps are distinct.
            ts = start_ms + (i // len(sensors)) * self.interval_ms + rng.randint(0, self.interval_ms // 2)
            if rng.randrange(self.malformed_every) == 0:
                out.append((sensor.encode(), _MALFORMED[rng.randrange(len(_MALFORMED))](sensor, ts), ts))
                self.malformed += 1
                continue
            value = {"sensor": sensor, "ts_ms": ts, "temperature": round(20 + rng.gauss(0, 2), 2),
                     "humidity": round(rng.uniform(30, 60), 1)}
            out.append((sensor.encode(), json.dumps(value).encode(), ts))
            self.valid += 1
        return out

    def _disorder(self, rng: random.Random, messages: List[Message]) -> List[Message]:
        """Swap a few neighbours (out of order, inside the grace) and push a few far back (late)."""
        out = list(messages)
        for i in range(len(out) - 1):
            if rng.randrange(25) == 0:
                out[i], out[i + 1] = out[i + 1], out[i]
        room = len(out) - self.late_by  # a late record still lands inside this phase
        count = max(1, len(out) // self.late_every) if room > 0 else 0
        late = sorted(rng.sample(range(room), min(count, room))) if count else []
        for i in reversed(late):
            out.insert(i + self.late_by, out.pop(i))
        self.late += len(late)
        return out


def sensors_reported(events: List[dict]) -> dict:
    """``{sensor: times reported}`` from the silence events of the side topic."""
    counts: dict = {}
    for event in events:
        counts[event.get("stream")] = counts.get(event.get("stream"), 0) + 1
    return counts
