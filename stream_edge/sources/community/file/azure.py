"""AzureFileSource: a FileSource over an Azure Blob Storage container (Azure or Azurite).

Needs the ``edge-azure`` extra (``pip install streaming-lakehouse[edge-azure]``); this module
imports without it.
"""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any, BinaryIO, Callable, Iterable, Optional, Union

from stream_edge.sources.base.source import ClientConnectFailureCallback, ClientConnectSuccessCallback

from .base import FileSource
from .compressions import CompressionName
from .formats import Format, FormatName

__all__ = ("AzureFileSource", "MissingAzureContainer")

_EXTRA = "pip install streaming-lakehouse[edge-azure]"


class MissingAzureContainer(Exception):
    """The container does not exist."""


class AzureFileSource(FileSource):
    """Produce the records of every blob under ``filepath`` in an Azure container, in name order.

    Example::

        source = AzureFileSource(connection_string, container="lake", filepath="raw/readings",
                                 file_format="parquet", has_partition_folders=True, replay_speed=0)
        sdf = app.dataframe(source=source)
    """

    def __init__(self, connection_string: str, container: str, filepath: Union[str, Path],
                 key_setter: Optional[Callable[[object], object]] = None,
                 value_setter: Optional[Callable[[object], object]] = None,
                 timestamp_setter: Optional[Callable[[object], int]] = None,
                 file_format: Union[Format, FormatName] = "json", compression: Optional[CompressionName] = None,
                 has_partition_folders: bool = False, replay_speed: float = 1.0, name: Optional[str] = None,
                 shutdown_timeout: float = 30,
                 on_client_connect_success: Optional[ClientConnectSuccessCallback] = None,
                 on_client_connect_failure: Optional[ClientConnectFailureCallback] = None) -> None:
        try:
            import azure.storage.blob  # noqa: F401
        except ImportError as exc:
            raise ImportError(f"AzureFileSource needs the 'azure-storage-blob' package: {_EXTRA}") from exc
        self._connection_string = connection_string
        self._container = container
        self._client: Any = None
        super().__init__(filepath=filepath, key_setter=key_setter, value_setter=value_setter,
                         timestamp_setter=timestamp_setter, file_format=file_format, compression=compression,
                         has_partition_folders=has_partition_folders, replay_speed=replay_speed, name=name,
                         shutdown_timeout=shutdown_timeout, on_client_connect_success=on_client_connect_success,
                         on_client_connect_failure=on_client_connect_failure)

    def _container_client(self) -> Any:
        if self._client is None:
            from azure.core.exceptions import ResourceNotFoundError
            from azure.storage.blob import ContainerClient

            client = ContainerClient.from_connection_string(self._connection_string, self._container)
            try:
                client.get_container_properties()
            except ResourceNotFoundError:
                raise MissingAzureContainer(f"file source {self.name}: Azure container "
                                            f"'{self._container}' does not exist") from None
            self._client = client
        return self._client

    def setup(self) -> None:
        """Connect and check the container exists."""
        self._container_client()

    def _prefix(self, filepath: Union[str, Path]) -> str:
        return str(filepath).strip("/")

    def get_file_list(self, filepath: Path) -> Iterable[Path]:
        """Blob names under ``filepath`` (or the blob itself), ordered by folder then name."""
        client, prefix = self._container_client(), self._prefix(filepath)
        if prefix and client.get_blob_client(prefix).exists():
            return [Path(prefix)]
        names = [blob.name for blob in client.list_blobs(name_starts_with=f"{prefix}/" if prefix else None)]
        if not names:
            raise FileNotFoundError(f"file source {self.name}: no blob under '{prefix}' in container "
                                    f"'{self._container}'")
        return [Path(name) for name in sorted(names, key=lambda n: n.split("/"))]

    def read_file(self, filepath: Path) -> BinaryIO:
        data = self._container_client().download_blob(str(filepath)).readall()
        return io.BytesIO(data)

    def file_partition_counter(self) -> int:
        """The number of folders directly under ``filepath``."""
        prefix = self._prefix(self._filepath)
        found = self._container_client().walk_blobs(name_starts_with=f"{prefix}/" if prefix else None,
                                                    delimiter="/")
        return sum(1 for item in found if item.name.endswith("/"))
