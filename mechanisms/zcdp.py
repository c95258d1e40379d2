"""Mechanisms described by a zCDP parameter or by a user's own RDP function."""

import dataclasses
from typing import Callable

import numpy as np

from mechanisms import _validate
from mechanisms.base import Mechanism
from mechanisms.errors import NumericalError

__all__ = ["ZCDPMechanism", "CustomRDPMechanism"]


@dataclasses.dataclass(frozen=True, slots=True)
class ZCDPMechanism(Mechanism):
    """A mechanism satisfying ``rho``-zCDP: ``epsilon(alpha) = rho * alpha`` for every alpha > 1
    (Bun & Steinke 2016, Def 1.1); no pure-DP guarantee unless ``rho == 0``.

    Examples
    --------
    >>> ZCDPMechanism(rho=0.1).rdp([2.0, 3.0]).tolist()
    [0.2, 0.30000000000000004]
    """

    rho: float

    def __post_init__(self):
        object.__setattr__(self, "rho", _validate.nonnegative(self.rho, "rho", "ZCDPMechanism"))

    def _rdp(self, orders):
        if self.rho == 0.0:
            return np.zeros(orders.shape)
        return np.where(np.isinf(orders), np.inf, self.rho * orders)


@dataclasses.dataclass(frozen=True, slots=True)
class CustomRDPMechanism(Mechanism):
    """A mechanism defined by the user's own RDP upper bound ``rdp_function(orders) -> epsilons``.

    ``rdp_function`` receives a 1-D float64 array of orders in (1, inf] and must return an array of the same
    shape of non-negative upper bounds (``inf`` where none holds). It is trusted to be a valid RDP bound
    under add-or-remove-one, non-decreasing in the order; its output is checked for shape, NaN and sign.
    Subsampling such a mechanism uses the general bound (thesis Thm 2.3.1), never the tight one.

    Examples
    --------
    >>> m = CustomRDPMechanism(lambda a: a / 8.0, name="my gaussian")
    >>> m.rdp([2.0, 4.0]).tolist()
    [0.25, 0.5]
    """

    rdp_function: Callable
    name: str = dataclasses.field(default="custom", kw_only=True)

    def __post_init__(self):
        if not callable(self.rdp_function):
            raise TypeError(
                f"`rdp_function` of CustomRDPMechanism must be callable; got {type(self.rdp_function).__name__}."
            )
        if not isinstance(self.name, str):
            raise TypeError(f"`name` of CustomRDPMechanism must be a str; got {type(self.name).__name__}.")

    def _rdp(self, orders):
        out = np.asarray(self.rdp_function(orders.copy()), dtype=np.float64)
        if out.shape != orders.shape:
            out = np.broadcast_to(out, orders.shape) if out.ndim == 0 else out
        if out.shape != orders.shape:
            raise NumericalError(
                f"rdp_function of CustomRDPMechanism {self.name!r} returned shape {out.shape} "
                f"for orders of shape {orders.shape}; it must be vectorised."
            )
        if np.isnan(out).any():
            raise NumericalError(f"rdp_function of CustomRDPMechanism {self.name!r} returned NaN.")
        if (out < 0).any():
            raise NumericalError(
                f"rdp_function of CustomRDPMechanism {self.name!r} returned a negative RDP "
                f"{out[out < 0][0]}; RDP is non-negative."
            )
        return out
