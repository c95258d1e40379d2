"""One run of a mechanism with an exact profile (the subsampled Gaussian): the Fourier accountant reports the
profile itself, with its rounding bounded, instead of inverting a characteristic function (issue 14 item 2: the
one-step cells of small sampling probability, whose characteristic functions barely decay)."""

import math

import mpmath as mp
from hypothesis import example, given, settings
from hypothesis import strategies as st

from dpledger.accountants import FourierAccountant
from dpledger.accountants.report import BoundKind
from dpledger.mechanisms import GaussianMechanism, PoissonSubsampled
from dpledger.mechanisms.relations import Direction
from tests.oracles import privacy_profiles as pp

ORACLE = {Direction.REMOVE: "remove", Direction.ADD: "add"}


@settings(max_examples=40, deadline=None)
@given(st.floats(0.3, 30.0), st.floats(-7.0, 0.0).map(lambda e: 10.0**e), st.floats(-8.0, 1.3).map(lambda e: 10.0**e))
@example(1.0, 1.0, 0.5)  # no subsampling: the analytic Gaussian
@example(0.6, 1e-4, 1e-4)  # add direction just below its threshold -log(1 - q)
def test_one_run_bounds_contain_the_exact_profile(sigma, q, epsilon):
    m = PoissonSubsampled(GaussianMechanism(sigma=sigma), q)
    for direction in Direction:
        lower, upper = m.delta_bounds_one_run(epsilon, direction)
        exact = pp.subsampled_gaussian_delta_direction(epsilon, q, sigma, 1, ORACLE[direction], dps=40)
        tiny = mp.mpf(10) ** -35  # the oracle's precision
        assert mp.mpf(lower) <= exact + tiny and exact <= mp.mpf(upper) + tiny, (direction, lower, exact, upper)
        if upper > 1e-30:  # and tight (far in the tail, cancellation and log_ndtr's error allowance cost digits)
            assert upper - lower <= 1e-7 * upper


@settings(max_examples=15, deadline=None)
@given(st.floats(0.5, 20.0), st.floats(-6.0, 0.0).map(lambda e: 10.0**e), st.floats(-12.0, -2.0).map(lambda e: 10.0**e))
def test_one_run_epsilon_interval_straddles_delta(sigma, q, delta):
    fa = FourierAccountant().compose(PoissonSubsampled(GaussianMechanism(sigma=sigma), q))
    b = fa.epsilon_bounds(delta)
    assert fa.bound_kind is BoundKind.UPPER and b.lower <= b.upper and math.isfinite(b.upper)
    assert pp.subsampled_gaussian_profile(b.upper, q, sigma, 1) <= delta * (1 + 1e-12)
    if b.lower > 0:
        assert pp.subsampled_gaussian_profile(b.lower, q, sigma, 1) >= delta * (1 - 1e-12)


def test_only_a_single_run_takes_the_exact_path():
    m = PoissonSubsampled(GaussianMechanism(sigma=2.0), 0.1)
    one = FourierAccountant().compose(m)
    assert "exact privacy profile of the single run" in one.epsilon_report(1e-5).method
    two = FourierAccountant().compose(m, count=2)
    assert "exact privacy profile" not in two.epsilon_report(1e-5).method
    # the two paths agree where both apply: one run, by inversion through a Gaussian of negligible weight
    mixed = FourierAccountant().compose(m).compose(GaussianMechanism(sigma=1e6))
    assert abs(mixed.get_epsilon(1e-5) - one.get_epsilon(1e-5)) <= 1e-5 * one.get_epsilon(1e-5)
