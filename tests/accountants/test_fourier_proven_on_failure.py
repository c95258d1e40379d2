"""A failed Fourier search keeps its proven bounds (issue 14, sigma 0.6 / q 1e-4 cells).

``AccuracyError`` / ``NumericalError`` of the searches carry ``proven``; ``FourierAccountant`` intersects them with
the privacy buckets' interval and narrows that interval by loose inversions inside it (``bounds_in_bracket``).

References (independent of the inversion): dp_accounting 0.6.0's PLD of the same ledger at
``value_discretization_interval = 1e-5``, pessimistic (connect-the-dots, an upper bound on epsilon) and optimistic
(privacy buckets rounding down, below the exact value), computed by

    from dp_accounting.pld import privacy_loss_distribution as pldm
    pldm.from_gaussian_mechanism(0.6, pessimistic_estimate=P, value_discretization_interval=1e-5,
                                 sampling_prob=1e-4).self_compose(steps).get_epsilon_for_delta(1e-5)

(20-30 s each, too slow to run here): the exact epsilon lies in ``[optimistic, pessimistic]``, so a proven
interval must meet it: its lower end at most the pessimistic value, its upper end at least the optimistic one.
"""

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import dpledger.accountants._fourier_search as search
from dpledger.accountants import AccuracyError, Bounds, FourierAccountant
from dpledger.accountants import fourier_accountant as fa_module
from dpledger.mechanisms import GaussianMechanism, PoissonSubsampled
from dpledger.mechanisms import subsampled_gaussian_cf as cf
from dpledger.mechanisms.errors import NumericalError
from dpledger.mechanisms.relations import Direction
from tests.accountants._plan_spy import record_plan_terms

DELTA = 1e-5
#: steps -> (optimistic, pessimistic) dp_accounting PLD epsilon at discretisation 1e-5 (module docstring).
PLD_FINE = {100: (0.038745610350427444, 0.039217069375703954), 10_000: (0.22768761872864526, 0.27478433178377537)}


def _ledger(steps):
    return FourierAccountant().compose(PoissonSubsampled(GaussianMechanism(0.6), 1e-4), steps)


def _whole_law(acc):
    """The ledger without cut laws (``FourierAccountant._remove_bodies`` finds none): the whole remove-direction law
    is inverted, whose search fails on these cells; the cut law answers them outright
    (:func:`test_the_cut_law_answers_these_cells_within_rtol`)."""
    acc._remove_bodies = lambda delta: None
    return acc


@pytest.fixture(scope="module")
def cell():
    """The 10^4-step cell with the whole law, whose search still fails rounding-dominated (at 100 steps the whole
    law now certifies too: the add direction reaches its saddle point, ``Mechanism.tilt_free_damping``)."""
    steps = 10_000
    acc = _whole_law(_ledger(steps))
    return steps, acc, acc.epsilon_bounds(DELTA), acc._buckets().epsilon_bounds(DELTA)


@pytest.mark.parametrize("steps", sorted(PLD_FINE))
def test_the_cut_law_answers_these_cells_within_rtol(steps, cell):
    """With the remove direction's upper tail cut (``Mechanism.remove_body``) the inversion meets rtol on both
    cells; its interval lies inside the buckets' and meets the combined interval of the whole law's failed search."""
    acc = _ledger(steps)
    bounds = acc.epsilon_bounds(DELTA)
    assert acc._derived["path"] == "inversion"
    assert bounds.upper - bounds.lower <= 1e-6 * bounds.upper
    optimistic, pessimistic = PLD_FINE[steps]
    assert bounds.lower <= pessimistic and bounds.upper >= optimistic
    if cell[0] == steps:
        _, _, combined, (b_lower, b_upper) = cell
        assert b_lower <= bounds.lower and bounds.upper <= b_upper
        assert max(bounds.lower, combined.lower) <= min(bounds.upper, combined.upper)


def test_the_combined_interval_is_strictly_narrower_than_the_buckets_and_meets_the_reference(cell):
    steps, acc, combined, (b_lower, b_upper) = cell
    optimistic, pessimistic = PLD_FINE[steps]
    assert b_lower <= combined.lower <= combined.estimate <= combined.upper <= b_upper
    assert combined.upper - combined.lower < 0.05 * (b_upper - b_lower)  # 10^4: [0, 0.2768] before; 100: 0.0032
    assert combined.lower <= pessimistic and combined.upper >= optimistic
    assert combined.upper <= pessimistic * (1 + 2e-4)  # as tight as the fine PLD, proven
    assert acc._derived["path"] == "buckets+inversion"
    report = acc.epsilon_report(DELTA)
    assert report.bound.value == "upper bound" and report.epsilon == combined.upper
    assert "privacy buckets" in report.method and "intersected with the proven bounds of Fourier inversion" in (
        report.method)


def test_the_error_of_the_long_ledger_carries_proven_bounds():
    # 10^4 steps: the remove direction's search ends rounding-dominated, its certified delta within ~1e-6 of
    # delta; the error keeps [lower, upper] instead of [0, upper].
    acc = _ledger(10_000)
    with pytest.raises(AccuracyError) as info:
        acc._inverted(search.max_epsilon_bounds, math.log(DELTA))
    proven = info.value.proven
    optimistic, pessimistic = PLD_FINE[10_000]
    assert isinstance(proven, Bounds) and 0.0 < proven.lower <= proven.estimate <= proven.upper
    assert proven.upper - proven.lower <= 1e-4 * proven.upper  # the failed direction's own lower bound
    assert optimistic <= proven.upper and proven.lower <= pessimistic
    assert "Proven nonetheless: epsilon in [" in "\n".join(info.value.__notes__)
    # each end checked by an evaluation independent of the search's plan: a fresh, finer inversion of the remove
    # direction (the deciding one) at each end
    (_, lm, sup), = [d for d in acc._directions() if d[0] is Direction.REMOVE]
    kappa = search.chernoff_log_delta(lambda k: lm(k.astype(np.complex128)), proven.upper, 64.0)[1]
    plan = search.make_plan(lm, sup, proven.lower, 1e-13, max_terms=1 << 20, kappa=kappa, max_damping=64.0)
    assert search.invert(plan, proven.lower)[0].estimate > DELTA
    assert search.invert(plan, proven.upper)[0].estimate <= DELTA * (1 + 1e-9)


def test_the_short_ledger_work_limit_error_carries_its_chernoff_bounds(monkeypatch):
    # 5 steps of the whole law by the whole quadrature (no soft split, subsampled_gaussian_cf "Soft split"): the
    # enclosure's work limit (the whole law of 10 steps certifies since its first plan's aliasing bound may take
    # more Chernoff exponents, fourier_inversion.with_more_tails)
    monkeypatch.setattr(cf, "_SOFT_MIN_FREQUENCY", math.inf)
    acc = _whole_law(_ledger(5))
    with pytest.raises(NumericalError) as info:
        acc._inverted(search.max_epsilon_bounds, math.log(DELTA))
    proven = info.value.proven
    assert proven is not None and proven.lower == 0.0 and proven.upper >= acc._buckets().epsilon_bounds(DELTA)[0]


def test_with_the_soft_split_the_short_whole_law_certifies_and_agrees_with_the_cut_law():
    # the same ledger: its high frequencies' quadrature is the lower part's, within the work limit
    whole = _whole_law(_ledger(5))._inverted(search.max_epsilon_bounds, math.log(DELTA))
    cut = _ledger(5).epsilon_bounds(DELTA)
    assert whole.upper - whole.lower <= 1e-6 * whole.upper
    assert max(whole.lower, cut.lower) <= min(whole.upper, cut.upper)


# ------------------------------------------------------------------ the combination, with stubbed sources
class _Stubbed(FourierAccountant):
    """The inversion fails with given proven bounds; the buckets answer with a given interval."""

    def __init__(self, proven, buckets, error=AccuracyError):
        super().__init__()
        self.compose(PoissonSubsampled(GaussianMechanism(0.6), 1e-4), 10)
        self._proven, self._given, self._error = proven, buckets, error

    def _fail(self):
        error = self._error("inversion failed")
        error.proven = self._proven
        raise error

    def _combine(self):
        return self._via_buckets(self._fail, lambda ledger: Bounds(self._given[0], self._given[1], self._given[1]))


@pytest.mark.parametrize("error", [AccuracyError, NumericalError])
def test_each_side_of_the_intersection_comes_from_the_tighter_source(error):
    # the inversion is tighter below, the buckets above: dropping either side would widen the result
    acc = _Stubbed(Bounds(0.30, 0.35, 0.40), (0.20, 0.38), error)
    assert tuple(acc._combine()) == (0.30, 0.38, 0.38)  # the estimate: the buckets' (their upper end)
    assert acc._derived["path"] == "buckets+inversion"
    acc = _Stubbed(Bounds(0.10, 0.40, 0.40), (0.20, 0.38), error)
    assert tuple(acc._combine()) == (0.20, 0.38, 0.38)
    assert acc._derived["path"] == "buckets"  # nothing gained from the inversion: the method says buckets only


def test_without_proven_bounds_the_buckets_answer_alone_and_disjoint_proofs_raise():
    assert tuple(_Stubbed(None, (0.2, 0.38))._combine()) == (0.2, 0.38, 0.38)
    with pytest.raises(NumericalError, match="do not meet"):
        _Stubbed(Bounds(0.5, 0.6, 0.6), (0.2, 0.38))._combine()


interval = st.tuples(st.floats(0.0, 10.0), st.floats(0.0, 10.0)).map(sorted)


@settings(max_examples=200, deadline=None)
@given(a=interval, b=interval, t=st.floats(0.0, 1.0))
def test_the_combined_interval_lies_inside_both(a, b, t):
    first = Bounds(a[0], a[0] + t * (a[1] - a[0]), a[1])
    second = Bounds(b[0], b[1], b[1])
    if max(a[0], b[0]) > min(a[1], b[1]):
        with pytest.raises(NumericalError):
            fa_module._intersect(first, second)
        return
    out = fa_module._intersect(first, second)
    for lo, hi in (a, b):
        assert lo <= out.lower <= out.estimate <= out.upper <= hi
    assert out.lower == max(a[0], b[0]) and out.upper == min(a[1], b[1])


# ------------------------------------------------------------------ the searches attach what they proved
SETTINGS = dict(rtol=1e-6, max_terms=1 << 10, max_damping=64.0)


def _directions():
    return [(d, (lambda s: np.zeros(np.shape(s), dtype=np.complex128)), None) for d in Direction]


def test_max_epsilon_bounds_attaches_the_maximum_of_the_directions(monkeypatch):
    results = {Direction.REMOVE: (Bounds(0.5, 0.6, 0.6), "remove failed"),
               Direction.ADD: (Bounds(0.1, 0.2, 0.3), None)}
    monkeypatch.setattr(search, "direction_epsilon_bounds", lambda lm, sup, x, d, **kw: results[d])
    with pytest.raises(AccuracyError, match="remove failed") as info:
        search.max_epsilon_bounds(_directions(), math.log(DELTA), **SETTINGS)
    assert tuple(info.value.proven) == (0.5, 0.6, 0.6)


def test_max_delta_bounds_attaches_the_maximum_of_the_directions(monkeypatch):
    results = {Direction.REMOVE: (Bounds(1e-6, 2e-6, 3e-6), "remove failed"),
               Direction.ADD: (Bounds(2e-6, 2e-6, 2e-6), None)}
    monkeypatch.setattr(search, "direction_delta_bounds", lambda lm, sup, x, d, **kw: results[d])
    with pytest.raises(AccuracyError, match="remove failed") as info:
        search.max_delta_bounds(_directions(), 1.0, **SETTINGS)
    assert tuple(info.value.proven) == (2e-6, 2e-6, 3e-6)


def test_a_work_limit_keeps_the_searched_directions_and_the_chernoff_bound_of_the_rest(monkeypatch):
    def fake(lm, sup, x, d, **kw):
        if d is Direction.ADD:
            raise NumericalError("work limit")
        return Bounds(0.5, 0.55, 0.6), None

    monkeypatch.setattr(search, "direction_epsilon_bounds", fake)
    monkeypatch.setattr(search, "coarse_chernoff_epsilon",
                        lambda lm, ld, cap: (0.9, None) if lm is directions[1][1] else (1.0, None))
    directions = _directions()
    with pytest.raises(NumericalError, match="work limit") as info:
        search.max_epsilon_bounds(directions, math.log(DELTA), **SETTINGS)
    lower, _, upper = info.value.proven
    assert lower == 0.5 and 0.9 < upper < 0.9 * (1 + 1e-8)  # the add direction's Chernoff epsilon, with slack


def test_the_failed_lower_is_where_the_certified_lower_delta_still_exceeds_delta():
    # log delta_d(eps) = -2 eps exactly, certified within +-1e-6 relative: the lower end a few widths below
    def log_excess(eps, field):
        value = math.exp(-2.0 * eps) * (1 - 1e-6 if field == "lower" else 1 + 1e-6)
        return math.log(value) - math.log(DELTA)

    exact = -math.log(DELTA) / 2.0
    upper = exact + 1e-6
    at_upper = Bounds(math.exp(-2 * upper) * (1 - 1e-6), 0.0, math.exp(-2 * upper) * (1 + 1e-6))
    lower = search._failed_lower(log_excess, upper, at_upper, DELTA, 2.0)
    assert 0.0 < lower < exact and exact - lower < 1e-5 and log_excess(lower, "lower") > 0
    assert search._failed_lower(lambda e, f: -1.0, upper, at_upper, DELTA, 2.0) == 0.0  # none found: 0


def test_delta_of_the_long_ledger_joins_the_buckets_with_the_failed_search():
    # at the fine PLD's (pessimistic) epsilon the exact delta is at most DELTA: the proven lower end must be too.
    # On whole laws the search fails and its proven interval is joined with the buckets'; on cut laws (what a delta
    # query tries first) it meets rtol inside that interval.
    acc = _whole_law(_ledger(10_000))
    eps = PLD_FINE[10_000][1]
    combined = acc.delta_bounds(eps)
    b_lower, b_upper = acc._buckets().delta_bounds(eps)
    assert b_lower <= combined.lower <= combined.estimate <= combined.upper <= b_upper
    assert combined.upper - combined.lower < 0.01 * (b_upper - b_lower)  # buckets alone: [0, 1.02e-5] at 0.2748
    assert combined.lower <= DELTA and acc._derived["path"] == "buckets+inversion"
    cut = _ledger(10_000)
    tight = cut.delta_bounds(eps)
    assert cut._derived["path"] == "inversion" and tight.upper - tight.lower <= 1e-6 * tight.upper
    assert max(tight.lower, combined.lower) <= min(tight.upper, combined.upper) and tight.lower <= DELTA


def test_a_search_short_of_nodes_stops_and_the_buckets_answer_within_the_exact_profile(monkeypatch):
    """sigma 0.6, q 1e-4, 2 runs: the characteristic function barely decays, so every plan of the epsilon searches
    has the most nodes allowed (2^20) and still misses rtol. After the shortened first plan and the one made at its
    certified upper epsilon, the search stops (``ShortOfNodes``: more plans can only repeat them) and no search is
    repeated at the larger damping cap: 4 plans of 2^20 nodes in all (2 for the search, 2 narrowing the buckets'
    interval), where 17 were made (18 s). The interval stays proven: the exact two-run profile (mpmath) is at most
    delta at its upper end and above it at its lower end."""
    from tests.oracles import privacy_profiles as pp

    monkeypatch.setattr(FourierAccountant, "_few_runs", lambda self: None)  # the inversion's path
    made = record_plan_terms(monkeypatch, search)
    acc = FourierAccountant().compose(PoissonSubsampled(GaussianMechanism(0.6), 1e-4), 2)
    b = acc.epsilon_bounds(DELTA)
    assert sum(terms >= 1 << 20 for terms in made) <= 4, made
    assert acc._derived["path"] in ("buckets", "buckets+inversion")
    assert pp.subsampled_gaussian_profile(b.upper, 1e-4, 0.6, 2, dps=20) <= DELTA
    assert pp.subsampled_gaussian_profile(b.lower, 1e-4, 0.6, 2, dps=20) > DELTA


def test_short_of_nodes_marks_the_error_and_the_accountant_does_not_retry_at_the_larger_cap(monkeypatch):
    """The flags that spare the retry: a failure made only of ``ShortOfNodes`` directions sets
    ``AccuracyError.short_of_nodes`` and ``below_cap``; one made of ``BelowCap`` directions (every plan below the cap)
    ``below_cap`` only; any other failure message neither; and ``FourierAccountant._inverted`` then re-raises at once
    (one search, not two), and searches again at the larger cap otherwise."""
    failed = Bounds(0.001, 0.002, 0.002)
    monkeypatch.setattr(search, "coarse_chernoff_epsilon", lambda *a, **k: (1.0, 1.0))
    cases = ((search.ShortOfNodes("short"), True, True), (search.BelowCap("rounding"), False, True),
             ("rounding", False, False))
    for failure, short, below in cases:
        monkeypatch.setattr(search, "direction_epsilon_bounds", lambda *a, f=failure, **k: (failed, f))
        with pytest.raises(AccuracyError) as info:
            search.max_epsilon_bounds([(Direction.REMOVE, None, None)], math.log(DELTA), rtol=1e-6, max_terms=64,
                                      max_damping=64.0)
        assert info.value.short_of_nodes is short and info.value.below_cap is below and info.value.proven == failed
    acc = _ledger(10)
    for flag, searches in (("short_of_nodes", 1), ("below_cap", 1), (None, 2)):
        calls = []

        def failing(directions, *args, flag=flag, **settings):
            calls.append(settings["max_damping"])
            error = AccuracyError("failed")
            if flag:
                setattr(error, flag, True)
            raise error

        with pytest.raises(AccuracyError):
            acc._inverted(failing, math.log(DELTA))
        assert calls == [acc._settings()["max_damping"], fa_module.MAX_DAMPING_ENCLOSED][:searches]


def test_a_many_run_narrow_search_missing_rtol_below_its_cap_is_not_repeated_at_the_larger_cap(monkeypatch):
    """sigma 0.53, q 1.3e-5, 4,131 runs: the remove direction's plans take damping ~7 (its Chernoff optimum, below the
    cap of 64) and miss rtol by the enclosures' float error; the failure is ``BelowCap`` and the accountant does not
    repeat the same plans at the larger cap. The interval it reports is proven and meets the failure's."""
    acc = FourierAccountant().compose(PoissonSubsampled(GaussianMechanism(sigma=0.53), 1.3e-5), count=4131)
    with pytest.raises(AccuracyError) as info:
        search.max_epsilon_bounds(acc._directions(DELTA), math.log(DELTA), mirrored=True, **acc._settings())
    assert info.value.below_cap and not info.value.short_of_nodes
    caps = []
    original = search.max_epsilon_bounds
    monkeypatch.setattr(fa_module, "max_epsilon_bounds",
                        lambda *a, **k: caps.append(k["max_damping"]) or original(*a, **k))
    b = acc.epsilon_bounds(DELTA)
    assert caps == [acc._settings()["max_damping"]]
    assert max(b.lower, info.value.proven.lower) <= min(b.upper, info.value.proven.upper)


def test_many_run_narrow_searches_stop_where_the_node_enclosures_floor_them(monkeypatch):
    """sigma 0.524, q 1.76e-6, 40,668 runs: the epsilon search misses rtol by the nodes' enclosure errors alone, which
    no tighter tolerance shrinks. It stops after its three plans (the bracket's, and two at its upper end) instead of
    tightening the tolerance twice more; the loose inversions inside the proven interval stop after the round whose
    plans those errors floor (one round, not two). The interval is proven and as narrow as before (8.6e-6
    relative)."""
    made = []
    original_plan = search.make_plan

    def plan_spy(*args, **kwargs):
        made.append("search" if "shorten" in kwargs else "other")
        return original_plan(*args, **kwargs)

    monkeypatch.setattr(search, "make_plan", plan_spy)
    rounds = []
    original_round = search._bounds_in_bracket
    monkeypatch.setattr(search, "_bounds_in_bracket", lambda *a, **k: rounds.append(a[2:4]) or original_round(*a, **k))
    b = FourierAccountant().compose(PoissonSubsampled(GaussianMechanism(sigma=0.524), 1.76e-6), count=40668) \
        .epsilon_bounds(DELTA)
    assert made.count("search") == 3 and len(rounds) == 1
    assert b.lower <= b.upper and (b.upper - b.lower) / b.upper <= 1e-5


@pytest.mark.parametrize("shrink, floor, rounds", [(0.1, 0.0, 3), (0.7, 0.0, 1), (0.1, 1.0, 1), (0.4, 0.0, 3)])
def test_loose_inversions_go_round_again_only_while_a_round_halves_the_interval_unfloored(monkeypatch, shrink, floor,
                                                                                       rounds):
    """``bounds_in_bracket`` repeats its round (at most ``_BRACKET_ROUNDS``) while the last one at least halved the
    interval and its plans' enclosure errors (``floor``, relative to delta) leave the next tolerance room; every
    round's interval is kept."""
    calls = []

    def one_round(directions, log_delta, lo, hi, **kwargs):
        calls.append((lo, hi))
        return hi - shrink * (hi - lo), hi, [(floor * math.exp(log_delta), 10.0)]

    monkeypatch.setattr(search, "_bounds_in_bracket", one_round)
    lo, hi = search.bounds_in_bracket([], math.log(DELTA), 1.0, 2.0, max_terms=64, max_damping=64.0)
    assert len(calls) == rounds and hi == 2.0 and lo == pytest.approx(2.0 - shrink**rounds)


def test_a_delta_query_short_of_nodes_stops_and_contains_the_exact_profile(monkeypatch):
    """The delta query of the same two-run ledger: a direction's plan with every node allowed and short of its
    tolerance is not followed by one at a tighter tolerance (whose longer period would only truncate more), and each
    direction short of nodes (or past its truncation limit) below the damping cap is a ``ShortOfNodes`` failure, so
    the accountant tries no smaller cut and no larger cap: 2 plans of 2^20 nodes, where 8 were made (6.9 s ->
    2.9 s). The interval contains the exact profile (mpmath)."""
    from tests.oracles import privacy_profiles as pp

    made = record_plan_terms(monkeypatch, search)
    epsilon = 0.0030509290493241333
    b = FourierAccountant().compose(PoissonSubsampled(GaussianMechanism(0.6), 1e-4), 2).delta_bounds(epsilon)
    assert sum(terms >= 1 << 20 for terms in made) <= 2, made
    exact = pp.subsampled_gaussian_profile(epsilon, 1e-4, 0.6, 2, dps=20)
    assert b.lower <= exact <= b.upper, (b, exact)
