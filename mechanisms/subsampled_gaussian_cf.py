"""Proven enclosures of the characteristic function of the Poisson-subsampled Gaussian (issue 14 item 1).

With ``mu = 1 / noise_multiplier``, ``g`` the sampling probability, ``X ~ N(0, 1)`` (density ``phi``) and::

    B(x) = 1 - g + g w(x),   w(x) = exp(mu x - mu^2 / 2),   r(x) = log B(x),   F(z) = E[B(X)^z],

the remove direction of thesis Thm 3.3.5 has ``M(s) = F(1 + s)`` and the add direction ``M(s) = F(-s)``
(:mod:`mechanisms.privacy_loss`). This module computes, for ``z = a + iv``, a value ``F~`` and a bound ``E`` with
``|F(z) - F~| <= E`` (:func:`log_f_enclosure`; bounds on ``sup_{|v| >= V} |F(a + iv)|`` are in
:mod:`mechanisms.subsampled_gaussian_decay`, the phase sums and their work limit in :mod:`mechanisms._phase_sums`).
``a`` is the float it is given: the privacy loss's ``M(s)`` sits at ``1 + s`` or ``-s``, and
:func:`mechanisms.subsampled.tilted_enclosure` bounds what rounding ``1 + s`` costs (:mod:`mechanisms._tilts`).
Every step is bounded:

**Analyticity.** ``f(x) = phi(x) B(x)^z`` (principal power) is analytic where ``B`` stays off ``(-inf, 0]``; for
``x + iy`` with ``0 <= mu |y| < pi``, ``B = (1 - g) + g w(x) e^(i mu y)`` lies in the cone between the directions
0 and ``mu y``, so ``|arg B| = theta(x, |y|) <= mu |y|``, where ``theta(x, y) = arg(1 - g + g w(x) e^(i mu y))``
increases with ``x`` (``d arg(c + t e^(i p)) / dt = c sin p / |.|^2 > 0``) and, for ``mu y <= pi / 2``, with
``y``. On the same set ``cos(mu y / 2) B(x) <= |B| <= B(x)`` (both summands project onto the bisector with
factor ``>= cos(mu y / 2)``) and ``|phi(x + iy)| = phi(x) e^(y^2 / 2)``. Hence::

    |f(x + iy)| <= phi(x) e^(y^2/2) B(x)^a cos(mu y/2)^min(a, 0) e^(|v| theta(x, |y|)).        (*)

**Quadrature.** ``[X_lo, X_hi]`` is cut into zones of length about 2, each zone into ``2^k`` equal panels of
half-length ``l`` (``k`` per zone), each panel with the 20-point Gauss-Legendre rule. For ``f`` analytic in the
Bernstein ellipse ``E_rho`` of a panel with ``|f| <= M`` there,
the rule's error is at most ``(64/15) l M rho^(-2n) / (rho^2 - 1)`` (Trefethen, *Approximation Theory and
Approximation Practice*, Thm 19.3, scaled to a panel). ``M`` is bounded by (*) on the rectangle enclosing the
ellipse (real extent ``l (rho + 1/rho) / 2`` about the centre, imaginary ``y = l (rho - 1/rho) / 2``): ``phi`` at
the point nearest 0, ``B^a`` at the right end (``a >= 0``) or left end (``a < 0``), ``theta`` at the right end.
The bound grows with ``|v|``, so one panel layout, chosen for the largest ``|v|`` of a group of frequencies (pairs
of octaves of ``|v|``, :data:`_GROUP_OCTAVES`; a short line of at most ``_SHORT_LINE`` frequencies, such as a
Fourier inversion's contour nodes, is one group: one layout instead of one per octave), serves the whole group. Each
zone takes the smallest ``k`` that makes its summed bound (each panel at its best ``rho`` of a candidate set) at
most its share of ~1e-17 of ``F(a)``, so panels are short only where the integrand is both large and oscillating;
whatever is chosen, the bound used is the one computed. A group whose smallest ``|v|`` is ``v_lo > V0`` (``V0 =
_TARGET_FREQUENCY``, 32) aims at ``(v_lo / V0)^2`` times that, and so does its phase sums' Taylor remainder (1e-16
of the terms' sum, :mod:`mechanisms._phase_fft`): the Fourier inversion (:mod:`accountants.fourier_inversion`)
weighs an error at ``s = kappa + iv`` by ``1 / |s (1 + s)| <= 1 / v^2``, so such a node adds to delta no more than a
node at ``|v| = V0`` aiming at 1.1e-16 of ``F(a)``, and all of at most ``2^20`` nodes together add at most ``2^20 /
V0^2 x 1.1e-16 = 1.1e-13`` of ``F(a)`` in those weights, a few times what the terms' rounding adds at a single low
frequency. The top octave of few runs of a small sampling probability then needs about half the panels (sigma 0.6, q
1e-4: 12,568 panels instead of 21,018 up to ``|v| = 1.4e5``) and 12 Taylor powers instead of 17.

**Tails.** Outside ``[X_lo, X_hi]`` (``X_lo <= 0``; ``|f| = phi B^a`` on the real line):
``int_{-inf}^{X_lo} phi B^a <= B(X_lo)^a Phi(X_lo)`` for ``a >= 0`` (``B`` increases) and ``(1 - g)^a Phi(X_lo)``
for ``a < 0`` (``B >= 1 - g``); ``int_{X_hi}^inf phi B^a <= B(X_hi)^a e^(-a mu X_hi + a^2 mu^2 / 2)
Phi(-(X_hi - a mu))`` for ``a >= 0`` (``B(x) <= B(X_hi) e^(mu (x - X_hi))``) and ``B(X_hi)^a Phi(-X_hi)`` for ``a < 0``.
Nodes whose terms are below ``e^-46`` of the largest are left out and their (computed) magnitudes added to the
error: ``|e^(i v r)| = 1``, so they bound the omitted part at every ``v``.

**Rounding.** Each term ``c_j e^(i v r_j)`` is computed with a relative error ``eps_j(v)`` bounded from the
magnitudes it is made of (the rule's nodes and weights, correctly rounded from 40-digit values; the rounding of
``log phi``, ``r``, ``a r`` and ``v r``, generously ``32 u`` per magnitude); the terms are summed in matrix products
of at most 256 of them and the partial sums added in turn, which adds at most ``2 (256 + N / 256 + 2) u sum
|terms|`` (the bound of a dot product of that length, Higham, *Accuracy and Stability*, Lemma 3.5 and eq. 3.4,
once per level).

**Cut.** With a finite ``cut = c`` every function here encloses the body ``F_b(z) = int_(-inf)^c phi(x) B(x)^z dx``
instead (``c = inf``: ``F`` itself, by the very same code path; :mod:`mechanisms.subsampled_body` states what the
body is). Enclosure: the same proof on ``[X_lo, X_hi]`` with ``X_hi`` lowered to ``min(X_hi, c)`` (and ``X_lo`` to
``min(X_lo, c - width)``): the rough size that sets the targets, the zones, the pruning and the work check all use
that range; the left tail is as above; the right tail is dropped when ``X_hi = c`` (the body has no mass beyond
``c``) and kept when ``X_hi < c`` (``int_(X_hi)^c <= int_(X_hi)^inf``). So the range stops growing with the tilt
at the cut: at ``a = 1 + 1e4`` it is ``[-14, c]``. The body's decay bound is in
:mod:`mechanisms.subsampled_gaussian_decay`; the tail's mass ``p = int_c^inf phi B`` has the closed form of
:func:`mechanisms.subsampled_body.log_tail_mass`.

**Soft split.** Where the sampling probability is small, most of the mass sits where ``r' = mu g w / B`` is tiny:
the transform barely decays (``|F(a + iv)| / F(a)`` is still ``e^-1.2`` at ``v = 10^5`` for sigma 0.6, q 1e-4), so a
Fourier inversion needs ~10^5 frequencies, while the part above, where the integrand oscillates fastest, is what
costs quadrature panels there. A group of frequencies ``v_low <= |v| <= v_top`` with ``v_low >=
_SOFT_MIN_FREQUENCY`` may therefore split the integrand with the entire weight ``chi(x) = Phi((x - c) / w)``: ``F =
N + W``, ``N`` the integral of ``phi (1 - chi) B^z = phi Phi((c - x) / w) B^z`` and ``W`` of ``phi chi B^z``
(each over ``x <= cut``). ``N`` is enclosed by the proof above with the weight in every term and bound: on the
ellipse's rectangle ``|Phi((c - x - iy) / w)| <= e^(y^2 / (2 w^2)) Phi((c - x_left) / w)`` (for any complex ``u +
it``, ``Phi(u + it) = int_(-inf)^0 phi(u + it + tau) d tau`` and ``|phi(u + tau + it)| = phi(u + tau) e^(t^2/2)``);
its range ends at ``c + 9 w`` (:func:`_soft_end`), beyond which the weighted integrand is bounded as a tail
(:func:`_log_soft_tail`). ``W`` is not computed: its modulus is bounded for every ``|v| >= v_low`` by shifting the
contour (:func:`mechanisms.subsampled_gaussian_decay.log_soft_upper_sup`), where ``chi`` removes the slowly
decaying bulk. At a finite cut ``W`` keeps the body's jump, ``|f(cut)| / (|v| r'(cut))``, which decays like
``1 / |v|``: its leading part ``J(z) = f(cut) / (-cut + z r'(cut))`` (:func:`_jump_term`, with its rounding) is
added to the sums and only the rest is bounded (:mod:`mechanisms.subsampled_gaussian_decay`, "Jump at the cut",
for ``|v| <= v_top``). The centre ``c`` is the lowest on a grid whose bound meets the group's target
(:func:`_soft_split`); whatever is chosen, the bound charged is the one computed. On the contour of sigma 0.6, q
1e-4, 10 runs, the top octave then needs 172 panels instead of 12,568.
"""

from __future__ import annotations

import functools
import math

import numpy as np
from numpy.typing import ArrayLike
from scipy import special

from dpledger.mechanisms import _logmath, _validate
from dpledger.mechanisms._phase_fft import _TAYLOR_TARGET
from dpledger.mechanisms._phase_sums import _check_work, _group_keys, log_sum_enclosure
from dpledger.mechanisms._threads import run_in_parallel
from dpledger.mechanisms.errors import NumericalError

__all__ = ["log_f_enclosure", "log_f_real_enclosure", "log_f_upper"]

_U = 2.0**-53
_N_NODES = 20
#: Nodes whose terms fall below exp(-_PRUNE) of the largest are left out (their magnitudes join the error).
_PRUNE = 46.0
#: Target of the quadrature error relative to F(a) (only a target: the bound used is the one computed).
_LOG_TARGET = np.log(1e-17)
#: Beyond this frequency a group's target grows like the square of its smallest ``|v|`` (module docstring).
_TARGET_FREQUENCY = 32.0
_LOG_SQRT_2PI = 0.5 * np.log(2.0 * np.pi)
_RHOS = np.array([1.05, 1.1, 1.2, 1.35, 1.5, 1.75, 2.0, 2.5, 3.0, 4.0, 6.0, 10.0])
_MIN_HALF_LENGTH = 1e-6
#: The rule's float64 nodes (absolute, on [-1, 1]) and weights (relative) are within these of the exact ones
#: (each is the exact value rounded to nearest, :func:`_rule`; checked against mpmath by the tests).
NODE_ERROR, WEIGHT_ERROR = 2.0**-53, 2.0**-52
#: Width of the gap or overlap between neighbouring panels, per unit of ``|x| + 6`` (see _panel_log_errors).
_GAP = 8.0 * 2.0**-53
_MAX_NODES = 1 << 21


#: The 20-point Gauss-Legendre rule, each node and weight the exact value correctly rounded to float64 (computed
#: by Newton on ``P_n`` at 40 digits, ``P_n' = n (x P_n - P_(n-1)) / (x^2 - 1)``, weights
#: ``2 / ((1 - x^2) P_n'(x)^2)``; tests/mechanisms/test_subsampled_gaussian_cf.py recomputes them in mpmath).
#: numpy's own leggauss weights are off by up to 7e-14 relative, so they are not used.
_GL_NODES = (
    float.fromhex('-0x1.fc7b5a0c71ce0p-1'),
    float.fromhex('-0x1.ed8dba7bd769fp-1'),
    float.fromhex('-0x1.d31064173fd92p-1'),
    float.fromhex('-0x1.ada0bd5efd6e7p-1'),
    float.fromhex('-0x1.7e1f37346a54ep-1'),
    float.fromhex('-0x1.45a8d3fa710dbp-1'),
    float.fromhex('-0x1.05905c13f7ff7p-1'),
    float.fromhex('-0x1.7eaccf15652c4p-2'),
    float.fromhex('-0x1.d281636928bc0p-3'),
    float.fromhex('-0x1.3973df98b86b0p-4'),
    float.fromhex('0x1.3973df98b86b0p-4'),
    float.fromhex('0x1.d281636928bc0p-3'),
    float.fromhex('0x1.7eaccf15652c4p-2'),
    float.fromhex('0x1.05905c13f7ff7p-1'),
    float.fromhex('0x1.45a8d3fa710dbp-1'),
    float.fromhex('0x1.7e1f37346a54ep-1'),
    float.fromhex('0x1.ada0bd5efd6e7p-1'),
    float.fromhex('0x1.d31064173fd92p-1'),
    float.fromhex('0x1.ed8dba7bd769fp-1'),
    float.fromhex('0x1.fc7b5a0c71ce0p-1'),
)
_GL_WEIGHTS = (
    float.fromhex('0x1.209680274e8afp-6'),
    float.fromhex('0x1.4c9b5ea53b67fp-5'),
    float.fromhex('0x1.00b467df7e475p-4'),
    float.fromhex('0x1.5519fe196e24ap-4'),
    float.fromhex('0x1.a1817a317a821p-4'),
    float.fromhex('0x1.e41ff31573b48p-4'),
    float.fromhex('0x1.0db2c5db26dffp-3'),
    float.fromhex('0x1.230348f34a535p-3'),
    float.fromhex('0x1.31819b52c5992p-3'),
    float.fromhex('0x1.38d6c490a3370p-3'),
    float.fromhex('0x1.38d6c490a3370p-3'),
    float.fromhex('0x1.31819b52c5992p-3'),
    float.fromhex('0x1.230348f34a535p-3'),
    float.fromhex('0x1.0db2c5db26dffp-3'),
    float.fromhex('0x1.e41ff31573b48p-4'),
    float.fromhex('0x1.a1817a317a821p-4'),
    float.fromhex('0x1.5519fe196e24ap-4'),
    float.fromhex('0x1.00b467df7e475p-4'),
    float.fromhex('0x1.4c9b5ea53b67fp-5'),
    float.fromhex('0x1.209680274e8afp-6'),
)


@functools.lru_cache(maxsize=1)
def _rule():
    """The 20-point Gauss-Legendre rule as read-only arrays (:data:`_GL_NODES`, :data:`_GL_WEIGHTS`)."""
    nodes, weights = np.array(_GL_NODES), np.array(_GL_WEIGHTS)
    nodes.setflags(write=False)
    weights.setflags(write=False)
    return nodes, weights


def _lse(x, axis=None):
    """``log sum exp`` (scipy's is slow on small arrays); an all ``-inf`` slice gives ``-inf``. Only bounds' sizes
    go through it, each then given slack (:func:`_slack`)."""
    x = np.asarray(x, dtype=np.float64)
    top = x.max(axis=axis, keepdims=True)
    top = np.where(np.isfinite(top), top, 0.0)
    total = np.exp(x - top).sum(axis=axis, keepdims=True)
    # log 0 = -inf without the divide warning (an errstate block costs more than the rest on small arrays); a NaN
    # stays NaN
    out = np.full(total.shape, -np.inf)
    np.log(total, out=out, where=~(total <= 0.0))
    out += top
    return out.squeeze() if axis is None else np.squeeze(out, axis=axis)


def _pruned(log_c):
    """``(peak, keep, log of the dropped mass)``: the terms kept are those within ``e^_PRUNE`` of the largest; the
    magnitudes of the others join the error (``|e^(i v r)| = 1``: they bound the omitted part at every ``v``)."""
    peak = float(log_c.max())
    keep = log_c >= peak - _PRUNE
    return peak, keep, (_lse(log_c[~keep]) if (~keep).any() else -np.inf)


def _r(x, g, mu):
    """``r(x) = log(1 - g + g e^(mu x - mu^2/2))`` for real ``x``."""
    return np.logaddexp(np.log1p(-g), np.log(g) + mu * x - 0.5 * mu * mu)


def _r_error(x, r, g, mu):
    """Bound on the absolute rounding error of :func:`_r`.

    ``r = logaddexp(A, B)`` with ``A = log1p(-g)`` (error ``<= 2u |A|``) and ``B = log g + mu x - mu^2/2`` (``<= 3u``
    times the sum of magnitudes), computed as ``m + log1p(exp(-d))``, ``m = max(A, B)``, ``d = |A - B|``: the
    input errors enter weighted by ``dr/dA = e^(A - r)`` and ``dr/dB = e^(B - r)``, the rounding of ``d`` by
    ``e^(-d) / (1 + e^(-d)) <= e^(min(A, B) - r)``, ``log1p(exp(.))`` adds at most ``4u`` of its value ``r - m``,
    and the final sum ``u |r|``.
    """
    a_val = np.log1p(-g)
    b_val = np.log(g) + mu * x - 0.5 * mu * mu
    err_a = 2.0 * _U * abs(a_val)
    err_b = 3.0 * _U * (abs(np.log(g)) + np.abs(mu * x) + 0.5 * mu * mu)
    w_a, w_b = np.exp(np.minimum(a_val - r, 0.0)), np.exp(np.minimum(b_val - r, 0.0))
    err_d = np.minimum(w_a, w_b) * _U * np.abs(a_val - b_val)
    tail = np.maximum(r - np.maximum(a_val, b_val), 0.0)
    return (1.0 + 1e-6) * (w_a * err_a + w_b * err_b + err_d + 4.0 * _U * tail + _U * np.abs(r)) + 1e-300


def _theta(x, y, g, mu):
    """``arg(1 - g + g w(x) e^(i mu y))`` for real ``x`` and ``0 <= mu y < pi`` (scaled so nothing overflows)."""
    lw = np.log(g) + mu * x - 0.5 * mu * mu - np.log1p(-g)  # log(g w / (1 - g))
    big = lw > 0
    t = np.exp(np.where(big, -lw, lw))
    sin, cos = np.sin(mu * y), np.cos(mu * y)
    return np.where(big, np.arctan2(sin, t + cos), np.arctan2(t * sin, 1.0 + t * cos))


def _log_phi_max(lo, hi):
    """``log max phi`` over ``[lo, hi]``."""
    nearest = np.where((lo <= 0) & (hi >= 0), 0.0, np.minimum(np.abs(lo), np.abs(hi)))
    return -0.5 * nearest * nearest - _LOG_SQRT_2PI


def _left_reach(a, g):
    """For ``a < 0``: a point ``x0 <= 0`` left of which ``phi B^a`` integrates to at most ``e^-60``, so the range need
    not reach ``a mu`` (where ``B^a`` would stop growing only for ``g`` near 1): there ``B^a <= (1 - g)^a``, so
    ``int_-inf^x0 phi B^a <= (1 - g)^a Phi(x0) <= e^(|a| |log(1 - g)| - x0^2 / 2) <= e^-60`` at ``x0 = -sqrt(2 (60
    + |a| |log(1 - g)|))`` (Mills: ``Phi(x0) <= e^(-x0^2 / 2)``), against ``F(a) >= 1`` (Jensen: ``t^a`` is convex
    and ``E[B(X)] = 1``). Only the range moves: the left-tail bound of :func:`_log_tails` holds at any ``X_lo`` and
    is carried as before. The add direction's transform (``a = -s``) then costs about the same at any tilt. The point
    carries its own margin (``e^-60``, far below the quadrature's target of ~1e-17), so the range starts there, not a
    ``width`` further out."""
    return -np.sqrt(2.0 * (60.0 + abs(a) * -np.log1p(-g)))


def _range(a, g, mu, width, cut):
    """``[X_lo, X_hi]`` for tilt ``a``, cut at ``cut`` (module docstring, "Cut"); for ``a < 0`` the left end is
    ``a mu - width`` or :func:`_left_reach`, whichever is larger."""
    if a >= 0:
        lo, hi = -width, a * mu + width
    else:
        lo, hi = max(a * mu - width, float(_left_reach(a, g))), width
    return min(lo, cut - width), min(hi, cut)


def _checked_cut(cut):
    """``cut`` as a float: a real number or ``+inf`` (the whole law)."""
    cut = _validate.real(cut, "cut", "the subsampled Gaussian's characteristic function", allow_inf=True)
    if cut == -math.inf:
        raise ValueError("`cut` of the subsampled Gaussian's characteristic function must be a real number or "
                         "+inf; got -inf.")
    return cut


def _log_tails(a, g, mu, lo, hi, cut=math.inf):
    """Log of the bounds on ``int phi B^a`` left of ``lo`` and right of ``hi`` (module docstring), one tilt."""
    left, right = _log_tails_many(np.array([float(a)]), g, mu, lo, hi, cut)
    return float(left[0]), float(right[0])


def _slack(value):
    """A log-quantity made larger by its own rounding (computed bounds are themselves floats): a relative and an
    absolute slack of 1e-12, far above the few roundings of the log-sum-exp that produced it."""
    return float(_logmath.widen_up(value, 1e-12, 1e-12))


@functools.lru_cache(maxsize=1024)
def _reference(a, g, mu, width, cut=math.inf):
    """``(lo, hi, log F(a) estimate)``: the integration range (cut at ``cut``) and a rough size of the integral
    over it, ``F_b(a)`` (only used to set targets)."""
    lo, hi = _range(a, g, mu, width, cut)
    if (hi - lo) / 2.0 * _N_NODES > _MAX_NODES:
        raise NumericalError(
            f"the subsampled Gaussian's characteristic function at tilt {a:.4g} spans {hi - lo:.3g} standard "
            f"deviations of the noise (noise multiplier {1.0 / mu:.3g}): too little noise for the "
            "characteristic-function accountant; use RDPAccountant."
        )
    x = np.linspace(lo, hi, int(min(max((hi - lo) * 50.0, 200.0), 1e6)))
    log_f = -0.5 * x * x - _LOG_SQRT_2PI + a * _r(x, g, mu)
    return lo, hi, float(_lse(log_f) + np.log(x[1] - x[0]))


def _panel_log_errors(a, v_top, g, mu, centres, h, soft=None):
    """``(log error bound, log gap mass)`` of each panel for one tilt (:func:`_panel_log_errors_many`)."""
    log_err, log_sup = _panel_log_errors_many(np.array([float(a)]), g, mu, centres, h, v_top, soft)
    return log_err[:, 0], log_sup[:, 0]


def _log_relaxation(v_low):
    """``log`` of the factor ``(max(v_low, V0) / V0)^2`` by which a group of frequencies ``|v| >= v_low`` relaxes
    its quadrature and Taylor targets (module docstring)."""
    return 2.0 * math.log(max(float(v_low), _TARGET_FREQUENCY) / _TARGET_FREQUENCY)


def _layout(a, v_top, g, mu, width, cut=math.inf, v_low=0.0, start=None, soft=None):
    """``(half_lengths, centres, log_quadrature_error, log_sum_of_panel_sups, levels)`` of the panel layout for
    ``v_low <= |v| <= v_top``.

    ``[X_lo, X_hi]`` is cut into zones of length about 2; each zone is split into ``2^k`` equal panels with the
    smallest ``k`` whose summed error bound meets its share of the target (so panels are short only where the
    integrand is both large and oscillating), the target raised by ``(v_low / V0)^2`` beyond ``V0`` (module
    docstring). The search for ``k`` starts at ``start`` (one level per zone, e.g. the layout of the octave above
    less one: :func:`_log_f_enclosure`; 0 where not given) and goes down while the level below still meets the
    target, up while it does not (the bound falls as panels shorten, so it ends where searching from 0 would).
    Whatever is chosen, the bound returned is the one computed; ``levels`` are the ``k`` chosen. With a soft split
    ``soft = (c, w)`` (module docstring, "Soft split") the layout is the lower part's: its range ends at
    :func:`_soft_end` and each panel's bound carries the weight."""
    lo, hi, log_ref = _reference(a, g, mu, width, cut)
    if soft is not None:
        hi = min(hi, _soft_end(soft))
    zones = int(np.ceil((hi - lo) / 2.0))
    if start is not None and np.size(start) != zones:  # another range: the search starts from 0
        start = None
    edges = np.linspace(lo, hi, zones + 1)
    zone_len = edges[1] - edges[0]
    log_share = log_ref + _LOG_TARGET - np.log(zones) + _log_relaxation(v_low)
    level = np.zeros(zones, dtype=np.int64) if start is None else np.maximum(np.asarray(start, dtype=np.int64), 0)
    failed = np.full(zones, -1)  # the highest level known to miss the target
    chosen = [None] * zones  # (level, centres, zone error, zone sup) of the lowest level known to meet it
    todo = np.arange(zones)
    while todo.size:
        # the panels of the zones settled plus those of the levels being tried (a zone still searching down counts
        # once, at its trial level)
        settled = sum(c[1].size for z, c in enumerate(chosen) if c is not None and level[z] < 0)
        budget = (settled + int(np.sum(1 << level[todo]))) * _N_NODES > _MAX_NODES
        for k in np.unique(level[todo]):
            at = todo[level[todo] == k]
            n_sub = 1 << int(k)
            h = zone_len / (2.0 * n_sub)
            mid = edges[at][:, None] + h * (2.0 * np.arange(n_sub) + 1.0)[None, :]
            log_err, log_sup = _panel_log_errors(a, v_top, g, mu, mid.ravel(), h, soft)
            zone_err = _lse(log_err.reshape(mid.shape), axis=1)
            zone_sup = _lse(log_sup.reshape(mid.shape), axis=1)
            last = h <= _MIN_HALF_LENGTH or budget  # a zone that misses is then kept as it is
            for i, z in enumerate(at):
                if zone_err[i] <= log_share:
                    chosen[z] = (int(k), mid[i], zone_err[i], zone_sup[i])
                    level[z] = k - 1 if (k > 0 and failed[z] < k - 1) else -1
                elif chosen[z] is not None and chosen[z][0] == k + 1:
                    level[z] = -1  # the level above meets it: that one stays
                elif last:
                    chosen[z], level[z] = (int(k), mid[i], zone_err[i], zone_sup[i]), -1
                else:
                    failed[z], level[z] = k, k + 1
        todo = np.flatnonzero(level >= 0)
    levels = np.array([c[0] for c in chosen])
    centres = np.concatenate([c[1] for c in chosen])
    halves = np.concatenate([np.full(c[1].size, zone_len / (2.0 * c[1].size)) for c in chosen])
    errors, sups = [c[2] for c in chosen], [c[3] for c in chosen]
    return halves, centres, _slack(float(_lse(errors))), _slack(float(_lse(sups))), levels


def _nodes(a, g, mu, h, centres, soft=None):
    """``(x, r, log weight, log |term|)`` of the quadrature nodes; with a soft split the terms carry the lower part's
    weight ``Phi((c - x) / w)`` (as computed: its error is charged by :func:`_term_errors`)."""
    xi, w = _rule()
    x = (centres[:, None] + h[:, None] * xi[None, :]).ravel()
    log_w = np.log(h[:, None] * w[None, :]).ravel()
    r = _r(x, g, mu)
    log_c = log_w - 0.5 * x * x - _LOG_SQRT_2PI + a * r
    if soft is not None:
        log_c = log_c + special.log_ndtr((soft[0] - x) / soft[1])
    return x, r, log_w, log_c


def _log_weight_upper(x, centre, softness, sign):
    """An upper bound on ``log Phi(t)``, ``t = sign (x - centre) / softness`` (``sign`` +1: a soft split's upper
    weight, -1: its lower one), at each float ``x``: ``log_ndtr`` (within ``8u (1 + |log Phi|)`` of the exact value,
    checked against mpmath by the tests; ``32u`` charged) at the computed argument, plus what its two roundings can
    move it: ``2u |t| 1.01`` times the slope ``phi / Phi <= max(-t, 0) + 1`` (Birnbaum's bound on the inverse
    Mills ratio)."""
    t = sign * (x - centre) / softness
    value = special.log_ndtr(t)
    return value + 32.0 * _U * (1.0 + np.abs(value)) + (np.maximum(-t, 0.0) + 1.0) * 2.02 * _U * np.abs(t)


#: A soft split's width ``w`` (module docstring, "Soft split").
_SOFTNESS = 0.25
#: The lower part's range ends this many widths above the split's centre (its weight there is ``Phi(-9)``, 1e-19;
#: the rest of it is bounded as a tail).
_SOFT_REACH = 9.0
#: Groups of frequencies with ``|v|`` below this are never split (the upper part's bound falls only at high
#: frequencies; a split's search costs a few bounds).
_SOFT_MIN_FREQUENCY = 256.0
#: Candidate centres of a split are this far apart.
_SOFT_STEP = 0.25


def _soft_end(soft):
    """Right end of a soft split's lower part's range (module docstring, "Soft split")."""
    return soft[0] + _SOFT_REACH * soft[1]


def _jump_term(a, v, g, mu, cut):
    """``(log J, log E)`` at each frequency ``v`` (complex ``log J``): the jump term ``J(z) = f(cut) / D``, ``f = phi
    B^z``, ``D = -cut + z r'(cut)``, ``z = a + iv`` (:mod:`mechanisms.subsampled_gaussian_decay`, "Jump at the
    cut"), and a bound ``E`` on ``|J - exp(log J)|``.

    Relative errors: ``log |f(cut)| = -cut^2/2 - log sqrt(2 pi) + a r`` (``4u`` of the magnitudes, ``|a|`` times
    :func:`_r_error`, ``2u |a r|``); the phase ``v r`` (``|v|`` times the error of ``r``, ``u |v r|``); ``r' = mu
    e^(log(g w) - r)`` (``8u`` of its exponent's magnitudes and the error of ``r``, then ``2u``), which moves ``D``
    by ``|z| r' (that + u)`` and its sum by ``2u (|cut| + |a| r')``, relative to ``|D| >= |v| r'``; the complex
    exponential and division (``8u``); all doubled."""
    r_cut = float(_r(cut, g, mu))
    r_err = float(_r_error(cut, r_cut, g, mu))
    log_gw = math.log(g) + mu * cut - 0.5 * mu * mu
    slope = mu * math.exp(log_gw - r_cut)
    z_abs = np.hypot(a, v)
    denominator = (-cut + a * slope) + 1j * (v * slope)
    log_size = -0.5 * cut * cut - _LOG_SQRT_2PI + a * r_cut
    log_j = log_size + 1j * (v * r_cut) - np.log(denominator)
    slope_error = 8.0 * _U * (abs(math.log(g)) + abs(mu * cut) + 0.5 * mu * mu + abs(r_cut) + 2.0) + r_err + 2.0 * _U
    relative = 2.0 * (4.0 * _U * (0.5 * cut * cut + 1.0) + abs(a) * r_err + 2.0 * _U * abs(a * r_cut)
                      + np.abs(v) * r_err + _U * np.abs(v * r_cut)
                      + (z_abs * slope * (slope_error + _U) + 2.0 * _U * (abs(cut) + abs(a) * slope))
                      / (np.abs(v) * slope) + 8.0 * _U)
    log_error = log_j.real + np.log(np.expm1(relative) * 1.01 + 1e-300)
    return log_j, log_error


def _log_soft_tail(a, g, mu, lo, soft, cut):
    """Log of a bound on ``int_end^cut phi(x) Phi((c - x) / w) B(x)^a dx``, the lower part's integrand beyond its
    range's end ``end = c + 9 w < cut`` (``soft = (c, w)``), the smallest of three:

    * ``log Phi`` is concave with slope ``phi / Phi >= |t|`` at ``t = (c - end) / w < 0`` (Mills), so for ``x >=
      end`` the weight is at most ``Phi(t) e^(-k (x - end) / w)``, ``k = |t|``; and ``B(x)^a <= B(end)^a e^(a mu (x -
      end))`` (``a >= 0``; ``B(end)^a`` for ``a < 0``). So, where ``rate = k / w - max(a, 0) mu > 0``, the integral is
      at most ``phi(max(end, 0)) B(end)^a Phi(t) / rate``;
    * the right tail of :func:`_log_tails` from ``end`` times ``Phi(t)``;
    * for a finite cut, the length times ``phi``'s largest value and ``B^a``'s (at the cut for ``a >= 0``, else at
      ``end``) times ``Phi(t)``."""
    c, w = soft
    end = _soft_end(soft)
    log_weight = float(_log_weight_upper(np.array([end]), c, w, -1.0)[0])
    k = (end - c) / w * (1.0 - 1e-12)
    candidates = [_log_tails(a, g, mu, lo, end, cut)[1]]
    rate = k / w - max(a, 0.0) * mu
    if rate > 0.0:
        candidates.append(float(_log_phi_max(np.array([end]), np.array([math.inf]))[0]) + a * float(_r(end, g, mu))
                          - math.log(rate))
    if cut < math.inf:
        candidates.append(math.log(cut - end) + float(_log_phi_max(np.array([end]), np.array([cut]))[0])
                          + a * float(_r(cut if a >= 0 else end, g, mu)))
    return _slack(min(candidates) + log_weight)


def _soft_split(a, v_low, v_top, g, mu, width, cut, log_share, near=None):
    """``((c, w), log bound on |W|, log bound on the lower part's tail)`` of a soft split with a low centre ``c`` on a
    grid of step :data:`_SOFT_STEP` whose upper part's bound (:func:`mechanisms.subsampled_gaussian_decay.
    log_soft_upper_sup`, for ``v_low <= |v| <= v_top``, less the jump term at a finite cut) and lower part's tail
    beyond its range (:func:`_log_soft_tail`) are at most ``log_share``; None where no centre low enough to shorten
    the range does (every centre tried lies at least ``9 w`` plus a step below the range's end, so the lower part's
    range always ends before it). The bound falls as ``c`` rises: the first group of a line bisects for the lowest
    centre; a later one (``near``: the centre of the split of the group above) tries two steps above ``near`` and
    walks up from there until the share is met. Only the work depends on the choice: whichever split is taken, its
    bounds are charged."""
    from dpledger.mechanisms.subsampled_gaussian_decay import log_soft_upper_sup

    lo, hi, _ = _reference(a, g, mu, width, cut)
    top = hi - _SOFT_REACH * _SOFTNESS - _SOFT_STEP  # a centre above this saves less than a step of range
    first = max(lo + width / 2.0, -2.0)
    count = int(math.floor((top - first) / _SOFT_STEP)) + 1
    if count <= 0:
        return None

    def meets(i):
        centre = first + i * _SOFT_STEP
        bound = log_soft_upper_sup(a, v_low, g, mu, centre, _SOFTNESS, cut=cut, width=width,
                                   v_max=v_top if cut < math.inf else None)
        tail = _log_soft_tail(a, g, mu, lo, (centre, _SOFTNESS), cut)
        return max(bound, tail) <= log_share, (bound, tail)

    if near is None:  # the first group: bisection between the top (which must meet the share) and the bottom
        ok, bounds = meets(count - 1)
        if not ok:
            return None
        low, high = -1, count - 1
        while high - low > 1:
            mid = (low + high) // 2
            ok, mid_bounds = meets(mid)
            low, high, bounds = (low, mid, mid_bounds) if ok else (mid, high, bounds)
        return ((first + high * _SOFT_STEP, _SOFTNESS),) + bounds
    # an octave below the last split: its best lies about two steps higher; taken if it meets the share (a step
    # lower would save a quarter of a width of range, less than the bound's cost), else searched upwards
    i = min(max(int(round((near - first) / _SOFT_STEP)) + 2, 0), count - 1)
    ok, bounds = meets(i)
    if ok:
        return ((first + i * _SOFT_STEP, _SOFTNESS),) + bounds
    while i < count - 1:
        i += 1
        ok, bounds = meets(i)
        if ok:
            return ((first + i * _SOFT_STEP, _SOFTNESS),) + bounds
    return None


#: Lines of at most this many frequencies share one layout (the one for their largest ``|v|``).
_SHORT_LINE = 256
#: Octaves of ``|v|`` per group of a longer line (:func:`mechanisms._phase_sums._group_keys`): each group costs a
#: layout and a soft split's search (1.5-3 ms) and sums its frequencies on the layout of its largest, relaxed by
#: its smallest (module docstring). Two: sigma 0.6, q 1e-4 x 10^6 took 55 ms at 69eb0aa (one octave) and 31 ms at
#: 562816c, its slowest cell of issue 14's grid (``python -m benchmarks.bench_fourier_grid``, benchmarks/RESULTS.md).
#: Three octaves were worse (not kept): sigma 0.6, q 1e-4 x 10^4 went from tens of milliseconds to over half a
#: second, its errors (at the terms' rounding floor, which grows with the layout's nodes) 1.5x larger, past what its
#: plan allowed, and its search doubled the nodes.
_GROUP_OCTAVES = 2


def log_f_enclosure(
    a: float, v: ArrayLike, g: float, mu: float, width: float = 14.0, *, cut: float = math.inf
) -> tuple[np.ndarray, np.ndarray]:
    """``(log F~, log E)`` at ``z = a + i v`` (``v`` any real array): ``|F(z) - exp(log F~)| <= exp(log E)``.

    ``F(z) = E[(1 - g + g e^(mu X - mu^2/2))^z]``, ``X ~ N(0, 1)``; proof of the bound in the module docstring.
    With a finite ``cut``, the same for the body ``F_b(z) = E[B(X)^z; X <= cut]`` (module docstring, "Cut");
    ``cut = inf`` is ``F`` itself.
    """
    a, g, mu, cut = float(a), float(g), float(mu), _checked_cut(cut)
    v = np.asarray(v, dtype=np.float64)
    if v.size and not v.any():  # the real axis (Chernoff bounds, dampings): the same values again and again
        value, err = _log_f_real(a, g, mu, float(width), cut)
        return np.full(v.shape, value, dtype=np.complex128), np.full(v.shape, err)
    return _log_f_enclosure(a, v, g, mu, width, cut)


@functools.lru_cache(maxsize=4096)
def _log_f_real(a, g, mu, width, cut=math.inf):
    value, err = _log_f_enclosure(a, np.zeros(1), g, mu, width, cut)
    return complex(value[0]), float(err[0])


def _term_errors(x, r, h, log_w, log_c, abs_a, peak, v_top, g, mu, soft=None):
    """Relative error of each term ``c_j e^(i v r_j)`` at ``|v| <= v_top`` (``abs_a``, ``peak`` and ``log_c`` may
    carry a leading axis of tilts): the weight; the node (moved by ``dx``: the rule's error and the rounding of
    ``centre + h xi``; ``|d log f / dx| <= |x| + |z| r'(x)``, ``r' = mu g w / B``, at most 1% larger within
    ``dx``); ``log c = log w - x^2/2 - log sqrt(2 pi) + a r`` and its exponential after subtracting the peak (four
    roundings of these magnitudes, 4u each); the error of ``r`` times ``|z|``; the product ``v r`` (``u |v r|``)
    and the complex exponential (2u). With a soft split, the weight ``log Phi(t)``, ``t = (c - x) / w``: its slope
    ``phi / Phi <= max(-t, 0) + 1`` (Birnbaum's bound on the inverse Mills ratio) over ``w`` joins the node's,
    the argument's two roundings move it by that slope times ``2u |t|``, ``log_ndtr`` itself is within ``8u (1 +
    |log Phi|)`` (checked against mpmath by the tests; ``32u`` charged), and its magnitude joins the sums'."""
    dx = NODE_ERROR * h + _U * (np.abs(x) + h) * 1.01
    z_abs = abs_a + v_top
    r_slope = mu * np.exp(np.minimum(np.log(g) + mu * x - 0.5 * mu * mu - r, 0.0))  # r' = mu g w / B
    weight = 0.0
    if soft is not None:
        t = (soft[0] - x) / soft[1]
        log_weight = special.log_ndtr(t)
        slope = np.maximum(-t, 0.0) + 1.0
        weight = (slope / soft[1] * dx * 1.01 + slope * 2.02 * _U * np.abs(t)
                  + 36.0 * _U * (1.0 + np.abs(log_weight)))
    return weight + (WEIGHT_ERROR + (np.abs(x) + 1e-3 + z_abs * r_slope * 1.01) * dx * 1.01
            + 4.0 * _U * (1.0 + 0.5 * x * x + np.abs(log_w) + abs_a * np.abs(r) + np.abs(peak) + np.abs(log_c))
            + z_abs * _r_error(x, r, g, mu) + 2.0 * _U * v_top * np.abs(r) + 2.0 * _U)


#: Lines of at least this many frequencies spread their groups over two threads (numpy's FFT, ufuncs and
#: reductions release the GIL; each group writes its own entries, so the result is the serial one bit for bit).
#: Since the soft split, the groups of shorter lines are too light for the threads to pay (sigma 0.6, q 1e-3, 10
#: runs, 32,769 nodes: 55 ms on two threads, 51 on one).
_THREADED_LINE = 1 << 17


def _run_groups(work, plans, size):
    """``work(plan)`` for every group: on two threads for long lines (largest groups first), else in turn."""
    if size < _THREADED_LINE or len(plans) < 2:
        for plan in plans:
            work(plan)
        return
    order = sorted(plans, key=lambda plan: -plan[0].size * plan[4][0].size)
    run_in_parallel([functools.partial(work, plan) for plan in order])


def _log_f_enclosure(a, v, g, mu, width, cut=math.inf):
    flat = v.reshape(-1)
    out = np.empty(flat.shape, dtype=np.complex128)
    err = np.empty(flat.shape)
    lo, hi, log_ref = _reference(a, g, mu, width, cut)
    log_left, log_right = _log_tails(a, g, mu, lo, hi, cut)
    keys = _group_keys(flat, _GROUP_OCTAVES) if flat.size > _SHORT_LINE else np.zeros(flat.size, dtype=np.int64)
    plans, work, above, near = [], 0, None, None
    for key in np.unique(keys):  # every group's layout and work first: a request beyond the limit fails at once
        sel = np.flatnonzero(keys == key)
        magnitudes = np.abs(flat[sel])
        v_top, v_low = float(magnitudes.max()), float(magnitudes.min())
        # high frequencies: the lower part of a soft split, the upper part bounded (module docstring, "Soft split")
        soft, log_upper, right = None, -np.inf, log_right
        if v_low >= _SOFT_MIN_FREQUENCY and near != -np.inf:  # (an octave above found no split: nor would this)
            log_share = log_ref + _LOG_TARGET + _log_relaxation(v_low)
            split = _soft_split(a, v_low, v_top, g, mu, width, cut, log_share, near)
            near = -np.inf if split is None else split[0][0]
            if split is not None:
                # the lower part's range ends at c + 9w, below hi <= cut (_soft_split's centres): beyond it, its
                # weighted tail
                soft, log_upper, right = split
        # the octaves come from the top down: each starts its search one level below the layout of the one above
        start = None
        if above is not None and above[0] >= v_top:
            start = above[1] - int(round(math.log2(above[0] / max(v_top, 1.0))))
        layout = _layout(a, v_top, g, mu, width, cut, v_low, start, soft)
        above = (v_top, layout[4])
        nodes = _nodes(a, g, mu, layout[0], layout[1], soft)
        log_c = nodes[3]
        work = _check_work(flat[sel], int(np.count_nonzero(_pruned(log_c)[1])), v_top, work)
        plans.append((sel, v_top, v_low, layout, nodes, soft, [log_left, right, log_upper]))
    def one_group(plan):
        sel, v_top, v_low, (h, _, log_quad, log_sups, _), (x, r, log_w, log_c), soft, log_parts = plan
        part = flat[sel]
        peak, keep, dropped = _pruned(log_c)
        x, r, log_w, c = x[keep], r[keep], log_w[keep], np.exp(log_c[keep] - peak)
        h = np.repeat(h, _N_NODES)[keep]
        eps = _term_errors(x, r, h, log_w, log_c[keep], abs(a), peak, v_top, g, mu, soft)
        taylor_target = _TAYLOR_TARGET * math.exp(_log_relaxation(v_low))
        # panels tile [lo, hi] up to the rounding of their centres (_panel_log_errors): log_sups bounds the gaps
        extra = None
        if soft is not None and cut < math.inf:  # the upper part's jump at the cut (module docstring)
            jump, jump_error = _jump_term(a, part, g, mu, cut)
            values = np.exp(jump - peak)
            # and the rounding of jump - peak and of its exponential: 4u of their magnitudes, doubled
            shift_error = 8.0 * _U * (2.0 + abs(peak) + float(np.max(np.abs(jump.real))))
            extra = (values, float(np.exp(np.max(jump_error) - peak)) + shift_error * float(np.max(np.abs(values))))
        out[sel], log_err = log_sum_enclosure(part, r, c, eps, peak, taylor_target,
                                              [log_quad, dropped, log_sups] + log_parts, extra)
        err[sel] = _slack(float(log_err))

    _run_groups(one_group, plans, flat.size)
    if not (np.isfinite(err).all() and np.isfinite(out.real[out.real != -np.inf]).all()):
        raise NumericalError(
            f"the subsampled Gaussian's characteristic function at tilt {a:.4g} (noise multiplier {1.0 / mu:.3g}) "
            "is beyond float64: too little noise for the characteristic-function accountant; use RDPAccountant."
        )
    return out.reshape(v.shape), err.reshape(v.shape)


def log_f_upper(a: float, g: float, mu: float, *, cut: float = math.inf) -> float:
    """A proven upper bound on ``log F(a)`` (``log F_b(a)`` for a finite ``cut``) for real ``a`` (the enclosure's
    value plus its error)."""
    value, log_err = log_f_enclosure(a, np.zeros(1), g, mu, cut=cut)
    return _slack(float(np.logaddexp(value[0].real, log_err[0])))


def log_f_real_enclosure(
    a: ArrayLike, g: float, mu: float, width: float = 14.0, *, cut: float = math.inf
) -> tuple[np.ndarray, np.ndarray]:
    """``(log F~, log E)`` at many real ``a`` at once: ``|F(a) - exp(log F~)| <= exp(log E)`` for each (``F_b``
    for a finite ``cut``: every range below ends at the cut, module docstring "Cut").

    The same proof as :func:`log_f_enclosure` at ``v = 0`` (so ``theta`` plays no part), on one panel layout shared
    by every ``a``: the union of their ranges, each zone cut at the finest level any ``a`` needs, and every bound
    (quadrature, gaps, tails at the common ends, per-term rounding) computed for each ``a``. The terms are summed
    with ``numpy.sum`` (any order: at most ``(J + 2) u`` of their sum). Chernoff searches and dampings ask for
    dozens of tilts of each mechanism; one call here replaces one layout each.
    """
    a = np.asarray(a, dtype=np.float64).reshape(-1)
    g, mu, width, cut = float(g), float(mu), float(width), _checked_cut(cut)
    if a.size < 4:
        pairs = [_log_f_real(float(x), g, mu, width, cut) for x in a]
        return np.array([p[0] for p in pairs], dtype=np.complex128), np.array([p[1] for p in pairs])
    a_min = float(np.min(a))  # its range (_range) is the widest on the left
    lo = min(-width if a_min >= 0 else max(a_min * mu - width, float(_left_reach(a_min, g))), cut - width)
    hi = min(float(max(np.max(a) * mu, 0.0) + width), cut)
    if (hi - lo) / 2.0 * _N_NODES > _MAX_NODES:
        _reference(float(a[np.argmax(np.abs(a))]), g, mu, width, cut)  # raises the usual NumericalError
    coarse = np.linspace(lo, hi, int(min(max((hi - lo) * 50.0, 200.0), 2e4)))
    log_ref = _lse(-0.5 * coarse * coarse - _LOG_SQRT_2PI + np.outer(a, _r(coarse, g, mu)), axis=1) + np.log(
        coarse[1] - coarse[0])
    zones = int(np.ceil((hi - lo) / 2.0))
    edges = np.linspace(lo, hi, zones + 1)
    zone_len = edges[1] - edges[0]
    log_share = log_ref + _LOG_TARGET - np.log(zones)  # (A,)
    halves, centres = [], []
    log_quad = np.full(a.size, -np.inf)
    log_gaps = np.full(a.size, -np.inf)
    todo, level, panels = np.arange(zones), 0, 0
    while todo.size:
        n_sub = 1 << level
        h = zone_len / (2.0 * n_sub)
        mid = edges[todo][:, None] + h * (2.0 * np.arange(n_sub) + 1.0)[None, :]
        log_err, log_sup = _panel_log_errors_many(a, g, mu, mid.ravel(), h)  # (panels, A)
        zone_err = _lse(log_err.reshape(mid.shape + (a.size,)), axis=1)  # (zones, A)
        zone_sup = _lse(log_sup.reshape(mid.shape + (a.size,)), axis=1)
        last = h <= _MIN_HALF_LENGTH or (panels + todo.size * n_sub) * _N_NODES > _MAX_NODES
        done = np.all(zone_err <= log_share[None, :], axis=1) | last
        for z in np.flatnonzero(done):
            centres.append(mid[z])
            halves.append(np.full(n_sub, h))
            log_quad = np.logaddexp(log_quad, zone_err[z])
            log_gaps = np.logaddexp(log_gaps, zone_sup[z])
            panels += n_sub
        todo = todo[~done]
        level += 1
    h, centres = np.concatenate(halves), np.concatenate(centres)
    xi, w = _rule()
    x = (centres[:, None] + h[:, None] * xi[None, :]).ravel()
    log_w = np.log(h[:, None] * w[None, :]).ravel()
    hx = np.repeat(h, _N_NODES)
    r = _r(x, g, mu)
    base = log_w - 0.5 * x * x - _LOG_SQRT_2PI
    log_c = base[None, :] + a[:, None] * r[None, :]  # (A, J)
    peak = np.max(log_c, axis=1)
    c = np.exp(log_c - peak[:, None])
    sums = np.sum(c, axis=1)
    eps = _term_errors(x, r, hx, log_w, log_c, np.abs(a)[:, None], peak[:, None], 0.0, g, mu)
    eps = np.expm1(eps + 8.0 * _U) * 1.01 + 8.0 * _U
    rounding = np.sum(c * eps, axis=1) * (1.0 + 1e-12) + (x.size + 2.0) * _U * sums * (1.0 + eps.max(axis=1))
    log_left, log_right = _log_tails_many(a, g, mu, lo, hi, cut)
    fixed = np.exp(np.stack([log_quad, log_left, log_right, log_gaps]) - peak[None, :]).sum(axis=0)
    # terms that underflowed to 0 after the shift: each below the smallest normal, at most J of them
    fixed = fixed + x.size * 2.3e-308
    log_err = np.log((rounding + fixed) * (1.0 + 1e-10) + 1e-300) + peak
    value = np.log(sums) + peak
    if not (np.all(np.isfinite(log_err)) and np.all(np.isfinite(value))):
        raise NumericalError(
            f"the subsampled Gaussian's characteristic function at tilts up to {float(np.max(np.abs(a))):.4g} "
            f"(noise multiplier {1.0 / mu:.3g}) is beyond float64: too little noise for the "
            "characteristic-function accountant; use RDPAccountant.")
    return value.astype(np.complex128), np.array([_slack(float(e)) for e in log_err])


def _panel_log_errors_many(a, g, mu, centres, h, v_top=0.0, soft=None):
    """``(log error bound, log gap mass)`` of each panel (centre, half-length ``h``) for every tilt in ``a``
    (arrays of shape ``(panels, A)``): the Gauss-Legendre bound at its best ``rho`` for ``|v| <= v_top``, and a
    bound on ``|f|`` integrated over the gaps or overlaps at its two ends.

    A zone's panels have centres ``edge + h (2i + 1)`` computed in float64, so neighbouring ends miss each other
    by at most ``_GAP (|x| + 6)`` (``x`` the end; zones are at most ~2.1 long); there ``|f|`` is within a factor
    ``1.01`` of ``|f(end)|`` (its log changes by at most ``(|x| + |a| mu)`` times that width).

    With a soft split ``soft = (c, w)`` the integrand is the lower part's, ``f Phi((c - x) / w)``: on the ellipse's
    rectangle ``|Phi((c - x - iy) / w)| <= e^(y^2 / (2 w^2)) Phi((c - x_left) / w)`` (module docstring, "Soft
    split"), which multiplies ``M``; the gap masses keep the bound without it (the weight is at most 1 on the line).
    """
    y = h * (_RHOS - 1.0 / _RHOS) / 2.0
    ok = mu * y <= np.pi / 2.0
    ends = centres[None, :] + np.array([-h, h])[:, None]  # (2, P): centre - h, centre + h
    log_end = (-0.5 * ends * ends - _LOG_SQRT_2PI + np.log(_GAP * (np.abs(ends) + 6.0)))[..., None] + (
        a[None, None, :] * _r(ends, g, mu)[..., None])
    log_sup = np.logaddexp(log_end[0], log_end[1]) + np.log(1.01)  # the two ends' sum (a bound's size: slack later)
    if not ok.any():
        return np.full((centres.size, a.size), np.inf), log_sup
    rho, y = _RHOS[ok], y[ok]
    reach = h * (rho + 1.0 / rho) / 2.0
    x_left = centres[:, None] - reach[None, :]  # (P, R)
    x_right = centres[:, None] + reach[None, :]
    if np.all(a >= 0):  # the layout's single tilt, or tilts of one sign: only the end that is needed
        r_end = _r(x_right, g, mu)[..., None]
    elif np.all(a < 0):
        r_end = _r(x_left, g, mu)[..., None]
    else:
        r_end = np.where(a[None, None, :] >= 0, _r(x_right, g, mu)[..., None], _r(x_left, g, mu)[..., None])
    log_m = ((_log_phi_max(x_left, x_right) + 0.5 * y * y)[..., None] + a[None, None, :] * r_end
             + np.minimum(a, 0.0)[None, None, :] * np.log(np.cos(mu * y / 2.0))[None, :, None])
    if v_top:
        log_m = log_m + (v_top * _theta(x_right, y[None, :], g, mu))[..., None]
    if soft is not None:
        c, w = soft
        log_m = log_m + (0.5 * (y / w) ** 2 + _log_weight_upper(x_left, c, w, -1.0))[..., None]
    log_err = (np.log(64.0 / 15.0) + np.log(h) + log_m
               - (2 * _N_NODES * np.log(rho) + np.log(rho * rho - 1.0))[None, :, None])
    return log_err.min(axis=1), log_sup


def _log_tails_many(a, g, mu, lo, hi, cut=math.inf):
    """:func:`_log_tails` for every tilt in ``a``; no right tail where the range reaches the cut."""
    left = np.where(a >= 0, a * float(_r(lo, g, mu)), a * np.log1p(-g)) + float(special.log_ndtr(lo))
    if hi >= cut:
        return left, np.full(a.shape, -np.inf)
    r_hi = float(_r(hi, g, mu))
    right_pos = a * r_hi - a * mu * hi + 0.5 * (a * mu) ** 2 + special.log_ndtr(-(hi - a * mu))
    right_neg = a * r_hi + float(special.log_ndtr(-hi))
    return left, np.where(a >= 0, right_pos, right_neg)


