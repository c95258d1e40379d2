"""RDP -> (epsilon, delta) conversions and the order search, tested as pure functions."""

import math

import numpy as np
import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from dpledger.accountants.conversions import Conversion, epsilon_candidates, log_delta_candidates, minimize_over_orders


def test_classic_conversion_known_value():
    # Mironov 2017, Prop 3: eps = r + log(1/delta)/(alpha - 1); alpha = 11, r = 1, delta = e^-10 -> 2.
    eps = epsilon_candidates([11.0], [1.0], math.exp(-10.0), Conversion.CLASSIC)
    np.testing.assert_allclose(eps, [2.0], rtol=1e-15)


def test_improved_conversion_known_value():
    # Balle et al. 2020 Thm 21 at alpha = 2, r = 1, delta = 1e-3:
    # eps = 1 + log(1/2) - (log(1e-3) + log 2) / 1 = 1 - log 2 - log(2e-3)
    eps = epsilon_candidates([2.0], [1.0], 1e-3, Conversion.IMPROVED)
    np.testing.assert_allclose(eps, [1.0 - math.log(2.0) - math.log(2e-3)], rtol=1e-14)


@given(
    alpha=st.floats(1.01, 1e4),
    r=st.floats(0.0, 100.0),
    log10_delta=st.floats(-15.0, -0.5),
)
def test_improved_never_worse_than_classic(alpha, r, log10_delta):
    delta = 10.0**log10_delta
    improved = epsilon_candidates([alpha], [r], delta, Conversion.IMPROVED)[0]
    classic = epsilon_candidates([alpha], [r], delta, Conversion.CLASSIC)[0]
    assert improved <= classic + 1e-12 * max(1.0, abs(classic))


@given(
    alpha=st.floats(1.05, 1e3),
    r=st.floats(0.0, 20.0),
    log10_delta=st.floats(-12.0, -1.0),
    conversion=st.sampled_from(list(Conversion)),
)
@example(alpha=2.0, r=0.5, log10_delta=-5.0, conversion=Conversion.IMPROVED)
def test_epsilon_and_delta_conversions_are_inverse(alpha, r, log10_delta, conversion):
    delta = 10.0**log10_delta
    eps = epsilon_candidates([alpha], [r], delta, conversion)[0]
    back = log_delta_candidates([alpha], [r], eps, conversion)[0]
    assert back == pytest.approx(math.log(delta), rel=1e-9, abs=1e-9)


def test_infinite_rdp_gives_infinite_candidates():
    assert np.isinf(epsilon_candidates([2.0], [np.inf], 1e-5)).all()
    assert np.isinf(log_delta_candidates([2.0], [np.inf], 1.0)).all()


def test_search_refines_between_grid_points():
    def f(orders):
        return (np.asarray(orders) - 7.3) ** 2

    grid = np.arange(2.0, 20.0)
    opt = minimize_over_orders(f, grid, f(grid))
    assert opt.order == pytest.approx(7.3, abs=0.01)
    assert opt.value <= f(np.array([7.0]))[0]


def test_search_extends_beyond_the_top_of_the_grid():
    def f(orders):
        return np.abs(np.log(np.asarray(orders) / 5000.0))

    grid = np.arange(2.0, 64.0)
    opt = minimize_over_orders(f, grid, f(grid))
    assert opt.order == pytest.approx(5000.0, rel=0.05)


def test_search_approaches_order_one():
    def f(orders):
        return np.abs(np.log((np.asarray(orders) - 1.0) / 1e-4))

    grid = np.linspace(1.1, 5.0, 20)
    opt = minimize_over_orders(f, grid, f(grid))
    assert opt.order - 1.0 == pytest.approx(1e-4, rel=0.2)


@given(st.floats(1.2, 60.0), st.floats(0.1, 10.0))
def test_search_value_is_one_that_was_evaluated(center, scale):
    seen = {}

    def f(orders):
        orders = np.asarray(orders, dtype=float)
        vals = scale * (np.log(orders) - np.log(center)) ** 2
        seen.update(zip(orders.tolist(), vals.tolist()))
        return vals

    grid = np.array([1.5, 2.0, 4.0, 8.0, 16.0, 32.0, 64.0])
    opt = minimize_over_orders(f, grid, f(grid))
    assert seen[opt.order] == opt.value
    assert opt.value <= min(seen.values()) + 0.0


def test_search_stops_at_its_largest_order_when_the_objective_keeps_falling():
    # Regression: a decreasing objective whose grid top is within a factor 2 of max_order looped forever.
    def f(orders):
        return -np.asarray(orders, dtype=float)

    grid = np.array([2.0, 4.0, 600.0])
    opt = minimize_over_orders(f, grid, f(grid), max_order=1000.0)
    assert opt.order == 1000.0
