"""``SampledWithReplacement``: fixed-size batches of ``b`` draws, each uniform over the data set, with replacement.

Add-or-remove-one (``n`` public; the data sets have ``n`` and ``n - 1`` records, the draws are uniform over the one
used). A draw from ``D = D' + {x}`` is ``x`` with probability ``1/n`` and otherwise a uniform draw from ``D'``, so
the batch of ``D`` is the batch of ``D'`` with each of its ``b`` slots independently replaced by ``x`` with
probability ``1/n``; ``K ~ Bin(b, 1/n)`` slots are. Hence, with ``gamma = 1 - (1 - 1/n)^b = P(K >= 1)``,

    ``M(D) = (1 - gamma) R + gamma C``,  ``M(D') = R``,

``R = E_y[M(batch(y))]`` and ``C`` the same mixture given ``K >= 1`` with the ``K`` slots replaced: the structure of
Poisson subsampling at rate ``gamma`` with the pair ``(C, R)`` as base. Coupling ``C`` and ``R`` over the same draws
and using the joint convexity of ``exp((l - 1) D_l)``, both ``D_l(C || R)`` and ``D_l(R || C)`` are at most

    ``eps_C(l) = log E[exp((l - 1) eps_K(l)) | K >= 1] / (l - 1)``,

``eps_k`` the RDP of the batch mechanism when ``k`` batch records are replaced (group privacy: a Gaussian or Laplace
query with ``k`` times the replace-one sensitivity, ``k epsilon`` for pure DP). The RDP of the sampled mechanism is
then the Poisson-subsampled RDP (thesis Thm 2.3.1, any base) of a mechanism with curve ``eps_C`` at rate ``gamma``:
a proven upper bound (below: "the Jensen bound").

**Gaussian base: a proven dominating pair** (proof in :mod:`mechanisms.with_replacement_pld`): for removal
``P = sum_k Bin(b, 1/n)(k) N(k Delta, sigma^2)`` against ``Q = N(0, sigma^2)``, ``(Q, P)`` for addition (for the core
of :meth:`approximate`, the weights conditioned on ``K <= r``). :meth:`dominating_mechanism` returns it as
:class:`~mechanisms.with_replacement_pld.WithReplacementPair`, described by proven loss buckets, which the
characteristic-function accountant composes (privacy buckets). The RDP is then the minimum of the Jensen bound and
the pair's own divergences: removal exact at integer orders (``l``-fold convolution of the weights, rounded up),
real orders by the chord of the convex ``(l - 1) D_l`` (van Erven & Harremoes 2014), addition by the upper bounds
of :func:`~mechanisms.with_replacement_pld.add_rdp_upper`.

**The Jensen bound is loose**, often uselessly so in DP-SGD regimes: the convexity step averages
``exp((l-1) eps_K)`` over the number of repeats ``K``, and the rare event of a record drawn several times carries
a Renyi divergence growing with ``K^2``. Renyi divergences of the exact pair are smaller but still dominated by
that rare event; the characteristic-function accountant (which composes the pair's privacy-loss distribution
itself) is the tight one here. Measured (benchmarks/RESULTS.md, "Fixed-size batches with replacement"): sigma
1.1, sensitivity 2, 256 of 60,000, 1,000 steps, delta 1e-5. :meth:`approximate` drops repeats beyond the first
``r`` with ``P(K > r) <= 1e-15`` (charged as delta). Prefer Poisson sampling or sampling without replacement.

The batch mechanism is described under replace-one of a batch record (as for
:class:`~mechanisms.fixed_size_sampling.SampledWithoutReplacement`).
"""

from __future__ import annotations

import dataclasses
import functools
import math

import numpy as np
from scipy import special

from dpledger.mechanisms import _validate
from dpledger.mechanisms.base import Mechanism
from dpledger.mechanisms.errors import MissingCapabilityError
from dpledger.mechanisms.gaussian import GaussianMechanism
from dpledger.mechanisms.laplace import LaplaceMechanism
from dpledger.mechanisms.non_private import NonPrivateMechanism
from dpledger.mechanisms.randomized_response import PureDPMechanism, RandomizedResponse
from dpledger.mechanisms.subsampled import PoissonSubsampled
from dpledger.mechanisms.subsampled_rdp import chord_rdp
from dpledger.mechanisms.zcdp import CustomRDPMechanism

__all__ = ["SampledWithReplacement", "group_mechanism"]


@functools.singledispatch
def group_mechanism(mechanism: Mechanism, k: int) -> Mechanism | None:
    """The mechanism whose curves bound ``mechanism`` when ``k`` records of its input are replaced (group privacy),
    or ``None`` if dpledger knows none for it."""
    return None


@group_mechanism.register
def _(mechanism: GaussianMechanism, k):
    return GaussianMechanism(sigma=mechanism.sigma, sensitivity=mechanism.sensitivity * k)


@group_mechanism.register
def _(mechanism: LaplaceMechanism, k):
    return LaplaceMechanism(scale=mechanism.scale, sensitivity=mechanism.sensitivity * k)


@group_mechanism.register
def _(mechanism: PureDPMechanism, k):
    return PureDPMechanism(epsilon=k * mechanism.epsilon)


@group_mechanism.register
def _(mechanism: RandomizedResponse, k):
    p = max(mechanism.p, 1.0 - mechanism.p)
    if p == 1.0:
        return NonPrivateMechanism()
    return PureDPMechanism(epsilon=k * math.log(p / (1.0 - p)) * (1.0 + 1e-15))


@dataclasses.dataclass(frozen=True, slots=True)
class SampledWithReplacement(Mechanism):
    """``mechanism`` run on a batch of ``batch_size`` independent uniform draws (with replacement) from a data set
    of ``dataset_size`` records; add-or-remove-one, the batch mechanism described under replace-one of a batch
    record. Proven RDP for Gaussian, Laplace, pure-DP and randomized-response bases (whose group privacy is
    known); for a Gaussian base also a proven dominating pair (:meth:`dominating_mechanism`) and the tighter RDP
    of that pair (see the module docstring for the proofs).

    Examples
    --------
    >>> from dpledger.mechanisms import GaussianMechanism
    >>> m = SampledWithReplacement(GaussianMechanism(sigma=2.0, sensitivity=2.0), batch_size=100,
    ...                            dataset_size=10_000)
    >>> round(m.sampling_probability, 6)  # P(the record is drawn at least once)
    0.009951
    """

    mechanism: Mechanism
    batch_size: int
    dataset_size: int
    max_repeats: int | None = dataclasses.field(default=None, kw_only=True)

    def __post_init__(self):
        owner = "SampledWithReplacement"
        if not isinstance(self.mechanism, Mechanism):
            raise TypeError(f"`mechanism` of {owner} must be a Mechanism; got {type(self.mechanism).__name__}.")
        if group_mechanism(self.mechanism, 1) is None:
            raise TypeError(
                f"`mechanism` of {owner} must be a GaussianMechanism, LaplaceMechanism, PureDPMechanism or "
                f"RandomizedResponse (a base whose group privacy is known); got {type(self.mechanism).__name__}."
            )
        _validate.with_replacement_fields(self, owner)

    @property
    def children(self) -> tuple[Mechanism, ...]:
        return (self.mechanism,)

    def _log_pmf(self):
        """``log P(K = k)`` for k = 0..b, ``K ~ Bin(b, 1/n)``."""
        n, b = self.dataset_size, self.batch_size
        ks = np.arange(0, b + 1, dtype=np.float64)
        p = 1.0 / n
        with np.errstate(divide="ignore", invalid="ignore"):
            tail = (b - ks) * math.log1p(-p) if p < 1.0 else np.where(ks == b, 0.0, -np.inf)
            return special.gammaln(b + 1.0) - special.gammaln(ks + 1.0) - special.gammaln(b - ks + 1.0) + (
                ks * math.log(p) + tail)

    @property
    def sampling_probability(self) -> float:
        """``gamma = 1 - (1 - 1/n)^b``, rounded up: the probability that a given record is drawn at least once
        (with ``max_repeats = r``: ``P(1 <= K <= r) / P(K <= r)``)."""
        n, b = self.dataset_size, self.batch_size
        if b == 0:
            return 0.0
        if n == 1:
            return 1.0
        if self.max_repeats is None or self.max_repeats >= b:
            return min(1.0, -math.expm1(b * math.log1p(-1.0 / n)) * (1.0 + 1e-14))
        log_pmf = self._log_pmf()[: self.max_repeats + 1]
        return min(1.0, math.exp(special.logsumexp(log_pmf[1:]) - special.logsumexp(log_pmf)) * (1.0 + 1e-12))

    def approximate(self) -> tuple[Mechanism, float]:
        """``(core, tau)``: repeats beyond ``r`` have probability ``tau = P(K > r) <= 1e-15``; given ``K <= r`` the
        pair is the same Poisson-like structure with the rate and mixture conditioned on ``K <= r`` (the core,
        ``max_repeats = r``). Both outputs decompose with weight ``1 - tau`` on the conditioned pair (the output
        without the record is ``(1 - tau) R + tau R``), so this is ``tau``-approximately the core
        (:meth:`Mechanism.approximate`): it drops the rare repeats whose Renyi divergence would dominate."""
        if self.max_repeats is not None or self.batch_size <= 1 or self.dataset_size == 1:
            return self, 0.0
        log_pmf = self._log_pmf()
        # log P(K > r) for r = 0..b-1, from the top down
        tails = np.logaddexp.accumulate(log_pmf[::-1])[::-1]
        candidates = [r for r in range(1, self.batch_size) if tails[r + 1] <= math.log(1e-15)]
        if not candidates:
            return self, 0.0
        r = candidates[0]
        tau = min(1.0, math.exp(tails[r + 1]) * (1.0 + 1e-9))
        core = SampledWithReplacement(self.mechanism, batch_size=self.batch_size, dataset_size=self.dataset_size,
                                      max_repeats=r)
        return core, tau

    def _mixture_curve(self, orders):
        """``eps_C(l)``: the group curves mixed by ``P(K = k | 1 <= K <= r)``, ``K ~ Bin(b, 1/n)``, rounded up."""
        b = self.batch_size
        top = b if self.max_repeats is None else self.max_repeats
        ks = np.arange(1, top + 1, dtype=np.float64)
        log_pmf = self._log_pmf()[1 : top + 1]
        log_w = log_pmf - special.logsumexp(log_pmf)  # conditional on 1 <= K <= r
        orders = np.asarray(orders, dtype=np.float64)
        out = np.empty(orders.shape)
        inf = np.isinf(orders)
        out[inf] = float(group_mechanism(self.mechanism, top).rdp(np.inf))  # pure DP: the largest group
        fin = ~inf
        if fin.any():
            a = orders[fin]
            # (l - 1) eps_k(l) for every k (rows) and order (columns); drop weights that underflow to -inf
            keep = np.isfinite(log_w)
            cgf = np.array([(a - 1.0) * group_mechanism(self.mechanism, int(k)).rdp(a) for k in ks[keep]])
            with np.errstate(invalid="ignore"):
                total = special.logsumexp(log_w[keep][:, None] + cgf, axis=0)
            value = total / (a - 1.0)
            out[fin] = value + 1e-10 * (1.0 + np.abs(value))
        return out

    def _jensen_rdp(self, orders):
        gamma = self.sampling_probability
        if gamma == 0.0:
            return np.zeros(orders.shape)
        mixture = CustomRDPMechanism(self._mixture_curve, name="replaced batch slots, given at least one")
        return PoissonSubsampled(mixture, sampling_probability=gamma).rdp(orders)

    def _rdp(self, orders):
        jensen = self._jensen_rdp(orders)
        if not isinstance(self.mechanism, GaussianMechanism) or self.batch_size == 0:
            return jensen
        return np.minimum(jensen, self._pair_rdp(orders))

    def _pair_rdp(self, orders):
        """The Gaussian pair's Renyi divergences, the larger of the two directions (``inf`` where not computed)."""
        from dpledger.mechanisms import with_replacement_pld as pld

        log_w, err = pld.log_weights(self.batch_size, self.dataset_size, self.max_repeats)
        mu = self.mechanism.sensitivity / self.mechanism.sigma
        out = np.full(orders.shape, np.inf)
        fin = np.isfinite(orders) & (orders <= pld.MAX_MOMENT_ORDER)
        if not fin.any():
            return out
        sub = orders[fin]

        def integer_remove(a):
            a = np.asarray(a, dtype=np.float64)
            moments = pld.remove_log_moments(a, mu, log_w, err)
            value = moments / (a - 1.0)
            return value + 4.0 * pld.EPS * np.abs(value)

        integer = sub == np.round(sub)
        remove = np.empty(sub.shape)
        if integer.any():
            remove[integer] = integer_remove(sub[integer])
        if (~integer).any():
            chord = chord_rdp(sub[~integer], integer_remove)
            chord = chord + 8.0 * pld.EPS * np.abs(chord)  # the chord's few operations
            remove[~integer] = np.minimum(chord, pld.remove_rdp_quadrature(sub[~integer], mu, log_w, err))

        def subsampled(a, g):
            return PoissonSubsampled(self.mechanism, sampling_probability=g).rdp(a)

        add = pld.add_rdp_upper(sub, mu, log_w, err, subsampled)
        out[fin] = np.maximum(remove, add)
        return out

    def dominating_mechanism(self) -> Mechanism:
        """For a Gaussian base: :class:`~mechanisms.with_replacement_pld.WithReplacementPair`, the proven
        dominating pair (module docstring) described by proven loss buckets. Otherwise ``self`` (no pair: the
        characteristic-function accountant refuses it)."""
        if isinstance(self.mechanism, GaussianMechanism):
            from dpledger.mechanisms.with_replacement_pld import WithReplacementPair

            return WithReplacementPair(self.mechanism, batch_size=self.batch_size, dataset_size=self.dataset_size,
                                       max_repeats=self.max_repeats)
        return self

    def _log_mgf(self, s):
        raise MissingCapabilityError(
            "SampledWithReplacement has a proven dominating pair only for a GaussianMechanism base (only an RDP "
            f"bound for {type(self.mechanism).__name__}), so the characteristic-function accountant cannot compose "
            "it; use RDPAccountant."
        )
