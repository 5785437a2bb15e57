"""The edge as a service: the ``stream-edge`` command, settings, metrics and health endpoints."""
