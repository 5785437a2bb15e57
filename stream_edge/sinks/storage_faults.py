"""Storage faults, classified: "not now" (retry with backoff) or "never" (stop and say where).

:func:`classify` is pure: it reads an exception (and its causes) -- an ``OSError``'s errno,
pyarrow's S3 error text (``AWS Error SLOW_DOWN``, ``HTTP status 503``), a botocore ``ClientError``'s
code and status, an HTTP status on the exception or its response -- and answers :data:`TRANSIENT`
(connection reset or refused, timeouts, 5xx, 429/408, throttling such as ``SlowDown``, a disk
full) or :data:`PERMANENT` (``ENAMETOOLONG``, ``EACCES``/``EPERM``, a read-only disk, access
denied, a bad key or signature, a missing bucket, a key too long, any other 4xx, an operation the
filesystem does not support: ``EOPNOTSUPP``, ``ENOSYS``, ``EMLINK``; botocore's
``NoCredentialsError``). An ``OSError`` it does not recognise is transient (storage is usually right again later, and the retry is
logged and counted, never silent); any other exception is permanent.

:class:`StorageBackoff` is the retry state a sink keeps per partition: exponential backoff
(1 s, 2 s, 4 s ... capped at 60 s), counters the service exports, and one log line per state
change (the first failure, the recovery), not one per retry.

Example::

    >>> classify(OSError(36, "File name too long"))
    'permanent'
    >>> classify(ConnectionResetError(104, "Connection reset by peer"))
    'transient'
"""

from __future__ import annotations

import errno
import logging
import re
from typing import Any, Dict, Hashable, Iterator, Optional

from stream_edge.errors import PERMANENT_ERRNOS, error_kind, http_status, PERMANENT as _MODEL_PERMANENT

__all__ = ("TRANSIENT", "PERMANENT", "classify", "StorageBackoff", "PermanentStorageError")

logger = logging.getLogger(__name__)

TRANSIENT = "transient"
PERMANENT = "permanent"

_TRANSIENT_ERRNOS = frozenset(getattr(errno, name) for name in (
    "ECONNRESET", "ECONNREFUSED", "ECONNABORTED", "ETIMEDOUT", "EAGAIN", "EWOULDBLOCK", "EINTR", "EBUSY",
    "ENETUNREACH", "ENETDOWN", "ENETRESET", "EHOSTUNREACH", "EHOSTDOWN", "EPIPE", "ENOSPC", "EDQUOT", "EIO",
    "ESTALE", "ENOENT") if hasattr(errno, name))
# ENOENT is transient: a file listed then removed by a concurrent cleanup (another writer's
# recovery) is a race that a retry resolves; a missing bucket is reported by name (below).
# The error model's "never" errnos (stream_edge/errors.py), EOPNOTSUPP / ENOSYS / EMLINK included:
# a lake on a filesystem without hard links or an operation (s3fs, gcsfuse, blobfuse) stops.
_PERMANENT_ERRNOS = PERMANENT_ERRNOS

# S3 error codes (botocore's ``Error.Code``, pyarrow's ``AWS Error NAME`` in upper snake case).
_TRANSIENT_CODES = frozenset(code.upper() for code in (
    "SlowDown", "SLOW_DOWN", "Throttling", "ThrottlingException", "THROTTLING", "RequestLimitExceeded",
    "TooManyRequests", "RequestTimeout", "REQUEST_TIMEOUT", "RequestTimeTooSkewed", "REQUEST_TIME_TOO_SKEWED",
    "InternalError", "INTERNAL_FAILURE", "ServiceUnavailable", "SERVICE_UNAVAILABLE", "NETWORK_CONNECTION",
    "OperationAborted", "ExpiredToken", "EXPIRED_TOKEN", "RequestExpired", "REQUEST_EXPIRED",
    "NoSuchKey", "NO_SUCH_KEY", "NoSuchUpload", "NO_SUCH_UPLOAD"))
_PERMANENT_CODES = frozenset(code.upper() for code in (
    "AccessDenied", "ACCESS_DENIED", "AllAccessDisabled", "InvalidAccessKeyId", "INVALID_ACCESS_KEY_ID",
    "SignatureDoesNotMatch", "SIGNATURE_DOES_NOT_MATCH", "NoSuchBucket", "NO_SUCH_BUCKET", "InvalidBucketName",
    "KeyTooLongError", "InvalidArgument", "INVALID_PARAMETER_VALUE", "InvalidObjectName", "InvalidRequest",
    "MISSING_PARAMETER", "InvalidClientTokenId", "INVALID_CLIENT_TOKEN_ID", "AccountProblem",
    "UnauthorizedOperation", "MethodNotAllowed", "EntityTooLarge"))
_AWS_ERROR = re.compile(r"AWS Error (?:\[code (\d+)\] )?([A-Z_]+)")
_HTTP_STATUS = re.compile(r"(?:HTTP status|HTTP response code:?|status code:?|\[code)\s*(\d{3})\b", re.IGNORECASE)


class PermanentStorageError(OSError):
    """Storage refused a write for good (a name too long, access denied...): the application stops
    with this error, which names the sink's table, the topic partition and the file or key."""


def _chain(exc: BaseException) -> Iterator[BaseException]:
    seen = set()
    current: Optional[BaseException] = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        yield current
        current = current.__cause__ or current.__context__


def _status_verdict(status: int) -> Optional[str]:
    if status >= 500 or status in (408, 429):
        return TRANSIENT
    if status == 404:
        return None  # a key: a race (transient); a bucket: its code says so
    if 400 <= status < 500:
        return PERMANENT
    return None


def _code_verdict(code: str) -> Optional[str]:
    code = code.upper()
    if code in _TRANSIENT_CODES:
        return TRANSIENT
    if code in _PERMANENT_CODES:
        return PERMANENT
    return None


def _verdict(exc: BaseException) -> Optional[str]:
    """What one exception of the chain says, or None when it says nothing."""
    response = getattr(exc, "response", None)
    if isinstance(response, dict):
        code = (response.get("Error") or {}).get("Code")
        if isinstance(code, str):
            verdict = _code_verdict(code)
            if verdict is not None:
                return verdict
    text = str(exc)
    match = _AWS_ERROR.search(text)
    if match is not None:
        verdict = _code_verdict(match.group(2))
        if verdict is not None:
            return verdict
    status = http_status(exc)
    if status is None:
        found = _HTTP_STATUS.search(text)
        status = int(found.group(1)) if found is not None else None
    if status is not None:
        verdict = _status_verdict(status)
        if verdict is not None:
            return verdict
    if isinstance(exc, OSError):
        code = exc.errno
        if code is None:  # pyarrow's local errors carry "[errno N]" in the text only
            found = re.search(r"\[errno (\d+)\]", text, re.IGNORECASE)
            code = int(found.group(1)) if found is not None else None
        if code in _PERMANENT_ERRNOS:
            return PERMANENT
        if code in _TRANSIENT_ERRNOS:
            return TRANSIENT
    if isinstance(exc, (TimeoutError, ConnectionError)):
        return TRANSIENT
    if error_kind(exc) == _MODEL_PERMANENT:  # botocore's NoCredentialsError...: configuration
        return PERMANENT
    return None


def classify(exc: BaseException) -> str:
    """:data:`TRANSIENT` or :data:`PERMANENT` for a storage exception (see the module docstring)."""
    saw_os_error = False
    for link in _chain(exc):
        verdict = _verdict(link)
        if verdict is not None:
            return verdict
        saw_os_error = saw_os_error or isinstance(link, OSError) or type(link).__module__.startswith(
            ("botocore", "urllib3", "requests"))
    return TRANSIENT if saw_os_error else PERMANENT


class StorageBackoff:
    """Backoff, counters and state-change logging for transient storage faults of one sink.

    :param name: what the log lines name (the sink and its table).
    :param base_seconds: the first pause; each further failure of the partition doubles it.
    :param cap_seconds: the longest pause.
    """

    def __init__(self, name: str, base_seconds: float = 1.0, cap_seconds: float = 60.0) -> None:
        self.name = name
        self.base_seconds = base_seconds
        self.cap_seconds = cap_seconds
        self.transient_total = 0  # transient faults met (each is a backoff)
        self.permanent_total = 0  # permanent faults met (each stops the application)
        self._failures: Dict[Hashable, int] = {}

    @property
    def failing(self) -> int:
        """How many partitions are in backoff now."""
        return len(self._failures)

    def transient(self, key: Hashable, where: str, exc: BaseException) -> float:
        """Count a transient fault of ``key``; returns the pause before the retry. Logs the first
        failure of a streak only (a WARNING), the streak's further ones at DEBUG."""
        count = self._failures.get(key, 0) + 1
        self._failures[key] = count
        self.transient_total += 1
        delay = min(self.cap_seconds, self.base_seconds * (2 ** min(count - 1, 30)))
        if count == 1:
            logger.warning("%s: storage failed (transient) while %s: %s: %s; pausing and retrying with "
                           "backoff (%.0f s, doubling up to %.0f s)", self.name, where, type(exc).__name__, exc,
                           delay, self.cap_seconds)
        else:
            logger.debug("%s: still failing while %s (attempt %d, next pause %.0f s): %s", self.name, where,
                         count, delay, exc)
        return delay

    def succeeded(self, key: Hashable) -> None:
        """``key`` wrote again: end its streak (one INFO line when it had one)."""
        count = self._failures.pop(key, None)
        if count:
            logger.info("%s: storage works again for %s after %d failed attempt(s)", self.name, key, count)

    def permanent(self, what: str, exc: BaseException) -> PermanentStorageError:
        """Count a permanent fault; returns the error to raise (``what`` names table, partition, file)."""
        self.permanent_total += 1
        error = PermanentStorageError(f"{self.name}: storage refused {what} for good "
                                      f"({type(exc).__name__}: {exc}); not retrying")
        error.__cause__ = exc
        return error

    def forget(self, key: Hashable) -> None:
        """The partition left this instance."""
        self._failures.pop(key, None)

    def stats(self) -> Dict[str, Any]:
        return {"storage_faults_transient": self.transient_total, "storage_faults_permanent": self.permanent_total}
