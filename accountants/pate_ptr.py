"""Accounting of PATE with generalized PTR (thesis Sec 6.4.6: Algorithm 9, Thm 6.4.11, Lemma 6.4.12, Thm 6.4.13).

The mechanism: Gaussian noisy argmax (GNMax) over ``T`` vote histograms, ``argmax_j (n_j + N(0, sigma^2))``.
Neighbouring relation: adding or removing one private record **moves, adds or removes at most one vote in every
histogram** (one PATE teacher changing its votes; Private-kNN's k nearest neighbours over the whole private set,
see :class:`~mechanisms.NoisyArgmax`). Then the gap ``g`` between the two largest counts of a histogram changes
by at most 2, and GNMax is ``(alpha, alpha / sigma^2)``-RDP per histogram in both directions (the data-independent
bound of thesis Thm 6.4.11; L2 sensitivity ``sqrt(2)``).

Data-dependent RDP (sensitive; never a guarantee, DESIGN.md rule 7). Per histogram with top gap ``g`` and ``c``
classes, the plurality loses with probability at most ``q(g) = min(1, (c - 1) Phi_c(g / (sqrt(2) sigma)))``
(Papernot et al. 2018, Prop 7, each other class bounded through the top gap). Papernot et al. 2018, Thm 6 (the
data-dependent RDP of thesis Thm 6.4.11), with ``mu_2 = sigma sqrt(log(1/q))``, ``mu_1 = mu_2 + 1`` (their
Prop 10), ``eps_i = mu_i / sigma^2``, bounds ``D_alpha(M(X) || M(X'))`` for every neighbour ``X'`` by

    ``b(q) = log((1 - q) A^(alpha - 1) + q B^(alpha - 1)) / (alpha - 1)``,
    ``A = (1 - q) / (1 - (q e^eps_2)^((mu_2 - 1) / mu_2))``, ``B = e^eps_1 / q^(1 / (mu_1 - 1))``

whenever ``alpha <= mu_1``, ``mu_2 > 1`` and
``q <= e^((mu_2 - 1) eps_2) / (mu_1 / (mu_1 - 1) * mu_2 / (mu_2 - 1))^mu_2``; otherwise (and always as a
cap) ``alpha / sigma^2``. The bound holds for any ``q`` at least the true probability, so no monotonicity is
needed. The reverse direction ``D_alpha(M(X') || M(X))`` is Thm 6 at ``X'``, whose gap is at least ``g - 2``:
the per-histogram bound used is ``r(g) = max(b(g), b(g - 1), b(g - 2))``, and
``RDP(alpha, X) <= F(X) = sum_i r(g_i)`` in both directions (RDP composition).

Smooth sensitivity (Nissim, Raskhodnikova & Smith 2007) of ``F``, exactly over integer gaps: with
``D(g) = max_{|g' - g| <= 2} |r(g) - r(g')|`` and ``A_d(X) = sum_i max_{|g - g_i| <= 2 d} D(g)`` (gaps clipped to
``[0, max_votes]``), ``A_d(X)`` bounds the local sensitivity of every data set within distance ``d`` of ``X`` and
``A_d(X) <= A_{d+1}(X')`` for neighbours, so ``SS_beta(X) = max_d e^{-beta d} A_d(X)`` is a beta-smooth upper
bound of the local sensitivity (this replaces Papernot et al.'s Algorithms 3-5, whose correctness rests on
numerically checked conditions C5-C6).

The private test (thesis Algorithm 9, Lemma 6.4.12; ``sigma_s`` and ``sigma_2`` may differ, and ``beta`` need not
be Algorithm 9's ``0.2 / alpha``): release ``mu = log SS + beta N(0, sigma_2^2) +
beta sigma_2 sqrt(2 log(2/delta_2))`` and ``RDP^upper = F + SS N(0, sigma_s^2) + sigma_s sqrt(2 log(2/delta_2))
e^mu``, an upper bound of ``F`` with probability at least ``1 - delta_2`` (two Gaussian tails of at most
``delta_2 / 2`` each). Its RDP at order ``lambda`` in ``(1, 1/(2 beta))`` is ``lambda / (2 sigma_2^2)`` (``log SS``
has sensitivity ``beta``) plus Papernot et al. 2018, Thm 23 (the GNSS mechanism):
``lambda e^(2 beta) / sigma_s^2 + (beta lambda - log(1 - 2 lambda beta) / 2) / (lambda - 1)``.
:attr:`PATEPTR.test_epsilon` converts it to ``(eps_hat, delta_hat)``; the thesis's simplification
``(3 lambda + 2) / (2 sigma_s^2)`` of Lemma 6.4.12 is not used (it is below Thm 23's value for small ``eps_hat``).
The test passes iff the conversion of ``RDP^upper`` at order ``alpha`` and ``delta_M`` is at most the budget
``eps'``. Guarantee: thesis Thm 6.4.6, ``(eps' + eps_hat, delta_M + delta_hat + delta_2)`` (the instance of Thm
6.4.13 with each delta stated; Thm 6.4.13's own constants are not used).
"""

from __future__ import annotations

import dataclasses
import math
from typing import Any

import numpy as np
from numpy.typing import ArrayLike
from scipy import special

from dpledger.accountants import conversions
from dpledger.accountants.conversions import Conversion
from dpledger.accountants.ptr import PTRGuarantee, generalized_ptr_guarantee
from dpledger.mechanisms import _logmath, _validate

__all__ = [
    "PATEPTR",
    "log_q_from_gap",
    "data_dependent_rdp_from_gap",
    "per_histogram_rdp",
    "top_gaps",
    "smooth_sensitivity",
    "local_sensitivity_bounds",
    "gnss_test_rdp",
]

_SLACK = 256 * _logmath.EPS  # relative slack on a data-dependent RDP value (a few dozen float operations)


def top_gaps(votes: ArrayLike) -> np.ndarray:
    """Gap between the two largest counts of each histogram (rows of ``votes``), as int64."""
    v = np.asarray(votes)
    if v.ndim != 2 or v.shape[1] < 2:
        raise ValueError(f"`votes` must be a 2-D array with at least 2 classes; got shape {v.shape}.")
    if v.size and (not np.all(np.isfinite(v)) or np.any(v < 0) or np.any(v != np.round(v))):
        raise ValueError("`votes` must hold non-negative integer counts.")
    part = -np.partition(-v.astype(np.float64), 1, axis=1)[:, :2]
    return (part[:, 0] - part[:, 1]).astype(np.int64)


def log_q_from_gap(gaps: ArrayLike, sigma: float, num_classes: int) -> np.ndarray:
    """``log q(g)``, ``q(g) = min(1, (c - 1) Phi_c(g / (sqrt(2) sigma)))``: an upper bound of the probability
    that GNMax does not return the plurality (Papernot et al. 2018, Prop 7 through the top gap), rounded up."""
    g = np.asarray(gaps, dtype=np.float64)
    lq = math.log(num_classes - 1) + special.log_ndtr(-g / (math.sqrt(2.0) * sigma))
    lq = lq + np.abs(lq) * _SLACK + 1e-300
    return np.minimum(lq, 0.0)


def _thm6(log_q, sigma, order):
    """Papernot et al. 2018, Thm 6 at ``q = e^log_q`` (vectorised); ``inf`` where its conditions fail."""
    lq = np.asarray(log_q, dtype=np.float64)
    out = np.full(lq.shape, np.inf)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        mu2 = sigma * np.sqrt(-lq)
        mu1 = mu2 + 1.0
        eps1, eps2 = mu1 / sigma**2, mu2 / sigma**2
        valid = (lq < 0) & (mu2 > 1.0) & (mu1 >= order)
        valid &= lq <= (mu2 - 1.0) * eps2 - mu2 * np.log(mu1 / (mu1 - 1.0) * mu2 / (mu2 - 1.0))
        inner = (lq + eps2) * (1.0 - 1.0 / mu2)  # log((q e^eps2)^((mu2 - 1)/mu2)) < 0 under the condition
        valid &= inner < 0
        log1q = np.log1p(-np.exp(lq))
        log_a = (order - 1.0) * (log1q - np.log1p(-np.exp(inner)))
        log_b = (order - 1.0) * (eps1 - lq / (mu1 - 1.0))
        value = np.logaddexp(log1q + log_a, lq + log_b) / (order - 1.0)
    out[valid] = value[valid]
    return out


def data_dependent_rdp_from_gap(gaps: ArrayLike, sigma: float, num_classes: int, order: float) -> np.ndarray:
    """``b(g) = min(alpha / sigma^2, Thm 6 at q(g))``: a bound of ``D_alpha(M(X) || M(X'))`` for a histogram with
    top gap ``g`` (sensitive: never a guarantee), rounded up."""
    independent = order / sigma**2
    dep = _thm6(log_q_from_gap(gaps, sigma, num_classes), sigma, order)
    value = np.minimum(dep, independent)
    return value + np.abs(value) * _SLACK


def per_histogram_rdp(max_votes: int, sigma: float, num_classes: int, order: float) -> np.ndarray:
    """``r(g)`` for every gap ``g = 0..max_votes``: ``max(b(g), b(g - 1), b(g - 2))`` (both directions)."""
    b = data_dependent_rdp_from_gap(np.arange(max_votes + 1), sigma, num_classes, order)
    r = b.copy()
    r[1:] = np.maximum(r[1:], b[:-1])
    r[2:] = np.maximum(r[2:], b[:-2])
    return r


def local_sensitivity_bounds(gaps: ArrayLike, r: np.ndarray) -> np.ndarray:
    """``A_d`` for ``d = 0 .. ceil(max_votes / 2)`` (module docstring), with ``r`` from :func:`per_histogram_rdp`."""
    top = r.size - 1
    diff = np.zeros_like(r)
    for s in (1, 2):
        step = np.abs(r[s:] - r[:-s])
        diff[s:] = np.maximum(diff[s:], step)
        diff[:-s] = np.maximum(diff[:-s], step)
    counts = np.bincount(np.asarray(gaps, dtype=np.int64), minlength=top + 1)
    if counts.size > top + 1:
        raise ValueError(f"a gap exceeds max_votes = {top}.")
    window = diff.copy()
    out = []
    for _ in range(math.ceil(top / 2) + 1):
        out.append(float(math.fsum(counts * window)))
        grown = window.copy()
        for s in (1, 2):
            grown[s:] = np.maximum(grown[s:], window[:-s])
            grown[:-s] = np.maximum(grown[:-s], window[s:])
        window = grown
    return np.array(out) * (1.0 + _SLACK)


def smooth_sensitivity(gaps: ArrayLike, r: np.ndarray, beta: float) -> float:
    """``SS_beta(X) = max_d e^{-beta d} A_d(X)`` (Nissim, Raskhodnikova & Smith 2007, Def 2.1 / Lemma 2.3)."""
    a = local_sensitivity_bounds(gaps, r)
    return float(np.max(a * np.exp(-beta * np.arange(a.size))) * (1.0 + _SLACK))


def gnss_test_rdp(orders: ArrayLike, beta: float, sigma_s: float, sigma_2: float) -> np.ndarray:
    """RDP of the test's release ``(mu, F + SS N(0, sigma_s^2))`` at ``orders`` in ``(1, 1/(2 beta))``:
    ``lambda / (2 sigma_2^2)`` + Papernot et al. 2018, Thm 23 (``inf`` outside the range), rounded up."""
    lam = np.asarray(orders, dtype=np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        ok = (lam > 1.0) & (2.0 * lam * beta < 1.0)
        gnss = lam * math.exp(2.0 * beta) / sigma_s**2 + (beta * lam - 0.5 * np.log1p(-2.0 * lam * beta)) / (lam - 1.0)
        value = lam / (2.0 * sigma_2**2) + gnss
    value = np.where(ok, value + np.abs(value) * _SLACK, np.inf)
    return value


@dataclasses.dataclass(frozen=True)
class PATEPTR:
    """Parameters of PATE with generalized PTR (thesis Algorithm 9) and their proven guarantee.

    Parameters
    ----------
    sigma : float
        GNMax noise ``sigma_1`` (standard deviation per count).
    budget : float
        ``eps'``: the test passes iff the private upper bound of the data-dependent epsilon is at most it.
    order : float
        ``alpha`` of the data-dependent RDP. Algorithm 9: ``2 log(2/delta)/eps_hat + 1``
        (:meth:`from_test_epsilon`).
    sigma_test : float
        ``sigma_s`` of the test's Gaussian noise on the data-dependent RDP (and ``sigma_2`` unless given).
    beta : float or None
        Smoothness; ``None``: Algorithm 9's ``0.2 / order``. Any ``beta`` in ``(0, 1/2)`` is sound: ``SS_beta``
        is beta-smooth for every ``beta``, and the test's RDP (Thm 23) is evaluated at its own orders
        ``lambda < 1/(2 beta)`` (:attr:`test_epsilon`), not at ``order``; Algorithm 9's tie ``beta = 0.2/alpha``
        is a heuristic, and a larger ``beta`` shrinks ``SS_beta`` (see benchmarks/RESULTS.md, Figure 6.2).
    delta_mechanism, delta_test, false_positive_rate : float
        ``delta_M`` (conversion of the data-dependent RDP), ``delta_hat`` (conversion of the test's RDP) and
        ``delta_2`` (Lemma 6.4.12's failure probability, the false positive rate of Thm 6.4.6).
    num_classes, max_votes : int
        ``c`` and the largest number of votes in a histogram (teachers, or ``k`` neighbours).
    sigma_2 : float or None
        ``sigma_2`` of the Gaussian noise on ``log SS`` (``None``: ``sigma_test``, Algorithm 9's
        ``sigma_s = sigma_2``). The bound multiplies ``SS`` by ``sigma_s z e^{beta sigma_2 z}`` (``z =
        sqrt(2 log(2/delta_2))``) and the test's RDP has ``lambda / (2 sigma_2^2)``: a separate ``sigma_2``
        trades the two.
    """

    sigma: float
    budget: float
    order: float
    sigma_test: float
    num_classes: int
    max_votes: int
    delta_mechanism: float
    delta_test: float
    false_positive_rate: float
    beta: float | None = None
    sigma_2: float | None = None

    def __post_init__(self):
        owner = "PATEPTR"
        object.__setattr__(self, "sigma", _validate.positive(self.sigma, "sigma", owner))
        object.__setattr__(self, "budget", _validate.nonnegative(self.budget, "budget", owner))
        order = _validate.real(self.order, "order", owner)
        if not order > 1.0:
            raise ValueError(f"`order` of {owner} must be > 1; got {order}.")
        object.__setattr__(self, "order", order)
        object.__setattr__(self, "sigma_test", _validate.positive(self.sigma_test, "sigma_test", owner))
        c = _validate.integer(self.num_classes, "num_classes", owner, minimum=2)
        object.__setattr__(self, "num_classes", c)
        object.__setattr__(self, "max_votes", _validate.positive_int(self.max_votes, "max_votes", owner))
        for name in ("delta_mechanism", "delta_test", "false_positive_rate"):
            object.__setattr__(self, name, _validate.open_unit_interval(getattr(self, name), name, owner))
        beta = 0.2 / order if self.beta is None else _validate.positive(self.beta, "beta", owner)
        if not 2.0 * beta * 1.0 < 1.0:
            raise ValueError(f"`beta` of {owner} must be below 1/2; got {beta}.")
        object.__setattr__(self, "beta", beta)
        s2 = self.sigma_test if self.sigma_2 is None else _validate.positive(self.sigma_2, "sigma_2", owner)
        object.__setattr__(self, "sigma_2", s2)

    @classmethod
    def from_test_epsilon(cls, *, test_epsilon: float, delta: float, **kwargs: Any) -> PATEPTR:
        """Algorithm 9's choices: ``alpha = 2 log(2/delta)/eps_hat + 1``, ``sigma_s = sigma_2 =
        sqrt((3 alpha + 2)/eps_hat)``, ``beta = 0.2/alpha``, and ``delta`` split in three equal parts (the
        test's proven epsilon is :attr:`test_epsilon`, not necessarily ``test_epsilon``)."""
        t = _validate.positive(test_epsilon, "test_epsilon", "PATEPTR.from_test_epsilon")
        d = _validate.open_unit_interval(delta, "delta", "PATEPTR.from_test_epsilon")
        alpha = 2.0 * math.log(2.0 / d) / t + 1.0
        return cls(order=alpha, sigma_test=math.sqrt((3.0 * alpha + 2.0) / t), delta_mechanism=d / 3.0,
                   delta_test=d / 3.0, false_positive_rate=d / 3.0, **kwargs)

    @property
    def test_epsilon(self) -> float:
        """``eps_hat``: the smallest conversion of :func:`test_rdp` at ``delta_test`` over 4000 orders in
        ``(1, 1/(2 beta))`` (:func:`gnss_test_rdp`; each candidate a proven upper bound; improved conversion)."""
        top = 1.0 / (2.0 * self.beta)
        orders = 1.0 + (top - 1.0) * np.geomspace(1e-6, 1.0, 4000)[:-1]
        rdp = gnss_test_rdp(orders, self.beta, self.sigma_test, self.sigma_2)
        eps = conversions.epsilon_candidates(orders, rdp, self.delta_test, Conversion.IMPROVED)
        return float(max(0.0, np.min(eps)))

    def guarantee(self) -> PTRGuarantee:
        """thesis Thm 6.4.6 for Algorithm 9: ``(budget + eps_hat, delta_M + delta_hat + delta_2)``-DP."""
        return generalized_ptr_guarantee(epsilon=self.budget, delta=self.delta_mechanism,
                                         test_epsilon=self.test_epsilon, test_delta=self.delta_test,
                                         false_positive_rate=self.false_positive_rate, private_upper_bound=True)

    def rdp_table(self) -> np.ndarray:
        """``r(g)`` for ``g = 0..max_votes`` (:func:`per_histogram_rdp`)."""
        return per_histogram_rdp(self.max_votes, self.sigma, self.num_classes, self.order)

    def epsilon_from_rdp(self, rdp_value: float) -> float:
        """The conversion at order ``alpha`` and ``delta_M`` of an RDP value (improved conversion; an upper bound
        of the data-dependent epsilon whenever ``rdp_value`` bounds the data-dependent RDP)."""
        return float(conversions.epsilon_candidates(np.array([self.order]), np.array([float(rdp_value)]),
                                                    self.delta_mechanism, Conversion.IMPROVED)[0])

    def check_votes(self, votes: ArrayLike) -> np.ndarray:
        """Validate ``votes`` (``T x num_classes`` non-negative integers, at most ``max_votes`` per row) and return
        the top gaps."""
        v = np.asarray(votes)
        if v.ndim != 2 or v.shape[1] != self.num_classes:
            raise ValueError(f"`votes` must have shape (T, {self.num_classes}); got {v.shape}.")
        gaps = top_gaps(v)
        if v.size and v.sum(axis=1).max() > self.max_votes:
            raise ValueError(f"`votes` must hold at most max_votes = {self.max_votes} votes per histogram.")
        return gaps

    def release_upper_bound(self, votes: ArrayLike, rng: np.random.Generator) -> float:
        """The private upper bound ``eps_sigma1`` of thesis Algorithm 9 (lines 4-8) on vote histograms ``votes``
        (``T x c``): a DP release, an upper bound of the data-dependent epsilon with probability ``1 - delta_2``."""
        gaps = self.check_votes(votes)
        r = self.rdp_table()
        f = float(math.fsum(r[gaps])) * (1.0 + _SLACK)
        return self.release_from_statistics(f, smooth_sensitivity(gaps, r, self.beta), rng)

    def release_from_statistics(self, rdp_value: float, smooth_sens: float, rng: np.random.Generator) -> float:
        """Lines 6-8 of thesis Algorithm 9 given ``F(X)`` (``rdp_value``) and ``SS_beta(X)`` (``smooth_sens``),
        as computed by :meth:`release_upper_bound` (which is this on the votes' statistics; exposed so that a
        sweep over ``sigma_test``, ``sigma_2`` and the delta split reuses them). ``mu = log SS + beta
        N(0, sigma_2^2) + beta sigma_2 z`` and ``F + SS N(0, sigma_s^2) + sigma_s z e^mu``, converted at
        ``order`` and ``delta_M``; ``z = sqrt(2 log(2/delta_2))``."""
        f = _validate.nonnegative(rdp_value, "rdp_value", "PATEPTR.release_from_statistics")
        ss = max(_validate.nonnegative(smooth_sens, "smooth_sens", "PATEPTR.release_from_statistics"), 1e-300)
        z = math.sqrt(2.0 * math.log(2.0 / self.false_positive_rate))
        s_s, s2 = self.sigma_test, self.sigma_2
        mu = math.log(ss) + self.beta * s2 * float(rng.normal()) + z * s2 * self.beta
        upper = f + ss * s_s * float(rng.normal()) + s_s * z * math.exp(mu)
        return self.epsilon_from_rdp(upper + abs(upper) * _SLACK)
