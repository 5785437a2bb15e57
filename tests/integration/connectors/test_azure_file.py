"""AzureFileSink / AzureFileDestination and AzureFileSource on Azurite (npm, started by
``ensure_services("azurite")``) and the real Kafka broker."""

from __future__ import annotations

import gzip
import json
import shutil
import signal
import uuid
from typing import Any

import pytest
from connector_testkit import record, stop_program, wait_for_log

from infra.local.azurite_service import Azurite
from stream_edge.sinks.base.batch import SinkBatch
from stream_edge.sinks.community.file import FileSink
from stream_edge.sinks.community.file.azure import AzureContainerNotFoundError, AzureFileSink
from stream_edge.sinks.community.file.destinations.azure import AzureFileDestination
from stream_edge.sources.community.file.azure import AzureFileSource, MissingAzureContainer

pytestmark = pytest.mark.integration

SINK = "stream_edge.sinks.community.file.azure:AzureFileSink"
RECORDS = 3000


@pytest.fixture(scope="session")
def azurite_env(ensure_services) -> dict[str, str]:
    return ensure_services("azurite")


@pytest.fixture()
def container(azurite_env: dict[str, str]) -> Any:
    from azure.storage.blob import BlobServiceClient

    service = BlobServiceClient.from_connection_string(azurite_env["AZURE_STORAGE_CONNECTION_STRING"])
    client = service.create_container(f"edge-{uuid.uuid4().hex[:10]}")
    yield client
    client.delete_container()


def blob_records(client: Any, prefix: str = "") -> list[dict[str, Any]]:
    out = []
    for blob in client.list_blobs(name_starts_with=prefix or None):
        data = client.download_blob(blob.name).readall()
        out.extend(json.loads(line) for line in data.decode().splitlines() if line)
    return out


def test_kill9_mid_stream_then_restart_loses_nothing(make_topic, produce, run_program, azurite_env, container):
    topic = make_topic(partitions=2, prefix="azure-kill9")
    produce(topic, RECORDS)
    spec = {"class": SINK, "kwargs": {"azure_connection_string": azurite_env["AZURE_STORAGE_CONNECTION_STRING"],
                                      "azure_container": container.container_name, "directory": "raw"}}
    group = f"azure-kill9-{uuid.uuid4().hex[:8]}"
    crashed = run_program(topic, group, spec, crash_after=1000)
    assert crashed.returncode == -signal.SIGKILL, crashed.stdout + crashed.stderr
    assert 0 < len(blob_records(container)) < RECORDS
    finished = run_program(topic, group, spec)
    assert finished.returncode == 0, finished.stdout + finished.stderr
    got = blob_records(container, f"raw/{topic}/")
    assert {r["_key"] for r in got} == {f"k{i}" for i in range(RECORDS)}  # nothing lost
    assert {r["_key"]: r["_value"] for r in got}["k7"] == record(7)
    names = [b.name for b in container.list_blobs()]
    assert all(n.startswith(f"raw/{topic}/") and n.endswith(".jsonl") for n in names)


class PinnedAzurite(Azurite):
    """Restarts on its first port and keeps its blobs (``--location``) across restarts."""

    def _port(self, key: str) -> int:
        return self._saved_port(key) or super()._port(key)


@pytest.fixture()
def private_azurite(azurite_env):
    server = PinnedAzurite(name=f"azurite-bp-{uuid.uuid4().hex[:6]}")
    server.start()
    yield server
    server.stop()
    shutil.rmtree(server.home, ignore_errors=True)


def test_server_down_is_backpressure_then_everything_lands(make_topic, produce, run_program, private_azurite,
                                                           tmp_path):
    from azure.storage.blob import ContainerClient

    conn = private_azurite.connection_string()
    ContainerClient.from_connection_string(conn, "bp-test").create_container()
    topic = make_topic(partitions=1, prefix="azure-bp")
    spec = {"class": SINK, "kwargs": {"azure_connection_string": conn, "azure_container": "bp-test",
                                      "format": "json", "retry_total": 0, "connection_timeout": 2},
            "idle_timeout": 45}  # Azurite may take its time to stop
    proc = run_program(topic, f"azure-bp-{uuid.uuid4().hex[:8]}", spec, background=True, log_dir=tmp_path)
    try:
        wait_for_log(proc, "processing topics")  # the container was found (setup) before this line
        private_azurite.stop()  # connection refused from now on
        produce(topic, 400)
        wait_for_log(proc, "FileSink failed to write")
        private_azurite.start()
        assert proc.wait(timeout=180) == 0, proc.log_path.read_text()
    finally:
        stop_program(proc)
    client = ContainerClient.from_connection_string(conn, "bp-test")
    assert {r["_key"] for r in blob_records(client)} == {f"k{i}" for i in range(400)}


def test_bad_value_stops_the_app_naming_record_and_field(make_topic, run_program, azurite_env, container,
                                                         kafka_bootstrap):
    from confluent_kafka import Producer

    topic = make_topic(partitions=1, prefix="azure-bad")
    producer = Producer({"bootstrap.servers": kafka_bootstrap})
    for i in range(4):
        producer.produce(topic, key=f"k{i}".encode(), value=json.dumps(record(i)).encode())
    producer.produce(topic, key=b"k4", value=b"[1, 2]")  # not a dict: no Parquet row
    producer.flush(30)
    spec = {"class": SINK, "kwargs": {"azure_connection_string": azurite_env["AZURE_STORAGE_CONNECTION_STRING"],
                                      "azure_container": container.container_name, "format": "parquet"},
            "commit_every": 4}
    done = run_program(topic, f"azure-bad-{uuid.uuid4().hex[:8]}", spec)
    assert done.returncode != 0
    assert f"ParquetFormat needs dict values; got list at {topic}[0] offset 4" in done.stderr
    assert [b.name for b in container.list_blobs()] == [f"{topic}/0/{0:019d}.parquet"]  # earlier batch landed


def test_destination_and_missing_container(azurite_env, container):
    conn = azurite_env["AZURE_STORAGE_CONNECTION_STRING"]
    sink = FileSink(directory="d", format="json", destination=AzureFileDestination(conn, container.container_name))
    batch = SinkBatch("t", 2)
    batch.append({"a": 1}, b"k", 5, [], 40)
    sink.write(batch)
    assert blob_records(container) == [{"_key": "k", "_value": {"a": 1}, "_timestamp": 5}]
    assert [b.name for b in container.list_blobs()] == [f"d/t/2/{40:019d}.jsonl"]
    with pytest.raises(AzureContainerNotFoundError, match="no-such-container"):
        AzureFileDestination(conn, "no-such-container")
    seen: list[Exception] = []
    AzureFileSink(conn, "no-such-container", on_client_connect_failure=seen.append).start()
    assert len(seen) == 1 and isinstance(seen[0], AzureContainerNotFoundError)


def test_azure_file_source_reads_partition_folders_in_order(azurite_env, container, kafka_bootstrap):
    from stream_edge import Application

    conn = azurite_env["AZURE_STORAGE_CONNECTION_STRING"]
    for partition in (0, 1):
        for start in (0, 3):
            lines = [json.dumps({"_key": f"p{partition}-{i}", "_value": {"i": i, "p": partition},
                                 "_timestamp": 1000 + i}) for i in range(start, start + 3)]
            container.upload_blob(f"src/topic/{partition}/{start:019d}.jsonl.gz",
                                  gzip.compress("\n".join(lines).encode()))
    source = AzureFileSource(conn, container.container_name, "src/topic", compression="gzip",
                             has_partition_folders=True, replay_speed=0, name=f"azsrc-{uuid.uuid4().hex[:6]}")
    app = Application(broker_address=kafka_bootstrap, consumer_group=f"azsrc-{uuid.uuid4().hex[:8]}",
                      auto_offset_reset="earliest")
    sdf = app.dataframe(source=source)
    rows = app.run(sdf, count=12, timeout=30, metadata=True)
    got = {(r["_key"].decode() if isinstance(r["_key"], bytes) else r["_key"]): r for r in rows}
    assert sorted(got) == sorted(f"p{p}-{i}" for p in (0, 1) for i in range(6))
    assert {got["p1-4"]["i"], got["p1-4"]["p"], got["p1-4"]["_timestamp"]} == {4, 1, 1004}
    assert source.file_partition_counter() == 2
    with pytest.raises(MissingAzureContainer, match="no-such"):
        AzureFileSource(conn, "no-such", "x").setup()
