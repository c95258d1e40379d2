"""Proven enclosures of the characteristic function of the Poisson-subsampled Laplace mechanism (issue 14 item 1).

With ``t = sensitivity / scale`` (the float at or above it), ``g`` the sampling probability, ``B = Laplace(0, 1)`` and
``A = Laplace(t, 1)``, the base's loss ``log(A / B)(x)`` is ``-t`` for ``x <= 0``, ``2x - t`` on ``(0, t)`` and ``t``
for ``x >= t``. With ``w(y) = 1 - g + g e^y`` and ``F(z) = E_B[(1 - g + g A/B)^z]`` (the remove direction of thesis
Thm 3.3.5 has ``M(s) = F(1 + s)``, the add direction ``M(s) = F(-s)``), substituting ``y = 2x - t`` on ``(0, t)``::

    F(z) = (1/2) w0^z + (e^-t / 2) w1^z + G(z),      w0 = w(-t),  w1 = w(t),
    G(z) = int_(-t)^t phi(y) w(y)^z dy,              phi(y) = e^(-(t + y)/2) / 4.

So each direction's loss has two atoms (:func:`atoms`: ``log w0`` and ``log w1``, mass ``w0 / 2`` and ``e^-t w1 /
2`` in the remove direction; ``-log w0``, ``-log w1`` with masses ``1/2`` and ``e^-t / 2`` in the add direction)
and a continuous part ``G``, whose enclosure :func:`log_g_enclosure` computes for ``z = a + iv``:

**Analyticity.** For ``y = x + i eta`` with ``0 <= |eta| < pi``, ``w = (1 - g) + g e^x e^(i eta)`` lies in the
cone between the directions 0 and ``eta``, so the principal power ``w^z`` is analytic, ``|arg w| <= theta(x,
|eta|) = arg(1 - g + g e^x e^(i |eta|))``, which increases with ``x`` and, for ``|eta| <= pi/2``, with ``|eta|``,
and ``cos(eta/2) w(x) <= |w| <= w(x)`` (both summands project onto the bisector with factor ``cos(eta/2)``). With
``|phi(x + i eta)| = phi(x)``::

    |phi(y) w(y)^z| <= phi(x) w(x)^a cos(eta/2)^min(a, 0) e^(|v| theta(x, |eta|)).        (*)

**Quadrature.** ``[-t, t]`` is cut into zones of length at most 2, each zone into ``2^k`` equal panels of
half-length ``h``, each with the 20-point Gauss-Legendre rule of :mod:`mechanisms.subsampled_gaussian_cf` (nodes
and weights correctly rounded). For an integrand analytic in the Bernstein ellipse ``E_rho`` of a panel and at most
``M`` there the rule's error is at most ``(64/15) h M rho^(-40) / (rho^2 - 1)`` (Trefethen, *Approximation Theory
and Approximation Practice*, Thm 19.3, scaled to the panel); ``M`` is bounded by (*) on the rectangle enclosing the
ellipse (real reach ``h (rho + 1/rho) / 2`` about the centre, imaginary ``eta = h (rho - 1/rho) / 2 <= pi/2``):
``phi`` at its left end, ``w^a`` at the right end (``a >= 0``) or the left end (``a < 0``), ``theta`` at the right
end. Each zone takes the smallest ``k`` whose summed bound (each panel at its best ``rho``) meets its share of
``1e-17`` of ``G(a)`` (relaxed by ``(v_low / 32)^2`` for frequencies ``|v| >= v_low > 32``, as the Gaussian's, whose
module docstring gives the reason); whatever is chosen, the bound used is the one computed. Frequencies are grouped
by octaves (:func:`mechanisms._phase_sums._group_keys`), one layout per group at its largest ``|v|``.

**Tiling.** The panels ``[c_i - h_i, c_i + h_i]`` (float ``c_i``, ``h_i``, exact ends) should tile ``[-t, t]``;
each gap or overlap between neighbours, and between the outer ends and ``+-t``, is at most ``|fl(d)| + 4u (sum of
the magnitudes)`` for the computed difference ``d``, and ``|phi w^a|`` over it is within ``e^(width (1/2 + |a|))``
of its value at the end (``|d log(phi w^a) / dy| <= 1/2 + |a|``: ``0 < r' = g e^y / w < 1``); those masses join the
error (``|e^(i v r)| = 1``).

**Rounding.** As :mod:`mechanisms.subsampled_gaussian_cf`: each term ``c_j e^(i v r_j)`` with ``c_j = h w_j phi(y_j)
w(y_j)^a`` has a relative error bounded from its magnitudes (:func:`_term_errors`); the phase sums and their
rounding are :func:`mechanisms._phase_sums._phase_sums`'s; terms below ``e^-46`` of the largest are left out and
their magnitudes added to the error.

**Decay.** Integrating by parts with ``psi = phi / r'``, ``r' = g e^y / w``::

    G(z) = [psi e^(z r)]_(-t)^t / z - (1/z) int psi' e^(z r) dy,

and ``psi(y) = e^(-t/2) ((1 - g) e^(-3y/2) + g e^(-y/2)) / (4g)`` decreases, so ``|G(a + iv)| <= (psi(t) w1^a +
psi(-t) w0^a + (psi(-t) - psi(t)) max(w0^a, w1^a)) / |z|`` (:func:`log_g_sup`): the continuous part decays like
``1 / |v|``, from a constant of order ``1 / g``; the atoms do not decay at all, which is why ledgers of them without
a Gaussian are split (:mod:`accountants._fourier_atoms`).
"""

from __future__ import annotations

import functools
import math

import numpy as np
from numpy.typing import ArrayLike

from dpledger.mechanisms._phase_fft import _TAYLOR_TARGET
from dpledger.mechanisms._phase_sums import _check_work, _group_keys, log_sum_enclosure
from dpledger.mechanisms.errors import NumericalError
from dpledger.mechanisms.subsampled_gaussian_cf import (
    _LOG_TARGET,
    _N_NODES,
    _RHOS,
    _SHORT_LINE,
    NODE_ERROR,
    WEIGHT_ERROR,
    _log_relaxation,
    _lse,
    _pruned,
    _rule,
    _run_groups,
    _slack,
)

__all__ = ["atoms", "log_f_enclosure", "log_f_real_enclosure", "log_f_sup", "log_g_enclosure", "log_g_sup"]

# The rule, the candidate ellipses, the quadrature target and its relaxation beyond _TARGET_FREQUENCY, the pruning
# and the short lines are the subsampled Gaussian's (imported above).
_U = 2.0**-53
_LOG_2, _LOG_4 = math.log(2.0), math.log(4.0)
#: Most panels of one layout (each of 20 nodes).
_MAX_PANELS = 1 << 16


def _checked(g, t):
    g, t = float(g), float(t)
    if not (0.0 < g < 1.0):
        raise ValueError(f"the sampling probability of the subsampled Laplace enclosure must be in (0, 1); got {g}.")
    if not (0.0 < t < math.inf):
        raise ValueError(f"the loss ratio t of the subsampled Laplace enclosure must be positive and finite; got {t}.")
    return g, t


@functools.lru_cache(maxsize=256)
def atoms(g: float, t: float) -> dict[str, tuple[float, float, float, float]]:
    """``{"remove": (l1, l0, log P1, log P0), "add": (...)}``: the two atoms of each direction's loss (module
    docstring), ``l1 = log(1 - g + g e^t)``, ``l0 = log(1 - g + g e^-t)``; remove masses ``log P1 = l1 - t - log 2``,
    ``log P0 = l0 - log 2``; add losses ``-l1``, ``-l0`` with masses ``-t - log 2``, ``-log 2``. Each value computed
    at 60 significant digits (mpmath) from the floats ``g`` and ``t`` and rounded to nearest: within ``u`` of the
    exact value, relative. (mpmath is imported here, at first use: the core does not load it otherwise.)"""
    import mpmath

    g, t = _checked(g, t)
    with mpmath.workdps(60):
        mg, mt = mpmath.mpf(g), mpmath.mpf(t)
        l1 = mpmath.log(1 - mg + mg * mpmath.exp(mt))
        l0 = mpmath.log(1 - mg + mg * mpmath.exp(-mt))
        log2 = mpmath.log(2)
        remove = tuple(float(x) for x in (l1, l0, l1 - mt - log2, l0 - log2))
        add = tuple(float(x) for x in (-l1, -l0, -mt - log2, -log2))
    return {"remove": remove, "add": add}


def _r(y, g):
    """``r(y) = log(1 - g + g e^y)`` for real ``y``."""
    return np.logaddexp(math.log1p(-g), math.log(g) + y)


def _r_error(y, r, g):
    """Bound on the absolute rounding error of :func:`_r` (the argument of
    :func:`mechanisms.subsampled_gaussian_cf._r_error`: ``r = logaddexp(A, B)``, ``A = log1p(-g)`` within ``2u |A|``,
    ``B = log g + y`` within ``3u (|log g| + |y|)``, the inputs weighted by ``dr/dA``, ``dr/dB``, the difference's
    rounding by the smaller weight, ``log1p(exp(.))`` within ``4u`` of its value and the final sum ``u |r|``)."""
    a_val, log_g = math.log1p(-g), math.log(g)
    b_val = log_g + y
    err_a = 2.0 * _U * abs(a_val)
    err_b = 3.0 * _U * (abs(log_g) + np.abs(y))
    w_a, w_b = np.exp(np.minimum(a_val - r, 0.0)), np.exp(np.minimum(b_val - r, 0.0))
    err_d = np.minimum(w_a, w_b) * _U * np.abs(a_val - b_val)
    tail = np.maximum(r - np.maximum(a_val, b_val), 0.0)
    return (1.0 + 1e-6) * (w_a * err_a + w_b * err_b + err_d + 4.0 * _U * tail + _U * np.abs(r)) + 1e-300


def _theta(x, eta, g):
    """``arg(1 - g + g e^x e^(i eta))`` for real ``x`` and ``0 <= eta <= pi/2`` (scaled so nothing overflows)."""
    lw = math.log(g) + x - math.log1p(-g)  # log(g e^x / (1 - g))
    big = lw > 0
    ratio = np.exp(np.where(big, -lw, lw))
    sin, cos = np.sin(eta), np.cos(eta)
    return np.where(big, np.arctan2(sin, ratio + cos), np.arctan2(ratio * sin, 1.0 + ratio * cos))


def _log_phi(y, t):
    return -0.5 * (t + y) - _LOG_4


@functools.lru_cache(maxsize=1024)
def _log_reference(a, g, t):
    """A rough ``log G(a)`` (only sets the quadrature's targets): a Riemann sum of ``phi w^a`` on 400 points."""
    y = np.linspace(-t, t, 400)
    return float(_lse(_log_phi(y, t) + a * _r(y, g)) + math.log(2.0 * t / 399.0))


def _panel_log_errors(a, v_top, g, t, centres, h):
    """Log of the Gauss-Legendre bound of each panel (centre, half-length ``h``) at its best ``rho`` for ``|v| <=
    v_top`` (module docstring, "Quadrature")."""
    eta = h * (_RHOS - 1.0 / _RHOS) / 2.0
    ok = eta <= np.pi / 2.0
    rho, eta = _RHOS[ok], eta[ok]
    reach = h * (rho + 1.0 / rho) / 2.0
    x_left = centres[:, None] - reach[None, :]
    x_right = centres[:, None] + reach[None, :]
    r_end = _r(x_right if a >= 0 else x_left, g)
    log_m = _log_phi(x_left, t) + a * r_end + min(a, 0.0) * np.log(np.cos(eta / 2.0))[None, :]
    if v_top:
        log_m = log_m + v_top * _theta(x_right, eta[None, :], g)
    log_err = (math.log(64.0 / 15.0) + math.log(h) + log_m
               - (2 * _N_NODES * np.log(rho) + np.log(rho * rho - 1.0))[None, :])
    return log_err.min(axis=1)


@functools.lru_cache(maxsize=256)
def _layout(a, v_top, g, t, v_low=0.0):
    """``(half_lengths, centres, log_quadrature_error)``: each zone of ``[-t, t]`` (at most 2 long) split into the
    fewest ``2^k`` panels whose summed bound meets its share of the target (module docstring, "Quadrature")."""
    zones = max(1, math.ceil(t))
    edges = np.linspace(-t, t, zones + 1)
    edges[0], edges[-1] = -t, t
    log_share = _log_reference(a, g, t) + _LOG_TARGET - math.log(zones) + _log_relaxation(v_low)
    halves, centres, errors = [], [], []
    panels = 0
    for z in range(zones):
        lo, length = float(edges[z]), float(edges[z + 1] - edges[z])
        k = 0
        while True:
            n_sub = 1 << k
            h = length / (2.0 * n_sub)
            mid = lo + h * (2.0 * np.arange(n_sub) + 1.0)
            err = float(_lse(_panel_log_errors(a, v_top, g, t, mid, h)))
            if err <= log_share or panels + n_sub > _MAX_PANELS:
                break
            k += 1
        halves.append(np.full(n_sub, h))
        centres.append(mid)
        errors.append(err)
        panels += n_sub
    halves, centres = np.concatenate(halves), np.concatenate(centres)
    for arr in (halves, centres):
        arr.setflags(write=False)
    return halves, centres, _slack(float(_lse(np.array(errors))))


def _log_tiling_error(a, g, t, h, centres):
    """Log of a bound on what the panels' gaps and overlaps change (module docstring, "Tiling")."""
    ends_lo, ends_hi = centres - h, centres + h
    starts = np.concatenate((ends_lo, [t]))
    stops = np.concatenate(([-t], ends_hi))
    magnitude = np.concatenate((np.abs(centres), [t])) + np.concatenate(([t], np.abs(centres)))
    magnitude = magnitude + np.concatenate((h, [0.0])) + np.concatenate(([0.0], h))
    width = np.abs(starts - stops) + 4.0 * _U * magnitude
    width = width * (1.0 + 4.0 * _U)
    y = np.clip(starts, -t, t)
    log_f = _log_phi(y, t) + a * _r(y, g)
    growth = width * (0.5 + abs(a)) * 1.01
    return float(_lse(np.log(width) + log_f + growth)) + 1e-9


def _nodes(a, g, t, h, centres):
    xi, w = _rule()
    y = (centres[:, None] + h[:, None] * xi[None, :]).ravel()
    log_w = np.log(h[:, None] * w[None, :]).ravel()
    r = _r(y, g)
    log_c = log_w + _log_phi(y, t) + a * r
    return y, r, log_w, log_c


def _term_errors(y, r, h, log_w, log_c, abs_a, peak, v_top, g, t):
    """Relative error of each term ``c_j e^(i v r_j)`` at ``|v| <= v_top``: the weight; the node (moved by ``dy``:
    the rule's error and the rounding of ``centre + h xi``; ``|d log f / dy| <= 1/2 + |z| r'``, ``r' = g e^y / w <=
    1``, at most 1% larger within ``dy``); ``log c = log w - (t + y)/2 - log 4 + a r`` and its exponential after
    subtracting the peak (four roundings of these magnitudes, ``4u`` each); the error of ``r`` times ``|z|``; the
    product ``v r`` (``u |v r|``) and the complex exponential (``2u``)."""
    dy = NODE_ERROR * h + _U * (np.abs(y) + h) * 1.01
    z_abs = abs_a + v_top
    r_slope = np.exp(np.minimum(math.log(g) + y - r, 0.0))
    return (WEIGHT_ERROR + (0.5 + z_abs * r_slope * 1.01) * dy * 1.01
            + 4.0 * _U * (1.0 + 0.5 * (t + np.abs(y)) + _LOG_4 + np.abs(log_w) + abs_a * np.abs(r) + abs(peak)
                          + np.abs(log_c))
            + z_abs * _r_error(y, r, g) + 2.0 * _U * v_top * np.abs(r) + 2.0 * _U)


def _finite_tilt(a):
    a = float(a)
    if not math.isfinite(a):
        raise ValueError(f"the tilt of the subsampled Laplace characteristic function must be finite; got {a}.")
    return a


def _finite_frequencies(v):
    v = np.asarray(v, dtype=np.float64)
    if not np.isfinite(v).all():
        raise ValueError("the frequencies of the subsampled Laplace characteristic function must be finite.")
    return v


def log_g_enclosure(a: float, v: ArrayLike, g: float, t: float) -> tuple[np.ndarray, np.ndarray]:
    """``(log G~, log E)`` at ``z = a + iv`` (``v`` any real array), ``|G(z) - exp(log G~)| <= exp(log E)``, for the
    continuous part ``G(z) = int_(-t)^t e^(-(t + y)/2) / 4 (1 - g + g e^y)^z dy`` (module docstring)."""
    g, t = _checked(g, t)
    a, v = _finite_tilt(a), _finite_frequencies(v)
    if v.size and not v.any():
        value, err = _log_g_real(a, g, t)
        return np.full(v.shape, value, dtype=np.complex128), np.full(v.shape, err)
    return _log_g_enclosure(a, v, g, t)


@functools.lru_cache(maxsize=4096)
def _log_g_real(a, g, t):
    value, err = _log_g_enclosure(a, np.zeros(1), g, t)
    return complex(value[0]), float(err[0])


def _log_g_enclosure(a, v, g, t):
    flat = v.reshape(-1)
    out = np.empty(flat.shape, dtype=np.complex128)
    err = np.empty(flat.shape)
    keys = _group_keys(flat) if flat.size > _SHORT_LINE else np.zeros(flat.size, dtype=np.int64)
    plans, work = [], 0
    for key in np.unique(keys):  # every group's layout and work first: a request beyond the limit fails at once
        sel = np.flatnonzero(keys == key)
        magnitudes = np.abs(flat[sel])
        v_top, v_low = float(magnitudes.max()), float(magnitudes.min())
        h, centres, log_quad = _layout(a, v_top, g, t, v_low)
        if log_quad > _log_reference(a, g, t) + math.log(1e-3):  # the panel limit reached far from the target
            raise NumericalError(
                f"the subsampled Laplace mechanism's characteristic function at tilt {a:.4g} and frequencies up to "
                f"{v_top:.4g} (loss ratio {t:.3g}, sampling probability {g:.3g}) oscillates too fast for "
                f"{_MAX_PANELS} quadrature panels; use RDPAccountant, or a larger rtol.")
        nodes = _nodes(a, g, t, h, centres)
        log_c = nodes[3]
        work = _check_work(flat[sel], int(np.count_nonzero(_pruned(log_c)[1])), v_top, work,
                           name="the subsampled Laplace mechanism's characteristic function")
        plans.append((sel, v_top, v_low, (h, centres, log_quad), nodes))

    def one_group(plan):
        sel, v_top, v_low, (h, centres, log_quad), (y, r, log_w, log_c) = plan
        part = flat[sel]
        peak, keep, dropped = _pruned(log_c)
        y, r, log_w, c = y[keep], r[keep], log_w[keep], np.exp(log_c[keep] - peak)
        hy = np.repeat(h, _N_NODES)[keep]
        eps = _term_errors(y, r, hy, log_w, log_c[keep], abs(a), peak, v_top, g, t)
        taylor_target = _TAYLOR_TARGET * math.exp(_log_relaxation(v_low))
        out[sel], log_err = log_sum_enclosure(part, r, c, eps, peak, taylor_target,
                                              [log_quad, dropped, _log_tiling_error(a, g, t, h, centres)])
        err[sel] = _slack(float(log_err))

    _run_groups(one_group, plans, flat.size)
    if not (np.isfinite(err).all() and np.isfinite(out.real[out.real != -np.inf]).all()):
        raise NumericalError(
            f"the subsampled Laplace mechanism's characteristic function at tilt {a:.4g} (loss ratio {t:.3g}, "
            f"sampling probability {g:.3g}) is beyond float64; use RDPAccountant.")
    return out.reshape(v.shape), err.reshape(v.shape)


def _atom_terms(a, v, g, t):
    """``(log terms, relative errors)`` of the two atoms ``(1/2) w0^z`` and ``(e^-t / 2) w1^z`` of ``F`` at ``z = a +
    iv`` (arrays of shape ``(2,) + v.shape``): the exponent's error is ``|z|`` times that of ``l0`` or ``l1`` (``u``
    relative, :func:`atoms`) plus the roundings of its products and sum (``4u`` of the magnitudes); the complex
    exponential adds ``2u``."""
    l1, l0 = atoms(g, t)["remove"][:2]
    z = a + 1j * v
    modulus = np.abs(z)
    log_terms = np.stack([-_LOG_2 + z * l0, -t - _LOG_2 + z * l1])
    rel = np.stack([modulus * abs(l0) * 1.01 * _U + 4.0 * _U * (_LOG_2 + (np.abs(a) + np.abs(v)) * abs(l0)),
                    modulus * abs(l1) * 1.01 * _U + 4.0 * _U * (t + _LOG_2 + (np.abs(a) + np.abs(v)) * abs(l1))])
    return log_terms, rel + 2.0 * _U


def log_f_enclosure(a: float, v: ArrayLike, g: float, t: float) -> tuple[np.ndarray, np.ndarray]:
    """``(log F~, log E)`` of the whole ``F(a + iv)`` (module docstring): the two atoms in closed form and
    :func:`log_g_enclosure`, combined by :func:`_with_atoms`."""
    g, t = _checked(g, t)
    a, v = _finite_tilt(a), _finite_frequencies(v)
    log_g, log_g_err = log_g_enclosure(a, v, g, t)
    return _with_atoms(np.full(v.shape, a), v, log_g, log_g_err, g, t)


def _with_atoms(a, v, log_g, log_g_err, g, t):
    """``F = atoms + G`` from ``G``'s enclosure, elementwise over ``a + iv``: the terms summed after scaling by the
    largest real part (the sum's rounding, ``3u`` of the terms' magnitudes, and each part's error added, the log's
    own rounding and the final sum raised by ``1e-12`` relative and absolute)."""
    log_atoms, rel = _atom_terms(a, v, g, t)
    top = np.maximum(np.max(log_atoms.real, axis=0), log_g.real)
    with np.errstate(under="ignore"):
        atom_values = np.exp(log_atoms - top[None])
        g_value = np.exp(log_g - top)
        total = atom_values.sum(axis=0) + g_value
        magnitude = np.abs(atom_values).sum(axis=0) + np.abs(g_value)
        error = (np.sum(np.abs(atom_values) * np.expm1(rel) * 1.01, axis=0) + np.exp(log_g_err - top)
                 + 3.0 * _U * magnitude)
    value = np.log(total) + top
    log_err = np.log(error * (1.0 + 1e-12)) + top
    return value, log_err + 1e-12 * (np.abs(log_err) + 1.0)


def log_f_real_enclosure(a: ArrayLike, g: float, t: float) -> tuple[np.ndarray, np.ndarray]:
    """:func:`log_f_enclosure` at many real ``a`` (``v = 0``): each ``G(a)`` from its cached layout, the atoms and
    the sums at once."""
    g, t = _checked(g, t)
    a = np.asarray(a, dtype=np.float64).reshape(-1)
    pairs = [_log_g_real(float(x), g, t) for x in a]
    log_g = np.array([p[0] for p in pairs], dtype=np.complex128)
    log_g_err = np.array([p[1] for p in pairs])
    value, log_err = _with_atoms(a, np.zeros(a.shape), log_g, log_g_err, g, t)
    return value.astype(np.complex128), log_err


#: Pieces of ``[-t, t]`` over which the decay bound spreads ``psi``'s variation (:func:`log_g_sup`).
_SUP_PIECES = 64


def _sup_v_min(v_min):
    """``v_min`` of a decay bound as a float ``>= 0`` (a negative one asks for every ``v``: 0); ValueError for NaN."""
    v_min = float(v_min)
    if math.isnan(v_min):
        raise ValueError("`v_min` of the subsampled Laplace decay bound must be a number; got nan.")
    return max(v_min, 0.0)


def log_g_sup(a: float, v_min: float, g: float, t: float, a_error: float = 0.0) -> float:
    """A proven bound on ``sup_{|v| >= v_min} log |G(a' + iv)|`` for every ``a'`` within ``a_error`` of the float
    ``a`` (a negative ``v_min`` counts as 0): the smaller of an upper bound on ``log G(a')`` (``log G`` is convex on
    the real line: its larger value at the two floats just outside ``[a - a_error, a + a_error]``) and the decay
    bound of the module docstring, ``(psi(t) w1^a' + psi(-t) w0^a' + int |psi'| w^a') / |z|``, with
    ``|z| >= hypot(|a| - a_error, v_min)``.

    ``psi`` decreases, so over pieces ``[y_k, y_(k+1)]`` of ``[-t, t]`` (:data:`_SUP_PIECES` of them) ``int |psi'|
    w^a' <= sum_k (psi(y_k) - psi(y_(k+1))) max w^a'``, each maximum at a corner of (the piece's ends) x (``a'``'s
    interval), ``r`` there raised or lowered by its rounding bound; each difference from ``psi = e^(-t/2) ((1 - g)
    e^(-3y/2) + g e^(-y/2)) / (4g)`` as ``(1 - g) e^(-3y_k/2) (1 - e^(-3D/2)) + g e^(-y_k/2) (1 - e^(-D/2))`` (positive
    terms; ``D`` the piece's length rounded up). Boundary terms: ``log psi(t) = -2t - log 4g + log w1``, ``log psi(-t)
    = t - log 4g + log w0``, powers at the end of ``a'``'s interval where they are largest (``w1 > 1 > w0``). Formed in
    logs and raised by :func:`mechanisms.subsampled_gaussian_cf._slack`. (The whole variation times the largest power
    was e^4.7 above the largest ``|G|`` at a = 6, g = 0.2, t = 2.)"""
    g, t = _checked(g, t)
    a, v_min, a_error = float(a), _sup_v_min(v_min), abs(float(a_error))
    if not math.isfinite(a) or not math.isfinite(a_error):
        raise ValueError(f"the tilt of the subsampled Laplace decay bound must be finite; got {a} +- {a_error}.")
    if a_error:
        ends = (float(np.nextafter(a - a_error, -np.inf)), float(np.nextafter(a + a_error, np.inf)))
    else:
        ends = (a, a)
    whole = max(_slack(float(np.logaddexp(value.real, err))) for value, err in (_log_g_real(x, g, t) for x in ends))
    modulus = math.hypot(max(abs(a) - a_error, 0.0) * (1.0 - 4.0 * _U), v_min * (1.0 - 4.0 * _U))
    if modulus == 0.0:
        return whole
    l1, l0 = atoms(g, t)["remove"][:2]
    log_4g = math.log(4.0 * g)
    boundary = [-2.0 * t + l1 - log_4g + ends[1] * l1, t + l0 - log_4g + ends[0] * l0]
    y = np.linspace(-t, t, _SUP_PIECES + 1)
    y[0], y[-1] = -t, t
    d = np.diff(y) * (1.0 + 4.0 * _U)  # each piece's length, rounded up
    with np.errstate(divide="ignore"):
        log_dpsi = -0.5 * t - log_4g + np.logaddexp(math.log1p(-g) - 1.5 * y[:-1] + np.log(-np.expm1(-1.5 * d)),
                                                     math.log(g) - 0.5 * y[:-1] + np.log(-np.expm1(-0.5 * d)))
    r = _r(y, g)
    r_err = _r_error(y, r, g)
    corners = np.stack([x * rr for x in ends for rr in (r[:-1] - r_err[:-1], r[:-1] + r_err[:-1],
                                                         r[1:] - r_err[1:], r[1:] + r_err[1:])])
    variation = log_dpsi + corners.max(axis=0)
    magnitude = (abs(a) + a_error + 1.0) * (abs(l0) + abs(l1) + 2.0 * t + abs(log_4g) + 1.0)
    decay = _slack(float(_lse(np.concatenate((boundary, variation)))) - math.log(modulus) + 1e-12 * magnitude)
    return min(whole, decay)


def log_f_sup(a: float, v_min: float, g: float, t: float) -> float:
    """A proven bound on ``sup_{|v| >= v_min} log |F(a + iv)|``: the atoms' ``(1/2) w0^a + (e^-t / 2) w1^a`` (their
    moduli do not depend on ``v``) plus :func:`log_g_sup`."""
    g, t = _checked(g, t)
    a = _finite_tilt(a)
    l1, l0 = atoms(g, t)["remove"][:2]
    log_atoms = float(np.logaddexp(-_LOG_2 + a * l0, -t - _LOG_2 + a * l1))
    log_atoms = _slack(log_atoms + 8.0 * _U * (abs(a) * (abs(l0) + abs(l1)) + t + 1.0))
    return _slack(float(np.logaddexp(log_atoms, log_g_sup(a, v_min, g, t))))


def continuous_profile(c: ArrayLike, g: float, t: float, direction: str) -> tuple[np.ndarray, np.ndarray]:
    """``(k~, relative error bound)`` of the continuous part's profile ``k(c) = int (1 - e^(c - L))_+ dC(L)`` at the
    floats ``c`` (``direction`` ``"remove"`` or ``"add"``), in closed form; non-increasing in ``c``.

    Remove (``C`` has density ``phi(y) w(y)`` at loss ``r(y)``): zero for ``c >= l1``; ``(1 - e^-t)(1 - e^c) / 2`` for
    ``c <= l0`` (``C``'s mass is ``(1 - e^-t) / 2`` under both distributions); between, with ``w(y_c) = e^c``,
    ``int_(y_c)^t phi (w - w(y_c)) dy = (g/2) (1 - e^(-D/2))^2``, ``D = t - y_c`` (substitute ``y = y_c + s``: the
    integrand is ``(g/4) e^((y_c - t)/2) (e^(s/2) - e^(-s/2))``). ``D`` is formed without cancellation at either
    end: ``D = -log1p(-xi)``, ``xi = e^(l1 - t - log g) (-expm1(c - l1))``, while ``xi <= 1/2``, else ``D = 2t - E``,
    ``E = log1p(eta)``, ``eta = e^(l0 + t - log g) expm1(c - l0)`` (``e^c - 1 + g = g e^-t + e^l0 expm1(c - l0)``).

    Add (density ``phi(y)`` at loss ``-r(y)``): zero for ``c >= -l0``; ``(1 - e^-t)(1 - e^c) / 2`` for ``c <= -l1``;
    between, with ``w(y_d) = e^-c`` and ``E' = y_d + t``, ``int_(-t)^(y_d) phi (1 - e^c w) dy = (1 - (1 - g) e^c) (1
    - e^(-E'/2))^2 / 2``, ``E' = log1p(eta')``, ``eta' = e^(l0 + t - log g) expm1(-c - l0)``.

    Errors (relative, from the magnitudes; ``l0``, ``l1`` within ``u``): each ``expm1(x)`` of a rounded ``x``
    within ``2u`` plus ``e^x / |expm1(x)|`` times the argument's absolute error; the factors ``e^(l1 - t - log g)``
    and ``e^(l0 + t - log g)`` joined to it in logs (``4u`` of the magnitudes; ``e^(l0 + t)`` overflows beyond
    ``t ~ 709``); each ``log1p(p)`` within ``2u``
    plus ``|p / (1 + p)|`` times ``p``'s relative error (absolute, then over the value); then through ``f = -expm1(-D
    / 2)`` by its slope and squared. Where a bound is not finite the value is still returned, with an infinite
    error (none arises for ``c`` strictly inside the branches)."""
    g, t = _checked(g, t)
    if direction not in ("remove", "add"):
        raise ValueError(f"`direction` of continuous_profile must be 'remove' or 'add'; got {direction!r}.")
    c = np.asarray(c, dtype=np.float64)
    l1, l0 = atoms(g, t)["remove"][:2]
    log_g = math.log(g)
    lower_value = 0.5 * -math.expm1(-t) * -np.expm1(np.minimum(c, 0.0))
    lower_rel = np.full(c.shape, 8.0 * _U)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        if direction == "remove":
            top, bottom = l1, l0
            # near the top: D from xi
            x1 = np.minimum(c - l1, 0.0)
            e1 = -np.expm1(x1)
            xi = np.exp((l1 - t - log_g) + np.log(e1))  # in logs: the factor e^(l1 - t - log g) may overflow
            rel_xi = (4.0 * _U * (abs(l1) + t + abs(log_g) + np.abs(np.log(e1)) + 2.0)
                      + (_U * (np.abs(c) + abs(l1)) * 2.02) * _expm1_slope(x1) + 4.0 * _U)
            d_top = -np.log1p(-xi)
            abs_d_top = xi / (1.0 - xi) * rel_xi * 1.01 + 2.0 * _U * d_top
            # near the bottom: D = 2t - E
            x0 = np.maximum(c - l0, 0.0)
            log_eta = (l0 + t - log_g) + np.log(np.expm1(x0))  # e^(l0 + t) overflows for t beyond ~709
            eta = np.exp(np.minimum(log_eta, 700.0))
            rel_eta = (4.0 * _U * (abs(l0) + t + abs(log_g) + np.abs(log_eta) + 2.0)
                       + (_U * (np.abs(c) + abs(l0)) * 2.02) * _expm1_slope(x0) + 4.0 * _U)
            e_low = np.logaddexp(0.0, log_eta)  # log1p(eta)
            abs_e = eta / (1.0 + eta) * rel_eta * 1.01 + 2.0 * _U * e_low
            use_top = xi <= 0.5
            half = np.where(use_top, -d_top / 2.0, e_low / 2.0 - t)  # -D/2
            abs_half = np.where(use_top, abs_d_top / 2.0, abs_e / 2.0 + _U * (np.abs(e_low / 2.0 - t) + t))
            f = -np.expm1(half)
            rel_f = abs_half * _expm1_slope(half) * 1.01 + 2.0 * _U
            middle = 0.5 * g * f * f
            middle_rel = 2.0 * rel_f + 4.0 * _U
        else:
            top, bottom = -l0, -l1
            x = np.maximum(-c - l0, 0.0)
            log_eta = (l0 + t - log_g) + np.log(np.expm1(x))
            eta = np.exp(np.minimum(log_eta, 700.0))
            rel_eta = (4.0 * _U * (abs(l0) + t + abs(log_g) + np.abs(log_eta) + 2.0)
                       + (_U * (np.abs(c) + abs(l0)) * 2.02) * _expm1_slope(x) + 4.0 * _U)
            e_prime = np.logaddexp(0.0, log_eta)  # log1p(eta)
            abs_e = eta / (1.0 + eta) * rel_eta * 1.01 + 2.0 * _U * e_prime
            half = -e_prime / 2.0
            f = -np.expm1(half)
            rel_f = (abs_e / 2.0) * _expm1_slope(half) * 1.01 + 2.0 * _U
            log_keep = math.log1p(-g)
            xp = np.minimum(c + log_keep, 0.0)
            pre = -np.expm1(xp)
            rel_pre = (_U * (np.abs(c) + abs(log_keep)) * 1.01 + 2.0 * _U * abs(log_keep)) * _expm1_slope(xp) + 2.0 * _U
            middle = 0.5 * pre * f * f
            middle_rel = rel_pre + 2.0 * rel_f + 4.0 * _U
    value = np.where(c >= top, 0.0, np.where(c <= bottom, lower_value, middle))
    rel = np.where(c >= top, 0.0, np.where(c <= bottom, lower_rel, middle_rel))
    # The branch ends are floats within u of the exact ones: within d = 4u (|end| + |c|) of an end the branch may be
    # the wrong one. k does not increase, so k(c) <= k(c - 2d), which lies in the branch below for sure; and k(c) >=
    # 0 near the top, k(c) >= the lower formula at c near the bottom (that formula adds a negative part). Such an
    # entry is returned as the midpoint of [lower, upper] with the relative half-width as its error.
    near = 4.0 * _U * (np.abs(c) + np.where(np.abs(c - top) <= np.abs(c - bottom), abs(top), abs(bottom)))
    band_top = np.abs(c - top) <= near
    band_bottom = (np.abs(c - bottom) <= near) & ~band_top
    band = band_top | band_bottom
    if band.any():
        v_shift, r_shift = continuous_profile(c[band] - 2.02 * near[band], g, t, direction)
        upper = v_shift * (1.0 + r_shift)
        lower = np.where(band_top[band], 0.0, np.maximum(lower_value[band] * (1.0 - lower_rel[band]), 0.0))
        value[band] = 0.5 * (upper + lower) * (1.0 + 2.0 * _U)
        with np.errstate(divide="ignore", invalid="ignore"):
            rel[band] = np.where(upper > 0.0, (upper - lower) / (upper + lower) * (1.0 + 4.0 * _U) + 4.0 * _U, 0.0)
    rel = np.where(np.isfinite(rel), rel, np.inf)
    return value, rel


def _expm1_slope(x):
    """``e^x / |expm1(x)|``: how an absolute error of ``x`` moves ``expm1(x)`` relatively (``inf`` at 0)."""
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        return np.exp(x) / np.abs(np.expm1(x))
