"""Cut laws in the Fourier accountant: the remove direction of a Poisson-subsampled Gaussian with its upper tail cut
(``Mechanism.remove_body``), inverted as a sub-probability law whose left-out mass joins the upper end only
("Cut laws" in :mod:`accountants.fourier_inversion`).

The references are independent proven intervals of the same ledgers: the whole (uncut) law's inversion, which the
accountant used before cutting, and the privacy buckets.
"""

import dataclasses
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dpledger.accountants import FourierAccountant, fourier_accountant, fourier_inversion
from dpledger.accountants import _fourier_search as search
from dpledger.accountants.fourier_accountant import CUT_SHARE
from dpledger.accountants.fourier_inversion import invert, make_plan
from dpledger.mechanisms import GaussianMechanism, PoissonSubsampled, RandomizedResponse
from dpledger.mechanisms.relations import Direction

DELTA = 1e-5


def _ledger(q, sigma, steps):
    return FourierAccountant().compose(PoissonSubsampled(GaussianMechanism(sigma), q), count=steps)


def _remove_law(q, sigma, steps):
    """``(log MGF, decay bound)`` of the remove direction's cut law of an epsilon query at DELTA."""
    direction, law, sup = _ledger(q, sigma, steps)._directions(DELTA)[0]
    assert direction is Direction.REMOVE
    return law, sup


def _uncut(accountant, delta):
    """The same ledger's epsilon interval from the whole law (no cut): the accountant's path before cut laws."""
    accountant._derived.setdefault("bodies", {})[delta] = None
    try:
        return accountant.epsilon_bounds(delta)
    finally:
        accountant._derived.pop("bodies", None)


class _Law:
    """A closed-form law (Gaussian loss, mu = 1) with a left-out mass, as a direction law."""

    def __init__(self, left_out):
        self.left_out = left_out

    def __call__(self, s):
        s = np.asarray(s, dtype=np.complex128)
        return 0.5 * s * (s + 1.0)


def _sup(kappa, u_min):
    return 0.5 * (kappa * (kappa + 1.0) - u_min * u_min)


def test_left_out_mass_joins_the_upper_end_only():
    plan = make_plan(_Law(0.0), _sup, 1.0, 1e-12, kappa=1.5)
    cut = dataclasses.replace(plan, left_out=3e-4)
    whole, _ = invert(plan, 1.0)
    part, _ = invert(cut, 1.0)
    assert part.lower == whole.lower
    assert part.estimate == whole.estimate
    assert part.upper >= whole.upper + 3e-4
    assert part.upper <= (whole.upper + 3e-4) * (1 + 1e-15)
    assert invert(dataclasses.replace(plan, left_out=2.0), 1.0)[0].upper == 1.0


def test_make_plan_carries_the_laws_left_out_mass_and_refuses_the_complement_contour():
    assert make_plan(_Law(2e-9), _sup, 1.0, 1e-12, kappa=1.5).left_out == 2e-9
    assert make_plan(_Law(0.0), _sup, 1.0, 1e-6, kappa=-0.5).kappa == -0.5
    with pytest.raises(ValueError, match="cut law"):
        make_plan(_Law(2e-9), _sup, 1.0, 1e-6, kappa=-0.5)


def test_chernoff_epsilon_of_a_cut_law_bounds_the_whole_law():
    """Its target is delta - left_out: the Chernoff bound of the part at that target plus the mass left out is
    delta; nothing left (left_out >= delta) gives no finite epsilon."""
    log_delta = math.log(DELTA)
    whole, _ = search.chernoff_epsilon(_Law(0.0), log_delta, 1e3)
    part, _ = search.chernoff_epsilon(_Law(DELTA / 2), log_delta, 1e3)
    at_half, _ = search.chernoff_epsilon(_Law(0.0), math.log(DELTA / 2), 1e3)
    assert part > whole
    assert part == pytest.approx(at_half, rel=1e-9)
    assert search.coarse_chernoff_epsilon(_Law(DELTA), log_delta, 1e3)[0] == math.inf


@pytest.mark.parametrize(("q", "sigma", "steps"), [(1e-4, 2.0, 10), (1e-3, 5.0, 10), (1e-4, 1.0, 10),
                                                    (1e-3, 1.0, 100), (0.01, 1.1, 1000)])
def test_cut_and_whole_law_intervals_agree(q, sigma, steps):
    """Both are proven: they must intersect, and the cut one meets rtol."""
    accountant = _ledger(q, sigma, steps)
    cut = accountant.epsilon_bounds(DELTA)
    whole = _uncut(accountant, DELTA)
    assert max(cut.lower, whole.lower) <= min(cut.upper, whole.upper)
    assert cut.upper - cut.lower <= 1e-6 * cut.upper
    assert accountant.bound_kind.value == "upper bound"


def test_narrow_ledger_is_answered_through_the_cut_law(monkeypatch):
    """q = 1e-4, sigma = 2, 10 steps: the remove direction's plans carry the left-out mass (at most rtol delta /
    CUT_SHARE) and reach dampings far above the uncut law's cap (64), where few nodes suffice."""
    plans = []
    original = search.make_plan

    def spy(*args, **kwargs):
        plan = original(*args, **kwargs)
        plans.append(plan)
        return plan

    monkeypatch.setattr(search, "make_plan", spy)
    accountant = _ledger(1e-4, 2.0, 10)
    accountant.epsilon_bounds(DELTA)
    cut = [p for p in plans if p.left_out > 0]
    assert cut, "the remove direction was not cut"
    assert all(0 < p.left_out <= 1e-6 * DELTA / CUT_SHARE for p in cut)
    assert max(p.kappa for p in cut) > fourier_inversion.MAX_DAMPING_ENCLOSED
    assert max(p.terms for p in plans) <= 1024
    method = accountant.epsilon_report(DELTA).method
    assert "upper tail cut at a total mass of at most" in method
    # a delta query is cut too, for a delta it does not know yet (FourierAccountant._inverted_delta): its mass is
    # still a small share of rtol times the delta it reports
    report = accountant.delta_report(accountant.get_epsilon(DELTA))
    assert "upper tail cut at a total mass of at most" in report.method
    assert 0 < accountant._derived["cut"] <= 1e-6 * report.delta / CUT_SHARE


def _spied_plans(monkeypatch, bands):
    """The remove direction's plans (``shorten``, plan) of q 1e-4, sigma 0.6, 100 steps, with the truncation bound
    spread over ``bands`` octaves (fourier_inversion._banded_sup; 0: a single supremum), and the bounds."""
    calls = []
    original = search.make_plan

    def spy(*args, **kwargs):
        plan = original(*args, **kwargs)
        calls.append((kwargs.get("shorten"), plan))
        return plan

    monkeypatch.setattr(search, "make_plan", spy)
    monkeypatch.setattr(fourier_inversion, "_TRUNCATION_BANDS", bands)
    bounds = _ledger(1e-4, 0.6, 100).epsilon_bounds(DELTA)
    return [(shorten, plan) for shorten, plan in calls if plan.left_out > 0], bounds


def test_with_the_banded_truncation_bound_the_first_plan_meets_rtol(monkeypatch):
    """q 1e-4, sigma 0.6, 100 steps: the first plan (8,192 nodes, made far above the answer) misses rtol by 16% with
    a single supremum in its truncation bound and meets it with the banded one (about half of it)."""
    remove, bounds = _spied_plans(monkeypatch, fourier_inversion._TRUNCATION_BANDS)
    assert [shorten for shorten, _ in remove] == [True]
    assert bounds.upper - bounds.lower <= 1e-6 * bounds.upper


def test_a_missed_first_plan_is_followed_by_one_in_finer_steps_of_damping(monkeypatch):
    """q 1e-4, sigma 0.6, 100 steps, the truncation bound a single supremum: the first (halvings) plan, made far
    above the answer, misses rtol; the second, at the answer, takes dampings in steps of 2^-1/2 (5.66 between the
    Chernoff 8, whose long period needs 65,536 nodes, and 4, whose largest term is past the rounding headroom) and
    meets rtol with 16,384. A third plan would mean the finer steps bought nothing."""
    remove, bounds = _spied_plans(monkeypatch, 0)
    assert [shorten for shorten, _ in remove] == [True, search._REPLAN_SHORTEN]
    second = remove[1][1]
    unshortened = make_plan(*_remove_law(1e-4, 0.6, 100), bounds.upper, 1e-6 * DELTA / 16.0, max_damping=64.0)
    assert second.kappa < unshortened.kappa and second.terms * 4 <= unshortened.terms
    assert bounds.upper - bounds.lower <= 1e-6 * bounds.upper


@pytest.mark.parametrize("guess", [fourier_accountant.DELTA_CUT_GUESS, 1e3])
def test_a_delta_query_on_cut_laws_agrees_with_the_whole_laws(monkeypatch, guess):
    """q = 1e-4, sigma = 2 and 5, 10 steps: delta on cut laws (a few hundred nodes) against delta on the whole laws
    (tens of thousands): both proven, so they overlap, and the cut one meets rtol. With the first cut sized for a
    thousand times the Chernoff bound (it leaves out more than rtol delta allows), the second is sized for the
    proven lower end the first found, and the answer is the same."""
    monkeypatch.setattr(fourier_accountant, "DELTA_CUT_GUESS", guess)
    plans = []
    original = search.make_plan
    monkeypatch.setattr(search, "make_plan", lambda *a, **k: plans.append(original(*a, **k)) or plans[-1])
    for sigma, epsilon in ((2.0, 2.3e-4), (5.0, 4.3e-5)):
        plans.clear()
        accountant = _ledger(1e-4, sigma, 10)
        cut = accountant.delta_bounds(epsilon)
        assert accountant._derived["cut"] > 0
        assert cut.upper - cut.lower <= 1e-6 * cut.upper
        assert max(p.terms for p in plans) <= 1024
        if guess > 1.0:
            assert len({p.left_out for p in plans if p.left_out > 0}) == 2  # two cuts: the guess, then the lower end
        whole = search.max_delta_bounds(accountant._directions(), epsilon, **accountant._settings())
        assert max(cut.lower, whole.lower) <= min(cut.upper, whole.upper)


def test_left_out_mass_covers_every_run():
    """The union bound over runs: sum of count x tail mass of each cut mechanism, within the share of rtol delta."""
    first = PoissonSubsampled(GaussianMechanism(2.0), 1e-4)
    second = PoissonSubsampled(GaussianMechanism(3.0), 1e-3)
    accountant = FourierAccountant().compose(first, 7).compose(second, 5).compose(RandomizedResponse(p=0.6), 3)
    bodies = accountant._remove_bodies(DELTA)
    assert set(bodies) == {first, second}
    left_out = accountant._left_out(bodies)
    expected = 7 * math.exp(bodies[first].log_tail_mass) + 5 * math.exp(bodies[second].log_tail_mass)
    assert expected <= left_out <= expected * (1 + 1e-12)
    assert left_out <= 1e-6 * DELTA / CUT_SHARE
    law = accountant._directions(DELTA)[0][1]
    assert law.left_out == left_out
    assert accountant._directions(DELTA)[1][1].__dict__.get("left_out") is None  # the add direction is whole


def test_mixed_ledger_cut_interval_agrees_with_whole_law():
    accountant = (FourierAccountant().compose(PoissonSubsampled(GaussianMechanism(2.0), 1e-3), 20)
                  .compose(GaussianMechanism(30.0), 3).compose(RandomizedResponse(p=0.55), 2))
    cut = accountant.epsilon_bounds(DELTA)
    whole = _uncut(accountant, DELTA)
    assert max(cut.lower, whole.lower) <= min(cut.upper, whole.upper)
    assert cut.upper - cut.lower <= 1e-6 * cut.upper


def test_the_other_queries_use_the_whole_law():
    """delta(epsilon) has no target delta to size the cut: both directions stay whole."""
    accountant = _ledger(1e-3, 2.0, 10)
    assert all(getattr(law, "left_out", 0.0) == 0.0 for _, law, _ in accountant._directions())
    eps = accountant.epsilon_bounds(DELTA).upper
    assert accountant.delta_bounds(eps).lower <= DELTA


@settings(max_examples=8, deadline=None)
@given(q=st.sampled_from([1e-4, 3e-4, 1e-3, 3e-3]), sigma=st.floats(1.0, 6.0), steps=st.integers(2, 60),
       delta=st.sampled_from([1e-4, 1e-5, 1e-7]))
def test_cut_intervals_intersect_the_buckets(q, sigma, steps, delta):
    """Against the privacy buckets (a different proven method, with its own discretisation)."""
    accountant = _ledger(q, sigma, steps)
    cut = accountant.epsilon_bounds(delta)
    lower, upper = accountant._buckets().epsilon_bounds(delta)
    assert max(cut.lower, lower) <= min(cut.upper, upper)
    assert cut.upper - cut.lower <= 1e-6 * cut.upper


def test_a_direction_whose_saddle_point_is_far_out_is_ruled_out_before_its_full_chernoff_search(monkeypatch):
    """q = 1e-4, sigma = 5, 10 steps: the add direction's coarse Chernoff best lies beyond the first grid (its loss
    is bounded above, so its saddle point sits at dampings in the thousands); one loose inversion at the remove
    direction's lower bound, at that coarse damping, rules it out, and only the remove direction is searched in
    full. The answer is the one a full search of both gives. (The mirror check comes first in the accountant and
    answers this ledger from the remove direction's plan alone: switched off here, the loose inversion decides.)"""
    monkeypatch.setattr(search, "_mirror_below", lambda *a, **k: False)
    accountant = _ledger(1e-4, 5.0, 10)
    (_, add_law, _), = [d for d in accountant._directions(DELTA) if d[0] is Direction.ADD]
    coarse = search.coarse_chernoff_epsilon(add_law, math.log(DELTA), search.damping_cap(add_law, 64.0))
    assert coarse.kappa > search._chernoff_grid(64.0)[-1]
    full = []
    original = search.chernoff_epsilon
    monkeypatch.setattr(search, "chernoff_epsilon", lambda *a, **k: full.append(a) or original(*a, **k))
    bounds = _ledger(1e-4, 5.0, 10).epsilon_bounds(DELTA)
    assert len(full) == 1
    _agrees_with_full_searches(monkeypatch, bounds, (1e-4, 5.0, 10), full)


def _agrees_with_full_searches(monkeypatch, bounds, cell, full):
    """With the floor checks off (the cheap inversion and the mirror direction's plan) every direction is searched
    in full (two more full Chernoff searches counted in ``full``); that answer and ``bounds`` must overlap, and
    ``bounds`` meet rtol."""
    monkeypatch.setattr(search, "_below_at", lambda *a, **k: False)
    monkeypatch.setattr(search, "_mirror_below", lambda *a, **k: False)
    reference = _ledger(*cell).epsilon_bounds(DELTA)
    assert len(full) == 3
    assert max(bounds.lower, reference.lower) <= min(bounds.upper, reference.upper)
    assert bounds.upper - bounds.lower <= 1e-6 * bounds.upper


def test_a_direction_far_above_the_floor_within_the_first_grid_is_tried_at_the_floor_first(monkeypatch):
    """q = 1e-4, sigma = 2, 10^4 steps: the add direction's coarse Chernoff best is at the first grid's top (1000),
    its coarse epsilon 28% above the remove direction's lower bound; one loose inversion at that floor, at the
    damping the coarse values' parabola points to, rules it out without its full Chernoff search, and the answer is
    the one a full search of both gives (the mirror check, which comes first, switched off)."""
    monkeypatch.setattr(search, "_mirror_below", lambda *a, **k: False)
    accountant = _ledger(1e-4, 2.0, 10_000)
    (_, add_law, _), = [d for d in accountant._directions(DELTA) if d[0] is Direction.ADD]
    cap = search.damping_cap(add_law, 64.0)
    coarse = search.coarse_chernoff_epsilon(add_law, math.log(DELTA), cap)
    assert coarse.kappa <= search._chernoff_grid(cap)[-1]
    full, floors = [], []
    original, below = search.chernoff_epsilon, search._below_at
    monkeypatch.setattr(search, "chernoff_epsilon", lambda *a, **k: full.append(a) or original(*a, **k))
    monkeypatch.setattr(search, "_below_at", lambda *a, **k: floors.append(a[4]) or below(*a, **k))
    bounds = _ledger(1e-4, 2.0, 10_000).epsilon_bounds(DELTA)
    assert len(full) == 1 and len(floors) == 1  # the remove direction's full search; the add one's floor check
    assert coarse[0] > search._FLOOR_FIRST_GAP * bounds.lower
    assert floors[0] == search._coarse_vertex(coarse.objective, coarse.dampings) != coarse.kappa
    _agrees_with_full_searches(monkeypatch, bounds, (1e-4, 2.0, 10_000), full)


def test_the_root_searches_invert_each_plan_at_each_epsilon_once(monkeypatch):
    # q = 1e-4, sigma = 5, 100 steps: the upper, estimate and lower roots ask for some epsilons twice (a root's
    # check, the same epsilon's other field); each plan is inverted there once, and the answer is unchanged
    reference = _ledger(1e-4, 5.0, 100).epsilon_bounds(DELTA)
    calls = []
    original = search.invert
    monkeypatch.setattr(search, "invert", lambda plan, eps: calls.append((id(plan), float(eps))) or original(plan, eps))
    assert _ledger(1e-4, 5.0, 100).epsilon_bounds(DELTA) == reference
    assert len(calls) >= 10 and len(set(calls)) == len(calls)


def test_the_coarse_probe_keeps_every_damping_it_evaluated():
    accountant = _ledger(1e-4, 5.0, 10)
    for _, law, _ in accountant._directions(DELTA):
        cap = search.damping_cap(law, 64.0)
        coarse = search.coarse_chernoff_epsilon(law, math.log(DELTA), cap)
        assert np.array_equal(coarse.dampings[:9], search._chernoff_grid(cap)[::5])
        assert np.all(np.diff(coarse.dampings) > 0) and coarse.dampings[-1] <= cap
        assert np.array_equal(coarse.objective[:9], np.where(np.isnan(coarse[1]), np.inf, coarse[1]))
        expected = search._chernoff_objective(law, search._chernoff_target(law, math.log(DELTA)), coarse.dampings)
        np.testing.assert_allclose(coarse.objective, expected, rtol=1e-9)  # each batch its own enclosure layout
        assert coarse[0] == max(float(np.min(coarse.objective)), 0.0)
        assert coarse.kappa == coarse.dampings[int(np.argmin(coarse.objective))]


@settings(max_examples=30, deadline=None)
@given(noise=st.floats(-7.0, -2.0).map(lambda e: 10.0**e), cap=st.floats(3.0, 9.0).map(lambda e: 10.0**e))
def test_the_coarse_probe_continues_past_the_grid_only_while_the_objective_falls(noise, cap):
    """A Gaussian loss of tiny ``mu`` (``log M(s) = mu^2 s (1 + s) / 2``) has its Chernoff damping far beyond the
    first grid: the probe continues one damping at a time while the objective falls, ending at the first that
    does not (or at the cap), and finds the best of the dampings it would have evaluated in one batch."""
    evaluated = []

    def law(s):
        evaluated.append(np.size(s))
        return 0.5 * noise * noise * s * (1.0 + s)

    coarse = search.coarse_chernoff_epsilon(law, math.log(DELTA), cap)
    grid = search._chernoff_grid(cap)[::5]
    more = coarse.dampings[9:]
    if coarse.objective[8] > min(coarse.objective[:8]) or cap <= grid[-1]:
        assert more.size == 0
        return
    ratio = grid[-1] / grid[-2]
    every = np.unique(np.minimum(grid[-1] * ratio ** np.arange(1, 1 + int(np.ceil(np.log(cap / grid[-1]) /
                                                                                   np.log(ratio)))), cap))
    assert np.array_equal(more, every[:more.size]) and evaluated[1:] == [1] * more.size
    falls = np.diff(coarse.objective[8:]) < 0
    assert falls[:-1].all() and (not falls[-1] or more.size == every.size)
    batch = search._chernoff_objective(law, math.log(DELTA), every)
    assert coarse[0] == max(min(float(np.min(batch)), float(np.min(coarse.objective[:9]))), 0.0)


@settings(max_examples=30, deadline=None)
@given(center=st.floats(-2.0, 2.0), curvature=st.floats(0.01, 10.0), offset=st.floats(-1.0, 1.0))
def test_the_coarse_vertex_is_the_parabolas_kept_between_the_best_neighbours(center, curvature, offset):
    kappa = np.geomspace(1e-3, 1e3, 9)
    x = np.log(kappa)
    vertex = center * np.log(10.0) + offset
    values = curvature * (x - vertex) ** 2
    at = search._coarse_vertex(values, kappa)
    i = int(np.argmin(values))
    if i in (0, 8):
        assert at is None
    else:
        assert kappa[i - 1] <= at <= kappa[i + 1]
        assert math.isclose(math.log(at), min(max(vertex, x[i - 1]), x[i + 1]), rel_tol=1e-9, abs_tol=1e-9)
    # a tie: the first smallest is the best, and the vertex lies midway (in log kappa) between the tied dampings;
    # a non-finite neighbour gives no vertex
    at = search._coarse_vertex(np.array([3.0, 1.0, 1.0] + [2.0] * 6), kappa)
    assert math.isclose(at, math.sqrt(kappa[1] * kappa[2]), rel_tol=1e-12)
    assert search._coarse_vertex(np.array([1.0, np.inf, 0.5] + [2.0] * 6), kappa) is None


def test_close_directions_are_told_apart_by_a_second_loose_plan(monkeypatch):
    """q = 1e-4, sigma = 5, 10^4 steps: the add direction's epsilon is within 0.6% of the remove direction's, too
    close for the floor check's first plan (tolerance delta / 4); a second plan at a quarter of the estimated room
    below delta rules it out, so no root search on its inverted delta runs, and the answer is a full search's. (The
    mirror check, which tells them apart from the remove direction's plan, switched off.)"""
    monkeypatch.setattr(search, "_mirror_below", lambda *a, **k: False)
    roots = []
    original = search.certified_upper_root
    monkeypatch.setattr(search, "certified_upper_root", lambda *a, **k: roots.append(a) or original(*a, **k))
    bounds = _ledger(1e-4, 5.0, 10_000).epsilon_bounds(DELTA)
    assert len(roots) == 1
    monkeypatch.setattr(search, "_FLOOR_RETRY_ROOM", 2.0)  # no second plan: the add direction searched in full
    reference = _ledger(1e-4, 5.0, 10_000).epsilon_bounds(DELTA)
    assert len(roots) == 3
    assert max(bounds.lower, reference.lower) <= min(bounds.upper, reference.upper)


def test_rtol_is_a_relative_accuracy_below_one():
    """Found by review: rtol 1e3 made the cut laws' mass share exceed 1 (remove_body refused it) and, before them,
    the search's tolerances exceed delta (a NaN period). rtol must lie in (0, 1); nothing is composed on failure."""
    for rtol in (1.0, 1e3, 0.0, -1e-6, float("nan")):
        with pytest.raises(ValueError, match="rtol"):
            FourierAccountant(rtol=rtol)
    loose = FourierAccountant(rtol=0.5).compose(PoissonSubsampled(GaussianMechanism(2.0), 1e-3), 2)
    bounds = loose.epsilon_bounds(1e-3)
    tight = _ledger(1e-3, 2.0, 2).epsilon_bounds(1e-3)
    assert bounds.lower <= tight.upper and tight.lower <= bounds.upper


def test_chernoff_target_is_below_delta_minus_the_mass_left_out():
    """Found by review: exp of the float log of delta can exceed delta by ~u |log delta|; the target must stay below
    delta - left_out after that (checked in 60-digit arithmetic)."""
    import mpmath as mp

    rng = np.random.default_rng(7)
    for exponent in rng.uniform(-290.0, -1.0, 300):
        delta = float(10.0 ** exponent)
        law = _Law(delta * 1e-3)
        target = search._chernoff_target(law, float(np.log(delta)))
        with mp.workdps(60):
            assert mp.e ** mp.mpf(target) <= mp.mpf(delta) - mp.mpf(law.left_out)


def test_the_chernoff_constant_is_accurate_at_large_dampings():
    """log(k^k / (1 + k)^(1 + k)) against mpmath: the textbook form lost ~1e-10 at k = 3e4 and ~1e-9 at 1e6."""
    import mpmath as mp

    kappa = np.array([1e-3, 0.5, 1.0, 64.0, 3e4, 1e5, 1e6, 1e7])
    values = fourier_inversion.log_chernoff_constant(kappa)
    with mp.workdps(50):
        for k, v in zip(kappa, values):
            k = mp.mpf(float(k))
            exact = k * mp.log(k) - (1 + k) * mp.log1p(k)
            assert abs(v - float(exact)) <= 1e-14 * max(1.0, abs(float(exact)))
