"""Random allocation (balls in bins) and shuffled batches: what dpledger can prove about them.

``RandomAllocation(mechanism, steps=t, selections=k)``: one epoch of ``t`` steps in which every record is used in
exactly ``k`` steps chosen uniformly at random, independently of the other records (add-or-remove-one; the batch
mechanism described under add-or-remove of a batch record). Composing it ``E`` times is ``E`` epochs.

**The dominating pair** (proof written here; it is the pair Feldman & Shenfeld 2025 and Chua et al. 2024 use).
Let ``(P, Q)`` dominate the batch mechanism for removal. Then, for removal,
``(P_t, Q_t) = (E_J[prod_i (P if i in J else Q)], Q^t)``, ``J`` a uniform ``k``-subset of the steps, dominates the
epoch, and ``(Q_t, P_t)`` for addition. Proof: a pair dominated for all ``alpha >= 0`` is, by Blackwell's theorem
for binary experiments (Dong, Roth & Su 2019, Thm 2.10), a post-processing of the dominating pair: at step ``i``,
given the outputs so far, a kernel ``K_i`` maps ``P`` to the step's output with the record and ``Q`` to the one
without. Applying the kernels in turn to a draw from ``P_t`` (or ``Q_t``) produces the epoch's outputs on ``D``
(or ``D'``), because ``J`` is independent of everything else (other records choose their steps independently);
hockey-stick divergences do not increase under post-processing.

What is computed from it:

* **upper bound, any base** (both accountants): revealing ``J`` only helps an adversary, and with ``J`` revealed the
  pair is ``(P^k, Q^k)`` (symmetry), so the epoch is dominated by the ``k``-fold composition of the base: the
  un-amplified bound;
* **upper bound, Gaussian base, k = 1** (RDP): the removal direction's Renyi divergence exactly at integer orders,
  ``E_Q[L^alpha] = t^-alpha alpha! [x^alpha] (sum_n e^(mu^2 n(n-1)/2) x^n / n!)^t`` (``L`` the mean of ``t``
  independent ``exp(mu Z - mu^2/2)``), and a proven upper bound for the addition direction,
  ``E_Q[L^(1-alpha)] = t^m / Gamma(m) int_0^inf u^(m-1) psi(u)^t du`` with ``m = alpha - 1`` and
  ``psi(u) = E[exp(-u X)]`` (``x^-m = Gamma(m)^-1 int s^(m-1) e^(-s x) ds``), by upper Riemann sums of the
  decreasing ``psi`` and a tail bound ``psi(u) <= (p/e)^p E[X^-p] u^-p``;
* **lower bounds, Gaussian base**: the pair is realised by a one-dimensional sum query (the record 1, all others 0),
  so its removal-direction RDP is also a lower bound, and ``P(S) - e^eps Q(S)`` for the test
  "at least ``c`` of ``E`` epochs have a step output above ``tau``" is a proven lower bound on ``delta(eps)``
  (:meth:`RandomAllocation.epsilon_lower_bound`).

* **privacy-loss distribution, Gaussian base, k = 1** (characteristic-function accountant):
  :meth:`RandomAllocation.dominating_mechanism` is :class:`AllocationPair`, the pair above described by proven
  loss buckets (:mod:`mechanisms.allocation_pld`: the loss is ``log`` of a sum of independent lognormals, each
  rounded to a linear grid and summed by one FFT and an elementwise power, or summed in log space on a grid where
  the linear grid would be too long, every rounding and float error bounded in the safe direction), composed over
  epochs by the privacy
  buckets (connect-the-dots upper bound, rounded-down lower bound). This is the numerical privacy-loss-distribution
  analysis of the same pair Feldman & Shenfeld 2025 study; their closed-form (epsilon, delta) bounds and their
  decomposition are not implemented (their constants were not verified here).

**Shuffled batches** (a random permutation per epoch cut into fixed-size batches): within an epoch the batches are
dependent and, under add-or-remove, removing a record shifts the batch boundaries of the others; no tight upper
bound is proven, so dpledger reports only :func:`shuffled_epsilon_lower_bound` (under replace-one the same realised
pair as random allocation with ``k = 1`` occurs, so the same lower bound holds).
"""

from __future__ import annotations

import dataclasses
import functools
import math

import numpy as np
from numpy.typing import ArrayLike
from scipy import special

from dpledger.mechanisms import _validate
from dpledger.mechanisms.allocation_pld import (
    allocation_atoms,
    allocation_buckets,
    grid_step,
    linear_losses,
    linear_step,
)
from dpledger.mechanisms.base import Mechanism
from dpledger.mechanisms.composition import SelfComposed
from dpledger.mechanisms.loss_buckets import LossBuckets
from dpledger.mechanisms.relations import Direction
from dpledger.mechanisms.subsampled_rdp import chord_rdp

__all__ = [
    "AllocationPair",
    "RandomAllocation",
    "allocation_add_rdp_upper",
    "allocation_remove_rdp",
    "shuffled_epsilon_lower_bound",
]

#: Largest integer order at which the amplified Gaussian bounds are computed (the un-amplified bound beyond).
MAX_AMPLIFIED_ORDER = 256
#: Largest number of steps for which the amplified pair (:class:`AllocationPair`) is offered to the
#: characteristic-function accountant (beyond the linear grid's reach its log-space sums cost about ``log2(steps)``
#: quadratic passes).
MAX_PAIR_STEPS = 4096
#: Relative slack added to every sum of positive float64 terms before its logarithm (covers rounding).
_SLACK = 1e-8


def _log_conv(a, b, deg):
    """log-coefficients of the product of two series with positive coefficients given as logs, up to ``deg``."""
    out = np.full(deg + 1, -np.inf)
    for n in range(deg + 1):
        terms = a[: n + 1] + b[n::-1]
        peak = terms.max()
        if np.isfinite(peak):
            out[n] = peak + np.log(np.exp(terms - peak).sum())
    return out


def allocation_remove_rdp(orders: ArrayLike, mu: float, steps: int) -> np.ndarray:
    """Removal-direction Renyi divergence of random allocation of one of ``steps`` Gaussian steps (``mu`` =
    sensitivity / sigma), exact at integer orders >= 2 (a proven upper bound after rounding up, and a lower
    bound of the mechanism since the pair is realised): ``log(t^-a a! [x^a] f(x)^t) / (a - 1)``, ``f(x) =
    sum_n e^(mu^2 n(n-1)/2) x^n / n!``."""
    orders = np.asarray(orders, dtype=np.float64).reshape(-1)
    top = int(orders.max())
    n = np.arange(top + 1, dtype=np.float64)
    log_f = mu * mu * n * (n - 1.0) / 2.0 - special.gammaln(n + 1.0)
    result, power, e, ops = None, log_f, int(steps), 0
    while e:  # binary exponentiation of the truncated series
        if e & 1:
            result = power if result is None else _log_conv(result, power, top)
            ops += 1
        e >>= 1
        if e:
            power = _log_conv(power, power, top)
            ops += 1
    idx = orders.astype(np.int64)
    log_moment = special.gammaln(orders + 1.0) - orders * math.log(steps) + result[idx]
    slack = ops * _SLACK + 1e-12 * (1.0 + np.abs(log_moment))
    return (log_moment + slack) / (orders - 1.0)


def max_add_order(mu):
    """Largest integer order at which :func:`allocation_add_rdp_upper` is computed for ``mu``: ``1 + min(15,
    floor(30 / mu))`` (the grid of ``z`` must reach ``-(order - 1) mu`` where the moment's mass sits)."""
    return 1 + min(15, int(30.0 / mu))


@functools.lru_cache(maxsize=16)
def _log_psi_grid(mu):
    """``(log u, log psi_upper(u))``: proven upper bounds on ``log psi(u) = log E[exp(-u X)]``,
    ``X = exp(mu Z - mu^2/2)``, on a fixed grid of ``u``, by upper Riemann sums over cells of ``z`` (the integrand
    decreases in ``z``, so each cell is bounded by its left end; the part below the grid by its mass). The cells
    are a uniform grid of step 0.005 merged with 10,000 cells of equal probability, so no cell holds more than
    1e-4 of the mass: the sum exceeds ``psi`` by at most that much. Read-only arrays, cached per ``mu``."""
    z_min = -((max_add_order(mu) - 1) * mu + 14.0)
    quantiles = special.ndtri(np.linspace(0.0, 1.0, 10_001)[1:-1])
    z = np.union1d(np.arange(z_min, 12.0 + 0.005, 0.005), quantiles[(quantiles > z_min) & (quantiles < 12.0)])
    log_u = np.linspace(math.log(1e-9), mu * -z_min + 8.0, 2001)
    u = np.exp(log_u)
    # log masses of (-inf, z0), the cells [z_j, z_j+1] and (zN, inf), from log Phi without underflow
    log_cdf = np.concatenate((special.log_ndtr(z), [0.0]))
    with np.errstate(divide="ignore"):
        log_mass = np.concatenate(([log_cdf[0]], log_cdf[1:] + np.log(-np.expm1(log_cdf[:-1] - log_cdf[1:]))))
    x_left = np.concatenate(([0.0], np.exp(mu * z - mu * mu / 2.0)))  # smallest x in each cell (0: bound by 1)
    mass = np.exp(log_mass)
    out = np.empty(u.shape)
    for start in range(0, u.size, 100):
        block = u[start : start + 100, None]
        with np.errstate(under="ignore"):
            linear = np.exp(-block * x_left) @ mass
        small = linear < 1e-250  # underflow matters there: redo those rows in log space
        out[start : start + 100] = np.log(np.where(small, 1.0, linear))
        if small.any():
            rows = block[small]
            out[start : start + 100][small] = special.logsumexp(log_mass - rows * x_left, axis=1)
    out += 1e-12 * x_left.size  # float rounding of the sums (relative, pairwise and BLAS summation)
    for arr in (log_u, out):
        arr.setflags(write=False)
    return log_u, out


def allocation_add_rdp_upper(order: float, mu: float, steps: int) -> float:
    """Proven upper bound on the addition-direction Renyi divergence ``D_a(Q_t || P_t)`` of random allocation of
    one of ``steps`` Gaussian steps at an integer ``order`` in ``[2, max_add_order(mu)]`` (``inf`` above).

    ``E_Q[L^-m] = t^m / Gamma(m) int_0^inf u^(m-1) psi(u)^t du`` (``m = order - 1``). On each cell ``[u_k, u_k+1]``
    of the grid both ``u^(m-1)`` and ``psi(u)^t`` are convex (``psi`` is a Laplace transform, so log-convex), hence
    below their chords, and the chords of the upper values bound them; the product of the two chords integrates in
    closed form. Below the grid ``psi <= 1``; above it ``psi(u) <= (p/e)^p E[X^-p] u^-p`` (from
    ``e^-y <= (p/e)^p y^-p``), minimised over ``p``."""
    if not 2 <= order <= max_add_order(mu):
        return np.inf
    m = float(order) - 1.0
    t = int(steps)
    log_u, log_psi = _log_psi_grid(float(mu))
    log_h = np.log(np.diff(np.exp(log_u)))
    f0, f1 = (m - 1.0) * log_u[:-1], (m - 1.0) * log_u[1:]  # log u^(m-1) at the two ends
    g0, g1 = t * log_psi[:-1], t * log_psi[1:]  # log psi^t at the two ends
    # int_0^1 (f0 (1-s) + f1 s)(g0 (1-s) + g1 s) ds = f0 g0 / 3 + (f0 g1 + f1 g0) / 6 + f1 g1 / 3
    terms = np.stack((f0 + g0 - math.log(3.0), f0 + g1 - math.log(6.0), f1 + g0 - math.log(6.0),
                      f1 + g1 - math.log(3.0)))
    log_cells = log_h + special.logsumexp(terms, axis=0)
    pieces = [m * log_u[0] - math.log(m), *log_cells.tolist()]
    tails = []
    for p in np.linspace((m + 1.0) / t, (m + 1.0) / t + 20.0, 81):
        if p * t <= m:
            continue
        log_c = p * math.log(p) - p + mu * mu * p * (p + 1.0) / 2.0  # (p/e)^p E[X^-p]
        tails.append(t * log_c + (m - p * t) * log_u[-1] - math.log(p * t - m))
    pieces.append(min(tails))
    arr = np.array(pieces)
    peak = arr.max()
    log_integral = peak + math.log(float(np.exp(arr - peak).sum()) * (1.0 + _SLACK))
    log_moment = m * math.log(t) - special.gammaln(m) + log_integral
    return (log_moment + 1e-10 * (1.0 + abs(log_moment))) / m


@dataclasses.dataclass(frozen=True, slots=True)
class RandomAllocation(Mechanism):
    """One epoch of ``steps`` runs of ``mechanism`` in which every record is used in exactly ``selections`` runs
    chosen uniformly at random (add-or-remove-one). See the module docstring for the proofs.

    ``rdp``: the un-amplified ``selections``-fold composition of the base (any base), and for a Gaussian base with
    ``selections = 1`` the amplified bound (the larger of the two directions' divergences of the dominating pair),
    whichever is smaller; proven upper bounds. The characteristic-function accountant composes
    :meth:`dominating_mechanism`: for a Gaussian base with ``selections = 1`` (and at most ``MAX_PAIR_STEPS``
    steps) the amplified pair :class:`AllocationPair`, the tighter of the two (issue 19: 1 of 10 steps, 10 epochs,
    sigma 1.1: [5.1537, 5.1603] against RDP 5.7224); otherwise the un-amplified pair, proven but loose (prefer the
    RDP accountant there).

    Examples
    --------
    >>> from dpledger.mechanisms import GaussianMechanism
    >>> one = RandomAllocation(GaussianMechanism(sigma=1.1), steps=10, selections=1)
    >>> bool(one.rdp(4.0) < GaussianMechanism(sigma=1.1).rdp(4.0))
    True
    """

    mechanism: Mechanism
    steps: int
    selections: int = 1

    def __post_init__(self):
        owner = "RandomAllocation"
        if not isinstance(self.mechanism, Mechanism):
            raise TypeError(f"`mechanism` of {owner} must be a Mechanism; got {type(self.mechanism).__name__}.")
        t = _validate.integer(self.steps, "steps", owner, minimum=1)
        k = _validate.integer(self.selections, "selections", owner, minimum=1)
        if k > t:
            raise ValueError(f"`selections` of {owner} must be at most steps = {t}; got {k}.")
        object.__setattr__(self, "steps", t)
        object.__setattr__(self, "selections", k)

    @property
    def children(self) -> tuple[Mechanism, ...]:
        return (self.mechanism,)

    @property
    def rdp_is_proven(self) -> bool:
        return self.mechanism.rdp_is_proven

    def _mu(self):
        z = self.mechanism.gaussian_loss_noise_multiplier()
        return None if z is None else 1.0 / z

    def _amplified(self):
        return self._mu() is not None and self.selections == 1 and self.steps > 1

    def _integer_amplified(self, orders):
        mu, t = self._mu(), self.steps
        orders = np.asarray(orders, dtype=np.float64).reshape(-1)
        remove = allocation_remove_rdp(orders, mu, t)
        add = np.array([allocation_add_rdp_upper(a, mu, t) for a in orders.tolist()])
        return np.maximum(remove, add)  # inf above max_add_order: the un-amplified cap applies there

    def _rdp(self, orders):
        plain = self.selections * np.asarray(self.mechanism.rdp(orders), dtype=np.float64) * (1.0 + 1e-15)
        if not self._amplified():
            return plain
        out = plain.copy()
        fin = np.isfinite(orders) & (orders <= MAX_AMPLIFIED_ORDER)
        if fin.any():
            sub = orders[fin]
            integer = sub == np.round(sub)
            vals = np.empty(sub.shape)
            if integer.any():
                vals[integer] = self._integer_amplified(sub[integer])
            if (~integer).any():
                vals[~integer] = chord_rdp(sub[~integer], self._integer_amplified)
            out[fin] = np.minimum(out[fin], vals)
        return out

    def rdp_lower_bound(self, orders: ArrayLike) -> np.ndarray:
        """A proven lower bound on this mechanism's RDP (Gaussian base, ``selections = 1``, integer orders): the
        removal divergence of the realised pair, less its rounding slack."""
        if not self._amplified():
            raise _missing("rdp_lower_bound", "a Gaussian base and selections = 1")
        arr = _validate.orders_array(orders, "RandomAllocation.rdp_lower_bound").reshape(-1)
        if np.any((arr != np.round(arr)) | ~np.isfinite(arr)):
            raise ValueError("`orders` of RandomAllocation.rdp_lower_bound must be finite integers >= 2.")
        upper = allocation_remove_rdp(arr, self._mu(), self.steps)
        return upper - 2e-8 * (1.0 + np.abs(upper))

    def approximate(self) -> tuple[Mechanism, float]:
        """``(RandomAllocation(core, ...), 1 - (1 - delta)^selections)``: the record's runs, each
        ``delta``-approximately ``core`` (:meth:`Mechanism.approximate`)."""
        core, delta = self.mechanism.approximate()
        if delta == 0.0:
            return self, 0.0
        total = -math.expm1(self.selections * math.log1p(-delta)) if delta < 1.0 else 1.0
        return RandomAllocation(core, steps=self.steps, selections=self.selections), min(1.0, total)

    def dominating_mechanism(self) -> Mechanism:
        """For a Gaussian base with ``selections = 1``: :class:`AllocationPair`, the amplified pair with proven
        loss buckets (the characteristic-function accountant composes it by its privacy buckets). Otherwise the
        un-amplified pair: ``selections`` compositions of the base's dominating mechanism."""
        if self._amplified() and self.steps <= MAX_PAIR_STEPS:
            return AllocationPair(mechanism=self.mechanism, steps=self.steps)
        base = self.mechanism.dominating_mechanism()
        return base if self.selections == 1 else SelfComposed(base, count=self.selections)

    def epsilon_lower_bound(self, delta: float, *, epochs: int = 1) -> float:
        """A proven lower bound on the epsilon at ``delta`` of ``epochs`` epochs (Gaussian base): no valid
        accountant may report less. From the realised pair and the test "at least ``c`` epochs have a step output
        above ``tau``", optimised over ``tau`` and ``c`` (per epoch, ``P(max > tau) = 1 - Phi(tau)^(t-k)
        Phi(tau - mu)^k`` against ``1 - Phi(tau)^t``)."""
        if self._mu() is None:
            raise _missing("epsilon_lower_bound", "a Gaussian base")
        return _epsilon_lower_bound(self._mu(), self.steps, self.selections, epochs, delta)


@dataclasses.dataclass(frozen=True, slots=True)
class AllocationPair(Mechanism):
    """The dominating pair of random allocation of one of ``steps`` runs of a Gaussian ``mechanism``, described
    by proven privacy-loss buckets (:mod:`mechanisms.allocation_pld`): what the characteristic-function
    accountant composes for :class:`RandomAllocation` (its privacy buckets; connect-the-dots upper bound).

    ``rdp`` is :class:`RandomAllocation`'s proven bound. Its ``log_mgf`` is that of the rounded-up removal loss
    (on the linear grid, its atoms merged on a ``2^-12`` loss grid; mirrored for addition): used only where a
    ledger mixes it with mechanisms that have no loss buckets, and then labelled an estimate (``log_mgf_is_proven``
    is False).
    """

    mechanism: Mechanism
    steps: int

    log_mgf_is_proven = False
    log_mgf_is_closed_form = False

    def __post_init__(self):
        owner = "AllocationPair"
        if not isinstance(self.mechanism, Mechanism) or self.mechanism.gaussian_loss_noise_multiplier() is None:
            raise TypeError(f"`mechanism` of {owner} must have a Gaussian privacy loss; got {self.mechanism!r}.")
        object.__setattr__(self, "steps", _validate.integer(self.steps, "steps", owner, minimum=2))

    @property
    def children(self) -> tuple[Mechanism, ...]:
        return (self.mechanism,)

    @property
    def rdp_is_proven(self) -> bool:
        return self.mechanism.rdp_is_proven

    def _mu(self):
        return 1.0 / self.mechanism.gaussian_loss_noise_multiplier()

    def _rdp(self, orders):
        return RandomAllocation(self.mechanism, steps=self.steps)._rdp(orders)

    @property
    def has_loss_buckets(self) -> bool:
        return True

    @property
    def loss_is_discrete(self) -> bool:
        return True

    def loss_buckets(self, edges: ArrayLike, direction: Direction) -> LossBuckets:
        return allocation_buckets(self._mu(), self.steps, np.asarray(edges, dtype=np.float64),
                                  direction is Direction.REMOVE)

    def loss_cut(self, direction: Direction, tail: float) -> float:
        """Where the privacy buckets cut the grid (:meth:`~mechanisms.base.Mechanism.loss_cut`: never a bound): on
        the linear grid, the loss of the highest up-rounded atom (:func:`~mechanisms.allocation_pld.linear_losses`,
        the atoms :meth:`loss_buckets` counts) above which the finite atoms hold at most ``tail``; these tables
        are the ones :meth:`loss_buckets` builds anyway, where RDP would need :class:`RandomAllocation`'s own.
        On the log grid, the default."""
        linear = linear_step(self._mu(), self.steps)
        if linear is None:
            return Mechanism.loss_cut(self, direction, tail)
        loss, masses = linear_losses(self._mu(), self.steps, direction is Direction.REMOVE, *linear)[:2]
        finite = np.isfinite(loss)
        loss, masses = loss[finite], masses[finite]
        if direction is not Direction.REMOVE:  # the addition loss falls as the index sum grows
            loss, masses = loss[::-1], masses[::-1]
        if not loss.size:
            return 0.0
        above = np.cumsum(masses[::-1])  # above[j]: the top j + 1 atoms
        top = int(np.searchsorted(above, tail, side="right"))  # the top `top` atoms hold at most tail
        return float(loss[max(loss.size - 1 - top, 0)])

    def _log_mgf(self, s):
        mu = self._mu()
        linear = linear_step(mu, self.steps)
        if linear is not None:
            loss, masses = linear_losses(mu, self.steps, True, *linear)[:2]
            # an estimate: the atoms' losses rounded up to 2^-12, where their masses are summed
            k = np.ceil(loss * 4096.0)
            k0 = k[0]
            masses = np.bincount((k - k0).astype(np.int64), weights=masses)
            loss = (k0 + np.arange(masses.size)) / 4096.0
            loss, masses = loss[masses > 0.0], masses[masses > 0.0]
        else:
            logs, masses, _, _ = allocation_atoms(mu, self.steps, grid_step(mu))["P", "up"]
            loss = logs - math.log(self.steps)
        log_m = np.log(masses)
        out = np.empty(s.shape, dtype=np.complex128)
        for i in range(0, s.size, 16):  # blocks of 16 arguments: 16 x atoms at a time
            a = log_m[None, :] + s[i:i + 16, None] * loss[None, :]
            peak = a.real.max(axis=1, keepdims=True)
            out[i:i + 16] = peak[:, 0] + np.log(np.exp(a - peak).sum(axis=1))
        return out


def _missing(what, need):
    from dpledger.mechanisms.errors import MissingCapabilityError

    return MissingCapabilityError(f"RandomAllocation.{what} needs {need}.")


def _epsilon_lower_bound(mu, t, k, epochs, delta):
    from scipy import stats  # loaded on use: scipy.stats costs a third of a second at import

    delta = _validate.open_unit_interval(delta, "delta", "epsilon_lower_bound")
    epochs = _validate.integer(epochs, "epochs", "epsilon_lower_bound", minimum=1)
    taus = np.linspace(-2.0, 8.0 + mu, 401)
    log_phi = special.log_ndtr(taus)
    p_q = -np.expm1(t * log_phi)
    p_p = -np.expm1((t - k) * log_phi + k * special.log_ndtr(taus - mu))
    c = np.arange(1, epochs + 1)
    # tails P(Bin(E, p) >= c), rounded down for P and up for Q
    tail_p = stats.binom.sf(c[None, :] - 1, epochs, p_p[:, None]) * (1.0 - 1e-9)
    tail_q = stats.binom.sf(c[None, :] - 1, epochs, p_q[:, None]) * (1.0 + 1e-9) + 1e-300
    ok = tail_p > delta
    if not ok.any():
        return 0.0
    # delta_lb(eps) = max(tail_p - e^eps tail_q) >= delta  <=>  eps <= log((tail_p - delta) / tail_q)
    with np.errstate(divide="ignore", invalid="ignore"):
        eps = np.where(ok, np.log((tail_p - delta) / tail_q), -np.inf)
    return max(0.0, float(eps.max()) * (1.0 - 1e-9))


def shuffled_epsilon_lower_bound(*, sigma: float, sensitivity: float = 1.0, steps: int, epochs: int = 1,
                                 delta: float) -> float:
    """A proven lower bound on epsilon(delta) of ``epochs`` epochs of shuffled fixed-size batches (a permutation
    per epoch cut into ``steps`` batches) with a Gaussian sum of noise ``sigma`` whose replace-one sensitivity is
    ``sensitivity`` (replace-one).

    Replacing a record whose contribution is ``sensitivity`` by one contributing 0, with every other record 0,
    changes one uniformly random batch of each epoch: the realised pair of random allocation with one selection,
    so :meth:`RandomAllocation.epsilon_lower_bound`'s test applies. No upper bound is reported: the batches of an
    epoch are dependent, the worst-case pair of shuffling is not known, and Poisson accounting at
    ``batch_size / dataset_size`` is not an upper bound for it.
    """
    s = _validate.positive(sigma, "sigma", "shuffled_epsilon_lower_bound")
    d = _validate.positive(sensitivity, "sensitivity", "shuffled_epsilon_lower_bound")
    t = _validate.integer(steps, "steps", "shuffled_epsilon_lower_bound", minimum=1)
    return _epsilon_lower_bound(d / s, t, 1, epochs, delta)
