"""Proven upper bounds on the body's transform at real tilts by a finite binomial sum.

For the Poisson-subsampled Gaussian (``mu = 1 / noise_multiplier``, sampling probability ``g``, ``X ~ N(0, 1)`` with
density ``phi``, ``w(x) = e^(mu x - mu^2 / 2)``, ``B = 1 - g + g w``), the remove direction's law cut at ``x = c``
(:mod:`mechanisms.subsampled_body`) has ``F_b(a) = int_{-inf}^c phi(x) B(x)^a dx``. At an integer ``a = n >= 0`` the
binomial theorem and ``phi(x) e^(j mu x) = phi(x - j mu) e^(j^2 mu^2 / 2)`` give a finite sum of positive terms::

    F_b(n) = sum_{j=0}^{n} T_j,   T_j = C(n, j) (1 - g)^(n - j) g^j e^(j (j - 1) mu^2 / 2) Phi(c - j mu).

**Truncation.** ``T_(j+1) / T_j = (n - j) / (j + 1) g / (1 - g) e^(j mu^2) Phi(t - mu) / Phi(t)`` with ``t = c - j mu``.
``log Phi`` is concave, so it lies below its tangent: ``log Phi(t - mu) <= log Phi(t) - mu phi(t) / Phi(t)``, and
``phi(t) / Phi(t) >= -t`` for every ``t`` (Mills' ratio for ``t < 0``; the left side is positive otherwise). Hence
``T_(j+1) / T_j <= rho_j = (n - j) / (j + 1) K`` with ``K = g e^(mu c) / (1 - g)``, decreasing in ``j``. From the first
``J`` with ``rho_J <= 1/2`` on, the terms beyond any stop ``S >= J`` are at most ``T_S rho_S / (1 - rho_S) <= T_S`` (a
geometric series); the sum runs to ``S = 2 max(J, 16)`` first (at most ``n``), ``S`` doubled while that bound exceeds
``2^-60`` of the terms summed, and the bound is added. The ratio bound is loose where ``c - j mu > 0``, but the terms
there fall fast anyway: a narrow loss (``K`` small) needs a few dozen to a few hundred terms.

**Between integers.** ``a -> log F_b(a)`` is convex (a Laplace transform of a positive measure, by Hoelder), so at
``a = n + t`` it is at most the chord ``(1 - t) log F_b(n) + t log F_b(n + 1)``.

**Rounding.** Each ``log T_j`` is a sum of ``log C(n, j)`` (three ``gammaln``), ``(n - j) log1p(-g)``, ``j log g``, ``j
(j - 1) mu^2 / 2`` and ``log_ndtr(c - j mu)``; its absolute error is charged as ``64 u`` times the sum of the magnitudes
of all these parts and their inputs (``u = 2^-53``: each library function is within a few ulps of its value, each
product and sum within one). The terms are summed as ``e^(d_j)``, ``d_j = log T_j - max log T <= 0``: each computed
within ``(4 + |d_j|) u`` relative (the subtraction's rounding moves the exponent by ``u |d_j|``, the exponential is
within a few ulps), and ``e^d |d| <= 1/e``, so over the ``N + 1`` terms summed (``j = 0 .. N``) with a sum ``>= 1`` (the
largest term is ``e^0``) these errors are at most ``(4 + (N + 1) / e) u`` of the sum; the sum of positive terms adds ``N
u`` (any order, to first order); the factor ``1 + (2 N + 8) u`` covers both, their products and its own two roundings.
The logarithm, the last sum (``4 u`` of the magnitudes each) and the chord between integers (``16 u`` of its parts) are
charged together, as one rounding up of the chord by its slack plus the larger of its two integers'. These bounds cost a
few hundred terms where the quadrature enclosures of :mod:`mechanisms.subsampled_gaussian_cf` lay out panels near a
steep cut at every tilt.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike
from scipy import special

from dpledger.mechanisms import _logmath

__all__ = ["log_body_upper"]

_U = 2.0**-53
#: Ulps charged per unit of magnitude of each term's logarithm (generous: a few would do).
_ULPS = 64.0


def _log_terms(m, j, lengths, g, mu, cut):
    """Upper bounds on ``log T_j`` (rounding charged, module docstring) at the integers ``m`` (int64), each with the
    indices ``j = 0 .. lengths - 1`` (``j``: these runs, concatenated). The parts that depend on ``j`` or ``m`` alone
    are computed once per index or integer (the same functions of the same floats: the same values) and
    gathered."""
    indices = np.arange(int(j.max(initial=0)) + 1, dtype=np.float64)
    arg_j = cut - indices * mu
    g_n = np.repeat(special.gammaln(m + 1.0), lengths)
    m = np.repeat(m, lengths)
    g_j, arg, log_phi = special.gammaln(indices + 1.0)[j], arg_j[j], special.log_ndtr(arg_j)[j]
    m, j = m.astype(np.float64), j.astype(np.float64)
    g_nj = special.gammaln(m - j + 1.0)
    quad = 0.5 * j * (j - 1.0) * mu * mu
    log_1mg, log_g = np.log1p(-g), np.log(g)
    log_t = (g_n - g_j - g_nj) + (m - j) * log_1mg + j * log_g + quad + log_phi
    magnitude = (np.abs(g_n) + np.abs(g_j) + np.abs(g_nj) + np.abs((m - j) * log_1mg) + np.abs(j * log_g) + quad
                 + np.abs(log_phi) + np.abs(arg) + abs(cut) + m + 1.0)
    return log_t + _ULPS * _U * magnitude


#: The sum stops once the bound on the terms left out is below this fraction of the terms summed.
_TAIL_SHARE = 2.0**-60
#: The first stop tried per integer is this multiple of ``max(J, 16)`` (at most ``m``): the tail bound at ``J`` is
#: rarely below ``2^-60`` of the sum, and a second pass costs more than the extra terms of the first.
_FIRST_STOP_FACTOR = 2
_MIN_TERMS = 16


def _first_small_ratio(m: np.ndarray, log_k: float, k_val: float) -> np.ndarray:
    """The first ``J`` (at most ``m``) with ``rho_J = (m - J) / (J + 1) K <= 1/2`` as the float test computes it,
    at each integer of ``m`` (an int64 array)."""
    # rho_j <= 1/2  <=>  (m - j) K <= (j + 1) / 2  <=>  j >= (m K - 1/2) / (K + 1/2); the float test then decides
    j0 = np.minimum(m, np.maximum(0, np.ceil((m * k_val - 0.5) / (k_val + 0.5)))).astype(np.int64)
    while True:
        more = j0 < m
        more[more] = np.log((m - j0)[more]) - np.log(j0[more] + 1.0) + log_k > np.log(0.5)
        if not more.any():
            return j0
        j0 = j0 + more


def _log_integer(n: np.ndarray, g: float, mu: float, cut: float) -> tuple[np.ndarray, np.ndarray]:
    """``(value, error)`` with ``log F_b(n) <= value + error`` exactly at non-negative integers ``n`` (module
    docstring): ``value`` the float ``log max T + log(sum + tail)``, ``error`` its rounding (the logarithm's and
    the last sum's, each within an ulp of their magnitudes: they may cancel) as a float within a few ulps of it.

    All integers at once: the terms ``j = 0 .. stop_m`` of every ``m`` in one flat array (segments at cumulative
    offsets), the maximum and the sum of each segment by ``reduceat``; only the integers whose tail bound is not
    yet below ``2^-60`` of their sum go round again, with ``stop`` doubled (at most to ``m``). The first stop is
    ``2 max(J, 16)`` (any stop at or above ``J`` keeps the tail bound valid)."""
    log_k = np.log(g) + mu * cut - np.log1p(-g)  # log K
    k_val = np.exp(min(log_k, 700.0))
    m_all = np.asarray(n).astype(np.int64).reshape(-1)
    top_all, log_total_all = np.empty(m_all.size), np.empty(m_all.size)
    stop = np.minimum(m_all, _FIRST_STOP_FACTOR * np.maximum(_first_small_ratio(m_all, log_k, k_val), _MIN_TERMS))
    todo = np.arange(m_all.size)
    while todo.size:
        m, st = m_all[todo], stop[todo]
        lengths = st + 1
        offsets = np.zeros(todo.size, dtype=np.int64)
        np.cumsum(lengths[:-1], out=offsets[1:])
        j_flat = np.arange(int(lengths.sum()), dtype=np.int64) - np.repeat(offsets, lengths)
        log_t = _log_terms(m, j_flat, lengths, g, mu, cut)
        top = np.maximum.reduceat(log_t, offsets)
        terms = np.exp(log_t - np.repeat(top, lengths))
        # the exponentials and the sum of positive terms: (2 N + 8) u of the sum covers both (module docstring)
        total = np.add.reduceat(terms, offsets) * (1.0 + (2.0 * st + 8.0) * _U)
        last = terms[offsets + st]
        tail = np.zeros(todo.size)
        open_ = st < m
        # beyond stop >= J the terms fall at least geometrically, with ratio rho_stop <= 1/2
        rho = (m[open_] - st[open_]) / (st[open_] + 1.0) * np.exp(log_k)
        tail[open_] = last[open_] * rho / (1.0 - rho) * (1.0 + 8.0 * _U)
        again = open_ & ~(tail <= _TAIL_SHARE * total)
        done = ~again
        top_all[todo[done]], log_total_all[todo[done]] = top[done], np.log(total[done] + tail[done])
        todo = todo[again]
        stop[todo] = np.minimum(m_all[todo], 2 * stop[todo])
    value = top_all + log_total_all
    return value, 4.0 * _U * (np.abs(value) + np.abs(top_all) + np.abs(log_total_all)) + 1e-300


def log_body_upper(a: ArrayLike, g: float, mu: float, cut: float) -> np.ndarray:
    """Proven upper bounds on ``log F_b(a) = log int_{-inf}^cut phi(x) (1 - g + g e^(mu x - mu^2/2))^a dx`` at real
    ``a >= 0`` (module docstring): the binomial sum at integers, the chord of the convex ``log F_b`` between them."""
    a = np.asarray(a, dtype=np.float64)
    flat = a.reshape(-1)
    if not (0.0 < g < 1.0) or not np.all(flat >= 0.0) or not np.all(np.isfinite(flat)):
        raise ValueError(f"log_body_upper: needs 0 < g < 1 and finite a >= 0; got g={g}, a={a}.")
    lo = np.floor(flat)
    ints, inverse = np.unique(np.concatenate([lo, lo + 1.0]), return_inverse=True)
    values, errors = _log_integer(ints, float(g), float(mu), float(cut))
    at_lo, at_hi = values[inverse[:flat.size]], values[inverse[flat.size:]]
    t = flat - lo
    chord = np.where(t == 0.0, at_lo, (1.0 - t) * at_lo + t * at_hi)
    # one rounding up for both: the chord of the integers' bounds value + error is at most the chord of the values
    # plus the larger error; the chord's own rounding is a few ulps of its parts (charged 16); the float slack
    # itself is within a few ulps of its value (charged 1e-12 of it)
    slack = (16.0 * _U * (np.abs(at_lo) + np.abs(at_hi))
             + np.maximum(errors[inverse[:flat.size]], errors[inverse[flat.size:]])) * (1.0 + 1e-12)
    out = _logmath.widen_up_entries(chord, 8.0 * _U, slack) if chord.size <= 64 else _logmath.widen_up(
        chord, 8.0 * _U, slack)
    return np.asarray(out, dtype=np.float64).reshape(a.shape)
