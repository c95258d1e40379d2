"""Noisy screening of Private-kNN (Private-kNN Sec 3 step 2, Thm 7 / Thm 9; thesis Thm 4.3.1).

A query passes the screen when its plurality vote count plus Gaussian noise exceeds a threshold::

    pass  iff  max_i n_i(x) + N(0, sigma^2) > T

Only the bit pass / fail is released. Three objects describe its privacy:

* :class:`NoisyScreening`: the data-independent Renyi DP of one screening (Private-kNN Thm 9), a
  :class:`~mechanisms.base.Mechanism`.
* :class:`DataDependentScreening`: the Renyi divergence at the actual vote counts (Private-kNN Def 6, App. F).
  It is itself a function of the private data, so it is *not* a mechanism and accountants refuse it
  (DESIGN.md privacy rule 7).
* :func:`subsampled_screening`: screening of a Poisson subsample, the pointwise minimum of proven RDP bounds
  (:class:`SubsampledScreening`). The tight subsampling bound (thesis Thm 2.3.4) is *not* proven for
  screening: it needs the Pearson-Vajda condition, and for two Bernoulli outcomes with success probabilities
  ``p``, ``q`` the odd-order term ``(p - q)^l (q^(1 - l) - (1 - q)^(1 - l))`` is negative for some ordered pairs
  (``l = 3, p = 0.2, q = 0.3``); ``PoissonSubsampled(NoisyScreening(...))`` therefore uses the general bound
  (thesis Thm 2.3.1), which is loose. The paper's Figure 5 value 1.04 applies Thm 2.3.4's formula anyway (an
  unproven method); :class:`SubsampledScreening` proves a value at most as large by joint quasi-convexity of
  the Renyi divergence over the subsamples.

The pluralities range over ``[min_plurality, k]``; the default ``ceil(k / c)`` assumes that exactly ``k`` votes
are cast (a subsample with fewer than ``k`` records must be padded with public dummy votes, or
``min_plurality=0`` used).

Neighbouring relation: add-or-remove one private record. The vote histogram is that of the ``k`` nearest
neighbours of the query in the (sub)sampled private set. Adding or removing one record either swaps one
neighbour for another (one vote moves between two classes) or, when fewer than ``k`` records are present,
adds or removes one vote; either way the plurality count changes by at most one (sensitivity 1).
"""

import dataclasses
import math

import numpy as np
from scipy import special

from mechanisms import _validate
from mechanisms.base import Mechanism
from mechanisms.gaussian import GaussianMechanism
from mechanisms.subsampled import PoissonSubsampled

__all__ = ["NoisyScreening", "DataDependentScreening", "SubsampledScreening", "subsampled_screening"]

#: Relative slack that rounds every returned RDP value up. The float64 evaluation error of the Bernoulli
#: Renyi divergence below is about ``1e-16 * (1 + |log p| / |log p - log q|)`` relative; the tests check the
#: values against a 50-digit mpmath brute force over every plurality to 1e-11.
_RELATIVE_SLACK = 1e-11
#: Work arrays hold at most this many (order, pair) entries at a time.
_CHUNK = 1 << 20


def _log_pass(t, threshold, sigma):
    """``(log P[N(t, sigma^2) > T], log P[N(t, sigma^2) <= T])`` by ``log_ndtr`` (no cancellation)."""
    z = (np.asarray(t, dtype=np.float64) - threshold) / sigma
    return special.log_ndtr(z), special.log_ndtr(-z)


#: Series region of :func:`_log_h1`: ``|alpha v| <= 1.5`` and ``|v| <= 0.5``.
_SERIES_LIMIT = 1.5
_SERIES_MAX_V = 0.5


def _series_terms(v_max):
    """Number of terms after which ``sum_n C(alpha, n) v^n`` (``|alpha v| <= 1.5``) has a remainder below
    1e-18 of its leading term: the term ratio is at most ``(1.5 + n v_max) / (n + 1)``."""
    n, product = 2, 1.0
    while product > 1e-18 and n < 400:
        product *= (_SERIES_LIMIT + n * v_max) / (n + 1)
        n += 1
    return n


def _log_h1(alpha, log_abs_v, sign_v):
    """``log h1(v)``, ``h1(v) = (1 + v)^alpha - 1 - alpha v >= 0`` for ``v >= -1``, ``alpha > 1``; -inf at 0.

    ``v`` is given as ``(log |v|, sign v)``. Small ``v``: ``h1 = v^2 sum_{n>=2} C(alpha, n) v^(n-2)`` (the first
    order cancels analytically; ``v^2`` stays in log space); larger positive ``v``:
    ``alpha log1p(v) + log1p(-(1 + alpha v) (1 + v)^(-alpha))`` (the bracket is < 1 by Bernoulli's inequality);
    larger negative ``v``: ``alpha |v| + expm1(alpha log1p(v))`` directly (at most a factor 2 cancels).
    """
    shape = np.broadcast_shapes(np.shape(alpha), np.shape(log_abs_v))
    alpha = np.broadcast_to(alpha, shape)
    sg = np.broadcast_to(sign_v, shape)
    # v >= -1: a rounded |v| slightly above 1 on the negative side (1 - q of 1e-261) is clamped to 1
    la = np.where(sg < 0, np.minimum(log_abs_v, 0.0), log_abs_v)
    out = np.full(shape, -np.inf)
    with np.errstate(divide="ignore", over="ignore", invalid="ignore"):
        log_alpha = np.log(alpha)
        nonzero = sg != 0
        small = nonzero & (log_alpha + la <= math.log(_SERIES_LIMIT)) & (la <= math.log(_SERIES_MAX_V))
        pos = nonzero & (sg > 0) & ~small
        neg = nonzero & (sg < 0) & ~small
        if pos.any():
            a_, l_ = alpha[pos], la[pos]
            top = a_ * np.logaddexp(0.0, l_)  # alpha log(1 + v)
            log_linear = np.logaddexp(0.0, np.log(a_) + l_)  # log(1 + alpha v) <= top
            out[pos] = top + np.log1p(-np.exp(np.minimum(log_linear - top, 0.0)))
        if neg.any():
            a_, v = alpha[neg], -np.exp(la[neg])  # v in [-1, 0)
            out[neg] = np.log(-a_ * v + np.expm1(a_ * np.log1p(v)))
        if small.any():
            a_, l_ = alpha[small], la[small]
            v = sg[small] * np.exp(l_)  # may underflow to 0: only the terms n >= 3 vanish then
            coef = a_ * (a_ - 1.0) / 2.0
            total = coef.copy()
            power = np.ones(v.shape)
            for n in range(3, _series_terms(float(np.exp(l_.max())))):
                coef = coef * (a_ - (n - 1.0)) / n
                power = power * v
                total = total + coef * power
            out[small] = np.where(total > 0, 2.0 * l_ + np.log(np.where(total > 0, total, 1.0)), -np.inf)
    return out


def _log1p_signed(log_abs_v, sign_v):
    """``log(1 + v)`` for ``v >= -1`` given as ``(log |v|, sign v)``."""
    with np.errstate(divide="ignore"):
        return np.where(sign_v > 0, np.logaddexp(0.0, log_abs_v),
                        np.where(sign_v < 0, np.log1p(-np.exp(np.minimum(log_abs_v, 0.0))), 0.0))


def bernoulli_renyi(orders, log_q, log_1mq, log_abs_delta, sign_delta):
    """Renyi divergence ``D_alpha(Bern(q + Delta) || Bern(q))`` for every (order, pair).

    Inputs per pair: ``log q``, ``log(1 - q)`` and ``Delta = p - q`` as ``(log |Delta|, sign Delta)``.
    ``(alpha - 1) D_alpha = log(p^alpha q^(1 - alpha) + (1 - p)^alpha (1 - q)^(1 - alpha))``
    (Private-kNN Thm 9; Mironov 2017, Prop 5) ``= log1p(S)`` with

    ``S = q h1(Delta / q) + (1 - q) h1(-Delta / (1 - q))``, ``h1(v) = (1 + v)^alpha - 1 - alpha v >= 0``:

    the first-order terms ``+- alpha Delta`` cancel exactly (both outcomes share one ``Delta``), so ``S`` is a
    sum of two non-negative terms in log space and keeps its relative precision for orders near 1, for pairs
    a hair apart and for probabilities near 0 or 1. Order inf: ``max(log1p(Delta/q), log1p(-Delta/(1-q)))``.
    Returns an array ``(len(orders), len(log_q))``, not yet rounded up.
    """
    orders = np.asarray(orders, dtype=np.float64).reshape(-1, 1)
    log_q = np.asarray(log_q, dtype=np.float64)[None, :]
    log_1mq = np.asarray(log_1mq, dtype=np.float64)[None, :]
    log_abs_delta = np.asarray(log_abs_delta, dtype=np.float64)[None, :]
    sign = np.asarray(sign_delta, dtype=np.float64)[None, :]
    l1, s1 = log_abs_delta - log_q, sign  # v1 = Delta / q
    l0, s0 = log_abs_delta - log_1mq, -sign  # v0 = -Delta / (1 - q)
    out = np.empty((orders.shape[0], log_q.shape[1]))
    inf = np.isinf(orders[:, 0])
    out[inf] = np.maximum(_log1p_signed(l1, s1), _log1p_signed(l0, s0))
    finite = ~inf
    if finite.any():
        alpha = orders[finite]
        log_s = np.logaddexp(log_q + _log_h1(alpha, l1, s1), log_1mq + _log_h1(alpha, l0, s0))
        out[finite] = np.logaddexp(0.0, log_s) / (alpha - 1.0)
    return out


def _log_normal_difference(z_p, z_q):
    """``(log |Phi(z_p) - Phi(z_q)|, sign)`` without cancellation: from the smaller tails when ``z_p``, ``z_q``
    have the same sign (``expm1`` of the log-ratio), from ``erf`` when they straddle 0."""
    z_p, z_q = np.broadcast_arrays(np.asarray(z_p, dtype=np.float64), np.asarray(z_q, dtype=np.float64))
    log_abs = np.full(z_p.shape, -np.inf)
    sign = np.zeros(z_p.shape)
    low = (z_p <= 0) & (z_q <= 0)
    high = (z_p > 0) & (z_q > 0)
    mid = ~low & ~high
    with np.errstate(divide="ignore"):
        for mask, first, second, flip in ((low, z_p, z_q, 1.0), (high, -z_q, -z_p, 1.0)):
            if mask.any():
                lf, ls = special.log_ndtr(first[mask]), special.log_ndtr(second[mask])
                d = lf - ls  # Phi(first) - Phi(second) = Phi(second) expm1(d)
                log_abs[mask] = ls + np.maximum(d, 0.0) + np.log(-np.expm1(-np.abs(d)))
                sign[mask] = flip * np.sign(d)
        if mid.any():
            diff = 0.5 * (special.erf(z_p[mid] / math.sqrt(2.0)) - special.erf(z_q[mid] / math.sqrt(2.0)))
            log_abs[mid] = np.log(np.abs(diff))
            sign[mid] = np.sign(diff)
    return log_abs, sign


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class NoisyScreening(Mechanism):
    """Private-kNN noisy screening: release whether ``max_i n_i + N(0, sigma^2) > threshold``.

    RDP (upper bound, add-or-remove-one; Private-kNN Thm 9 = Thm 7, thesis Thm 4.3.1)::

        eps(alpha) = max_{(p, q) in S} log(p^alpha q^(1 - alpha) + (1 - p)^alpha (1 - q)^(1 - alpha)) / (alpha - 1)

    where ``p_t = P[N(t, sigma^2) > T] = Phi((t - T) / sigma)`` and ``S`` holds the ordered pairs
    ``(p_t, p_{t+1})`` and ``(p_{t+1}, p_t)`` for every pair of pluralities ``t, t + 1`` in
    ``[min_plurality, k]``. The plurality count has sensitivity 1, so both neighbours ``t +- 1`` of every
    plurality are covered; pluralities outside the range are impossible (proof of Thm 9), so pairs leaving it
    are not included. Order inf: ``max over S of max(log(p/q), log((1-p)/(1-q)))`` (finite: screening is pure
    DP, with a large epsilon). Cost O(k) per order, vectorised; values are rounded up by a relative
    ``1e-11``. By data processing, ``eps(alpha) <= alpha / (2 sigma^2)``, the Gaussian mechanism's curve.

    ``satisfies_pearson_vajda`` is False: screening pairs need not straddle 1/2, so the tight subsampling
    bound (thesis Thm 2.3.4) is not proven for it and ``PoissonSubsampled(NoisyScreening(...))`` uses the
    general bound (thesis Thm 2.3.1). Prefer :func:`subsampled_screening`, which is never looser.

    Parameters
    ----------
    k : int
        Number of neighbours whose labels vote.
    threshold : float
        ``T``: the query passes when the noisy plurality exceeds it.
    sigma : float
        Standard deviation of the screening noise (``sigma_1`` in the paper).
    num_classes : int
        ``c``; the plurality of ``k`` votes over ``c`` classes is at least ``ceil(k / c)`` (pigeonhole).
    min_plurality : int, optional
        Smallest plurality count the screen can ever see; default ``ceil(k / num_classes)``, which assumes
        every (sub)sample holds at least ``k`` records so that exactly ``k`` votes are cast. Pass 0 when a
        subsample may hold fewer than ``k`` records (small private sets, small sampling probabilities).

    Examples
    --------
    >>> m = NoisyScreening(k=300, threshold=210, sigma=85.0, num_classes=10)
    >>> bool(m.rdp(10.0) <= GaussianMechanism(sigma=85.0).rdp(10.0))
    True
    >>> round(float(m.rdp(2.0)) * 1e5, 3)
    8.811
    """

    k: int
    threshold: float
    sigma: float
    num_classes: int
    min_plurality: int = None

    #: Not proven (and false for some screening pairs): see the module docstring.
    satisfies_pearson_vajda = False

    def __post_init__(self):
        owner = "NoisyScreening"
        k = _validate.integer(self.k, "k", owner, minimum=1)
        c = _validate.integer(self.num_classes, "num_classes", owner, minimum=1)
        object.__setattr__(self, "k", k)
        object.__setattr__(self, "num_classes", c)
        object.__setattr__(self, "threshold", _validate.real(self.threshold, "threshold", owner))
        object.__setattr__(self, "sigma", _validate.positive(self.sigma, "sigma", owner))
        if self.min_plurality is None:
            lo = -(-k // c)
        else:
            lo = _validate.integer(self.min_plurality, "min_plurality", owner, minimum=0)
            if lo > k:
                raise ValueError(f"`min_plurality` of {owner} must be at most k = {k}; got {lo}.")
        object.__setattr__(self, "min_plurality", lo)

    @property
    def pluralities(self):
        """The possible plurality counts ``min_plurality, ..., k``."""
        return np.arange(self.min_plurality, self.k + 1)

    def log_pass_probabilities(self, pluralities=None):
        """``(log p_t, log(1 - p_t))`` with ``p_t = Phi((t - T) / sigma)``, the probability of passing."""
        t = self.pluralities if pluralities is None else np.asarray(pluralities, dtype=np.float64)
        return _log_pass(t, self.threshold, self.sigma)

    def _z(self, t):
        return (np.asarray(t, dtype=np.float64) - self.threshold) / self.sigma

    def _pairs(self, first=None, second=None):
        """``(log q, log(1 - q), log |Delta|, sign Delta)`` of the ordered pairs ``(Bern(p_P), Bern(p_Q))``,
        ``Delta = p_P - p_Q``; by default ``(P, Q)`` = ``(t, t+1)`` then ``(t+1, t)`` over the range."""
        if first is None:
            t = self.pluralities
            first = np.concatenate((t[:-1], t[1:]))
            second = np.concatenate((t[1:], t[:-1]))
        log_q, log_1mq = self.log_pass_probabilities(second)
        log_abs_delta, sign = _log_normal_difference(self._z(first), self._z(second))
        return log_q, log_1mq, log_abs_delta, sign

    def rdp_by_plurality(self, orders):
        """Per-pair curves: array ``(len(orders), 2 * (k - min_plurality))`` (pairs ``(t, t+1)``, then
        ``(t+1, t)``, in increasing ``t``), before the maximum and the rounding; for plots and tests."""
        orders = _validate.orders_array(orders, "NoisyScreening").reshape(-1)
        return bernoulli_renyi(orders, *self._pairs())

    def _rdp(self, orders):
        pairs = self._pairs()
        n_pairs = pairs[0].size
        if n_pairs == 0:  # a single possible plurality: the output does not depend on the data
            return np.zeros(orders.shape)
        out = np.empty(orders.shape)
        step = max(1, _CHUNK // n_pairs)
        for start in range(0, orders.size, step):
            chunk = orders[start : start + step]
            out[start : start + step] = bernoulli_renyi(chunk, *pairs).max(axis=1)
        return out * (1.0 + _RELATIVE_SLACK)


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class DataDependentScreening:
    """Data-dependent RDP of one screening at the actual votes (Private-kNN Def 6 and App. F). NOT a guarantee.

    ``eps_X(alpha) = max over pluralities t' = t +- 1 in range, both directions, of D_alpha`` between
    ``Bern(p_t)`` and ``Bern(p_t')`` where ``t`` is the plurality of ``votes``. It depends on the private data,
    so releasing it (or an epsilon computed from it) leaks information (DESIGN.md rule 7); it is not a
    :class:`~mechanisms.base.Mechanism`, and ``RDPAccountant.compose`` refuses it. Use it for analysis only
    (for example Figure 5's "data-dependent screening" curve).

    Parameters
    ----------
    screening : NoisyScreening
    votes : sequence of int
        The vote histogram of the query (``num_classes`` non-negative counts, at most ``k`` in total, with
        plurality at least ``screening.min_plurality``).

    Examples
    --------
    >>> s = NoisyScreening(k=300, threshold=210, sigma=85.0, num_classes=10)
    >>> d = DataDependentScreening(screening=s, votes=(300,) + (0,) * 9)
    >>> bool(d.data_dependent_rdp(2.0) < s.rdp(2.0))
    True
    """

    screening: NoisyScreening
    votes: tuple

    def __post_init__(self):
        owner = "DataDependentScreening"
        if not isinstance(self.screening, NoisyScreening):
            raise TypeError(
                f"`screening` of {owner} must be a NoisyScreening; got {type(self.screening).__name__}."
            )
        try:
            raw = list(self.votes)
        except TypeError:
            raise TypeError(f"`votes` of {owner} must be a sequence of integers; got {self.votes!r}.") from None
        votes = tuple(_validate.integer(v, "votes", owner, minimum=0) for v in raw)
        s = self.screening
        if len(votes) != s.num_classes:
            raise ValueError(f"`votes` of {owner} must have num_classes = {s.num_classes} entries; got {len(votes)}.")
        if sum(votes) > s.k:
            raise ValueError(f"`votes` of {owner} must sum to at most k = {s.k}; got {sum(votes)}.")
        if max(votes) < s.min_plurality:
            raise ValueError(
                f"`votes` of {owner} must have plurality at least min_plurality = {s.min_plurality}; "
                f"got {max(votes)}."
            )
        object.__setattr__(self, "votes", votes)

    @property
    def plurality(self):
        return max(self.votes)

    def data_dependent_rdp(self, orders):
        """The data-dependent RDP at each order (a sensitive value; never a releasable guarantee)."""
        arr = _validate.orders_array(orders, "DataDependentScreening")
        flat = arr.reshape(-1)
        s, t = self.screening, self.plurality
        others = np.array([u for u in (t - 1, t + 1) if s.min_plurality <= u <= s.k], dtype=np.float64)
        if others.size == 0:
            return np.zeros(arr.shape)[()]
        mine = np.full(others.shape, float(t))
        first = np.concatenate((mine, others))
        second = np.concatenate((others, mine))
        values = bernoulli_renyi(flat, *s._pairs(first, second)).max(axis=1) * (1.0 + _RELATIVE_SLACK)
        return values.reshape(arr.shape)[()]


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class SubsampledScreening(Mechanism):
    """Noisy screening on a Poisson subsample: the pointwise minimum of proven RDP upper bounds.

    ``eps(alpha) = min(pairwise(alpha), gaussian(alpha), general(alpha))`` (add-or-remove-one), with

    * ``pairwise`` (:meth:`pairwise_rdp`): with ``X = X' + {x}`` and ``S`` the Poisson subsample of ``X'``, the
      outputs are the mixtures ``M(X) = E_S[(1 - g) M(S) + g M(S + x)]`` and ``M(X') = E_S[M(S)]`` with the
      same weights. For each ``S``, ``M(S) = Bern(p_t)`` and ``M(S + x) = Bern(p_t')`` with pluralities
      ``|t' - t| <= 1`` in ``[min_plurality, k]``, so the component pair is ``(Bern(m), Bern(p_t))`` with
      ``m = (1 - g) p_t + g p_t'``. The Renyi divergence is jointly quasi-convex (van Erven & Harremoes 2014,
      Thm 13), so both directions are at most

      ``max over ordered neighbouring pluralities (t, t') of``
      ``max(D_alpha(Bern(m) || Bern(p_t)), D_alpha(Bern(p_t) || Bern(m)))``,

      exact Bernoulli divergences evaluated like :class:`NoisyScreening`'s, at any real order and order inf.
      This proof needs no Pearson-Vajda condition and is the tightest of the three in the paper's settings
      (Figure 5: epsilon 1.042 at the classic conversion, the paper's figure, proven);
    * ``gaussian``: the tight bound of the Poisson-subsampled Gaussian mechanism with sensitivity 1 and the
      same sigma (thesis Thm 2.3.4 with Prop 2.3.6; Mironov, Talwar & Zhang 2019 for real orders): screening is
      post-processing of the Gaussian mechanism on the plurality count, whose sensitivity is 1, and Renyi
      divergences do not grow under post-processing;
    * ``general``: thesis Thm 2.3.1 (any mechanism) on :class:`NoisyScreening`'s curve,
      ``PoissonSubsampled(screening, q)`` (used because ``satisfies_pearson_vajda`` is False).

    Each is an upper bound at every order, so their minimum is one. ``general`` is never below ``pairwise``:
    Thm 2.3.1 applied to the two-point mechanism of one Bernoulli pair (both orders, whose curve is at most the
    screening curve) bounds exactly that pair's two subsampled divergences, and the bound grows with the
    curve; so :meth:`_rdp` evaluates only ``pairwise`` and ``gaussian`` (the tests check the inequality), and
    ``general`` stays available as a property. Notes: the subsampled Gaussian pair is also a
    dominating pair of subsampled screening (post-processing), usable by the characteristic-function
    accountant: compose :attr:`dominating_gaussian` there (this class itself offers no characteristic function).
    """

    screening: NoisyScreening
    sampling_probability: float

    def __post_init__(self):
        if not isinstance(self.screening, NoisyScreening):
            raise TypeError(
                f"`screening` of SubsampledScreening must be a NoisyScreening; got {type(self.screening).__name__}."
            )
        object.__setattr__(
            self,
            "sampling_probability",
            _validate.probability(self.sampling_probability, "sampling_probability", "SubsampledScreening"),
        )

    @property
    def general(self):
        """``PoissonSubsampled(screening)``: thesis Thm 2.3.1 on the screening curve."""
        return PoissonSubsampled(self.screening, sampling_probability=self.sampling_probability)

    @property
    def dominating_gaussian(self):
        """The Poisson-subsampled Gaussian (sensitivity 1, same sigma) that this mechanism post-processes."""
        return PoissonSubsampled(
            GaussianMechanism(sigma=self.screening.sigma, sensitivity=1.0),
            sampling_probability=self.sampling_probability,
        )

    def pairwise_rdp(self, orders):
        """The joint-quasi-convexity bound (first item above), rounded up; any real orders > 1 and inf."""
        arr = _validate.orders_array(orders, "SubsampledScreening")
        flat = arr.reshape(-1)
        return self._pairwise(flat).reshape(arr.shape)[()]

    def _pairwise(self, orders):
        g = self.sampling_probability
        # Q = Bern(p_t) without the record, P = Bern(p_t') with it; the mixture is Bern(p_t + g Delta).
        screening = self.screening
        t = screening.pluralities
        with_x, without = np.concatenate((t[:-1], t[1:])), np.concatenate((t[1:], t[:-1]))
        log_q, log_1mq, log_abs_delta, sign = screening._pairs(with_x, without)
        if g == 0.0 or log_q.size == 0:
            return np.zeros(orders.shape)
        log_abs_sub = log_abs_delta + math.log(g)
        # the mixture m = (1 - g) q + g p: sums of positive terms, no cancellation
        log_p, log_1mp = screening.log_pass_probabilities(with_x)
        with np.errstate(divide="ignore"):
            log_1mg = math.log1p(-g) if g < 1.0 else -np.inf
        log_m = np.logaddexp(log_1mg + log_q, math.log(g) + log_p)
        log_1mm = np.logaddexp(log_1mg + log_1mq, math.log(g) + log_1mp)
        out = np.empty(orders.shape)
        step = max(1, _CHUNK // log_q.size)
        for start in range(0, orders.size, step):
            chunk = orders[start : start + step]
            remove = bernoulli_renyi(chunk, log_q, log_1mq, log_abs_sub, sign).max(axis=1)
            add = bernoulli_renyi(chunk, log_m, log_1mm, log_abs_sub, -sign).max(axis=1)
            out[start : start + step] = np.maximum(remove, add)
        return out * (1.0 + _RELATIVE_SLACK)

    def _rdp(self, orders):
        # ``general`` is never below ``pairwise`` (see the class notes), so it is not evaluated here.
        return np.minimum(self._pairwise(orders), self.dominating_gaussian.rdp(orders))


def subsampled_screening(screening, sampling_probability):
    """Proven RDP of ``screening`` run on a Poisson subsample (independent coin per record).

    Returns a :class:`SubsampledScreening`: the pointwise minimum of the joint-quasi-convexity bound over the
    neighbouring Bernoulli pairs, the tight subsampled-Gaussian bound with sensitivity 1 (screening is its
    post-processing) and thesis Thm 2.3.1 on the screening curve.

    Examples
    --------
    >>> s = NoisyScreening(k=300, threshold=210, sigma=85.0, num_classes=10)
    >>> m = subsampled_screening(s, 0.25)
    >>> bool(m.rdp(20.0) <= m.dominating_gaussian.rdp(20.0))
    True
    """
    return SubsampledScreening(screening=screening, sampling_probability=sampling_probability)
