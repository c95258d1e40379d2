"""Binary randomized response and the pure-DP mechanism it dominates (Mironov 2017, Prop 5)."""

from __future__ import annotations

import dataclasses
import fractions
import math

import numpy as np

from dpledger.mechanisms import _validate, closed_form_enclosures, privacy_loss, two_point
from dpledger.mechanisms.base import Mechanism
from dpledger.mechanisms.custom_pairs import DiscretePairMechanism
from dpledger.mechanisms.errors import MissingCapabilityError

__all__ = ["RandomizedResponse", "PureDPMechanism", "KaryRandomizedResponse"]


@dataclasses.dataclass(frozen=True, slots=True)
class RandomizedResponse(Mechanism):
    """Binary randomized response: report the true bit with probability ``p``, the flipped bit otherwise.

    Exact RDP: that of the pair (Bernoulli(p), Bernoulli(1 - p)) (Mironov 2017, Prop 5), rounded up
    (:mod:`mechanisms.two_point`); pure DP with ``epsilon = |log(p / (1 - p))|``; ``p`` of 0 or 1 releases the bit
    and has no guarantee (``inf``).

    Pearson-Vajda condition (thesis condition (2.2), Thm 2.3.4): **holds**. With ``p > 1/2`` (``p < 1/2`` is the
    same pair relabelled; ``p = 1/2`` is the zero pair), the ratio ``r = P/Q`` is ``p / (1 - p)`` on the outcome of
    Q-mass ``1 - p`` and ``(1 - p) / p`` on the other, so for odd ``l >= 3``
    ``E_Q[(r - 1)^l] = (1 - p) ((2p - 1) / (1 - p))^l - p ((2p - 1) / p)^l = (2p - 1)^l ((1 - p)^(1 - l) -
    p^(1 - l)) >= 0``, since ``1 - p < p`` and ``1 - l < 0``; the reverse direction is the same pair. (Subsampling
    uses the exact two-point divergence anyway: :meth:`dominating_randomized_response`.)

    Examples
    --------
    >>> round(float(RandomizedResponse(p=0.75).rdp(float("inf"))), 12)
    1.098612288668
    """

    p: float

    satisfies_pearson_vajda = True  # proof in the class docstring

    def __post_init__(self):
        object.__setattr__(self, "p", _validate.probability(self.p, "p", "RandomizedResponse"))

    def dominating_randomized_response(self) -> fractions.Fraction | None:
        """``min(p, 1 - p)``: ``RR(p)`` and ``RR(1 - p)`` differ only by relabelling the outputs."""
        return two_point.flip_of_randomized_response(self.p)

    def _rdp(self, orders):
        return two_point.randomized_response_rdp(orders, self.dominating_randomized_response())

    def _loss_up(self):
        """``E = |log(p / (1 - p))|`` as a float at or above it (:meth:`two_point_loss`): the pair of a larger ``E``
        dominates, so the proven paths price it; MissingCapabilityError at ``p`` 0 or 1."""
        if self.p in (0.0, 1.0):
            self._log_mgf(np.zeros(1))  # raises its MissingCapabilityError
        return self.two_point_loss()

    def _log_mgf(self, s):
        """Pair (Bernoulli(p), Bernoulli(1 - p)); the loss takes the two values +-log(p/(1-p)) (to nearest)."""
        if self.p in (0.0, 1.0):
            raise MissingCapabilityError(
                f"RandomizedResponse(p={self.p}) releases the bit: its privacy loss is infinite."
            )
        return privacy_loss.bernoulli_log_mgf(s, np.log(self.p) - np.log1p(-self.p))

    def _log_mgf_enclosure(self, s):
        """:func:`mechanisms.closed_form_enclosures.bernoulli_log_mgf_enclosure` of the dominating pair with loss
        :meth:`two_point_loss` (at or above the exact loss; :meth:`_log_mgf`'s to nearest may lie below it)."""
        return closed_form_enclosures.bernoulli_log_mgf_enclosure(s, self._loss_up())

    def _output_quadrature(self, max_frequency, tilt, gamma=None):
        return privacy_loss.bernoulli_output_quadrature(self._loss_up())


@dataclasses.dataclass(frozen=True, slots=True)
class PureDPMechanism(Mechanism):
    """Any mechanism known only to be ``epsilon``-DP (pure, add-or-remove-one).

    Every epsilon-DP pair of output distributions is a post-processing of randomized response with
    ``p = e^epsilon / (1 + e^epsilon)`` (Kairouz, Oh & Viswanath 2015, Thm 2.4), so its RDP is at most that of
    this randomized response, which is attained; this is below both ``epsilon`` and the zCDP bound
    ``alpha * epsilon^2 / 2`` (Bun & Steinke 2016, Prop 3.3).

    Pearson-Vajda condition (thesis Thm 2.3.4): **holds** for the dominating pair, which is randomized response
    (proof in :class:`RandomizedResponse`); the bounds used are those of that pair.

    Examples
    --------
    >>> float(PureDPMechanism(epsilon=0.5).rdp(float("inf")))
    0.5
    """

    epsilon: float

    satisfies_pearson_vajda = True  # of its dominating pair, randomized response (class docstring)

    def __post_init__(self):
        object.__setattr__(self, "epsilon", _validate.nonnegative(self.epsilon, "epsilon", "PureDPMechanism"))

    def dominating_randomized_response(self) -> fractions.Fraction | None:
        """A float at most ``1 / (1 + e^eps)`` (Kairouz, Oh & Viswanath 2015, Thm 2.4)."""
        return two_point.flip_of_pure_dp(self.epsilon)

    def two_point_loss(self) -> float | None:
        """``epsilon`` itself: the dominating pair ``RR(e^eps / (1 + e^eps))`` has loss exactly ``+-epsilon``."""
        return float(self.epsilon)

    def _rdp(self, orders):
        # the pair's divergence, and never above epsilon itself (D_alpha <= D_inf = epsilon)
        return np.minimum(two_point.randomized_response_rdp(orders, self.dominating_randomized_response()),
                          self.epsilon)

    def _log_mgf(self, s):
        """Randomized response with ``p = e^eps / (1 + e^eps)`` dominates every eps-DP mechanism."""
        return privacy_loss.bernoulli_log_mgf(s, self.epsilon)

    def _log_mgf_enclosure(self, s):
        """:func:`mechanisms.closed_form_enclosures.bernoulli_log_mgf_enclosure` (loss ``+-epsilon``)."""
        return closed_form_enclosures.bernoulli_log_mgf_enclosure(s, self.epsilon)

    def _output_quadrature(self, max_frequency, tilt, gamma=None):
        return privacy_loss.bernoulli_output_quadrature(self.epsilon)


@dataclasses.dataclass(frozen=True, slots=True)
class KaryRandomizedResponse(Mechanism):
    """k-ary randomized response as dp_accounting defines it: with probability ``1 - noise_parameter`` report
    the true bucket, otherwise a bucket drawn uniformly from ``num_buckets``.

    With ``a = 1 - p + p/k`` and ``b = p/k`` two inputs give the pair ``P = (a, b, b, ..., b)``,
    ``Q = (b, a, b, ..., b)``; merging the ``k - 2`` outcomes where they agree (a sufficient statistic) leaves
    the three-point pair ``(a, b, (k-2) b)`` vs ``(b, a, (k-2) b)``, whose exact RDP (both directions) and
    characteristic function :class:`~mechanisms.DiscretePairMechanism` computes. This is the replace-one pair of
    dp_accounting (``_randomized_response_rdp_replace_one``); it also bounds a record replaced by a special
    record whose output is uniform, by joint quasi-convexity of the Renyi divergence (uniform is the mixture of
    the outputs of all inputs).

    Examples
    --------
    >>> m = KaryRandomizedResponse(noise_parameter=0.5, num_buckets=4)
    >>> round(float(m.rdp(float("inf"))), 12)  # log(a / b) = log(0.625 / 0.125) = log 5
    1.609437912434
    """

    noise_parameter: float
    num_buckets: int

    def __post_init__(self):
        owner = "KaryRandomizedResponse"
        p = _validate.probability(self.noise_parameter, "noise_parameter", owner)
        object.__setattr__(self, "noise_parameter", p)
        object.__setattr__(self, "num_buckets", _validate.positive_int(self.num_buckets, "num_buckets", owner))

    def _pair(self):
        p, k = self.noise_parameter, self.num_buckets
        if k == 1 or p == 1.0:
            return None  # the output does not depend on the input
        if p == 0.0:
            raise MissingCapabilityError("KaryRandomizedResponse with noise_parameter 0 releases its input.")
        log_b = math.log(p) - math.log(k)
        log_a = math.log1p(-p + p / k)
        if k == 2:
            return DiscretePairMechanism([log_a, log_b], [log_b, log_a], name="binary randomized response")
        log_rest = math.log(k - 2) + log_b
        return DiscretePairMechanism([log_a, log_b, log_rest], [log_b, log_a, log_rest], name="k-ary RR")

    def _rdp(self, orders):
        if self.noise_parameter == 0.0 and self.num_buckets > 1:
            return np.full(orders.shape, np.inf)
        pair = self._pair()
        return np.zeros(orders.shape) if pair is None else pair.rdp(orders)

    def _log_mgf(self, s):
        pair = self._pair()
        return np.zeros(np.shape(s), dtype=np.complex128) if pair is None else pair._log_mgf(s)

    def _log_mgf_enclosure(self, s):
        pair = self._pair()
        return Mechanism._log_mgf_enclosure(self, s) if pair is None else pair._log_mgf_enclosure(s)

    def _output_quadrature(self, max_frequency, tilt, gamma=None):
        pair = self._pair()
        if pair is None:
            return PureDPMechanism(epsilon=0.0)._output_quadrature(max_frequency, tilt, gamma)
        return pair._output_quadrature(max_frequency, tilt, gamma)
