"""WBK19 Thm 27 for the Gaussian on fixed-size batches without replacement, replace-one: exact Renyi divergences
of tiny instances (mpmath quadrature), an independent high-precision evaluation of the formula, dp_accounting's
values, properties and validation."""

from fractions import Fraction

import mpmath
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from numpy.testing import assert_allclose

from dpledger.mechanisms import GaussianMechanism, LaplaceMechanism, SampledWithoutReplacement
from dpledger.mechanisms.fixed_size_sampling import replace_one_gaussian_rdp, replace_one_rdp
from dpledger.mechanisms.gaussian_moments import MOMENT_MAX_ORDER, log_gaussian_binomial_moments
from tests.oracles import fixed_size_gaussian as oracle


@pytest.mark.parametrize(("n", "b", "sigma"), [(4, 1, 0.7), (4, 3, 0.7), (5, 2, 1.0), (6, 3, 2.0), (6, 2, 0.5)])
def test_exact_renyi_of_tiny_instances_is_below_the_bound(n, b, sigma):
    """Every pair of bit data sets differing in one record (s ones against s +- 1), both orders of the pair:
    the exact Renyi divergence at integer and fractional orders is below the reported bound. (Flipping every bit
    reflects the output, k -> b - k, so the pairs (s, s + 1) with s < n / 2 cover all of them.)"""
    orders = [2, 3, 4, 6]
    m = SampledWithoutReplacement(GaussianMechanism(sigma=sigma), batch_size=b, dataset_size=n)
    bound = m.replace_one_rdp(np.array([*orders, 2.5], dtype=float))
    worst = [mpmath.mpf(0)] * len(orders)
    for s in range((n + 1) // 2):
        for pair in ((s, s + 1), (s + 1, s)):
            for i, a in enumerate(orders):
                worst[i] = max(worst[i], oracle.renyi_replace_one(n, b, *pair, sigma, a, dps=20))
    for i, a in enumerate(orders):
        assert worst[i] <= bound[i], (a, worst[i], bound[i])
    # fractional order: (alpha - 1) D_alpha is convex, so its chord between 2 and 3 is above the exact value
    assert (0.5 * worst[0] + 0.5 * 2 * worst[1]) / 1.5 <= bound[4]


def test_thm_27_is_strictly_tighter_than_thm_9_where_it_should_be():
    """The regime where dp_accounting beat Thm 9 (sigma 4, gamma = 512/60000): strictly below, by > 10 %."""
    orders = np.array([8.0, 16.0, 32.0, 48.0])
    gamma = 512 / 60_000
    new = replace_one_gaussian_rdp(orders, gamma, sigma=4.0)
    old = replace_one_rdp(orders, gamma, GaussianMechanism(sigma=4.0).rdp)
    assert np.all(new < 0.9 * old)


@pytest.mark.parametrize(("sigma", "gamma"), [(4.0, 512 / 60_000), (2.0, 0.02), (10.0, 0.1), (1.1, 0.01),
                                              (0.8, 0.064), (3.0, 0.5)])
def test_formula_matches_an_independent_mpmath_evaluation(sigma, gamma):
    """At or above the formula (rounded up) and within 1e-8 of it (the rounding slack), orders up to the moment
    table; min with the unsampled curve (subsampling never hurts)."""
    orders = [2, 3, 5, 8, 17, 40]
    ours = replace_one_gaussian_rdp(np.array(orders, dtype=float), gamma, sigma=sigma)
    base = GaussianMechanism(sigma=sigma).rdp(np.array(orders, dtype=float))
    for a, value, cap in zip(orders, ours, base):
        exact = min(float(oracle.theorem_27(a, gamma, sigma)), cap)
        assert value >= exact
        assert value <= exact * (1 + 1e-8) + 1e-300


def test_sensitivity_enters_as_the_noise_multiplier():
    orders = np.array([2.0, 7.0, 30.0])
    assert_allclose(replace_one_gaussian_rdp(orders, 0.05, sigma=6.0, sensitivity=2.0),
                    replace_one_gaussian_rdp(orders, 0.05, sigma=3.0), rtol=1e-12)


def test_equal_to_dp_accounting_where_its_floats_are_accurate():
    rdp_module = pytest.importorskip("dp_accounting.rdp.rdp_privacy_accountant")
    orders = [2.0, 3.0, 4.0, 8.0, 16.0, 32.0, 64.0, 2.5, 12.75]
    for sigma, gamma in [(4.0, 512 / 60_000), (2.0, 0.02), (1.1, 0.01), (0.8, 0.064)]:
        ours = replace_one_gaussian_rdp(np.array(orders), gamma, sigma=sigma)
        theirs = np.minimum(rdp_module._compute_rdp_sample_wor_gaussian(gamma, sigma, orders),
                            GaussianMechanism(sigma=sigma).rdp(np.array(orders)))
        assert np.all(ours >= theirs * (1 - 1e-12))
        assert_allclose(ours, theirs, rtol=1e-8)


def test_binomial_moments_enclose_the_exact_values():
    c = Fraction(1, 32)
    logs = log_gaussian_binomial_moments(c)
    assert logs.size - 1 == MOMENT_MAX_ORDER and np.isnan(logs[3]) and logs[0] >= 0.0
    with mpmath.workdps(500):
        cm = mpmath.mpf(1) / 32
        for m in (2, 10, 64, MOMENT_MAX_ORDER):
            exact = mpmath.log(sum((-1) ** (m - k) * mpmath.binomial(m, k) * mpmath.exp(k * (k - 1) * cm)
                                   for k in range(m + 1)))
            assert exact <= logs[m] <= exact + 1e-12 * (1 + abs(exact))


@settings(max_examples=30, deadline=None)
@given(sigma=st.floats(0.3, 50.0), gamma=st.floats(0.0, 1.0),
       orders=st.lists(st.floats(1.01, 300.0), min_size=1, max_size=5))
def test_never_above_thm_9_or_the_unsampled_curve_and_never_negative(sigma, gamma, orders):
    orders = np.array(orders)
    new = replace_one_gaussian_rdp(orders, gamma, sigma=sigma)
    base = GaussianMechanism(sigma=sigma)
    assert np.all(new >= 0.0)
    assert np.all(new <= replace_one_rdp(orders, gamma, base.rdp))
    assert np.all(new <= base.rdp(orders))


def test_only_the_gaussian_mechanism_itself_gets_thm_27():
    lap = SampledWithoutReplacement(LaplaceMechanism(scale=1.0), batch_size=10, dataset_size=1000)
    orders = np.array([2.0, 8.0])
    assert np.array_equal(lap.replace_one_rdp(orders), replace_one_rdp(orders, 0.01, LaplaceMechanism(scale=1.0).rdp))
    gauss = SampledWithoutReplacement(GaussianMechanism(sigma=4.0, sensitivity=2.0), batch_size=10,
                                      dataset_size=1000)
    assert np.array_equal(gauss.replace_one_rdp(orders), replace_one_gaussian_rdp(orders, 0.01, 4.0, 2.0))
    assert replace_one_gaussian_rdp([np.inf], 0.01, 4.0)[0] == np.inf


@pytest.mark.parametrize(
    ("kwargs", "error", "match"),
    [
        ({"orders": [2.0], "gamma": 1.5, "sigma": 1.0}, ValueError, "gamma"),
        ({"orders": [2.0], "gamma": float("nan"), "sigma": 1.0}, ValueError, "gamma"),
        ({"orders": [1.0], "gamma": 0.1, "sigma": 1.0}, ValueError, "orders"),
        ({"orders": [2.0], "gamma": 0.1, "sigma": -1.0}, ValueError, "sigma"),
        ({"orders": [2.0], "gamma": 0.1, "sigma": 1.0, "sensitivity": 0.0}, ValueError, "sensitivity"),
    ],
)
def test_bad_input_is_refused(kwargs, error, match):
    with pytest.raises(error, match=match):
        replace_one_gaussian_rdp(**kwargs)


def test_moment_table_refuses_bad_c():
    with pytest.raises(ValueError, match="positive Fraction"):
        log_gaussian_binomial_moments(0.5)
    with pytest.raises(ValueError, match="positive Fraction"):
        log_gaussian_binomial_moments(Fraction(0))
