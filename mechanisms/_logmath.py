"""Log-space helpers shared by the mechanisms and accountants (thesis Remark 2.3.8).

Small probabilities are carried as logarithms; sums with signs are carried as (log magnitude, sign) pairs.
"""

import numpy as np
from scipy import special

__all__ = ["log_binom", "log_expm1", "log1p_exp", "signed_logsumexp", "ROUNDING"]

#: Relative slack added before a logarithm whenever a sum of several float64 terms must be rounded up.
ROUNDING = 64 * np.finfo(np.float64).eps


def log_binom(n, k):
    """``(log |C(n, k)|, sign C(n, k))`` for real ``n`` >= 0 and integer ``k`` >= 0, broadcast.

    ``C(n, k) = Gamma(n + 1) / (Gamma(k + 1) Gamma(n - k + 1))``; for integer ``n`` and ``k > n`` it is zero
    (log -inf, sign 0). For non-integer ``n`` and ``k > n + 1`` the sign alternates (that of Gamma(n - k + 1)).
    """
    n = np.asarray(n, dtype=np.float64)
    k = np.asarray(k, dtype=np.float64)
    m = n - k + 1.0
    with np.errstate(divide="ignore", invalid="ignore"):
        log_abs = special.gammaln(n + 1.0) - special.gammaln(k + 1.0) - special.gammaln(m)
    sign = special.gammasgn(m)
    pole = (m <= 0) & (m == np.floor(m))
    log_abs = np.where(pole, -np.inf, log_abs)
    sign = np.where(pole, 0.0, sign)
    return log_abs, sign


def log_expm1(x):
    """``log(exp(x) - 1)`` for ``x`` >= 0, accurate for tiny and huge ``x``; -inf at 0."""
    x = np.asarray(x, dtype=np.float64)
    with np.errstate(divide="ignore"):
        small = np.log(np.expm1(np.minimum(x, 30.0)))
    large = x + np.log1p(-np.exp(-np.maximum(x, 30.0)))
    return np.where(x > 30.0, large, small)


def log1p_exp(x):
    """``log(1 + exp(x))`` without overflow or loss of precision for very negative ``x``."""
    return np.logaddexp(0.0, x)


def signed_logsumexp(log_abs, sign, axis=None):
    """``(log |sum|, sign of sum)`` of ``sign * exp(log_abs)`` along ``axis`` (thesis Remark 2.3.8)."""
    return special.logsumexp(log_abs, axis=axis, b=sign, return_sign=True)
