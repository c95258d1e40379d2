"""The upper aliasing bound takes the best of several Chernoff exponents at each epsilon (``InversionPlan.kappa_tail``,
``fourier_inversion.with_more_tails``).

Only the lower end of an inversion depends on it. Oracles: the Gaussian mechanism's exact privacy profile (closed
form through Phi, mpmath) for the bounds, the bound's formula in mpmath for each exponent, and dp_accounting's fine
PLD values of the q 1e-4, sigma 0.6, 10^4-step ledger (``test_fourier_proven_on_failure.PLD_FINE``).
"""

import dataclasses

import mpmath as mp
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import dpledger.accountants._fourier_search as search
from dpledger.accountants import FourierAccountant
from dpledger.accountants import fourier_inversion as fi
from dpledger.mechanisms import GaussianMechanism, PoissonSubsampled

DELTA = 1e-5


def _gaussian(mu):
    def log_mgf(s):
        return 0.5 * mu * mu * np.asarray(s, dtype=np.complex128) * (1.0 + np.asarray(s, dtype=np.complex128))

    def log_mgf_sup(a, u):
        return 0.5 * mu * mu * (a * (1.0 + a) - u * u)

    return log_mgf, log_mgf_sup


def _exact_delta(mu, eps):
    with mp.workdps(30):
        mu, eps = mp.mpf(mu), mp.mpf(eps)
        return mp.ncdf(-eps / mu + mu / 2) - mp.exp(eps) * mp.ncdf(-eps / mu - mu / 2)


def _mp_log_aliasing(plan, eps):
    """The bound's log at each of the plan's exponents, in mpmath (from the same float inputs)."""
    values = []
    with mp.workdps(40):
        for k, log_m in zip(plan.kappa_tail, plan.log_m_tail):
            gap_period = (mp.mpf(k) - mp.mpf(plan.kappa)) * mp.mpf(plan.period)
            values.append(mp.mpf(log_m) - mp.mpf(k) * mp.mpf(eps) - gap_period - mp.log(-mp.expm1(-gap_period)))
    return min(values)


@settings(max_examples=40, deadline=None)
@given(mu=st.floats(0.2, 3.0), ratio=st.floats(0.05, 0.9), plan_eps=st.floats(0.5, 4.0))
def test_more_tails_only_raise_the_lower_end_and_keep_the_exact_delta(mu, ratio, plan_eps):
    log_mgf, log_mgf_sup = _gaussian(mu)
    try:
        plan = fi.make_plan(log_mgf, log_mgf_sup, plan_eps, 1e-12)
    except fi.TruncationLimit:
        return
    if plan.kappa <= 0:
        return
    refined = fi.with_more_tails(plan, log_mgf)
    assert refined.kappa_tail.size > plan.kappa_tail.size and np.all(refined.kappa_tail > plan.kappa)
    np.testing.assert_array_equal(refined.kappa_tail[: plan.kappa_tail.size], plan.kappa_tail)
    for eps in (plan_eps * ratio, plan_eps):
        old, old_errors = fi.invert(plan, eps)
        new, new_errors = fi.invert(refined, eps)
        exact = _exact_delta(mu, eps)
        assert new.upper == old.upper and new.lower >= old.lower
        assert new_errors["aliasing"] <= old_errors["aliasing"]
        assert new.lower <= exact * (1 + mp.mpf(1e-15)) and exact <= new.upper * (1 + 1e-15)


@settings(max_examples=30, deadline=None)
@given(mu=st.floats(0.3, 3.0), plan_eps=st.floats(0.5, 4.0), ratio=st.floats(0.0, 2.0))
def test_the_aliasing_bound_is_at_least_its_exact_value_at_the_best_exponent(mu, plan_eps, ratio):
    log_mgf, log_mgf_sup = _gaussian(mu)
    try:
        plan = fi.with_more_tails(fi.make_plan(log_mgf, log_mgf_sup, plan_eps, 1e-12), log_mgf)
    except fi.TruncationLimit:
        return
    if plan.kappa <= 0:
        return
    eps = plan_eps * ratio
    computed = fi._log_upper_aliasing(plan, eps)
    exact = _mp_log_aliasing(plan, eps)
    assert computed >= exact
    assert computed - exact <= 1e-12 * (abs(exact) + 1)


def test_more_tails_carry_the_contours_parts_and_leave_complement_plans_alone():
    log_mgf, log_mgf_sup = _gaussian(1.0)
    plan = fi.make_plan(log_mgf, log_mgf_sup, 1.0, 1e-12)
    fi.invert(plan, 1.0)  # forms the contour's cached parts, and the aliasing bound's
    refined = fi.with_more_tails(plan, log_mgf)
    assert refined.contour is plan.contour and refined.moduli is plan.moduli
    assert refined.aliasing_parts[0].size == refined.kappa_tail.size > plan.aliasing_parts[0].size  # not carried
    negative = fi.make_plan(log_mgf, log_mgf_sup, 0.2, 1e-10, kappa=-0.4)
    assert negative.kappa_tail.size == 0 and fi.with_more_tails(negative, log_mgf) is negative
    assert fi._log_upper_aliasing(dataclasses.replace(plan, kappa_tail=np.empty(0), log_m_tail=np.empty(0)),
                                  1.0) == np.inf


def test_a_plan_missing_rtol_by_its_aliasing_takes_more_tails_instead_of_a_second_plan(monkeypatch):
    """q 1e-4, sigma 0.6, 10^4 steps: the first plan, made at 1.18 for an answer of 0.275, bounded the aliasing there
    by 3.6e-11 (its best of seven exponents) and a second plan (16,384 nodes) followed; with more exponents it is
    1e-17, and the first plan meets rtol. The interval still meets dp_accounting's fine PLD bracket."""
    plans, refined = [], []
    make, more = search.make_plan, search.with_more_tails
    monkeypatch.setattr(search, "make_plan", lambda *a, **k: plans.append(make(*a, **k)) or plans[-1])
    monkeypatch.setattr(search, "with_more_tails", lambda *a: refined.append(more(*a)) or refined[-1])
    accountant = FourierAccountant().compose(PoissonSubsampled(GaussianMechanism(0.6), 1e-4), 10_000)
    bounds = accountant.epsilon_bounds(DELTA)
    remove = [p for p in plans if p.left_out > 0]
    assert len(remove) == 1 and len(refined) >= 1
    errors = search.invert(refined[-1], bounds.upper)[1]
    assert errors["aliasing"] < 1e-15 < search.invert(remove[0], bounds.upper)[1]["aliasing"]
    assert bounds.upper - bounds.lower <= 1e-6 * bounds.upper
    optimistic, pessimistic = 0.22768761872864526, 0.27478433178377537  # test_fourier_proven_on_failure.PLD_FINE
    assert bounds.lower <= pessimistic and bounds.upper >= optimistic


@pytest.mark.parametrize("mu", [0.5, 2.0])
def test_the_plan_keeps_every_finite_period_exponent(mu):
    log_mgf, log_mgf_sup = _gaussian(mu)
    plan = fi.make_plan(log_mgf, log_mgf_sup, 1.0, 1e-12, shorten=False)
    expected = fi.exact_tilt(plan.kappa * fi._TAIL_FACTORS + fi._TAIL_SHIFTS)
    np.testing.assert_array_equal(plan.kappa_tail, expected)
    np.testing.assert_array_equal(plan.log_m_tail, np.real(log_mgf(expected)))
