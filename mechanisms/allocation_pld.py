"""Proven privacy-loss buckets of random allocation with a Gaussian base (one of ``t`` steps per record).

The dominating pair (proved in :mod:`mechanisms.random_allocation`): for removal ``P_t = E_J[N(mu e_J, I_t)]``
against ``Q_t = N(0, I_t)``, whose privacy loss is ``L = log(S / t)`` with ``S = sum_i exp(mu x_i - mu^2 / 2)``.
Under ``P_t``, by symmetry, ``S = X' + X_1 + ... + X_(t-1)`` and under ``Q_t`` ``S = X_1 + ... + X_t``, all
independent, ``X = exp(V)``, ``V = mu Z - mu^2/2``, ``X' = exp(V')``, ``V' = mu Z + mu^2/2``, ``Z ~ N(0, 1)``.
Removal: loss ``L = log(S_P / t)`` under ``P_t``. Addition (the mirrored pair): loss ``-log(S_Q / t)`` under
``Q_t``.

Two discretisations, every step monotone, so the losses are coupled pointwise, ``L'' <= L <= L'``, as
:mod:`mechanisms.loss_buckets` requires: the **linear grid** (the default) and the **log grid** (the fallback where
the linear grid would need more than :data:`MAX_LINEAR_N` points: large ``mu``, many steps).

**Linear grid.** Each summand ``X`` in the bulk (``z(k_lo) < Z <= Z_CUT``, ``k_lo d`` the grid point near
``Z = -Z_LOW``; the bulk starts at ``X = 0`` where ``k_lo = 1``) has the index ``K = ceil(X / d)`` on the grid
``k d`` (``d`` a power of two: ``2^(ceil(log2 min(mu, 1)) - LINEAR_BITS)``, doubled, up to
``2^(ceil(log2 min(mu, 1)) - LINEAR_COARSEST_BITS)``, while the FFT length would exceed :data:`MAX_LINEAR_N`;
:func:`linear_step`), so ``(K - 1) d < X <= K d`` and,
with ``K_S`` the exact integer index sum of the ``t`` summands, ``S'' = (K_S - t) d < S <= S' = K_S d``: one law
(that of ``K_S``) gives both roundings. A path with a summand outside the bulk (``Z <= z(k_lo)`` or
``Z > Z_CUT``; at most ``(t - 1) s_X + s_X'`` of mass, a union bound, ``s`` upper bounds on the two tails) is put at
loss ``+inf`` in the upper measures and dropped from the lower ones. Removal: ``L' = log(S'_P / t)``,
``L'' = log(S''_P / t)``; addition: ``L' = log(t / S''_Q)``, ``L'' = log(t / S'_Q)``.

1. *Cell masses.* The edges ``z_k = (log(k d) -+ mu^2/2) / mu``, clipped to ``Z_CUT``, are within ``w`` of the
   computed ones (:func:`_z_of`); ``Phi`` (left of 0) and ``P(Z > z)`` (right of 0) are enclosed by
   :func:`mechanisms.loss_buckets.normal_cdf_bounds` and widened by ``exp(+-w (|z| + 4))`` (Mills' ratio,
   :func:`_normal_cells`). With upper cell masses the law of the index sum is dominated entrywise by the
   convolution ``U`` of the upper masses (every atom is a sum over paths of products of cell masses); with ``r``
   the largest relative gap between a cell's lower and upper mass the true law is at least ``f U`` entrywise,
   ``f = (1 - r)^t``.
2. *One FFT and a power.* ``U = x^(*(t-1)) * x_last`` (removal: ``x_last`` the pmf of ``X'``; addition: of
   ``X``) is computed cyclically in length ``N`` as ``irfft(rfft(x)^(t-1) rfft(x_last))``, the power by repeated
   squaring, from the pmfs (offset to their first index) folded modulo ``N`` (exact for a cyclic convolution).
3. *FFT error* (:func:`_power_error`), in 2-norm over the full spectrum (the hermitian completion of the half
   spectrum that the real FFT returns; the factor 2 is in ``rho``): each transform is within ``rho ||A||_2 =
   rho sqrt(N) ||a||_2`` (:func:`mechanisms._fft_error.fft_rho`, Higham Thm 24.2); every ``|F_k| <= ||x||_1``,
   so ``|F~^n - F^n| <= n (||x||_1 + e_F)^(n-1) |F~ - F|`` (``a^n - b^n = (a - b) sum a^i b^(n-1-i)``); the
   repeated squaring returns ``F~^n (1 + theta)`` with ``|theta| <= (1 + e)^(n-1) - 1``, ``e = sqrt 2 gamma_2``
   the complex product's error (Higham Lemma 3.5; the error factors' exponents add up to ``n - 1``), and
   ``||F^n||_2 = sqrt(N) ||x^(*n)||_2 <= sqrt(N) ||x||_1^(n-1) ||x||_2`` (Parseval, Young); the product with
   ``rfft(x_last)`` adds the two factors' errors and one more ``e``; the inverse divides the spectrum's error by
   ``sqrt N`` and adds ``rho`` times its output's norm (``||U||_2 <= ||x||_1^n ||x_last||_2``). The imaginary
   parts ``irfft`` drops at 0 and ``N/2`` are exactly 0, so dropping them only lowers the error. That gives
   ``||U~ - U_cyc||_2 <= E_2`` and ``||U~ - U_cyc||_1 <= sqrt(N) E_2 = E_1``. Negative entries are set to 0, which
   moves no entry away from ``U_cyc >= 0``.
4. *Wrap-around*: ``U_cyc`` folds the mass of ``U`` at relative indices ``>= N`` onto lower ones; that mass is at
   most ``W``, for any cut ``T`` the mass of paths with a summand at ``>= T`` (a union bound) plus
   ``min_theta e^(-theta N) m_x(theta)^(t-1) m_last(theta)`` with the moment sums ``m`` of the parts below ``T``
   (Chernoff: Markov's inequality on ``e^(theta index)``), all bounded blockwise from above, minimised over a few
   cuts and ``theta`` (:func:`_wrap_bound`). ``N`` is the smallest power of two with ``W <= WRAP_TARGET`` for the
   widest sum (:func:`linear_step`); each sum's own ``W`` is charged.
5. *Trims*: at most :data:`TRIM` of mass is cut off each end of the computed sum (:func:`_trim`).

Upper measures (removal: ``S'_P``; addition: ``S''_Q``) are the clipped ``U~`` with the trimmed ends moved in the
safe direction (removal: the bottom to the first kept atom, the top to ``+inf``; addition: the top to the last
kept atom, the bottom to loss ``+inf``) and ``E_1 + W`` (plus the paths outside the bulk) at loss ``+inf``: for
every ``l`` its mass at losses ``>= l`` is at least ``U``'s (on any set ``K`` of indices ``sum_K max(U~, 0) >=
sum_K U~ >= sum_K U_cyc - E_1``, and ``U_cyc`` misses at most ``W`` of ``U``'s tail: for addition, where the loss
grows as ``S`` falls, the folded mass only adds to it), hence at least the true loss's. Lower measures (removal:
``S''_P``; addition: ``S'_Q``) are ``f`` times the clipped ``U~``, trimmed ends dropped, less ``E_1 + W`` taken
from the top in loss (:func:`~mechanisms._fft_error.shave_top`): their mass at losses ``>= l`` is at most ``f
U``'s, hence at most the true one's. That order of upper tails is what the privacy buckets need and keep under
composition (:mod:`accountants.privacy_buckets`); their connect-the-dots split uses a measure's own P- and
Q-masses, so the buckets returned are those of these measures (``q = m e^-l`` per atom), sums rounded outward.

The first-order error is the rounding of the summands: ``L' - L <= log(1 + t d / S)``, about ``d / 2`` per epoch
on average at ``S ~ t``; the FFT, wrap and trim terms are below ``1e-9`` per epoch in the benchmarks.

**Log grid.** Each ``V`` is rounded **up** (or **down**) to the grid ``k h``
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

from dpledger.mechanisms._fft_error import fft_rho, norm2_upper, shave_top
from dpledger.mechanisms.loss_buckets import LossBuckets, normal_cdf_bounds

__all__ = [
    "GRID_STEP",
    "MAX_CELLS",
    "Z_CUT",
    "Z_RANGE",
    "allocation_atoms",
    "allocation_buckets",
    "grid_step",
    "linear_atoms",
    "linear_losses",
    "linear_step",
]

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
    # Phi where z <= 0 and the survival function P(Z > z) = Phi(-z) where z >= 0 (each only where it is used)
    split = int(np.searchsorted(z, 0.0, side="right"))  # z[:split] <= 0 < z[split:]
    left, right = slice(0, split), slice(max(split - 1, 0), z.size)
    cdf_lo, cdf_hi, sf_lo, sf_hi = (np.full(z.shape, np.nan) for _ in range(4))
    cdf_lo[left], _ = normal_cdf_bounds(z[left] - w[left], z[left] - w[left])
    _, cdf_hi[left] = normal_cdf_bounds(z[left] + w[left], z[left] + w[left])
    sf_lo[right], _ = normal_cdf_bounds(-(z[right] + w[right]), -(z[right] + w[right]))  # P(Z > z + w), below
    _, sf_hi[right] = normal_cdf_bounds(-(z[right] - w[right]), -(z[right] - w[right]))  # P(Z > z - w), above
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
    """:class:`mechanisms.loss_buckets.LossBuckets` of random allocation's Gaussian pair (module docstring): the
    linear grid where :func:`linear_step` finds one, else the log grid of step :func:`grid_step`; an explicit
    ``h`` asks for the log grid of that step."""
    edges = np.asarray(edges, dtype=np.float64)
    if h is None:
        linear = linear_step(float(mu), int(steps))
        if linear is not None:
            return _linear_buckets(float(mu), int(steps), edges, remove, *linear)
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


# ---------------------------------------------------------------------------------------------------------------
# The linear grid (module docstring, "Linear grid")

#: Standard-normal ends of the linear grid's bulk: a path with a summand at ``Z > Z_CUT`` (or below the grid point
#: near ``Z = -Z_LOW``) is at loss ``+inf`` in the upper measures and dropped from the lower ones.
Z_CUT = 7.0
Z_LOW = 8.5
#: Finest linear step relative to ``min(mu, 1)``: ``d = 2^(ceil(log2 min(mu, 1)) - LINEAR_BITS)``.
LINEAR_BITS = 10
#: Coarsest linear step tried (relative, as above) before falling back to the log grid.
LINEAR_COARSEST_BITS = 6
#: Largest FFT length of the linear grid.
MAX_LINEAR_N = 1 << 22
#: Target for the bound on the mass that wraps around the cyclic convolution (:func:`_wrap_bound`).
WRAP_TARGET = 1e-12
_U = 2.0**-53
_CMUL = math.sqrt(2.0) * 2 * _U / (1 - 2 * _U)  # complex product, Higham Lemma 3.5


def _z_of(x, shift, mu):
    """``(z, w)``: the normal quantile ``z = (log x - shift) / mu`` at which ``V = mu Z + shift`` equals
    ``log x``, and a bound ``w`` on its float error (``log`` within 1 ulp, four further operations within ``u``
    each, ``mu`` and ``shift`` within ``4u`` relative of their exact values; a generous ``32u`` is charged on
    every magnitude involved)."""
    with np.errstate(divide="ignore"):
        lx = np.log(x)
    z = (lx - shift) / mu
    w = 32.0 * _U * (np.abs(z) + (np.abs(np.where(np.isfinite(lx), lx, 0.0)) + abs(shift)) / mu + 1.0)
    return z, w


@functools.lru_cache(maxsize=8)
def _normal_cells(mu, d, last):
    """``(k_lo, cell_up, cell_lo, first, tail)`` for ``X = exp(mu Z + shift)`` (``shift = +mu^2/2`` if ``last``,
    the summand ``X'``, else ``-mu^2/2``): the edges ``z_k`` at which ``X = k d``, ``k = k_lo .. k_hi`` (the
    largest at or beyond :data:`Z_CUT`, clipped to it); ``cell_up`` / ``cell_lo`` the upper / lower masses of the
    cells ``(z_k, z_(k+1)]``, ``first`` those of ``Z <= z_(k_lo)`` and ``tail`` those of ``Z > Z_CUT``.

    Each edge is within ``w`` of its computed value (:func:`_z_of`); ``Phi`` (left of 0) or ``P(Z > z)`` (right
    of 0, no cancellation in the tail) is enclosed at the computed edge by
    :func:`mechanisms.loss_buckets.normal_cdf_bounds` and widened by the factor ``exp(+-w (|z| + 4))``: the log
    derivative ``phi / Phi`` is at most ``|z| + 1/|z|`` (Mills' ratio, ``Phi(-x) >= phi(x) x / (1 + x^2)``)
    for ``|z| >= 1`` and at most ``phi(1) / Phi(-1) < 1.6`` nearer 0 (it decreases in ``z``), so below ``|z| + 4``
    over ``[z - w, z + w]``; ``e^a - 1 <= 1.01 a`` for these tiny ``a`` covers the product's rounding too."""
    shift = (1.0 if last else -1.0) * mu * mu / 2.0
    x_lo = math.exp(-mu * Z_LOW + shift)
    x_hi = math.exp(mu * Z_CUT + shift)
    k_lo = max(int(math.floor(x_lo / d)), 1)
    k_hi = int(math.ceil(x_hi / d)) + 1
    k = np.arange(k_lo, k_hi + 1, dtype=np.float64)
    z, w = _z_of(k * d, shift, mu)
    # the edges are min(z_k, Z_CUT): enclosed by [min(z - w, Z_CUT), min(z + w, Z_CUT)] (min is 1-Lipschitz),
    # the point Z_CUT itself where z - w >= Z_CUT
    w = np.where(z - w >= Z_CUT, 0.0, w)
    z = np.minimum(z, Z_CUT)
    a = 1.01 * w * (np.abs(z) + 4.0)
    split = int(np.searchsorted(z, 0.0, side="right"))  # z[:split] <= 0 < z[split:]
    left, right = slice(0, split), slice(max(split - 1, 0), z.size)
    cdf_lo, cdf_hi, sf_lo, sf_hi = (np.full(z.shape, np.nan) for _ in range(4))
    cdf_lo[left], cdf_hi[left] = normal_cdf_bounds(z[left], z[left])
    sf_lo[right], sf_hi[right] = normal_cdf_bounds(-z[right], -z[right])
    cdf_lo, cdf_hi = cdf_lo * (1.0 - a), np.minimum(cdf_hi * (1.0 + a), 1.0)
    sf_lo, sf_hi = sf_lo * (1.0 - a), np.minimum(sf_hi * (1.0 + a), 1.0)
    lower_half = z[1:] <= 0.0
    beyond = w[:-1] == 0.0  # cells whose both edges are the cut: empty (their mass is the tail's)
    beyond &= z[:-1] >= Z_CUT
    cell_up = np.clip(np.where(lower_half, cdf_hi[1:] - cdf_lo[:-1], sf_hi[:-1] - sf_lo[1:]), 0.0, 1.0)
    cell_lo = np.clip(np.where(lower_half, cdf_lo[1:] - cdf_hi[:-1], sf_lo[:-1] - sf_hi[1:]), 0.0, 1.0)
    cell_up[beyond] = 0.0
    cell_lo[beyond] = 0.0
    first = (float(cdf_lo[0]), float(cdf_hi[0]))
    tail = (float(sf_lo[-1]), float(sf_hi[-1]))  # at z[-1] = Z_CUT (widened by a where w is not 0)
    return k_lo, cell_up, cell_lo, first, tail


def _linear_cells(mu, d, last):
    """``(k0, upper masses, max relative gap, special)`` of the bulk of ``X`` (:func:`_normal_cells`) on the
    linear grid: the cell ``(z_(k-1), z_k]`` (``k > k_lo``, clipped to ``Z_CUT``) at ``k = ceil(X / d)``, masses
    of ``k0, k0 + 1, ...``; ``special`` an upper bound on the rest, ``P(Z <= z_(k_lo)) + P(Z > Z_CUT)``, except
    where ``k_lo = 1``: then ``Z <= z_1`` is the cell ``X in (0, d]`` at ``k = 1``."""
    k_lo, cell_up, cell_lo, first, tail = _normal_cells(mu, d, last)
    upper = cell_up * (1.0 + 4 * _U)  # the clipped subtractions
    lower = cell_lo * (1.0 - 4 * _U)
    special = (first[1] + tail[1]) * (1.0 + 4 * _U)
    start = k_lo + 1
    if k_lo == 1:  # Z <= z_1 is X in (0, d]: K = 1 is a cell like the others (0 <= X / d - (K - 1))
        upper = np.concatenate(([first[1] * (1.0 + 4 * _U)], upper))
        lower = np.concatenate(([first[0] * (1.0 - 4 * _U)], lower))
        special, start = tail[1] * (1.0 + 4 * _U), 1
    nz = np.flatnonzero(upper > 0.0)
    upper, lower = upper[nz[0]: nz[-1] + 1], lower[nz[0]: nz[-1] + 1]
    with np.errstate(invalid="ignore", divide="ignore"):
        gap = np.where(upper > 0, (upper - np.minimum(lower, upper)) / upper, 0.0)
    return start + int(nz[0]), upper, float(gap.max()), special


def _block_sums(values, block, count):
    """Sums of ``values`` over blocks of ``block`` indices (``count`` blocks, zero-padded), rounded up: each is a
    sum of at most ``block <= 2^20`` non-negative terms, within ``block u`` relative."""
    padded = np.zeros(count * block)
    padded[:values.size] = values
    return padded.reshape(count, block).sum(axis=1) * (1.0 + 1e-9)


def _wrap_bound(size, x, n, last):
    """Upper bound on the mass at relative index ``>= size`` of ``x^(*n) * last`` (non-negative measures on
    ``0, 1, ...``). For any cut ``T``: a path of indices summing to ``>= size`` either has a summand at ``>= T``
    (mass at most ``n x[T:] ||x||^(n-1) ||last|| + last[T:] ||x||^n``, 1-norms) or has all summands below ``T``,
    whose mass is at most ``e^(-theta size) m_x(theta)^n m_last(theta)`` for every ``theta >= 0`` (Chernoff:
    Markov's inequality on ``e^(theta index)``; ``m`` the moment sums of the parts below ``T``). Everything is
    bounded on blocks of ``B = size / (64 (n + 1))`` indices: a block's mass counts at its top index in the moment
    sums (``e^(theta j)`` increases) and whole in the tails; cuts at block edges where the tails reach 1e-10 ..
    1e-22 (and no cut), ``theta`` on a grid; the moment sums as running log-sums (each step within a few ``u``,
    covered by ``1e-9`` on the logarithm)."""
    block = max(1, size // (64 * (n + 1)))
    count = -(-max(x.size, last.size) // block)
    bx, bl = _block_sums(x, block, count), _block_sums(last, block, count)
    s_x, s_l = float(bx.sum()) * (1 + 1e-12), float(bl.sum()) * (1 + 1e-12)
    tx = np.concatenate((np.cumsum(bx[::-1])[::-1], [0.0])) * (1 + 1e-12)  # tx[c]: blocks c, c+1, ...
    tl = np.concatenate((np.cumsum(bl[::-1])[::-1], [0.0])) * (1 + 1e-12)
    cuts = {count}
    for level in (1e-10, 1e-12, 1e-14, 1e-16, 1e-18, 1e-22):
        cuts.add(int(np.searchsorted(-tx, -level, side="left")))
        cuts.add(int(np.searchsorted(-tl, -level, side="left")))
    cuts = np.array(sorted(c for c in cuts if 0 < c <= count))
    thetas = np.geomspace(1e-3, 60.0, 96) / size
    top = np.arange(count, dtype=np.float64) * block + (block - 1)
    with np.errstate(divide="ignore"):
        log_x = np.logaddexp.accumulate(np.log(bx)[None, :] + thetas[:, None] * top[None, :], axis=1)
        log_l = np.logaddexp.accumulate(np.log(bl)[None, :] + thetas[:, None] * top[None, :], axis=1)
    chernoff = -thetas[:, None] * size + n * log_x[:, cuts - 1] + log_l[:, cuts - 1] + 1e-9 * (n + 1)
    chernoff = np.exp(np.minimum(chernoff.min(axis=0), 0.0))
    union = (n * tx[cuts] * s_x ** max(n - 1, 0) * s_l + tl[cuts] * s_x**n) * (1 + 1e-12)
    return float(min(1.0, float(np.min(union + chernoff))))


def _fold(values, size):
    """``values`` folded modulo ``size`` (exact for the cyclic convolution: sums of non-negative terms, within
    ``values.size / size`` roundings each, charged below as relative ``1e-12`` on the 1-norm)."""
    pad = (-values.size) % size
    return np.concatenate((values, np.zeros(pad))).reshape(-1, size).sum(axis=0)


def _complex_power(f, n):
    """``f^n`` elementwise by repeated squaring (computed ``f^n (1 + theta)``, ``|theta| <= (1 + e)^(n-1) - 1``,
    ``e`` the complex product's relative error: module docstring)."""
    result, base = None, f
    while True:
        if n & 1:
            result = base if result is None else result * base
        n >>= 1
        if not n:
            return result
        base = base * base


def _power_error(size, n, x, last, same):
    """``E_2``, a bound on ``||c~ - c||_2`` for ``c = x^(*n) * last`` computed as ``irfft(rfft(x)^n rfft(last))``
    in length ``size`` (cyclic; module docstring, "FFT error"). ``same``: ``last`` is ``x`` (one transform)."""
    rho = fft_rho(size)
    root = math.sqrt(size)
    s_x = float(np.sum(x)) * (1 + 1e-12)
    l_x = norm2_upper(x)
    s_g = float(np.sum(last)) * (1 + 1e-12)
    l_g = norm2_upper(last)
    e_f = rho * root * l_x
    e_g = e_f if same else rho * root * l_g
    a1 = n * (s_x + e_f) ** (n - 1) * e_f  # |a^n - b^n| <= n max(|a|, |b|)^(n-1) |a - b|
    theta = math.expm1((n - 1) * math.log1p(_CMUL)) if n > 1 else 0.0
    p_norm = root * s_x ** (n - 1) * l_x  # ||F^n||_2 = sqrt(N) ||x^(*n)||_2 <= sqrt(N) ||x||_1^(n-1) ||x||_2
    e_p = a1 + theta * (p_norm + a1)
    e_c = e_p * (s_g + e_g) + s_x**n * e_g + _CMUL * (s_g + e_g) * (p_norm + e_p)
    c_norm = s_x**n * l_g
    return (e_c / root + rho * (c_norm + e_c / root)) * (1.0 + 1e-9)


@functools.lru_cache(maxsize=8)
def _cached_cells(mu, d, last):
    cells = _linear_cells(mu, d, last)
    cells[1].setflags(write=False)
    return cells


def linear_step(mu: float, steps: int) -> tuple[float, int] | None:
    """``(d, N)``: the linear grid's step and FFT length for ``mu`` and ``steps``, or None where no step between
    ``2^-LINEAR_BITS`` and ``2^-LINEAR_COARSEST_BITS`` (relative to ``min(mu, 1)``, rounded up to a power of
    two) keeps ``N`` within :data:`MAX_LINEAR_N` (the log grid is used there). ``N`` is the smallest power of two
    (at least ``2^10``) at which the Chernoff bound on the wrapped mass of the up-rounded removal sum (the widest)
    is at most :data:`WRAP_TARGET`; a cheap estimate of the sum's width skips the steps that cannot fit. Cached
    (keyed also by the module's constants, which benchmarks set by hand): the wrap bounds of the search are a
    visible part of a first query, and the buckets, the cut and ``log_mgf`` each ask for the step."""
    return _linear_step(float(mu), int(steps), LINEAR_BITS, LINEAR_COARSEST_BITS, MAX_LINEAR_N, WRAP_TARGET)


@functools.lru_cache(maxsize=64)
def _linear_step(mu, steps, linear_bits, coarsest_bits, max_n, wrap_target):
    t = int(steps)
    base = math.ceil(math.log2(min(mu, 1.0)))
    x_lo = math.exp(-mu * Z_LOW - mu * mu / 2.0)
    x_hi = math.exp(mu * Z_CUT + mu * mu / 2.0)  # the largest summand kept
    width = t * (math.exp(mu * mu) - x_lo) + 8.0 * math.sqrt(t * math.expm1(mu * mu)) + x_hi
    for bits in range(linear_bits, coarsest_bits - 1, -1):
        d = 2.0 ** (base - bits)
        if width / d > max_n:
            continue
        _, m_x, _, _ = _cached_cells(mu, d, False)
        _, m_p, _, _ = _cached_cells(mu, d, True)
        size = 1 << max(int(math.ceil(math.log2(width / d))) - 1, 10)
        while size <= max_n and _wrap_bound(size, m_x, t - 1, m_p) > wrap_target:
            size *= 2
        if size <= max_n:
            return d, size
    return None


def _trim(c, limit):
    """``(lo, hi, below, above)``: ``c[:lo]`` and ``c[hi:]`` each hold at most ``limit`` (as computed), and
    ``below`` / ``above`` bound their sums from above (cumulative sums within ``n u`` relative)."""
    slack = 1.0 + 2.0 * (c.size + 2) * _U
    cs = np.cumsum(c)
    lo = int(np.searchsorted(cs, limit, side="right"))
    rs = np.cumsum(c[::-1])
    top = int(np.searchsorted(rs, limit, side="right"))
    lo = min(lo, c.size - 1)
    top = min(top, c.size - 1 - lo)
    below = float(cs[lo - 1]) * slack if lo else 0.0
    above = float(rs[top - 1]) * slack if top else 0.0
    return lo, c.size - top, below, above


#: Mass trimmed off each end of a computed sum (module docstring, "Linear grid").
TRIM = 1e-14


@functools.lru_cache(maxsize=4)
def linear_atoms(mu: float, steps: int, d: float, size: int) -> dict:
    """The index sums of the bulk of ``t`` summands (module docstring, "Linear grid"), cached, keyed by ``"P"``
    (``X' + X_1 + ... + X_(t-1)``) and ``"Q"`` (``X_1 + ... + X_t``); each ``(start, masses, below, above,
    lower_factor, special, error)``: atom ``j`` is the index sum ``start + j`` of the up-rounded summands;
    ``below`` / ``above`` bound the masses trimmed off either end, ``special`` the paths with a summand outside
    the bulk, ``error`` the 1-norm of the FFT's error plus the wrapped mass; ``lower_factor`` times the masses
    (before the error is taken off) is below the true law."""
    t = int(steps)
    if t < 2:
        raise ValueError(f"`steps` of linear_atoms must be at least 2; got {steps}.")
    n = t - 1
    out = {}
    k_x, m_x, r_x, s_x = _cached_cells(mu, d, False)
    k_p, m_p, r_p, s_p = _cached_cells(mu, d, True)
    x = _fold(m_x, size)
    fx = np.fft.rfft(x)
    pow_x = _complex_power(fx, n)
    for name, k_last, m_last, r_last, s_last in (("P", k_p, m_p, r_p, s_p), ("Q", k_x, m_x, r_x, s_x)):
        same = name == "Q"
        g = x if same else _fold(m_last, size)
        c = np.fft.irfft(pow_x * (fx if same else np.fft.rfft(g)), size)
        error = math.sqrt(size) * _power_error(size, n, x, g, same)
        error = (error + _wrap_bound(size, m_x, n, m_last)) * (1.0 + 1e-12)  # 1e-12: the folds' sums
        np.maximum(c, 0.0, out=c)
        lo, hi, below, above = _trim(c, TRIM)
        kept = c[lo:hi]
        kept.setflags(write=False)
        factor = (1.0 - r_x) ** n * (1.0 - r_last) * (1.0 - 1e-9)
        special = min(1.0, (n * s_x + s_last) * (1.0 + 1e-12))
        out[name] = (n * k_x + k_last + lo, kept, below, above, factor, special, error)
    return out


@functools.lru_cache(maxsize=4)
def linear_losses(mu: float, steps: int, remove: bool, d: float, size: int) -> tuple:
    """``(hi_loss, p_masses, q_masses, infinite, lo_loss, lower_masses)`` of one direction from
    :func:`linear_atoms` (module docstring, "Linear grid"), cached: the upper measure's atoms (losses rounded up,
    their P-masses and Q-masses ``m e^-l``, and the mass at ``+inf``) and the lower measure's (losses rounded down,
    masses after the lower factor and the shave). Removal: ``S' = K d`` and ``S'' = (K - t) d`` of the index sum
    ``K`` of ``P``, loss ``log(S / t)``; addition: the same of ``Q``, loss ``log(t / S)``. Read-only arrays."""
    start, kept, below, above, factor, special, error = linear_atoms(float(mu), int(steps), d, size)[
        "P" if remove else "Q"]
    t = int(steps)
    log_t = math.log(t)
    slack = 1e-12
    upper = kept * (1.0 + 4 * _U)  # the additions below
    index = start + np.arange(kept.size, dtype=np.float64)
    with np.errstate(divide="ignore"):  # S'' = 0 (every summand in (0, d]): loss -inf (removal), +inf (addition)
        log_up, log_down = np.log(index * d), np.log((index - t) * d)  # S' and S'' (exact grid points)
    if remove:  # the bottom trim up to the first atom, the top one to +inf
        upper[0] += below * (1.0 + 4 * _U)
        infinite = special + above + error
        hi_loss, lo_loss = log_up - log_t, log_down - log_t
    else:  # the loss grows as S falls: the top trim down to the last atom, the bottom one to +inf
        upper[-1] += above * (1.0 + 4 * _U)
        infinite = special + below + error
        hi_loss, lo_loss = log_t - log_down, log_t - log_up
    hi_loss = hi_loss + slack * (1.0 + np.abs(hi_loss))  # log within 1 ulp, the subtraction within u (+-inf stay)
    lo_loss = lo_loss - slack * (1.0 + np.abs(lo_loss))  # -inf falls in the lowest bucket, which lower ends drop
    with np.errstate(over="ignore", under="ignore"):
        q_hi = upper * np.exp(-hi_loss)  # exp and the product within 3u: covered by the 1e-12 at the sums
    lower = kept * factor
    lower = shave_top(lower, error) if remove else shave_top(lower[::-1], error)[::-1]  # top in loss
    out = (hi_loss, upper, q_hi, infinite, lo_loss, lower)
    for arr in out[:3] + out[4:]:
        arr.setflags(write=False)
    return out


def _linear_buckets(mu, steps, edges, remove, d, size):
    """:class:`LossBuckets` from :func:`linear_losses` (module docstring, "Linear grid")."""
    hi_loss, m_hi, q_hi, infinite, lo_loss, lower = linear_losses(float(mu), int(steps), bool(remove), d, size)
    count = 2.0 * (m_hi.size + lower.size + 2) * _U  # bincount's sums of non-negative terms
    index = np.searchsorted(edges, hi_loss, side="left")
    size_b = edges.size + 1
    p = np.bincount(index, weights=m_hi, minlength=size_b)
    p_upper, p_lower = p * (1.0 + count), p * (1.0 - count)
    p_upper[-1] += infinite * (1.0 + count)
    p_lower[-1] += infinite * (1.0 - count)
    q = np.bincount(index, weights=q_hi, minlength=size_b)
    q_upper, q_lower = q * (1.0 + count + 1e-12), q * (1.0 - count - 1e-12)
    down = _bucket_sums(lo_loss, lower, edges, "right") * (1.0 - count)
    return LossBuckets(p_upper, p_lower, q_upper, q_lower, down)
