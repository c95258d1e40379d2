"""The Laplace mechanism (Mironov 2017, Prop 6; thesis Sec 2.4)."""

import dataclasses

import numpy as np

from mechanisms import _validate
from mechanisms.base import Mechanism

__all__ = ["LaplaceMechanism"]


@dataclasses.dataclass(frozen=True, slots=True)
class LaplaceMechanism(Mechanism):
    """Adds Laplace(0, scale) noise to a query with L1 sensitivity ``sensitivity``.

    With ``lam = scale / sensitivity`` the exact RDP is (Mironov 2017, Prop 6)::

        epsilon(alpha) = log( alpha/(2 alpha - 1) * exp((alpha - 1)/lam)
                              + (alpha - 1)/(2 alpha - 1) * exp(-alpha/lam) ) / (alpha - 1)

    and ``epsilon(inf) = 1 / lam`` (pure DP). Evaluated with ``logaddexp`` so large orders do not overflow.

    Examples
    --------
    >>> float(LaplaceMechanism(scale=1.0).rdp(float("inf")))
    1.0
    """

    scale: float
    sensitivity: float = dataclasses.field(default=1.0, kw_only=True)

    satisfies_pearson_vajda = True  # thesis Prop 2.3.6 (proof: thesis Thm 2.5.6)

    def __post_init__(self):
        object.__setattr__(self, "scale", _validate.positive(self.scale, "scale", "LaplaceMechanism"))
        object.__setattr__(
            self, "sensitivity", _validate.positive(self.sensitivity, "sensitivity", "LaplaceMechanism")
        )

    def _rdp(self, orders):
        inv_lam = self.sensitivity / self.scale
        a = np.where(np.isinf(orders), 2.0, orders)
        with np.errstate(divide="ignore"):
            log_sum = np.logaddexp(
                np.log(a / (2 * a - 1)) + (a - 1) * inv_lam,
                np.log((a - 1) / (2 * a - 1)) - a * inv_lam,
            )
        finite = np.minimum(np.maximum(log_sum / (a - 1), 0.0), inv_lam)
        return np.where(np.isinf(orders), inv_lam, finite)
