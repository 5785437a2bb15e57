"""Processing: the shared context and partition pausing."""

from .context import ProcessingContext

__all__ = ("ProcessingContext",)
