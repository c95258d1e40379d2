"""Composition combinators: RDP adds at every order (Mironov 2017, Prop 1), including order inf."""

import fractions
import math

import numpy as np
import pytest
from hypothesis import example, given
from hypothesis import strategies as st
from numpy.testing import assert_allclose, assert_array_equal

from dpledger.mechanisms import (
    Composed,
    CustomRDPMechanism,
    GaussianMechanism,
    LaplaceMechanism,
    MissingCapabilityError,
    PoissonSubsampled,
    PureDPMechanism,
    RandomizedResponse,
    SelfComposed,
    ZCDPMechanism,
)
from tests.mechanisms._shared import base_mechanisms, real_orders, subsampled

F = fractions.Fraction


def assert_rounded_up(got, exact_terms):
    """``got`` is the smallest float at or above the exact sum of ``exact_terms`` (Fractions or infinities)."""
    got = np.atleast_1d(np.asarray(got, dtype=np.float64))
    for i, value in enumerate(got):
        terms = [t[i] for t in exact_terms]
        if any(t == math.inf for t in terms):
            assert value == math.inf
            continue
        exact = sum(terms, F(0))
        assert F(float(value)) >= exact, (value, float(exact))
        below = float(np.nextafter(value, -np.inf))
        assert F(below) < exact or F(float(value)) == exact, (value, float(exact))


def exact_values(values, factor=1):
    return [math.inf if v == math.inf else F(factor) * F(float(v)) for v in np.atleast_1d(values)]

mechanisms = st.one_of(base_mechanisms, subsampled)
order_arrays = st.lists(real_orders, min_size=1, max_size=6).map(np.array)


@given(mechanisms, mechanisms, order_arrays)
@example(GaussianMechanism(sigma=1.0), LaplaceMechanism(scale=1.0), np.array([2.0, np.inf]))
@example(RandomizedResponse(p=0.5), ZCDPMechanism(rho=0.0), np.array([1.01, np.inf]))
@example(GaussianMechanism(sigma=0.5), LaplaceMechanism(scale=1.0), np.array([2.0]))  # nearest sum is below exact
def test_composition_of_two_mechanisms_adds_their_rdp(a, b, orders):
    # rounded up after the float addition (issue 12 item 2), the smallest float at or above the exact sum
    assert_rounded_up(Composed([a, b]).rdp(orders), [exact_values(a.rdp(orders)), exact_values(b.rdp(orders))])


@given(mechanisms, st.integers(1, 50), order_arrays)
@example(PureDPMechanism(epsilon=0.5), 3, np.array([np.inf]))
@example(GaussianMechanism(sigma=0.51), 7, np.array([3.0]))  # 7 * rdp to nearest is below the exact product
def test_self_composition_multiplies_and_equals_repeated_composition(m, count, orders):
    single = m.rdp(orders)
    assert_rounded_up(SelfComposed(m, count=count).rdp(orders), [exact_values(single, count)])
    assert_allclose(Composed([m] * count).rdp(orders), count * single, rtol=1e-13)


@given(mechanisms, order_arrays)
def test_self_composition_once_is_the_mechanism_itself(m, orders):
    assert_array_equal(SelfComposed(m, count=1).rdp(orders), m.rdp(orders))
    assert_array_equal(Composed([m]).rdp(orders), m.rdp(orders))


@given(st.lists(mechanisms, min_size=1, max_size=5), order_arrays)
def test_composition_is_order_independent_and_associative(items, orders):
    flat = Composed(items).rdp(orders)
    assert_allclose(Composed(items[::-1]).rdp(orders), flat, rtol=1e-13)
    nested = Composed([Composed(items[:1]), Composed(items[1:])]) if len(items) > 1 else Composed(items)
    assert_allclose(nested.rdp(orders), flat, rtol=1e-13)


@given(st.floats(0.1, 50.0), st.floats(0.1, 50.0), order_arrays)
def test_composed_gaussians_are_a_gaussian_with_combined_noise(s1, s2, orders):
    # alpha/(2 s1^2) + alpha/(2 s2^2) = alpha/(2 s^2) with s^-2 = s1^-2 + s2^-2 (Dong, Roth & Su 2019, Cor 3.3).
    sigma = (s1**-2 + s2**-2) ** -0.5
    expected = GaussianMechanism(sigma=sigma).rdp(orders)
    assert_allclose(Composed([GaussianMechanism(sigma=s1), GaussianMechanism(sigma=s2)]).rdp(orders), expected,
                    rtol=1e-13)


@pytest.mark.parametrize("count", [1, 4, 1000, 10**9])
def test_self_composed_gaussian_is_a_gaussian_with_sigma_over_root_count(count):
    orders = np.array([1.5, 2.0, 32.0, 1e4])
    expected = GaussianMechanism(sigma=3.0 / math.sqrt(count)).rdp(orders)
    assert_allclose(SelfComposed(GaussianMechanism(sigma=3.0), count=count).rdp(orders), expected, rtol=1e-14)


def test_pure_dp_composes_by_basic_composition_at_order_inf():
    m = Composed([LaplaceMechanism(scale=1.0), LaplaceMechanism(scale=2.0), PureDPMechanism(epsilon=0.25)])
    assert float(m.rdp(np.inf)) == pytest.approx(1.75, rel=1e-15)
    assert m.pure_epsilon() == pytest.approx(1.75, rel=1e-15)
    assert SelfComposed(RandomizedResponse(p=0.75), count=3).pure_epsilon() == pytest.approx(3 * math.log(3))


def test_no_privacy_propagates_through_composition():
    m = Composed([GaussianMechanism(sigma=1.0), LaplaceMechanism(scale=1.0)])
    assert float(m.rdp(np.inf)) == np.inf
    with pytest.raises(MissingCapabilityError):
        m.pure_epsilon()
    assert_array_equal(SelfComposed(RandomizedResponse(p=1.0), count=2).rdp([2.0, 3.5]), np.inf)
    assert_array_equal(Composed([RandomizedResponse(p=0.0), ZCDPMechanism(rho=0.0)]).rdp([2.0, np.inf]), np.inf)


def test_perfectly_private_parts_add_nothing():
    m = GaussianMechanism(sigma=2.0)
    orders = np.array([1.5, 2.0, 100.0])
    parts = [m, ZCDPMechanism(rho=0.0), RandomizedResponse(p=0.5), PureDPMechanism(epsilon=0.0),
             PoissonSubsampled(m, sampling_probability=0.0)]
    assert_array_equal(Composed(parts).rdp(orders), m.rdp(orders))


def test_combinators_nest_and_reach_their_children_by_name():
    step = PoissonSubsampled(GaussianMechanism(sigma=1.1), sampling_probability=0.01)
    epoch = SelfComposed(step, count=100)
    run = Composed([epoch, SelfComposed(LaplaceMechanism(scale=5.0), count=3)])
    assert run.mechanisms[0].mechanism.mechanism.sigma == 1.1
    assert run.mechanisms[0].count == 100 and run.mechanisms[1].mechanism.scale == 5.0
    orders = np.array([2.0, 8.0, 20.5])
    expected = 100 * step.rdp(orders) + 3 * LaplaceMechanism(scale=5.0).rdp(orders)
    assert_allclose(run.rdp(orders), expected, rtol=1e-14)
    assert_allclose(SelfComposed(run, count=2).rdp(orders), 2 * expected, rtol=1e-14)


def test_composed_stores_a_tuple_from_any_iterable():
    items = [GaussianMechanism(sigma=1.0), LaplaceMechanism(scale=1.0)]
    from_generator = Composed(m for m in items)
    assert from_generator.mechanisms == tuple(items)
    assert from_generator == Composed(items) == Composed(tuple(items))
    assert hash(from_generator) == hash(Composed(items))


def test_subsampling_a_composition_uses_the_general_bound_on_the_summed_curve():
    # A composition of Gaussians is not flagged Pearson-Vajda, so it gets the general (factor 3) bound: looser than
    # the tight bound of the equivalent single Gaussian but never below it.
    orders = np.array([2.0, 3.0, 10.0, 64.0])
    composed = PoissonSubsampled(SelfComposed(GaussianMechanism(sigma=2.0), count=4), sampling_probability=0.05)
    single = PoissonSubsampled(GaussianMechanism(sigma=1.0), sampling_probability=0.05)
    assert np.all(composed.rdp(orders) >= single.rdp(orders) * (1 - 1e-13))
    custom = PoissonSubsampled(CustomRDPMechanism(lambda a: a / 2.0), sampling_probability=0.05)
    assert_allclose(composed.rdp(orders), custom.rdp(orders), rtol=1e-13)
