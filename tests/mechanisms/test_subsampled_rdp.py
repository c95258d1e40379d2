"""Poisson-subsampled RDP against mpmath oracles (thesis Ch. 2; Mironov, Talwar & Zhang 2019).

Oracles: ``tests/oracles/mpmath_subsampled.py`` (binomial sums at 40+ digits, direct quadrature of
``E_mu0[(mu/mu0)^alpha]`` and of the reverse direction ``E_mu[(mu0/mu)^alpha]``). Upper bounds are checked for
accuracy (relative 1e-10 at integer orders, and within the documented rounding-up slack of
:func:`binomial_sum_slack`) and for the sign of their error: an upper bound may exceed the exact binomial sum
but never fall below it (``BELOW``: 1e-15 relative, the rounding of the oracle's float value).
"""

import functools

import mpmath as mp
import numpy as np
import pytest
from numpy.testing import assert_allclose, assert_array_equal

from dpledger.mechanisms import GaussianMechanism, LaplaceMechanism, PoissonSubsampled, RandomizedResponse
from dpledger.mechanisms import subsampled_rdp as sr
from tests.mechanisms._shared import EPS64, ROUNDING, no_warnings
from tests.oracles import mpmath_subsampled as oracle

#: How far below an exact binomial sum (mpmath) an upper bound may be: rounding of the oracle's float only.
BELOW = 1e-15

INTEGER_ORDERS = [2, 3, 4, 5, 8, 16, 31, 64, 256]
BASES = {
    "gaussian": (lambda s: GaussianMechanism(sigma=s), oracle.gaussian_log_moment),
    "laplace": (lambda b: LaplaceMechanism(scale=b), oracle.laplace_log_moment),
    "rr": (lambda p: RandomizedResponse(p=p), oracle.randomized_response_log_moment),
}


@functools.cache
def _log_moment(kind, param):
    return functools.lru_cache(maxsize=None)(BASES[kind][1](param))


@functools.cache
def exact(kind, param, q, order, general=False):
    """Oracle value as a float: thesis Thm 2.3.2/2.3.4 (exact for all three bases) or Thm 2.3.1."""
    bound = oracle.general_bound if general else oracle.tight_bound
    return float(bound(order, q, _log_moment(kind, param), dps=40))


@functools.cache
def exact_for_library_base(kind, param, q, order, general=False):
    """The exact binomial sum (mpmath) of the base curve as the library evaluates it (float64, rounded up).

    ``tight_bound(orders, q, rdp)`` is a function of the values ``rdp`` returns; this isolates its own rounding
    from the base closed form's (checked in test_basic_mechanisms)."""
    base = BASES[kind][0](param)
    log_moment = functools.lru_cache(maxsize=None)(lambda l: (l - 1) * mp.mpf(float(base.rdp(float(l)))))
    bound = oracle.general_bound if general else oracle.tight_bound
    return float(bound(order, q, log_moment, dps=40))


def binomial_sum_slack(rdp, q, order, general=False):
    """Relative amount by which ``tight_bound``/``general_bound`` may exceed the exact binomial sum of ``rdp``.

    Documented rounding up (``subsampled_rdp._log_s_flat``): ``log S`` is raised by
    ``d = ROUNDING + 2 eps max_l size_l`` over the terms present, with
    ``size_l = alpha log(alpha + 1) + |l log q| + |(alpha - l) log(1 - q)| + |log(w_l - 1)| + 1``, and the result
    is multiplied by ``1 + ROUNDING``. Raising ``log S`` by ``d`` raises ``log(1 + S)`` by at most ``d`` relative
    (``S / ((1 + S) log(1 + S)) <= 1``); the float64 ``log S`` may itself be high by up to the rounding error ``d``
    covers. Hence ``2 d + ROUNDING``, plus a few ulps for the final log1p, division and product.
    """
    ell = np.arange(2, order + 1, dtype=np.float64)
    x = (ell - 1.0) * np.asarray(rdp(ell), dtype=np.float64)  # log w_l; w_l = 3 exp(x_l) for l >= 3 if general
    with np.errstate(divide="ignore"):
        log_w1 = np.where(x > 30, x + np.log1p(-np.exp(-np.maximum(x, 30))), np.log(np.expm1(np.minimum(x, 30))))
        if general:
            log_w1 = np.where(ell >= 3, x + np.log(3.0 - np.exp(-x)), log_w1)
    part_1mq = np.where(ell < order, np.abs((order - ell) * np.log1p(-q)) if q < 1 else np.inf, 0.0)
    size = order * np.log(order + 1.0) + np.abs(ell * np.log(q)) + part_1mq + np.abs(log_w1) + 1.0
    present = np.isfinite(size)  # c_l > 0 and w_l > 1
    d = ROUNDING + 2 * EPS64 * size[present].max(initial=0.0)
    return 2 * d + ROUNDING + 8 * EPS64


def _case(kind, param, q):
    return pytest.param(kind, param, q, id=f"{kind}-{param}-q{q}")


INTEGER_CASES = [  # every sigma/scale/p meets at least two sampling probabilities; every q appears 3+ times
    _case("gaussian", 0.1, 1e-9), _case("gaussian", 0.1, 0.99),
    _case("gaussian", 1.0, 1e-4), _case("gaussian", 1.0, 0.3), _case("gaussian", 1.0, 1.0),
    _case("gaussian", 10.0, 0.01), _case("gaussian", 10.0, 0.99),
    _case("gaussian", 100.0, 1e-9), _case("gaussian", 100.0, 0.3),
    _case("laplace", 0.1, 1e-4), _case("laplace", 0.1, 1.0),
    _case("laplace", 1.0, 1e-9), _case("laplace", 1.0, 0.01), _case("laplace", 1.0, 0.99),
    _case("laplace", 10.0, 0.3),
    _case("rr", 0.6, 1e-9), _case("rr", 0.6, 0.01),
    _case("rr", 0.9, 1e-4), _case("rr", 0.9, 0.3), _case("rr", 0.9, 1.0),
]


def _check(kind, param, q, orders):
    base = BASES[kind][0](param)
    tight_ref = np.array([exact(kind, param, q, a) for a in orders])
    general_ref = np.array([exact(kind, param, q, a, general=True) for a in orders])
    tight = sr.tight_bound(orders, q, base.rdp)
    general = sr.general_bound(orders, q, base.rdp)
    lower = sr.lower_bound(orders, q, base.rdp)
    return base, tight_ref, general_ref, tight, general, lower


@pytest.mark.parametrize("kind,param,q", INTEGER_CASES)
def test_integer_order_bounds_match_the_binomial_sums(kind, param, q):
    base, tight_ref, general_ref, tight, general, lower = _check(kind, param, q, INTEGER_ORDERS)
    assert_allclose(tight, tight_ref, rtol=1e-10)
    assert_allclose(general, general_ref, rtol=1e-10)
    assert_allclose(lower, tight_ref, rtol=1e-10)
    # The combinator: tight for Gaussian/Laplace, the exact two-point divergence for RR (mechanisms/two_point.py;
    # it used the general bound, up to 3.1x the exact value), capped by the pure-DP bound and the base curve.
    combined = PoissonSubsampled(base, sampling_probability=q).rdp(np.array(INTEGER_ORDERS, dtype=float))
    base_curve = base.rdp(np.array(INTEGER_ORDERS, dtype=float))
    expected = tight_ref
    if q == 1.0:
        expected = base_curve  # no subsampling: the base curve itself
    expected = np.minimum(np.minimum(expected, sr.pure_dp_bound(q, float(base.rdp(np.inf)))), base_curve)
    assert_allclose(combined, expected, rtol=1e-10)


@pytest.mark.parametrize("kind,param,q", INTEGER_CASES)
def test_integer_order_upper_bounds_are_never_below_the_oracle(kind, param, q):
    base, tight_ref, general_ref, tight, general, lower = _check(kind, param, q, INTEGER_ORDERS)
    assert np.all(tight >= tight_ref * (1 - BELOW))
    assert np.all(general >= general_ref * (1 - BELOW))
    combined = PoissonSubsampled(base, sampling_probability=q).rdp(np.array(INTEGER_ORDERS, dtype=float))
    assert np.all(combined >= tight_ref * (1 - BELOW))  # tight_ref is the exact value for all three bases
    # ... and above it by no more than the documented rounding-up slack (relative to the base curve it is given).
    for i, order in enumerate(INTEGER_ORDERS):
        tight_slack = binomial_sum_slack(base.rdp, q, order)
        assert tight[i] <= exact_for_library_base(kind, param, q, order) * (1 + tight_slack), order
        general_slack = binomial_sum_slack(base.rdp, q, order, general=True)
        assert general[i] <= exact_for_library_base(kind, param, q, order, general=True) * (1 + general_slack), order
        # lower_bound is tight_bound / (1 + ROUNDING)^2: it still carries the rest of that slack (up to ~3.5e-12
        # relative at order 256, q = 1e-9), so it may exceed the exact value by as much.
        assert lower[i] <= exact_for_library_base(kind, param, q, order) * (1 + tight_slack), order


def test_tight_bound_of_a_wide_laplace_is_never_below_the_oracle():
    # Formerly 5.8e-13 relative below (cancellation in the Laplace closed form); the base is now rounded up.
    _, tight_ref, _, tight, _, _ = _check("laplace", 100.0, 0.01, INTEGER_ORDERS)
    assert np.all(tight >= tight_ref * (1 - BELOW))


@pytest.mark.parametrize("kind,param,q,order,general", [
    ("gaussian", 2.0, 0.01, 1000, False), ("rr", 0.7, 0.3, 1500, True)])
def test_bounds_at_orders_above_a_thousand_match_the_binomial_sums(kind, param, q, order, general):
    base = BASES[kind][0](param)
    bound = sr.general_bound if general else sr.tight_bound
    value = bound([order], q, base.rdp)[0]
    ref = exact(kind, param, q, order, general=general)
    assert ref * (1 - BELOW) <= value <= ref * (1 + 1e-10)


@pytest.mark.parametrize("kind,param", [("laplace", 1.0), ("rr", 0.7)])
def test_bounds_at_order_1000_and_tiny_q_are_never_below_the_oracle(kind, param):
    # Formerly 5.5e-13 relative below: gammaln's error (~ulp(gammaln(alpha + 1))) is now in the rounding slack.
    value = sr.tight_bound([1000], 1e-9, BASES[kind][0](param).rdp)[0]
    assert value >= exact(kind, param, 1e-9, 1000) * (1 - BELOW)


# --------------------------------------------------------------------------- fractional orders, Gaussian
FRACTIONAL_CASES = [  # (order, q, sigma)
    (1.01, 0.01, 2.0), (1.01, 1e-4, 0.5), (1.5, 0.5, 0.5), (1.5, 0.01, 2.5), (2.5, 1e-6, 1.0), (7.3, 0.3, 5.0),
    (31.7, 1e-4, 10.0), (250.5, 0.01, 50.0), (250.5, 1e-6, 20.0),
]


@functools.cache
def gaussian_integral(order, q, sigma, reverse=False):
    f = oracle.subsampled_gaussian_rdp_integral_reverse if reverse else oracle.subsampled_gaussian_rdp_integral
    value, error = f(order, q, sigma, dps=40, return_error=True)
    assert error <= 1e-20 + 1e-15 * value, "the oracle's quadrature did not converge"
    return float(value)


@pytest.mark.parametrize("order,q,sigma", FRACTIONAL_CASES)
def test_fractional_gaussian_series_matches_direct_integration(order, q, sigma):
    ref = gaussian_integral(order, q, sigma)
    value = sr.gaussian_fractional_rdp([order], q, sigma)[0]
    # Documented: rounded up, within about 1e-6 relative, plus a float64 slack ROUNDING * sum|terms| in log A.
    assert ref * (1 - 1e-12) <= value <= ref * (1 + 1e-6) + 2 * ROUNDING / (order - 1)
    m = PoissonSubsampled(GaussianMechanism(sigma=sigma), sampling_probability=q)
    combined = float(m.rdp(order))
    assert combined >= ref * (1 - 1e-12)
    # Documented: the smaller of two valid upper bounds, the series and the chord between integer orders (the
    # chord wins e.g. at order 250.5, q = 1e-6, sigma = 20, where the series' absolute slack dominates), capped by
    # the base curve and the subsampled pure-DP bound (inf for a Gaussian).
    chord = sr.chord_rdp([order], lambda a: sr.tight_bound(a, q, m.mechanism.rdp))[0]
    assert combined == min(value, chord, float(m.mechanism.rdp(order)))


@pytest.mark.parametrize("order,q,sigma,settles", [
    (1.001, 1e-3, 5.0, True), (1.37, 1e-4, 2.0, True), (2.5, 1e-6, 1.0, True), (1.01, 1e-4, 0.5, True),
    (1.5, 0.5, 2.0, False),  # the first pass's tail is 2e-5 of the value: it must sum on
])
def test_fractional_gaussian_series_settles_where_only_its_rounding_slack_is_left(order, q, sigma, settles,
                                                                                  monkeypatch):
    """Small divergences (narrow ledgers' Chernoff searches ask for them): once the rounding part of the slack
    dominates the tail and exceeds e^-12.8 of A - 1, the series stops (one or two passes instead of five up to the
    budget) with the accuracy documented, against mpmath's direct integration; where the tail still dominates it
    sums on (a stop there leaves the value loose by the tail, above this bound)."""
    passes = []
    row = sr._log_binom_row
    monkeypatch.setattr(sr, "_log_binom_row", lambda a, n: passes.append(n) or row(a, n))
    value = sr.gaussian_fractional_rdp([order], q, sigma)[0]
    assert (len(passes) <= 2) if settles else (len(passes) >= 2)
    ref = gaussian_integral(order, q, sigma)
    assert ref * (1 - 1e-12) <= value <= ref * (1 + 1e-6) + 4 * ROUNDING / (order - 1)


@pytest.mark.parametrize("order,q,sigma", FRACTIONAL_CASES)
def test_reverse_direction_is_never_larger_at_real_orders(order, q, sigma):
    # Thesis Thm 2.3.4 proves E_mu[(mu0/mu)^a] <= E_mu0[(mu/mu0)^a] at integer orders; here real orders.
    reverse = gaussian_integral(order, q, sigma, reverse=True)
    assert reverse <= gaussian_integral(order, q, sigma) * (1 + 1e-12)
    assert sr.gaussian_fractional_rdp([order], q, sigma)[0] >= reverse


@pytest.mark.xfail(strict=True, reason="gaussian_fractional_rdp adds an absolute slack ROUNDING * sum|terms| "
                                        "(~1.4e-14) to log A although A - 1 ~ 1.5e-16 here: the result is 2.9e-14, "
                                        "96x the exact 3.0e-16, not 'within about 1e-6 relative' as its docstring "
                                        "says (loose, not unsound; PoissonSubsampled.rdp avoids it by taking the "
                                        "min with the chord)")
def test_fractional_gaussian_keeps_relative_accuracy_at_small_sampling_probability():
    ref = gaussian_integral(1.5, 1e-6, 50.0)
    assert sr.gaussian_fractional_rdp([1.5], 1e-6, 50.0)[0] <= ref * (1 + 1e-6)


def test_tensorflow_privacy_published_values():
    # tensorflow/privacy, tensorflow_privacy/privacy/analysis/rdp_accountant_test.py, test_compute_rdp_sequence:
    # compute_rdp(q=0.01, noise_multiplier=2.5, steps=50, orders) asserted with delta=1e-5 (absolute). The value
    # at order 1.5 is 6.50070e-4 by direct mpmath integration (tests/oracles/mpmath_subsampled.py notes).
    step = PoissonSubsampled(GaussianMechanism(sigma=2.5), sampling_probability=0.01)
    values = 50 * step.rdp([1.5, 2.5, 5.0, 50.0, 100.0, np.inf])
    assert_allclose(values[:5], [0.00065, 0.001085, 0.00218075, 0.023846, 167.416307], rtol=0, atol=1e-5)
    assert values[5] == np.inf
    assert values[0] == pytest.approx(6.5007e-4, rel=1e-4)
    assert values[0] == pytest.approx(50 * gaussian_integral(1.5, 0.01, 2.5), rel=1e-8)
    # test_compute_rdp_scalar: compute_rdp(0.1, 2, 10, 5) == 0.07737 (places=5).
    assert 10 * float(PoissonSubsampled(GaussianMechanism(sigma=2.0), sampling_probability=0.1).rdp(5.0)) == \
        pytest.approx(0.07737, abs=5e-6)


# --------------------------------------------------------------------------- chord bound (Laplace, RR)
@pytest.mark.parametrize("order,q,scale", [(1.5, 0.01, 1.0), (7.3, 0.3, 0.5), (31.7, 1e-4, 2.0)])
def test_chord_bound_for_laplace_dominates_both_directions(order, q, scale):
    forward = float(oracle.subsampled_laplace_rdp_integral(order, q, scale, dps=40))
    reverse = float(oracle.subsampled_laplace_rdp_integral_reverse(order, q, scale, dps=40))
    assert reverse <= forward * (1 + 1e-12)
    base = LaplaceMechanism(scale=scale)
    chord = sr.chord_rdp([order], lambda a: sr.tight_bound(a, q, base.rdp))[0]
    assert chord >= forward * (1 - 1e-13)
    assert float(PoissonSubsampled(base, sampling_probability=q).rdp(order)) >= forward * (1 - 1e-13)


@pytest.mark.parametrize("p", [0.6, 0.9, 0.99])
@pytest.mark.parametrize("q", [1e-6, 0.01, 0.3, 0.9])
def test_subsampled_randomized_response_dominates_both_exact_directions(p, q):
    orders = [1.01, 1.5, 2.0, 2.5, 7.3, 31.7, 64.0, 250.5]
    values = PoissonSubsampled(RandomizedResponse(p=p), sampling_probability=q).rdp(orders)
    for order, value in zip(orders, values):
        for reverse in (False, True):
            ref = float(oracle.subsampled_randomized_response_rdp_exact(order, q, p, reverse=reverse, dps=40))
            assert value >= ref * (1 - 1e-13), (order, reverse)


def test_chord_is_exact_at_integers_and_linear_in_alpha_times_eps_between():
    integer = lambda a: sr.tight_bound(a, 0.1, LaplaceMechanism(scale=1.0).rdp)  # noqa: E731
    lo, hi = integer([3.0, 4.0])
    assert_array_equal(sr.chord_rdp([3.0, 4.0], integer), [lo, hi])
    assert sr.chord_rdp([3.25], integer)[0] == pytest.approx((0.75 * 2 * lo + 0.25 * 3 * hi) / 2.25, rel=1e-14)
    assert sr.chord_rdp([1.5], integer)[0] == pytest.approx(integer([2.0])[0], rel=1e-14)  # chord through (1, 0)


# --------------------------------------------------------------------------- tau-term bounds (Thm 2.3.7/2.5.8)
def tau_term_mp(alpha, q, log_moment, tau, general):
    """The documented tau-term bound at 50 digits: thesis Thm 2.3.7 (K = 1) or Thm 2.5.8 (K = 3), with
    E = eps(alpha - tau) and the tail l > alpha - tau kept exact (tau_term_bound's docstring).

    Returns the value and the documented float64 slack: ROUNDING * (number of terms) * sum |terms|, in RDP units.
    """
    with mp.workdps(50):
        q, k = mp.mpf(q), 3 if general else 1
        big_e = log_moment(alpha - tau) / (alpha - tau - 1)
        c = lambda l: mp.binomial(alpha, l) * (1 - q) ** (alpha - l) * q**l  # noqa: E731
        w = lambda l: mp.exp(log_moment(l)) * (k if l >= 3 else 1)  # noqa: E731
        terms = [k * mp.exp(-big_e) * (1 - q + q * mp.exp(big_e)) ** alpha]
        terms += [c(l) * (1 - k * mp.exp((l - 1) * big_e)) for l in (0, 1)]
        terms += [c(l) * (w(l) - k * mp.exp((l - 1) * big_e)) for l in range(2, tau + 1)]
        terms += [c(l) * (w(l) - k * mp.exp((l - 1) * big_e)) for l in range(alpha - tau + 1, alpha + 1)]
        total, magnitude = mp.fsum(terms), mp.fsum(abs(t) for t in terms)
        return float(mp.log(total) / (alpha - 1)), float(2 * ROUNDING * len(terms) * magnitude / total / (alpha - 1))


TAU_BASES = [("gaussian", 2.0), ("gaussian", 10.0), ("laplace", 1.0), ("rr", 0.7)]


@pytest.mark.parametrize("kind,param", TAU_BASES, ids=lambda v: str(v))
@pytest.mark.parametrize("tau", [5, 20])
@pytest.mark.parametrize("general", [False, True], ids=["tight", "general"])
def test_tau_term_bound_evaluates_the_thesis_formula_and_is_above_the_exact_sum(kind, param, tau, general):
    base = BASES[kind][0](param)
    orders = [2 * tau + 1, 2 * tau + 7, 100, 257]
    exact_bound = sr.general_bound if general else sr.tight_bound
    for q in (1e-4, 0.01, 0.3, 0.99):
        bound = sr.tau_term_bound(orders, q, base.rdp, tau, general=general)
        assert np.all(np.isfinite(bound)), q
        assert np.all(bound >= exact_bound(orders, q, base.rdp) * (1 - 1e-13)), q
        for value, order in zip(bound, orders):  # small tau is loose (up to 150x here), but faithfully so
            assert value >= exact(kind, param, q, order, general=general) * (1 - BELOW), (q, order)
            formula, slack = tau_term_mp(order, q, _log_moment(kind, param), tau, general)
            assert formula * (1 - 1e-13) <= value <= formula * (1 + 1e-10) + slack, (q, order)
    # At q = 1e-9 the signed sum cancels to ~1e-18 and float64 cannot resolve the formula: the rounding slack
    # (proportional to the sum of magnitudes) makes the bound up to ~1.5e6x the exact value at small tau. Only
    # soundness is required here, against the exact sum (tight_bound / general_bound themselves carry their
    # own rounding-up slack, which may exceed the tau-term bound's by ~2e-15 relative at order 257).
    bound = sr.tau_term_bound(orders, 1e-9, base.rdp, tau, general=general)
    assert np.all(np.isfinite(bound))
    for value, order in zip(bound, orders):
        assert value >= exact(kind, param, 1e-9, order, general=general) * (1 - BELOW), order
    assert_array_equal(sr.tau_term_bound([2 * tau], 0.01, base.rdp, tau, general=general),
                       exact_bound([2 * tau], 0.01, base.rdp))


@pytest.mark.parametrize("base,q", [
    (GaussianMechanism(sigma=2.0), 0.01), (GaussianMechanism(sigma=10.0), 1e-4), (GaussianMechanism(sigma=40.0), 0.3),
    (LaplaceMechanism(scale=1.0), 1e-4), (LaplaceMechanism(scale=10.0), 0.01), (RandomizedResponse(p=0.7), 1e-6),
], ids=lambda v: repr(v)[:24])
def test_tau_term_bound_with_the_default_tau_is_close_to_the_exact_sum(base, q):
    orders = [2 * sr.DEFAULT_TAU + 1, 5000, 7000]
    for general, exact_bound in ((False, sr.tight_bound), (True, sr.general_bound)):
        ratio = sr.tau_term_bound(orders, q, base.rdp, general=general) / exact_bound(orders, q, base.rdp)
        assert np.all((ratio >= 1 - 1e-13) & (ratio <= 1.01)), ratio


@pytest.mark.xfail(strict=True, reason="_tau_term_one loses everything to cancellation when the binomial mass "
                                        "sits in the exact head: the documented formula equals the exact sum "
                                        "(mpmath, 1e-15) but its rounding slack (ROUNDING * number of terms * sum of "
                                        "magnitudes) makes the float64 value 66x larger (1.07e-2 vs 1.61e-4) even at "
                                        "the default tau; loose, not unsound. PoissonSubsampled meets it only above "
                                        "EXACT_MAX_ORDER")
def test_tau_term_bound_resolves_cancellation_in_the_signed_sum():
    base, q = GaussianMechanism(sigma=40.0), 0.01
    assert sr.tau_term_bound([5000], q, base.rdp)[0] <= 1.01 * sr.tight_bound([5000], q, base.rdp)[0]


def test_poisson_subsampled_at_order_150000_stays_close_to_the_binomial_sum():
    # Order 150000 was above the former EXACT_MAX_ORDER and got the tau-term bound (0.151 vs the exact 7.5e-8);
    # with EXACT_MAX_ORDER = 2**21 it is summed exactly. (The tau-term looseness itself, which PoissonSubsampled
    # still meets above 2**21, is pinned by test_tau_term_bound_resolves_cancellation_in_the_signed_sum.)
    assert 150000 <= sr.EXACT_MAX_ORDER
    m = PoissonSubsampled(GaussianMechanism(sigma=100.0), sampling_probability=1e-4)
    assert float(m.rdp(150000.0)) <= 1.01 * sr.tight_bound([150000], 1e-4, m.mechanism.rdp)[0]


def test_tau_term_bound_handles_base_rdp_above_the_float_exponent_range():
    # E = eps(alpha - tau) ~ 1000 > 709: formerly overflow in expm1(E), then NaN.
    base = GaussianMechanism(sigma=0.7)
    with no_warnings():
        bound = sr.tau_term_bound([1000], 0.01, base.rdp, 5)
    assert np.isfinite(bound[0])
    ref = float(oracle.tight_bound(1000, 0.01, oracle.gaussian_log_moment(0.7), dps=40))
    assert bound[0] >= ref * (1 - BELOW)  # the exact sum (tight_bound itself is rounded up further)
