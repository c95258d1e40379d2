"""Known values of the base mechanisms: closed forms against mpmath, edge cases, pure epsilon, custom curves."""

import math

import mpmath as mp
import numpy as np
import pytest
from hypothesis import example, given
from hypothesis import strategies as st
from numpy.testing import assert_allclose, assert_array_equal

from dpledger.mechanisms import (
    CustomRDPMechanism,
    GaussianMechanism,
    LaplaceMechanism,
    MissingCapabilityError,
    NumericalError,
    PureDPMechanism,
    RandomizedResponse,
    ZCDPMechanism,
)
from tests.mechanisms._shared import (
    EPS64,
    closed_form_atol,
    laplace_rdp_mp,
    no_warnings,
    pure_dp_rdp_mp,
    randomized_response_rdp_mp,
)

ORDERS = [1.01, 1.5, 2.0, 3.0, 7.5, 10.0, 100.0, 1000.0, 1e4]


def assert_matches_reference(values, orders, reference):
    """|lib - ref| <= 1e-12 ref + (float64 accuracy of the closed form); reference is a list of mpf."""
    for value, order, ref in zip(np.atleast_1d(values), orders, reference):
        assert abs(value - float(ref)) <= 1e-12 * float(ref) + closed_form_atol(order), (order, value, ref)


# --------------------------------------------------------------------------- Gaussian (Mironov 2017, Prop 7)
@pytest.mark.parametrize("sigma,sensitivity", [(1.0, 1.0), (2.0, 1.0), (0.1, 1.0), (3.0, 2.5), (100.0, 0.5)])
def test_gaussian_rdp_is_alpha_sensitivity_squared_over_two_sigma_squared(sigma, sensitivity):
    m = GaussianMechanism(sigma=sigma, sensitivity=sensitivity)
    orders = np.array(ORDERS)
    assert_allclose(m.rdp(orders), orders * sensitivity**2 / (2 * sigma**2), rtol=1e-15)
    assert m.rdp(np.inf) == np.inf
    assert m.noise_multiplier == pytest.approx(sigma / sensitivity, rel=1e-15)


def test_gaussian_docstring_values_and_scale_invariance():
    assert GaussianMechanism(sigma=2.0).rdp([2.0, 10.0]).tolist() == [0.25, 1.25]
    assert_allclose(GaussianMechanism(sigma=6.0, sensitivity=3.0).rdp(ORDERS), GaussianMechanism(sigma=2.0).rdp(ORDERS))


# --------------------------------------------------------------------------- Laplace (Mironov 2017, Prop 6)
@pytest.mark.parametrize("scale,sensitivity", [(0.1, 1.0), (0.5, 1.0), (1.0, 1.0), (2.0, 1.0), (10.0, 1.0),
                                               (100.0, 1.0), (3.0, 1.5), (0.2, 0.05)])
def test_laplace_matches_mpmath_including_large_orders(scale, sensitivity):
    m = LaplaceMechanism(scale=scale, sensitivity=sensitivity)
    lam = mp.mpf(scale) / mp.mpf(sensitivity)
    assert_matches_reference(m.rdp(ORDERS), ORDERS, [laplace_rdp_mp(a, lam) for a in ORDERS])
    assert m.rdp(np.inf) == pytest.approx(sensitivity / scale, rel=1e-15)
    assert m.pure_epsilon() == pytest.approx(sensitivity / scale, rel=1e-15)
    assert np.all(m.rdp(ORDERS) <= sensitivity / scale)


def test_laplace_docstring_value_and_limit_at_large_order():
    assert float(LaplaceMechanism(scale=1.0).rdp(np.inf)) == 1.0
    # epsilon(alpha) -> 1/lam as alpha -> inf: log(1/2) / (alpha - 1) away from it.
    assert float(LaplaceMechanism(scale=1.0).rdp(1e9)) == pytest.approx(1.0 - math.log(2) / 1e9, rel=1e-12)


# --------------------------------------------------------------------------- randomized response (Prop 5)
@pytest.mark.parametrize("p", [1e-10, 0.1, 0.3, 0.4999, 0.6, 0.75, 0.9, 0.99999])
def test_randomized_response_matches_mpmath(p):
    m = RandomizedResponse(p=p)
    assert_matches_reference(m.rdp(ORDERS), ORDERS, [randomized_response_rdp_mp(a, p) for a in ORDERS])
    assert m.rdp(np.inf) == pytest.approx(abs(math.log(p / (1 - p))), rel=1e-13)


@given(st.floats(1e-6, 0.5))
@example(0.5).via("the symmetric coin: no information")
@example(1e-6)
def test_randomized_response_is_symmetric_in_p(p):
    # 1 - p is rounded, which moves p by at most 2^-53: a relative change of the RDP far below 1e-9.
    for order in ORDERS + [np.inf]:
        a, b = float(RandomizedResponse(p=p).rdp(order)), float(RandomizedResponse(p=1 - p).rdp(order))
        assert abs(a - b) <= 1e-9 * a + closed_form_atol(order) + 4 * EPS64


def test_randomized_response_with_a_fair_coin_is_perfectly_private():
    assert_array_equal(RandomizedResponse(p=0.5).rdp(ORDERS + [np.inf]), 0.0)


@pytest.mark.parametrize("p", [0.0, 1.0])
def test_randomized_response_that_reveals_the_bit_has_no_guarantee(p):
    assert_array_equal(RandomizedResponse(p=p).rdp(ORDERS + [np.inf]), np.inf)
    with pytest.raises(MissingCapabilityError, match="pure"):
        RandomizedResponse(p=p).pure_epsilon()


def test_randomized_response_docstring_value():
    assert round(float(RandomizedResponse(p=0.75).rdp(np.inf)), 12) == 1.098612288668


# --------------------------------------------------------------------------- pure DP (Kairouz et al. 2015)
@pytest.mark.parametrize("epsilon", [1e-4, 0.01, 0.1, 1.0, 5.0, 50.0])
def test_pure_dp_is_randomized_response_with_p_equal_e_eps_over_one_plus_e_eps(epsilon):
    m = PureDPMechanism(epsilon=epsilon)
    assert_matches_reference(m.rdp(ORDERS), ORDERS, [pure_dp_rdp_mp(a, epsilon) for a in ORDERS])
    assert m.rdp(np.inf) == pytest.approx(epsilon, rel=1e-15)
    if epsilon <= 5.0:
        p = math.exp(epsilon) / (1 + math.exp(epsilon))
        assert_allclose(m.rdp(ORDERS), RandomizedResponse(p=p).rdp(ORDERS), rtol=1e-9, atol=1e-14)


@given(st.floats(0.0, 20.0), st.one_of(st.floats(1.001, 1e4), st.integers(2, 10_000).map(float)))
@example(0.0, 2.0)
@example(20.0, 1.001)
@example(1e-3, 1e4)
def test_pure_dp_rdp_is_below_epsilon_and_below_the_zcdp_bound(epsilon, order):
    # Bun & Steinke 2016, Prop 3.3: eps-DP implies (eps^2 / 2)-zCDP.
    value = float(PureDPMechanism(epsilon=epsilon).rdp(order))
    assert 0.0 <= value <= min(epsilon, order * epsilon**2 / 2) * (1 + 1e-12) + closed_form_atol(order)


def test_pure_dp_with_huge_epsilon_stays_finite():
    assert float(PureDPMechanism(epsilon=700.0).rdp(2.0)) == pytest.approx(float(pure_dp_rdp_mp(2.0, 700)), rel=1e-14)
    assert float(PureDPMechanism(epsilon=700.0).rdp(np.inf)) == 700.0


# --------------------------------------------------------------------------- below the exact value
# Formerly the closed forms cancelled catastrophically and were not rounded up: Laplace(scale=1000).rdp(2) was
# 4.9e-11 relative below exact, PureDP(1e-4).rdp(2) 1.9e-9, RR(0.4999).rdp(1.01) 1.3e-8, PureDP(1e-8).rdp(1.01)
# returned 0.0 (exact 5.05e-17). They are now rounded up by a slack of order eps log(2) / (alpha - 1).
@pytest.mark.parametrize("mechanism,order,reference", [
    (LaplaceMechanism(scale=1000.0), 2.0, lambda: laplace_rdp_mp(2.0, 1000)),
    (PureDPMechanism(epsilon=1e-4), 2.0, lambda: pure_dp_rdp_mp(2.0, 1e-4)),
    (RandomizedResponse(p=0.4999), 1.01, lambda: randomized_response_rdp_mp(1.01, 0.4999)),
    (PureDPMechanism(epsilon=1e-8), 1.01, lambda: pure_dp_rdp_mp(1.01, 1e-8)),
], ids=["laplace-1000", "pure-1e-4", "rr-0.4999", "pure-1e-8"])
def test_base_curves_are_never_below_the_exact_value(mechanism, order, reference):
    value, ref = float(mechanism.rdp(order)), float(reference())
    assert value >= ref * (1 - 1e-15)  # the rounding of the reference's float only
    assert value <= ref * (1 + 1e-12) + closed_form_atol(order)  # ... and above it by the documented slack only


def test_laplace_at_the_largest_finite_orders_is_close_to_its_pure_epsilon():
    # Formerly 2 alpha - 1 overflowed for alpha > ~9e307: 0.0 instead of ~1/lam, with an overflow RuntimeWarning.
    with no_warnings():
        value = float(LaplaceMechanism(scale=1.0).rdp(1e308))
    assert value == pytest.approx(1.0, rel=1e-12)


# --------------------------------------------------------------------------- zCDP
@pytest.mark.parametrize("rho", [1e-6, 0.1, 2.0])
def test_zcdp_rdp_is_rho_times_alpha(rho):
    orders = np.array(ORDERS)
    assert_allclose(ZCDPMechanism(rho=rho).rdp(orders), rho * orders, rtol=1e-15)
    assert ZCDPMechanism(rho=rho).rdp(np.inf) == np.inf
    with pytest.raises(MissingCapabilityError):
        ZCDPMechanism(rho=rho).pure_epsilon()


def test_zero_rho_is_perfectly_private_even_at_order_inf():
    assert_array_equal(ZCDPMechanism(rho=0.0).rdp(ORDERS + [np.inf]), 0.0)
    assert ZCDPMechanism(rho=0.0).pure_epsilon() == 0.0


# --------------------------------------------------------------------------- custom curves
def test_custom_mechanism_passes_its_curve_through_unchanged():
    orders = np.array([[1.5, 2.0], [10.0, np.inf]])
    m = CustomRDPMechanism(lambda a: np.where(np.isinf(a), np.inf, a / 8.0), name="my gaussian")
    assert_array_equal(m.rdp(orders), np.where(np.isinf(orders), np.inf, orders / 8.0))
    assert m.rdp([2.0, 4.0]).tolist() == [0.25, 0.5]


def test_custom_function_sees_a_flat_float64_copy_and_may_return_a_scalar():
    seen = []

    def curve(orders):
        seen.append((orders.dtype, orders.shape))
        orders[:] = 1e9  # must not leak into the caller's array
        return 0.5

    orders = np.array([[2.0, 3.0], [4.0, 5.0]])
    assert_array_equal(CustomRDPMechanism(curve).rdp(orders), np.full((2, 2), 0.5))
    assert seen == [(np.float64, (4,))]
    assert_array_equal(orders, [[2.0, 3.0], [4.0, 5.0]])


@pytest.mark.parametrize("curve,match", [
    (lambda a: np.full(a.shape, np.nan), "returned NaN"),
    (lambda a: -a, "negative RDP"),
    (lambda a: np.zeros(a.size + 1), "shape"),
    (lambda a: np.zeros((a.size, 1)), "vectorised"),
], ids=["nan", "negative", "too-long", "column"])
def test_custom_mechanism_rejects_invalid_output_with_a_clear_error(curve, match):
    m = CustomRDPMechanism(curve, name="bad curve")
    with pytest.raises(NumericalError, match=match) as info:
        m.rdp([2.0, 3.0])
    assert "bad curve" in str(info.value)
