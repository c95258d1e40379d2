"""The binomial-sum bound on the cut law's transform at real tilts (mechanisms/_body_series.py) against mpmath:
the exact finite sum at integers (every term, 50 digits) and quadrature between them."""

import math

import mpmath as mp
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import special

from dpledger.mechanisms import _logmath
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


# The per-integer loop the vectorised `_log_integer` replaced (commit 41d6a88), kept here as the reference: the same
# terms, the same stopping rule, one integer at a time. The library now charges the sum's rounding as (2 N + 8) u
# instead of (N + 4) u (the exponentials' rounding is included), so its values may lie a few ulps above these.
_U = 2.0**-53


def _reference_log_terms(m, j, g, mu, cut):
    g_n, g_j, g_nj = special.gammaln(m + 1.0), special.gammaln(j + 1.0), special.gammaln(m - j + 1.0)
    arg = cut - j * mu
    log_phi = special.log_ndtr(arg)
    quad = 0.5 * j * (j - 1.0) * mu * mu
    log_1mg, log_g = np.log1p(-g), np.log(g)
    log_t = (g_n - g_j - g_nj) + (m - j) * log_1mg + j * log_g + quad + log_phi
    magnitude = (abs(g_n) + np.abs(g_j) + np.abs(g_nj) + np.abs((m - j) * log_1mg) + np.abs(j * log_g) + quad
                 + np.abs(log_phi) + np.abs(arg) + abs(cut) + m + 1.0)
    return log_t + 64.0 * _U * magnitude


def _reference_log_integer(n, g, mu, cut):
    log_k = np.log(g) + mu * cut - np.log1p(-g)
    k_val = np.exp(min(log_k, 700.0))
    out, stops = np.empty(len(n)), []
    for i, m in enumerate(n):
        m = int(m)
        j0 = int(min(m, max(0, np.ceil((m * k_val - 0.5) / (k_val + 0.5)))))
        while j0 < m and np.log(m - j0) - np.log(j0 + 1.0) + log_k > np.log(0.5):
            j0 += 1
        stop = min(m, max(j0, 16))
        while True:
            log_t = _reference_log_terms(m, np.arange(stop + 1, dtype=np.float64), g, mu, cut)
            top = float(np.max(log_t))
            total = float(np.sum(np.exp(log_t - top))) * (1.0 + (stop + 4) * _U)
            if stop >= m:
                tail = 0.0
                break
            rho = (m - stop) / (stop + 1.0) * np.exp(log_k)
            tail = float(np.exp(log_t[-1] - top)) * rho / (1.0 - rho) * (1.0 + 8.0 * _U)
            if tail <= 2.0**-60 * total:
                break
            stop = min(m, 2 * stop)
        log_total = float(np.log(total + tail))
        out[i] = _logmath.widen_up(top + log_total, 4.0 * _U, 4.0 * _U * (abs(top) + abs(log_total)) + 1e-300)
        stops.append(stop)
    return out, np.array(stops)


def _assert_matches_reference(values, reference, stops):
    """Never below the loop's proven bound (beyond the summation order's rounding); above it by at most the larger
    charge for the sum's rounding ((2 N + 8) u instead of (N + 4) u relative on the sum, N at most twice the loop's
    stop: the library starts at 2 max(J, 16), the loop at max(J, 16), both double from there) and the rounding of
    log_body_upper's chord charged with the integers' (16 u of the values at n and n + 1, within about 30 of each
    other here)."""
    magnitude = np.maximum(1.0, np.abs(reference))
    assert np.all(values >= reference - 1e-14 * magnitude)
    assert np.all(values <= reference + (3.0 * stops + 8.0) * _U * 1.01 + 1e-13 * magnitude + 1e-13)


@settings(max_examples=40, deadline=None)
@given(ints=st.lists(st.integers(0, 3000), min_size=1, max_size=12) | st.lists(st.integers(0, 40), max_size=30,
                                                                                  min_size=1),
       g=st.sampled_from([1e-5, 1e-4, 1e-3, 0.01, 0.1, 0.4]), mu=st.floats(0.05, 2.0), cut=st.floats(-3.0, 11.0))
def test_vectorised_integers_match_the_per_integer_loop(ints, g, mu, cut):
    ints = np.array(sorted(set(ints)), dtype=np.float64)
    reference, stops = _reference_log_integer(ints, g, mu, cut)
    values = log_body_upper(ints, g, mu, cut)
    _assert_matches_reference(values, reference, stops)
    # the batch answers each integer as it would alone (the doubling of one integer's stop leaves the others alone)
    alone = np.array([log_body_upper(np.array([m]), g, mu, cut)[0] for m in ints[::max(1, ints.size // 3)]])
    assert np.array_equal(alone, values[::max(1, ints.size // 3)])


def test_vectorised_integers_double_the_stop_where_the_tail_needs_it():
    # (the loop's stops; the library starts at twice them, 2 max(J, 16))
    # K = g e^(mu c) / (1 - g) ~ 0.058: rho_j <= 1/2 from j = 31 at m = 300, where the terms are not yet 2^-60 of
    # the sum, so its stop doubles to 62 while the other integers are done in the first pass
    g, mu, cut = 0.01, 0.5, 3.5
    ints = np.array([0.0, 1.0, 17.0, 300.0, 2000.0, 2001.0, 30000.0])
    reference, stops = _reference_log_integer(ints, g, mu, cut)
    assert stops[3] == 62 and np.any(stops < ints)
    values = log_body_upper(ints, g, mu, cut)
    _assert_matches_reference(values, reference, stops)
    for n in (17, 300):
        assert values[list(ints).index(n)] >= _exact_integer(n, g, mu, cut)


def test_the_library_doubles_its_first_stop_where_the_tail_needs_it(monkeypatch):
    # K = 0.05 e^0.6 / 0.95 ~ 0.096: at m = 100, rho_j <= 1/2 from J = 16, the first stop 32 leaves a tail above
    # 2^-60 of the sum, so a second pass runs to 64 (for m = 100 only; m = 5 is done in the first)
    from dpledger.mechanisms import _body_series

    g, mu, cut = 0.05, 0.3, 2.0
    sizes = []
    original = _body_series._log_terms
    monkeypatch.setattr(_body_series, "_log_terms", lambda *args: (sizes.append(args[1].size), original(*args))[1])
    ints = np.array([5.0, 100.0])
    values = log_body_upper(ints, g, mu, cut)
    assert sizes == [6 + 7 + 33 + 33, 65 + 65]  # the terms of each pass (the integers 5, 6, 100, 101)
    reference, stops = _reference_log_integer(ints, g, mu, cut)
    _assert_matches_reference(values, reference, stops)
    exact = _exact_integer(100, g, mu, cut)
    assert exact <= values[1] <= exact + 1e-9 * max(1.0, abs(exact))
