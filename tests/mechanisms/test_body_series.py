"""The binomial-sum bound on the cut law's transform at real tilts (mechanisms/_body_series.py) against mpmath:
the exact finite sum at integers (every term, 50 digits) and quadrature between them."""

import math

import mpmath as mp
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dpledger.mechanisms._body_series import log_body_upper


def _exact_integer(n, g, mu, cut):
    with mp.workdps(50):
        g, mu, cut = mp.mpf(g), mp.mpf(mu), mp.mpf(cut)
        total = mp.mpf(0)
        for j in range(n + 1):
            total += (mp.binomial(n, j) * (1 - g) ** (n - j) * g**j * mp.e ** (j * (j - 1) * mu**2 / 2)
                      * mp.ncdf(cut - j * mu))
        return float(mp.log(total))


def _exact_real(a, g, mu, cut):
    with mp.workdps(40):
        g, mu, cut, a = mp.mpf(g), mp.mpf(mu), mp.mpf(cut), mp.mpf(a)

        def f(x):
            return mp.npdf(x) * (1 - g + g * mp.e ** (mu * x - mu**2 / 2)) ** a

        points = [-mp.inf, -12, -6, -3, 0, 3] + [p for p in (6, 9, 12) if p < cut] + [cut]
        points = sorted(set(p for p in points if p <= cut), key=lambda p: -mp.inf if p == -mp.inf else p)
        return float(mp.log(mp.quad(f, points)))


@pytest.mark.parametrize(("n", "g", "mu", "cut"), [(0, 1e-4, 0.5, 7.6), (1, 1e-4, 0.5, 7.6), (37, 1e-3, 1.0, 8.0),
                                                  (400, 1e-4, 0.2, 7.6), (1500, 1e-4, 0.5, 7.6), (60, 0.3, 1.7, 6.0),
                                                  (25, 1e-4, 1.67, 8.2), (3, 0.5, 0.1, -1.0)])
def test_integer_tilts_bound_the_exact_sum_tightly(n, g, mu, cut):
    exact = _exact_integer(n, g, mu, cut)
    bound = float(log_body_upper(np.array([float(n)]), g, mu, cut)[0])
    assert exact <= bound <= exact + 1e-6 * max(1.0, abs(exact))


@settings(max_examples=25, deadline=None)
@given(a=st.floats(1.0, 300.0), g=st.sampled_from([1e-4, 1e-3, 0.01, 0.2]), mu=st.floats(0.1, 2.0),
       cut=st.floats(2.0, 10.0))
def test_real_tilts_bound_the_quadrature(a, g, mu, cut):
    exact = _exact_real(a, g, mu, cut)
    bound = float(log_body_upper(np.array([a]), g, mu, cut)[0])
    assert exact <= bound + 1e-12 * max(1.0, abs(exact))
    # the chord between integers costs at most the curvature over a unit step
    lo, hi = math.floor(a), math.floor(a) + 1
    assert bound <= max(_exact_integer(lo, g, mu, cut), _exact_integer(hi, g, mu, cut)) + 1e-6 * max(1, abs(exact))


def test_large_tilts_stop_early_and_the_tail_is_bounded():
    # K = g e^(mu c) / (1 - g) ~ 4.5e-4: about 2 n K = 90 terms at n = 1e5, the rest a geometric tail
    g, mu, cut = 1e-4, 0.2, 7.6
    value = float(log_body_upper(np.array([1e5]), g, mu, cut)[0])
    # the first 400 terms exactly (mpmath), the remaining ones bounded below by 0: the bound must lie above
    with mp.workdps(40):
        total = mp.mpf(0)
        n = 100000
        for j in range(400):
            total += (mp.binomial(n, j) * (1 - mp.mpf(g)) ** (n - j) * mp.mpf(g) ** j
                      * mp.e ** (j * (j - 1) * mp.mpf(mu) ** 2 / 2) * mp.ncdf(mp.mpf(cut) - j * mp.mpf(mu)))
        partial = float(mp.log(total))
    assert partial <= value <= partial + 1e-6 * abs(partial)


def test_rejects_what_it_cannot_bound():
    with pytest.raises(ValueError):
        log_body_upper(np.array([-0.5]), 1e-3, 1.0, 8.0)
    with pytest.raises(ValueError):
        log_body_upper(np.array([2.0]), 1.0, 1.0, 8.0)
