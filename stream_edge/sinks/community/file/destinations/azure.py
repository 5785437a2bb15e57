"""Azure Blob Storage destination of the file sink (Azure or Azurite), through ``azure-storage-blob``.

Needs the ``edge-azure`` extra (``pip install streaming-lakehouse[edge-azure]``); this module
imports without it.
"""

from __future__ import annotations

from typing import Any

from stream_edge.sinks.base import SinkBatch

from .base import Destination

__all__ = ("AzureFileDestination", "AzureContainerNotFoundError", "AzureContainerAccessDeniedError")

_EXTRA = "pip install streaming-lakehouse[edge-azure]"


class AzureContainerNotFoundError(Exception):
    """Raised when the specified Azure container does not exist."""


class AzureContainerAccessDeniedError(Exception):
    """Raised when access to the specified Azure container is denied."""


def azure_blob() -> Any:
    """The ``azure.storage.blob`` module, or an ImportError naming the extra."""
    try:
        from azure.storage import blob
    except ImportError as exc:
        raise ImportError(f"Azure Blob Storage needs the 'azure-storage-blob' package: {_EXTRA}") from exc
    return blob


def container_client(connection_string: str, container: str, **client_kwargs: Any) -> Any:
    """A ``ContainerClient``; checks the container exists and is readable.

    ``client_kwargs`` go to the client (defaults: 3 retries, 10 s connect / 30 s read timeouts).
    """
    blob = azure_blob()
    from azure.core import exceptions as errors

    settings = {"retry_total": 3, "connection_timeout": 10, "read_timeout": 30, **client_kwargs}
    client = blob.ContainerClient.from_connection_string(connection_string, container, **settings)
    try:
        client.get_container_properties()
    except errors.ResourceNotFoundError as exc:
        raise AzureContainerNotFoundError(f"Azure container {container!r} does not exist") from exc
    except errors.ClientAuthenticationError as exc:
        raise AzureContainerAccessDeniedError(f"access to Azure container {container!r} denied") from exc
    except errors.HttpResponseError as exc:
        if exc.status_code == 403:
            raise AzureContainerAccessDeniedError(f"access to Azure container {container!r} denied") from exc
        raise
    return client


class AzureFileDestination(Destination):
    """Writes each batch as one blob ``<directory>/<topic>/<partition>/<start offset><ext>``.

    :param connection_string: the storage account's connection string.
    :param container: container name (it must exist).
    :param client_kwargs: more ``ContainerClient`` settings (``retry_total``, timeouts).

    Example::

        FileSink(directory="raw", format="parquet",
                 destination=AzureFileDestination(connection_string, "lake"))
    """

    def __init__(self, connection_string: str, container: str, **client_kwargs: Any) -> None:
        super().__init__()
        self._container = container
        self._client = container_client(connection_string, container, **client_kwargs)

    def write(self, data: bytes, batch: SinkBatch) -> None:
        # One PUT (or a block list commit): the blob appears whole or not at all.
        self._client.upload_blob(self._batch_path(batch), data, overwrite=True)
