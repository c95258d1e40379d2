"""The 2-norm error of numpy's radix-2 real FFT (Higham, *Accuracy and Stability of Numerical Algorithms*, 2nd ed.,
Thm 24.2), shared by every FFT whose error is bounded in 2-norm (:mod:`accountants.privacy_buckets`,
:mod:`mechanisms.allocation_pld`)."""

from __future__ import annotations

import math

from dpledger.mechanisms._logmath import EPS

__all__ = ["fft_rho"]

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
