"""A small Schema Registry for the tests: the REST calls confluent-kafka's registry client makes
(register, look up, fetch by id, latest and numbered versions), answered from memory.

No Confluent-compatible registry installs on the build machines (Karapace is not on PyPI,
Apicurio's Quarkus jars are only partly on Maven Central), so the registry serializers are checked
against this one: the same program on quixstreams 3.28.1 and on stream_edge, the same bytes. As a
real registry does, an identical schema (text, type, references) gets the same id under every
subject, and registering it again under a subject returns its existing version.
"""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Dict, List, Optional, Tuple
from urllib.parse import unquote, urlparse

__all__ = ("RegistryServer",)


class RegistryServer:
    """``url`` answers registry calls until :meth:`close`; ``requests`` lists ``(method, path)``."""

    def __init__(self) -> None:
        self.schemas: List[Dict[str, Any]] = []  # id - 1 -> {"schema", "schemaType", "references"}
        self.subjects: Dict[str, List[int]] = {}  # subject -> schema id of each version
        self.requests: List[Tuple[str, str]] = []
        lock = threading.Lock()
        owner = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                return None

            def do_GET(self) -> None:
                self._route("GET", None)

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length", 0))
                self._route("POST", json.loads(self.rfile.read(length) or b"null"))

            def _route(self, method: str, body: Any) -> None:
                path = urlparse(self.path).path
                parts = [unquote(p) for p in path.strip("/").split("/")]
                with lock:
                    owner.requests.append((method, path))
                    code, answer = owner._answer(method, parts, body)
                data = json.dumps(answer).encode()
                self.send_response(code)
                self.send_header("Content-Type", "application/vnd.schemaregistry.v1+json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}"
        threading.Thread(target=self._server.serve_forever, daemon=True).start()

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()

    # -- the registry's rules --------------------------------------------------------------------
    @staticmethod
    def _key(body: Dict[str, Any]) -> Dict[str, Any]:
        return {"schema": body["schema"], "schemaType": body.get("schemaType") or "AVRO",
                "references": body.get("references") or []}

    def _find(self, body: Dict[str, Any]) -> Optional[int]:
        key = self._key(body)
        for index, schema in enumerate(self.schemas):
            if schema == key:
                return index + 1
        return None

    def _version(self, subject: str, schema_id: int, version: int) -> Dict[str, Any]:
        schema = self.schemas[schema_id - 1]
        out = {"subject": subject, "version": version, "id": schema_id, "schema": schema["schema"]}
        if schema["schemaType"] != "AVRO":
            out["schemaType"] = schema["schemaType"]
        if schema["references"]:
            out["references"] = schema["references"]
        return out

    def _answer(self, method: str, parts: List[str], body: Any) -> Tuple[int, Any]:
        missing = (404, {"error_code": 40401, "message": f"Subject '{parts[1] if len(parts) > 1 else ''}' not found."})
        if method == "POST" and len(parts) == 3 and parts[0] == "subjects" and parts[2] == "versions":
            schema_id = self._find(body)
            if schema_id is None:
                self.schemas.append(self._key(body))
                schema_id = len(self.schemas)
            versions = self.subjects.setdefault(parts[1], [])
            if schema_id not in versions:
                versions.append(schema_id)
            return 200, self._version(parts[1], schema_id, versions.index(schema_id) + 1)
        if method == "POST" and len(parts) == 2 and parts[0] == "subjects":
            schema_id = self._find(body)
            versions = self.subjects.get(parts[1])
            if versions is None:
                return missing
            if schema_id is None or schema_id not in versions:
                return 404, {"error_code": 40403, "message": "Schema not found"}
            return 200, self._version(parts[1], schema_id, versions.index(schema_id) + 1)
        if method == "GET" and len(parts) >= 3 and parts[:2] == ["schemas", "ids"]:
            schema_id = int(parts[2])
            if not 0 < schema_id <= len(self.schemas):
                return 404, {"error_code": 40403, "message": "Schema not found"}
            schema = self.schemas[schema_id - 1]
            out = {"schema": schema["schema"]}
            if schema["schemaType"] != "AVRO":
                out["schemaType"] = schema["schemaType"]
            if schema["references"]:
                out["references"] = schema["references"]
            return 200, out
        if method == "GET" and len(parts) == 4 and parts[0] == "subjects" and parts[2] == "versions":
            versions = self.subjects.get(parts[1])
            if not versions:
                return missing
            number = len(versions) if parts[3] == "latest" else int(parts[3])
            if not 0 < number <= len(versions):
                return 404, {"error_code": 40402, "message": "Version not found."}
            return 200, self._version(parts[1], versions[number - 1], number)
        return 404, {"error_code": 404, "message": f"{method} /{'/'.join(parts)} is not served by this registry"}
