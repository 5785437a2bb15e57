"""Resolve a storage URL to a pyarrow filesystem: local paths and any S3 endpoint.

``file:///abs/path`` or a plain path -> ``LocalFileSystem``; ``s3://bucket[/prefix]`` ->
``S3FileSystem`` with the settings :meth:`stream_edge.lake.s3_settings.S3Settings.from_env`
resolves (the arguments, then ``AWS_ENDPOINT_URL_S3``, ``AWS_ENDPOINT_URL``, ``S3_ENDPOINT`` for
the endpoint, ``AWS_REGION``/``AWS_DEFAULT_REGION``, the standard AWS keys and session token): the
same store the registrar and the Spark jobs resolve. Any other scheme pyarrow knows (``gs://``,
``hdfs://``...) goes through ``FileSystem.from_uri``.

Example::

    fs, base = resolve_storage("s3://lake/edge", endpoint_url="http://127.0.0.1:9000")
    fs.create_dir(base + "/t")
"""

from __future__ import annotations

import os
from typing import Optional, Tuple
from urllib.parse import unquote, urlparse

from stream_edge.lake.s3_settings import S3Settings

__all__ = ("resolve_storage", "s3_filesystem", "display_url")


def s3_filesystem(
    endpoint_url: Optional[str] = None,
    region: Optional[str] = None,
    access_key: Optional[str] = None,
    secret_key: Optional[str] = None,
    session_token: Optional[str] = None,
):
    """A pyarrow ``S3FileSystem``; arguments default to the environment (:class:`S3Settings`)."""
    return S3Settings.from_env(endpoint_url=endpoint_url, region=region, access_key=access_key,
                               secret_key=secret_key, session_token=session_token).filesystem()


def resolve_storage(url: str, *, endpoint_url: Optional[str] = None, region: Optional[str] = None,
                    access_key: Optional[str] = None, secret_key: Optional[str] = None,
                    session_token: Optional[str] = None) -> Tuple[object, str]:
    """Return ``(pyarrow filesystem, base path inside it)`` for a storage URL."""
    from pyarrow import fs as pafs

    if not url:
        raise ValueError("storage URL must not be empty")
    parsed = urlparse(url)
    scheme = parsed.scheme.lower()
    if scheme in ("", "file") or (len(scheme) == 1 and os.name == "nt"):
        path = unquote(parsed.path) if scheme == "file" else url
        if scheme == "file" and parsed.netloc not in ("", "localhost"):
            raise ValueError(f"file URLs must be absolute local paths (file:///...), got {url!r}")
        return pafs.LocalFileSystem(), os.path.abspath(path).rstrip("/") or "/"
    if scheme in ("s3", "s3a"):
        if not parsed.netloc:
            raise ValueError(f"S3 URL needs a bucket: {url!r}")
        filesystem = s3_filesystem(endpoint_url, region, access_key, secret_key, session_token)
        return filesystem, f"{parsed.netloc}{parsed.path}".rstrip("/")
    filesystem, path = pafs.FileSystem.from_uri(url)
    return filesystem, path.rstrip("/")


def display_url(url: str) -> str:
    """A URL safe to log: user info (``user:secret@``) removed."""
    parsed = urlparse(url)
    if parsed.username or parsed.password:
        netloc = parsed.hostname or ""
        if parsed.port:
            netloc += f":{parsed.port}"
        return parsed._replace(netloc=netloc).geturl()
    return url
