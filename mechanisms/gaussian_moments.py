"""Binomial moments of the Gaussian likelihood ratio, rounded up: the forward differences behind Wang, Balle &
Kasiviswanathan 2019's Thm 27 (the subsampled-Gaussian refinement of their Thm 9 for sampling without replacement).

For the Gaussian mechanism with ``c = sensitivity^2 / (2 sigma^2)`` the pair ``(P, Q) = (N(mu, 1), N(0, 1))``,
``mu^2 = 2 c``, has ``E_Q[(P/Q)^k] = exp(k (k - 1) c)`` for every integer ``k >= 0``. With
``g(k) = exp(k (k - 1) c)`` (so ``g(0) = g(1) = 1`` and ``g(k) = e^((k-1) eps(k))`` for the Gaussian's RDP curve
``eps(k) = k c``), the ``m``-th forward difference at 0 is the ``m``-th binomial moment of the likelihood ratio::

    Delta^m g(0) = sum_{k=0}^{m} (-1)^(m-k) C(m, k) g(k) = E_Q[(P/Q - 1)^m],

non-negative for even ``m``. WBK19 Thm 27 bounds the ``j``-th term of their Thm 9 series by
``4 sqrt(Delta^(2 floor(j/2)) g(0) * Delta^(2 ceil(j/2)) g(0))`` (Cauchy-Schwarz between the neighbouring even
moments for odd ``j``).

Numerics. The alternating sum cancels catastrophically (its terms reach ``2^m g(m)`` while the result can be many
orders of magnitude smaller), so it is evaluated in exact integer interval arithmetic: each ``g(k)`` is enclosed by
:mod:`mpmath`'s interval ``exp`` (directed rounding) at ample precision and scaled to integers
``[floor(2^P g_lo), ceil(2^P g_hi)]``; the forward differences of intervals are exact integer subtractions
(``[a, b] - [c, d] = [a - d, b - c]``), so every reported value is the upper end of a true enclosure. If an
enclosure is wider than ``2^-40`` of its value, the precision is doubled and the table recomputed.
"""

from __future__ import annotations

import functools
import math
from fractions import Fraction

import numpy as np

__all__ = ["MOMENT_MAX_ORDER", "MOMENT_MAX_BITS", "log_gaussian_binomial_moments"]

#: Largest moment order computed (WBK19 Thm 27 terms beyond it use their Thm 9 term, which is larger).
MOMENT_MAX_ORDER = 128

#: The table stops at the largest order ``m`` with ``log2 g(m) <= MOMENT_MAX_BITS`` (cost grows with it; where
#: ``g(m)`` is that large, the moment is within a factor 2 of ``g(m)`` and Thm 27 gains nothing over Thm 9).
MOMENT_MAX_BITS = 2500


def _log_up(num: int, scale_bits: int) -> float:
    """An upper bound on ``log(num * 2^-scale_bits)`` for a positive integer ``num`` (a few ulps above)."""
    from mpmath import iv, libmp

    saved = iv.prec
    try:
        iv.prec = 96
        value = iv.log(iv.mpf(num)) - scale_bits * iv.log(2)
        upper = libmp.to_float(value._mpi_[1], rnd="u")
    finally:
        iv.prec = saved
    return math.nextafter(upper, math.inf)


def _moment_table(c: Fraction, top: int, prec: int) -> list[tuple[int, int]] | None:
    """Integer enclosures ``[lo, hi]`` of ``2^prec Delta^m g(0)`` for ``m = 0..top``; None if too wide."""
    from mpmath import iv, libmp

    log2_gmax = float(top * (top - 1) * c) / math.log(2.0)
    saved = iv.prec
    try:
        iv.prec = prec + int(log2_gmax) + 64
        c_iv = iv.mpf(c.numerator) / c.denominator
        scale = iv.mpf(2) ** prec
        row = []
        for k in range(top + 1):
            lo, hi = (iv.exp(iv.mpf(k * (k - 1)) * c_iv) * scale)._mpi_
            row.append((libmp.to_int(lo, "f"), libmp.to_int(hi, "c")))
    finally:
        iv.prec = saved
    out = [row[0]]
    for _ in range(top):
        row = [(row[i + 1][0] - row[i][1], row[i + 1][1] - row[i][0]) for i in range(len(row) - 1)]
        out.append(row[0])
    for m in range(2, top + 1, 2):
        lo, hi = out[m]
        if lo <= 0 or (hi - lo) * (1 << 40) > hi:
            return None
    return out


@functools.lru_cache(maxsize=64)
def _log_moments_cached(numerator: int, denominator: int) -> tuple[float, ...]:
    c = Fraction(numerator, denominator)
    top = 2
    while top < MOMENT_MAX_ORDER and float((top + 1) * top * c) / math.log(2.0) <= MOMENT_MAX_BITS:
        top += 1
    top -= top % 2  # even, so every odd order below it has both even neighbours
    # start with the bits of the largest term plus the differencing growth (2^top) plus a margin
    prec = int(float(top * (top - 1) * c) / math.log(2.0)) + top + 128
    for _ in range(8):
        table = _moment_table(c, top, prec)
        if table is not None:
            break
        prec *= 2
    else:  # pragma: no cover - only for absurd inputs (c below ~1e-300 is handled by the caller)
        raise ArithmeticError("the binomial moments of the Gaussian ratio could not be enclosed tightly enough")
    logs = []
    for m, (lo, hi) in enumerate(table):
        if m % 2 == 1:
            logs.append(math.nan)  # odd moments are not used (Thm 27 uses the even neighbours)
        else:
            logs.append(_log_up(max(abs(lo), abs(hi)), prec) if hi > 0 else -math.inf)
    return tuple(logs)


def log_gaussian_binomial_moments(c: Fraction) -> np.ndarray:
    """Upper bounds on ``log Delta^m g(0) = log E_Q[(P/Q - 1)^m]`` for even ``m``, Gaussian pair, ``m = 0..M``.

    ``g(k) = exp(k (k - 1) c)``, ``c = sensitivity^2 / (2 sigma^2)`` given exactly as a fraction (see the module
    docstring). Odd entries are NaN (not computed). ``M`` is even, at most ``MOMENT_MAX_ORDER``, and smaller when
    ``g(M)`` would exceed ``2^MOMENT_MAX_BITS``. Every value is the upper end of an exact interval enclosure,
    rounded up; cached per ``c``.

    Parameters
    ----------
    c : fractions.Fraction
        ``sensitivity^2 / (2 sigma^2) > 0``.

    Returns
    -------
    numpy.ndarray of float64
        ``log`` upper bounds indexed by ``m`` (entry 0 is ``log 1 = 0``; entry 2 is ``log(e^(2c) - 1)``).

    Examples
    --------
    >>> import math
    >>> v = log_gaussian_binomial_moments(Fraction(1, 8))
    >>> bool(math.log(math.expm1(0.25)) <= v[2] <= math.log(math.expm1(0.25)) + 1e-12)
    True
    """
    if not isinstance(c, Fraction) or not c > 0:
        raise ValueError(f"`c` of log_gaussian_binomial_moments must be a positive Fraction; got {c!r}.")
    return np.array(_log_moments_cached(c.numerator, c.denominator), dtype=np.float64)
