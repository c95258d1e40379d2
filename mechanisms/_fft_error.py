"""The 2-norm error of numpy's radix-2 real FFT (Higham, *Accuracy and Stability of Numerical Algorithms*, 2nd ed.,
Thm 24.2), a proven upper bound on a 2-norm, and the removal of a bounded error from a lower measure: shared by
every FFT whose error is bounded in 2-norm (:mod:`accountants.privacy_buckets`, :mod:`mechanisms.allocation_pld`)."""

from __future__ import annotations

import math

import numpy as np

from dpledger.mechanisms._logmath import EPS

__all__ = ["fft_rho", "norm2_upper", "shave_top"]

_U = EPS / 2


def fft_rho(n: int) -> float:
    """``rho``: numpy's real FFT (or inverse real FFT) of length ``n`` (a power of two) returns a transform whose
    error, over the full spectrum (the hermitian completion of the half it returns), has 2-norm at most ``rho``
    times the exact transform's: ``rho = 2 log2(n) eta / (1 - log2(n) eta)``, ``eta = mu + gamma_4 (sqrt 2 + mu)``,
    twiddle-factor error ``mu <= 8u`` (Higham Thm 24.2; the factor 2 for the real-input variant, whose half
    spectrum stands for both halves of the full one)."""
    log2n = math.log2(n)
    eta = 8 * _U + 4 * _U / (1 - 4 * _U) * (math.sqrt(2.0) + 8 * _U)
    return 2.0 * log2n * eta / (1.0 - log2n * eta)


def norm2_upper(x) -> float:
    """An upper bound on ``||x||_2`` (``x`` non-negative and finite), by numpy's own single-threaded sum
    (``numpy.linalg.norm`` is a BLAS dot product, whose threads wake for every call: ~10 ms each on a busy two-core
    machine, most of a ledger's bucket time; and its squares underflow for entries below ~1e-154).

    With ``m = max x`` and ``y = x / m`` (each within ``u`` relative, or ``2^-1075`` absolute below the normal range),
    each square within ``u`` relative (or ``2^-1075`` absolute) and their sum, in any order, within
    ``gamma_(n-1)`` of the sum of the rounded squares (Higham, *Accuracy and Stability*, eq. 3.4; non-negative
    terms), the exact ``sum (x/m)^2`` is at most ``(computed + n 2^-1073) (1 + 2 (n + 4) u)``; the computed sum is
    at least 1 (the largest entry's square is exactly 1). The products and the square root add three roundings,
    covered by the last factor."""
    m = float(np.max(x)) if x.size else 0.0
    if m == 0.0:
        return 0.0
    total = float(np.sum(np.square(x / m)))
    return m * math.sqrt((total + x.size * 2.0**-1073) * (1.0 + 2.0 * (x.size + 4) * _U)) * (1.0 + 4.0 * _U)


def shave_top(values: np.ndarray, amount: float) -> np.ndarray:
    """``values`` (non-negative, in order of increasing loss) less at least ``amount`` of mass taken from the top
    entries (how a lower measure gives up a bounded FFT error: its upper tails only shrink); a new array, or
    ``values`` itself where ``amount <= 0``. Entry ``i`` keeps ``max(0, min(v_i, C_i - amount))``, ``C_i`` the sum
    of entries ``i`` and above (computed sums within ``n u`` relative: ``amount`` is raised by that much of the
    total)."""
    if amount <= 0.0:
        return values
    rev = values[::-1]
    cs = np.cumsum(rev)
    amount = amount * (1.0 + 1e-9) + values.size * _U * float(cs[-1]) * 2.0
    return np.maximum(0.0, np.minimum(rev, cs - amount))[::-1]
