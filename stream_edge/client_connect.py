"""The ``on_client_connect_success`` / ``on_client_connect_failure`` protocol shared by sinks and
sources: run the connector's ``setup()`` and report the outcome.

Example::

    connect(sink.setup, on_success=lambda: print("up"), on_failure=None)  # no failure callback: raises
"""

from __future__ import annotations

from typing import Callable, Optional

__all__ = ("ClientConnectSuccessCallback", "ClientConnectFailureCallback", "connect")

ClientConnectSuccessCallback = Callable[[], None]
ClientConnectFailureCallback = Callable[[Optional[Exception]], None]


def connect(setup: Callable[[], None], on_success: Optional[ClientConnectSuccessCallback],
            on_failure: Optional[ClientConnectFailureCallback]) -> None:
    """Call ``setup()``; on failure hand the error to ``on_failure`` (which must handle or re-raise
    it) or raise it when there is none; on success call ``on_success``."""
    try:
        setup()
    except Exception as exc:
        if on_failure is None:
            raise
        on_failure(exc)
        return
    if on_success is not None:
        on_success()
