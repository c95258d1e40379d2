"""What a getter returns when asked to explain its number."""

import dataclasses
from typing import Optional

from mechanisms.relations import NeighboringRelation

__all__ = ["PrivacyReport"]


@dataclasses.dataclass(frozen=True)
class PrivacyReport:
    """An (epsilon, delta)-DP statement and how it was obtained.

    Attributes
    ----------
    epsilon, delta : float
        The guarantee: the mechanism is (epsilon, delta)-DP.
    bound : str
        ``"upper bound"`` (proven) or ``"estimate"``; dpledger's accountants only return proven upper bounds.
    relation : NeighboringRelation
    accountant : str
        Which accountant produced it.
    method : str
        The conversion used (with its source).
    order : float or None
        The Renyi order at which the optimum was attained (RDP accountants), ``inf`` for pure DP.
    """

    epsilon: float
    delta: float
    bound: str
    relation: NeighboringRelation
    accountant: str
    method: str
    order: Optional[float] = None

    def __str__(self):
        at = "" if self.order is None else f" at order {self.order:.6g}"
        return (
            f"({self.epsilon:.6g}, {self.delta:.3g})-DP, {self.bound}, {self.relation.value}; "
            f"{self.accountant} accountant, {self.method}{at}"
        )
