"""Deterministic sensor records shared by the sink benchmarks (stdlib only: it also runs in the
quixstreams venv). ~90 B of JSON per record, 10,000 keys, timestamps spanning a few hours."""

from __future__ import annotations

import json

KEYS = 10_000
BASE_TS = 1_745_280_000_000  # 2025-04-22 00:00 UTC
LEVELS = ("info", "info", "warn", "info", "debug", "info", "error", "info", "info", "info")


def record(i: int) -> tuple:
    """``(key bytes, value dict, kafka timestamp ms)`` of record ``i``."""
    key = f"sensor-{i % KEYS:05d}".encode()
    ts = BASE_TS + i * 10  # 1M records span ~2.8 h -> 3 hour partitions
    value = {"sensor": i % KEYS, "seq": i, "ts_ms": ts, "temp": round(15 + (i * 7919 % 2000) / 100, 2),
             "hum": round(30 + (i * 104729 % 5000) / 100, 2), "level": LEVELS[i % len(LEVELS)]}
    return key, value, ts


def records(n: int) -> list:
    return [record(i) for i in range(n)]


def json_bytes(recs: list) -> int:
    """Size of the records as JSON (what the consumer would have deserialized)."""
    return sum(len(json.dumps(value, separators=(",", ":"))) for _, value, _ in recs)
