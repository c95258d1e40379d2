"""Proven bounds on how the subsampled Gaussian's characteristic function decays (issue 14 item 1): the truncation
bound of a Fourier inversion, ``sup_{|v| >= V} |F(a + iv)|``, and the same for the body ``F_b`` of a cut law.

Notation, the bound (*) on ``|f(x + iy)|`` for ``f = phi B^z`` and the tails are those of
:mod:`mechanisms.subsampled_gaussian_cf` (``B = 1 - g + g e^(mu x - mu^2/2)``, ``F(z) = E[B(X)^z]``,
``theta(x, y) = arg(1 - g + g w(x) e^(i mu y))``).

**Decay.** For ``v > 0`` (``v < 0`` by symmetry) shift the contour to ``Im x = b`` with ``0 < mu b < pi`` (``f``
is analytic in between and vanishes at both ends): ``|F(a + iv)| <= e^(b^2/2) cos(mu b/2)^min(a,0) int phi(x)
B(x)^a e^(-|v| theta(x, b)) dx``, which decreases in ``|v|``, so its value at ``V`` bounds the supremum over
``|v| >= V``. The integral is bounded above on cells (each factor at its largest on the cell; ``theta`` increases)
plus the tails above, and minimised over a few ``b``.

**Cut.** For the body ``F_b(z) = int_(-inf)^c phi(x) B(x)^z dx`` (:mod:`mechanisms.subsampled_body`), ``v > 0`` and
``0 < mu b < pi``, Cauchy's theorem on the rectangle ``-R, c, c + ib, -R + ib`` (``f`` analytic on it; its left side
vanishes as ``R -> inf``) gives ``int_(-inf)^c f(x) dx = int_(-inf)^c f(x + ib) dx - i int_0^b f(c + iy) dy``, so
``|F_b(a + iv)|`` is at most the shifted bound above over ``x <= c`` plus ``int_0^b |f(c + iy)| dy``, where by (*),
with ``|B^(iv)| = e^(-v arg B) = e^(-v theta)`` on this side, ``|f(c + iy)| <= phi(c) e^(y^2/2) B(c)^a cos(mu
y/2)^min(a,0) e^(-v theta(c, y))``. That side is bounded on cells of ``[0, b]`` (:func:`_log_side`), decreases in
``v`` as the rest does, and is added before the minimum over ``b``. It decays only like ``1/v``: the body's density
jumps at ``c``, and indeed ``|F_b(a + iv)| ~ phi(c) B(c)^a / (v r'(c))`` for large ``v`` (``theta(c, y) ~ r'(c) y``
near 0). The shortcut that skips the bound at ``v = 0`` uses ``log F(a) >= 0`` outside ``(0, 1)``, false for the
body; there a proven lower bound on ``log F_b(a)`` (a lower sum on the same cells, :func:`_log_lower_sum`) takes the
place of 0.
"""

from __future__ import annotations

import functools
import math

import numpy as np

from dpledger.mechanisms.subsampled_gaussian_cf import (
    _LOG_SQRT_2PI,
    _U,
    _checked_cut,
    _log_phi_max,
    _log_tails,
    _lse,
    _r,
    _r_error,
    _reference,
    _slack,
    _theta,
    log_f_upper,
)

__all__ = ["log_f_sup"]


def log_f_sup(
    a: float, v_min: float, g: float, mu: float, width: float = 14.0, cells: int = 1024, *, cut: float = math.inf
) -> float:
    """A proven upper bound on ``sup_{|v| >= v_min} log |F(a + iv)|`` (module docstring, "Decay"); for a finite
    ``cut``, on ``log |F_b(a + iv)|`` (the shifted integral over ``x <= cut`` plus the contour's vertical side at
    the cut, module docstring "Cut")."""
    a, g, mu, v_min, cut = float(a), float(g), float(mu), abs(float(v_min)), _checked_cut(cut)
    finite = cut < math.inf
    if v_min == 0.0:
        return log_f_upper(a, g, mu, cut=cut)
    # ``trivial``, the bound at v = 0, is needed only where it may be the smaller: ``F`` is convex with ``F(0) =
    # F(1) = 1``, so for ``a`` outside (0, 1) ``log F(a) >= 0`` and its proven upper bound is too; a decay bound
    # at most 0 is then the minimum without it (the enclosure at v = 0 costs more than the rest here). The body
    # has no such floor (``F_b(1) = 1 - p``, and ``F_b(a)`` may be far below 1): there a proven lower bound on
    # ``log F_b(a)`` (:func:`_log_lower_sum`) plays the part of 0.
    trivial = None if finite or a <= 0.0 or a >= 1.0 else log_f_upper(a, g, mu)
    parts = _decay_parts(a, g, mu, float(width), int(cells), cut)
    if parts is None:
        return log_f_upper(a, g, mu, cut=cut) if trivial is None else trivial
    log_cell, theta_lo, log_left, log_right, theta_hi_end, lean, side = parts
    inner = _lse(log_cell[:, None] - v_min * theta_lo, axis=0)
    total = np.logaddexp(np.logaddexp(inner, log_left), log_right - v_min * theta_hi_end)
    shifted = lean + total
    if not finite:
        bound = _slack(float(shifted.min()))
        if trivial is None and bound <= 0.0:
            return bound
        return min(log_f_upper(a, g, mu) if trivial is None else trivial, bound)
    bound = _slack(float(np.logaddexp(shifted, _log_side(v_min, *side)).min()))
    if bound <= _log_lower_sum(a, g, mu, cut, float(width), int(cells)):
        return bound
    return min(log_f_upper(a, g, mu, cut=cut), bound)


@functools.lru_cache(maxsize=64)
def _decay_parts(a, g, mu, width, cells, cut):
    """What :func:`log_f_sup` needs at every frequency, for one tilt (a plan asks at several ``v_min`` for one
    ``a``: its truncation bound as the nodes double): the cells' logs, ``theta`` on the cells and at the right end
    for each shift ``b``, the tails, ``e^(b^2/2) cos(mu b/2)^min(a,0)``'s log for each shift, and the vertical
    side's parts (:func:`_side_parts`; None for the whole law); None where no shift is usable. The same float
    operations as when they were formed at each call."""
    lo, hi, _ = _reference(a, g, mu, width, cut)
    log_left, log_right = _log_tails(a, g, mu, lo, hi, cut)
    edges = np.linspace(lo, hi, cells + 1)
    x0, x1 = edges[:-1], edges[1:]
    log_cell = np.log(x1 - x0) + _log_phi_max(x0, x1) + a * _r(x1 if a >= 0 else x0, g, mu)
    if cut < math.inf:  # the roundings of the cells' logs, which the final slack need not cover (|a| may be large)
        x_end = x1 if a >= 0 else x0
        log_cell = log_cell + _log_cell_error(a, x0, x1, x_end, g, mu)
    fractions = np.array([0.02, 0.05, 0.1, 0.2, 0.35, 0.5, 0.7, 0.85, 0.95])
    b = fractions * np.pi / mu
    b = b[b * b / 2.0 < 700.0]
    if b.size == 0:
        return None
    theta_lo = _theta(x0[:, None], b[None, :], g, mu) * (1.0 - 1e-12)  # a lower bound on theta on each cell
    theta_hi_end = _theta(np.array([hi]), b, g, mu) * (1.0 - 1e-12)
    lean = 0.5 * b * b + min(a, 0.0) * np.log(np.cos(mu * b / 2.0))
    side = _side_parts(a, g, mu, cut, b) if cut < math.inf else None
    for array in (log_cell, theta_lo, theta_hi_end, lean):
        array.setflags(write=False)
    return log_cell, theta_lo, log_left, log_right, theta_hi_end, lean, side


def _log_cell_error(a, x0, x1, x_end, g, mu):
    """Bound on the rounding of ``log(x1 - x0) + log phi + a r(x_end)`` as computed for each cell: the
    difference (``u`` relative, so ``2u`` in the log), the log (``u`` of its value), ``x^2/2`` and the constant
    (``4u`` of the magnitudes), ``a r`` (``|a|`` times :func:`_r_error`, plus ``2u |a r|``), the three sums (``u``
    of the magnitudes each); doubled."""
    width = np.log(x1 - x0)
    near = np.maximum(x0 * x0, x1 * x1)
    r = _r(x_end, g, mu)
    return 2.0 * (_U * (3.0 + np.abs(width)) + 4.0 * _U * (0.5 * near + 1.0) + abs(a) * _r_error(x_end, r, g, mu)
                  + 5.0 * _U * np.abs(a * r) + 3.0 * _U * (np.abs(width) + 0.5 * near + 1.0))


@functools.lru_cache(maxsize=64)
def _log_lower_sum(a, g, mu, cut, width, cells):
    """A proven lower bound on ``log F_b(a)``: the cells ``[x0, x1]`` (those of :func:`log_f_sup`) tile ``[lo,
    hi]``, part of ``(-inf, cut]`` where the integrand ``phi B^a`` is positive, so ``F_b(a)`` is at least the sum
    over cells of the length times the integrand's smallest value (``phi`` at the end farther from 0, ``B^a`` at
    the left end for ``a >= 0``, the right end otherwise), each log lowered by its rounding
    (:func:`_log_cell_error`) and the log-sum-exp by a relative and absolute ``1e-12``."""
    lo, hi, _ = _reference(a, g, mu, width, cut)
    edges = np.linspace(lo, hi, cells + 1)
    x0, x1 = edges[:-1], edges[1:]
    far = np.maximum(np.abs(x0), np.abs(x1))
    x_end = x0 if a >= 0 else x1
    log_cell = (np.log(x1 - x0) - 0.5 * far * far - _LOG_SQRT_2PI + a * _r(x_end, g, mu)
                - _log_cell_error(a, x0, x1, x_end, g, mu))
    total = float(_lse(log_cell))
    return total - 1e-12 * (abs(total) + 1.0)


def _side_parts(a, g, mu, cut, b):
    """``(base, theta, log_corner)`` of :func:`_log_side`, the first two of shape ``(B, n)``: the log of each cell of
    the vertical side ``[0, b]`` at the cut less its frequency term, with every rounding raised as :func:`_log_side`
    states; ``theta`` the smaller of its values at the cell's two ends (what the frequency multiplies); and the log
    of ``phi(cut) B(cut)^a`` raised by its rounding."""
    steps = np.concatenate(([0.0], np.geomspace(1e-12, 1.0, 192)))
    y = b[:, None] * steps[None, :]  # (B, n): the last column is b itself (geomspace ends exactly at 1)
    y0, y1 = y[:, :-1], y[:, 1:]
    theta = np.minimum(_theta(cut, y0, g, mu), _theta(cut, y1, g, mu)) * (1.0 - 1e-12)
    width = np.log(y1 - y0)
    cos = np.cos(mu * y1 / 2.0)
    lean = min(a, 0.0)
    # roundings: the width (as in _log_cell_error), y^2/2 (3u), log cos (the argument's rounding moves cos by at
    # most 2u (mu y/2 + 1), relative to cos, and the log u), the products and the three sums (u each); the
    # frequency term's own, 8u v theta, is charged by _log_side
    base = width + 0.5 * y1 * y1 + lean * np.log(cos)
    base = base + 2.0 * (_U * (3.0 + np.abs(width)) + 3.0 * _U * 0.5 * y1 * y1
                         + abs(lean) * (2.0 * _U * (mu * y1 / 2.0 + 1.0) / cos + _U * np.abs(np.log(cos)))
                         + 4.0 * _U * (np.abs(width) + 0.5 * y1 * y1 + abs(lean * np.log(cos))))
    r_cut = float(_r(cut, g, mu))
    log_corner = -0.5 * cut * cut - _LOG_SQRT_2PI + a * r_cut
    corner_error = 2.0 * (4.0 * _U * (0.5 * cut * cut + 1.0) + abs(a) * float(_r_error(cut, r_cut, g, mu))
                          + 5.0 * _U * abs(a * r_cut))
    for array in (base, theta):
        array.setflags(write=False)
    return base, theta, log_corner + corner_error


def _log_side(v, base, theta, log_corner):
    """For each shift ``b``, a bound on ``log int_0^b |f(cut + iy)| dy`` at frequency ``v >= 0`` (module docstring,
    "Cut"): ``phi(cut) B(cut)^a`` times a sum over cells ``[y0, y1]`` of ``[0, b]`` (geometric towards 0, where
    ``theta`` is smallest) of ``(y1 - y0) e^(y1^2/2) cos(mu y1/2)^min(a,0) e^(-v min(theta(y0), theta(y1)))``
    (the first two factors increase in ``y``; ``theta(cut, .)`` rises then falls on ``[0, pi/mu)``, its ``y``-
    derivative having the sign of ``t + c cos(mu y)``, ``t = g w(cut)``, ``c = 1 - g``, so its minimum on a cell
    is at an end), every log raised by its rounding (:func:`_side_parts`; here that of ``v theta``, ``u`` for the
    product and for the sum it enters, doubled)."""
    log_cells = base - v * theta + 8.0 * _U * v * theta
    return log_corner + _lse(log_cells, axis=1)
