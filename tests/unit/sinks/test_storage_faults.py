"""The storage fault classifier (pure) and the backoff state: transient faults back off and log
once per streak, permanent ones name what failed."""

from __future__ import annotations

import errno
import logging
import socket

import pytest
from botocore.exceptions import ClientError, EndpointConnectionError, ReadTimeoutError
from pyarrow import fs as pafs

from stream_edge.sinks.storage_faults import (PERMANENT, TRANSIENT, PermanentStorageError, StorageBackoff,
                                              classify)


def client_error(code: str, status: int) -> ClientError:
    return ClientError({"Error": {"Code": code, "Message": code},
                        "ResponseMetadata": {"HTTPStatusCode": status}}, "PutObject")


class HTTPError(Exception):
    def __init__(self, status_code: int) -> None:
        super().__init__(f"HTTP {status_code}")
        self.status_code = status_code


@pytest.mark.parametrize("exc", [
    ConnectionResetError(errno.ECONNRESET, "Connection reset by peer"),
    OSError(errno.ETIMEDOUT, "Connection timed out"),
    OSError(errno.ENOSPC, "No space left on device"),
    socket.timeout("timed out"),
    OSError("When uploading part for key 'k' in bucket 'b': AWS Error SLOW_DOWN during UploadPart operation: "
            "Please reduce your request rate."),
    OSError("When reading information for key 'k': AWS Error NETWORK_CONNECTION during HeadObject operation: "
            "curlCode: 7, Couldn't connect to server"),
    OSError("AWS Error UNKNOWN (HTTP status 503) during PutObject operation: Service Unavailable"),
    OSError("something odd the classifier has never seen"),
    client_error("SlowDown", 503),
    client_error("ThrottlingException", 400),
    client_error("InternalError", 500),
    client_error("SomethingNew", 502),
    EndpointConnectionError(endpoint_url="http://127.0.0.1:1"),
    ReadTimeoutError(endpoint_url="http://127.0.0.1:1"),
    HTTPError(429),
    HTTPError(503),
])
def test_transient(exc):
    assert classify(exc) == TRANSIENT


@pytest.mark.parametrize("exc", [
    OSError(errno.ENAMETOOLONG, "File name too long"),
    PermissionError(errno.EACCES, "Permission denied"),
    OSError(errno.EROFS, "Read-only file system"),
    OSError("[Errno 36] Failed to open local file '/lake/x'. Detail: [errno 36] File name too long"),
    OSError("When uploading part for key 'k' in bucket 'b': AWS Error ACCESS_DENIED during PutObject operation: "
            "Access Denied"),
    OSError("AWS Error UNKNOWN (HTTP status 400) during PutObject operation: KeyTooLongError"),
    client_error("AccessDenied", 403),
    client_error("KeyTooLongError", 400),
    client_error("InvalidAccessKeyId", 403),
    client_error("NoSuchBucket", 404),
    client_error("SomethingNew", 409),
    HTTPError(403),
    ValueError("not a storage error at all"),
])
def test_permanent(exc):
    assert classify(exc) == PERMANENT


def test_the_cause_chain_is_read():
    try:
        try:
            raise OSError(errno.ENAMETOOLONG, "File name too long")
        except OSError as inner:
            raise RuntimeError("writing the commit failed") from inner
    except RuntimeError as outer:
        assert classify(outer) == PERMANENT


def test_a_real_name_too_long_from_the_local_filesystem(tmp_path):
    with pytest.raises(OSError) as info:
        pafs.LocalFileSystem().open_output_stream(str(tmp_path / ("v" * 300)))
    assert classify(info.value) == PERMANENT


def test_backoff_doubles_up_to_the_cap_and_logs_once_per_streak(caplog):
    backoff = StorageBackoff("sink 't'", base_seconds=1.0, cap_seconds=8.0)
    error = OSError(errno.ECONNRESET, "reset")
    with caplog.at_level(logging.INFO, logger="stream_edge.sinks.storage_faults"):
        delays = [backoff.transient(("t", 0), "writing", error) for _ in range(6)]
        assert backoff.failing == 1
        backoff.succeeded(("t", 0))
        backoff.succeeded(("t", 0))  # nothing to end: no line
        assert backoff.transient(("t", 0), "writing", error) == 1.0  # a new streak starts over
    assert delays == [1.0, 2.0, 4.0, 8.0, 8.0, 8.0]
    lines = [(r.levelname, r.getMessage()) for r in caplog.records]
    assert [level for level, _ in lines] == ["WARNING", "INFO", "WARNING"]
    assert "after 6 failed attempt(s)" in lines[1][1]
    assert backoff.stats() == {"storage_faults_transient": 7, "storage_faults_permanent": 0}


def test_a_permanent_fault_names_what_failed():
    backoff = StorageBackoff("DataLakeSink table 'readings'")
    cause = OSError(errno.ENAMETOOLONG, "File name too long", "/lake/readings/device=vvv/part-1.parquet")
    error = backoff.permanent("writing the lake commit of sensors[1]", cause)
    assert isinstance(error, PermanentStorageError) and error.__cause__ is cause
    text = str(error)
    assert "'readings'" in text and "sensors[1]" in text and "part-1.parquet" in text
    assert backoff.stats()["storage_faults_permanent"] == 1
