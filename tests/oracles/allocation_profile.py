"""Exact privacy profile of one epoch of random allocation, one of two Gaussian steps (mpmath, 1-D integrals).

Deliberately independent of ``mechanisms/`` and ``accountants/``. The dominating pair: ``P = (N(mu e_1, I) +
N(mu e_2, I)) / 2`` and ``Q = N(0, I_2)``; ``dP/dQ = s(x) = (e^(mu x_1 - mu^2/2) + e^(mu x_2 - mu^2/2)) / 2``.
Both events below are symmetric in ``(x_1, x_2)``, so their P-probability is that under ``x_1 ~ N(mu, 1)``,
``x_2 ~ N(0, 1)``. For fixed ``x_2`` each event is a half-line in ``x_1`` (``s`` increases in ``x_1``):

* removal, ``delta(eps) = P(s > e^eps) - e^eps Q(s > e^eps)``;
* addition (the pair ``(Q, P)``), ``delta(eps) = Q(s < e^-eps) - e^eps P(s < e^-eps)``.
"""

import mpmath


def delta(epsilon, mu, remove, dps=20):
    with mpmath.workdps(dps):
        mu = mpmath.mpf(mu)
        e = mpmath.e ** mpmath.mpf(epsilon)
        half = mu * mu / 2

        def cut(x2, level):
            rest = 2 * level - mpmath.e ** (mu * x2 - half)
            return None if rest <= 0 else (mpmath.log(rest) + half) / mu

        def integrand(x2):
            w = mpmath.npdf(x2)
            if remove:  # x_1 > a (all x_1 when a is None)
                a = cut(x2, e)
                if a is None:
                    return w * (1 - e)
                return w * (mpmath.ncdf(-(a - mu)) - e * mpmath.ncdf(-a))
            b = cut(x2, 1 / e)  # x_1 < b (none when b is None)
            if b is None:
                return mpmath.mpf(0)
            return w * (mpmath.ncdf(b) - e * mpmath.ncdf(b - mu))

        return mpmath.quad(integrand, [-mpmath.inf, -5, 0, 5, 10, mpmath.inf])
