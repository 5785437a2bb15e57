from .state import State

__all__ = ("State",)
