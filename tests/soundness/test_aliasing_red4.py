"""Red-team checks of the upper aliasing bound over several Chernoff exponents (``InversionPlan.kappa_tail`` /
``log_m_tail``, ``fourier_inversion.with_more_tails``; main d6141c5).

Oracles: the Gaussian loss's exact privacy profile (Phi, mpmath) for the bounds, including cut laws (a left-out mass
joins the upper end only), negative and zero epsilons and given dampings; mpmath quadrature of the
Poisson-subsampled Gaussian's transform (whole law and the remove direction's cut body) at the exponents
``with_more_tails`` adds, which the bound needs to be upper bounds on ``log M``.
"""

import dataclasses
import math
import warnings

import mpmath as mp
import numpy as np
import pytest
from hypothesis import event, example, given, settings
from hypothesis import strategies as st

from dpledger.accountants import FourierAccountant
from dpledger.accountants import fourier_inversion as fi
from dpledger.mechanisms import GaussianMechanism, PoissonSubsampled
from dpledger.mechanisms.relations import Direction


class _Gaussian:
    """The Gaussian loss ``N(mu^2 / 2, mu^2)`` as a direction law, with a declared left-out mass."""

    def __init__(self, mu, left_out=0.0):
        self.mu, self.left_out = mu, left_out

    def __call__(self, s):
        s = np.asarray(s, dtype=np.complex128)
        return 0.5 * self.mu * self.mu * s * (1.0 + s)

    def sup(self, a, u):
        return 0.5 * self.mu * self.mu * (a * (1.0 + a) - u * u)


def _exact_delta(mu, eps):
    with mp.workdps(40):
        mu, eps = mp.mpf(mu), mp.mpf(eps)
        return mp.ncdf(-eps / mu + mu / 2) - mp.exp(eps) * mp.ncdf(-eps / mu - mu / 2)


def _plan(mu=1.0):
    law = _Gaussian(mu)
    return law, fi.make_plan(law, law.sup, 2.0, 1e-12)


@pytest.mark.parametrize("case", ["nan", "-inf", "at kappa", "below kappa", "sizes"])
def test_a_plan_refuses_exponents_that_would_make_its_lower_end_nan(case):
    """One NaN entry (an invalid ``log M``, or ``k' <= kappa``: ``log(-expm1(-gap T))`` of a negative gap) made the
    minimum over the exponents NaN at every epsilon and the lower end NaN; the plan now refuses it."""
    law, plan = _plan()
    k = plan.kappa
    tails, log_m = {
        "nan": ([2 * k, 3 * k], [np.nan, float(np.real(law(3 * k)))]),
        "-inf": ([2 * k], [-np.inf]),
        "at kappa": ([k], [float(np.real(law(k)))]),
        "below kappa": ([k / 2], [float(np.real(law(k / 2)))]),
        "sizes": ([2 * k, 3 * k], [1.0]),
    }[case]
    with pytest.raises(ValueError, match="InversionPlan"):
        dataclasses.replace(plan, kappa_tail=np.array(tails), log_m_tail=np.array(log_m))


def test_a_plan_takes_one_exponent_as_a_number_and_skips_one_without_a_bound():
    law, plan = _plan()
    one = dataclasses.replace(plan, kappa_tail=float(plan.kappa_tail[3]), log_m_tail=float(plan.log_m_tail[3]))
    assert one.kappa_tail.shape == (1,) and not one.kappa_tail.flags.writeable
    same = dataclasses.replace(plan, kappa_tail=plan.kappa_tail[3:4], log_m_tail=plan.log_m_tail[3:4])
    assert fi.invert(one, 1.5) == fi.invert(same, 1.5)
    padded = dataclasses.replace(plan, kappa_tail=np.append(plan.kappa_tail, 4 * plan.kappa),
                                 log_m_tail=np.append(plan.log_m_tail, np.inf))
    for eps in (-0.5, 0.0, 1.0, 2.0, 3.0):
        assert fi.invert(padded, eps) == fi.invert(plan, eps)
        assert math.isfinite(fi.invert(padded, eps)[0].lower)


@settings(max_examples=60, deadline=None)
@given(mu=st.floats(0.1, 6.0), plan_at=st.floats(-0.3, 6.0), log_tol=st.floats(-14.0, -3.0),
       kappa=st.one_of(st.none(), st.floats(1e-3, 300.0), st.floats(-0.95, -0.05)),
       shorten=st.sampled_from([False, True, 0.7]),
       left_out=st.sampled_from([0.0, 1e-9, 1e-5]), query=st.floats(-3.0, 3.0))
@example(mu=1.0, plan_at=2.0, log_tol=-12.0, kappa=None, shorten=False, left_out=0.0, query=-1.0)
@example(mu=0.3, plan_at=1.0, log_tol=-10.0, kappa=250.0, shorten=False, left_out=1e-9, query=0.0)
def test_bounds_with_more_exponents_contain_the_exact_delta(mu, plan_at, log_tol, kappa, shorten, left_out, query):
    """Plans at ``plan_at`` (in units of ``mu``, the loss's standard deviation, above its mean; complement
    contours too) queried far below and above (negative and zero epsilons included), with more exponents or not:
    ``lower <= delta <= upper``, and more exponents only narrow the interval."""
    if kappa is not None and kappa < 0:
        left_out = 0.0  # a cut law has no complement contour (make_plan refuses it)
    law = _Gaussian(mu, left_out)
    plan_eps = mu * mu / 2 + plan_at * mu
    try:
        plan = fi.make_plan(law, law.sup, plan_eps, 10.0**log_tol, kappa=kappa, shorten=shorten,
                            max_terms=1 << 14, max_damping=fi.MAX_DAMPING_CLOSED_FORM)
    except fi.TruncationLimit:
        event("no plan")
        return
    event(f"plan, kappa {'> 0' if plan.kappa > 0 else '< 0'}")
    if plan.kappa > 0:
        event(f"aliasing sets the lower end at the plan's epsilon: {_aliasing_dominates(plan, plan_eps)}")
    refined = fi.with_more_tails(plan, law)
    assert refined.kappa_tail.size >= plan.kappa_tail.size and np.all(refined.kappa_tail > refined.kappa)
    for eps in (plan_eps + query * mu, 0.0, -0.5 * mu, plan_eps):
        exact = _exact_delta(mu, eps)
        old, new = fi.invert(plan, eps)[0], fi.invert(refined, eps)[0]
        for b in (old, new):
            assert b.lower <= b.estimate <= b.upper
            assert b.lower <= exact * (1 + mp.mpf(1e-14)) and exact <= b.upper * (1 + mp.mpf(1e-14)), (
                eps, plan.kappa, b, exact)
        assert new.lower >= old.lower and new.upper <= old.upper


def _aliasing_dominates(plan, eps):
    errors = fi.invert(plan, eps)[1]
    return bool(errors["aliasing"] > errors["truncation"] + errors["rounding"])


def _mp_log_m(q, sigma, s, direction, cut=math.inf):
    """``log E[e^(s L)]`` of one run (X standardised: ``N(0, 1)`` against ``(1 - q) N(0, 1) + q N(1/sigma, 1)``),
    the remove direction's body ``X <= cut`` where ``cut`` is finite; mpmath quadrature split at the integrand's
    peak."""
    with mp.workdps(30):
        q, mu, s = mp.mpf(q), 1 / mp.mpf(sigma), mp.mpf(s)

        def ratio(x):
            return (1 - q) + q * mp.exp(mu * x - mu * mu / 2)

        if direction is Direction.REMOVE:
            def f(x):
                return mp.npdf(x) * ratio(x) ** (1 + s)
        else:
            def f(x):
                return mp.npdf(x) * ratio(x) ** (-s)
        peak = (1 + s) * mu
        points = sorted({-mp.inf, mp.mpf(-30), mp.mpf(0), mu, peak - 20, peak - 5, peak, peak + 5, peak + 20, mp.inf})
        if math.isfinite(cut):
            points = [x for x in points if x < cut] + [mp.mpf(cut)]
        return mp.log(mp.quad(f, points))


@pytest.mark.parametrize("q, sigma, steps", [(1e-4, 0.6, 10_000), (0.05, 1.0, 200)])
def test_the_added_exponents_log_m_are_upper_bounds(q, sigma, steps):
    """``with_more_tails`` reads ``log M`` at ~20 new real exponents from the accountant's direction laws (a cut
    body on the first ledger's remove direction): each must be at least the true value (the aliasing bound is a
    Chernoff bound through it)."""
    mechanism = PoissonSubsampled(GaussianMechanism(sigma), q)
    accountant = FourierAccountant().compose(mechanism, steps)
    checked = 0
    for direction, law, _ in accountant._directions(1e-5):
        bodies = getattr(law, "_bodies", None) or {}
        cut = bodies[mechanism].cut if mechanism in bodies else math.inf
        kappa = fi.chernoff_log_delta(lambda k: law(k.astype(np.complex128)), 0.3, fi.MAX_DAMPING)[1]
        tails = fi.exact_tilt(np.concatenate((kappa * fi._MORE_TAIL_FACTORS, kappa + fi._MORE_TAIL_SHIFTS)))
        values = np.real(law(tails.astype(np.complex128)))
        for i in (0, 5, 11, 12, 19):
            if math.isfinite(values[i]):
                assert values[i] >= steps * _mp_log_m(q, sigma, tails[i], direction, cut), (direction, tails[i])
                checked += 1
    assert checked >= 6


def test_a_truncation_bound_beyond_the_float_range_is_reported_not_warned():
    """``_check_truncation`` formatted ``np.exp(log_trunc)``: beyond the float range its overflow warning (an
    error under the project's ``error::RuntimeWarning``) replaced the TruncationLimit that callers catch."""
    law = _Gaussian(5.0)
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        with pytest.raises(fi.TruncationLimit, match=r"truncation bound exp\(\d+\) "):
            fi.make_plan(law, law.sup, 12.5, 1e-3, kappa=45.0, max_terms=1 << 14,
                         max_damping=fi.MAX_DAMPING_CLOSED_FORM)
