"""The Gaussian mechanism (Mironov 2017, Prop 7; thesis Sec 2.4)."""

import dataclasses

import numpy as np

from mechanisms import _validate, privacy_loss
from mechanisms.base import Mechanism

__all__ = ["GaussianMechanism"]


@dataclasses.dataclass(frozen=True, slots=True)
class GaussianMechanism(Mechanism):
    """Adds N(0, sigma^2) noise to each coordinate of a query with L2 sensitivity ``sensitivity``.

    RDP (exact, add-or-remove-one): ``epsilon(alpha) = alpha * sensitivity^2 / (2 sigma^2)`` (Mironov 2017,
    Prop 7); no pure-DP guarantee (``inf`` at alpha = inf).

    Examples
    --------
    >>> GaussianMechanism(sigma=2.0).rdp([2.0, 10.0]).tolist()
    [0.25, 1.25]
    """

    sigma: float
    sensitivity: float = dataclasses.field(default=1.0, kw_only=True)

    satisfies_pearson_vajda = True  # thesis Prop 2.3.6 (proof: thesis Thm 2.5.5)

    def __post_init__(self):
        object.__setattr__(self, "sigma", _validate.positive(self.sigma, "sigma", "GaussianMechanism"))
        object.__setattr__(
            self, "sensitivity", _validate.positive(self.sensitivity, "sensitivity", "GaussianMechanism")
        )

    @property
    def noise_multiplier(self):
        """``sigma / sensitivity``: the only quantity the privacy curves depend on."""
        return self.sigma / self.sensitivity

    def _rdp(self, orders):
        return np.where(np.isinf(orders), np.inf, orders / (2.0 * self.noise_multiplier**2))

    def _log_mgf(self, s):
        """Pair (N(sensitivity, sigma^2), N(0, sigma^2)): ``L ~ N(mu^2/2, mu^2)``, ``mu = 1/noise_multiplier``."""
        return privacy_loss.gaussian_log_mgf(s, 1.0 / self.noise_multiplier)

    def log_mgf_sup(self, real_part, u_min):
        """Exact: ``Re log M(c + iu) = mu^2 (c (c + 1) - u^2) / 2`` decreases in ``|u|``."""
        mu2 = self.noise_multiplier**-2
        return 0.5 * mu2 * (real_part * (real_part + 1.0) - u_min * u_min)

    def _output_quadrature(self, max_frequency, tilt, gamma=None):
        return privacy_loss.gaussian_output_quadrature(1.0 / self.noise_multiplier, max_frequency, tilt, gamma)
