"""The lower aliasing's exact part (``accountants/fourier_inversion.py``, module docstring "lower aliasing").

The trapezoidal sum's ``j >= 1`` aliases are ``e^(-kappa j T) delta(eps - jT)``, and ``delta(x) = m0 - e^x m1 +
c(x)`` with ``0 <= c(x) <= e^((1 + b) x) M(-1 - b)``: a plan made with ``exact_lower`` takes the known part off and
keeps only the bracket's width, so its period may be shorter. Oracles: the Gaussian mechanism's privacy profile in
closed form (mpmath, 30 digits), summed over the aliases; the former plans' intervals (proven, so they must
overlap); and the privacy buckets for a subsampled Laplace ledger.
"""

import dataclasses
import math

import mpmath as mp
import numpy as np
import pytest

from dpledger.accountants import FourierAccountant
from dpledger.accountants.fourier_inversion import (
    InversionPlan,
    _complement_data,
    _lower_aliasing,
    invert,
    make_plan,
)
from dpledger.mechanisms import LaplaceMechanism, PoissonSubsampled


class _Unenclosed(LaplaceMechanism):
    """No proven subsampled characteristic function: the privacy buckets answer (the previous path)."""

    has_subsampled_enclosure = False

    def subsampled_loss_split(self, sampling_probability):
        return None


def _gaussian(mu):
    """``log M`` of the Gaussian mechanism's loss (``mu^2 s (1 + s) / 2``), its decay bound, and an enclosure whose
    error is a generous 1e-14 of the modulus (what the certified ledgers supply)."""
    def log_mgf(s):
        s = np.asarray(s, dtype=np.complex128)
        return 0.5 * mu * mu * s * (1.0 + s)

    def enclosure(s):
        value = log_mgf(s)
        return value, value.real + math.log(1e-14)

    log_mgf.enclosure = enclosure

    def log_mgf_sup(a, u):
        return 0.5 * mu * mu * (a * (1.0 + a) - u * u)

    return log_mgf, log_mgf_sup


def _delta(mu, x):
    """The Gaussian's privacy profile at any real ``x`` (mpmath)."""
    mu, x = mp.mpf(mu), mp.mpf(x)
    return mp.ncdf(-x / mu + mu / 2) - mp.exp(x) * mp.ncdf(-x / mu - mu / 2)


def _exact_lower_aliasing(mu, kappa, period, eps):
    with mp.workdps(30):
        total, j = mp.mpf(0), 1
        while True:
            term = mp.exp(-kappa * j * period) * _delta(mu, eps - j * period)
            total += term
            if term < mp.mpf(10) ** -40 * total or j > 10_000:
                return total
            j += 1


@pytest.mark.parametrize("mu, eps", [(0.5, 1.0), (1.0, 0.3), (3.0, 4.0), (3.0, 0.0)])
@pytest.mark.parametrize("period_factor", [0.3, 1.0])
def test_the_bracket_contains_the_exact_lower_aliasing(mu, eps, period_factor):
    """At the plan's period and at a much shorter one (where the aliases are large and ``c`` matters), the
    bracket holds the exact sum and is narrower than the former ``[0, G(kappa T)]``."""
    log_mgf, sup = _gaussian(mu)
    plan = make_plan(log_mgf, sup, eps, 1e-12)
    complement = _complement_data(log_mgf, None, plan.kappa, 64.0, 0.0)
    assert complement["m1_bounds"][0] > 1.0 - 1e-12 and 1.0 - 1e-15 < complement["mass_bounds"][0] < 1.0
    assert complement["mass_bounds"][1] == complement["m1_bounds"][1] == 1.0
    plan = dataclasses.replace(plan, period=plan.period * period_factor, **complement)
    assert plan.complement_tails.size
    low, high = _lower_aliasing(plan, eps)
    exact = float(_exact_lower_aliasing(mu, plan.kappa, plan.period, eps))
    g0 = 1.0 / math.expm1(plan.kappa * plan.period)
    assert low <= exact <= high <= g0 * (1.0 + 1e-12)
    if period_factor == 1.0:  # the known part taken off, the width is the remainder's bound: far below G
        assert high - low < 1e-3 * g0


def test_without_the_fields_the_bracket_is_the_former_bound():
    log_mgf, sup = _gaussian(1.0)
    plan = make_plan(log_mgf, sup, 1.0, 1e-12)
    assert plan.complement_tails.size == 0 and plan.mass_bounds == (0.0, 1.0) and plan.m1_bounds == (0.0, 1.0)
    low, high = _lower_aliasing(plan, 1.0)
    g0 = 1.0 / math.expm1(plan.kappa * plan.period)
    assert low == 0.0 and high == pytest.approx(g0, rel=1e-14)


@pytest.mark.parametrize("mu, eps", [(0.5, 1.0), (1.0, 1.0), (2.0, 3.0)])
def test_exact_lower_plans_take_no_more_nodes_and_contain_the_exact_delta(mu, eps):
    """The shorter period (and the known part) are taken only where they save nodes: at a tie the former, longer
    period stays (its nodes reach lower frequencies) and the plan is the former one; the interval holds the exact
    delta either way."""
    log_mgf, sup = _gaussian(mu)
    former = make_plan(log_mgf, sup, eps, 1e-13)
    plan = make_plan(log_mgf, sup, eps, 1e-13, exact_lower=True)
    assert plan.terms <= former.terms
    if plan.terms < former.terms:
        assert plan.period < former.period and plan.complement_tails.size
    else:
        assert plan.period == former.period and plan.complement_tails.size == 0
    with mp.workdps(30):
        exact = float(_delta(mu, eps))
    for p in (former, plan):
        bounds, errors = invert(p, eps)
        assert bounds.lower <= exact <= bounds.upper
        assert bounds.upper - bounds.lower <= 1e-6 * exact


def test_subsampled_laplace_delta_takes_half_the_nodes_and_agrees_with_the_former_plan(monkeypatch):
    """A split (part-of-the-law) plan: the rest's mass and ``M(-1)`` come from its own enclosure. The delta query
    of ``PS(Laplace(0.5), 0.001) x 10`` plans a shorter period; its interval meets the former one (both proven)
    and lies within the privacy buckets'."""
    import dpledger.accountants._fourier_search as search

    def ledger():
        return FourierAccountant().compose(PoissonSubsampled(LaplaceMechanism(scale=0.5), 0.001), 10)

    plans = []
    original = search.make_plan

    def spy(*args, **kwargs):
        plans.append((kwargs.get("exact_lower", False), original(*args, **kwargs)))
        return plans[-1][1]

    monkeypatch.setattr(search, "make_plan", spy)
    new = ledger().delta_bounds(0.0191)
    assert plans and all(flag for flag, _ in plans)
    new_terms = max(p.terms for _, p in plans)
    plans.clear()
    monkeypatch.setattr(search, "make_plan", lambda *a, **k: spy(*a, **{**k, "exact_lower": False}))
    former = ledger().delta_bounds(0.0191)
    former_terms = max(p.terms for _, p in plans)
    assert new_terms <= former_terms // 2
    assert max(new.lower, former.lower) <= min(new.upper, former.upper)
    assert new.upper - new.lower <= 1e-6 * new.estimate
    buckets = FourierAccountant().compose(PoissonSubsampled(_Unenclosed(scale=0.5), 0.001), 10).delta_bounds(0.0191)
    assert buckets.upper - buckets.lower > 10 * (new.upper - new.lower)  # the other path, far looser
    assert buckets.lower <= new.lower and new.upper <= buckets.upper


@pytest.mark.parametrize("field, value", [("mass_bounds", (0.5, 0.4)), ("mass_bounds", (0.0, 1.5)),
                                          ("m1_bounds", (-0.1, 1.0)), ("m1_bounds", (0.2,))])
def test_plan_refuses_bad_bounds(field, value):
    log_mgf, sup = _gaussian(1.0)
    plan = make_plan(log_mgf, sup, 1.0, 1e-12)
    with pytest.raises(ValueError, match=field):
        dataclasses.replace(plan, **{field: value})


@pytest.mark.parametrize("orders, log_m", [((-1.0,), (0.0,)), ((1.0, 2.0), (0.0,)), ((1.0,), (np.nan,)),
                                           ((1.0,), (-np.inf,))])
def test_plan_refuses_bad_remainder_orders(orders, log_m):
    log_mgf, sup = _gaussian(1.0)
    plan = make_plan(log_mgf, sup, 1.0, 1e-12)
    with pytest.raises(ValueError, match="complement_tails|lower aliasing"):
        dataclasses.replace(plan, complement_tails=orders, log_m_complement=log_m)


def test_plan_fields_are_read_only_arrays():
    log_mgf, sup = _gaussian(1.0)
    plan = make_plan(log_mgf, sup, 1.0, 1e-12)
    plan = dataclasses.replace(plan, **_complement_data(log_mgf, None, plan.kappa, 64.0, 0.0))
    assert isinstance(plan, InversionPlan) and plan.complement_tails.size
    with pytest.raises(ValueError):
        plan.complement_tails[0] = 5.0


@pytest.mark.parametrize("scale, q, runs", [(0.5, 0.001, 10), (2.0, 0.1, 10), (10.0, 0.01, 5)])
def test_a_split_rests_mass_and_first_moment_are_bracketed(scale, q, runs):
    """A split ledger's rest (the products with two or more continuous runs, ``R_2 = M - D - R_1``) has, for one
    group of ``n`` runs with atoms ``A`` and continuous part ``C = M1 - A`` per run (``M1(0) = M1(-1) = 1``), ``R_2(s)
    = 1 - A^n - n (1 - A) A^(n - 1)`` at ``s = 0`` and ``-1``: the bounds the plan takes from the rest's enclosure
    hold those closed forms (mpmath, from the atoms), to 1e-9. (Here the two are equal: a subsampled Laplace's atom
    regions, x below 0 and above the sensitivity, weigh the same under both distributions, so ``A(-1) = A(0)``.)"""
    mechanism = PoissonSubsampled(LaplaceMechanism(scale=scale), q)
    ledger = FourierAccountant().compose(mechanism, runs)
    for direction, split in ledger._laplace_split():
        lm = ledger._direction_log_mgf(direction)
        data = _complement_data(lm, split.node_enclosure, 5.0, 64.0, 0.0)
        assert data["complement_tails"].size
        l1, l0, log_p1, log_p0 = mechanism.loss_split()[direction.name.lower()].atoms
        with mp.workdps(40):
            for s, bounds in ((0, data["mass_bounds"]), (-1, data["m1_bounds"])):
                a = mp.exp(mp.mpf(log_p1) + s * mp.mpf(l1)) + mp.exp(mp.mpf(log_p0) + s * mp.mpf(l0))
                exact = 1 - a**runs - runs * (1 - a) * a ** (runs - 1)
                assert bounds[0] <= exact <= bounds[1], (direction, s, bounds, float(exact))
                assert bounds[1] - bounds[0] <= 1e-9 * float(exact)  # and tightly: a test that could fail
