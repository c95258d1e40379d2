"""Private predictors built on the accounting core: Private-kNN and Ind-KNN, their neighbour search and budgets.

Torch is used here (and only here) for blocked distance and kernel computations.
"""

__all__ = []
