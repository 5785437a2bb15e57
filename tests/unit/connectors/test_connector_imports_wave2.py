"""The wave-2 connector modules import without their client libraries; constructing a connector
then raises ImportError naming the extra to install."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[3]

PROGRAM = r'''
import builtins
real = builtins.__import__
def without_clients(name, globals=None, locals=None, fromlist=(), level=0):
    if level == 0 and name.split(".")[0] in ("boto3", "botocore", "azure", "pyiceberg", "influxdb_client_3"):  # not ".azure"
        raise ImportError(f"No module named {name!r}")
    return real(name, globals, locals, fromlist, level)
builtins.__import__ = without_clients

from stream_edge.sinks.community.kinesis import KinesisSink
from stream_edge.sources.community.kinesis import KinesisSource
from stream_edge.sinks.community.iceberg import IcebergSink, RESTIcebergConfig
from stream_edge.sinks.community.file.azure import AzureFileSink
from stream_edge.sinks.community.file.destinations.azure import AzureFileDestination
from stream_edge.sources.community.file.azure import AzureFileSource
from stream_edge.sinks.community.influxdb3 import InfluxDB3Sink

for make in (lambda: KinesisSink("s"), lambda: KinesisSource("s"),
             lambda: IcebergSink("a.b", RESTIcebergConfig("http://x"), "rest"),
             lambda: AzureFileSink("c", "x"), lambda: AzureFileDestination("c", "x"),
             lambda: AzureFileSource("c", "x", "p"),
             lambda: InfluxDB3Sink("t", "http://127.0.0.1:1", "o", "db", "m")):
    try:
        make()
    except ImportError as exc:
        print(exc)
'''


def test_modules_import_without_client_libraries_and_name_the_extra():
    done = subprocess.run([sys.executable, "-c", PROGRAM], capture_output=True, text=True, cwd=REPO, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == [
        "KinesisSink needs the 'boto3' package: pip install streaming-lakehouse[edge-kinesis]",
        "KinesisSource needs the 'boto3' package: pip install streaming-lakehouse[edge-kinesis]",
        "IcebergSink needs the 'pyiceberg' package: pip install streaming-lakehouse[edge-iceberg]",
        "Azure Blob Storage needs the 'azure-storage-blob' package: pip install streaming-lakehouse[edge-azure]",
        "Azure Blob Storage needs the 'azure-storage-blob' package: pip install streaming-lakehouse[edge-azure]",
        "AzureFileSource needs the 'azure-storage-blob' package: pip install streaming-lakehouse[edge-azure]",
        "InfluxDB3Sink needs the 'influxdb3-python' package: pip install streaming-lakehouse[edge-influxdb3]",
    ]
