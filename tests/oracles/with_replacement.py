"""mpmath oracle for fixed-size batches drawn with replacement and a Gaussian sum query (one dimension).

* :func:`realised_mixtures`: every with-replacement batch of every data set pair enumerated (records valued 0 or
  ``Delta``, so the sum query has replace-one sensitivity ``Delta``): the exact output laws ``M(D)``, ``M(D')``
  as Gaussian mixtures ``{mean: weight}`` (in units of ``sigma``, exact rational weights);
* :func:`hockey_stick`: ``H_(e^eps)(A || B)`` of two such mixtures by mpmath quadrature;
* :func:`pair_weights`, :func:`pair_renyi`, :func:`pair_bucket_masses`: the dominating pair
  ``(sum_k w_k N(k mu, 1), N(0, 1))`` (weights ``Bin(b, 1/n)``, optionally conditioned on ``K <= r``), its Renyi
  divergences and exact bucket masses (loss thresholds by ``findroot``).
"""

from __future__ import annotations

import itertools
from fractions import Fraction

import mpmath

DPS = 30


def realised_mixtures(values_d_prime, x_value, batch_size):
    """``(M(D), M(D'))`` for ``D = D' + {x}``: dicts ``{sum of the batch: probability}`` over every sequence of
    ``batch_size`` uniform draws (with replacement) from each data set. ``values_d_prime`` may be empty only
    if ``batch_size == 0``."""
    d = list(values_d_prime) + [x_value]

    def law(data):
        out = {}
        for seq in itertools.product(range(len(data)), repeat=batch_size):
            total = sum(data[i] for i in seq)
            out[total] = out.get(total, 0) + Fraction(1, len(data) ** batch_size)
        return out

    return law(d), law(list(values_d_prime))


def all_realised_pairs(dataset_size, batch_size, mu):
    """Every ``(M(D), M(D'))`` with records in ``{0, mu}`` (by symmetry only the count of ``mu``-valued records
    of ``D'`` and the value of ``x`` matter), both directions (``(A, B)`` and ``(B, A)``)."""
    out = []
    for ones in range(dataset_size):
        d_prime = [mu] * ones + [0] * (dataset_size - 1 - ones)
        for x in (0, mu):
            a, b = realised_mixtures(d_prime, x, batch_size)
            out.append((a, b))
            out.append((b, a))
    return out


def _density(mixture, y):
    return mpmath.fsum(mpmath.mpf(w.numerator) / w.denominator * mpmath.npdf(y, mean, 1)
                       if isinstance(w, Fraction) else w * mpmath.npdf(y, mean, 1) for mean, w in mixture.items())


def hockey_stick(a, b, epsilon):
    """``int (a - e^eps b)_+`` of two Gaussian mixtures ``{mean: weight}`` (unit variance), mpmath quadrature
    with the sign changes of ``a - e^eps b`` (located on a fine grid, refined by bisection) as breakpoints, so
    every piece is smooth."""
    with mpmath.workdps(DPS):
        g = mpmath.e ** mpmath.mpf(epsilon)
        means = sorted({float(m) for m in a} | {float(m) for m in b})
        lo, hi = means[0] - 14, means[-1] + 14

        def h(y):
            return _density(a, y) - g * _density(b, y)

        grid = [lo + (hi - lo) * mpmath.mpf(i) / 400 for i in range(401)]
        values = [h(y) for y in grid]
        cuts = []
        for i in range(400):
            if (values[i] > 0) != (values[i + 1] > 0):
                left, right = grid[i], grid[i + 1]
                for _ in range(80):
                    mid = (left + right) / 2
                    left, right = (mid, right) if (h(mid) > 0) == (values[i] > 0) else (left, mid)
                cuts.append((left + right) / 2)
        points = sorted(set([mpmath.mpf(lo), mpmath.mpf(hi)] + cuts + [mpmath.mpf(m) for m in means]))
        points = [-mpmath.inf] + points + [mpmath.inf]
        return mpmath.fsum(mpmath.quad(lambda y: max(h(y), 0), [points[i], points[i + 1]])
                           for i in range(len(points) - 1))


def pair_weights(batch_size, dataset_size, max_repeats=None):
    """``w_k`` of the dominating pair as mpmath numbers (conditioned on ``K <= max_repeats`` if given)."""
    with mpmath.workdps(DPS):
        b, p = batch_size, mpmath.mpf(1) / dataset_size
        top = b if max_repeats is None else min(max_repeats, b)
        w = [mpmath.binomial(b, k) * p**k * (1 - p) ** (b - k) for k in range(top + 1)]
        total = mpmath.fsum(w)
        return [v / total for v in w]


def pair_mixtures(weights, mu):
    """``(P, Q)`` of the pair as ``{mean: weight}`` dicts."""
    return {k * mu: w for k, w in enumerate(weights) if w != 0}, {0: mpmath.mpf(1)}


def pair_renyi(order, mu, weights, remove=True):
    """``D_order(P || Q)`` (``remove``) or ``D_order(Q || P)`` of the pair, mpmath quadrature."""
    with mpmath.workdps(DPS):
        mu = mpmath.mpf(mu)
        order = mpmath.mpf(order)

        def p(y):
            return mpmath.fsum(w * mpmath.npdf(y, k * mu, 1) for k, w in enumerate(weights))

        def integrand(y):
            q = mpmath.npdf(y)
            num, den = (p(y), q) if remove else (q, p(y))
            return num**order * den ** (1 - order)

        top = len(weights) - 1
        points = [-mpmath.inf, -12, 0] + [k * mu for k in range(1, top + 1)] + [top * mu + 12, mpmath.inf]
        return mpmath.log(mpmath.quad(integrand, points)) / (order - 1)


def pair_loss(x, mu, weights):
    """``L(x) = log sum_k w_k exp(k mu x - k^2 mu^2 / 2)``."""
    return mpmath.log(mpmath.fsum(w * mpmath.e ** (k * mu * x - k * k * mu * mu / 2) for k, w in enumerate(weights)))


def pair_bucket_masses(edges, mu, weights, remove=True):
    """Exact ``(P-masses, Q-masses)`` of the buckets ``(-inf, e_0], (e_0, e_1], ..., (e_last, inf)`` of the loss of
    the pair (removal) or of its mirror (addition: loss ``-L`` under ``Q``, Q-masses under ``P``)."""
    with mpmath.workdps(DPS):
        mu = mpmath.mpf(mu)
        inf_loss = mpmath.log(weights[0]) if weights[0] > 0 else -mpmath.inf

        def threshold(e):  # x with L(x) = e (-inf below the infimum)
            e = mpmath.mpf(e)
            if e <= inf_loss:
                return -mpmath.inf
            lo, hi = mpmath.mpf(-60), mpmath.mpf(60)
            while pair_loss(lo, mu, weights) > e:
                lo *= 2
            for _ in range(200):
                mid = (lo + hi) / 2
                lo, hi = (mid, hi) if pair_loss(mid, mu, weights) <= e else (lo, mid)
            return (lo + hi) / 2

        def mix_cdf(x):
            return mpmath.fsum(w * mpmath.ncdf(x - k * mu) for k, w in enumerate(weights))

        if remove:
            xs = [-mpmath.inf] + [threshold(e) for e in edges] + [mpmath.inf]
            p = [mix_cdf(xs[i + 1]) - mix_cdf(xs[i]) for i in range(len(xs) - 1)]
            q = [mpmath.ncdf(xs[i + 1]) - mpmath.ncdf(xs[i]) for i in range(len(xs) - 1)]
        else:  # bucket (a, b] of -L is x in [x(-b), x(-a))
            xs = [mpmath.inf] + [threshold(-e) for e in edges] + [-mpmath.inf]
            p = [mpmath.ncdf(xs[i]) - mpmath.ncdf(xs[i + 1]) for i in range(len(xs) - 1)]
            q = [mix_cdf(xs[i]) - mix_cdf(xs[i + 1]) for i in range(len(xs) - 1)]
        return p, q
