"""The first-order part of a split Laplace ledger, in closed form (:func:`accountants._fourier_atoms.laplace_split`).

A Laplace loss (``t`` = sensitivity / scale, the pair symmetric) is ``M = A + C``: atoms ``+t`` (mass 1/2) and
``-t`` (mass ``e^-t / 2``), and a continuous part ``C`` of density ``e^((L - t) / 2) / 4`` on ``(-t, t)`` (the
outputs between the two means; ``C / A = t tanh(w / 2) / w``, ``w = t (1 + 2s)``, as in
:func:`mechanisms.closed_form_enclosures.laplace_split_enclosure`). The split's rest ``R = D (prod (1 + r_i)^n_i -
1)``, ``r_i = C_i / A_i``, is every product with at least one continuous factor. Its terms with exactly one,

    R_1 = sum_i n_i C_i D / A_i,

decay like ``1 / |s|`` only and set the inversion's nodes (Laplace x 25: 65,536); they are priced exactly here
instead. ``D / A_i`` is the all-atom part with one run of group ``i`` fewer (enumerated), and one continuous run has
the profile (integrating the density, ``c = eps - l`` the outcome's remaining budget)::

    g_t(c) = int (1 - e^(c - L))_+ dC(L) = 0                                  for c >= t,
                                          (1 - e^((c - t) / 2))^2 / 2          for -t < c < t,
                                          (1 - e^-t) (1 - e^c) / 2              for c <= -t,

non-increasing in ``c`` (as every profile), so ``delta_1(eps) = sum_i n_i sum_o P_o g_(t_i)(eps - l_o)`` is bounded as
the atoms' delta is (:meth:`accountants.two_point_ledger.TwoPointLedger.kernel_bounds`). What is left,

    R_2 = D (e^Z - 1 - W),   Z = sum_i n_i log(1 + r_i),   W = sum_i n_i r_i,

(products with two or more continuous factors) decays like ``1 / |s|^2``, so its inversion needs far fewer nodes
(:func:`second_order`, :func:`second_order_sup_factor`), and where the ledger has a single Laplace run there is
none. ``e^Z - 1 - W`` is formed as ``(e^Z - 1 - Z) + sum_i n_i (log(1 + r_i) - r_i)``, each part by its Taylor
series near 0 (no cancellation: ``e^Z - 1 - W ~ W^2 / 2``), with every rounding, remainder and input error bounded.
"""

from __future__ import annotations

import math

import numpy as np

from dpledger.accountants.report import Bounds
from dpledger.mechanisms import _logmath, closed_form_enclosures

__all__ = ["ExactParts", "FirstOrder", "continuous_profile", "second_order", "second_order_sup_factor"]

_U = _logmath.EPS / 2.0
#: Below these moduli the Taylor series serve (their remainders and roundings bounded), above the direct forms.
_SERIES_Z, _SERIES_R = 0.5, 0.25
#: Terms of the series: remainders below 2^-60 of the leading term's scale at the switch points.
_TERMS_Z, _TERMS_R = 24, 36


def continuous_profile(c: np.ndarray, t: float) -> tuple[np.ndarray, np.ndarray]:
    """``(g~, relative error bound)`` of one continuous Laplace run's profile ``g_t(c)`` (module docstring) at the
    floats ``c``, for ``t > 0``.

    Middle branch: ``y = (c - t) / 2`` within ``u`` of itself (one subtraction; halving is exact), so ``expm1(y)``
    within ``2u`` plus ``u |y e^y / expm1(y)| <= u (1 + |y|)``; squared and halved: at most ``(7 + 2 |y|) u``. Lower
    branch: two ``expm1`` of floats (2u each) and two products: ``6u``. Both with room to ``(10 + 2 |y|) u``."""
    c = np.asarray(c, dtype=np.float64)
    y = np.minimum((c - t) / 2.0, 0.0)
    middle = 0.5 * np.expm1(y) ** 2
    with np.errstate(over="ignore"):
        lower = 0.5 * -np.expm1(-t) * -np.expm1(np.minimum(c, 0.0))
    value = np.where(c >= t, 0.0, np.where(c > -t, middle, lower))
    return value, (10.0 + 2.0 * np.abs(y)) * _U


class FirstOrder:
    """``delta_1`` of the module docstring: ``sum_i n_i sum_o P_o k_i(eps - l_o)`` over the groups ``(k_i, n_i,
    ledger_i)``, ``k_i`` one continuous run's profile (``c -> (k~, relative error bound)``: a Laplace group's
    :func:`continuous_profile`, a subsampled Laplace group's
    :func:`mechanisms.subsampled_laplace_cf.continuous_profile`), ``ledger_i`` the all-atom part with one run of
    group ``i`` fewer (every outcome enumerated)."""

    def __init__(self, parts):
        self.parts = tuple(parts)

    def delta_bounds(self, epsilon: float) -> Bounds:
        lower = estimate = upper = 0.0
        for kernel, n, ledger in self.parts:
            b = ledger.kernel_bounds(epsilon, kernel)
            lower, estimate, upper = lower + n * b.lower, estimate + n * b.estimate, upper + n * b.upper
        slack = 4.0 * (len(self.parts) + 1) * _U  # the products by n and the additions, each within u
        return Bounds(lower=lower * (1.0 - slack), estimate=estimate, upper=upper * (1.0 + slack))


class ExactParts:
    """The atoms' delta plus the first-order part's (each a proven bracket; the sum rounded outwards)."""

    def __init__(self, atoms, first):
        self.atoms, self.first = atoms, first

    def delta_bounds(self, epsilon: float) -> Bounds:
        a, f = self.atoms.delta_bounds(epsilon), self.first.delta_bounds(epsilon)
        return Bounds(lower=max((a.lower + f.lower) * (1.0 - 2.0 * _U), 0.0), estimate=a.estimate + f.estimate,
                      upper=min((a.upper + f.upper) * (1.0 + 2.0 * _U), 1.0))


def _series(x, coefficients):
    """``sum_k coefficients[k] x^k`` by Horner's rule (complex ``x``) and the absolute bound on its rounding:
    ``(4K + 8) u sum_k |c_k| |x|^k`` (Higham, *Accuracy and Stability*, eq. 5.3, a complex product within ``sqrt 2
    gamma_2`` of each, generously)."""
    value = np.zeros(x.shape, dtype=np.complex128)
    magnitude = np.zeros(x.shape)
    ax = np.abs(x)
    for c in coefficients[::-1]:
        value = value * x + c
        magnitude = magnitude * ax + abs(c)
    return value, (4.0 * len(coefficients) + 8.0) * _U * magnitude * 1.01


_PHI = np.array([1.0 / math.factorial(k) for k in range(2, _TERMS_Z + 1)])  # e^Z - 1 - Z = Z^2 sum Z^k / (k+2)!
_H = np.array([(-1.0) ** (k + 1) / k for k in range(2, _TERMS_R + 1)])  # log1p(r) - r = r^2 sum ...


def _phi(z, d_z):
    """``(phi~, absolute bound)``: ``phi(Z) = e^Z - 1 - Z`` at ``Z`` known within ``d_z``, ``|Re Z| <= 700``: the
    series for ``|Z| <= 1/2`` (remainder ``<= 2 |Z|^(K+1) / (K+1)!``), else ``expm1(Z) - Z``
    (:func:`mechanisms.closed_form_enclosures._expm1_rounding` plus ``u`` of each magnitude); the input error times
    the largest ``|phi'| = |e^w - 1|`` within ``d_z``: ``(|e^Z - 1| + e^(Re Z) expm1(d_z)) d_z``."""
    small = np.abs(z) <= _SERIES_Z
    zs = np.where(small, z, 0.0)
    poly, poly_err = _series(zs, _PHI)
    series = zs * zs * poly
    az = np.abs(zs)
    series_err = (az * az * poly_err + 2.0 * az ** (len(_PHI) + 2) / math.factorial(len(_PHI) + 2)
                  + 4.0 * _U * np.abs(series))
    zd = np.where(small, 0.0, z)
    e1 = np.expm1(zd)
    direct = e1 - zd
    direct_err = closed_form_enclosures._expm1_rounding(zd) + 2.0 * _U * (np.abs(e1) + np.abs(zd) + np.abs(direct))
    value = np.where(small, series, direct)
    slope = np.abs(np.expm1(z)) + np.exp(np.real(z)) * np.expm1(d_z)
    return value, (np.where(small, series_err, direct_err) + slope * d_z) * 1.01


def _h(r, d_r):
    """``(h~, absolute bound)``: ``h(r) = log(1 + r) - r`` at ``r`` known within ``d_r`` (``|r| < 1``): the series for
    ``|r| <= 1/4`` (remainder ``<= |r|^(K+1) / ((K+1) (1 - |r|))``), else ``log1p(r) - r``
    (:func:`mechanisms.closed_form_enclosures.log_rounding_at` and ``u`` of each magnitude); the input error times
    ``|h'| = |r / (1 + r)|`` at most ``(|r| + d) / (1 - |r| - d)`` within ``d_r`` (``inf`` where that reaches 1)."""
    ar = np.abs(r)
    small = ar <= _SERIES_R
    rs = np.where(small, r, 0.0)
    poly, poly_err = _series(rs, _H)
    series = rs * rs * poly
    ars = np.abs(rs)
    k = len(_H) + 2
    series_err = ars * ars * poly_err + ars ** k / (k * (1.0 - ars)) + 4.0 * _U * np.abs(series)
    rd = np.where(small, 0.0, r)
    with np.errstate(divide="ignore", invalid="ignore"):
        log1p = np.log1p(rd)
        direct = log1p - rd
        direct_err = (closed_form_enclosures.log_rounding_at(log1p)
                      + 2.0 * _U * (np.abs(log1p) + np.abs(rd) + np.abs(direct)))
        reach = ar + d_r
        slope = np.where(reach < 1.0, reach / (1.0 - reach), np.inf)
    return np.where(small, series, direct), (np.where(small, series_err, direct_err) + slope * d_r) * 1.01


def second_order(z, d_z, ratios):
    """``(log F~, log E)``: ``|F - e^(log F~)| <= E`` for ``F = e^Z - 1 - W`` (module docstring), ``Z`` within
    ``d_z`` and each ``(n_i, r_i, d_r_i)`` of ``ratios`` with ``r_i`` within ``d_r_i``.

    Where ``Re Z > 700`` (``e^Z`` overflows: ten thousand runs and more), ``log F = Z + log(1 - (1 + W) e^-Z)``
    with ``|(1 + W) e^-Z| <= 1/2`` (else no bound): ``log1p`` within its rounding, ``Z`` within ``d_z``, and the
    argument's error (``(d_W + |1 + W| d_z (1.01)) e^-Re Z``, ``d_W = sum n_i d_r_i``) doubled through ``log(1 - x)``
    at ``|x| <= 1/2``; the absolute bound is then ``|F~| expm1`` of that (logs of both)."""
    h_total = np.zeros(z.shape, dtype=np.complex128)
    h_err = np.zeros(z.shape)
    w = np.zeros(z.shape, dtype=np.complex128)
    d_w = np.zeros(z.shape)
    for n, r, d_r in ratios:
        h, e = _h(r, d_r)
        h_total = h_total + n * h
        h_err = h_err + n * e + 2.0 * _U * (np.abs(n * h) + np.abs(h_total))
        w = w + n * r
        d_w = d_w + n * d_r + 2.0 * _U * (np.abs(n * r) + np.abs(w))
    big = np.real(z) > 700.0
    zm = np.where(big, 0.0, z)
    phi, phi_err = _phi(zm, np.where(big, 0.0, d_z))
    f = phi + h_total
    f_err = (phi_err + h_err + 2.0 * _U * (np.abs(phi) + np.abs(h_total) + np.abs(f))) * 1.01
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        log_f = np.log(f)
        log_err = np.log(f_err)
        # large Z: log F = Z + log1p(-x), x = (1 + W) e^-Z
        zb = np.where(big, z, 800.0)
        x = (1.0 + w) * np.exp(-zb)
        tail = np.log1p(-x)
        log_big = zb + tail
        ok = np.abs(x) <= 0.5
        d_x = (d_w + np.abs(1.0 + w) * d_z * 1.01) * np.exp(-np.real(zb)) * 1.01 + 4.0 * _U * np.abs(x)
        d_log = (d_z + 2.0 * d_x + closed_form_enclosures.log_rounding_at(tail)
                 + 2.0 * _U * (np.abs(zb) + np.abs(log_big)))
        big_err = np.where(ok, np.real(log_big) + np.log(np.expm1(d_log) * 1.01), np.inf)
    value = np.where(big, log_big, log_f)
    error = np.where(big, big_err, log_err)
    return value, error + 4.0 * _logmath.EPS * (np.abs(error) + 1.0)


def second_order_sup_factor(x: float) -> float:
    """An upper bound on ``log(e^x - 1 - x)`` for ``x >= 0`` (``-inf`` at 0): ``2 log x - log 2 + x`` below ``1e-3``
    (``e^x - 1 - x <= x^2 e^x / 2``), else ``log(expm1(x) - x)`` (``x + log(1 - (1 + x) e^-x)`` beyond 700), raised by
    ``1e-9`` relative to its parts (the difference loses at most a factor 2000 of the ulps at 1e-3)."""
    if x <= 0.0:
        return -math.inf
    if x < 1e-3:
        value = 2.0 * math.log(x) - math.log(2.0) + x
    elif x <= 700.0:
        value = math.log(math.expm1(x) - x)
    else:
        value = x + math.log1p(-(1.0 + x) * math.exp(-x))
    return value + 1e-9 * (abs(value) + x + 1.0)
