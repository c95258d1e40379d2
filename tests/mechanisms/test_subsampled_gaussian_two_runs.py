"""Two runs of Poisson-subsampled Gaussians (mechanisms/subsampled_gaussian_two_runs.py): every piece against mpmath,
the composed bounds against the count-2 oracle, and their second order."""

import math

import mpmath as mp
import numpy as np
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from dpledger.mechanisms import subsampled_gaussian_two_runs as two
from dpledger.mechanisms.gaussian import analytic_gaussian_delta_bound, analytic_gaussian_delta_bounds
from tests.oracles.analytic_gaussian import gaussian_delta
from tests.oracles.privacy_profiles import _one_step, subsampled_gaussian_delta_direction

DIRECTIONS = {True: "remove", False: "add"}


@settings(max_examples=40, deadline=None)
@given(st.floats(0.05, 20.0), st.lists(st.floats(-5.0, 60.0), min_size=1, max_size=8))
@example(1 / 0.6, [0.0, 3.4, 1e4, 1e300])  # huge epsilons (searches probe them): the trivial bounds, no warning
def test_gaussian_bounds_on_arrays_contain_the_analytic_gaussian(mu, epsilons):
    """analytic_gaussian_delta_bound (the one-run path's bound, on arrays; the scalar one takes it at one point)
    against the mpmath analytic Gaussian, element by element, and tight where delta is representable."""
    eps = np.array(epsilons)
    lo = analytic_gaussian_delta_bound(mu, eps, False)
    hi = analytic_gaussian_delta_bound(mu, eps, True)
    for e, a, b in zip(epsilons, lo, hi):
        exact = gaussian_delta(e, mu) if e < 1e3 else mp.mpf(0)
        assert a <= exact <= b, (mu, e, a, exact, b)
        assert (a, b) == analytic_gaussian_delta_bounds(mu, e)
        if exact > 1e-280:  # log_ndtr's 1e-13 allowance times |log Phi|, over |z| of the cancellation in 1 - e^z
            assert b - a <= 1e-6 * exact


@settings(max_examples=40, deadline=None)
@given(st.floats(0.2, 5.0), st.floats(-7.0, -0.3).map(lambda e: 10.0**e), st.floats(-3.0, 3.0), st.booleans())
@example(1 / 0.6, 1e-4, -1e-4, True)  # below the remove loss's infimum log(1 - q): 1 - e^eps exactly
@example(1 / 0.6, 1e-4, 5e-5, False)  # the add loss never exceeds -log(1 - q): 0
@example(1 / 0.6, 1e-4, -0.003, False)  # the mirror identity on the add side
def test_profile_bounds_contain_the_one_run_oracle(mu, q, epsilon, remove):
    lo = two.profile_bound(mu, q, np.array([epsilon]), remove, False)[0]
    hi = two.profile_bound(mu, q, np.array([epsilon]), remove, True)[0]
    with mp.workdps(40):
        exact = _one_step(mp.mpf(epsilon), mp.mpf(q), 1 / mp.mpf(mu), DIRECTIONS[remove])
        assert lo <= exact <= hi, (mu, q, epsilon, remove, lo, exact, hi)
        if exact > 1e-280:  # and tight (log_ndtr's 1e-13 allowance, carried through log1p(expm1(eps) / q))
            assert hi - lo <= 1e-9 * exact + 1e-300


@settings(max_examples=60, deadline=None)
@given(st.floats(-40.0, 2.0).map(lambda e: 10.0**e), st.sampled_from([1.0, -1.0]))  # t = mu h <= 20 / 32
@example(0.4999, -1.0)
@example(0.5, 1.0)
def test_series_excess_contains_the_exact_value(t, sign):
    lo, hi = two._series_excess(np.array([t]), sign)
    with mp.workdps(60):
        exact = mp.expm1(sign * mp.mpf(t)) - sign * mp.mpf(t)
        assert lo[0] <= exact <= hi[0], (t, sign)
        assert hi[0] - lo[0] <= 3e-13 * abs(exact) + 1e-300


@pytest.mark.parametrize("remove", [True, False])
@pytest.mark.parametrize("mu, q", [(1 / 0.6, 1e-4), (1.0, 0.3), (0.2, 0.9)])
def test_cell_quantities_contain_their_exact_values(mu, q, remove):
    """P, theta = E_P1[Y - y_lo; cell] / (y_hi - y_lo), (y_hi - y_lo) / y_lo and log y at the edges, by mpmath
    quadrature on cells of several lengths on both sides of 0."""
    x = np.array([-3.0, -2.0, -1.0, -0.5, -0.25, 0.0, 2.0**-10, 2.0**-9, 0.5, 1.0, 2.0, 4.0])
    cells = two._Cells(mu, q, remove, x)
    with mp.workdps(40):
        m, g = mp.mpf(mu), mp.mpf(q)

        def lam(t):
            return 1 - g + g * mp.exp(m * t - m * m / 2)

        def p_density(t):
            base = mp.npdf(t)
            return base * lam(t) if remove else base

        def y(t):
            return 1 / lam(t) if remove else lam(t)

        for k in range(x.size - 1):
            a, b = mp.mpf(x[k]), mp.mpf(x[k + 1])
            y_lo, y_hi = sorted([y(a), y(b)])
            mass = mp.quad(p_density, [a, b])
            first = mp.quad(lambda t: p_density(t) * (y(t) - y_lo), [a, b])
            theta = first / (y_hi - y_lo)
            assert cells.p_lo[k] <= mass <= cells.p_hi[k], k
            assert cells.theta_lo[k] <= theta <= cells.theta_hi[k], (k, cells.theta_lo[k], theta, cells.theta_hi[k])
            # and no wider than phi's spread over the cell: phi(a) / phi(b) = e^((b - a)(b + a) / 2)
            assert cells.theta_hi[k] <= cells.theta_lo[k] * mp.exp(abs(b * b - a * a) / 2) * (1 + 1e-9)
            assert (y_hi - y_lo) / y_lo <= cells.r_hi[k]
        for k in range(x.size):
            exact = mp.log(y(mp.mpf(x[k])))
            assert abs(cells.log_y[k] - exact) <= cells.log_y_err[k], k


def _two_pair_oracle(epsilon, first, second, remove, dps=30):
    """delta of one direction of two different subsampled Gaussians (sensitivity 1, sigmas and q's given): the first
    run's output law against the second's one-run profile (the identity of the module docstring), by mpmath."""
    (s1, q1), (s2, q2) = first, second
    direction = DIRECTIONS[remove]
    with mp.workdps(dps):
        s1, q1, s2, q2, eps = (mp.mpf(v) for v in (s1, q1, s2, q2, epsilon))

        def loss(t):  # log(1 - q + q e^((2t - 1) / (2 s^2))), the remove loss at output t of N(0, s1^2)
            return mp.log(1 - q1 + q1 * mp.exp((2 * t - 1) / (2 * s1 * s1)))

        def density(t):
            base = mp.npdf(t, 0, s1)
            return (1 - q1) * base + q1 * mp.npdf(t, 1, s1) if remove else base

        def integrand(t):
            shift = loss(t) if remove else -loss(t)
            return density(t) * _one_step(eps - shift, q2, s2, direction)

        points = [mp.mpf(k) / 4 for k in range(-60, 80)]
        return mp.quad(integrand, [-mp.inf] + points + [mp.inf])


@pytest.mark.parametrize("sigma, q, epsilon", [
    (0.6, 1e-4, 0.00305),  # the corner: a lump of width q at the loss's infimum
    pytest.param(0.6, 1e-4, 0.0, marks=pytest.mark.long_oracle),  # (each 3-4 s of mpmath)
    (1.0, 0.3, 0.5),
    pytest.param(2.0, 0.01, 0.01, marks=pytest.mark.long_oracle),
    pytest.param(5.0, 0.5, 0.2, marks=pytest.mark.long_oracle),
    (0.8, 0.05, 2.0),
])
def test_composed_bounds_contain_the_count_two_oracle(sigma, q, epsilon):
    pair = two.TwoSubsampledGaussians((1 / sigma, q), (1 / sigma, q))
    grid = pair.refined(epsilon, pair.coarse_grid(), 1e-6)[0]
    for remove, x in zip((True, False), grid):
        lower, upper = pair._direction(pair._cells_of(x, remove), epsilon, remove)[:2]
        exact = subsampled_gaussian_delta_direction(epsilon, q, sigma, 2, DIRECTIONS[remove])
        assert lower <= exact <= upper, (remove, lower, exact, upper)
        if exact > 0:
            assert upper - lower <= 2e-6 * exact
    lower, upper = pair.bounds(epsilon, grid)
    assert upper - lower <= 1e-6 * upper


@pytest.mark.parametrize("first, second, epsilon", [
    ((0.6, 1e-4), (1.0, 0.01), 0.05),
    ((1.5, 0.2), (0.7, 1e-3), 0.3),
])
def test_two_different_runs_contain_their_oracle(first, second, epsilon):
    pair = two.TwoSubsampledGaussians((1 / first[0], first[1]), (1 / second[0], second[1]))
    grid = pair.refined(epsilon, pair.coarse_grid(), 1e-6)[0]
    for remove, x in zip((True, False), grid):
        lower, upper = pair._direction(pair._cells_of(x, remove), epsilon, remove)[:2]
        exact = _two_pair_oracle(epsilon, first, second, remove)
        assert lower <= exact <= upper, (remove, lower, exact, upper)
        assert upper - lower <= 2e-6 * exact + 1e-300


@pytest.mark.parametrize("sigma, q, epsilon", [(0.6, 1e-4, 0.00305), (1.0, 0.3, 0.5)])
def test_halving_every_cell_takes_the_interval_to_a_quarter(sigma, q, epsilon):
    """Second order: a chord or Jensen bound of first order (the monotone one, y_lo or y_hi throughout) would only
    halve it."""
    pair = two.TwoSubsampledGaussians((1 / sigma, q), (1 / sigma, q))
    widths = []
    for h in (2.0**-7, 2.0**-8):
        mu = 1 / sigma
        x = np.arange(math.floor(-10.5 / h), math.ceil((mu + 10.5) / h) + 1, dtype=np.float64) * h
        lower, upper = pair.bounds(epsilon, (x, x))
        widths.append(upper - lower)
    assert 3.5 <= widths[0] / widths[1] <= 4.5


def test_refinement_halves_the_cells_holding_the_gap():
    pair = two.TwoSubsampledGaussians((1 / 0.6, 1e-4), (1 / 0.6, 1e-4))
    coarse = pair.coarse_grid()
    grid, lower, upper = pair.refined(0.00305, coarse, 1e-6)
    x = grid[0]
    widths = x[1:] - x[:-1]
    assert upper - lower <= 1e-6 * upper
    assert x.size < 0.2 * (coarse[0].size - 1) * (pair.COARSE_STEP / widths.min())  # far fewer than uniform cells
    assert np.all(np.mod(x[:-1], widths) == 0.0)  # each cell starts at a multiple of its length
    assert np.array_equal(grid[1], coarse[1])  # the add direction's delta is 0 there: nothing to refine
    assert set(np.unique(widths)) <= {pair.COARSE_STEP / 2.0**k for k in range(21)}


@pytest.mark.parametrize("first, second", [((0.0, 0.1), (1.0, 0.1)), ((1.0, 1.0), (1.0, 0.1)),
                                           ((1.0, 0.1), (1.0, 0.0)), ((-1.0, 0.1), (1.0, 0.1)),
                                           ((1.0, 0.1), (25.0, 0.1))])
def test_bad_parameters_are_refused(first, second):
    with pytest.raises(ValueError, match="two runs need"):
        two.TwoSubsampledGaussians(first, second)


@pytest.mark.long_oracle  # 19 s of mpmath
def test_a_tiny_delta_contains_a_careful_integral():
    """sigma 2, q 1e-3, epsilon 5 (delta 2.48e-127): half the mass sits in a spike about 1/24 wide where the second
    run's argument crosses log(1 - q) (the first run deep in its tail; the other half is the bulk, the two runs'
    roles swapped). The count-2 oracle's quarter-sigma pieces miss it by 1e-6, and 1/16 pieces with the spike's point
    by 1e-6 the other way; pieces of 1/512 around the spike agree with the bounds to 2e-7."""
    mu, q, epsilon = 0.5, 1e-3, 5.0
    pair = two.TwoSubsampledGaussians((mu, q), (mu, q))
    lower, upper = pair.delta_bounds(epsilon, 1e-6)
    with mp.workdps(40):
        m, g, e = mp.mpf(mu), mp.mpf(q), mp.mpf(epsilon)

        def lam(t):
            return 1 - g + g * mp.exp(m * t - m * m / 2)

        def f(t):
            return mp.npdf(t) * lam(t) * _one_step(e - mp.log(lam(t)), g, 1 / m, "remove")

        spike = (mp.log((mp.exp(e) / (1 - g) - 1 + g) / g) + m * m / 2) / m
        bulk = [mp.mpf(k) / 64 for k in range(-8 * 64, 8 * 64 + 1)]
        near = [spike + mp.mpf(k) / 512 for k in range(-512, 513)]
        between = [mp.mpf(k) / 16 for k in range(8 * 16 + 1, int(spike - 1) * 16)]
        exact = mp.quad(f, [mp.mpf(-40)] + bulk + between + near + [spike + 8])
        assert lower <= exact <= upper, (lower, exact, upper)


@pytest.mark.parametrize("remove", [True, False])
def test_huge_epsilons_give_bounds_without_overflow(remove):
    """Epsilon searches double their bracket up to 1e300: the one-run bounds stay in [0, 1] there, no float warning
    (the suite turns RuntimeWarnings into errors)."""
    eps = np.array([40.0, 709.0, 1e4, 1e150, 1e300])
    lo = two.profile_bound(1.0, 0.01, eps, remove, False)
    hi = two.profile_bound(1.0, 0.01, eps, remove, True)
    assert np.all((0.0 <= lo) & (lo <= hi) & (hi <= 1.0))
    assert hi[0] < 1e-200  # delta(40) is far below 1e-300 for the remove pair, 0 for the add pair
