"""Fixtures of the connector sink tests: the real servers (started through ``ensure_services``),
a producer of numbered records, and a runner of ``connector_program.py`` as a subprocess."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import uuid
from pathlib import Path
from typing import Any, Callable

import pytest

from connector_testkit import TS0, record

PROGRAM = Path(__file__).with_name("connector_program.py")
REPO = Path(__file__).resolve().parents[3]


@pytest.fixture()
def produce(kafka_bootstrap: str) -> Callable[..., None]:
    """``produce(topic, n, start=0)``: records ``record(i)`` with key ``k<i>``, timestamp TS0 + i."""
    from confluent_kafka import Producer

    def run(topic: str, n: int, start: int = 0) -> None:
        producer = Producer({"bootstrap.servers": kafka_bootstrap, "linger.ms": 5})
        for i in range(start, start + n):
            producer.produce(topic, key=f"k{i}".encode(), value=json.dumps(record(i)).encode(),
                             timestamp=TS0 + i)
        assert producer.flush(30) == 0

    return run


@pytest.fixture()
def run_program(kafka_bootstrap: str) -> Callable[..., Any]:
    """``run_program(topic, group, sink_spec, crash_after=0, background=False)``.

    Returns the CompletedProcess, or with ``background`` a Popen whose output goes to its
    ``log_path`` (in ``log_dir``).
    """

    def run(topic: str, group: str, spec: dict[str, Any], crash_after: int = 0, background: bool = False,
            log_dir: Path | None = None) -> Any:
        argv = [sys.executable, str(PROGRAM), kafka_bootstrap, topic, group, json.dumps(spec)]
        if crash_after:
            argv.append(str(crash_after))
        env = dict(os.environ, PYTHONPATH=str(REPO))
        if background:
            assert log_dir is not None
            log_path = log_dir / f"program-{uuid.uuid4().hex[:6]}.log"
            with open(log_path, "w") as out:
                proc = subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT, env=env, cwd=REPO)
            proc.log_path = log_path  # type: ignore[attr-defined]
            return proc
        return subprocess.run(argv, capture_output=True, text=True, timeout=240, env=env, cwd=REPO)

    return run


@pytest.fixture(scope="session")
def postgres_env(ensure_services) -> dict[str, str]:
    return ensure_services("postgres")


@pytest.fixture()
def pg_kwargs(postgres_env: dict[str, str]) -> dict[str, Any]:
    """Connection arguments for the sink and for psycopg (a fresh schema per test)."""
    return {"host": postgres_env["POSTGRES_HOST"], "port": int(postgres_env["POSTGRES_PORT"]),
            "dbname": postgres_env["POSTGRES_DB"], "user": postgres_env["POSTGRES_USER"], "password": ""}


@pytest.fixture()
def pg_schema(pg_kwargs: dict[str, Any]):
    import psycopg

    name = f"t_{uuid.uuid4().hex[:10]}"
    yield name
    with psycopg.connect(**pg_kwargs, autocommit=True) as conn:
        conn.execute(f'DROP SCHEMA IF EXISTS "{name}" CASCADE')


@pytest.fixture()
def pg_query(pg_kwargs: dict[str, Any]) -> Callable[..., list]:
    import psycopg

    def query(sql: str, params: Any = None) -> list:
        with psycopg.connect(**pg_kwargs, autocommit=True) as conn:
            return conn.execute(sql, params).fetchall()

    return query


@pytest.fixture(scope="session")
def redis_env(ensure_services) -> dict[str, str]:
    return ensure_services("redis")


@pytest.fixture(scope="session")
def mqtt_env(ensure_services) -> dict[str, str]:
    return ensure_services("mosquitto")

