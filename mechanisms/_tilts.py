"""The float tilt ``1 + s`` and what its rounding costs a proof.

A moment generating function ``G(z) = E[e^(z Y)]`` (a positive measure; the privacy loss's ``M``, or the
subsampled Gaussian's ``F(z) = E[B(X)^z]`` with ``Y = log B``) is often asked for at ``z = 1 + s`` or, for the add
direction, at the remove-direction argument ``-1 - s``. In float64 these sums are rounded, so a proven enclosure at
the float ``z~`` is not yet one at the exact ``z``. Three tools close the gap:

* :func:`two_sum`: the float sum and its exact rounding error (Knuth's TwoSum, exact for finite sums without
  overflow), so the caller knows the exact offset ``e = z - z~``, a float.
* :func:`log_shift_error`: for a real offset ``e`` and any ``t, v``::

      |G(t + e + iv) - G(t + iv)| <= (|e| / eta) (G(t + eta_+) + G(t - eta_-)),   eta_+-  >=  eta + |e|.

  Proof: ``|e^((t + e + iv) Y) - e^((t + iv) Y)| = e^(tY) |e^(eY) - 1| <= e^(tY) |eY| e^(|eY|)`` and ``|y| <=
  e^(eta |y|) / eta`` for every real ``y`` (``e^x >= 1 + x > x``), so the difference is at most ``e^(tY) (|e| /
  eta) e^((eta + |e|) |Y|) <= (|e| / eta) (e^((t + eta_+) Y) + e^((t - eta_-) Y))`` (the first term covers ``Y >=
  0``, the second ``Y < 0``); integrate. It needs only upper bounds on ``G`` at two real floats, and bounds a
  supremum over ``v`` as well as each ``v``. Any ``eta > 0`` will do; a few are tried.
* :func:`convex_bracket`: at real arguments ``log G`` is convex (Hoelder), so at an exact ``t`` between two floats it
  is at most the larger of its values there: upper bounds need no error term, only a second float.

:func:`exact_tilt` moves a damping to a nearby float ``k`` for which ``1 + k``, ``-1 - k`` and ``1 + (-1 - k)`` are
all exact, so that searches which may choose their dampings freely (any damping gives a valid Chernoff or inversion
bound) never pay for the above.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
from numpy.typing import ArrayLike

__all__ = ["SHIFT_REACHES", "convex_bracket", "exact_tilt", "log_shift_error", "two_sum"]

#: The ``eta`` tried by :func:`log_shift_error`.
SHIFT_REACHES = (0.5, 0.05, 0.005)


def two_sum(a: ArrayLike, b: ArrayLike) -> tuple[np.ndarray, np.ndarray]:
    """``(s, e)`` with ``s = fl(a + b)`` and ``s + e = a + b`` exactly (Knuth's TwoSum; finite sums that do not
    overflow), elementwise."""
    a, b = np.broadcast_arrays(np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64))
    s = a + b
    bb = s - a
    return s, (a - (s - bb)) + (b - bb)


def exact_tilt(kappa: ArrayLike) -> np.ndarray:
    """A float near each ``kappa`` (within an ulp of ``1 + kappa``) for which ``1 + k`` is exact, hence also ``-1 -
    k`` and ``1 + (-1 - k) = -k``: ``k = fl(fl(1 + kappa) - 1)``. For ``fl(1 + kappa) = A >= 1/2`` both steps are
    exact: ``A`` and 1 are multiples of ``ulp(A)`` (``A < 2^53``), so ``A - 1`` is a multiple of it below ``A`` in
    magnitude, a float. Elsewhere (``kappa < -1/2``), and where the result would be 0 for a non-zero ``kappa``,
    ``kappa`` is returned unchanged (the mechanisms then bound the rounding themselves)."""
    arr = np.asarray(kappa, dtype=np.float64)
    snapped = (1.0 + arr) - 1.0
    keep = (1.0 + arr < 0.5) | ((snapped == 0.0) & (arr != 0.0)) | ~np.isfinite(arr)
    return np.where(keep, arr, snapped)[()]


def log_shift_error(log_upper: Callable[[np.ndarray], np.ndarray], t: ArrayLike, shift: ArrayLike) -> np.ndarray:
    """Proven upper bounds on ``log |G(t + shift + iv) - G(t + iv)|`` for every real ``v`` (module docstring;
    ``-inf`` where ``shift = 0``), elementwise over the floats ``t`` and offsets ``shift``; ``log_upper`` gives
    proven upper bounds on ``log G`` at an array of real floats (one call for all the points). Each ``eta`` of
    :data:`SHIFT_REACHES` gives a bound (the two points ``t +- (eta + |shift|)`` rounded outward; ``|shift| /
    eta`` and the sum rounded up); the smallest is returned (``eta`` near ``1 / |Y|`` on the tilted law is best:
    large tilts of a wide loss need a small one)."""
    t, e = np.broadcast_arrays(np.asarray(t, dtype=np.float64), np.abs(np.asarray(shift, dtype=np.float64)))
    out = np.full(t.shape, -np.inf)
    where = e != 0.0
    if not where.any():
        return out[()]
    etas = np.asarray(SHIFT_REACHES)[:, None]
    reach = np.nextafter(etas + e[where][None, :], np.inf)
    up = np.nextafter(t[where][None, :] + reach, np.inf)
    down = np.nextafter(t[where][None, :] - reach, -np.inf)
    values = np.asarray(log_upper(np.concatenate([up.ravel(), down.ravel()])), dtype=np.float64)
    values = values.reshape((2,) + up.shape)
    log_sum = np.logaddexp(values[0], values[1])
    log_ratio = np.log(e[where][None, :] / etas)
    with np.errstate(invalid="ignore"):
        bounds = log_sum + log_ratio + 1e-12 * (np.abs(log_sum) + np.abs(log_ratio) + 1.0)
    out[where] = np.min(np.where(np.isnan(bounds), np.inf, bounds), axis=0)
    return out[()]


def convex_bracket(value: np.ndarray, shift: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(where, other)``: the entries of the float arguments ``value`` whose exact argument ``value + shift``
    differs from them, and for each the next float towards it (the exact argument lies between the two, because
    ``|shift|`` is at most half a spacing, or lies beyond ``value`` by less than a spacing). A convex function's
    value at the exact argument is at most the larger of its values at the two floats."""
    value, shift = np.asarray(value, dtype=np.float64), np.asarray(shift, dtype=np.float64)
    where = shift != 0.0
    other = np.nextafter(value[where], np.where(shift[where] > 0.0, np.inf, -np.inf))
    return where, other
