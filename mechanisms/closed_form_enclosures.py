"""The closed-form log MGFs of :mod:`mechanisms.privacy_loss` with their float64 rounding bounded.

Each function returns ``(log m~, log E)``: ``log m~`` computed by the same float operations as the plain closed
form, and ``|m(s) - e^(log m~)| <= E`` for the exact ``m`` of the pair. The composed law of ``n`` runs is ``m^n``,
formed as ``e^(n log m~)``, and :func:`mechanisms._logmath.log_product_error` turns ``E`` into a bound on
``|m^n - e^(n log m~)|``: about ``n E / |m|`` relative, whatever ``|log m|`` is.

Why it is needed: the Fourier inversion bounds each node's float error by a few ulps of ``8 + |log M|``
(:attr:`accountants.fourier_inversion.InversionPlan.contour`), but a per-run log carries an *absolute* error of a
few ulps of the terms it is formed from, even where it is small (cancellation; numpy's complex ``log1p`` is
``log(hypot(1 + x, y))``, which loses the relative accuracy of small arguments: ``log1p(1e-10 + 0j)`` is off by 8e-9
relative). Composed ``n`` times that is ``n`` times larger, not ``|log M|`` times: against mpmath, Gaussian x 10 plus
randomized response x 10^5 reached 4.3 times the inversion's allowance, the Laplace split's rest 40 times at 10^4 runs.

Error model (that of :mod:`mechanisms._logmath`): IEEE binary64, ``u = 2^-53``; ``+ - * /`` of reals within ``u``
relative; ``exp``, ``expm1``, ``log``, ``log1p``, ``sin``, ``cos``, ``atan2``, ``hypot``, ``tanh`` within one ulp
(``2u`` relative) each. For numpy's complex operations this gives, with ``eps = 2u`` (each bound generous by at least
a factor 1.5 over the first-order count, which covers the second-order terms for the arguments met here):

* ``a + b``: ``u |a + b|``; ``x * r`` (``r`` real): ``u |x r|``; ``x * y``: ``sqrt(2) 2u |x| |y| < eps |x| |y|``;
  ``x / y`` (Smith's algorithm): ``4 eps |x / y|``.
* ``exp(w)`` = ``e^a (cos b + i sin b)``: ``2 eps |e^w|``.
* ``log(w)`` = ``log hypot(a, b) + i atan2(b, a)``: ``eps (|log |w|| + pi + 2)``; ``log1p(z)`` is ``log(fl(1 + z))``
  (numpy's loop), within ``eps (|log |1 + z|| + pi + 3)`` of ``log(1 + z)``: absolute, *not* relative to
  ``|log1p(z)|``.
* ``expm1(w)`` = ``expm1(a) cos b - 2 sin^2(b / 2) + i e^a sin b``: ``3 eps (|expm1 a| + 2 min(1, b^2 / 4) + e^a
  min(1, |b|))``, absolute.
* ``tanh(w)``: ``4 eps |tanh w|``.

An error ``d`` in an argument moves a value through its derivative: ``|e^(w + d) - e^w| <= |e^w| expm1(|d|)``,
``|log(w + d) - log w| <= 2 |d| / |w|`` for ``|d| <= |w| / 2`` (where that fails, the bound is ``inf``: no
enclosure, never a wrong one). The add direction and the complement contour reflect ``s -> -1 - s`` (the pairs here
are symmetric); that float is exact for ``-2^53 < Re s < -1/2`` (Sterbenz below 1 in magnitude; beyond, ``|Re s|``
and 1 are multiples of ``ulp(|Re s|) <= 1``, and so is their difference, which is smaller); where it is not, a real
``s`` pays ``max |L|`` times the offset (the real log MGF's slope is the tilted mean of ``L``) and a complex one gets
``inf``.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike

from dpledger.mechanisms._logmath import EPS
from dpledger.mechanisms._tilts import two_sum

__all__ = [
    "bernoulli_log_mgf_enclosure",
    "gaussian_log_mgf_enclosure",
    "laplace_log_mgf_enclosure",
    "laplace_split_enclosure",
    "log_error_from_log",
    "log_rounding_at",
    "upper_from_enclosure",
    "log_expm1_enclosure",
    "log_of_perturbed",
    "atoms_log_mgf_enclosure",
    "bernoulli_terms",
    "reflect",
]

_U = EPS / 2.0


def log_error_from_log(value: ArrayLike, bound: ArrayLike) -> np.ndarray:
    """``log E`` with ``|m - e^value| <= E`` for every ``m`` with ``|log m - value| <= bound`` (modulo ``2 pi i``):
    ``|e^value| |e^d - 1| <= |e^value| expm1(bound)``, formed in logs and raised by a few ulps of its parts;
    ``-inf`` where ``bound`` is 0 (an exact value), ``inf`` where the bound or ``value`` is not finite."""
    re = np.real(np.asarray(value, dtype=np.complex128))
    bound = np.asarray(bound, dtype=np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        log_gap = np.log(np.expm1(bound)) + np.log1p(2.0 * EPS)
        out = re + log_gap + 4.0 * EPS * (np.abs(re) + np.abs(log_gap) + 1.0)
    # no bound where the bound or the value is not finite (a value of -inf, M~ = 0, says nothing of |M|)
    out = np.where(np.isfinite(bound) & np.isfinite(re), out, np.inf)
    out = np.where(bound == 0.0, -np.inf, out)
    return out[()]


def upper_from_enclosure(value: ArrayLike, log_error: ArrayLike) -> np.ndarray:
    """A proven upper bound on ``log m`` at a real argument from an enclosure ``|m - e^value| <= e^log_error``:
    ``log(|e^value| + e^log_error)``, raised by ``2 eps`` of its magnitude (``logaddexp``'s rounding)."""
    upper = np.logaddexp(np.real(value), log_error)
    return np.asarray(upper + 4.0 * EPS * (np.abs(upper) + 1.0), dtype=np.float64)[()]


def log_rounding_at(log_w: ArrayLike) -> np.ndarray:
    """Bound on the float error of numpy's complex ``log(w)`` (or ``log1p(z)`` with ``w = 1 + z``), from the
    computed ``log w`` itself (module docstring): ``eps (|log |w|| + pi + 3)``, with ``log |w|`` its real part (to a
    few ulps, which the constant covers)."""
    return EPS * (np.abs(np.real(log_w)) + np.pi + 3.0)


def log_of_perturbed(w: ArrayLike, error: ArrayLike) -> np.ndarray:
    """``|log(w + d) - log(w)|`` for ``|d| <= error`` (``2 error / |w|``; ``inf`` where ``error > |w| / 2``)."""
    ratio = np.asarray(error, dtype=np.float64) / np.abs(w)
    with np.errstate(invalid="ignore"):
        return np.where(ratio <= 0.5, 2.0 * ratio, np.inf)


def _expm1_rounding(w):
    """Absolute float error of numpy's complex ``expm1(w)`` (module docstring)."""
    a, b = np.real(w), np.abs(np.imag(w))
    return 3.0 * EPS * (np.abs(np.expm1(a)) + 2.0 * np.minimum(1.0, b * b / 4.0) + np.exp(a) * np.minimum(1.0, b))


def reflect(s: np.ndarray, slope: float) -> tuple[np.ndarray, np.ndarray]:
    """``(z, d)``: ``z = -1 - s`` where ``Re s < -1/2`` (the pairs here are symmetric: ``m(s) = m(-1 - s)``), else
    ``s``, and a bound ``d`` on what the rounding of ``-1 - s`` moves ``log m`` by: 0 where the float is exact, ``slope
    |offset|`` at real ``s`` (``slope >= max |L|``), ``inf`` at complex ``s`` (module docstring)."""
    flip = s.real < -0.5
    z = np.where(flip, -1.0 - s, s)
    _, offset = two_sum(-1.0, -s.real)
    offset = np.where(flip, np.abs(offset), 0.0)
    d = np.where(offset == 0.0, 0.0, np.where(s.imag == 0.0, slope * offset * (1.0 + 4.0 * EPS), np.inf))
    return z, d


def gaussian_log_mgf_enclosure(
    s: ArrayLike, mu2: float, mu2_relative_error: float = 0.0
) -> tuple[np.ndarray, np.ndarray]:
    """``(log m~, log E)`` of ``mu^2 s (s + 1) / 2`` computed as ``0.5 (s (s + 1)) mu2``
    (:func:`mechanisms.privacy_loss.gaussian_log_mgf` at ``mu = 1`` times ``mu2``), where the float ``mu2`` is within
    ``mu2_relative_error`` (relative) of the exact ``mu^2``.

    ``s + 1`` (``u``), the complex product (``eps``), the two real scalings (``u`` each): ``3 eps`` of ``|log m~|``
    with the factor 1.5 of the module docstring, plus ``mu2_relative_error`` of it."""
    s = np.asarray(s, dtype=np.complex128)
    value = 0.5 * s * (s + 1.0) * mu2
    bound = (3.0 * EPS + mu2_relative_error) * np.abs(value) * (1.0 + 4.0 * EPS)
    return value, log_error_from_log(value, bound)


def bernoulli_terms(z: np.ndarray, e: ArrayLike) -> tuple[np.ndarray, np.ndarray]:
    """``(log m~, bound on |log m - log m~|)`` of ``log(p* e^(zE) + (1 - p*) e^(-zE))``, ``p* = 1 / (1 + e^-E)``, at
    ``Re z >= -1/2`` (already reflected), elementwise over broadcast ``z`` and ``E > 0``, computed as
    :func:`mechanisms.privacy_loss.bernoulli_log_mgf` does: ``log p* + zE + log1p(e^(-E - 2zE))``.

    Parts: ``log p* = -log1p(e^-E)`` within ``2 eps |log p*|``; ``zE`` within ``u |zE|``; their sum ``u`` of it;
    ``w = -E - 2zE`` within ``u (2|zE| + |w|)``, so ``Z = e^w`` within ``|Z| (2 eps + expm1(dw))``; ``log1p(Z)``
    within :func:`log_rounding_at` plus ``2 dZ / |1 + Z|``; the final sum ``u |log m~|``."""
    e = np.asarray(e, dtype=np.float64)
    log_p = -np.log1p(np.exp(-e))
    ze = z * e
    w = -e - 2.0 * z * e
    big_z = np.exp(w)
    log1p = np.log1p(big_z)
    value = log_p + ze + log1p
    dw = _U * (2.0 * np.abs(ze) + np.abs(w)) * 1.5
    d_big_z = np.abs(big_z) * (2.0 * EPS + np.expm1(dw)) * 1.5
    bound = (2.0 * EPS * np.abs(log_p) + _U * (2.0 * np.abs(ze) + np.abs(log_p) + np.abs(value)) * 1.5
             + log_rounding_at(log1p) + log_of_perturbed(1.0 + big_z, d_big_z))
    return value, bound


def bernoulli_log_mgf_enclosure(s: ArrayLike, log_odds: float) -> tuple[np.ndarray, np.ndarray]:
    """``(log m~, log E)`` of the two-point pair with loss ``+-E``, ``E = |log_odds|``
    (:func:`mechanisms.privacy_loss.bernoulli_log_mgf`; :func:`bernoulli_terms`, after :func:`reflect`)."""
    s = np.asarray(s, dtype=np.complex128)
    e = abs(float(log_odds))
    z, d = reflect(s, e)
    value, bound = bernoulli_terms(z, e)
    return value, log_error_from_log(value, bound + d)


def laplace_log_mgf_enclosure(s: ArrayLike, t: float) -> tuple[np.ndarray, np.ndarray]:
    """``(log m~, log E)`` of the Laplace pair, computed as :func:`mechanisms.privacy_loss.laplace_log_mgf` does:
    ``zt + log(g / 2)``, ``g = 1 + e^-w + t r``, ``w = t (1 + 2z)``, ``r = -expm1(-w) / w`` (``1 - w / 2`` where
    ``|w| < 1e-8``).

    Parts: ``w`` within ``dw = 2u |w|`` (``1 + 2z``, then times ``t``); ``X = e^-w`` within ``|X| (2 eps +
    expm1(dw))``; ``r``: the numerator within :func:`_expm1_rounding` plus ``|X| expm1(dw)``, divided by ``|w|``,
    and ``|r| (4 eps + dw / |w|)`` for the division (the series: its remainder ``|w|^2 / 5`` and ``u (1 + |w|)``);
    ``g`` within ``dX + t (dr + u |r|) + u (|1 + X| + |g|)``; the log within :func:`log_rounding_at` plus ``2 dg /
    |g|``;
    ``zt`` and the final sum ``u`` each."""
    s = np.asarray(s, dtype=np.complex128)
    z, d = reflect(s, t)
    w = t * (1.0 + 2.0 * z)
    small = np.abs(w) < 1e-8
    w_safe = np.where(small, 1.0, w)
    numerator = -np.expm1(-w_safe)
    ratio = np.where(small, 1.0 - w / 2.0, numerator / w_safe)
    big_x = np.exp(-w)
    g = 1.0 + big_x + t * ratio
    log_half_g = np.log(0.5 * g)
    value = z * t + log_half_g
    dw = 2.0 * _U * np.abs(w) * 1.5
    d_big_x = np.abs(big_x) * (2.0 * EPS + np.expm1(dw)) * 1.5
    d_num = (_expm1_rounding(-w_safe) + np.abs(np.exp(-w_safe)) * np.expm1(dw)) * 1.5
    d_ratio = np.where(small, np.abs(w) ** 2 / 5.0 + 2.0 * _U * (1.0 + np.abs(w)),
                       d_num / np.abs(w_safe) + np.abs(ratio) * (4.0 * EPS + dw / np.abs(w_safe)) * 1.5)
    d_g = (d_big_x + t * (d_ratio + _U * np.abs(ratio)) + _U * (np.abs(1.0 + big_x) + np.abs(g))) * 1.5
    bound = (_U * (np.abs(z) * t + np.abs(value)) * 1.5 + log_rounding_at(log_half_g) + log_of_perturbed(g, d_g))
    return value, log_error_from_log(value, bound + d)


def laplace_split_enclosure(
    z: np.ndarray, t: float
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """``(log A~, bound on |log A - log A~|, r~, |r - r~|)`` for the Laplace loss split into its atoms and its
    continuous part, ``M = A + C``, at ``Re z >= -1/2`` (already reflected; the pair is symmetric). ``A(z) =
    (e^(-t(1+z)) + e^(zt)) / 2`` (loss ``-t`` with mass ``e^-t / 2``, ``+t`` with mass ``1/2``), so ``log A = zt +
    log((1 + e^-w) / 2)``, and ``r = C / A = tanh(w / 2) / (1 + 2z) = t tanh(w / 2) / w`` (``t (1 - w^2 / 12) / 2``
    where ``|w| < 1e-8``), ``w = t (1 + 2z)``, so ``|C| <= A(Re z) / |1 + 2z|`` (:mod:`mechanisms.privacy_loss`'s
    Laplace line for ``M``).

    Parts: ``w`` within ``dw = 2u |w|``; ``X = e^-w`` within ``|X| (2 eps + expm1(dw))``; the log as in
    :func:`laplace_log_mgf_enclosure`. ``tanh(w / 2)`` within ``4 eps |T|`` plus its slope ``|1 - T^2|`` times ``dw /
    2`` (first order: the argument's error is below a hundredth of ``Re w``, the distance to the nearest pole, else
    ``inf``); then times ``t`` (``u``) and over ``w`` (``4 eps`` and ``dw / |w|``). The series' remainder is below
    ``t |w|^4 / 100`` there, its rounding ``3 eps |r|``."""
    w = t * (1.0 + 2.0 * z)
    big_x = np.exp(-w)
    log_half = np.log(0.5 * (1.0 + big_x))
    log_a = z * t + log_half
    small = np.abs(w) < 1e-8
    w_safe = np.where(small, 1.0, w)
    tanh = np.tanh(w_safe / 2.0)
    ratio = np.where(small, 0.5 * t * (1.0 - w * w / 12.0), t * tanh / w_safe)
    dw = 2.0 * _U * np.abs(w) * 1.5
    d_big_x = np.abs(big_x) * (2.0 * EPS + np.expm1(dw)) * 1.5
    d_log_a = (_U * (np.abs(z) * t + np.abs(log_a)) * 1.5 + log_rounding_at(log_half)
               + log_of_perturbed(1.0 + big_x, d_big_x + _U * np.abs(1.0 + big_x) * 1.5))
    d_tanh = 4.0 * EPS * np.abs(tanh) + np.abs(1.0 - tanh * tanh) * dw / 2.0 * 1.5
    d_tanh = np.where(dw <= 0.01 * np.real(w), d_tanh, np.inf)
    d_ratio = np.where(small, t * np.abs(w) ** 4 / 100.0 + 3.0 * EPS * np.abs(ratio) + t * np.abs(w) * dw,
                       (t * d_tanh / np.abs(w_safe) + np.abs(ratio) * (5.0 * EPS + dw / np.abs(w_safe))) * 1.5)
    return log_a, d_log_a, ratio, d_ratio


def log_expm1_enclosure(z: np.ndarray, dz: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(value, log_abs_error)``: ``value = log(e^z - 1)`` of a complex ``z`` known within ``dz``, as
    ``log(expm1(z))`` where ``Re z <= 1``; ``z + log1p(-e^-z)`` beyond (``e^z`` overflows
    past 709, as ``n log(1 + r)`` of 10^4 Laplace runs does), where ``|d/dz log(e^z - 1)| = 1 / |1 - e^-z| <= 1 /
    (1 - e^-1) < 1.6``.

    ``|log(e^z - 1) - value|`` has no useful bound where ``e^z - 1`` is near 0, so the bound is absolute:
    ``|(e^z - 1) - e^value| <= e^log_abs_error`` (no division by ``|e^z - 1|``). Small branch:
    ``expm1`` within :func:`_expm1_rounding` plus ``|e^z| expm1(dz)``, and the log's rounding ``|e^value|
    expm1(log_rounding_at)``; large branch: ``1.6 dz`` plus the roundings of ``e^-z`` (``2 eps``, through ``log1p``'s
    ``2 / |1 - e^-z|``), of ``log1p`` and of the sum, all in the log."""
    z = np.asarray(z, dtype=np.complex128)
    large = z.real > 1.0
    value = np.empty(z.shape, dtype=np.complex128)
    log_err = np.empty(z.shape, dtype=np.float64)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        zs, dzs = z[~large], dz[~large]
        e1 = np.expm1(zs)
        value[~large] = np.log(e1)
        abs_err = (_expm1_rounding(zs) + np.abs(np.exp(zs)) * np.expm1(dzs)) * 1.5
        abs_err = abs_err + np.abs(e1) * np.expm1(log_rounding_at(value[~large]) * 1.5)
        log_err[~large] = np.log(abs_err) + 4.0 * EPS * (np.abs(np.log(abs_err)) + 1.0)
        zl, dzl = z[large], dz[large]
        tail = -np.exp(-zl)
        log1p_tail = np.log1p(tail)
        value[large] = zl + log1p_tail
        bound = (1.6 * dzl + log_rounding_at(log1p_tail)
                 + log_of_perturbed(1.0 + tail, 2.0 * EPS * np.abs(tail) * 1.5)
                 + _U * np.abs(value[large]) * 1.5)
        log_err[large] = log_error_from_log(value[large], bound)
    return value, log_err


def atoms_log_mgf_enclosure(s: ArrayLike, log_mass: np.ndarray, loss: np.ndarray, log_mass_error: np.ndarray,
                            loss_error: np.ndarray, block: int = 1 << 19) -> tuple[np.ndarray, np.ndarray]:
    """``(log m~, log E)`` of ``m(s) = sum_j e^(a_j + s l_j)`` (a discrete pair: ``a_j`` the log-masses, ``l_j`` the
    losses), computed as :func:`mechanisms.privacy_loss._complex_logsumexp` of ``a + s l`` does (``peak`` the largest
    real part, ``S = sum_j e^(t_j - peak)``, ``log S + peak``), where the floats ``a_j``, ``l_j`` are within
    ``log_mass_error``, ``loss_error`` of the exact pair's.

    Each exponent ``t_j`` within ``dt_j = da_j + |s| dl_j + u (|s l_j| + |t_j|)`` (product and sum), ``t_j - peak``
    within ``u`` of itself, each ``e^(t_j - peak)`` within ``|e^(.)| (expm1(dt_j + u |t_j - peak|) + 2 eps)``; their
    sum within ``J u`` of the sum of the moduli (Higham, recursive or pairwise); then ``|m - e^(log S~ + peak)| <=
    e^peak (dS + |S~| expm1(th))`` with ``th`` the log's rounding (:func:`log_rounding_at`) and the final sum's ``u |log
    m~|``: absolute, no division by ``|S|`` (near a zero of ``m`` the log is ill-conditioned, ``m`` is not). In
    blocks of at most ``block`` matrix entries."""
    s = np.asarray(s, dtype=np.complex128)
    flat = s.reshape(-1)
    value = np.empty(flat.shape, dtype=np.complex128)
    log_err = np.empty(flat.shape, dtype=np.float64)
    rows = max(1, block // max(loss.size, 1))
    for start in range(0, flat.size, rows):
        value[start : start + rows], log_err[start : start + rows] = _atoms_block(
            flat[start : start + rows, None], log_mass, loss, log_mass_error, loss_error)
    return value.reshape(s.shape), log_err.reshape(s.shape)


def _atoms_block(s, log_mass, loss, log_mass_error, loss_error):
    """:func:`atoms_log_mgf_enclosure` at a column of arguments."""
    terms = log_mass[None, :] + s * loss[None, :]
    peak = np.max(terms.real, axis=1, keepdims=True)
    peak = np.where(np.isfinite(peak), peak, 0.0)
    shifted = terms - peak
    parts = np.exp(shifted)
    total = np.sum(parts, axis=1)
    with np.errstate(divide="ignore"):
        log_total = np.log(total)
    value = log_total + peak[:, 0]
    dt = (log_mass_error[None, :] + np.abs(s) * loss_error[None, :]
          + _U * (np.abs(s * loss[None, :]) + np.abs(terms) + np.abs(shifted)) * 1.5)
    moduli = np.abs(parts)
    d_total = (np.sum(moduli * (np.expm1(dt) + 2.0 * EPS), axis=1) * 1.5
               + loss.size * _U * np.sum(moduli, axis=1) * 1.5)
    theta = (log_rounding_at(log_total) + _U * np.abs(value) * 1.5)
    with np.errstate(divide="ignore"):
        inner = np.log(d_total + np.abs(total) * np.expm1(theta))
    log_err = peak[:, 0] + inner + 4.0 * EPS * (np.abs(peak[:, 0]) + np.abs(inner) + 1.0)
    return value, log_err
