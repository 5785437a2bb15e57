"""Where the lake's S3 store is and how to sign in to it: resolved once, the same for every part.

The data-lake and file sinks, the commit log's conditional PUTs, the registration ledger, the
sink's Iceberg registrar, the Spark jobs' pyarrow and pyiceberg access and their Spark session
all take their S3 settings from :meth:`S3Settings.from_env`, so one environment points the edge
and the jobs at one store. Precedence, first set wins:

==============  ====================================================================================
setting         sources, in order
==============  ====================================================================================
endpoint        the explicit argument (a sink's ``s3_endpoint_url``, the Spark session's
                ``fs.s3a.endpoint``), ``AWS_ENDPOINT_URL_S3``, ``AWS_ENDPOINT_URL``, ``S3_ENDPOINT``
                (the project's older name, still read), else AWS's own endpoints
region          the explicit argument, ``AWS_REGION``, ``AWS_DEFAULT_REGION``, else the SDK's default
keys            the explicit arguments, ``AWS_ACCESS_KEY_ID`` / ``AWS_SECRET_ACCESS_KEY``, else the
                SDK's default chain (profile, instance or pod role)
session token   the explicit argument; ``AWS_SESSION_TOKEN`` only with the access key of the
                environment (a token belongs to the key it was issued with)
==============  ====================================================================================

An endpoint without a scheme is ``https``. A custom endpoint (MinIO, moto, a gateway) is
addressed path-style (``http://host:port/bucket/key``) by every client. Keys and the token never
appear in ``repr``.

Example::

    >>> s3 = S3Settings.from_env({"AWS_ENDPOINT_URL": "http://127.0.0.1:9000", "S3_ENDPOINT": "http://x:1",
    ...                           "AWS_DEFAULT_REGION": "eu-west-1", "AWS_ACCESS_KEY_ID": "k",
    ...                           "AWS_SECRET_ACCESS_KEY": "s"})
    >>> s3
    S3Settings(endpoint_url='http://127.0.0.1:9000', region='eu-west-1')
    >>> s3.pyiceberg_properties()["s3.endpoint"]
    'http://127.0.0.1:9000'
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any, Dict, Mapping, Optional
from urllib.parse import urlparse

__all__ = ("S3Settings", "ENDPOINT_VARIABLES", "REGION_VARIABLES")

#: the environment variables naming the S3 endpoint, the first set one wins
ENDPOINT_VARIABLES = ("AWS_ENDPOINT_URL_S3", "AWS_ENDPOINT_URL", "S3_ENDPOINT")
#: the environment variables naming the region, the first set one wins
REGION_VARIABLES = ("AWS_REGION", "AWS_DEFAULT_REGION")


def _first(env: Mapping[str, str], names: tuple) -> Optional[str]:
    for name in names:
        if env.get(name):
            return env[name]
    return None


def _normalise_endpoint(endpoint: Optional[str]) -> Optional[str]:
    """``host:port`` -> ``https://host:port``; no trailing slash; None for an empty value."""
    if not endpoint:
        return None
    parsed = urlparse(endpoint if "://" in endpoint else f"https://{endpoint}")
    return f"{parsed.scheme or 'https'}://{parsed.netloc}{parsed.path.rstrip('/')}"


@dataclass(frozen=True)
class S3Settings:
    """The endpoint, region and credentials of one S3 (or S3-compatible) store."""

    endpoint_url: Optional[str] = None  # scheme://host[:port]; None: AWS's own endpoints
    region: Optional[str] = None
    access_key: Optional[str] = field(default=None, repr=False)
    secret_key: Optional[str] = field(default=None, repr=False)
    session_token: Optional[str] = field(default=None, repr=False)

    @classmethod
    def from_env(cls, env: Optional[Mapping[str, str]] = None, *, endpoint_url: Optional[str] = None,
                 region: Optional[str] = None, access_key: Optional[str] = None,
                 secret_key: Optional[str] = None, session_token: Optional[str] = None) -> "S3Settings":
        """The settings an explicit argument gives, else the environment's (module docstring)."""
        env = os.environ if env is None else env
        env_key = env.get("AWS_ACCESS_KEY_ID") or None
        key = access_key or env_key
        token = session_token or None
        if token is None and key is not None and key == env_key:
            token = env.get("AWS_SESSION_TOKEN") or None
        return cls(endpoint_url=_normalise_endpoint(endpoint_url or _first(env, ENDPOINT_VARIABLES)),
                   region=region or _first(env, REGION_VARIABLES),
                   access_key=key, secret_key=secret_key or env.get("AWS_SECRET_ACCESS_KEY") or None,
                   session_token=token)

    @classmethod
    def from_filesystem(cls, fs: Any) -> "S3Settings":
        """The settings a pyarrow ``S3FileSystem`` was built with (the sink hands its filesystem on)."""
        # An S3FileSystem pickles as its constructor's keyword arguments: the one public way to
        # read back the endpoint and credentials it was built with.
        built: Dict[str, Any] = fs.__reduce__()[1][0]
        endpoint = built.get("endpoint_override") or None
        if endpoint and "://" not in endpoint:
            endpoint = f"{built.get('scheme') or 'https'}://{endpoint}"
        return cls(endpoint_url=_normalise_endpoint(endpoint), region=built.get("region") or None,
                   access_key=built.get("access_key") or None, secret_key=built.get("secret_key") or None,
                   session_token=built.get("session_token") or None)

    @property
    def has_keys(self) -> bool:
        return bool(self.access_key and self.secret_key)

    def filesystem(self) -> Any:
        """A pyarrow ``S3FileSystem`` for these settings."""
        from pyarrow import fs as pafs

        kwargs: Dict[str, Any] = {}
        if self.has_keys:
            kwargs.update(access_key=self.access_key, secret_key=self.secret_key)
            if self.session_token:
                kwargs["session_token"] = self.session_token
        if self.region:
            kwargs["region"] = self.region
        if self.endpoint_url:
            parsed = urlparse(self.endpoint_url)
            kwargs.update(endpoint_override=parsed.netloc + parsed.path, scheme=parsed.scheme,
                          force_virtual_addressing=False)  # path-style, as self-hosted stores expect
        return pafs.S3FileSystem(**kwargs)

    def boto3_client(self) -> Any:
        """A boto3 S3 client for these settings (pyarrow has no conditional PUT: the commit log
        and the registration ledger create their entries through it)."""
        try:
            import boto3
            from botocore.config import Config
        except ImportError as exc:
            raise ImportError("creating lake entries exclusively on S3 takes a conditional PUT, which needs "
                              "boto3: pip install 'streaming-lakehouse[edge]'") from exc
        kwargs: Dict[str, Any] = {"region_name": self.region}
        if self.endpoint_url:
            kwargs.update(endpoint_url=self.endpoint_url, config=Config(s3={"addressing_style": "path"}))
        if self.has_keys:
            kwargs.update(aws_access_key_id=self.access_key, aws_secret_access_key=self.secret_key,
                          aws_session_token=self.session_token)
        return boto3.client("s3", **kwargs)

    def pyiceberg_properties(self) -> Dict[str, str]:
        """pyiceberg's ``s3.*`` catalog properties for these settings (they hold secrets: never log)."""
        props: Dict[str, str] = {}
        if self.endpoint_url:
            props.update({"s3.endpoint": self.endpoint_url, "s3.force-virtual-addressing": "false"})
        if self.region:
            props["s3.region"] = self.region
        if self.has_keys:
            props.update({"s3.access-key-id": str(self.access_key), "s3.secret-access-key": str(self.secret_key)})
            if self.session_token:
                props["s3.session-token"] = self.session_token
        return props
