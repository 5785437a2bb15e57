"""One S3 store for one environment: every consumer of S3 settings (the sinks' filesystems, the
commit log's and the ledger's conditional PUT client, the sink's Iceberg registrar, the jobs'
lake files, pyiceberg catalog and Spark session) resolves the same endpoint, region and session
token, whichever variable sets them, with the documented precedence."""

from __future__ import annotations

import os
import types
from typing import Any, Dict

import pytest

from stream_edge.lake.s3_settings import ENDPOINT_VARIABLES, REGION_VARIABLES, S3Settings

VARIABLES = (*ENDPOINT_VARIABLES, *REGION_VARIABLES, "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY",
             "AWS_SESSION_TOKEN")


def _every_consumer() -> Dict[str, S3Settings]:
    """What each consumer resolves from the current environment, as S3Settings to compare."""
    from lakehouse.iceberg_catalogs import catalog_properties
    from lakehouse.lake_files import LakeLocation
    from lakehouse.register_ledger import open_ledger
    from infra.local.spark_connect import server_conf
    from lakehouse.session import SparkSettings
    from stream_edge.lake.exclusive_create import ExclusiveCreator
    from stream_edge.sinks.core.datalake.catalog import IcebergRegistrar
    from stream_edge.sinks.storage import resolve_storage, s3_filesystem

    def from_pyiceberg(props: Dict[str, str]) -> S3Settings:
        return S3Settings(endpoint_url=props.get("s3.endpoint"), region=props.get("s3.region"),
                          access_key=props.get("s3.access-key-id"), secret_key=props.get("s3.secret-access-key"),
                          session_token=props.get("s3.session-token"))

    sink_fs, _ = resolve_storage("s3://lake/edge")
    creator = ExclusiveCreator(sink_fs, local=False)
    client = S3Settings.from_filesystem(creator.fs).boto3_client()
    credentials = client._request_signer._credentials  # noqa: SLF001 - what the client signs with
    registrar = IcebergRegistrar("http://catalog", "db", "t")
    registrar_on_sink = IcebergRegistrar("http://catalog", "db", "t")
    registrar_on_sink.attach_lake(sink_fs, "lake/edge/t", local=False)
    spark = SparkSettings.from_env()
    session: Any = types.SimpleNamespace(conf=dict(spark.conf()))  # the session's conf, as the job reads it
    return {
        "data-lake sink": S3Settings.from_filesystem(sink_fs),
        "file sink / source": S3Settings.from_filesystem(s3_filesystem()),
        "commit log PUT client": S3Settings(endpoint_url=client.meta.endpoint_url, region=client.meta.region_name,
                                            access_key=credentials.access_key, secret_key=credentials.secret_key,
                                            session_token=credentials.token),
        "sink registrar (no lake)": from_pyiceberg(registrar._catalog_properties()),
        "sink registrar": from_pyiceberg(registrar_on_sink._catalog_properties()),
        "job lake files": S3Settings.from_filesystem(LakeLocation.parse("s3://lake/edge/t").filesystem()[0]),
        "job ledger": S3Settings.from_filesystem(open_ledger(LakeLocation.parse("s3://lake/edge/t"), "k").fs),
        "job pyiceberg catalog": from_pyiceberg(catalog_properties(session, spark.catalog_name)),
        "job Spark session": S3Settings(endpoint_url=spark.s3_endpoint, region=None,  # S3A finds it itself
                                        access_key=spark.s3_access_key, secret_key=spark.s3_secret_key,
                                        session_token=spark.s3_session_token),
        "Spark Connect server": from_s3a(server_conf("/w", dict(os.environ))),
    }


def from_s3a(conf: Dict[str, str]) -> S3Settings:
    """The store a Spark configuration's S3A settings name (S3A finds the region itself)."""
    return S3Settings(endpoint_url=conf.get("spark.hadoop.fs.s3a.endpoint"),
                      access_key=conf.get("spark.hadoop.fs.s3a.access.key"),
                      secret_key=conf.get("spark.hadoop.fs.s3a.secret.key"),
                      session_token=conf.get("spark.hadoop.fs.s3a.session.token"))


S3A_CONSUMERS = {"job Spark session", "Spark Connect server"}  # no region setting: S3A finds it


@pytest.fixture()
def env(monkeypatch):
    for name in VARIABLES:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "AKID")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "secret")
    return monkeypatch


@pytest.mark.parametrize("variables, endpoint", [
    ({"AWS_ENDPOINT_URL_S3": "http://s3-only:1"}, "http://s3-only:1"),
    ({"AWS_ENDPOINT_URL": "http://all-services:2"}, "http://all-services:2"),
    ({"S3_ENDPOINT": "http://project:3"}, "http://project:3"),
    ({"S3_ENDPOINT": "http://project:3", "AWS_ENDPOINT_URL": "http://all-services:2"}, "http://all-services:2"),
    ({"S3_ENDPOINT": "http://project:3", "AWS_ENDPOINT_URL": "http://all-services:2",
      "AWS_ENDPOINT_URL_S3": "http://s3-only:1"}, "http://s3-only:1"),
    ({"AWS_ENDPOINT_URL": "minio.internal:9000"}, "https://minio.internal:9000"),
])
def test_every_consumer_resolves_the_endpoint_the_precedence_names(env, variables, endpoint):
    for name, value in variables.items():
        env.setenv(name, value)
    env.setenv("AWS_REGION", "eu-west-1")
    resolved = _every_consumer()
    assert {name: s.endpoint_url for name, s in resolved.items()} == dict.fromkeys(resolved, endpoint)
    assert {name: s.region for name, s in resolved.items()
            if name not in S3A_CONSUMERS} == dict.fromkeys(set(resolved) - S3A_CONSUMERS, "eu-west-1")
    assert {(s.access_key, s.secret_key) for s in resolved.values()} == {("AKID", "secret")}


@pytest.mark.parametrize("variables, region", [
    ({"AWS_REGION": "eu-west-1"}, "eu-west-1"),
    ({"AWS_DEFAULT_REGION": "ap-south-1"}, "ap-south-1"),
    ({"AWS_REGION": "eu-west-1", "AWS_DEFAULT_REGION": "ap-south-1"}, "eu-west-1"),
])
def test_every_consumer_resolves_the_region_and_the_session_token(env, variables, region):
    for name, value in variables.items():
        env.setenv(name, value)
    env.setenv("AWS_ENDPOINT_URL", "http://store:9000")
    env.setenv("AWS_SESSION_TOKEN", "token-1")
    resolved = _every_consumer()
    regions = {name: s.region for name, s in resolved.items() if name not in S3A_CONSUMERS}
    assert regions == dict.fromkeys(regions, region)
    assert {name: s.session_token for name, s in resolved.items()} == dict.fromkeys(resolved, "token-1")
    spark_conf = __import__("lakehouse.session", fromlist=["SparkSettings"]).SparkSettings.from_env().conf()
    assert spark_conf["spark.hadoop.fs.s3a.session.token"] == "token-1"


def test_explicit_arguments_win_and_a_token_stays_with_its_key(env):
    env.setenv("AWS_ENDPOINT_URL_S3", "http://env:1")
    env.setenv("AWS_SESSION_TOKEN", "env-token")
    explicit = S3Settings.from_env(endpoint_url="http://explicit:2/", region="us-west-2")
    assert (explicit.endpoint_url, explicit.region, explicit.session_token) == ("http://explicit:2", "us-west-2",
                                                                               "env-token")
    other_key = S3Settings.from_env(access_key="OTHER", secret_key="other-secret")
    assert (other_key.access_key, other_key.session_token) == ("OTHER", None), "the env token is AKID's"
    assert not {"AKID", "secret", "env-token"} & set(repr(explicit).replace("'", " ").split())
