"""Binary randomized response and the pure-DP mechanism it dominates (Mironov 2017, Prop 5)."""

import dataclasses

import numpy as np

from mechanisms import _validate
from mechanisms.base import Mechanism

__all__ = ["RandomizedResponse", "PureDPMechanism"]


def _bernoulli_pair_rdp(orders, log_p, log_1mp):
    """RDP of the pair (Bernoulli(p), Bernoulli(1 - p)), symmetric in p <-> 1 - p (Mironov 2017, Prop 5)::

        epsilon(alpha) = log(p^alpha (1-p)^(1-alpha) + (1-p)^alpha p^(1-alpha)) / (alpha - 1)

    and ``epsilon(inf) = |log(p / (1 - p))|``.
    """
    eps_inf = abs(log_p - log_1mp)
    a = np.where(np.isinf(orders), 2.0, orders)
    # Factor out exp((alpha - 1) * eps_inf) so both terms are <= 1 and nothing overflows.
    log_sum = np.logaddexp(0.0, -(2 * a - 1) * eps_inf) + (a - 1) * eps_inf - np.log1p(np.exp(-eps_inf))
    finite = np.clip(log_sum / (a - 1), 0.0, eps_inf)
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
