"""The error model: a record's own problem, an outage, or a permanent fault; one answer for every stage.

Every stage (deserialization, processing, a sink's ``add()`` and write, the producer, the
dead-letter topic) asks :func:`error_kind` what a failure is, and acts on the answer
(``docs/operations.md``, "The error model"):

- :data:`RECORD`: the record's own problem (its bytes cannot be read, the user's code raised for
  its content, a sink's declared record error such as ``RecordTypeError``). The error callback
  decides; with a dead-letter topic the record goes there.
- :data:`OUTAGE`: a service refused or did not answer: an ``OSError`` (``ConnectionError``,
  ``TimeoutError``, a socket or HTTP client error), an HTTP 5xx / 408 / 429, a 401 / 403 (the
  service refuses our credentials), an :class:`OutageError` (Schema Registry, catalog, MQTT
  broker), a sink's ``SinkBackpressureError``. No record's fault: the partition pauses and the
  record is retried with exponential backoff, never dead-lettered by default.
- :data:`PERMANENT`: a fault of the set-up that no retry and no record explains: an ``OSError``
  whose errno says "never" (``EACCES``, ``EROFS``, ``ENAMETOOLONG``, ``EOPNOTSUPP``, ``ENOSYS``,
  ``EMLINK``...), missing cloud credentials (botocore's ``NoCredentialsError``), a
  ``PermanentStorageError``. The application stops with it (never dead-lettered).

Example::

    >>> is_outage(ConnectionRefusedError(111, "Connection refused"))
    True
    >>> is_outage(ZeroDivisionError("division by zero"))
    False
    >>> error_kind(OSError(95, "Operation not supported"))
    'permanent'
"""

from __future__ import annotations

import errno
from typing import Iterator, Optional

__all__ = ("RECORD", "OUTAGE", "PERMANENT", "OutageError", "OutageTimeoutError", "PermanentError",
           "error_kind", "is_outage", "service_of", "PERMANENT_ERRNOS", "http_status")

RECORD = "record"
OUTAGE = "outage"
PERMANENT = "permanent"

# errnos no retry fixes: the set-up is wrong (a path, a permission, a filesystem without hard links
# or without an operation: s3fs, gcsfuse, blobfuse answer EOPNOTSUPP / ENOSYS / EMLINK)
PERMANENT_ERRNOS = frozenset(getattr(errno, name) for name in (
    "ENAMETOOLONG", "EACCES", "EPERM", "EROFS", "EINVAL", "ENOTDIR", "EISDIR", "ELOOP", "EFBIG", "EBADF",
    "EEXIST", "ENOTEMPTY", "EXDEV", "EOPNOTSUPP", "ENOTSUP", "ENOSYS", "EMLINK", "ENOTTY", "ENODEV", "ENXIO",
    "EAFNOSUPPORT", "EPROTONOSUPPORT", "ESOCKTNOSUPPORT") if hasattr(errno, name))

# botocore's and google-auth's "no credentials" errors: configuration, not an outage
_PERMANENT_CLASS_NAMES = frozenset(("NoCredentialsError", "PartialCredentialsError", "NoRegionError",
                                    "DefaultCredentialsError", "InvalidConfigError", "ProfileNotFound"))
# pyiceberg's REST answers (it keeps no status): a server error, the service down, credentials refused,
# throttling (429), commit conflicts that outlived its attempts
_OUTAGE_CLASS_NAMES = frozenset(("ServerError", "ServiceUnavailableError", "UnauthorizedError", "ForbiddenError",
                                 "AuthorizationExpiredError", "TooManyRequestsError", "CommitFailedException",
                                 "CommitStateUnknownException"))
# (botocore's HTTPClientError: its HTTP client failed below any answer)
_OUTAGE_CLASS_WORDS = ("Connection", "Connect", "Timeout", "Transport", "Unavailable", "Network", "HTTPClient")
_CLIENT_MODULES = ("httpx", "httpcore", "requests", "urllib", "urllib3", "botocore", "aiohttp", "grpc", "paho",
                   "pyiceberg")


class OutageError(ConnectionError):
    """A service refused or did not answer (no record's fault): ``service`` names it.

    A ``ConnectionError`` (so an ``OSError``): code that treats those as retriable does so here.

    >>> str(OutageError("Schema Registry at http://registry:8081", "connection refused"))
    'Schema Registry at http://registry:8081 is unavailable: connection refused'
    """

    def __init__(self, service: str, detail: str) -> None:
        super().__init__(f"{service} is unavailable: {detail}")
        self.service = service
        self.detail = detail

    def __reduce__(self):  # pickles with both arguments (OSError's own reduce would pass one)
        return (type(self), (self.service, self.detail))


class OutageTimeoutError(Exception):
    """An outage lasted longer than ``max_retry_seconds``: the application stops with this error,
    which names the service and the record (topic, partition, offset) that waited for it. Its
    records stay in Kafka (their offsets are not committed) and are processed after a restart."""


class PermanentError(Exception):
    """Marker base: a fault of the set-up that no retry fixes (the application stops)."""


def _chain(exc: BaseException) -> Iterator[BaseException]:
    seen = set()
    current: Optional[BaseException] = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        yield current
        current = current.__cause__


def http_status(exc: BaseException) -> Optional[int]:
    """The HTTP status an exception carries (on itself or its ``response``), or None."""
    for holder in (exc, getattr(exc, "response", None)):
        if holder is None:
            continue
        for name in ("status_code", "http_status_code", "status", "http_status", "code"):
            value = getattr(holder, name, None)
            if isinstance(value, int) and 100 <= value < 600:
                return value
    response = getattr(exc, "response", None)
    if isinstance(response, dict):  # botocore's ClientError.response
        status = (response.get("ResponseMetadata") or {}).get("HTTPStatusCode")
        if isinstance(status, int):
            return status
    return None


def _status_kind(status: int) -> Optional[str]:
    if status >= 500 or status in (401, 403, 407, 408, 429):
        return OUTAGE  # the server fails, is overloaded, or refuses our credentials
    return None  # other 4xx: about the request (the record), or said by the class below


def _own_kind(exc: BaseException) -> Optional[str]:
    """What one exception says by itself (None: nothing)."""
    if isinstance(exc, OutageError):
        return OUTAGE
    if isinstance(exc, (PermanentError, OutageTimeoutError)):
        return PERMANENT
    kind = type(exc)
    names = {k.__name__ for k in kind.__mro__}
    if names & _PERMANENT_CLASS_NAMES or "PermanentStorageError" in names:
        return PERMANENT
    if "SinkBackpressureError" in names:
        return OUTAGE
    if kind.__module__.startswith("pyiceberg") and names & _OUTAGE_CLASS_NAMES:
        return OUTAGE
    status = http_status(exc)
    if status is not None:
        verdict = _status_kind(status)
        if verdict is not None:
            return verdict
        if kind.__module__.split(".")[0] in _CLIENT_MODULES:
            return RECORD  # another 4xx: the service works and refused this request
    if isinstance(exc, OSError):
        return PERMANENT if exc.errno in PERMANENT_ERRNOS else OUTAGE
    if kind.__module__.split(".")[0] in _CLIENT_MODULES and any(
            word in name for name in names for word in _OUTAGE_CLASS_WORDS):
        return OUTAGE  # httpx.ConnectError, botocore's EndpointConnectionError, ReadTimeoutError...
    return None


def error_kind(exc: BaseException) -> str:
    """:data:`RECORD`, :data:`OUTAGE` or :data:`PERMANENT` (see the module docstring).

    The exception and its explicit causes (``raise ... from``) are read, the first that says
    something decides: a ``SerializationError`` raised from an unreachable registry is an outage.
    """
    for link in _chain(exc):
        kind = _own_kind(link)
        if kind is not None:
            return kind
    return RECORD


def is_outage(exc: BaseException) -> bool:
    """True if ``exc`` says a service refused or did not answer (no record's fault): the runtime
    pauses and retries such a record instead of dead-lettering it. For error callbacks::

        def on_processing_error(exc, row, logger):
            return not is_outage(exc)   # skip bad records, stop on an outage
    """
    return error_kind(exc) == OUTAGE


def service_of(exc: BaseException) -> str:
    """What to call the unavailable service in messages: an :class:`OutageError`'s ``service``,
    else "an upstream service (<its exception>)"."""
    for link in _chain(exc):
        if isinstance(link, OutageError):
            return link.service
    return f"an upstream service ({type(exc).__name__})"
