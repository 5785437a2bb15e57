"""Source errors."""

__all__ = ("SourceException",)


class SourceException(Exception):
    """A source failed; raised by the Application with the source's name and cause."""

    def __init__(self, source: object, cause: BaseException) -> None:
        self.source, self.cause = source, cause
        super().__init__(f"source '{getattr(source, 'name', source)}' failed: {type(cause).__name__}: {cause}")
