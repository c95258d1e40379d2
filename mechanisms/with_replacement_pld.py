"""The dominating pair of fixed-size batches drawn with replacement (Gaussian batch mechanism): proven loss
buckets and Renyi divergences.

Setting (:mod:`mechanisms.with_replacement`): a Gaussian batch mechanism ``g(B) + N(0, sigma^2 I)`` whose query
moves by at most ``Delta`` (L2) when one batch slot is replaced, run on ``b`` independent uniform draws from a data
set of ``n`` records (``n`` public, add-or-remove-one). ``K ~ Bin(b, 1/n)``, ``w_k = P(K = k)`` (or, for the core
of :meth:`SampledWithReplacement.approximate` with ``max_repeats = r``, ``P(K = k | K <= r)``), ``mu = Delta /
sigma``. In units of ``sigma`` the pair is

    ``P = sum_k w_k N(k mu, 1)`` against ``Q = N(0, 1)`` (removal; addition is ``(Q, P)``),

with privacy loss ``L(x) = log sum_k w_k exp(k mu x - k^2 mu^2 / 2)`` at the output ``x``.

**Theorem (dominating pair).** For every ``alpha >= 0`` and neighbours ``D = D' + {x}``:
``H_alpha(M(D) || M(D')) <= H_alpha(P || Q)`` and ``H_alpha(M(D') || M(D)) <= H_alpha(Q || P)``.

*Proof.* (1) Coupling: a draw from ``D`` is ``x`` with probability ``1/n`` and otherwise a uniform draw from
``D'``. So with ``y`` the ``b`` draws from ``D'`` and ``S`` the set of slots replaced by ``x`` (each slot
independently with probability ``1/n``; for the core, ``S`` conditioned on ``|S| <= r``, still a distribution over
subsets independent of ``y``), ``M(D) = E_y[E_S N(g(y_S), sigma^2 I)]`` and ``M(D') = E_y[N(g(y), sigma^2 I)]``.
(For ``n = 1``, ``D'`` is empty and its "batch" is any fixed batch ``y``; then ``S`` is every slot.)
(2) Joint convexity of the hockey-stick divergence (it is an f-divergence) over the common draw ``y``: it is enough
to bound, for fixed ``y``, the pair ``(E_S N(v_S, I), N(0, I))`` (and its reverse), translated by ``g(y)`` and
scaled by ``sigma``, with ``v_S = (g(y_S) - g(y)) / sigma``: by the triangle inequality over the replaced slots,
``||v_S|| <= |S| mu``, and ``v_{empty} = 0``.
(3) Under ``Q' = N(0, I)`` the likelihood ratio of that pair is ``L' = sum_S pi_S X_S``, ``X_S =
exp(<v_S, G> - ||v_S||^2 / 2)``, ``G ~ N(0, I)``: ``X_S`` is lognormal, ``exp(r_S N - r_S^2 / 2)`` with ``r_S =
||v_S||``. The pair's ``H_alpha(P' || Q') = E[(L' - alpha)_+]`` and ``H_alpha(Q' || P') = E[(1 - alpha L')_+]``
(both are mutually absolutely continuous Gaussian mixtures).
(4) Convex order. Let ``Y = sum_S pi_S Y_S`` with ``Y_S = h_S(Z) = exp(|S| mu Z - |S|^2 mu^2 / 2)``, one common
``Z ~ N(0, 1)``: ``Y`` has the law of ``dP/dQ`` under ``Q`` (grouping ``S`` by ``k = |S|`` gives the weights
``w_k``). Each ``X_S <=_cx Y_S``: ``exp(R N - R^2/2)`` has the law of ``exp(r N1 - r^2/2) exp(s N2 - s^2/2)``
(``s^2 = R^2 - r^2``, independent ``N1, N2``), whose second factor has conditional mean 1 (conditional Jensen), and
``r_S <= |S| mu = R``. For ``d >= 0``: ``h = sum_S pi_S h_S`` is continuous and strictly increasing (some
``pi_S > 0`` with ``S`` non-empty, when ``b >= 1``). If ``d <= inf h = pi_empty`` then ``L' >= pi_empty >= d``, so
``E(L' - d)_+ = 1 - d = E(Y - d)_+``. Otherwise let ``h(z_d) = d`` and ``d_S = pi_S h_S(z_d)`` (``sum d_S = d``);
since every ``h_S`` is non-decreasing, ``(Y - d)_+ = sum_S (pi_S Y_S - d_S)_+`` pointwise (all terms have the sign
of ``Z - z_d``), while ``(sum_S pi_S X_S - sum_S d_S)_+ <= sum_S (pi_S X_S - d_S)_+`` for any joint law. Hence
``E(L' - d)_+ <= sum_S E(pi_S X_S - d_S)_+ <= sum_S E(pi_S Y_S - d_S)_+ = E(Y - d)_+`` (the middle step is
``X_S <=_cx Y_S``). With ``E L' = E Y = 1`` also ``E(c - L')_+ = c - 1 + E(L' - c)_+ <= E(c - Y)_+``; at
``c = 1 / alpha`` this is the reverse direction. (This is the comonotonic upper bound of a sum, Dhaene, Denuit,
Goovaerts, Kaas & Vyncke 2002, proved here in the form used.) **QED.**

Assumed: the batch mechanism is a Gaussian mechanism in the literal sense above (spherical noise added to a query
of replace-one L2 sensitivity ``Delta``; the query may depend on the order of the slots); ``n`` and ``b`` public.
The proof does not use the slots' independence, only the distribution of ``S`` and ``||v_S|| <= |S| mu``.
The pair is realised (a one-dimensional sum, the record ``Delta``, all others 0), so its divergences are also
lower bounds for that query and every proven bound on the mechanism is one on the pair. Conversely its Renyi
divergences bound the mechanism's: a pair dominated for every ``alpha >= 0`` is a post-processing of the dominating
pair (Blackwell's theorem for binary experiments, Dong, Roth & Su 2019, Thm 2.10), and Renyi divergences do not
increase under post-processing.

**Renyi divergences** (:func:`remove_log_moments`, :func:`add_rdp_upper`):

* removal, exact at integer ``l``: ``E_Q[(dP/dQ)^l] = sum_(k_1..k_l) prod_i w_(k_i) exp(mu^2 sum_(i<j) k_i k_j)``
  (Gaussian moment generating function) ``= sum_K exp(mu^2 K^2 / 2) (a^(*l))_K`` with ``a_k = w_k exp(-mu^2 k^2
  / 2)``: the ``l``-fold convolution, computed in log space;
* addition, upper bounds at every real ``l > 1`` (``m = l - 1``, ``E_Q[(dQ/dP)^m]`` and ``x -> x^-m``
  decreasing): ``dP/dQ >= w_j X_j`` gives ``D_l(Q || P) <= -log w_j + l j^2 mu^2 / 2`` for every ``j`` (``j = 0``:
  ``-log w_0``), and ``dP/dQ >= (w_0 + w_1) (1 - g + g X_1)``, ``g = w_1 / (w_0 + w_1)``, gives
  ``D_l(Q || P) <= -log(w_0 + w_1) + D_l(Q || (1 - g) Q + g N(mu, 1))``, bounded by the proven RDP of the
  Poisson-subsampled Gaussian at rate ``g`` (rounded up; that divergence is non-decreasing in ``g``: ``E_Q[(1 - g
  + g X)^-m]`` is convex in ``g`` with its minimum 1 at ``g = 0``).

**Loss buckets** (:func:`with_replacement_buckets`): ``L`` is strictly increasing in ``x`` (a sum of increasing
exponentials), so ``L <= e`` iff ``x <= x(e)``; ``x(e)`` is enclosed by two points at which ``L <= e`` and
``L >= e`` were certified with every rounding bounded (:func:`_side`, :func:`_inverse`), ``-inf`` below the infimum
``log w_0``. The bucket
masses are sums of ``w_k`` times normal-CDF intervals enclosed by :func:`mechanisms.loss_buckets.normal_cdf_bounds`.

Rounding: ``exp``, ``log``, ``log1p`` and the basic operations are within 2 ulps (``u = 2^-53``); every error bound
below is the derived one times 2.
"""

from __future__ import annotations

import dataclasses
import functools
import math
from collections.abc import Callable

import numpy as np
from numpy.typing import ArrayLike

from dpledger.mechanisms import _validate
from dpledger.mechanisms._logmath import EPS
from dpledger.mechanisms.base import Mechanism
from dpledger.mechanisms.gaussian import GaussianMechanism
from dpledger.mechanisms.loss_buckets import LossBuckets, _normal_interval, _widen, atom_buckets
from dpledger.mechanisms.relations import Direction

__all__ = [
    "MAX_MOMENT_ORDER",
    "WithReplacementPair",
    "add_rdp_upper",
    "log_weights",
    "loss_enclosure",
    "remove_log_moments",
    "remove_rdp_quadrature",
    "with_replacement_buckets",
]

_U = EPS / 2
#: Largest integer order of the exact removal moments (beyond it, the older bound of ``SampledWithReplacement``).
MAX_MOMENT_ORDER = 256
#: Work budget (terms of the log-space convolutions) of the exact removal moments; orders beyond it are skipped.
MOMENT_BUDGET = 40_000_000


@functools.lru_cache(maxsize=64)
def log_weights(batch_size: int, dataset_size: int, top: int | None = None) -> tuple[np.ndarray, np.ndarray]:
    """``(log w_k, err_k)`` for ``k = 0..top`` (``top = b`` by default), ``w_k = P(K = k | K <= top)``,
    ``K ~ Bin(b, 1/n)``, with ``|computed - exact| <= err_k`` (``-inf`` for ``w_k = 0``, i.e. ``n = 1``, ``k < b``).

    ``log w_k = log C(b, k) - k log n + (b - k) log1p(-1/n)``: ``C(b, k)`` an exact integer whose ``log`` is within
    2u, the other factors within 2u each and their products and sums within u per operation: at most ``8u`` of the
    sum of the magnitudes. The conditioning subtracts a log-sum-exp of ``top + 1`` terms (within ``(top + 6) u`` of
    its magnitude plus the terms' largest error). Read-only arrays, cached."""
    b, n = int(batch_size), int(dataset_size)
    top = b if top is None else min(int(top), b)
    log_n = math.log(n)
    l1p = math.log1p(-1.0 / n) if n > 1 else -math.inf
    log_w, err = np.full(top + 1, -np.inf), np.zeros(top + 1)
    for k in range(top + 1):
        if n == 1 and k < b:
            continue
        log_c = math.log(math.comb(b, k))
        rest = (b - k) * l1p if b > k else 0.0
        log_w[k] = log_c - k * log_n + rest
        err[k] = 8.0 * _U * (abs(log_c) + k * log_n + abs(rest) + abs(log_w[k]))
    if top < b:
        fin = np.isfinite(log_w)
        i_peak = int(np.argmax(np.where(fin, log_w, -np.inf)))
        peak = float(log_w[i_peak])
        others = fin.copy()
        others[i_peak] = False
        rest = float(np.exp(log_w[others] - peak).sum())
        log_total = peak + math.log1p(rest)
        # the terms' errors enter weighted by their shares (d log W / d log w_k = w_k / W); the small sum within
        # (m + 4) u relative (exp of arguments within 2 err_k), log1p within 2u, the addition within u
        shares = np.exp(np.where(fin, log_w, -np.inf) - log_total)
        err_total = (float((shares * err).sum()) * (1.0 + 1e-12) + 2.0 * float(err.max()) * rest
                     + (top + 8.0) * _U * rest + 2.0 * _U * (abs(log_total) + abs(peak)))
        log_w = log_w - log_total
        err = err + err_total + 2.0 * _U * (np.abs(np.where(fin, log_w, 0.0)) + abs(log_total))
    err = 2.0 * err
    for arr in (log_w, err):
        arr.setflags(write=False)
    return log_w, err


def _support(log_w, err):
    keep = np.flatnonzero(np.isfinite(log_w))
    return keep.astype(np.float64), log_w[keep], err[keep]


def loss_enclosure(x: np.ndarray, mu: float, log_w: np.ndarray, err: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(L~, e)`` with ``|L~(x) - L(x)| <= e(x)``, ``L(x) = log sum_k w_k exp(k mu x - k^2 mu^2 / 2)`` (finite
    ``x``; ``mu`` the float ``Delta / sigma``, within u of the exact one). Each term's exponent is within
    ``err_k + 8u (|log w_k| + |k mu x| + k^2 mu^2 / 2)``; the log-sum-exp adds ``(terms + 6) u`` and ``2u |L~|``."""
    ks, lw, ew = _support(log_w, err)
    x = np.asarray(x, dtype=np.float64)
    lin = ks[:, None] * mu * x[None, :]
    quad = (ks * ks * (mu * mu) / 2.0)[:, None]
    terms = lw[:, None] + lin - quad
    term_err = ew[:, None] + 8.0 * _U * (np.abs(lw)[:, None] + np.abs(lin) + quad)
    peak = terms.max(axis=0)
    with np.errstate(under="ignore"):
        value = peak + np.log(np.exp(terms - peak).sum(axis=0))
    bound = term_err.max(axis=0) + (ks.size + 6.0) * _U + 2.0 * _U * (np.abs(value) + np.abs(peak))
    return value, 2.0 * bound


def _slope(x, mu, log_w, err):
    """``L'(x) = sum_k k mu softmax_k`` (for the Newton steps only: no bound is taken from it)."""
    ks, lw, _ = _support(log_w, err)
    terms = lw[:, None] + ks[:, None] * mu * x[None, :] - (ks * ks * (mu * mu) / 2.0)[:, None]
    with np.errstate(under="ignore", invalid="ignore"):
        soft = np.exp(terms - terms.max(axis=0))
        return (ks[:, None] * mu * soft).sum(axis=0) / soft.sum(axis=0)


def _side(x, edges, mu, log_w, err):
    """``(below, above)``: where ``L(x) <= e`` and where ``L(x) >= e`` are certified (``e = edges``).

    ``L(x) = A(x) + log1p(S(x))`` with ``A = log w_k0 + k0 mu x - k0^2 mu^2 / 2`` (``k0`` the smallest ``k`` in the
    support) and ``S = sum_(k > k0) exp(c_k)``, ``c_k = log w_k - log w_k0 + (k - k0) mu x - (k^2 - k0^2) mu^2 / 2``;
    ``L <= e`` iff ``S <= T = expm1(e - A)``. Errors (relative, so flat stretches of ``L`` near its infimum keep
    their precision): ``c_k`` within ``eta_k = err_k + err_k0 + 8u (|log w_k| + |log w_k0| + |(k - k0) mu x| +
    (k^2 + k0^2) mu^2 / 2)``, so ``S`` within the factor ``e^(+-eta)`` and ``(2m + 4) u`` of its ``m`` terms'
    sum; ``e - A`` within ``err_k0 + 8u (|log w_k0| + |k0 mu x| + k0^2 mu^2 / 2 + |e|)``; ``expm1`` within 2u."""
    ks, lw, ew = _support(log_w, err)
    k0, l0, e0 = ks[0], lw[0], ew[0]
    half = mu * mu / 2.0
    a_err = e0 + 8.0 * _U * (abs(l0) + np.abs(k0 * mu * x) + k0 * k0 * half + np.abs(edges))
    d = edges - (l0 + k0 * mu * x - k0 * k0 * half)
    with np.errstate(over="ignore"):
        t_lo, t_hi = np.expm1(d - 2.0 * a_err), np.expm1(d + 2.0 * a_err)
    t_lo = t_lo - 4.0 * _U * np.abs(t_lo)
    t_hi = t_hi + 4.0 * _U * np.abs(t_hi)
    if ks.size == 1:
        s_lo = s_hi = np.zeros(x.shape)
    else:
        rest, lr, er = ks[1:], lw[1:], ew[1:]
        lin = (rest - k0)[:, None] * mu * x[None, :]
        c = (lr - l0)[:, None] + lin - ((rest * rest - k0 * k0) * half)[:, None]
        eta = (er + e0)[:, None] + 8.0 * _U * ((np.abs(lr) + abs(l0))[:, None] + np.abs(lin)
                                               + ((rest * rest + k0 * k0) * half)[:, None])
        eta = 2.0 * eta.max(axis=0)
        with np.errstate(over="ignore", under="ignore", invalid="ignore"):
            total = np.exp(c).sum(axis=0)
            slack = (2.0 * rest.size + 4.0) * _U * 2.0
            s_lo = total * np.exp(-eta) * (1.0 - slack)
            s_hi = total * np.exp(eta) * (1.0 + slack)
    return s_hi <= t_lo, s_lo >= t_hi


def _inverse(edges, mu, log_w, err):
    """``(x_lo, x_hi)`` with ``x_lo <= x(e) <= x_hi`` where ``L(x(e)) = e``: Newton steps give an estimate ``x~``,
    then the ends ``x~ -+ d`` are kept only where ``L <= e`` (low end) or ``L >= e`` (high end) was certified
    (:func:`_side`), ``d`` growing fourfold until they are; a low end never certified is ``-inf``
    (``e`` within the loss's error of its infimum ``log w_min``), a high end never certified ``+inf``. Since ``L``
    is increasing, the exact ``x(e)`` lies between certified ends: no step of the estimate needs to be proven."""
    ks, lw, _ = _support(log_w, err)
    edges = np.asarray(edges, dtype=np.float64)
    j = 1 if ks.size > 1 else 0
    kj, lj = ks[j], lw[j]
    half = mu * mu / 2.0
    # L >= log w_j + kj mu x - kj^2 mu^2 / 2, so at ``cap`` L >= e + 1 (up to rounding)
    cap = (edges + 1.0 - lj + kj * kj * half) / (kj * mu)
    # estimate: all non-zero slots at k = 1 (k0 the smallest k), L = log(w0 + (1 - w0) e^(mu x - mu^2/2))
    if ks[0] == 0 and ks.size > 1:
        w0 = math.exp(lw[0])
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            guess = (np.log(np.maximum(np.exp(edges) - w0, 0.0) / (1.0 - w0)) + half) / mu
    else:
        guess = cap - 1.0 / (kj * mu)
    x = np.where(np.isfinite(guess), np.minimum(guess, cap), cap)
    for _ in range(16):
        v, _r = loss_enclosure(x, mu, log_w, err)
        slope = np.maximum(_slope(x, mu, log_w, err), 1e-300)
        with np.errstate(over="ignore", invalid="ignore"):
            step = (v - edges) / slope
        x = np.clip(x - np.where(np.isfinite(step), step, 64.0 * np.sign(v - edges)), x - 64.0, cap)
    v, r = loss_enclosure(x, mu, log_w, err)
    slope = np.maximum(_slope(x, mu, log_w, err), 1e-300)
    with np.errstate(over="ignore", invalid="ignore"):
        d0 = (1e-15 + 2.0 * np.abs(v - edges)) / slope + 4.0 * _U * (1.0 + np.abs(x))
    d0 = np.where(np.isfinite(d0), np.minimum(d0, 1e6), 1.0)
    out = []
    for sign in (-1.0, 1.0):
        end = np.full(edges.shape, -np.inf if sign < 0 else np.inf)
        todo = np.arange(edges.size)
        d = d0.copy()
        for _ in range(48):
            if not todo.size:
                break
            trial = x[todo] + sign * d[todo]
            below, above = _side(trial, edges[todo], mu, log_w, err)
            ok = below if sign < 0 else above
            end[todo[ok]] = trial[ok]
            todo = todo[~ok]
            d[todo] *= 4.0
        out.append(end)
    # below the infimum (certified: e + its rounding < computed log w_min - its error): L > e everywhere
    # (only with a k = 0 term: otherwise L decreases to -inf)
    if ks[0] == 0:
        nowhere = edges * (1.0 + 2.0 * _U) + 2.0 * _U < lw[0] - _support(log_w, err)[2][0]
        out[1][nowhere] = -np.inf
    return out[0], out[1]


def with_replacement_buckets(mu: float, log_w: np.ndarray, err: np.ndarray, edges: np.ndarray,
                             remove: bool) -> LossBuckets:
    """:class:`~mechanisms.loss_buckets.LossBuckets` of the pair ``(sum_k w_k N(k mu, 1), N(0, 1))`` (removal) or
    its mirror (addition): module docstring. Removal: bucket ``(e_(i-1), e_i]`` is ``x`` in ``(x(e_(i-1)),
    x(e_i)]``, P-mass ``sum_k w_k [Phi(x_i - k mu) - Phi(x_(i-1) - k mu)]``, Q-mass the ``k = 0`` interval.
    Addition (loss ``-L`` under ``Q``): bucket ``(a, b]`` is ``x`` in ``[x(-b), x(-a))``. Both laws are continuous
    (open and closed buckets agree), so ``down`` is the lower P-mass."""
    edges = np.asarray(edges, dtype=np.float64)
    ks, lw, ew = _support(log_w, err)
    if ks[-1] == 0:  # b = 0: the loss is 0
        return atom_buckets([0.0], [0.0], edges)
    x_lo, x_hi = _inverse(edges if remove else -edges, mu, log_w, err)
    if remove:
        a_lo, a_hi = np.concatenate([[-np.inf], x_lo]), np.concatenate([[-np.inf], x_hi])
        b_lo, b_hi = np.concatenate([x_lo, [np.inf]]), np.concatenate([x_hi, [np.inf]])
    else:
        a_lo, a_hi = np.concatenate([x_lo, [-np.inf]]), np.concatenate([x_hi, [-np.inf]])
        b_lo, b_hi = np.concatenate([[np.inf], x_lo]), np.concatenate([[np.inf], x_hi])
    mix_hi = np.zeros(a_lo.shape)
    mix_lo = np.zeros(a_lo.shape)
    base = None
    for k, l_k, e_k in zip(ks.tolist(), lw.tolist(), ew.tolist()):
        shift = k * mu
        s_u = 4.0 * _U * (abs(shift) + 1.0)  # k mu's rounding and mu's own error, and the subtraction
        lo_k, hi_k = _normal_interval(_widen(a_lo - shift, s_u, -1), _widen(a_hi - shift, s_u, 1),
                                      _widen(b_lo - shift, s_u, -1), _widen(b_hi - shift, s_u, 1))
        if k == 0:
            base = (lo_k, hi_k)
        mix_hi += math.exp(l_k + e_k) * (1.0 + 2.0 * _U) * hi_k
        mix_lo += math.exp(l_k - e_k) * (1.0 - 2.0 * _U) * lo_k
    terms = ks.size + 2.0  # the products and the sum of non-negative terms: relative (terms) u
    mix_hi = np.minimum(mix_hi * (1.0 + 2.0 * terms * _U), 1.0)
    mix_lo = mix_lo * (1.0 - 2.0 * terms * _U)
    if base is None:  # n = 1: no k = 0 term in the mixture; Q's intervals on their own
        base = _normal_interval(_widen(a_lo, 4.0 * _U, -1), _widen(a_hi, 4.0 * _U, 1),
                                _widen(b_lo, 4.0 * _U, -1), _widen(b_hi, 4.0 * _U, 1))
    (p_lo, p_hi), (q_lo, q_hi) = ((mix_lo, mix_hi), base) if remove else (base, (mix_lo, mix_hi))
    return LossBuckets(p_hi, p_lo, np.minimum(q_hi, 1.0), q_lo, p_lo)


def remove_log_moments(orders: np.ndarray, mu: float, log_w: np.ndarray, err: np.ndarray) -> np.ndarray:
    """Upper bounds on ``log E_Q[(dP/dQ)^l]`` at integer orders ``l >= 2`` (``inf`` beyond
    :data:`MAX_MOMENT_ORDER` or :data:`MOMENT_BUDGET`): ``logsumexp_K (mu^2 K^2 / 2 + log (a^(*l))_K)``, ``log a_k =
    log w_k - mu^2 k^2 / 2`` (module docstring), the convolutions one factor ``a`` at a time in log space.

    Error: each ``log a_k`` is within ``e_a = max err_k + 8u (|log w_k| + mu^2 k^2 / 2)``; each convolution step
    adds ``e_a`` (the new factor), ``2u M`` (the additions, ``M`` the largest magnitude of a log value seen) and
    ``(s + 6) u`` (the log-sum-exp of ``s`` terms); the final sum the same once more. The bound is that sum of
    errors, times 2, added to the computed value."""
    orders = np.asarray(orders, dtype=np.float64).reshape(-1)
    out = np.full(orders.shape, np.inf)
    ks, lw, ew = _support(log_w, err)
    quad_k = ks * ks * (mu * mu) / 2.0
    log_a = lw - quad_k
    err_a = float(np.max(ew + 8.0 * _U * (np.abs(lw) + quad_k)))
    kmax = int(ks[-1])
    wanted = orders[(orders >= 2) & (orders <= MAX_MOMENT_ORDER) & (orders == np.round(orders))]
    if not wanted.size:
        return out
    top = int(wanted.max())
    offsets = ks.astype(np.int64)
    conv = np.full(kmax + 1, -np.inf)
    conv[offsets] = log_a
    magnitude = float(np.max(np.abs(log_a)))
    acc_err = err_a
    work = 0
    results = {}
    for l in range(2, top + 1):
        size = conv.size + kmax
        work += size * ks.size
        if work > MOMENT_BUDGET:
            break
        stacked = np.full((ks.size, size), -np.inf)
        for row, (off, la) in enumerate(zip(offsets.tolist(), log_a.tolist())):
            stacked[row, off : off + conv.size] = conv + la
        peak = stacked.max(axis=0)
        fin = np.isfinite(peak)
        with np.errstate(invalid="ignore", under="ignore"):
            new = np.where(fin, peak + np.log(np.exp(stacked - np.where(fin, peak, 0.0)).sum(axis=0)), -np.inf)
        conv = new
        finite_vals = conv[np.isfinite(conv)]
        magnitude = max(magnitude, float(np.max(np.abs(finite_vals))))
        acc_err += err_a + 2.0 * _U * magnitude + (ks.size + 6.0) * _U
        if l in wanted:
            big_k = np.arange(conv.size, dtype=np.float64)
            quad = big_k * big_k * (mu * mu) / 2.0
            terms = quad + conv
            fin = np.isfinite(terms)
            peak = float(terms[fin].max())
            value = peak + math.log(float(np.exp(terms[fin] - peak).sum()))
            mag = max(magnitude, float(quad.max()), abs(value))
            total_err = acc_err + 8.0 * _U * float(quad.max()) + 2.0 * _U * mag + (conv.size + 6.0) * _U
            results[l] = value + 2.0 * total_err
    for i, a in enumerate(orders.tolist()):
        if a in results:
            out[i] = results[a]
    return out


#: Step of the upper Riemann sums of :func:`remove_rdp_quadrature` (a power of two: the grid points are exact).
QUADRATURE_STEP = 2.0**-10
#: Half-width of the quadrature's range in standard deviations (``Phi(-37) < 1e-299``).
_Z = 37.0


@functools.lru_cache(maxsize=32)
def _loss_on_grid(mu, log_w, err):
    """``(x, l_lo, l_hi)``: the quadrature grid and an enclosure of ``l = L(x)`` at each point (the
    ``A + log1p(S)`` form of :func:`_side`, ``k0 = 0``: errors relative to ``l`` where ``l`` is small). ``log_w``
    and ``err`` are passed as tuples (cache keys)."""
    log_w, err = np.array(log_w), np.array(err)
    ks, lw, ew = _support(log_w, err)
    half = mu * mu / 2.0
    x = np.arange(-_Z, _Z + ks[-1] * mu * 2.0 + QUADRATURE_STEP, QUADRATURE_STEP)  # orders up to 2
    rest, lr, er = ks[1:], lw[1:], ew[1:]
    l0, e0 = lw[0], ew[0]
    lin = rest[:, None] * mu * x[None, :]
    c = (lr - l0)[:, None] + lin - (rest * rest * half)[:, None]
    eta = (er + e0)[:, None] + 8.0 * _U * ((np.abs(lr) + abs(l0))[:, None] + np.abs(lin)
                                           + (rest * rest * half)[:, None])
    eta = 2.0 * eta.max(axis=0)
    with np.errstate(over="ignore", under="ignore", invalid="ignore"):
        total = np.exp(c).sum(axis=0)
        rho = np.expm1(eta) + (2.0 * rest.size + 4.0) * _U * 2.0  # S within the relative rho (rho << 1)
        log1p_s = np.log1p(total)
        value = l0 + log1p_s
        share = np.where(np.isinf(total), 1.0, total / (1.0 + total))  # S / (1 + S): d log1p(S) / d log S
        l_err = e0 + 2.0 * rho * share + 4.0 * _U * (np.abs(log1p_s) + np.abs(value) + abs(l0))
    finite = np.isfinite(value)  # an overflowed S: the loss bound is +inf at both ends (the order's bound: inf)
    return x, np.where(finite, value - 2.0 * np.where(finite, l_err, 0.0), np.inf), np.where(
        finite, value + 2.0 * np.where(finite, l_err, 0.0), np.inf)


def _f_upper(ell, alpha):
    """Upper bound on ``f(e^l) = e^(a l) - 1 - a (e^l - 1) = expm1(a l) - a expm1(l)`` at the float ``l``: the
    two ``expm1`` within 2u of their values, ``a l`` within u (which moves ``expm1(a l)`` by at most
    ``u |a l| e^(a l)``), the product and the difference within u of the magnitudes; times 2."""
    with np.errstate(over="ignore", invalid="ignore"):
        first = np.expm1(alpha * ell)
        second = alpha * np.expm1(ell)
        value = first - second
        slack = 8.0 * _U * ((np.abs(first) + 1.0) * (1.0 + np.abs(alpha * ell)) + np.abs(second))
    return np.where(np.isnan(value), np.inf, value + slack)


def remove_rdp_quadrature(orders: np.ndarray, mu: float, log_w: np.ndarray, err: np.ndarray) -> np.ndarray:
    """Upper bounds on ``D_a(P || Q)`` at real orders ``a`` in ``(1, 2]`` (``inf`` elsewhere and where the support
    has no ``k = 0``): ``E_Q[L^a] = 1 + E_Q[f(L)]``, ``f(y) = y^a - 1 - a (y - 1) >= 0`` (``E_Q[L] = 1``), bounded
    by an upper Riemann sum.

    Proof. On a cell ``[x_i, x_(i+1)]`` of the grid (step :data:`QUADRATURE_STEP`, exact floats), ``phi`` is at most
    its value at the end nearer 0 (``phi(0)`` if the cell straddles 0), and ``f(L(x))`` at most its larger end value:
    ``f`` decreases on ``(0, 1]`` and increases on ``[1, inf)`` and ``L`` increases, so ``f o L`` has no interior
    maximum. The end values are bounded through the enclosure ``[l_lo, l_hi]`` of ``log L`` (``f(e^l)`` is again
    quasi-convex in ``l``: its larger end). Left of the grid (``x < -37``) ``L`` lies in ``[w_0, 1]`` (checked:
    ``l_hi(-37) <= 0``), where ``f <= a (1 - w_0) <= a``, on mass ``Phi(-37) < 1e-299``. Right of it (``x > X``,
    ``X = 37 + 2 k_max mu`` and ``l_lo(X) >= 0``) ``f(L) <= L^a <= m^(a-1) sum_k w_k^a X_k^a`` (power means;
    ``m`` terms), and ``int_X^inf phi(x) e^(a (k mu x - k^2 mu^2 / 2)) dx = e^(a (a-1) k^2 mu^2 / 2) Phi(a k mu - X)``
    with ``X - a k mu >= 37``. ``phi`` is computed within ``4u (1 + x^2)`` relative, the products and the sum of
    ``N`` non-negative terms within ``(N + 8) u``; every such factor is doubled."""
    orders = np.asarray(orders, dtype=np.float64).reshape(-1)
    out = np.full(orders.shape, np.inf)
    ks, lw, ew = _support(log_w, err)
    use = np.isfinite(orders) & (orders > 1.0) & (orders <= 2.0)
    if ks[0] != 0 or ks.size < 2 or not use.any():
        return out
    if (2.0 * _Z + 2.0 * ks[-1] * mu) / QUADRATURE_STEP * ks.size > MOMENT_BUDGET:
        return out  # too many points or terms (large batches without max_repeats): the other bounds apply
    x, l_lo, l_hi = _loss_on_grid(float(mu), tuple(np.asarray(log_w).tolist()), tuple(np.asarray(err).tolist()))
    if l_hi[0] > 0.0 or l_lo[-1] < 0.0:
        return out
    left, right = x[:-1], x[1:]
    near = np.where(right <= 0.0, right, np.where(left >= 0.0, left, 0.0))
    phi = np.exp(-0.5 * near * near) / math.sqrt(2.0 * math.pi) * (1.0 + 16.0 * _U * (1.0 + near * near))
    width = (right - left) * (1.0 + 2.0 * _U)
    n = left.size
    log_phi_tail = -689.0  # log Phi(-37) < -689.9
    for i in np.flatnonzero(use):
        a = float(orders[i])
        ends = np.maximum(_f_upper(l_lo, a), _f_upper(l_hi, a))  # f(e^l) over the enclosure: its larger end
        cell = np.maximum(ends[:-1], ends[1:])
        with np.errstate(over="ignore", invalid="ignore"):
            body = float(np.sum(phi * cell * width)) * (1.0 + 2.0 * (n + 8.0) * _U)
        left_tail = a * math.exp(log_phi_tail)
        tail_terms = (a - 1.0) * math.log(ks.size) + a * (lw + ew) + a * (a - 1.0) * ks * ks * mu * mu / 2.0
        right_tail = float(np.exp(tail_terms + log_phi_tail).sum()) * (1.0 + 1e-9)
        total = (body + left_tail + right_tail) * (1.0 + 1e-12)
        if not math.isfinite(total):
            continue
        out[i] = math.log1p(total) / (a - 1.0) * (1.0 + 8.0 * _U) + 1e-300
    return out


def add_rdp_upper(orders: np.ndarray, mu: float, log_w: np.ndarray, err: np.ndarray,
                  subsampled_rdp: Callable[[np.ndarray, float], np.ndarray]) -> np.ndarray:
    """Upper bounds on ``D_l(Q || P)`` at real orders ``l > 1`` (``inf`` included: pure DP only where
    ``subsampled_rdp`` gives it): the smaller of ``min_j (-log w_j + l j^2 mu^2 / 2)`` and ``-log(w_0 + w_1) +
    subsampled_rdp(l, g)`` with ``g = w_1 / (w_0 + w_1)`` rounded up (module docstring). ``subsampled_rdp(orders,
    g)`` must be a proven RDP bound of the Poisson-subsampled Gaussian of parameter ``mu`` at rate ``g``."""
    orders = np.asarray(orders, dtype=np.float64).reshape(-1)
    ks, lw, ew = _support(log_w, err)
    fin = np.isfinite(orders)
    out = np.full(orders.shape, np.inf)
    a = orders[fin]
    quad = ks * ks * (mu * mu) / 2.0
    with np.errstate(over="ignore", invalid="ignore"):
        single = (-lw + ew)[:, None] + a[None, :] * quad[:, None]
        single = single + 8.0 * _U * (np.abs(lw)[:, None] + np.abs(single))
    best = single.min(axis=0)
    if ks.size >= 2 and ks[0] == 0 and ks[1] == 1:
        l0, l1, e0, e1 = lw[0], lw[1], ew[0], ew[1]
        log_sum = float(np.logaddexp(l0, l1))
        neg_log_sum = -log_sum + max(e0, e1) + 8.0 * _U * (abs(log_sum) + 1.0)
        g = min(1.0, math.exp(l1 + e1 - log_sum + max(e0, e1) + 8.0 * _U * (abs(l1) + abs(log_sum) + 1.0))
                * (1.0 + 4.0 * _U))
        sub = np.asarray(subsampled_rdp(orders, g), dtype=np.float64)
        via = neg_log_sum + sub[fin]
        best = np.minimum(best, via * (1.0 + 4.0 * _U) + 4.0 * _U)
        inf_part = sub[~fin] + neg_log_sum
        out[~fin] = inf_part
    out[fin] = best
    return out


@dataclasses.dataclass(frozen=True, slots=True)
class WithReplacementPair(Mechanism):
    """The dominating pair of fixed-size batches drawn with replacement with a Gaussian batch ``mechanism``
    (module docstring), described by proven privacy-loss buckets: what the characteristic-function accountant
    composes for :class:`~mechanisms.with_replacement.SampledWithReplacement` (its privacy buckets).

    ``rdp`` is :class:`~mechanisms.with_replacement.SampledWithReplacement`'s proven bound (the pair is realised by
    a sum query, so a bound on the mechanism is one on the pair). ``log_mgf`` comes from a trapezoidal quadrature
    over the output (an estimate, ``log_mgf_is_proven`` is False): used only where a ledger mixes this pair with
    mechanisms that have no loss buckets, and then labelled an estimate.

    Examples
    --------
    >>> from dpledger.mechanisms import GaussianMechanism
    >>> pair = WithReplacementPair(GaussianMechanism(sigma=2.0, sensitivity=2.0), batch_size=3, dataset_size=6)
    >>> bool(pair.loss_buckets([0.0], Direction.REMOVE).p_upper.sum() >= 1.0)
    True
    """

    mechanism: GaussianMechanism
    batch_size: int
    dataset_size: int
    max_repeats: int | None = dataclasses.field(default=None, kw_only=True)

    log_mgf_is_proven = False
    log_mgf_is_closed_form = False

    def __post_init__(self):
        owner = "WithReplacementPair"
        if not isinstance(self.mechanism, GaussianMechanism):
            raise TypeError(f"`mechanism` of {owner} must be a GaussianMechanism; got {self.mechanism!r}.")
        _validate.with_replacement_fields(self, owner)

    @property
    def children(self) -> tuple[Mechanism, ...]:
        return (self.mechanism,)

    def _sampled(self):
        from dpledger.mechanisms.with_replacement import SampledWithReplacement

        return SampledWithReplacement(self.mechanism, batch_size=self.batch_size, dataset_size=self.dataset_size,
                                      max_repeats=self.max_repeats)

    def _rdp(self, orders):
        return self._sampled()._rdp(orders)

    def _mu(self):
        return self.mechanism.sensitivity / self.mechanism.sigma

    def weights(self) -> tuple[np.ndarray, np.ndarray]:
        """``(log w_k, err_k)``, ``k = 0..top``: :func:`log_weights` of this pair."""
        return log_weights(self.batch_size, self.dataset_size, self.max_repeats)

    @property
    def has_loss_buckets(self) -> bool:
        return True

    def loss_buckets(self, edges: ArrayLike, direction: Direction) -> LossBuckets:
        log_w, err = self.weights()
        return with_replacement_buckets(self._mu(), log_w, err, np.asarray(edges, dtype=np.float64),
                                        direction is Direction.REMOVE)

    def loss_cut(self, direction: Direction, tail: float) -> float:
        """Where the privacy buckets cut the grid (:meth:`~mechanisms.base.Mechanism.loss_cut`: never a bound),
        from the pair's own support. Removal: ``L(x)`` at the first ``x`` of a grid where the mixture's upper tail
        ``sum_k w_k P(Z > x - k mu)`` is at most ``tail`` (``L`` increases in ``x``); addition: the loss ``-L`` is at
        most ``-log w_0`` (its supremum, the limit as ``x -> -inf``; the cut is a little above, where the
        buckets certify that nothing lies), or the default where there is no ``k = 0``
        term (``n = 1``)."""
        from scipy import special

        log_w, err = self.weights()
        ks, lw, ew = _support(log_w, err)
        mu = self._mu()
        if ks[-1] == 0:  # b = 0: the loss is 0
            return 0.0
        if direction is not Direction.REMOVE:
            if ks[0] != 0:
                return Mechanism.loss_cut(self, direction, tail)
            return float(-lw[0] + ew[0]) * (1.0 + 1e-12) + 1e-12  # above the rounding the buckets certify
        x = np.linspace(-40.0, 40.0 + float(ks[-1]) * mu, 8001)
        above = (np.exp(lw)[:, None] * special.ndtr(ks[:, None] * mu - x[None, :])).sum(axis=0)
        i = min(int(np.searchsorted(-above, -tail, side="left")), x.size - 1)  # first x with above <= tail
        return float(loss_enclosure(x[i:i + 1], mu, log_w, err)[0][0])

    def _log_mgf(self, s):
        """``log E_P[e^(s L)] = log int phi(x) e^((s + 1) L(x)) dx`` by the trapezoidal rule (an estimate)."""
        log_w, err = self.weights()
        ks, _, _ = _support(log_w, err)
        mu = self._mu()
        x = np.linspace(-40.0, 40.0 + float(ks[-1]) * mu, 16_001)
        loss, _ = loss_enclosure(x, mu, log_w, err)
        log_phi = -0.5 * x * x - 0.5 * math.log(2.0 * math.pi) + math.log(x[1] - x[0])
        a = log_phi[None, :] + (s[:, None] + 1.0) * loss[None, :]
        peak = a.real.max(axis=1, keepdims=True)
        return (peak[:, 0] + np.log(np.exp(a - peak).sum(axis=1))).astype(np.complex128)
