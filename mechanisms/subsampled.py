"""The ``PoissonSubsampled`` combinator: run a mechanism on a Poisson subsample (independent coin per record)."""

import dataclasses

import numpy as np

from mechanisms import _validate, subsampled_rdp
from mechanisms.base import Mechanism
from mechanisms.gaussian import GaussianMechanism

__all__ = ["PoissonSubsampled"]


@dataclasses.dataclass(frozen=True, slots=True)
class PoissonSubsampled(Mechanism):
    """``mechanism`` applied to a subsample that keeps each record independently with ``sampling_probability``.

    RDP (upper bound, add-or-remove-one), by order:

    * integer orders: thesis Thm 2.3.4 (tight) when the base satisfies the Pearson-Vajda condition (Gaussian
      and Laplace, thesis Prop 2.3.6), otherwise thesis Thm 2.3.1 (general); exact binomial sums up to
      ``subsampled_rdp.EXACT_MAX_ORDER``, tau-term bounds (thesis Thm 2.3.7 / 2.5.8) above;
    * non-integer orders: the exact series of Mironov, Talwar & Zhang 2019 for a Gaussian base; for any other
      base (or if the series does not converge) the chord of ``(alpha - 1) eps(alpha)`` between integer
      orders, an upper bound by convexity;
    * order inf: ``log(1 + q (e^eps - 1))`` of the base's pure epsilon (Balle et al. 2018), which also caps
      every order.

    ``sampling_probability`` 0 gives zero; 1 gives the base curve.

    Examples
    --------
    >>> from mechanisms import GaussianMechanism
    >>> m = PoissonSubsampled(GaussianMechanism(sigma=1.0), sampling_probability=1.0)
    >>> float(m.rdp(2.0))
    1.0
    """

    mechanism: Mechanism
    sampling_probability: float

    def __post_init__(self):
        if not isinstance(self.mechanism, Mechanism):
            raise TypeError(
                f"`mechanism` of PoissonSubsampled must be a Mechanism; got {type(self.mechanism).__name__}."
            )
        object.__setattr__(
            self,
            "sampling_probability",
            _validate.probability(self.sampling_probability, "sampling_probability", "PoissonSubsampled"),
        )

    def _integer_rdp(self, orders):
        orders = np.asarray(orders, dtype=np.float64)
        base = self.mechanism.rdp
        q = self.sampling_probability
        general = not self.mechanism.satisfies_pearson_vajda
        small = orders <= subsampled_rdp.EXACT_MAX_ORDER
        out = np.empty(orders.shape)
        bound = subsampled_rdp.general_bound if general else subsampled_rdp.tight_bound
        out[small] = bound(orders[small], q, base)
        if (~small).any():
            out[~small] = subsampled_rdp.tau_term_bound(orders[~small], q, base, general=general)
        return out

    def _rdp(self, orders):
        q = self.sampling_probability
        if q == 0.0:
            return np.zeros(orders.shape)
        if q == 1.0:
            return self.mechanism.rdp(orders)
        out = np.empty(orders.shape)
        inf = np.isinf(orders)
        integer = ~inf & (orders == np.round(orders))
        frac = ~inf & ~integer
        base_pure = float(self.mechanism.rdp(np.inf))
        pure = subsampled_rdp.pure_dp_bound(q, base_pure)
        out[inf] = pure
        if integer.any():
            out[integer] = self._integer_rdp(orders[integer])
        if frac.any():
            out[frac] = self._fractional_rdp(orders[frac])
        return np.minimum(out, pure)

    def _fractional_rdp(self, orders):
        values = np.full(orders.shape, np.nan)
        if isinstance(self.mechanism, GaussianMechanism):
            series = orders <= subsampled_rdp.EXACT_MAX_ORDER
            values[series] = subsampled_rdp.gaussian_fractional_rdp(
                orders[series], self.sampling_probability, self.mechanism.noise_multiplier
            )
        missing = np.isnan(values)
        if missing.any():
            values[missing] = subsampled_rdp.chord_rdp(orders[missing], self._integer_rdp)
        return values
