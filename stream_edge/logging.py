"""The "stream_edge" logger (configured once by the Application unless loglevel=None).

Two formats: text (the default) and JSON lines (``STREAM_EDGE_LOG_FORMAT=json``, or
``stream-edge run --set log_format=json``), one object per record with ``ts``, ``level``,
``logger``, ``message`` (and ``exception``). Secrets never reach the output: every record goes
through :class:`SecretFilter`, which masks the values of the secret environment variables (S3
keys, catalog tokens, SASL passwords), passwords in URLs (``scheme://user:***@host``, a ``/`` in
the password included) and the values of secret-named parameters (``password=***``,
``?credential=***``, ``sasl.password: ***``, ``token="***"``).
"""

from __future__ import annotations

import json
import logging
import os
import re
import sys
from typing import List, Literal, Optional, Union

__all__ = ("configure_logging", "LogLevel", "LOGGER_NAME", "logger", "SecretFilter", "JsonFormatter", "mask_secrets")

LOGGER_NAME = "stream_edge"
LogLevel = Literal["CRITICAL", "ERROR", "WARNING", "INFO", "DEBUG", "NOTSET"]
logger = logging.getLogger(LOGGER_NAME)

SECRET_ENV_VARS = ("AWS_SECRET_ACCESS_KEY", "AWS_ACCESS_KEY_ID", "AWS_SESSION_TOKEN", "ICEBERG_TOKEN",
                   "ICEBERG_CREDENTIAL", "SASL_PASSWORD", "KAFKA_SASL_PASSWORD", "STREAM_EDGE_SASL_PASSWORD")
# userinfo up to the LAST "@" before the host: a password may hold "/", ":" or "@" when written
# unescaped (RFC 3986 wants them percent-encoded; people paste them as they are); "host:port/..."
# (digits, then a path) is not a password
_URL_PASSWORD = re.compile(r"(?P<head>[a-zA-Z][a-zA-Z0-9+.-]*://[^/\s:@]+):(?!\d+(?:/|\s|$))(?P<password>[^\s]*)@(?=[^\s@]*(?:\s|$))")
# name=value / name: value / name="value" where the name says secret (query strings, JAAS, configs)
_SECRET_PARAM = re.compile(
    r"(?P<head>(?<![A-Za-z0-9])(?:[A-Za-z0-9_.-]*[._-])?(?:password|passwd|pwd|secret|token|credential|credentials"
    r"|secret[_.-]?access[_.-]?key|api[_.-]?key|access[_.-]?token)['\"]?\s*(?:=|:)\s*)"
    r"(?P<value>\"[^\"]*\"|'[^']*'|[^\s&;,\"'}]+)",
    re.IGNORECASE)


def _secret_values() -> List[str]:
    values = [os.environ[name] for name in SECRET_ENV_VARS if len(os.environ.get(name, "")) >= 4]
    return sorted(set(values), key=len, reverse=True)


def mask_secrets(text: str) -> str:
    """``text`` with secret values, URL passwords and secret-named parameters replaced by ``***``.

    >>> mask_secrets("s3 at http://admin:hunter2@minio:9000/lake")
    's3 at http://admin:***@minio:9000/lake'
    >>> mask_secrets("jdbc:postgresql://db/lake?user=edge&password=s3cr3t&ssl=true")
    'jdbc:postgresql://db/lake?user=edge&password=***&ssl=true'
    """
    for value in _secret_values():
        text = text.replace(value, "***")
    text = _URL_PASSWORD.sub(r"\g<head>:***@", text)
    return _SECRET_PARAM.sub(_masked_param, text)


def _masked_param(match: "re.Match[str]") -> str:
    value = match.group("value")
    if value == "***" or value.startswith(("'***", '"***')):
        return match.group(0)
    quote = value[0] if value[:1] in ("'", '"') else ""
    return f"{match.group('head')}{quote}***{quote}"


class SecretFilter(logging.Filter):
    """Masks secrets in a record's message (arguments merged) and exception text."""

    def filter(self, record: logging.LogRecord) -> bool:
        message = record.getMessage()
        masked = mask_secrets(message)
        if masked != message:
            record.msg, record.args = masked, None
        if record.exc_info and not record.exc_text:
            record.exc_text = logging.Formatter().formatException(record.exc_info)
        if record.exc_text:
            record.exc_text = mask_secrets(record.exc_text)
        return True


class JsonFormatter(logging.Formatter):
    """One JSON object per line: ``ts``, ``level``, ``logger``, ``message`` (+ ``exception``)."""

    def format(self, record: logging.LogRecord) -> str:
        doc = {"ts": self.formatTime(record, "%Y-%m-%dT%H:%M:%S") + f".{int(record.msecs):03d}",
               "level": record.levelname, "logger": record.name, "message": record.getMessage()}
        if record.exc_text or record.exc_info:
            doc["exception"] = record.exc_text or self.formatException(record.exc_info)  # type: ignore[arg-type]
        return json.dumps(doc, ensure_ascii=False)


_DEFAULT_HANDLER = logging.StreamHandler(sys.stderr)  # the one handler configure_logging() adds
_DEFAULT_HANDLER.addFilter(SecretFilter())


def configure_logging(loglevel: Optional[Union[int, LogLevel]], name: str = LOGGER_NAME, pid: bool = False,
                      log_format: Optional[str] = None) -> bool:
    """Configure the "stream_edge" logger as Quix Streams 3.28 configures "quixstreams": a stderr
    handler at ``loglevel`` unless the logger has handlers of its own; True if configured.

    ``name`` (and the process id with ``pid``) appears in each text line; calling it again while the
    only handler is its own refreshes the format (True); a handler added by the program is left as it
    is (False). ``log_format``: ``text`` or ``json`` (None: ``STREAM_EDGE_LOG_FORMAT``, default ``text``).

    >>> configure_logging(None)
    False
    """
    if loglevel is None:
        return False
    chosen = log_format or os.environ.get("STREAM_EDGE_LOG_FORMAT")
    if chosen is None and isinstance(_DEFAULT_HANDLER.formatter, JsonFormatter):
        chosen = "json"  # configured as JSON before (stream-edge --set log_format=json): kept
    if (chosen or "text").lower() == "json":
        formatter: logging.Formatter = JsonFormatter()
    else:
        prefix = f"[{os.getpid()}] " if pid else ""
        formatter = logging.Formatter(f"[%(asctime)s] [%(levelname)s] [{name}] {prefix}: %(message)s")
    if logger.handlers:
        if len(logger.handlers) != 1 or logger.handlers[0] is not _DEFAULT_HANDLER:
            return False  # the program's own handlers
        _DEFAULT_HANDLER.setFormatter(formatter)  # e.g. again in a source's process
        return True
    logger.setLevel(loglevel)
    logger.propagate = False
    _DEFAULT_HANDLER.setFormatter(formatter)
    _DEFAULT_HANDLER.setLevel(loglevel)
    logger.addHandler(_DEFAULT_HANDLER)
    return True
