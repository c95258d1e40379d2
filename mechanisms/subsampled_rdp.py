"""Renyi DP of Poisson-subsampled mechanisms (thesis Ch. 2; Zhu & Wang 2019), as pure functions.

Notation: ``gamma`` is the sampling probability, ``eps(l)`` the base mechanism's RDP and
``c_l = C(alpha, l) (1 - gamma)^(alpha - l) gamma^l`` the Binomial(alpha, gamma) weights. For integer alpha >= 2

* thesis Thm 2.3.2 (lower bound) and Thm 2.3.4 (tight upper bound, for bases satisfying the Pearson-Vajda
  condition (2.2): Gaussian and Laplace by thesis Prop 2.3.6)::

      (alpha - 1) eps_sub(alpha) = log{ (1 - gamma)^(alpha - 1) (alpha gamma - gamma + 1)
                                        + sum_{l=2}^{alpha} c_l exp((l - 1) eps(l)) }

* thesis Thm 2.3.1 (general upper bound, any base): the same with the terms l >= 3 multiplied by 3.

Because the weights sum to one, the argument of the logarithm equals ``1 + S`` with
``S = sum_{l>=2} c_l (w_l - 1) >= 0`` (``w_l = exp((l-1) eps(l))``, or ``3 exp(...)`` in the general bound),
a sum of non-negative terms. We evaluate ``log1p(S)`` with ``logsumexp`` over these terms: nothing overflows
and, unlike the signed evaluation of thesis Remark 2.3.8, nothing cancels, so sampling probabilities down to
1e-9 keep full relative precision. The tau-term bounds (thesis Thm 2.3.7, Thm 2.5.8) do have signed terms and
use the signed log-sum-exp of Remark 2.3.8.

Non-integer orders: :func:`gaussian_fractional_rdp` sums the exact series of Mironov, Talwar & Zhang 2019
(Sec 3.3) for the subsampled Gaussian; for other bases :func:`chord_rdp` interpolates ``(alpha - 1) eps(alpha)``
linearly between integer orders, an upper bound because that function is convex in alpha (Renyi 1961; van
Erven & Harremoes 2014, Cor 2).

Every function returns an upper bound rounded up (float64 slack ``ROUNDING``), except :func:`lower_bound`.
"""

from __future__ import annotations

import functools
from collections.abc import Callable

import numpy as np
from numpy.typing import ArrayLike
from scipy import special

from dpledger.mechanisms._logmath import ROUNDING, log1p_exp, log_binom, log_expm1

__all__ = [
    "tight_bound",
    "general_bound",
    "lower_bound",
    "tau_term_bound",
    "gaussian_fractional_rdp",
    "chord_rdp",
    "pure_dp_bound",
    "EXACT_MAX_ORDER",
]

#: Integer orders up to this are summed exactly (O(alpha) work); larger ones use the tau-term bounds.
EXACT_MAX_ORDER = 1 << 21
#: Number of exact head and tail terms kept by the tau-term bounds above ``EXACT_MAX_ORDER``.
DEFAULT_TAU = 2_000
#: Extra terms (beyond the order) the fractional-order Gaussian series may sum; past this the rigorous tail
#: slack is accepted as it is, and NaN (then the chord) only if the partial sum is not positive.
_MAX_SERIES_TERMS = 1 << 12


def _check_integer_orders(orders):
    orders = np.asarray(orders, dtype=np.float64).reshape(-1)
    if ((orders != np.round(orders)) | (orders < 2)).any():
        raise ValueError(f"`orders` must be integers >= 2 here; got {orders.tolist()[:5]}.")
    return orders.astype(np.int64)


def _log_moments(rdp, max_order):
    """``x[l] = (l - 1) * eps(l)`` for l = 0..max_order (entries 0 and 1 unused, set to 0)."""
    x = np.zeros(max_order + 1)
    if max_order >= 2:
        ls = np.arange(2, max_order + 1, dtype=np.float64)
        x[2:] = (ls - 1.0) * np.asarray(rdp(ls), dtype=np.float64)
    return x


def _binomial_sum_bound(orders, gamma, rdp, factor, round_up=True):
    """``log(1 + S) / (alpha - 1)`` at integer orders; ``factor`` multiplies the terms l >= 3.

    Each log-term is a sum of a few float64 quantities; their rounding (about ``eps`` times their magnitudes)
    is bounded per order and added to ``log S``, so the result is rounded up.
    """
    orders = _check_integer_orders(orders)
    if orders.size == 0:
        return np.zeros(0)
    if gamma == 0.0:
        return np.zeros(orders.shape)
    x = _log_moments(rdp, int(orders.max()))
    # log(w_l - 1): w_2 = exp(x_2); w_l = factor * exp(x_l) for l >= 3.
    with np.errstate(divide="ignore", invalid="ignore"):
        log_w1 = log_expm1(x)
        if factor != 1.0:
            log_w1[3:] = x[3:] + np.log(factor - np.exp(-x[3:]))
    out = np.empty(orders.shape)
    # Small orders together (ragged pairs laid flat), large ones one at a time to bound memory.
    small = orders <= 4096
    if small.any():
        out[small] = _log_s_flat(orders[small], gamma, log_w1, round_up)
    for idx in np.flatnonzero(~small):
        out[idx] = _log_s_flat(orders[idx : idx + 1], gamma, log_w1, round_up)[0]
    factor_out = (1.0 + ROUNDING) if round_up else (1.0 - ROUNDING)
    return log1p_exp(out) / (orders - 1.0) * factor_out


@functools.lru_cache(maxsize=32)
def _flat_pairs(orders_key):
    """The ragged (order, l) pairs, l = 2..alpha, laid flat, with log C(alpha, l): they depend only on the
    orders, which an accountant's grid repeats for every mechanism it composes (cached, read-only)."""
    orders = np.frombuffer(orders_key, dtype=np.int64)
    lengths = orders - 1
    starts = np.concatenate(([0], np.cumsum(lengths)[:-1]))
    alpha = np.repeat(orders, lengths).astype(np.float64)
    ell = np.arange(lengths.sum()) - np.repeat(starts, lengths) + 2
    log_c, _ = log_binom(alpha, ell)
    for arr in (lengths, starts, alpha, ell, log_c):
        arr.setflags(write=False)
    return lengths, starts, alpha, ell, log_c


def _log_s_flat(orders, gamma, log_w1, round_up=True):
    lengths, starts, alpha, ell, log_c = _flat_pairs(np.ascontiguousarray(orders, dtype=np.int64).tobytes())
    with np.errstate(divide="ignore", invalid="ignore"):
        part_q = ell * np.log(gamma)
        part_1mq = (alpha - ell) * np.log1p(-gamma)
        if gamma == 1.0:  # only l = alpha survives; (alpha - l) * log(0) is nan at l = alpha
            part_1mq = np.where(ell == alpha, 0.0, -np.inf)
        terms = log_c + part_1mq + part_q + log_w1[ell]
        # rounding of each log-term: gammaln's three values, the two products and log(w - 1)
        size = np.abs(np.log(alpha + 1.0)) * alpha + np.abs(part_q) + np.abs(np.nan_to_num(part_1mq)) + np.abs(
            np.nan_to_num(log_w1[ell], posinf=0.0, neginf=0.0)) + 1.0
    err = np.maximum.reduceat(np.where(np.isfinite(terms), size, 0.0), starts) * 2 * np.finfo(np.float64).eps
    peak = np.maximum.reduceat(terms, starts)
    finite_peak = np.where(np.isfinite(peak), peak, 0.0)
    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
        mass = np.add.reduceat(np.exp(terms - np.repeat(finite_peak, lengths)), starts)
        log_s = np.where(np.isfinite(peak), finite_peak + np.log(mass), peak)
    return log_s + (ROUNDING + err if round_up else -(ROUNDING + err))


def tight_bound(orders: ArrayLike, gamma: float, rdp: Callable[[np.ndarray], np.ndarray]) -> np.ndarray:
    """Tight RDP of the Poisson-subsampled mechanism at integer orders (thesis Thm 2.3.4).

    Valid only if the base satisfies the Pearson-Vajda condition (thesis (2.2)); :class:`PoissonSubsampled`
    calls it only for such bases. Equals the lower bound of thesis Thm 2.3.2. Upper bound (rounded up),
    add-or-remove-one.

    Parameters
    ----------
    orders : array_like of int
        Integer orders >= 2.
    gamma : float
        Sampling probability in [0, 1].
    rdp : callable
        The base mechanism's RDP, vectorised over integer orders.
    """
    return _binomial_sum_bound(orders, gamma, rdp, factor=1.0)


def general_bound(orders: ArrayLike, gamma: float, rdp: Callable[[np.ndarray], np.ndarray]) -> np.ndarray:
    """RDP upper bound of the Poisson-subsampled mechanism, any base, integer orders (thesis Thm 2.3.1).

    ``(alpha-1) eps <= log{(1-g)^(alpha-1)(alpha g - g + 1) + C(alpha,2) g^2 (1-g)^(alpha-2) e^eps(2)
    + 3 sum_{l>=3} c_l e^((l-1) eps(l))}``. Upper bound (rounded up), add-or-remove-one.
    """
    return _binomial_sum_bound(orders, gamma, rdp, factor=3.0)


def lower_bound(orders: ArrayLike, gamma: float, rdp: Callable[[np.ndarray], np.ndarray]) -> np.ndarray:
    """Thesis Thm 2.3.2: some mechanism with RDP curve ``rdp`` has at least this subsampled RDP.

    For bases that attain their RDP with a pair satisfying condition (2.2) (Gaussian, Laplace) this is the
    exact value; tests use it to bracket the upper bounds. Not an upper bound for other bases.
    """
    return _binomial_sum_bound(orders, gamma, rdp, factor=1.0, round_up=False)


def tau_term_bound(
    orders: ArrayLike,
    gamma: float,
    rdp: Callable[[np.ndarray], np.ndarray],
    tau: int = DEFAULT_TAU,
    *,
    general: bool = False,
) -> np.ndarray:
    """Tau-term upper bound at large integer orders (thesis Thm 2.3.7; with ``general``, Thm 2.5.8).

    Keeps the head terms l <= tau and the tail terms l > alpha - tau exact and bounds the middle terms with
    ``eps(l) <= E = eps(alpha - tau)`` (monotonicity of RDP in the order). Summing the middle in closed form
    with ``M = e^(-E) (1 - g + g e^E)^alpha`` gives, with ``K = 1`` (tight) or ``K = 3`` (general)::

        K M + sum_{l in {0,1}} c_l (1 - K e^((l-1)E)) + sum_{l in head, tail} c_l (w_l - K e^((l-1)E))

    which for K = 1 is the statement of thesis Thm 2.3.7 and for K = 3 Thm 2.5.8 with the tail kept exact.
    Evaluated with the signed log-sum-exp of thesis Remark 2.3.8, plus a rounding slack proportional to the
    sum of magnitudes. Orders below ``2 * tau + 1`` are summed exactly instead. Upper bound, add-or-remove-one.
    """
    orders = _check_integer_orders(orders)
    tau = int(tau)
    if tau < 2:
        raise ValueError(f"`tau` of tau_term_bound must be at least 2; got {tau}.")
    exact = (tight_bound if not general else general_bound)
    out = np.empty(orders.shape)
    for idx, alpha in enumerate(orders):
        if alpha <= 2 * tau or gamma in (0.0, 1.0):
            out[idx] = exact([alpha], gamma, rdp)[0]
            continue
        out[idx] = _tau_term_one(int(alpha), gamma, rdp, tau, 3.0 if general else 1.0)
    return out


def _tau_term_one(alpha, gamma, rdp, tau, big_k):
    ell = np.concatenate((np.arange(0, tau + 1), np.arange(alpha - tau + 1, alpha + 1))).astype(np.float64)
    eps_l = np.zeros(ell.shape)
    eps_l[ell >= 2] = np.asarray(rdp(ell[ell >= 2]), dtype=np.float64)
    big_e = float(np.asarray(rdp(np.array([float(alpha - tau)])))[0])
    if not np.isfinite(big_e) or not np.all(np.isfinite(eps_l)):
        return np.inf
    x = (ell - 1.0) * eps_l
    log_c, _ = log_binom(float(alpha), ell)
    log_c = log_c + (alpha - ell) * np.log1p(-gamma) + ell * np.log(gamma)
    k_l = np.where(ell >= 3, big_k, 1.0)
    # c_l (w_l - K e^((l-1)E)) with w_0 = w_1 = 1 (those terms carry no exponential).
    log_w = np.where(ell >= 2, np.log(k_l) + x, 0.0)
    other = np.log(big_k) + (ell - 1.0) * big_e
    top = np.maximum(log_w, other)
    with np.errstate(divide="ignore"):
        gap = np.exp(log_w - top) - np.exp(other - top)
        diff = np.where(gap == 0.0, -np.inf, top + np.log(np.abs(gap)))
    sign = np.sign(gap)
    log_m = -big_e + alpha * np.logaddexp(np.log1p(-gamma), np.log(gamma) + big_e)
    log_terms = np.concatenate(([np.log(big_k) + log_m], log_c + diff))
    signs = np.concatenate(([1.0], sign))
    log_total, total_sign = special.logsumexp(log_terms, b=signs, return_sign=True)
    slack = special.logsumexp(log_terms) + np.log(ROUNDING * len(log_terms))
    if total_sign <= 0:
        return np.inf
    return float(np.logaddexp(log_total, slack) / (alpha - 1.0) * (1.0 + ROUNDING))


def gaussian_fractional_rdp(orders: ArrayLike, gamma: float, noise_multiplier: float | ArrayLike) -> np.ndarray:
    """Exact RDP of the Poisson-subsampled Gaussian at real orders (Mironov, Talwar & Zhang 2019, Sec 3.3).

    ``A = E_{mu0}[(mu / mu0)^alpha]`` with ``mu0 = N(0, s^2)``, ``mu = (1 - g) mu0 + g N(1, s^2)``, split at
    ``z0 = s^2 log(1/g - 1) + 1/2`` and expanded binomially on each side (signed generalized binomial
    coefficients, summed with their signs as the series is; an absolute-value series overestimates)::

        A = sum_i C(alpha, i) [ g^i (1-g)^(alpha-i) e^((i^2-i)/(2 s^2)) Phi((z0 - i)/s)
                              + g^(alpha-i) (1-g)^i e^((j^2-j)/(2 s^2)) Phi((j - z0)/s) ],  j = alpha - i

    Truncation is bounded rigorously. For ``i > alpha`` consecutive terms of each of the two series have
    opposite signs (``C(alpha, i+1) / C(alpha, i) = (alpha - i)/(i + 1) < 0``) and shrinking magnitudes: by
    log-concavity of Phi (Mills' ratio ``phi(x) / Phi(-x) >= x``), ``Phi(-x-h) / Phi(-x) <= exp(-x h - h^2/2)``,
    which makes the ratio of magnitudes at most ``(i - alpha)/(i + 1) < 1`` in both series. So the remainder
    after index N > alpha is at most the magnitude of term N (Leibniz); we add it, plus a float64 rounding slack,
    so the value is rounded up. More terms are summed (up to a budget) while that slack exceeds 1e-6 of
    ``A - 1`` and its truncation part can still shrink it (not where the rounding part alone exceeds ``e^-12.8``
    of ``A - 1`` and dominates the truncation part: more terms cannot meet the target then). The float64 rounding
    slack is relative to ``A`` itself, so when the RDP is below about 1e-13 / (alpha - 1) it dominates;
    :class:`PoissonSubsampled` then uses the chord, which keeps relative accuracy. Returns ``log(A) / (alpha - 1)``
    per order (an upper bound, add-or-remove-one). That ``A`` dominates the reverse divergence
    ``E_mu[(mu0/mu)^alpha]`` is thesis Thm 2.3.4 at integer orders and is
    checked against mpmath at real orders in the tests.

    ``noise_multiplier`` may be an array broadcast against ``orders`` (one noise multiplier per order: many
    mechanisms' orders in one call); each order is summed exactly as it would be alone with its noise multiplier.
    """
    alphas = np.asarray(orders, dtype=np.float64).reshape(-1)
    s_all = np.broadcast_to(np.asarray(noise_multiplier, dtype=np.float64), np.shape(orders)).reshape(-1)
    if gamma == 0.0:
        return np.zeros(alphas.shape)
    if gamma == 1.0:
        return alphas / (2.0 * s_all * s_all)
    out = np.empty(alphas.shape)
    log_g, log_1mg = np.log(gamma), np.log1p(-gamma)
    z0_all = s_all * s_all * (log_1mg - log_g) + 0.5
    todo = np.arange(alphas.size)
    extra = 32
    while todo.size:
        a = alphas[todo][:, None]
        s, z0 = s_all[todo][:, None], z0_all[todo][:, None]
        # Each order sums its own n_a = ceil(alpha) + extra terms (masked), so its value does not depend on
        # the other orders evaluated with it.
        n_a = np.ceil(alphas[todo]).astype(np.int64) + extra
        n = int(n_a.max())
        i = np.arange(n + 1, dtype=np.float64)[None, :]
        j = a - i
        log_c, sign = _log_binom_row(a, n + 1)
        t0 = log_c + i * log_g + j * log_1mg + (i * i - i) / (2 * s * s) + special.log_ndtr((z0 - i) / s)
        t1 = log_c + j * log_g + i * log_1mg + (j * j - j) / (2 * s * s) + special.log_ndtr((j - z0) / s)
        rows = np.arange(todo.size)
        # Index n_a is the first omitted term of each series: its magnitude bounds that series' remainder.
        log_tail = np.logaddexp(t0[rows, n_a], t1[rows, n_a])
        inside = i < n_a[:, None]
        t0 = np.where(inside, t0, -np.inf)
        t1 = np.where(inside, t1, -np.inf)
        terms = np.concatenate((t0, t1), axis=1)
        signs = np.concatenate((sign, sign), axis=1)
        peak = terms.max(axis=1, keepdims=True)
        scaled = np.exp(terms - peak)
        total = (signs * scaled).sum(axis=1)
        log_abs_sum = peak[:, 0] + np.log(scaled.sum(axis=1))
        with np.errstate(divide="ignore", invalid="ignore"):
            log_a = peak[:, 0] + np.log(total)
            log_a_minus_1 = log_expm1(np.maximum(log_a, 0.0))
        slack = np.logaddexp(log_tail, log_abs_sum + np.log(ROUNDING))
        # Where the rounding part of the slack already dominates the truncation part and exceeds e^-12.8 of A - 1,
        # more terms cannot bring the slack below e^-13.8 of A - 1 (the rounding part only grows with the terms,
        # and A - 1 moves by at most twice the tail plus the roundings: at most 4 e^(rounding part)), so the
        # series stops here instead of at the budget, with its value and slack as they are (an upper bound alike).
        rounding_part = log_abs_sum + np.log(ROUNDING)
        settled = (log_tail <= rounding_part) & (rounding_part >= log_a_minus_1 - 12.8)
        converged = (total > 0) & ((slack < log_a_minus_1 - 13.8) | (extra >= _MAX_SERIES_TERMS) | settled)
        value = np.maximum(np.logaddexp(log_a, slack), 0.0) / (alphas[todo] - 1.0) * (1.0 + ROUNDING)
        out[todo[converged]] = value[converged]
        if extra >= _MAX_SERIES_TERMS and not converged.all():
            out[todo[~converged]] = np.nan
            break
        todo = todo[~converged]
        extra *= 4
    return out


def _log_binom_row(alphas, n):
    """``(log |C(alpha, i)|, sign)`` for i = 0..n-1 per row, by cumulative products of ``(alpha - k)/(k + 1)``
    (cheaper than gamma functions; exact zeros for integer alpha)."""
    k = np.arange(n - 1, dtype=np.float64)[None, :]
    ratio = (alphas - k) / (k + 1.0)
    with np.errstate(divide="ignore"):
        log_c = np.concatenate((np.zeros((alphas.shape[0], 1)), np.cumsum(np.log(np.abs(ratio)), axis=1)), axis=1)
    sign = np.concatenate((np.ones((alphas.shape[0], 1)), np.cumprod(np.sign(ratio), axis=1)), axis=1)
    return log_c, sign


def chord_rdp(orders: ArrayLike, integer_rdp: ArrayLike) -> np.ndarray:
    """Upper bound at real orders from integer orders: the chord of the convex ``(alpha - 1) eps(alpha)``.

    For ``n < alpha < n + 1``: ``(alpha-1) eps(alpha) <= (n + 1 - alpha)(n - 1) eps(n) + (alpha - n) n eps(n+1)``
    with ``(alpha - 1) eps(alpha) -> 0`` at ``n = 1``. Convexity of ``(alpha - 1) D_alpha`` in alpha: van Erven &
    Harremoes 2014, Cor 2; thesis Ch. 2 (Wang et al. 2019b). Upper bound if ``integer_rdp`` gives upper bounds.
    """
    orders = np.asarray(orders, dtype=np.float64).reshape(-1)
    lo = np.floor(orders)
    hi = lo + 1.0
    need = np.unique(np.concatenate((lo[lo >= 2], hi)))
    values = dict(zip(need.tolist(), np.asarray(integer_rdp(need), dtype=np.float64).tolist()))
    f_lo = np.array([(a - 1.0) * values[a] if a >= 2 else 0.0 for a in lo.tolist()])
    f_hi = np.array([(a - 1.0) * values[a] for a in hi.tolist()])
    with np.errstate(invalid="ignore"):
        f = np.where(orders == lo, f_lo, (hi - orders) * f_lo + (orders - lo) * f_hi)
        return np.where(np.isinf(f), np.inf, f / (orders - 1.0))


def pure_dp_bound(gamma: float, epsilon: float) -> float:
    """Pure DP of the Poisson-subsampled mechanism: ``log(1 + g (e^eps - 1))`` (Balle, Barthe & Gaboardi
    2018, Thm 8, add-or-remove-one). An upper bound on the subsampled RDP at every order."""
    if np.isinf(epsilon):
        return np.inf
    if gamma == 0.0:
        return 0.0
    if epsilon < 1.0:
        value = np.log1p(gamma * np.expm1(epsilon))
    else:  # log(1 - g + g e^eps) without overflow
        value = np.logaddexp(np.log1p(-gamma) if gamma < 1.0 else -np.inf, np.log(gamma) + epsilon)
    return float(value * (1.0 + ROUNDING))
