"""The local Iceberg REST catalog listens on loopback only (it has no authentication): its
listening socket's address, read from the kernel's socket table, is 127.0.0.1, and it serves."""

from __future__ import annotations

import urllib.request
from pathlib import Path
from urllib.parse import urlparse

import pytest


def listening_addresses(port: int) -> set[str]:
    """The local addresses of the TCP sockets listening on ``port`` (IPv4 and IPv6 tables)."""
    found = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        for line in Path(table).read_text().splitlines()[1:]:
            local, state = line.split()[1], line.split()[3]
            address, hex_port = local.split(":")
            if state != "0A" or int(hex_port, 16) != port:  # 0A: LISTEN
                continue
            raw = bytes.fromhex(address)
            words = [raw[i:i + 4][::-1] for i in range(0, len(raw), 4)]  # little-endian 32-bit words
            if len(words) == 4 and words[0] == words[1] == b"\0" * 4 and words[2] == b"\0\0\xff\xff":
                words = words[3:]  # an IPv4-mapped IPv6 address
            found.add(".".join(str(b) for b in words[0]) if len(words) == 1 else ":".join(w.hex() for w in words))
    return found


@pytest.mark.integration
def test_the_iceberg_rest_catalog_listens_on_loopback_only(services_env) -> None:
    uri = services_env["ICEBERG_REST_URI"]
    with urllib.request.urlopen(uri + "/v1/config", timeout=10) as response:
        assert response.status == 200
    assert listening_addresses(urlparse(uri).port) == {"127.0.0.1"}
