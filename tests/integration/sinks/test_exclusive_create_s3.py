"""Exclusive creates on the S3 server, through a loopback endpoint in front of it that misbehaves
as real networks and stores do:

- the store applies a conditional PUT but its answer is lost (a 503 instead): botocore retries,
  the retry is refused (412, or S3's 409 while a write is in flight), and the key holds this
  writer's own bytes: the create succeeded, and another writer's create of the key still fails;
- a store that ignores ``If-None-Match`` (the endpoint drops the header): the creator refuses it
  before its first entry, with an error naming the store and the header, and so does the
  data-lake sink, which commits nothing there.
"""

from __future__ import annotations

import http.client
import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Dict, Iterator, List, Optional
from urllib.parse import urlparse

import pyarrow.fs as pafs
import pytest

from stream_edge.lake.exclusive_create import PROBE_DIR, ConditionalWriteUnsupportedError, ExclusiveCreator
from stream_edge.lake.registration_ledger import RegistrationLedger
from stream_edge.lake.s3_settings import S3Settings

pytestmark = pytest.mark.integration

_HOP_BY_HOP = {"connection", "keep-alive", "transfer-encoding", "te", "trailer", "upgrade", "proxy-connection"}
_CONFLICT = (b'<?xml version="1.0" encoding="UTF-8"?><Error><Code>ConditionalRequestConflict</Code>'
             b"<Message>A conflicting conditional operation is in progress</Message></Error>")
_SLOW_DOWN = b'<?xml version="1.0" encoding="UTF-8"?><Error><Code>SlowDown</Code><Message>lost</Message></Error>'


class MisbehavingEndpoint(ThreadingHTTPServer):
    """A loopback S3 endpoint forwarding every request to the S3 server, except that it

    - ``ignore_if_none_match``: drops the ``If-None-Match`` header (a store without conditional writes);
    - ``lose_first_answer``: answers the first conditional PUT of a key matching ``target`` with a
      503 after the store applied it (the answer lost on the way back);
    - ``conflict``: turns the store's 412 for such a key into S3's 409 ConditionalRequestConflict.
    """

    daemon_threads = True

    def __init__(self, upstream: str, *, ignore_if_none_match: bool = False, lose_first_answer: bool = False,
                 conflict: bool = False, target: str = "") -> None:
        super().__init__(("127.0.0.1", 0), _Forward)
        self.upstream = urlparse(upstream)
        self.ignore_if_none_match = ignore_if_none_match
        self.lose_first_answer = lose_first_answer
        self.conflict = conflict
        self.target = target
        self.conditional_puts: Dict[str, List[int]] = {}  # key -> the store's statuses
        self.lock = threading.Lock()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}"


class _Forward(BaseHTTPRequestHandler):
    server: MisbehavingEndpoint
    protocol_version = "HTTP/1.1"

    def log_message(self, *args) -> None:  # quiet
        pass

    def _body(self) -> bytes:
        if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
            chunks: List[bytes] = []
            while True:
                size = int(self.rfile.readline().split(b";")[0].strip(), 16)
                if size == 0:
                    while self.rfile.readline() not in (b"\r\n", b"\n", b""):
                        pass
                    return b"".join(chunks)
                chunks.append(self.rfile.read(size))
                self.rfile.readline()
        return self.rfile.read(int(self.headers.get("Content-Length") or 0))

    def _answer(self, status: int, headers: List[tuple], body: bytes) -> None:
        self.send_response(status)
        for name, value in headers:
            if name.lower() not in _HOP_BY_HOP and (name.lower() != "content-length" or self.command == "HEAD"):
                self.send_header(name, value)
        if self.command != "HEAD":
            self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    def _forward(self) -> None:
        srv = self.server
        body = self._body()
        headers = {k: v for k, v in self.headers.items() if k.lower() not in _HOP_BY_HOP}
        conditional = self.command == "PUT" and "If-None-Match" in self.headers
        if conditional and srv.ignore_if_none_match:
            headers.pop("If-None-Match", None)
        headers["Content-Length"] = str(len(body))
        headers.pop("Transfer-Encoding", None)
        connection = http.client.HTTPConnection(str(srv.upstream.hostname), srv.upstream.port, timeout=30)
        connection.request(self.command, self.path, body=body, headers=headers)
        response = connection.getresponse()
        status, answer_headers, answer = response.status, response.getheaders(), response.read()
        connection.close()
        key = urlparse(self.path).path
        if conditional and srv.target and srv.target in key:
            with srv.lock:
                seen = srv.conditional_puts.setdefault(key, [])
                seen.append(status)
                first = len(seen) == 1
            if first and srv.lose_first_answer:
                return self._answer(503, [("Content-Type", "application/xml")], _SLOW_DOWN)
            if status == 412 and srv.conflict:
                return self._answer(409, [("Content-Type", "application/xml")], _CONFLICT)
        self._answer(status, answer_headers, answer)

    do_GET = do_PUT = do_DELETE = do_HEAD = do_POST = _forward


@pytest.fixture()
def endpoint(s3_env, request) -> Iterator[MisbehavingEndpoint]:
    server = MisbehavingEndpoint(s3_env["S3_ENDPOINT"], **request.param)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield server
    server.shutdown()
    server.server_close()


def _filesystem(url: str) -> pafs.S3FileSystem:
    return S3Settings.from_env(endpoint_url=url).filesystem()


@pytest.mark.parametrize("endpoint", [dict(lose_first_answer=True, target="slot"),
                                      dict(lose_first_answer=True, conflict=True, target="slot")],
                         indirect=True, ids=["412", "409"])
def test_a_retried_put_that_had_landed_is_this_writers_own_create(endpoint, s3_bucket, s3_client):
    create = ExclusiveCreator(_filesystem(endpoint.url), local=False)
    create(f"{s3_bucket}/events/_commits/t/0/slot-1.json", b'{"writer": "a"}')
    [(key, statuses)] = endpoint.conditional_puts.items()
    assert statuses[0] == 200 and statuses[1] == 412, "the store applied the first PUT and refused botocore's retry"
    assert s3_client.get_object(Bucket=s3_bucket, Key=key.split("/", 2)[2])["Body"].read() == b'{"writer": "a"}'
    other = ExclusiveCreator(_filesystem(endpoint.url), local=False)
    with pytest.raises(FileExistsError):
        other(f"{s3_bucket}/events/_commits/t/0/slot-1.json", b'{"writer": "b"}')
    assert s3_client.get_object(Bucket=s3_bucket, Key=key.split("/", 2)[2])["Body"].read() == b'{"writer": "a"}'


@pytest.mark.parametrize("endpoint", [dict(lose_first_answer=True, conflict=True, target="batch-")],
                         indirect=True, ids=["409"])
def test_a_ledger_claim_whose_answer_was_lost_is_claimed_once(endpoint, s3_bucket):
    ledger = RegistrationLedger(_filesystem(endpoint.url), f"{s3_bucket}/t", "iceberg-lost", local=False)
    batch = ledger.write_intent(1, ["p=1/a.parquet"], "rest.db.t", writer="edge:t:0")
    assert [(b.number, b.files, b.writer) for b in ledger.batches()] == [(1, batch.files, "edge:t:0")]
    assert [s for statuses in endpoint.conditional_puts.values() for s in statuses][:2] == [200, 412]


@pytest.mark.parametrize("endpoint", [dict(ignore_if_none_match=True)], indirect=True)
def test_a_store_that_ignores_if_none_match_is_refused_before_the_first_entry(endpoint, s3_bucket, s3_client):
    create = ExclusiveCreator(_filesystem(endpoint.url), local=False)
    with pytest.raises(ConditionalWriteUnsupportedError, match=r"127\.0\.0\.1.* ignores If-None-Match"):
        create(f"{s3_bucket}/events/_commits/t/0/slot-1.json", b"entry")
    listed = s3_client.list_objects_v2(Bucket=s3_bucket).get("Contents", [])
    assert listed == [], "neither the entry nor the probe is left behind"

    from stream_edge.sinks.core.datalake import DataLakeSink

    sink = DataLakeSink(table_name="events", storage_url=f"s3://{s3_bucket}", s3_endpoint_url=endpoint.url)
    sink.setup()
    sink.add({"id": 1}, None, 0, [], "t", 0, 0)
    with pytest.raises(Exception) as raised:
        sink.flush("t", 0)
    from stream_edge.sinks.base import SinkBackpressureError

    assert not isinstance(raised.value, SinkBackpressureError), "a permanent fault: no retry makes the store honour it"
    chain: List[Optional[BaseException]] = [raised.value]
    while chain[-1] is not None:
        chain.append(chain[-1].__cause__ or chain[-1].__context__)
    assert any(isinstance(e, ConditionalWriteUnsupportedError) for e in chain), chain
    keys = [o["Key"] for o in s3_client.list_objects_v2(Bucket=s3_bucket).get("Contents", [])]
    assert not [k for k in keys if "/_commits/" in k or k.endswith(".parquet") and "/_tmp/" not in k], keys
    assert not [k for k in keys if PROBE_DIR in k], keys


def test_the_s3_server_honours_if_none_match(s3_env, s3_bucket):
    """The probe passes on the real server, once per creator, and leaves nothing behind."""
    create = ExclusiveCreator(S3Settings.from_env().filesystem(), local=False)
    create(f"{s3_bucket}/d/a.json", json.dumps({"n": 1}).encode())
    create(f"{s3_bucket}/d/b.json", json.dumps({"n": 2}).encode())
    with pytest.raises(FileExistsError):
        create(f"{s3_bucket}/d/a.json", json.dumps({"n": 3}).encode())
    keys = sorted(info.path for info in S3Settings.from_env().filesystem().get_file_info(
        pafs.FileSelector(f"{s3_bucket}/d", recursive=True)) if info.type == pafs.FileType.File)
    assert keys == [f"{s3_bucket}/d/a.json", f"{s3_bucket}/d/b.json"]
