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

**Upper part of a soft split.** :mod:`mechanisms.subsampled_gaussian_cf` may split the integrand with the weight
``chi(x) = Phi((x - c) / w)`` (``Phi`` the standard normal CDF, entire) into ``F = N + W``, ``W(z) = int phi chi B^z``
over ``x <= cut``. For any complex ``u + it``, ``Phi(u + it) = int_(-inf)^0 phi(u + it + tau) d tau`` (a horizontal
path, on which ``phi`` decays), and ``|phi(u + tau + it)| = phi(u + tau) e^(t^2/2)``, so ``|Phi(u + it)| <= e^(t^2/2)
Phi(u)``: on ``Im x = b``, ``|chi(x + ib)| <= e^(b^2 / (2 w^2)) Phi((x - c) / w)``. The shifted contour above then
gives ``|W(a + iv)| <= e^(b^2/2 + b^2/(2 w^2)) cos(mu b/2)^min(a,0) int phi(x) Phi((x - c)/w) B(x)^a e^(-|v| theta(x,
b)) dx``, plus, for a finite cut, the vertical side with ``|chi(cut + iy)| <= e^(y^2/(2 w^2))``
(:func:`log_soft_upper_sup`).
Where the loss is narrow (little sampling), most of the mass sits at small ``x``, where ``theta`` is tiny and ``F``
barely decays; the weight removes it from ``W``, whose bound then falls fast with ``|v|``.

**Jump at the cut.** The vertical side at a finite cut is the body's jump, ``|f(cut)| / (|v| r'(cut))`` in size,
and it decays only like ``1 / |v|``. Its leading part is known: for ``f = phi B^z``, ``f(cut + iy) = f(cut) e^(i y
D + rho(y))`` with ``D = (log f)'(cut) = -cut + z r'(cut)`` and ``rho(y) = i int_0^y ((log f)'(cut + it) - D) dt``,
so ``|rho(y)| <= K y^2 / 2`` with ``K >= |(log f)''|`` on the segment, and ``-i int_0^(b1) f(cut) e^(i y D) dy =
f(cut) (1 - e^(i b1 D)) / D``. So the side is ``J(z) = f(cut) / D`` (which
:mod:`mechanisms.subsampled_gaussian_cf` computes and adds) up to what :func:`_log_side_remainder` bounds; with
``Im D = v r'(cut)``, the remainder is smaller than ``J`` by about ``K / (v r'(cut))^2``.
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
    _log_weight_upper,
    _lse,
    _r,
    _r_error,
    _reference,
    _slack,
    _theta,
    log_f_upper,
)

__all__ = ["log_f_sup", "log_soft_upper_sup"]


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


#: The vertical side's cells ``[y0, y1]`` as fractions of the shift ``b`` (geometric towards 0; the last is 1 exactly).
_SIDE_STEPS = np.concatenate(([0.0], np.geomspace(1e-12, 1.0, 192)))


def _side_parts(a, g, mu, cut, b):
    """``(base, theta, log_corner)`` of :func:`_log_side`, the first two of shape ``(B, n)``: the log of each cell of
    the vertical side ``[0, b]`` at the cut less its frequency term, with every rounding raised as :func:`_log_side`
    states; ``theta`` the smaller of its values at the cell's two ends (what the frequency multiplies); and the log
    of ``phi(cut) B(cut)^a`` raised by its rounding."""
    y = b[:, None] * _SIDE_STEPS[None, :]  # (B, n): the last column is b itself (geomspace ends exactly at 1)
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


#: Shifts ``b`` (fractions of ``pi / mu``) tried by :func:`log_soft_upper_sup`: smaller ones than
#: :func:`_decay_parts`' too, since the weight's bound grows like ``e^(b^2 / (2 w^2))``.
_SOFT_FRACTIONS = np.array([0.01, 0.02, 0.035, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.5, 0.7, 0.95])


def log_soft_upper_sup(
    a: float, v_min: float, g: float, mu: float, centre: float, softness: float, *, cut: float = math.inf,
    v_max: float | None = None, width: float = 14.0, cells: int = 1024,
) -> float:
    """A proven upper bound on ``sup_{|v| >= v_min} log |W(a + iv)|``, ``W(z) = int_(-inf)^cut phi(x) Phi((x -
    centre) / softness) B(x)^z dx`` the upper part of a soft split (module docstring, "Upper part of a soft split").

    The shifted integral is bounded on the cells of :func:`log_f_sup` (``Phi`` at each cell's right end, where it
    is largest; ``theta`` at the left end), its tails as there (the left one times the weight at ``lo``, the right
    one times 1), and each shift's bound raised by the weight's ``e^(b^2 / (2 w^2))``; the minimum over the shifts
    :data:`_SOFT_FRACTIONS` is taken. ``v_min`` must be positive: at ``v = 0`` nothing decays.

    With a finite ``cut`` and ``v_max`` given, the bound is instead on ``|W(a + iv) - J(a + iv)|`` for ``v_min <=
    |v| <= v_max``, ``J`` the jump term at the cut (module docstring, "Jump at the cut"; the caller adds ``J``):
    the vertical side's bound is replaced by :func:`_log_side_remainder`."""
    a, g, mu, cut = float(a), float(g), float(mu), _checked_cut(cut)
    v_min, centre, softness = abs(float(v_min)), float(centre), float(softness)
    if not (v_min > 0.0 and math.isfinite(v_min) and math.isfinite(centre) and softness > 0.0
            and math.isfinite(softness)):
        raise ValueError(
            "log_soft_upper_sup needs a positive finite v_min and softness and a finite centre; got "
            f"v_min={v_min}, centre={centre}, softness={softness}.")
    jump = cut < math.inf and v_max is not None
    if jump and not (math.isfinite(float(v_max)) and float(v_max) >= v_min):
        raise ValueError(f"log_soft_upper_sup needs a finite v_max >= v_min; got v_max={v_max}, v_min={v_min}.")
    lo, log_cell, theta_lo, x1, log_left, log_right, theta_hi_end, b, lean, side = _soft_parts(
        a, g, mu, float(width), int(cells), cut)
    weight = _log_weight_upper(x1, centre, softness, 1.0)
    inner = _lse((log_cell + weight)[:, None] - v_min * theta_lo, axis=0)
    left = log_left + float(_log_weight_upper(np.array([lo]), centre, softness, 1.0)[0])
    total = np.logaddexp(np.logaddexp(inner, left), log_right - v_min * theta_hi_end)
    shifted = lean + 0.5 * (b / softness) ** 2 + total
    if jump:
        shifted = np.logaddexp(shifted, _log_side_remainder(a, v_min, float(v_max), g, mu, cut, centre, softness, b,
                                                            side[2]))
    elif side is not None:
        base, theta, log_corner, y1 = side
        soft_side = base + 0.5 * (y1 / softness) ** 2
        shifted = np.logaddexp(shifted, _log_side(v_min, soft_side, theta, log_corner))
    return _slack(float(shifted.min()))


#: The first part ``[0, b1]`` of the vertical side (:func:`_log_side_remainder`) ends at ``b1 = min(b,
#: _SIDE_REACH / (v r'(cut)))``, where ``|e^(i y D)| = e^(-y v r'(cut))`` has fallen to ``e^-_SIDE_REACH``.
_SIDE_REACH = 45.0


def _log_side_remainder(a, v_min, v_max, g, mu, cut, centre, softness, b, log_corner):
    """For each shift ``b``, the log of a bound on ``|-i int_0^b f_W(cut + iy) dy - J(z)|`` for ``v_min <= |v| <=
    v_max`` (module docstring, "Jump at the cut"), ``f_W = phi Phi((x - centre)/softness) B^z``, ``J = f(cut) / D``
    with ``f = phi B^z`` and ``D = -cut + z r'(cut)``; ``log_corner`` bounds ``log (phi(cut) B(cut)^a)`` (rounding
    included, :func:`_side_parts`). Four parts, each over ``|f(cut)|``:

    * ``|f(cut) e^(i b1 D) / D| <= |f(cut)| e^(-b1 lam) / lam``, ``lam = |v| r'(cut) <= |D|``;
    * the expansion's remainder on ``[0, b1]``: ``f(cut + iy) = f(cut) e^(i y D + rho(y))`` with ``|rho(y)| <= K
      y^2 / 2``, ``K`` a bound on ``|(log f)''| = |-1 + z r''|`` on the segment, ``|r''(cut + iy)| = mu^2 (1 - g) g
      w(cut) / |B|^2 <= mu^2 (1 - g) g w(cut) / (cos(mu b1/2)^2 B(cut)^2)``; with ``|e^rho - 1| <= |rho| e^|rho|``
      and ``int_0^b1 y^2 e^(-lam y) dy <= 2 / lam^3`` this is at most ``K e^(K' b1^2 / 2) / lam^3``, ``K`` at
      ``|v| = v_min`` (``K / lam^3`` falls with ``|v|``: ``K`` grows at most linearly) and ``K'`` at ``v_max``;
    * ``[b1, b]``: length times ``e^(b^2/2) cos(mu b/2)^min(a,0) e^(-v_min min(theta(cut, b1), theta(cut, b)))``
      (``theta(cut, .)`` rises then falls, :func:`_log_side`);
    * the weight: ``f_W - f = -f Phi((centre - x) / softness)``, on the side at most ``b e^(b^2/2 + b^2/(2 w^2))
      cos(mu b/2)^min(a,0) Phi((centre - cut) / w)`` (module docstring, "Upper part of a soft split")."""
    r_cut = float(_r(cut, g, mu))
    log_gw = math.log(g) + mu * cut - 0.5 * mu * mu  # log (g w(cut))
    slope = mu * math.exp(min(log_gw - r_cut, 0.0))  # r'(cut) = mu g w / B
    lam = v_min * slope * (1.0 - 1e-12)
    if not lam > 0.0:
        return np.full(b.shape, np.inf)
    b1 = np.minimum(b, _SIDE_REACH / lam)
    log_k1 = 2.0 * math.log(mu) + math.log1p(-g) + log_gw - 2.0 * np.log(np.cos(mu * b1 / 2.0)) - 2.0 * r_cut
    k_low = 1.0 + (abs(a) + v_min) * np.exp(log_k1)
    k_high = 1.0 + (abs(a) + v_max) * np.exp(log_k1)
    lean = 0.5 * b * b + min(a, 0.0) * np.log(np.cos(mu * b / 2.0))
    with np.errstate(divide="ignore", over="ignore"):
        first = -b1 * lam - math.log(lam)
        expansion = np.log(k_low) + 0.5 * k_high * b1 * b1 - 3.0 * math.log(lam)
        theta = np.minimum(_theta(cut, b1, g, mu), _theta(cut, b, g, mu)) * (1.0 - 1e-12)
        rest = np.where(b > b1, np.log(np.maximum(b - b1, 0.0)) + lean - v_min * theta, -np.inf)
        weight = (np.log(b) + lean + 0.5 * (b / softness) ** 2
                  + float(_log_weight_upper(np.array([cut]), centre, softness, -1.0)[0]))
    parts = np.stack([first, expansion, rest, weight])
    return log_corner + _lse(parts, axis=0)


@functools.lru_cache(maxsize=64)
def _soft_parts(a, g, mu, width, cells, cut):
    """What :func:`log_soft_upper_sup` needs for one tilt, whatever the split: the cells' logs (rounding included,
    :func:`_log_cell_error`), ``theta`` on them for each shift, their right ends, the tails, ``theta`` at the
    range's right end, the shifts, ``e^(b^2/2) cos(mu b/2)^min(a,0)``'s log, and the vertical side's parts with the
    side cells' upper ends (None for the whole law)."""
    lo, hi, _ = _reference(a, g, mu, width, cut)
    log_left, log_right = _log_tails(a, g, mu, lo, hi, cut)
    edges = np.linspace(lo, hi, cells + 1)
    x0, x1 = edges[:-1], edges[1:]
    x_end = x1 if a >= 0 else x0
    log_cell = (np.log(x1 - x0) + _log_phi_max(x0, x1) + a * _r(x_end, g, mu)
                + _log_cell_error(a, x0, x1, x_end, g, mu))
    b = _SOFT_FRACTIONS * np.pi / mu
    theta_lo = _theta(x0[:, None], b[None, :], g, mu) * (1.0 - 1e-12)
    theta_hi_end = _theta(np.array([hi]), b, g, mu) * (1.0 - 1e-12)
    lean = 0.5 * b * b + min(a, 0.0) * np.log(np.cos(mu * b / 2.0))
    side = None
    if cut < math.inf:  # the side cells' upper ends, where the weight's e^(y^2 / (2 w^2)) is largest
        base, theta, log_corner = _side_parts(a, g, mu, cut, b)
        side = (base, theta, log_corner, b[:, None] * _SIDE_STEPS[None, 1:])
    return lo, log_cell, theta_lo, x1, log_left, log_right, theta_hi_end, b, lean, side
