"""Binary randomized response and the pure-DP mechanism it dominates (Mironov 2017, Prop 5)."""

import dataclasses

import numpy as np

from mechanisms import _validate, privacy_loss
from mechanisms.base import Mechanism
from mechanisms.errors import MissingCapabilityError

__all__ = ["RandomizedResponse", "PureDPMechanism"]


def _bernoulli_pair_rdp(orders, log_p, log_1mp):
    """RDP of the pair (Bernoulli(p), Bernoulli(1 - p)), symmetric in p <-> 1 - p (Mironov 2017, Prop 5)::

        epsilon(alpha) = log(p^alpha (1-p)^(1-alpha) + (1-p)^alpha p^(1-alpha)) / (alpha - 1)

    and ``epsilon(inf) = |log(p / (1 - p))|``.
    """
    eps_inf = abs(log_p - log_1mp)
    a = np.where(np.isinf(orders), 2.0, orders)
    # Factor out exp((alpha - 1) * eps_inf) so both terms are <= 1 and nothing overflows; the two log1p terms
    # nearly cancel for small eps_inf, so their rounding is added (the result is rounded up).
    first = np.logaddexp(0.0, -(2 * a - 1) * eps_inf)
    second = np.log1p(np.exp(-eps_inf))
    slack = 2 * np.finfo(np.float64).eps * (first + second)
    log_sum = first + (a - 1) * eps_inf - second + slack
    with np.errstate(invalid="ignore"):
        finite = np.clip(log_sum / (a - 1), 0.0, eps_inf)
    finite = np.where(a > 1e15, eps_inf, finite)
    return np.where(np.isinf(orders), eps_inf, finite)


@dataclasses.dataclass(frozen=True, slots=True)
class RandomizedResponse(Mechanism):
    """Binary randomized response: report the true bit with probability ``p``, the flipped bit otherwise.

    Exact RDP: that of the pair (Bernoulli(p), Bernoulli(1 - p)) (Mironov 2017, Prop 5); pure DP with
    ``epsilon = |log(p / (1 - p))|``; ``p`` of 0 or 1 releases the bit and has no guarantee (``inf``).

    Examples
    --------
    >>> round(float(RandomizedResponse(p=0.75).rdp(float("inf"))), 12)
    1.098612288668
    """

    p: float

    def __post_init__(self):
        object.__setattr__(self, "p", _validate.probability(self.p, "p", "RandomizedResponse"))

    def _rdp(self, orders):
        if self.p in (0.0, 1.0):
            return np.full(orders.shape, np.inf)
        return _bernoulli_pair_rdp(orders, np.log(self.p), np.log1p(-self.p))

    def _log_mgf(self, s):
        """Pair (Bernoulli(p), Bernoulli(1 - p)); the loss takes the two values +-log(p/(1-p))."""
        if self.p in (0.0, 1.0):
            raise MissingCapabilityError(
                f"RandomizedResponse(p={self.p}) releases the bit: its privacy loss is infinite."
            )
        return privacy_loss.bernoulli_log_mgf(s, np.log(self.p) - np.log1p(-self.p))

    def _output_quadrature(self, max_frequency, tilt, gamma=None):
        if self.p in (0.0, 1.0):
            self._log_mgf(np.zeros(1))
        return privacy_loss.bernoulli_output_quadrature(np.log(self.p) - np.log1p(-self.p))


@dataclasses.dataclass(frozen=True, slots=True)
class PureDPMechanism(Mechanism):
    """Any mechanism known only to be ``epsilon``-DP (pure, add-or-remove-one).

    Every epsilon-DP pair of output distributions is a post-processing of randomized response with
    ``p = e^epsilon / (1 + e^epsilon)`` (Kairouz, Oh & Viswanath 2015, Thm 2.4), so its RDP is at most that of
    this randomized response, which is attained; this is below both ``epsilon`` and the zCDP bound
    ``alpha * epsilon^2 / 2`` (Bun & Steinke 2016, Prop 3.3).

    Examples
    --------
    >>> float(PureDPMechanism(epsilon=0.5).rdp(float("inf")))
    0.5
    """

    epsilon: float

    def __post_init__(self):
        object.__setattr__(self, "epsilon", _validate.nonnegative(self.epsilon, "epsilon", "PureDPMechanism"))

    def _rdp(self, orders):
        # log p = -log1p(e^-eps), log(1 - p) = -eps - log1p(e^-eps)
        log_p = -np.log1p(np.exp(-self.epsilon))
        return _bernoulli_pair_rdp(orders, log_p, log_p - self.epsilon)

    def _log_mgf(self, s):
        """Randomized response with ``p = e^eps / (1 + e^eps)`` dominates every eps-DP mechanism."""
        return privacy_loss.bernoulli_log_mgf(s, self.epsilon)

    def _output_quadrature(self, max_frequency, tilt, gamma=None):
        return privacy_loss.bernoulli_output_quadrature(self.epsilon)
