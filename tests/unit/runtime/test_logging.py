"""Logs never carry secrets (environment secrets, URL passwords), in text and JSON formats."""

import io
import json
import logging

from stream_edge.logging import JsonFormatter, SecretFilter


def capture(formatter: logging.Formatter) -> tuple:
    stream = io.StringIO()
    handler = logging.StreamHandler(stream)
    handler.setFormatter(formatter)
    handler.addFilter(SecretFilter())
    log = logging.getLogger(f"test-secrets-{id(stream)}")
    log.handlers, log.propagate = [handler], False
    log.setLevel(logging.INFO)
    return log, stream


def test_secret_values_and_url_passwords_are_masked_in_messages_arguments_and_tracebacks(monkeypatch):
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "wJalrXUtnFEMI-super-secret")
    monkeypatch.setenv("ICEBERG_TOKEN", "tok-123456")
    log, stream = capture(logging.Formatter("%(message)s"))
    log.info("connecting with key %s to %s", "wJalrXUtnFEMI-super-secret", "s3://lake")
    log.info("catalog http://svc:p4ssw0rd@catalog:8181 token tok-123456")
    try:
        raise RuntimeError("auth failed for wJalrXUtnFEMI-super-secret")
    except RuntimeError:
        log.exception("failed")
    text = stream.getvalue()
    assert "wJalrXUtnFEMI" not in text and "p4ssw0rd" not in text and "tok-123456" not in text
    assert "key *** to s3://lake" in text and "http://svc:***@catalog:8181" in text
    assert "RuntimeError: auth failed for ***" in text


def test_json_lines_carry_level_logger_message_and_masked_exception(monkeypatch):
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "another-secret-value")
    log, stream = capture(JsonFormatter())
    log.warning("lag %d on %s", 12, "topic-a")
    try:
        raise ValueError("another-secret-value leaked?")
    except ValueError:
        log.error("boom", exc_info=True)
    first, second = [json.loads(line) for line in stream.getvalue().splitlines() if line.startswith("{")]
    assert first["level"] == "WARNING" and first["message"] == "lag 12 on topic-a" and "ts" in first
    assert second["message"] == "boom" and "ValueError: *** leaked?" in second["exception"]
