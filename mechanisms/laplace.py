"""The Laplace mechanism (Mironov 2017, Prop 6; thesis Sec 2.4)."""

import dataclasses

import numpy as np

from mechanisms import _validate, privacy_loss
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
        # With weights alpha/(2 alpha - 1) and (alpha - 1)/(2 alpha - 1) summing to one, the argument of the log
        # is 1 + X, X = [alpha expm1((alpha-1) t) + (alpha-1) expm1(-alpha t)] / (2 alpha - 1) >= 0. The two
        # parts cancel to first order in t, so X is rounded up by the float64 error of its parts.
        t = self.sensitivity / self.scale
        a = np.where(np.isinf(orders), 2.0, orders)
        inv_a = 1.0 / a
        with np.errstate(over="ignore", invalid="ignore"):
            up = np.expm1((a - 1.0) * t) / (2.0 - inv_a)
            down = (1.0 - inv_a) * np.expm1(-a * t) / (2.0 - inv_a)
            x = up + down + 4 * np.finfo(np.float64).eps * (np.abs(up) + np.abs(down))
            small = np.log1p(np.maximum(x, 0.0)) / (a - 1.0)
            # large (alpha - 1) t: log(alpha/(2 alpha - 1)) + (alpha - 1) t + log1p(...) without overflow
            log_big = np.logaddexp(-np.log(2.0 - inv_a) + (a - 1.0) * t,
                                   np.log1p(-inv_a) - np.log(2.0 - inv_a) - a * t)
            large = log_big / (a - 1.0)
        finite = np.where((a - 1.0) * t < 30.0, small, large) * (1.0 + 8 * np.finfo(np.float64).eps)
        finite = np.where(a > 1e15, t, finite)
        return np.where(np.isinf(orders), t, np.clip(finite, 0.0, t))

    def _log_mgf(self, s):
        """Pair (Laplace(sensitivity, scale), Laplace(0, scale)); closed form in :mod:`mechanisms.privacy_loss`."""
        return privacy_loss.laplace_log_mgf(s, self.sensitivity / self.scale)

    def log_mgf_sup(self, real_part, u_min):
        """``|M(c + iu)| <= A (1 + 1/|1 + 2c + 2iu|)`` with ``A = (e^(ct) + e^(-t(1+c)))/2``: the two atoms of the
        loss do not decay, the continuous part decays like ``1/u``."""
        t, c = self.sensitivity / self.scale, real_part
        log_a = np.logaddexp(c * t, -t * (1.0 + c)) - np.log(2.0)
        return float(log_a + np.log1p(1.0 / np.hypot(1.0 + 2.0 * c, 2.0 * u_min)))

    def _output_quadrature(self, max_frequency, tilt, gamma=None):
        return privacy_loss.laplace_output_quadrature(self.sensitivity / self.scale, max_frequency)
