"""RandomAllocation and the shuffled-batch lower bound: mpmath oracles for both directions of the dominating pair,
lower <= upper, the published interval for 1 of 10 steps, validation."""

import math

import numpy as np
import pytest

from dpledger.accountants import FourierAccountant, RDPAccountant
from dpledger.mechanisms import (
    GaussianMechanism,
    LaplaceMechanism,
    MissingCapabilityError,
    PoissonSubsampled,
    RandomAllocation,
    SelfComposed,
    shuffled_epsilon_lower_bound,
)
from dpledger.mechanisms.random_allocation import allocation_add_rdp_upper, allocation_remove_rdp
from tests.oracles import random_allocation as oracle


@pytest.mark.parametrize(("mu", "t"), [(0.9, 2), (0.5, 3), (1.5, 4), (2.0, 1)])
def test_removal_divergence_is_the_multinomial_sum(mu, t):
    orders = np.array([2.0, 3.0, 5.0, 6.0])
    ours = allocation_remove_rdp(orders, mu, t)
    exact = np.array([oracle.remove_rdp(int(a), mu, t) for a in orders])
    assert np.all(ours >= exact)
    np.testing.assert_allclose(ours, exact, rtol=1e-6)


@pytest.mark.parametrize(("mu", "order"), [(0.9, 2), (0.9, 3), (0.5, 8), (2.0, 4), (0.2, 2)])
def test_addition_divergence_bound_is_above_the_two_step_value_and_close_to_it(mu, order):
    exact = oracle.add_rdp_two_steps(order, mu)
    bound = allocation_add_rdp_upper(order, mu, 2)
    assert exact <= bound <= exact * 1.01 + 1e-6


def test_one_step_is_the_gaussian_itself():
    g = GaussianMechanism(sigma=1.3)
    for order in (2, 3, 7):
        assert allocation_add_rdp_upper(order, 1 / 1.3, 1) >= g.rdp(float(order))
        assert allocation_add_rdp_upper(order, 1 / 1.3, 1) <= g.rdp(float(order)) * 1.05
    m = RandomAllocation(g, steps=1)
    assert m.rdp(3.0) == pytest.approx(g.rdp(3.0), rel=1e-14)


def test_rdp_is_the_larger_direction_capped_by_the_unamplified_composition():
    g = GaussianMechanism(sigma=1.1)
    m = RandomAllocation(g, steps=10)
    orders = np.array([2.0, 3.0, 4.0, 8.0])
    both = np.maximum(allocation_remove_rdp(orders, 1 / 1.1, 10),
                      [allocation_add_rdp_upper(a, 1 / 1.1, 10) for a in orders])
    np.testing.assert_allclose(m.rdp(orders), np.minimum(both, g.rdp(orders)), rtol=1e-15)
    assert np.all(m.rdp(orders) < g.rdp(orders))
    # the lower bound is the realised removal divergence: below the reported curve, and close to it
    low = m.rdp_lower_bound(orders)
    assert np.all(low <= m.rdp(orders)) and np.all(low >= 0.9 * m.rdp(orders))
    # non-integer orders: the chord of integer values, between its neighbours
    assert m.rdp(2.0) <= m.rdp(2.5) <= m.rdp(3.0)
    assert m.rdp(1000.0) == g.rdp(1000.0) * (1 + 1e-15)  # beyond MAX_AMPLIFIED_ORDER: un-amplified


def test_published_interval_for_one_of_ten_steps():
    """1 of 10 steps, 10 epochs, sigma 1.1, delta 1e-5: Feldman & Shenfeld report an interval around [5.11, 5.20];
    our proven lower bound must lie below its top and our proven upper bound above its bottom; the RDP upper
    bound is below the Poisson epsilon at rate 0.1 of either accountant (RDP 6.61, Fourier 5.91)."""
    m = RandomAllocation(GaussianMechanism(sigma=1.1), steps=10)
    upper = RDPAccountant().compose(m, count=10).get_epsilon(1e-5)
    lower = m.epsilon_lower_bound(1e-5, epochs=10)
    assert lower <= 5.20 and upper >= 5.11
    assert lower < upper
    poisson = PoissonSubsampled(GaussianMechanism(sigma=1.1), sampling_probability=0.1)
    assert upper < FourierAccountant().compose(poisson, count=100).get_epsilon(1e-5) < 5.92
    # recorded value (RDP accountant, this implementation): 5.7224
    assert upper == pytest.approx(5.7224, abs=5e-4)


def test_one_of_a_hundred_steps_for_a_hundred_epochs_is_below_poisson_rdp():
    m = RandomAllocation(GaussianMechanism(sigma=1.1), steps=100)
    upper = RDPAccountant().compose(m, count=100).get_epsilon(1e-5)
    poisson = PoissonSubsampled(GaussianMechanism(sigma=1.1), sampling_probability=0.01)
    assert upper < RDPAccountant().compose(poisson, count=10_000).get_epsilon(1e-5)  # 5.50 < 5.63
    assert m.epsilon_lower_bound(1e-5, epochs=100) < upper
    assert upper == pytest.approx(5.4999, abs=5e-4)  # recorded value (RDP accountant, this implementation)


def test_general_bases_get_the_unamplified_composition_in_both_accountants():
    lap = LaplaceMechanism(scale=3.0)
    m = RandomAllocation(lap, steps=5, selections=2)
    orders = np.array([2.0, 10.0, np.inf])
    np.testing.assert_allclose(m.rdp(orders), 2 * lap.rdp(orders), rtol=1e-14)
    assert m.dominating_mechanism() == SelfComposed(lap, count=2)
    g = GaussianMechanism(sigma=2.0)
    two = RandomAllocation(g, steps=5, selections=2)
    assert two.rdp(3.0) == 2 * g.rdp(3.0) * (1 + 1e-15)
    # the same law; the composed mechanism's enclosure carries its own rounding bound (a few ulps apart)
    assert FourierAccountant().compose(two, count=3).get_epsilon(1e-5) == pytest.approx(
        FourierAccountant().compose(g, count=6).get_epsilon(1e-5), rel=1e-13)
    with pytest.raises(MissingCapabilityError, match="Gaussian"):
        m.epsilon_lower_bound(1e-5)
    with pytest.raises(MissingCapabilityError, match="selections = 1"):
        RandomAllocation(GaussianMechanism(sigma=1.0), steps=5, selections=2).rdp_lower_bound([2.0])


def test_lower_bound_grows_with_epochs_and_falls_with_noise():
    m = RandomAllocation(GaussianMechanism(sigma=1.1), steps=10)
    values = [m.epsilon_lower_bound(1e-5, epochs=e) for e in (1, 5, 20)]
    assert values == sorted(values) and values[0] >= 0.0
    assert RandomAllocation(GaussianMechanism(sigma=3.0), steps=10).epsilon_lower_bound(1e-5, epochs=5) < values[1]


def test_lower_bound_is_below_the_exact_gaussian_profile_for_one_step():
    """steps = 1: the realised pair is the Gaussian mechanism, whose exact epsilon(delta) is known in closed form
    (Balle & Wang 2018); the test-set bound must not exceed it."""
    from tests.oracles.analytic_gaussian import gaussian_epsilon_float

    for sigma, epochs in [(1.0, 1), (2.0, 4)]:
        lower = RandomAllocation(GaussianMechanism(sigma=sigma), steps=1).epsilon_lower_bound(1e-5, epochs=epochs)
        exact = gaussian_epsilon_float(1e-5, math.sqrt(epochs) / sigma)
        assert 0.5 * exact <= lower <= exact


def test_shuffled_batches_report_only_a_lower_bound():
    lower = shuffled_epsilon_lower_bound(sigma=1.1, sensitivity=2.0, steps=10, epochs=10, delta=1e-5)
    assert lower == RandomAllocation(GaussianMechanism(sigma=0.55), steps=10).epsilon_lower_bound(1e-5, epochs=10)
    assert lower > 0.0
    with pytest.raises(ValueError, match="sigma"):
        shuffled_epsilon_lower_bound(sigma=0.0, steps=10, delta=1e-5)


@pytest.mark.parametrize(
    ("kwargs", "error", "match"),
    [({"steps": 0}, ValueError, "steps"), ({"steps": 3, "selections": 4}, ValueError, "at most steps"),
     ({"steps": 3, "selections": 0}, ValueError, "selections"), ({"steps": 2.0}, TypeError, "steps")],
)
def test_bad_input_is_refused(kwargs, error, match):
    with pytest.raises(error, match=match):
        RandomAllocation(GaussianMechanism(sigma=1.0), **kwargs)
