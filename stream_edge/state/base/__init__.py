from .state import State, TransactionState

__all__ = ("State", "TransactionState")
