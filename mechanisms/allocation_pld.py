"""Proven privacy-loss buckets of random allocation with a Gaussian base (one of ``t`` steps per record).

The dominating pair (proved in :mod:`mechanisms.random_allocation`): for removal ``P_t = E_J[N(mu e_J, I_t)]``
against ``Q_t = N(0, I_t)``, whose privacy loss is ``L = log(S / t)`` with ``S = sum_i exp(mu x_i - mu^2 / 2)``.
Under ``P_t``, by symmetry, ``S = X' + X_1 + ... + X_(t-1)`` and under ``Q_t`` ``S = X_1 + ... + X_t``, all
independent, ``X = exp(V)``, ``V = mu Z - mu^2/2``, ``X' = exp(V')``, ``V' = mu Z + mu^2/2``, ``Z ~ N(0, 1)``.
Removal: loss ``L = log(S_P / t)`` under ``P_t``. Addition (the mirrored pair): loss ``-log(S_Q / t)`` under
``Q_t``.

Discretisation (every step monotone, so the losses are coupled pointwise, ``L'' <= L <= L'``, as
:mod:`mechanisms.loss_buckets` requires). Each ``V`` is rounded **up** (or **down**) to the grid ``k h``
(``h`` a power of two); sums are formed in log space by ``log(e^a + e^b) = max(a, b) + log1p(e^-|a - b|)``, the
second term rounded up (down) to a multiple of ``h``; so the computed ``log S`` is above (below) the exact one.
Below the grid (``Z < -8.5``) a rounded-up ``V`` sits at the grid's first point and a rounded-down ``X`` is 0;
above it (``Z > 8.5``) a rounded-up ``X`` is ``+inf`` (an infinite-loss atom) and a rounded-down ``V`` sits at the
last point. Up-rounded ``S`` gives ``L'`` for removal and ``L''`` for addition; down-rounded ``S`` the others.

Masses: cell masses are enclosed by :func:`mechanisms.loss_buckets.normal_cdf_bounds` at edges widened by their
float error (upper masses may count a sliver twice, lower ones drop it). The sums are computed with the upper
masses; each computed atom is a sum of products of ``t`` cell masses, so with ``r`` the largest relative gap
between a cell's upper and lower mass the lower masses of every atom are at least ``(1 - r)^t`` times its upper
mass. Float error of the sums (non-negative terms, at most ``n`` additions per atom and ``t`` nested levels) is
below ``t n u`` relative and covered by a factor ``1 +- 1e-9``.
"""

from __future__ import annotations

import functools
import math

import numpy as np

from dpledger.mechanisms.loss_buckets import LossBuckets, normal_cdf_bounds

__all__ = ["GRID_STEP", "MAX_CELLS", "Z_RANGE", "allocation_atoms", "allocation_buckets", "grid_step"]

#: Grid step of the log-space sums (a power of two). Each of the ``~log2(t) + 2`` levels of sums adds at most one
#: step to ``L'``: at ``2^-9`` and ``t = 10`` the upper loss is within about 0.01 of the exact one.
GRID_STEP = 2.0**-9
#: Most grid points of one summand's ``log X``: where ``2 Z_RANGE mu / GRID_STEP`` would exceed it (small noise),
#: the step is the smallest power of two that keeps within it (the sums cost quadratic time in the points).
MAX_CELLS = 8192
#: Standard-normal range resolved by the grid; beyond it the rounding described in the module docstring.
Z_RANGE = 8.5
_FLOAT = 1e-9


def _cells(mu, shift, h, up):
    """``(k0, upper masses, max relative gap, outside mass)`` of ``V = mu Z + shift`` rounded to the grid."""
    k_lo = math.floor((-mu * Z_RANGE + shift) / h)
    k_hi = math.ceil((mu * Z_RANGE + shift) / h)
    k = np.arange(k_lo, k_hi + 1, dtype=np.float64)
    z = (k * h - shift) / mu
    w = 1e-12 * (1.0 + np.abs(z))
    # Phi at the widened edges and, for the upper half, the survival function Phi(-z) (no cancellation in tails)
    cdf_lo, _ = normal_cdf_bounds(z - w, z - w)
    _, cdf_hi = normal_cdf_bounds(z + w, z + w)
    sf_lo, _ = normal_cdf_bounds(-(z + w), -(z + w))  # P(Z > z + w) from below
    _, sf_hi = normal_cdf_bounds(-(z - w), -(z - w))  # P(Z > z - w) from above
    left, right = z[:-1], z[1:]
    lower_half = right <= 0.0
    # cell (z_(k-1), z_k]: upper = Phi(z_k + w) - Phi(z_(k-1) - w) = sf(z_(k-1) - w) - sf(z_k + w)
    cell_up = np.where(lower_half, cdf_hi[1:] - cdf_lo[:-1], sf_hi[:-1] - sf_lo[1:])
    cell_lo = np.where(lower_half, cdf_lo[1:] - cdf_hi[:-1], sf_lo[:-1] - sf_hi[1:])
    cell_up = np.clip(cell_up, 0.0, 1.0)
    cell_lo = np.clip(cell_lo, 0.0, 1.0)
    del left
    if up:  # V in (v_(k-1), v_k] goes to v_k; below the first edge goes to the first point; above the last: inf
        upper = np.concatenate(([cdf_hi[0]], cell_up))
        lower = np.concatenate(([cdf_lo[0]], cell_lo))
        outside = float(sf_hi[-1])  # the infinite atom (upper)
    else:  # V in [v_k, v_(k+1)) goes to v_k; above the last edge goes to the last point; below the first: X = 0
        upper = np.concatenate((cell_up, [sf_hi[-1]]))
        lower = np.concatenate((cell_lo, [sf_lo[-1]]))
        outside = float(cdf_hi[0])  # the zero atom (upper)
    with np.errstate(invalid="ignore", divide="ignore"):
        gap = np.where(upper > 0, (upper - np.minimum(lower, upper)) / upper, 0.0)
    return k_lo, upper, float(gap.max()), float(outside)


def _shifts(n, h, up):
    d = np.arange(n, dtype=np.float64)
    value = np.log1p(np.exp(-d * h)) / h
    if up:
        return np.ceil(value * (1 + 1e-12) + 1e-9).astype(np.int64)
    return np.maximum(np.floor(value * (1 - 1e-12) - 1e-9), 0).astype(np.int64)


def _combine(a, b, h, up):
    """Distribution of the rounded ``log(e^A + e^B)`` of independent ``A``, ``B`` (``(k0, masses, special)``,
    ``special`` the infinite atom (up) or the zero atom (down))."""
    a0, am, asp = a
    b0, bm, bsp = b
    off = min(a0, b0)
    n = max(a0 + am.size, b0 + bm.size) - off
    aa = np.zeros(n)
    aa[a0 - off : a0 - off + am.size] = am
    bb = np.zeros(n)
    bb[b0 - off : b0 - off + bm.size] = bm
    c = _shifts(n, h, up)
    out = np.zeros(n + int(c[0]) + 1)
    out[c[0] : c[0] + n] += aa * bb
    # from d_tail on the shift is constant (c(d) decreases to 1 when rounding up, 0 when down): those pairs are
    # summed at once with prefix sums (non-negative terms, no cancellation): out[i + c] += a_i B(i - d_tail) + ...
    changes = np.flatnonzero(c != c[-1])
    d_tail = max(int(changes[-1]) + 1 if changes.size else 1, 1)
    for d in range(1, d_tail):
        cd = int(c[d])
        out[d + cd : n + cd] += aa[d:] * bb[: n - d] + bb[d:] * aa[: n - d]
    if d_tail < n:
        ct = int(c[-1])
        ca, cb = np.cumsum(aa), np.cumsum(bb)
        out[d_tail + ct : n + ct] += aa[d_tail:] * cb[: n - d_tail] + bb[d_tail:] * ca[: n - d_tail]
    if up:
        special = asp * (bm.sum() + bsp) + am.sum() * bsp
    else:  # a zero summand leaves the other one
        special = asp * bsp
        out[:n] += asp * bb + bsp * aa
    nz = np.flatnonzero(out > 0.0)
    if nz.size == 0:
        return off, np.zeros(1), special
    return off + int(nz[0]), out[nz[0] : nz[-1] + 1], special


def _sum_of(x, count, h, up):
    result, power = None, x
    while count:
        if count & 1:
            result = power if result is None else _combine(result, power, h, up)
        count >>= 1
        if count:
            power = _combine(power, power, h, up)
    return result


def grid_step(mu: float) -> float:
    """The grid step used for ``mu``: :data:`GRID_STEP`, or coarser (a power of two) to keep :data:`MAX_CELLS`."""
    width = 2.0 * Z_RANGE * mu
    return max(GRID_STEP, 2.0 ** math.ceil(math.log2(width / MAX_CELLS)))


@functools.lru_cache(maxsize=16)
def allocation_atoms(mu: float, steps: int, h: float = GRID_STEP) -> dict:
    """Atoms of the rounded ``log S`` for both measures and both roundings (module docstring), cached.

    Returns a dict keyed by ``("P" | "Q", "up" | "down")`` of ``(log_s, upper_masses, lower_factor, special)``:
    ``log_s`` the atoms' ``log S`` (exact grid points), ``upper_masses`` upper bounds on their masses,
    ``lower_factor`` such that ``lower_factor * upper_masses`` are lower bounds, ``special`` an upper bound on the
    infinite (``up``) or zero (``down``) atom's mass.
    """
    t = int(steps)
    out = {}
    for up in (True, False):
        k_x, m_x, r_x, s_x = _cells(mu, -mu * mu / 2.0, h, up)
        k_p, m_p, r_p, s_p = _cells(mu, mu * mu / 2.0, h, up)
        x = (k_x, m_x, s_x)
        rest = _sum_of(x, t - 1, h, up) if t > 1 else None
        for name, last, r_last in (("P", (k_p, m_p, s_p), r_p), ("Q", x, r_x)):
            k0, m, special = last if rest is None else _combine(rest, last, h, up)
            logs = (k0 + np.arange(m.size, dtype=np.float64)) * h
            factor = (1.0 - r_x) ** (t - 1) * (1.0 - r_last) * (1.0 - _FLOAT) / (1.0 + _FLOAT)
            key = (name, "up" if up else "down")
            out[key] = (logs, m * (1.0 + _FLOAT), factor, special * (1.0 + _FLOAT))
    return out


def _bucket_sums(values, masses, edges, side):
    idx = np.searchsorted(edges, values, side=side)
    return np.bincount(idx, weights=masses, minlength=edges.size + 1)


def allocation_buckets(mu: float, steps: int, edges: np.ndarray, remove: bool, h: float | None = None) -> LossBuckets:
    """:class:`mechanisms.loss_buckets.LossBuckets` of random allocation's Gaussian pair (module docstring); the
    grid step ``h`` defaults to :func:`grid_step`."""
    h = grid_step(float(mu)) if h is None else float(h)
    atoms = allocation_atoms(float(mu), int(steps), h)
    log_t = math.log(steps)
    slack = 1e-12
    edges = np.asarray(edges, dtype=np.float64)
    if remove:  # loss log(S_P / t) under P: up-rounded S gives L', down-rounded S gives L''
        s_hi, m_hi, f_hi, inf_atom = atoms["P", "up"]
        s_lo, m_lo, f_lo, zero_atom = atoms["P", "down"]
        hi_loss = s_hi - log_t
        lo_loss = s_lo - log_t
    else:  # loss -log(S_Q / t) under Q: down-rounded S gives L', up-rounded S gives L''
        s_hi, m_hi, f_hi, inf_atom = atoms["Q", "down"]
        s_lo, m_lo, f_lo, zero_atom = atoms["Q", "up"]
        hi_loss = log_t - s_hi
        lo_loss = log_t - s_lo
    hi_loss = hi_loss + slack * (1.0 + np.abs(hi_loss))  # the subtraction of log t, rounded outward
    lo_loss = lo_loss - slack * (1.0 + np.abs(lo_loss))
    p_upper = _bucket_sums(hi_loss, m_hi, edges, "left")
    p_upper[-1] += inf_atom  # the infinite loss (last bucket includes +inf)
    p_lower = _bucket_sums(hi_loss, m_hi * f_hi, edges, "left")
    with np.errstate(over="ignore", under="ignore"):
        e_minus = np.exp(-hi_loss)
    q_upper = _bucket_sums(hi_loss, m_hi * e_minus * (1.0 + 1e-12), edges, "left")
    q_lower = _bucket_sums(hi_loss, m_hi * f_hi * e_minus * (1.0 - 1e-12), edges, "left")
    down = _bucket_sums(lo_loss, m_lo * f_lo, edges, "right")  # L'' = -inf atom (zero_atom) is dropped
    del zero_atom
    return LossBuckets(p_upper, p_lower, q_upper, q_lower, down)
