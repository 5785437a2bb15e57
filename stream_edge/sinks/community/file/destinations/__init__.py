"""Destinations of the file sink."""

from .azure import AzureContainerAccessDeniedError, AzureContainerNotFoundError, AzureFileDestination
from .base import Destination
from .local import LocalDestination
from .s3 import S3BucketAccessDeniedError, S3BucketNotFoundError, S3Destination

__all__ = ("Destination", "LocalDestination", "S3Destination", "S3BucketNotFoundError",
           "S3BucketAccessDeniedError", "AzureFileDestination", "AzureContainerNotFoundError",
           "AzureContainerAccessDeniedError")
