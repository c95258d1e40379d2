"""Noisy screening of Private-kNN (Private-kNN Sec 3 step 2, Thm 7 / Thm 9; thesis Thm 4.3.1).

A query passes the screen when its plurality vote count plus Gaussian noise exceeds a threshold::

    pass  iff  max_i n_i(x) + N(0, sigma^2) > T

Only the bit pass / fail is released. Three objects describe its privacy:

* :class:`NoisyScreening`: the data-independent Renyi DP of one screening (Private-kNN Thm 9), a
  :class:`~mechanisms.base.Mechanism`.
* :class:`DataDependentScreening`: the Renyi divergence at the actual vote counts (Private-kNN Def 6, App. F).
  It is itself a function of the private data, so it is *not* a mechanism and accountants refuse it
  (DESIGN.md privacy rule 7).
* :func:`subsampled_screening`: screening of a Poisson subsample, the pointwise minimum of two proven RDP
  bounds. The tight subsampling bound (thesis Thm 2.3.4) is *not* proven for screening: it needs the
  Pearson-Vajda condition, and for two Bernoulli outcomes with success probabilities ``p``, ``q`` the odd-order
  term ``(p - q)^l (q^(1 - l) - (1 - q)^(1 - l))`` is negative for some ordered pairs (``l = 3, p = 0.2,
  q = 0.3``). The paper's own Figure 5 value 1.04 applies it anyway; that number is not a proven bound.

Neighbouring relation: add-or-remove one private record. The vote histogram is that of the ``k`` nearest
neighbours of the query in the (sub)sampled private set. Adding or removing one record either swaps one
neighbour for another (one vote moves between two classes) or, when fewer than ``k`` records are present,
adds or removes one vote; either way the plurality count changes by at most one (sensitivity 1).
"""

import dataclasses
import math
import numbers
import operator

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


def _integer(value, name, owner, *, minimum):
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Integral):
        raise TypeError(f"`{name}` of {owner} must be an integer; got {type(value).__name__} {value!r}.")
    n = operator.index(value)
    if n < minimum:
        raise ValueError(f"`{name}` of {owner} must be at least {minimum}; got {n}.")
    return n


def _log_pass(t, threshold, sigma):
    """``(log P[N(t, sigma^2) > T], log P[N(t, sigma^2) <= T])`` by ``log_ndtr`` (no cancellation)."""
    z = (np.asarray(t, dtype=np.float64) - threshold) / sigma
    return special.log_ndtr(z), special.log_ndtr(-z)


def bernoulli_renyi(orders, log_p, log_1mp, log_q, log_1mq):
    """Renyi divergence ``D_alpha(Bern(p) || Bern(q))`` for every (order, pair), from log-probabilities.

    ``(alpha - 1) D_alpha = log(p^alpha q^(1 - alpha) + (1 - p)^alpha (1 - q)^(1 - alpha))``
    (Private-kNN Thm 9; Mironov 2017, Prop 5), evaluated as ``log1p(S)`` with
    ``S = p expm1((alpha - 1) a) + (1 - p) expm1((alpha - 1) b)``, ``a = log(p/q)``, ``b = log((1-p)/(1-q))``,
    a signed log-sum-exp, so that orders near 1 and probabilities near 0 or 1 keep their relative precision.
    Order inf gives ``max(a, b)``. Returns an array of shape ``(len(orders), len(log_p))``, not yet rounded up.
    """
    orders = np.asarray(orders, dtype=np.float64).reshape(-1, 1)
    a = (log_p - log_q)[None, :]
    b = (log_1mp - log_1mq)[None, :]
    out = np.empty((orders.shape[0], a.shape[1]))
    inf = np.isinf(orders[:, 0])
    out[inf] = np.maximum(a, b)
    finite = ~inf
    if finite.any():
        am1 = orders[finite] - 1.0
        x1, x2 = am1 * a, am1 * b
        with np.errstate(divide="ignore", invalid="ignore"):
            # log|expm1(x)| = max(x, 0) + log(-expm1(-|x|)); -inf at x = 0.
            l1 = log_p[None, :] + np.maximum(x1, 0.0) + np.log(-np.expm1(-np.abs(x1)))
            l2 = log_1mp[None, :] + np.maximum(x2, 0.0) + np.log(-np.expm1(-np.abs(x2)))
            top = np.maximum(l1, l2)
            scaled = np.sign(x1) * np.exp(l1 - top) + np.sign(x2) * np.exp(l2 - top)
            # S >= 0 mathematically (Renyi divergences are non-negative); S <= 0 here is rounding: zero.
            value = np.where(scaled > 0, np.logaddexp(0.0, top + np.log(scaled)), 0.0)
        out[finite] = value / am1
    return out


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
        k = _integer(self.k, "k", owner, minimum=1)
        c = _integer(self.num_classes, "num_classes", owner, minimum=1)
        object.__setattr__(self, "k", k)
        object.__setattr__(self, "num_classes", c)
        object.__setattr__(self, "threshold", _validate.real(self.threshold, "threshold", owner))
        object.__setattr__(self, "sigma", _validate.positive(self.sigma, "sigma", owner))
        if self.min_plurality is None:
            lo = -(-k // c)
        else:
            lo = _integer(self.min_plurality, "min_plurality", owner, minimum=0)
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

    def _pairs(self):
        """Log-probabilities of the ordered neighbouring pairs ``(t, t+1)`` and ``(t+1, t)``."""
        lp, l1p = self.log_pass_probabilities()
        p_lp = np.concatenate((lp[:-1], lp[1:]))
        p_l1p = np.concatenate((l1p[:-1], l1p[1:]))
        q_lp = np.concatenate((lp[1:], lp[:-1]))
        q_l1p = np.concatenate((l1p[1:], l1p[:-1]))
        return p_lp, p_l1p, q_lp, q_l1p

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
        votes = tuple(_integer(v, "votes", owner, minimum=0) for v in raw)
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
        lp, l1p = s.log_pass_probabilities([float(t)])
        olp, ol1p = s.log_pass_probabilities(others)
        n = others.size
        p = (np.concatenate((np.repeat(lp, n), olp)), np.concatenate((np.repeat(l1p, n), ol1p)))
        q = (np.concatenate((olp, np.repeat(lp, n))), np.concatenate((ol1p, np.repeat(l1p, n))))
        values = bernoulli_renyi(flat, p[0], p[1], q[0], q[1]).max(axis=1) * (1.0 + _RELATIVE_SLACK)
        return values.reshape(arr.shape)[()]


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class SubsampledScreening(Mechanism):
    """Noisy screening on a Poisson subsample: the pointwise minimum of two proven RDP upper bounds.

    ``eps(alpha) = min(general(alpha), gaussian(alpha))`` (add-or-remove-one), with

    * ``general``: thesis Thm 2.3.1 (any mechanism) applied to :class:`NoisyScreening`'s curve,
      ``PoissonSubsampled(screening, q)`` (which uses Thm 2.3.1 because ``satisfies_pearson_vajda`` is False);
    * ``gaussian``: the tight bound of the Poisson-subsampled Gaussian mechanism with sensitivity 1 and the
      same sigma (thesis Thm 2.3.4 with Prop 2.3.6; Mironov, Talwar & Zhang 2019 for real orders): screening is
      post-processing of the Gaussian mechanism on the plurality count, whose sensitivity is 1, and Renyi
      divergences do not grow under post-processing.

    Each is an upper bound at every order, so their minimum is one. The same reasoning makes the subsampled
    Gaussian pair a dominating pair of subsampled screening, usable by the characteristic-function
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

    def _rdp(self, orders):
        return np.minimum(self.general.rdp(orders), self.dominating_gaussian.rdp(orders))


def subsampled_screening(screening, sampling_probability):
    """Proven RDP of ``screening`` run on a Poisson subsample (independent coin per record).

    Returns a :class:`SubsampledScreening`: the pointwise minimum of thesis Thm 2.3.1 on the screening curve
    and the tight subsampled-Gaussian bound with sensitivity 1 (screening is its post-processing).

    Examples
    --------
    >>> s = NoisyScreening(k=300, threshold=210, sigma=85.0, num_classes=10)
    >>> m = subsampled_screening(s, 0.25)
    >>> bool(m.rdp(20.0) <= m.dominating_gaussian.rdp(20.0))
    True
    """
    return SubsampledScreening(screening=screening, sampling_probability=sampling_probability)
