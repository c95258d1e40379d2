"""A release with no privacy guarantee, so that ledgers can record it (and every accountant says inf)."""

import dataclasses

import numpy as np

from dpledger.mechanisms.base import Mechanism
from dpledger.mechanisms.errors import MissingCapabilityError

__all__ = ["NonPrivateMechanism"]


@dataclasses.dataclass(frozen=True, slots=True)
class NonPrivateMechanism(Mechanism):
    """A release with no privacy guarantee (dp_accounting's ``NonPrivateDpEvent``): RDP ``+inf`` at every order.

    Examples
    --------
    >>> NonPrivateMechanism().rdp([2.0, float("inf")]).tolist()
    [inf, inf]
    """

    def _rdp(self, orders):
        return np.full(orders.shape, np.inf)

    def _log_mgf(self, s):
        raise MissingCapabilityError("NonPrivateMechanism has no privacy guarantee: its privacy loss is infinite.")
