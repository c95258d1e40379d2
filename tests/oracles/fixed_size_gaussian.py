"""Exact oracles for the Gaussian mechanism on fixed-size batches drawn without replacement, under replace-one.

Deliberately independent of ``mechanisms/`` and ``accountants/``: :mod:`mpmath` only.

* :func:`renyi_replace_one`: a data set of ``n`` bits, of which ``s`` are ones; the batch mechanism releases
  ``sum(batch) + N(0, sigma^2)`` (replace-one sensitivity 1). The release is the mixture of ``N(k, sigma^2)`` with
  hypergeometric weights ``C(s, k) C(n - s, b - k) / C(n, b)``; replacing one record moves ``s`` by one. The
  Renyi divergence of integer order ``alpha`` is ``log(int p^alpha q^(1 - alpha)) / (alpha - 1)``, by quadrature.
* :func:`theorem_27`: Wang, Balle & Kasiviswanathan 2019 Thm 27 evaluated directly at high precision (the
  alternating forward-difference sums in ``mp.dps`` digits, no interval arithmetic and no caching).
"""

import mpmath


def _weights(n, s, b):
    total = mpmath.binomial(n, b)
    return [mpmath.binomial(s, k) * mpmath.binomial(n - s, b - k) / total for k in range(b + 1)]


def renyi_replace_one(n, b, s, s_other, sigma, alpha, dps=30):
    """``D_alpha(M(D) || M(D'))`` with ``s`` ones in ``D`` and ``s_other`` ones in ``D'`` (both of size n)."""
    with mpmath.workdps(dps):
        sig = mpmath.mpf(sigma)
        wp, wq = _weights(n, s, b), _weights(n, s_other, b)

        def density(w, x):
            return sum(wk * mpmath.npdf(x, k, sig) for k, wk in enumerate(w) if wk != 0)

        def integrand(x):
            p, q = density(wp, x), density(wq, x)
            if q == 0:
                return mpmath.mpf(0) if p == 0 else mpmath.inf
            return p ** alpha * q ** (1 - alpha)

        points = [-mpmath.inf, -12 * sig] + list(range(b + 1)) + [b + 12 * sig, mpmath.inf]
        value = mpmath.quad(integrand, points)
        return mpmath.log(value) / (alpha - 1)


def theorem_27(alpha, gamma, sigma, dps=400):
    """WBK19 Thm 27 for the Gaussian with noise multiplier ``sigma`` at integer ``alpha >= 2`` (RDP value)."""
    with mpmath.workdps(dps):
        c = 1 / (2 * mpmath.mpf(sigma) ** 2)
        g = [mpmath.exp(k * (k - 1) * c) for k in range(alpha + 2)]

        def delta(m):
            return sum((-1) ** (m - k) * mpmath.binomial(m, k) * g[k] for k in range(m + 1))

        gam = mpmath.mpf(gamma)
        total = 1 + gam**2 * mpmath.binomial(alpha, 2) * min(4 * (g[2] - 1), 2 * g[2])
        for j in range(3, alpha + 1):
            lo, hi = delta(2 * (j // 2)), delta(2 * ((j + 1) // 2))
            total += gam**j * mpmath.binomial(alpha, j) * min(4 * mpmath.sqrt(lo * hi), 2 * g[j])
        return mpmath.log(total) / (alpha - 1)
