"""Fixtures of the service tests: the runtime tests' broker helpers (one definition, re-exported)."""

from tests.integration.runtime.conftest import new_app, produce  # noqa: F401 - pytest fixtures
