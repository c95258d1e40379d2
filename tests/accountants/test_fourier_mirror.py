"""The mirror check of the epsilon search: one direction's plan bounds the other direction's delta.

The add direction of a ledger is the remove direction's pair swapped (``M_add(s) = M_remove(-1 - s)``), so
``delta_add(eps) = 1 - e^eps + e^eps delta_remove(-eps)`` (and the same with the directions exchanged). The search
uses it to rule out the direction that cannot decide the maximum from the plan of the one it searched first
(:func:`accountants._fourier_search.mirror_delta_upper`). Oracles: the single subsampled step's add-direction delta
in closed form (evaluated in mpmath), the analytic Gaussian, and the add direction's own certified inversion.
"""

import math

import mpmath as mp
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import dpledger.accountants._fourier_search as search
from dpledger.accountants import FourierAccountant
from dpledger.accountants.fourier_inversion import invert, make_plan
from dpledger.mechanisms import GaussianMechanism, PoissonSubsampled, RandomizedResponse
from dpledger.mechanisms.relations import Direction

DELTA = 1e-5


def _law(accountant, direction, delta=None):
    (law,) = [(lm, sup) for d, lm, sup in accountant._directions(delta) if d is direction]
    return law


def _plan(accountant, direction, epsilon, tolerance=1e-11, delta=None):
    lm, sup = _law(accountant, direction, delta)
    return make_plan(lm, sup, epsilon, tolerance)


def _exact_add_delta(g, sigma, epsilon):
    """``H_(e^eps)(Q || P)`` for ``P = (1 - g) N(0, s^2) + g N(1, s^2)``, ``Q = N(0, s^2)``: ``q - e^eps p >= 0``
    exactly where ``x <= x* = s^2 log((e^-eps - 1 + g) / g) + 1/2`` (the likelihood ratio ``p / q`` increases in
    ``x``), so it is ``Phi(x* / s) - e^eps ((1 - g) Phi(x* / s) + g Phi((x* - 1) / s))``; 0 where
    ``e^-eps <= 1 - g``."""
    with mp.workdps(50):
        g, s, e = mp.mpf(g), mp.mpf(sigma), mp.mpf(epsilon)
        inner = mp.exp(-e) - 1 + g
        if inner <= 0:
            return mp.mpf(0)
        x = s * s * mp.log(inner / g) + mp.mpf(1) / 2
        return mp.ncdf(x / s) - mp.exp(e) * ((1 - g) * mp.ncdf(x / s) + g * mp.ncdf((x - 1) / s))


@settings(max_examples=12, deadline=None)
@given(g=st.sampled_from([0.01, 0.1, 0.5]), sigma=st.sampled_from([0.8, 1.0, 2.0]),
       fraction=st.floats(0.05, 0.9))
def test_the_remove_plan_bounds_the_add_delta_of_one_subsampled_step(g, sigma, fraction):
    epsilon = fraction * -math.log1p(-g)  # the add direction's delta is positive below -log(1 - g)
    accountant = FourierAccountant().compose(PoissonSubsampled(GaussianMechanism(sigma=sigma), g), 1)
    plan = _plan(accountant, Direction.REMOVE, epsilon)
    exact = _exact_add_delta(g, sigma, epsilon)
    upper = search.mirror_delta_upper(plan, epsilon)
    assert exact <= upper <= exact + 1e-8, (g, sigma, epsilon, float(exact), upper)


def test_near_the_add_directions_largest_loss_the_mirror_bound_stays_above_the_exact_delta():
    """g 0.5, sigma 2, epsilon 0.9375 x -log(1 - g) (helper red4's hypothesis example in the dev profile): the add
    delta is 3.4e-12 and the mirror bound 1.6e-8, the remove plan's errors amplified by ``e^(kappa (eps_plan + eps) +
    eps)``: looser than the 1e-8 above, still an upper bound (what the search relies on)."""
    g, sigma = 0.5, 2.0
    epsilon = 0.9375 * -math.log1p(-g)
    accountant = FourierAccountant().compose(PoissonSubsampled(GaussianMechanism(sigma=sigma), g), 1)
    exact = _exact_add_delta(g, sigma, epsilon)
    upper = search.mirror_delta_upper(_plan(accountant, Direction.REMOVE, epsilon), epsilon)
    assert exact <= upper <= exact + 1e-7, (float(exact), upper)


def test_the_remove_plan_bounds_the_add_delta_of_the_analytic_gaussian():
    """Gaussian pairs are symmetric: the mirror bound is the analytic delta itself, to the plan's accuracy."""
    for sigma, count in ((1.0, 1), (2.0, 10), (0.5, 3)):
        accountant = FourierAccountant().compose(GaussianMechanism(sigma=sigma), count)
        mu = math.sqrt(count) / sigma
        for epsilon in (0.0, 0.3, 1.5):
            with mp.workdps(40):
                m, e = mp.mpf(mu), mp.mpf(epsilon)
                exact = mp.ncdf(m / 2 - e / m) - mp.exp(e) * mp.ncdf(-m / 2 - e / m)
            upper = search.mirror_delta_upper(_plan(accountant, Direction.REMOVE, max(epsilon, 0.1)), epsilon)
            assert exact <= upper <= exact + 1e-9, (sigma, count, epsilon, float(exact), upper)


def test_on_composed_ledgers_the_mirror_bound_agrees_with_the_add_directions_own_inversion():
    """Ten runs (no closed form for either direction): at epsilons up to the answer, the bound from the remove plan
    lies inside the add direction's own certified interval, up to the remove plan's errors, which the identity
    amplifies by ``e^(kappa (eps_plan + eps) + eps)`` (1.5e-8 where the add delta is 1e-19: still far below the
    delta the search compares it with). A cut remove law (the epsilon query's) gives the same: its mass left out only
    raises the bound."""
    for q, sigma in ((1e-3, 1.0), (0.01, 2.0), (0.01, 0.8)):
        accountant = FourierAccountant().compose(PoissonSubsampled(GaussianMechanism(sigma=sigma), q), 10)
        answer = accountant.epsilon_bounds(DELTA).upper
        for delta in (None, DELTA):
            remove = _plan(accountant, Direction.REMOVE, answer, 1e-6 * DELTA / 16.0, delta=delta)  # the search's
            for epsilon in (0.2 * answer, 0.6 * answer, answer):
                own = invert(_plan(accountant, Direction.ADD, epsilon), epsilon)[0]
                mirrored = search.mirror_delta_upper(remove, epsilon)
                assert own.lower <= mirrored <= own.upper + 0.01 * DELTA, (q, sigma, delta, epsilon, own, mirrored)


def test_the_mirror_bound_refuses_what_it_cannot_compute():
    plan = _plan(FourierAccountant().compose(GaussianMechanism(sigma=1.0), 1), Direction.REMOVE, 1.0)
    for epsilon in (-0.1, 701.0, math.inf, math.nan):
        assert search.mirror_delta_upper(plan, epsilon) == math.inf
        assert not search._mirror_below(plan, epsilon, math.log(0.5))


@pytest.mark.parametrize("q, sigma, steps", [(1e-4, 2.0, 10), (1e-4, 5.0, 10_000), (1e-4, 2.0, 100),
                                             (1e-3, 5.0, 10)])
def test_the_accountant_rules_the_add_direction_out_by_the_mirror_and_answers_as_full_searches(
        monkeypatch, q, sigma, steps):
    """The remove direction decides these ledgers (sigma 5, q 1e-4, 10^4 steps within 0.6% of the add one), and
    the add direction's coarse Chernoff probe cannot show it: it is ruled out by one inversion of the remove plan,
    with neither a full Chernoff search nor a plan of its own, and the answer is the one searching both directions
    in full gives."""
    def ledger():
        return FourierAccountant().compose(PoissonSubsampled(GaussianMechanism(sigma=sigma), q), steps)

    verdicts, chernoff, plans = [], [], []
    original, full, make = search._mirror_below, search.chernoff_epsilon, search.make_plan
    monkeypatch.setattr(search, "_mirror_below", lambda *a: verdicts.append(original(*a)) or verdicts[-1])
    monkeypatch.setattr(search, "chernoff_epsilon", lambda lm, *a: chernoff.append(lm._direction) or full(lm, *a))
    monkeypatch.setattr(search, "make_plan", lambda lm, *a, **k: plans.append(lm._direction) or make(lm, *a, **k))
    bounds = ledger().epsilon_bounds(DELTA)
    assert verdicts == [True]
    assert chernoff == [Direction.REMOVE] and set(plans) == {Direction.REMOVE}
    monkeypatch.setattr(search, "_mirror_below", lambda *a: False)
    monkeypatch.setattr(search, "_below_at", lambda *a, **k: False)
    reference = ledger().epsilon_bounds(DELTA)
    assert chernoff.count(Direction.ADD) == 1  # the reference searched the add direction
    assert max(bounds.lower, reference.lower) <= min(bounds.upper, reference.upper)
    assert bounds.upper - bounds.lower <= 1e-6 * bounds.upper


def test_the_mirror_never_rules_out_the_direction_that_decides(monkeypatch):
    """Searched in the wrong order (the add direction first: the directions given reversed; a mirrored search takes
    them in the order given), the remove direction's delta at the add direction's lower bound exceeds delta: the
    mirror check says so, the remove direction is searched in full, and the answer is the usual one."""
    accountant = FourierAccountant().compose(PoissonSubsampled(GaussianMechanism(sigma=1.0), 0.01), 100)
    usual = accountant.epsilon_bounds(DELTA)
    verdicts = []
    original = search._mirror_below
    monkeypatch.setattr(search, "_mirror_below", lambda *a: verdicts.append(original(*a)) or verdicts[-1])
    directions = accountant._directions(DELTA)
    assert [d for d, _, _ in directions] == [Direction.REMOVE, Direction.ADD]
    swapped = search.max_epsilon_bounds(directions[::-1], math.log(DELTA), mirrored=True, **accountant._settings())
    assert verdicts == [False]
    assert max(swapped.lower, usual.lower) <= min(swapped.upper, usual.upper)
    assert swapped.upper - swapped.lower <= 1e-6 * swapped.upper


@pytest.mark.parametrize("q, sigma, steps, epsilon", [(1e-4, 5.0, 10, 4.3e-5), (1e-3, 1.0, 100, 0.055),
                                                      (0.01, 1.0, 100, 1.0)])
def test_a_delta_query_bounds_the_add_direction_by_the_mirror_and_answers_as_full_searches(
        monkeypatch, q, sigma, steps, epsilon):
    """Delta queries: the add direction is bounded by the remove direction's last plan at ``epsilon``; where that
    bound is at most the remove direction's lower end the add direction makes no plan (at sigma 5, q 1e-4 its own
    search made one of 1,024 nodes), and the answer overlaps the one that searches both directions in Chernoff
    order on whole laws (``mirrored=False``)."""
    accountant = FourierAccountant().compose(PoissonSubsampled(GaussianMechanism(sigma=sigma), q), steps)
    mirrors, plans = [], []
    original, make = search.mirror_delta_upper, search.make_plan
    monkeypatch.setattr(search, "mirror_delta_upper", lambda *a: mirrors.append(original(*a)) or mirrors[-1])
    monkeypatch.setattr(search, "make_plan", lambda lm, *a, **k: plans.append(lm._direction) or make(lm, *a, **k))
    bounds = accountant.delta_bounds(epsilon)
    assert len(mirrors) == 1 and mirrors[0] <= bounds.lower
    assert set(plans) == {Direction.REMOVE}
    both = search.max_delta_bounds(accountant._directions(), epsilon, **accountant._settings())
    assert max(bounds.lower, both.lower) <= min(bounds.upper, both.upper)
    assert bounds.upper - bounds.lower <= 1e-6 * bounds.upper


def test_a_ledger_of_gaussians_and_two_point_pairs_is_searched_in_one_direction():
    """Gaussians and randomized responses only: the add law equals the remove law (``M(-1 - s) = M(s)``, checked here
    at random complex points), so only the remove direction is searched, and the answer is the one both give."""
    accountant = FourierAccountant()
    for sigma in (3.0, 5.0, 8.0):
        accountant = accountant.compose(GaussianMechanism(sigma=sigma), 20)
    for p in (0.52, 0.55):
        accountant = accountant.compose(RandomizedResponse(p=p), 30)
    rng = np.random.default_rng(7)
    s = rng.uniform(-3, 3, 20) + 1j * rng.uniform(-40, 40, 20)
    np.testing.assert_allclose(accountant.log_mgf(s, Direction.ADD), accountant.log_mgf(s, Direction.REMOVE),
                               rtol=1e-12, atol=1e-12)
    assert [d for d, _, _ in accountant._directions()] == [Direction.REMOVE]
    bounds = accountant.epsilon_bounds(DELTA)
    both = accountant._directions() + [(Direction.ADD, accountant._direction_log_mgf(Direction.ADD),
                                        accountant._log_mgf_sup(Direction.ADD))]
    assert search.max_epsilon_bounds(both, math.log(DELTA), **accountant._settings()) == bounds
    assert bounds.upper - bounds.lower <= 1e-6 * bounds.upper
