"""The stream tree and its composition into executors."""

from .functions import *  # noqa: F401,F403
from .functions import __all__ as _functions_all
from .stream import Stream

__all__ = ("Stream",) + tuple(_functions_all)
