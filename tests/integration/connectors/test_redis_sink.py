"""RedisSink on the real local Redis server and Kafka broker."""

from __future__ import annotations

import json
import signal
import uuid

import pytest
from connector_testkit import record, stop_program, wait_for_log

from infra.local.connector_services import Redis
from stream_edge.sinks.base.batch import SinkBatch
from stream_edge.sinks.community.redis import RedisSink, RedisSinkException

pytestmark = pytest.mark.integration

SINK = "stream_edge.sinks.community.redis:RedisSink"
RECORDS = 3000


@pytest.fixture()
def redis_client(redis_env):
    import redis

    return redis.Redis(host=redis_env["REDIS_HOST"], port=int(redis_env["REDIS_PORT"]), db=0)


def test_kill9_mid_stream_then_restart_writes_every_key_once(make_topic, produce, run_program, redis_env):
    topic = make_topic(partitions=2, prefix="redis-kill9")
    produce(topic, RECORDS)
    group = f"redis-kill9-{uuid.uuid4().hex[:8]}"
    db = 3  # a database of this test alone: the keys are k0..k2999
    sink = {"class": SINK, "kwargs": {"host": redis_env["REDIS_HOST"], "port": int(redis_env["REDIS_PORT"]),
                                      "db": db}}
    import redis

    client = redis.Redis(host=redis_env["REDIS_HOST"], port=int(redis_env["REDIS_PORT"]), db=db)
    client.flushdb()
    crashed = run_program(topic, group, sink, crash_after=1000)
    assert crashed.returncode == -signal.SIGKILL, crashed.stdout + crashed.stderr
    assert 0 < client.dbsize() < RECORDS
    finished = run_program(topic, group, sink)
    assert finished.returncode == 0, finished.stdout + finished.stderr
    keys = sorted(k.decode() for k in client.keys("k*"))
    assert keys == sorted(f"k{i}" for i in range(RECORDS))  # every key, each once
    values = client.mget([f"k{i}" for i in range(RECORDS)])
    assert [json.loads(v) for v in values] == [record(i) for i in range(RECORDS)]
    client.flushdb()


@pytest.fixture()
def private_redis():
    """A Redis server of this test alone (its memory limit is changed to refuse writes)."""
    server = Redis(name=f"redis-bp-{uuid.uuid4().hex[:6]}")
    server.start()
    yield server
    server.stop()
    import shutil

    shutil.rmtree(server.home, ignore_errors=True)


def test_out_of_memory_is_backpressure_then_everything_lands(make_topic, produce, run_program, private_redis,
                                                              tmp_path):
    import redis

    client = redis.Redis(host="127.0.0.1", port=private_redis.port())
    client.config_set("maxmemory", "1")  # every write is refused with OOM from now on
    topic = make_topic(partitions=1, prefix="redis-bp")
    produce(topic, 500)
    sink = {"class": SINK, "kwargs": {"host": "127.0.0.1", "port": private_redis.port(), "db": 0,
                                      "backpressure_retry_seconds": 0.3}, "idle_timeout": 8}
    proc = run_program(topic, f"redis-bp-{uuid.uuid4().hex[:8]}", sink, background=True, log_dir=tmp_path)
    try:
        wait_for_log(proc, "Redis refused the write")
        assert client.dbsize() == 0
        client.config_set("maxmemory", "0")  # the server takes writes again
        assert proc.wait(timeout=180) == 0, proc.log_path.read_text()
    finally:
        stop_program(proc)
    assert client.dbsize() == 500
    assert json.loads(client.get("k499")) == record(499)


def test_bad_key_stops_the_app_naming_record_and_field(make_topic, run_program, redis_env, kafka_bootstrap,
                                                       redis_client):
    from confluent_kafka import Producer

    topic = make_topic(partitions=1, prefix="redis-bad")
    producer = Producer({"bootstrap.servers": kafka_bootstrap})
    for i in range(4):
        producer.produce(topic, key=f"bad-{topic}-{i}".encode(), value=json.dumps(record(i)).encode())
    producer.produce(topic, value=json.dumps(record(4)).encode())  # no key: nothing to SET
    producer.flush(30)
    sink = {"class": SINK, "kwargs": {"host": redis_env["REDIS_HOST"], "port": int(redis_env["REDIS_PORT"]),
                                      "db": 0}, "commit_every": 4}
    done = run_program(topic, f"redis-bad-{uuid.uuid4().hex[:8]}", sink)
    assert done.returncode != 0
    assert f"cannot write the key of topic '{topic}' partition 0 offset 4" in done.stderr
    assert redis_client.exists(*[f"bad-{topic}-{i}" for i in range(4)]) == 4  # earlier checkpoint landed
    redis_client.delete(*[f"bad-{topic}-{i}" for i in range(4)])


def test_serializers_and_unserializable_value(redis_env, redis_client):
    sink = RedisSink(redis_env["REDIS_HOST"], int(redis_env["REDIS_PORT"]), 0,
                     key_serializer=lambda key, value: f"ser:{value['id']}",
                     value_serializer=lambda value: str(value["n"]))
    sink.setup()
    batch = SinkBatch("t", 1)
    for offset, n in enumerate([1, 2, 3]):
        batch.append({"id": n % 2, "n": n}, None, 0, [], offset)
    sink.write(batch)
    assert redis_client.mget("ser:0", "ser:1") == [b"2", b"3"]  # the last record per key wins
    bad = SinkBatch("t", 1)
    bad.append({"id": 1, "n": object()}, b"x", 0, [], 9)
    with pytest.raises(RedisSinkException, match="the value of topic 't' partition 1 offset 9"):
        RedisSink(redis_env["REDIS_HOST"], int(redis_env["REDIS_PORT"]), 0).write(bad)
    redis_client.delete("ser:0", "ser:1")


def test_unreachable_server_is_a_connect_failure_callback():
    from infra.local.services import free_port

    seen = []
    RedisSink("127.0.0.1", free_port(), 0, socket_timeout=1, on_client_connect_failure=seen.append).start()
    assert len(seen) == 1 and "connect" in str(seen[0]).lower()
