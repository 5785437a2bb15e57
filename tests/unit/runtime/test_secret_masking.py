"""Secrets never reach logs: URL passwords holding "/", ":" or "@", secret-named parameters
(``password=``, ``credential=``, JAAS ``password="..."``), and Spark's redaction pattern covering
``spark.sql.catalog.<name>.credential``."""

import io
import logging
import re

import pytest

from lakehouse.session import JOB_DEFAULTS, SPARK_REDACTION_REGEX
from stream_edge.logging import SecretFilter, mask_secrets


@pytest.mark.parametrize("text, secret", [
    ("s3 at http://admin:pa/ss@minio:9000/lake", "pa/ss"),
    ("s3 at http://admin:a/b:c@d@minio:9000/lake failed", "a/b:c@d"),
    ("jdbc:postgresql://db/lake?user=edge&password=s3cr3t&ssl=true", "s3cr3t"),
    ("GET https://catalog/v1/config?warehouse=w&credential=client:id-secret-99", "client:id-secret-99"),
    ('sasl.jaas.config=PlainLoginModule required username="edge" password="p@ss w0rd";', "p@ss w0rd"),
    ("spark.sql.catalog.rest.credential=client:sup3r", "client:sup3r"),
    ("settings: {'sasl.password': 'hunter22'}", "hunter22"),
    ("Password: Tr0ub4dor", "Tr0ub4dor"),
])
def test_passwords_and_secret_parameters_are_masked(text, secret):
    masked = mask_secrets(text)
    assert secret not in masked and "***" in masked


@pytest.mark.parametrize("text", [
    "metrics on http://127.0.0.1:9108/metrics (health: /healthz, /readyz)",
    "see https://example.com:8443/path and http://host:9000/a@b",
    "summary: 12 messages; errors 0; partitions 4; 3 tokens refreshed",
    "loop_age_s: 5, blocked_partition_age_s: None",
])
def test_ordinary_text_is_left_alone(text):
    assert mask_secrets(text) == text


def test_the_filter_masks_arguments_and_tracebacks():
    stream = io.StringIO()
    handler = logging.StreamHandler(stream)
    handler.addFilter(SecretFilter())
    log = logging.getLogger(f"test-masking-{id(stream)}")
    log.handlers, log.propagate = [handler], False
    log.warning("connecting to %s", "kafka://edge:pw/with/slashes@broker:9092")
    try:
        raise RuntimeError("login failed for url=http://u:x/y@h?password=zz-top")
    except RuntimeError:
        log.exception("failed")
    text = stream.getvalue()
    assert "pw/with/slashes" not in text and "x/y" not in text and "zz-top" not in text
    assert "kafka://edge:***@broker:9092" in text


def test_spark_redaction_covers_the_catalog_credential_and_keeps_sparks_defaults():
    assert JOB_DEFAULTS["spark.redaction.regex"] == SPARK_REDACTION_REGEX
    pattern = re.compile(SPARK_REDACTION_REGEX)  # Java's and Python's syntax agree on this one
    for key in ("spark.sql.catalog.rest.credential", "spark.sql.catalog.lake.token",
                "spark.hadoop.fs.s3a.secret.key", "spark.hadoop.fs.s3a.access.key", "spark.ssl.keyPassword"):
        assert pattern.search(key), key
    assert not pattern.search("spark.sql.catalog.rest.uri")


def test_the_spark_defaults_writer_records_the_redaction_pattern_once(tmp_path, monkeypatch):
    import lakehouse.session as session

    monkeypatch.setattr(session, "spark_jars", lambda: ["/jars/a.jar", "/jars/b.jar"])
    conf = tmp_path / "conf" / "spark-defaults.conf"
    conf.parent.mkdir()
    conf.write_text("spark.master local[2]\nspark.redaction.regex (?i)secret\n")
    session.write_spark_defaults(tmp_path)
    session.write_spark_defaults(tmp_path)  # idempotent: one line per setting
    lines = conf.read_text().splitlines()
    assert lines == ["spark.master local[2]", "spark.driver.extraClassPath /jars/a.jar:/jars/b.jar",
                     f"spark.redaction.regex {SPARK_REDACTION_REGEX}"]
