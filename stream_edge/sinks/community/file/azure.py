"""``AzureFileSink`` (Quix Streams 3.28's ``quixstreams.sinks.community.file.azure``): a
:class:`~stream_edge.sinks.community.file.sink.FileSink` with an
:class:`~stream_edge.sinks.community.file.destinations.azure.AzureFileDestination`.

Needs the ``edge-azure`` extra (``pip install streaming-lakehouse[edge-azure]``).
"""

from __future__ import annotations

from typing import Any, Optional, Union

from stream_edge.sinks.base.sink import ClientConnectFailureCallback, ClientConnectSuccessCallback

from .destinations.azure import (AzureContainerAccessDeniedError, AzureContainerNotFoundError,
                                 AzureFileDestination, azure_blob)
from .formats import Format, FormatName
from .sink import FileSink

__all__ = ("AzureFileSink", "AzureContainerNotFoundError", "AzureContainerAccessDeniedError")


class AzureFileSink(FileSink):
    """Writes each checkpoint's batch of a topic partition as one blob of an Azure container.

    :param azure_connection_string: the storage account's connection string.
    :param azure_container: container name (it must exist).
    :param directory: base folder in the container. :param format: ``"json"``, ``"parquet"`` or a Format.
    :param on_client_connect_success: called after the container was found.
    :param on_client_connect_failure: called with the exception when it was not.
    :param client_kwargs: more ``ContainerClient`` settings (edge extension).

    Example::

        sdf.sink(AzureFileSink(connection_string, "lake", directory="raw", format="parquet"))
    """

    def __init__(self, azure_connection_string: str, azure_container: str, directory: str = "",
                 format: Union[FormatName, Format] = "json",  # noqa: A002 - Quix API name
                 on_client_connect_success: Optional[ClientConnectSuccessCallback] = None,
                 on_client_connect_failure: Optional[ClientConnectFailureCallback] = None,
                 **client_kwargs: Any) -> None:
        azure_blob()
        self._azure = (azure_connection_string, azure_container, client_kwargs)
        super().__init__(directory=directory, format=format, destination=_LazyAzure(self._azure))
        self._on_client_connect_success = on_client_connect_success
        self._on_client_connect_failure = on_client_connect_failure

    def setup(self) -> None:
        """Connect and check the container exists (raises ``AzureContainerNotFoundError``)."""
        self._destination.connect()  # type: ignore[attr-defined]


class _LazyAzure(AzureFileDestination):
    """An AzureFileDestination that connects in ``setup()`` (so the connect callbacks see failures)."""

    def __init__(self, settings: Any) -> None:  # noqa: D107 - private
        self._settings = settings
        self._client: Any = None
        self._directory = ""
        self._extension = ""

    def connect(self) -> None:
        from .destinations.azure import container_client

        connection_string, container, client_kwargs = self._settings
        self._client = container_client(connection_string, container, **client_kwargs)

    def write(self, data: bytes, batch: Any) -> None:
        if self._client is None:
            self.connect()
        super().write(data, batch)
