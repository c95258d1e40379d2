"""Base RDP curves are upper bounds after all float error (issue 12 item 2), checked against mpmath.

Every property compares the library's float64 value with the exact value of the closed form at the same float
inputs (mpmath at 80 digits, or exact rationals), and requires ``exact <= value <= exact (1 + 1e-13)``: a
proven upper bound that is still tight to a few dozen ulps. The ``@example`` cases are the measured failures of
the code before the fix.
"""

import fractions

import mpmath as mp
import numpy as np
import pytest
from hypothesis import assume, example, given
from hypothesis import strategies as st

from dpledger.mechanisms import CustomRDPMechanism, GaussianMechanism, LaplaceMechanism, ZCDPMechanism
from dpledger.mechanisms._logmath import expm1_minus_linear, mul_up, ratio_up, round_up
from dpledger.mechanisms.noisy_screening import NoisyScreening, subsampled_screening
from tests.oracles import mpmath_screening as screening_oracle

DPS = 80
TIGHT = 1e-13


def laplace_rdp_exact(order, scale, sensitivity=1.0):
    """Mironov 2017, Prop 6 at the float inputs; order inf gives ``sensitivity / scale``. The argument of the
    logarithm is ``1 + O(alpha t^2)``: 80 digits plus ``2 |log10 t|`` keep the value to 80 digits."""
    t_float = sensitivity / scale
    extra = max(0, int(-2 * np.log10(t_float))) if t_float > 0 else 0
    with mp.workdps(DPS + extra):
        t = mp.mpf(sensitivity) / mp.mpf(scale)
        if order == float("inf"):
            return t
        a = mp.mpf(order)
        inner = a / (2 * a - 1) * mp.exp((a - 1) * t) + (a - 1) / (2 * a - 1) * mp.exp(-a * t)
        return mp.log(inner) / (a - 1)


def assert_tight_upper(value, exact, rtol=TIGHT):
    value = float(value)
    with mp.workdps(DPS):
        assert mp.mpf(value) >= exact, (value, mp.nstr(exact, 25))
        assert mp.mpf(value) <= exact * (1 + mp.mpf(rtol)) + mp.mpf(2.0**-1070), (value, mp.nstr(exact, 25))


orders_near_one = st.floats(-15.9, -1.0).map(lambda e: 1.0 + 10.0**e)
orders_large = st.floats(0.0, 17.0).map(lambda e: 1.0 + 10.0**e)


# ---------------------------------------------------------------------------------------------- Laplace
scales = st.one_of(st.floats(1e-3, 1.0), st.floats(1.0, 1e7))


@given(scale=scales, order=st.one_of(orders_near_one, orders_large))
# measured before the fix: 5.6e-5 relative below exact (the case)
@example(scale=5516.0, order=1.0 + 5e-9)
# measured before the fix: 1.0e-2 relative below (scale 1e6, order 1 + 5e-9) and 2.0e-6 (order 1 + 1e-12)
@example(scale=1e6, order=1.0 + 5e-9)
@example(scale=1e6, order=1.0 + 1e-12)
@example(scale=1.0, order=1.0 + 1e-12)  # 1.7e-12 relative below before
def test_laplace_rdp_is_a_tight_upper_bound(scale, order):
    assert_tight_upper(LaplaceMechanism(scale=scale).rdp(order), laplace_rdp_exact(order, scale))


def test_laplace_pinned_value_near_order_one():
    # mpmath, 80 digits, of Mironov 2017 Prop 6 at scale 5516, order float(1 + 5e-9): 1.643218241302816078...e-8;
    # the old evaluation returned 1.64312760415781e-08 (5.6e-5 relative too small).
    value = float(LaplaceMechanism(scale=5516.0).rdp(1.0 + 5e-9))
    assert value >= 1.643218241302816078602376e-8
    np.testing.assert_allclose(value, 1.643218241302816078602376e-8, rtol=1e-14)


@given(
    log10_scale=st.floats(-300.0, 300.0),
    log10_sensitivity=st.floats(-3.0, 3.0),
    order=st.one_of(orders_near_one, orders_large, st.just(float("inf"))),
)
@example(log10_scale=130.0, log10_sensitivity=0.0, order=2.0)  # t below 2^-400: the zCDP bound
@example(log10_scale=-300.0, log10_sensitivity=0.0, order=1.5)  # t = 1e300: the large branch, clipped at t
@example(log10_scale=np.log10(3.0), log10_sensitivity=0.0, order=float("inf"))  # 1/3 rounded up
@example(log10_scale=43.0, log10_sensitivity=0.0, order=100000001.0)  # needs a 166-digit oracle
def test_laplace_extreme_parameters_never_below_exact(log10_scale, log10_sensitivity, order):
    scale, sensitivity = float(10.0**log10_scale), float(10.0**log10_sensitivity)
    value = float(LaplaceMechanism(scale=scale, sensitivity=sensitivity).rdp(order))
    exact = laplace_rdp_exact(order, scale, sensitivity)
    with mp.workdps(DPS):
        assert mp.mpf(value) >= exact
        # never looser than the pure epsilon (rounded up) and never 0 for a positive exact value
        assert value <= ratio_up(sensitivity, scale)
        assert value > 0.0


def test_laplace_pure_epsilon_rounded_up():
    # 1/3 has no float64 representation; the nearest float 0.333...33 is below it
    assert fractions.Fraction(float(LaplaceMechanism(scale=3.0).rdp(np.inf))) >= fractions.Fraction(1, 3)
    assert float(LaplaceMechanism(scale=1.0).rdp(np.inf)) == 1.0  # exact values are not moved


# --------------------------------------------------------------------------------------------- Gaussian
def gaussian_rdp_exact(order, sigma, sensitivity=1.0):
    """``alpha sensitivity^2 / (2 sigma^2)`` in exact rational arithmetic at the float inputs."""
    f = fractions.Fraction
    return f(order) * f(sensitivity) ** 2 / (2 * f(sigma) ** 2)


@given(sigma=st.one_of(st.floats(0.1, 1.0), st.floats(1.0, 1e3)), order=st.one_of(orders_near_one, orders_large))
# before the fix alpha / (2 sigma^2) was rounded to nearest: 5.5e-18 relative below exact here
@example(sigma=93.52672065164049, order=1.0000000000009024)
@example(sigma=1.947805262194351, order=327.8316575216201)  # 9.5e-17 relative below before
@example(sigma=511.2737263562497, order=1.1)  # three floats above exact
def test_gaussian_rdp_is_within_a_few_floats_above_exact(sigma, order):
    value = float(GaussianMechanism(sigma=sigma).rdp(order))
    exact = gaussian_rdp_exact(order, sigma)
    assert fractions.Fraction(value) >= exact
    below = value
    for _ in range(4):
        below = np.nextafter(below, 0.0)
    assert fractions.Fraction(float(below)) < exact  # tight: two roundings up, a few floats at most


def test_gaussian_pinned_ulp_case():
    sigma, order = 93.52672065164049, 1.0000000000009024
    exact = gaussian_rdp_exact(order, sigma)
    old = order / (2.0 * sigma**2)  # the former evaluation
    assert fractions.Fraction(old) < exact
    value = float(GaussianMechanism(sigma=sigma).rdp(order))
    assert fractions.Fraction(value) >= exact
    assert value <= float(np.nextafter(np.nextafter(old, np.inf), np.inf))


def test_gaussian_huge_sigma_is_positive():
    # sigma^2 overflows float64: the former evaluation returned 0.0 for a positive exact value
    assert float(GaussianMechanism(sigma=1e200).rdp(2.0)) > 0.0


# ----------------------------------------------------------------------------------- zCDP and custom RDP
@given(log10_rho=st.floats(-8.0, 3.0), order=st.one_of(orders_near_one, orders_large))
@example(log10_rho=np.log10(4.085021651062883), order=1.000000000008559)  # rho * alpha rounded down before
def test_zcdp_rdp_is_the_smallest_float_above_exact(log10_rho, order):
    rho = float(10.0**log10_rho)
    value = float(ZCDPMechanism(rho=rho).rdp(order))
    exact = fractions.Fraction(rho) * fractions.Fraction(order)
    assert fractions.Fraction(value) >= exact
    assert fractions.Fraction(float(np.nextafter(value, 0.0))) < exact


@pytest.mark.parametrize(
    "make",
    [
        lambda a: np.array([fractions.Fraction(1, 3)] * a.size, dtype=object),
        lambda a: np.full(a.shape, np.longdouble(1) / np.longdouble(3)),
        lambda a: [mp.mpf(1) / 3] * a.size,
        lambda a: np.array([2**60 + 1] * a.size, dtype=object),
    ],
)
def test_custom_rdp_values_are_converted_upwards(make):
    exact = make(np.array([2.0]))[0]
    value = float(CustomRDPMechanism(make).rdp(2.0))
    if isinstance(exact, np.longdouble):
        assert np.longdouble(value) >= exact
    else:
        assert value >= exact  # Fraction, mpf and int compare exactly with a float


def test_custom_rdp_fraction_was_rounded_down_before():
    # the former np.asarray(..., dtype=float64) rounded 1/3 to nearest, below it
    assert fractions.Fraction(float(np.asarray(fractions.Fraction(1, 3), dtype=np.float64))) < fractions.Fraction(1, 3)
    value = float(CustomRDPMechanism(lambda a: np.array([fractions.Fraction(1, 3)] * a.size, dtype=object)).rdp(2.0))
    assert fractions.Fraction(value) > fractions.Fraction(1, 3)


# ----------------------------------------------------------------------------------------- the helpers
@given(a=st.floats(-1e300, 1e300, allow_subnormal=True), b=st.floats(-1e300, 1e300, allow_subnormal=True))
@example(a=0.1, b=3.0)
@example(a=1e-300, b=1e-300)
@example(a=1e200, b=1e200)
@example(a=2.5274804788308296e269, b=-7.112589592358387e38)  # TwoProduct overflowed inside (fixed)
@example(a=2.5274804788309733e269, b=-7.112589592358777e38)  # negative overflow: -max, not -inf
def test_mul_up_is_at_or_above_the_exact_product(a, b):
    value = float(mul_up(a, b))
    exact = fractions.Fraction(a) * fractions.Fraction(b)
    if np.isfinite(value):
        assert fractions.Fraction(value) >= exact
        with np.errstate(over="ignore"):
            below = np.nextafter(np.nextafter(value, -np.inf), -np.inf)
        assert fractions.Fraction(float(below)) < exact if np.isfinite(below) else True  # tight
    else:
        assert value == np.inf and exact > fractions.Fraction(np.finfo(np.float64).max)


@given(y=st.floats(-50.0, 2.0))
@example(y=0.5)
@example(y=-0.5)
@example(y=1e-300)
@example(y=9.913668797757109e-71)
def test_expm1_minus_linear_within_its_stated_error(y):
    if abs(y) <= 2.0**-500:  # y^2 underflows: only the absolute error is stated
        assert 0.0 <= float(expm1_minus_linear(y)) <= 2.0**-1000
        return
    digits = DPS + max(0, int(-2 * np.log10(abs(y))))  # e^y - 1 - y ~ y^2/2 cancels 2 |log10 y| digits
    with mp.workdps(digits):
        exact = mp.expm1(mp.mpf(y)) - mp.mpf(y)
        assert abs(mp.mpf(float(expm1_minus_linear(y))) - exact) <= 13 * np.finfo(float).eps * exact


def test_round_up_moves_up():
    assert float(round_up(1.0, 4)) > 1.0
    assert float(round_up(0.0, 4)) > 0.0
    assert float(round_up(np.inf, 4)) == np.inf


@given(st.floats(allow_nan=True, allow_infinity=True), st.sampled_from([1, 4, 16]))
@example(1.7976931348623157e308, 16)
@example(-5e-324, 4)
def test_round_up_of_a_scalar_is_that_of_a_one_element_array(x, ulps):
    """The scalar path (Python floats) takes the array path's steps: the same float, as a numpy float64, and at
    least the exact value of the argument (its own rounding of at least 4 ulps, with its absolute part)."""
    scalar, array = round_up(x, ulps), round_up(np.array([x]), ulps)[0]
    assert type(scalar) is np.float64
    assert scalar == array or (np.isnan(scalar) and np.isnan(array))
    if np.isfinite(x) and ulps > 1 and np.isfinite(scalar):  # (an overflow to inf is above every float)
        assert fractions.Fraction(float(scalar)) >= fractions.Fraction(x) + (
            abs(fractions.Fraction(x)) * (ulps - 1) * fractions.Fraction(np.finfo(float).eps))


# ------------------------------------------------------------------- noisy screening (Private-kNN Thm 9)


def assert_screening_upper(value, exact):
    """At or above the exact value, and within 1e-10 relative of it plus 1e-320 (subnormal results carry an
    absolute error of a few spacings of 5e-324)."""
    value = float(value)
    with mp.workdps(DPS):
        assert mp.mpf(value) >= exact, (value, mp.nstr(exact, 20))
        assert mp.mpf(value) <= exact * (1 + mp.mpf(1e-10)) + mp.mpf(1e-320), (value, mp.nstr(exact, 20))


@given(
    k=st.integers(1, 6),
    sigma=st.one_of(st.floats(0.3, 1.0), st.floats(1.0, 100.0)),
    offset=st.floats(-5.0, 60.0),
    order=st.one_of(orders_near_one, orders_large, st.just(float("inf"))),
)
# measured before the fix (min_plurality 0): 2.1e-4 relative below exact near order 1 (v far from 0)
@example(k=9 - 3, sigma=4.252, offset=96.24 - 6.0, order=1.0000000000015798)
@example(k=1, sigma=0.421, offset=-3.97 - 1.0, order=1.0000000000063012)
@example(k=1, sigma=0.37, offset=2.0 - 1.0, order=1.000000001)  # 9.9e-8 below before
# threshold above k, sigma 0.37: the exact value 3.3e-544 was reported as 0.0 (underflow)
@example(k=1, sigma=0.37, offset=20.0 - 1.0, order=1.5)
@example(k=1, sigma=1.0, offset=40.0 - 1.0, order=1.5)  # exact 4.1e-324, reported 0.0 before
@example(k=5, sigma=0.3, offset=20.0 - 5.0, order=1e5)  # deep tails, large order
@example(k=1, sigma=0.3, offset=30.0 - 1.0, order=3e5)
def test_screening_rdp_is_an_upper_bound_in_extreme_tails(k, sigma, offset, order):
    threshold = float(k + offset)  # offset > 0: threshold above k, every plurality deep in the lower tail
    m = NoisyScreening(k=k, threshold=threshold, sigma=sigma, num_classes=2, min_plurality=0)
    exact = screening_oracle.screening_rdp(order, k, threshold, sigma, 0)
    assert_screening_upper(m.rdp(order), exact)


def test_screening_pinned_values():
    # mpmath oracle (tests/oracles/mpmath_screening.py, 50 digits); the old values were 0.0, 0.0 and
    # 2.9139071608544996e-93 (2.1e-4 relative below)
    cases = [
        (dict(k=1, threshold=20.0, sigma=0.37), 1.5, 0),
        (dict(k=1, threshold=40.0, sigma=1.0), 1.5, 0),
        (dict(k=9, threshold=96.24, sigma=4.252), 1.0000000000015798, 0),
    ]
    for params, order, lo in cases:
        m = NoisyScreening(num_classes=2, min_plurality=lo, **params)
        exact = screening_oracle.screening_rdp(order, params["k"], params["threshold"], params["sigma"], lo)
        value = float(m.rdp(order))
        assert value > 0.0
        assert_screening_upper(value, exact)
    order = 1.0000000000015798
    m = NoisyScreening(k=9, threshold=96.24, sigma=4.252, num_classes=2, min_plurality=0)
    np.testing.assert_allclose(
        float(m.rdp(order)), float(screening_oracle.screening_rdp(order, 9, 96.24, 4.252, 0)), rtol=1e-10
    )


def subsampled_pairwise_exact(order, k, threshold, sigma, gamma, digits=600):
    """Exact pairwise bound of SubsampledScreening (both divergences between Bern((1-g) p_t + g p_t') and
    Bern(p_t) over neighbouring pluralities, lo = 0) at ``digits`` digits: enough that ``1 - p`` keeps ``p`` down
    to 1e-500 (tests/oracles/mpmath_screening.py works at 100 digits, where ``log(1 - m)`` of a tail of 1e-98
    loses everything)."""
    with mp.workdps(digits):
        a, g = mp.mpf(order), mp.mpf(gamma)
        probs = [mp.ncdf((mp.mpf(t) - mp.mpf(threshold)) / mp.mpf(sigma)) for t in range(k + 1)]

        def renyi(p, q):
            return mp.log(p**a * q ** (1 - a) + (1 - p) ** a * (1 - q) ** (1 - a)) / (a - 1)

        best = mp.mpf(0)
        for t in range(k):
            for with_x, without in ((t + 1, t), (t, t + 1)):
                q = probs[without]
                m = (1 - g) * q + g * probs[with_x]
                best = max(best, renyi(m, q), renyi(q, m))
        return best


@given(
    k=st.integers(2, 5),
    sigma=st.floats(0.3, 20.0),
    offset=st.floats(-3.0, 30.0),
    gamma=st.floats(0.001, 1.0),
    order=st.one_of(orders_near_one, st.floats(1.5, 1e3)),
)
@example(k=3, sigma=0.37, offset=5.0, gamma=0.3, order=1.000000001)
@example(k=3, sigma=0.37, offset=5.0, gamma=1.0, order=50.0)
@example(k=2, sigma=1.0, offset=21.0, gamma=1.0, order=1.1)  # the 100-digit oracle is wrong here, 600 digits not
def test_subsampled_screening_pairwise_is_an_upper_bound(k, sigma, offset, gamma, order):
    threshold = float(k + offset)
    assume(threshold / sigma <= 40.0)  # tails above 1e-350, inside the 600-digit oracle's reach
    s = NoisyScreening(k=k, threshold=threshold, sigma=sigma, num_classes=2, min_plurality=0)
    value = float(subsampled_screening(s, gamma).pairwise_rdp(order))
    exact = subsampled_pairwise_exact(order, k, threshold, sigma, gamma)
    with mp.workdps(DPS):
        assert mp.mpf(value) >= exact
        assert mp.mpf(value) <= exact * (1 + mp.mpf(1e-9)) + mp.mpf(1e-320)


@given(t=st.integers(0, 60), threshold=st.floats(-100.0, 3000.0), sigma=st.floats(0.3, 100.0))
@example(t=0, threshold=2922.0, sigma=1.0)
@example(t=60, threshold=0.0, sigma=0.3)
def test_log_cdf_within_its_stated_error(t, threshold, sigma):
    """The assumption behind the screening bound: log Phi((t - T)/sigma) within 4 EPS max(1, |log Phi|)."""
    from dpledger.mechanisms.noisy_screening import _log_cdf, _log_error, _z

    z, dz = _z(np.array([float(t)]), threshold, sigma)
    for sign in (1.0, -1.0):
        value = float(_log_cdf(sign * z, sign * dz)[0])
        with mp.workdps(DPS):
            exact_z = sign * (mp.mpf(t) - mp.mpf(threshold)) / mp.mpf(sigma)
            exact = mp.log(mp.ncdf(exact_z)) if exact_z < 0 else mp.log1p(-mp.ncdf(-exact_z))
            assert abs(mp.mpf(value) - exact) <= float(_log_error(np.array([float(exact)]))[0])


@given(
    k=st.integers(2, 40),
    sigma=st.floats(0.01, 10.0),
    threshold=st.floats(-20.0, 60.0),
    order=st.floats(2.0, 17.0).map(lambda e: 10.0**e),
)
# the error bound once took a difference of two logarithms of size 3e18 (ulp 512): 8.6e195 at order 1e15
@example(k=17, sigma=0.0200201911606504, threshold=11.375998472242113, order=1e15)
def test_screening_error_bound_stays_tight_at_huge_orders(k, sigma, threshold, order):
    m = NoisyScreening(k=k, threshold=threshold, sigma=sigma, num_classes=2)
    value, pure = m.rdp([order, float("inf")])
    assert value <= pure * (1 + 1e-9)  # the RDP is non-decreasing in the order, up to the pure epsilon


# ------------------------------------------------- Pearson-Vajda statements in the docstrings (issue 12 item 3)
def _bernoulli_chi(order_l, p, q):
    return screening_oracle.pearson_vajda_term(order_l, p, q)


def test_zcdp_counterexample_of_the_docstring():
    """Bern(0.2) against Bern(0.3): log(3/2)-DP, so log(3/2)^2/2-zCDP (Bun & Steinke 2016, Prop 1.4), with a
    negative third-order Pearson-Vajda term: the condition cannot be claimed for ZCDPMechanism."""
    with mp.workdps(DPS):
        rho = mp.log(mp.mpf(3) / 2) ** 2 / 2
        for order in (1.5, 2.0, 3.0, 10.0, 100.0):
            for p, q in ((0.2, 0.3), (0.3, 0.2)):
                lp, l1p, lq, l1q = (mp.log(mp.mpf(x)) for x in (p, 1 - mp.mpf(p), q, 1 - mp.mpf(q)))
                assert screening_oracle.bernoulli_renyi(order, lp, l1p, lq, l1q) <= rho * order
        assert _bernoulli_chi(3, "0.2", "0.3") < 0


@given(k=st.integers(3, 30), sigma=st.floats(0.3, 50.0), order_l=st.sampled_from([3, 5, 7]))
def test_screening_violates_the_condition_below_the_threshold(k, sigma, order_l):
    """NoisyScreening's docstring: the pair (Bern(p_t), Bern(p_(t+1))) with t + 1 < T has a negative odd term."""
    threshold = k + 1.0
    s = NoisyScreening(k=k, threshold=threshold, sigma=sigma, num_classes=2, min_plurality=0)
    with mp.workdps(DPS):
        p, q = (mp.ncdf((mp.mpf(t) - mp.mpf(threshold)) / mp.mpf(sigma)) for t in (0, 1))
        assert _bernoulli_chi(order_l, p, q) < 0
    assert s.satisfies_pearson_vajda is False


@pytest.mark.parametrize("order_l", [3, 5])
@pytest.mark.parametrize("shift", [0.3, 1.0, 2.5])
def test_gaussian_and_laplace_odd_pearson_vajda_terms_are_non_negative(order_l, shift):
    """Thesis Thm 2.5.5 / 2.5.6 (Prop 2.3.6), checked by quadrature in both orderings of each pair."""
    with mp.workdps(30):
        gauss = lambda x, m: mp.npdf(x, m, 1)  # noqa: E731
        lap = lambda x, m: mp.exp(-abs(x - m)) / 2  # noqa: E731
        for density in (gauss, lap):
            for a, b in ((shift, 0.0), (0.0, shift)):
                term = mp.quad(lambda x: density(x, b) * (density(x, a) / density(x, b) - 1) ** order_l,
                               [-mp.inf, min(a, b), max(a, b), mp.inf])
                assert term >= 0
    assert GaussianMechanism(sigma=1.0).satisfies_pearson_vajda and LaplaceMechanism(scale=1.0).satisfies_pearson_vajda
    assert not ZCDPMechanism(rho=0.1).satisfies_pearson_vajda
    assert not CustomRDPMechanism(lambda a: a).satisfies_pearson_vajda


_finite = st.floats(allow_nan=False, allow_infinity=False, min_value=-1e300, max_value=1e300)
_slack = st.floats(min_value=0.0, max_value=1e3, allow_nan=False)


@given(value=_finite, relative=_slack, absolute=_slack)
def test_widen_up_is_at_or_above_the_exact_sum_in_every_path(value, relative, absolute):
    from dpledger.mechanisms._logmath import widen_up, widen_up_entries

    exact = fractions.Fraction(value) + fractions.Fraction(relative) * abs(fractions.Fraction(value)) + \
        fractions.Fraction(absolute)
    scalar = widen_up(value, relative, absolute)
    array = float(widen_up(np.array([value]), relative, absolute)[0])
    entries = widen_up_entries(np.array([value, value]), relative, np.array([absolute, absolute]))
    assert entries[0] == entries[1] == scalar  # the scalar path, entry by entry
    for got in (scalar, array):
        assert got == np.inf or fractions.Fraction(got) >= exact
    # and tight: the scalar path at most three floats above the array path (which rounds each step exactly)
    assert array <= scalar
    bound = array
    for _ in range(3):
        bound = np.nextafter(bound, np.inf)
    assert scalar <= bound
