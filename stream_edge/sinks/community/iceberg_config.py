"""Connection settings of the Iceberg catalogs ``IcebergSink`` writes through (re-exported by
``stream_edge.sinks.community.iceberg``)."""

from __future__ import annotations

from typing import Any, Dict, Optional

__all__ = ("BaseIcebergConfig", "AWSIcebergConfig", "RESTIcebergConfig")

class BaseIcebergConfig:
    """Connection settings of an Iceberg catalog; subclasses say which catalog and how."""

    data_catalog_spec: str = ""

    def __init__(self) -> None:
        self.properties: Dict[str, str] = {}

    def load_catalog(self) -> Any:
        """A pyiceberg ``Catalog`` for these settings."""
        from pyiceberg.catalog import load_catalog

        return load_catalog(self.data_catalog_spec, **self.properties)


class AWSIcebergConfig(BaseIcebergConfig):
    """Iceberg tables in S3 with the AWS Glue catalog.

    :param aws_s3_uri: where table data goes, e.g. ``s3://bucket/warehouse/``.
    :param aws_region: region of the bucket and the catalog (default ``AWS_REGION``).
    :param aws_access_key_id: default ``AWS_ACCESS_KEY_ID``.
    :param aws_secret_access_key: default ``AWS_SECRET_ACCESS_KEY``.
    :param aws_session_token: default ``AWS_SESSION_TOKEN``.
    """

    data_catalog_spec = "aws_glue"

    def __init__(self, aws_s3_uri: str, aws_region: Optional[str] = None, aws_access_key_id: Optional[str] = None,
                 aws_secret_access_key: Optional[str] = None, aws_session_token: Optional[str] = None) -> None:
        super().__init__()
        self.aws_s3_uri = aws_s3_uri
        props = {"type": "glue", "warehouse": aws_s3_uri, "glue.region": aws_region, "s3.region": aws_region,
                 "glue.access-key-id": aws_access_key_id, "s3.access-key-id": aws_access_key_id,
                 "glue.secret-access-key": aws_secret_access_key, "s3.secret-access-key": aws_secret_access_key,
                 "glue.session-token": aws_session_token, "s3.session-token": aws_session_token}
        self.properties = {k: v for k, v in props.items() if v is not None}

    def load_catalog(self) -> Any:
        try:
            import boto3  # noqa: F401 - pyiceberg's Glue catalog needs it
        except ImportError as exc:
            raise ImportError(f"IcebergSink with AWS Glue needs the 'boto3' package: "
                              f"pip install streaming-lakehouse[edge-iceberg,edge-kinesis]") from exc
        return super().load_catalog()


class RESTIcebergConfig(BaseIcebergConfig):
    """An Iceberg REST catalog (an edge extension; ``data_catalog_spec="rest"``).

    :param uri: the catalog's base URL, e.g. ``http://127.0.0.1:8181``.
    :param warehouse: the warehouse to ask the catalog for (optional).
    :param token: a bearer token (optional). :param credential: an OAuth2 ``id:secret`` (optional).
    :param properties: more pyiceberg catalog properties (e.g. ``s3.endpoint``).
    """

    data_catalog_spec = "rest"

    def __init__(self, uri: str, warehouse: Optional[str] = None, token: Optional[str] = None,
                 credential: Optional[str] = None, properties: Optional[Dict[str, str]] = None) -> None:
        super().__init__()
        props = {"type": "rest", "uri": uri, "warehouse": warehouse, "token": token, "credential": credential}
        self.properties = {k: v for k, v in props.items() if v is not None}
        self.properties.update(properties or {})
