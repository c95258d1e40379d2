"""FourierAccountant: a direction that cannot decide the add-or-remove maximum must not make a query fail.

Add-or-remove-one delta is the larger of the remove and add deltas (thesis Thm 3.3.5), and epsilon the larger of
the two epsilons. For a DP-SGD-like ledger (Poisson-subsampled Gaussian, sigma 1, q 0.01, 100 steps) the add
direction's delta at epsilon 1 is about 1e-37 (its loss is at most 100 log(1 / (1 - q)) = 1.005), which float64
rounding keeps from any relative accuracy, while the remove direction's is 6.7e-7: ``delta_bounds(1.0)`` used to
raise AccuracyError. References computed here with the installed peers: prv_accountant (Gopi, Lee & Wutschitz
2021; its (lower, upper) interval for eps_error 1e-3, delta_error 1e-12) and dp_accounting's PLD (connect-the-
dots pessimistic estimate, an upper bound; its discretisation excess is about 7e-6 relative at interval 1e-4 and
7e-4 at 1e-3, quadratic in the interval, so 1e-4 is allowed), and RDPAccountant as a (looser) upper limit.
"""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import dpledger.accountants._fourier_search as search
from dpledger.accountants import AccuracyError, Bounds, FourierAccountant, RDPAccountant
from dpledger.mechanisms import GaussianMechanism, PoissonSubsampled
from dpledger.mechanisms.relations import Direction

SIGMA, Q, STEPS = 1.0, 0.01, 100
DP_SGD = PoissonSubsampled(mechanism=GaussianMechanism(sigma=SIGMA), sampling_probability=Q)


@pytest.fixture(scope="module")
def ledger():
    return FourierAccountant().compose(DP_SGD, count=STEPS)


@pytest.fixture(scope="module")
def prv():
    """prv_accountant's (lower, estimate, upper) of delta(1.0) and epsilon(1e-5) for the same ledger."""
    prv_accountant = pytest.importorskip("prv_accountant")
    mechanism = prv_accountant.PoissonSubsampledGaussianMechanism(noise_multiplier=SIGMA, sampling_probability=Q)
    acc = prv_accountant.PRVAccountant(prvs=mechanism, max_self_compositions=STEPS, eps_error=1e-3,
                                       delta_error=1e-12)
    return acc.compute_delta(1.0, [STEPS]), acc.compute_epsilon(1e-5, [STEPS])


@pytest.fixture(scope="module")
def pld():
    """dp_accounting's pessimistic PLD (interval 1e-4): (delta(1.0), epsilon(1e-5)), both upper bounds."""
    pytest.importorskip("dp_accounting")
    from dp_accounting.pld import privacy_loss_distribution

    composed = privacy_loss_distribution.from_gaussian_mechanism(
        SIGMA, value_discretization_interval=1e-4, sampling_prob=Q).self_compose(STEPS)
    return composed.get_delta_for_epsilon(1.0), composed.get_epsilon_for_delta(1e-5)


def test_the_dominant_direction_alone_decides_delta(ledger):
    b = ledger.delta_bounds(1.0)  # used to raise AccuracyError from the add direction
    assert 0.0 < b.lower <= b.estimate <= b.upper and b.upper - b.lower <= 1e-6 * b.estimate
    # The interval is exactly the remove direction's (the add direction's upper bound is below its lower one).
    remove, failure = search.direction_delta_bounds(
        ledger._direction_log_mgf(Direction.REMOVE), ledger._log_mgf_sup(Direction.REMOVE), 1.0, Direction.REMOVE,
        **ledger._settings())
    assert failure is None and b == remove
    add, failure = search.direction_delta_bounds(
        ledger._direction_log_mgf(Direction.ADD), ledger._log_mgf_sup(Direction.ADD), 1.0, Direction.ADD,
        floor=b.lower, **ledger._settings())
    assert failure is None and add.upper <= b.lower


def test_delta_brackets_independent_references(ledger, prv, pld):
    b = ledger.delta_bounds(1.0)
    prv_lower, _, prv_upper = prv[0]
    assert prv_lower <= b.lower and b.upper <= prv_upper  # ours is ~1e4 times narrower than prv's interval
    assert b.lower <= pld[0] <= b.upper * (1.0 + 1e-4)  # pessimistic PLD: an upper bound, discretisation 1e-4
    assert b.upper <= RDPAccountant().compose(DP_SGD, count=STEPS).get_delta(1.0)


def test_epsilon_brackets_independent_references(ledger, prv, pld):
    b = ledger.epsilon_bounds(1e-5)
    prv_lower, _, prv_upper = prv[1]
    assert 0.0 < b.lower <= b.estimate <= b.upper
    assert prv_lower <= b.lower and b.upper <= prv_upper
    assert b.lower <= pld[1] <= b.upper * (1.0 + 1e-4)
    assert b.upper <= RDPAccountant().compose(DP_SGD, count=STEPS).get_epsilon(1e-5)
    # Round trip through the certified delta curves: delta(eps) <= 1e-5 at the upper epsilon, >= below it.
    assert ledger.delta_bounds(b.upper).lower <= 1e-5 <= ledger.delta_bounds(b.lower).upper


def test_tradeoff_curve_works_and_beats_the_rdp_curve(ledger):
    alphas = np.linspace(0.0, 1.0, 11)
    epsilons = np.linspace(0.0, 3.0, 7)  # the default grid (201 epsilons to 20) is correct but slow for a test
    beta = ledger.tradeoff_curve(alphas, epsilons)
    assert np.all(np.isfinite(beta)) and np.all(np.diff(beta) <= 0.0)
    assert np.all(beta <= 1.0 - alphas + 1e-12)  # no test has power above 1 - alpha
    rdp = RDPAccountant().compose(DP_SGD, count=STEPS)
    d = np.array([rdp.get_delta(e) for e in epsilons])[:, None]
    e = epsilons[:, None]
    rdp_beta = np.maximum(np.maximum(0.0, 1.0 - d - np.exp(e) * alphas), np.exp(-e) * (1.0 - d - alphas)).max(0)
    assert np.all(beta >= rdp_beta) and beta[5] > rdp_beta[5]


@settings(max_examples=8, deadline=None)
@given(
    sigma=st.floats(0.8, 3.0),
    q=st.floats(1e-3, 0.1),
    steps=st.integers(1, 300),
    log10_delta=st.floats(-10.0, -3.0),
)
def test_bounds_are_ordered_and_finite_over_dp_sgd_ledgers(sigma, q, steps, log10_delta):
    # The cost of inverting grows like 1 / (q sqrt(steps)) nodes (a composed loss concentrated near 0): below
    # q sqrt(steps) ~ 0.05 a query takes tens of seconds, and at q = 1e-3, steps = 1 the accountant refuses
    # (NumericalError, work limit). Those ledgers are moved to where the test stays fast.
    steps = max(steps, int(np.ceil((0.08 / max(q, 0.08 / np.sqrt(300))) ** 2)))
    q = max(q, 0.08 / np.sqrt(steps))
    delta = 10.0**log10_delta
    mechanism = PoissonSubsampled(mechanism=GaussianMechanism(sigma=sigma), sampling_probability=q)
    fa = FourierAccountant().compose(mechanism, count=steps)
    rdp = RDPAccountant().compose(mechanism, count=steps)
    eps = fa.epsilon_bounds(delta)
    assert np.isfinite(eps.upper) and 0.0 <= eps.lower <= eps.estimate <= eps.upper
    assert eps.upper <= rdp.get_epsilon(delta)
    at = fa.delta_bounds(eps.upper)
    assert np.isfinite(at.upper) and 0.0 <= at.lower <= at.estimate <= at.upper
    assert at.lower <= delta  # delta(eps) <= delta at any epsilon above epsilon(delta)
    assert at.upper <= rdp.get_delta(eps.upper)


# ------------------------------------------------------------------ the combination rule, per direction stubbed
def _stub(monkeypatch, name, results, chernoff):
    """Replace the per-direction search ``name`` by one returning ``results[direction]``; the directions'
    Chernoff values are set by ``chernoff`` (constant log MGFs). Returns the directions and the floors seen."""
    floors = {}

    def fake(lm, sup, x, direction, *, floor=0.0, **kwargs):
        floors[direction] = floor
        return results[direction]

    monkeypatch.setattr(search, name, fake)
    directions = [(d, (lambda s, c=chernoff[d]: np.full(np.shape(s), c, dtype=np.complex128)), None)
                  for d in Direction]
    return directions, floors


SETTINGS = dict(rtol=1e-6, max_terms=1 << 10, max_damping=64.0)
R, A = Direction.REMOVE, Direction.ADD


def test_a_dominated_direction_that_failed_is_ignored_and_sees_the_floor(monkeypatch):
    deciding = Bounds(1e-6, 1e-6, 1e-6 * (1 + 5e-7))
    directions, floors = _stub(monkeypatch, "direction_delta_bounds",
                               {R: (deciding, None), A: (Bounds(0.0, 0.0, 1e-30), "add failed")},
                               {R: 0.0, A: -50.0})
    assert search.max_delta_bounds(directions, 1.0, **SETTINGS) == deciding
    assert floors == {R: 0.0, A: deciding.lower}


def test_the_direction_with_the_larger_chernoff_bound_is_searched_first(monkeypatch):
    deciding = Bounds(1e-6, 1e-6, 1e-6)
    directions, floors = _stub(monkeypatch, "direction_delta_bounds",
                               {R: (Bounds(0.0, 0.0, 1e-30), None), A: (deciding, None)}, {R: -50.0, A: 0.0})
    assert search.max_delta_bounds(directions, 1.0, **SETTINGS) == deciding
    assert floors == {A: 0.0, R: deciding.lower}


def test_a_failure_that_could_decide_delta_raises(monkeypatch):
    directions, _ = _stub(monkeypatch, "direction_delta_bounds",
                          {R: (Bounds(0.0, 5e-7, 1e-6), "remove failed"), A: (Bounds(1e-9, 1e-9, 1e-9), None)},
                          {R: 0.0, A: -50.0})
    with pytest.raises(AccuracyError, match="remove failed"):
        search.max_delta_bounds(directions, 1.0, **SETTINGS)


def test_a_failed_direction_inside_the_reported_interval_is_harmless(monkeypatch):
    # Overlapping but not dominated: the reported [max lower, max upper] is still within rtol.
    deciding = Bounds(1e-6, 1e-6, 1e-6 * (1 + 5e-7))
    directions, _ = _stub(monkeypatch, "direction_delta_bounds",
                          {R: (deciding, None), A: (Bounds(0.0, 1e-6, 1e-6 * (1 + 2e-7)), "add failed")},
                          {R: 0.0, A: -50.0})
    assert search.max_delta_bounds(directions, 1.0, **SETTINGS) == deciding


@pytest.mark.parametrize("add_upper,raises", [(0.5, False), (0.7 + 1e-9, False), (0.8, True)])
def test_epsilon_raises_only_if_a_failed_direction_exceeds_every_certified_upper_bound(
        monkeypatch, add_upper, raises):
    deciding = Bounds(0.7, 0.7, 0.7 + 1e-9)
    directions, _ = _stub(monkeypatch, "direction_epsilon_bounds",
                          {R: (deciding, None), A: (Bounds(0.0, add_upper, add_upper), "add failed")},
                          {R: 0.0, A: -50.0})
    if raises:
        with pytest.raises(AccuracyError, match="add failed"):
            search.max_epsilon_bounds(directions, np.log(1e-5), **SETTINGS)
    else:
        b = search.max_epsilon_bounds(directions, np.log(1e-5), **SETTINGS)
        assert (b.lower, b.upper) == (deciding.lower, deciding.upper) and b.lower <= b.estimate <= b.upper


# ------------------------------------------------------------------ genuinely uncertifiable
def test_the_deciding_direction_still_raises_when_it_cannot_be_certified():
    # 64 nodes cannot bring the remove direction's truncation error to rtol 1e-6; that direction decides. (With
    # the Gaussian's loss buckets the ledger is answered by the privacy buckets instead: withdrawn here.)
    class Unbucketed(GaussianMechanism):
        has_subsampled_loss_buckets = False

    fa = FourierAccountant(max_terms=64).compose(PoissonSubsampled(Unbucketed(sigma=SIGMA), Q), count=STEPS)
    with pytest.raises(AccuracyError, match=r"delta\(1.0\) to rtol=1e-06 \(remove one record\).*max_terms=64"):
        fa.delta_bounds(1.0)
    with pytest.raises(AccuracyError, match=r"epsilon at delta=.*\(remove one record\).*max_terms=64"):
        fa.epsilon_bounds(1e-5)
    answered = FourierAccountant(max_terms=64).compose(DP_SGD, count=STEPS)
    exact = FourierAccountant().compose(DP_SGD, count=STEPS).epsilon_bounds(1e-5)
    report = answered.epsilon_report(1e-5)
    assert "privacy buckets" in report.method and exact.lower <= report.epsilon <= exact.upper * (1 + 1e-3)


# ------------------------------------------------------------------ the coarse Chernoff probe
@settings(max_examples=10, deadline=None)
@given(sigma=st.floats(0.7, 4.0), q=st.floats(1e-3, 0.3), steps=st.integers(1, 2000),
       log10_delta=st.floats(-12.0, -2.0))
def test_the_chernoff_search_from_the_coarse_probe_is_never_worse_than_the_probe(sigma, q, steps, log10_delta):
    # it starts from the probe's nine values (the grid points it shares with them are not evaluated again), so its
    # epsilon is at most the probe's
    fa = FourierAccountant().compose(PoissonSubsampled(GaussianMechanism(sigma=sigma), sampling_probability=q),
                                     count=steps)
    log_delta = np.log(10.0**log10_delta)
    for _, lm, _ in fa._directions():
        coarse, values = search.coarse_chernoff_epsilon(lm, log_delta, 64.0)
        assert values.shape == (9,) and coarse == max(float(np.nanmin(values)), 0.0)
        full, kappa = search.chernoff_epsilon(lm, log_delta, 64.0, values)
        assert full <= coarse and 0.0 < kappa <= 64.0


def test_a_direction_below_the_floor_by_its_coarse_probe_gets_no_full_chernoff_search(monkeypatch, ledger):
    searched = []
    full = search.chernoff_epsilon

    def counting(lm, log_delta, cap, coarse_values=None):
        searched.append(coarse_values is not None)
        return full(lm, log_delta, cap, coarse_values)

    monkeypatch.setattr(search, "chernoff_epsilon", counting)
    b = FourierAccountant().compose(DP_SGD, count=STEPS).epsilon_bounds(1e-5)
    assert searched == [True]  # the remove direction only, started from its probe; the add one stopped at its probe
    reference = FourierAccountant().compose(DP_SGD, count=STEPS)
    monkeypatch.setattr(search, "coarse_chernoff_epsilon", lambda lm, log_delta, cap: (np.inf, None))
    monkeypatch.setattr(search, "_mirror_below", lambda *a, **k: False)  # nor the mirror check
    assert reference.epsilon_bounds(1e-5) == b  # the same answer without the probe (both directions searched)
    assert searched[1:] == [False, False]


def test_the_cheap_inversion_at_the_floor_certifies_only_what_holds():
    # q = 1e-4, sigma = 2, 10 steps: the add direction's Chernoff epsilon (0.099) is far above the remove
    # direction's epsilon (0.000228), which one loose inversion at that floor shows to bound the add one
    fa = FourierAccountant().compose(PoissonSubsampled(GaussianMechanism(sigma=2.0), sampling_probability=1e-4), 10)
    (_, remove, remove_sup), (_, add, add_sup) = fa._directions()
    settings_ = dict(max_terms=1 << 20, max_damping=64.0)
    own, failure = search.direction_epsilon_bounds(add, add_sup, np.log(1e-5), A, rtol=1e-6, **settings_)
    assert failure is None and own.upper < 2.2e-4  # the add direction's own certified epsilon
    assert search._below_at(add, add_sup, 2.2e-4, 1e-5, 64.0, **settings_)
    assert not search._below_at(add, add_sup, own.lower * 0.99, 1e-5, 64.0, **settings_)
    b, failure = search.direction_epsilon_bounds(add, add_sup, np.log(1e-5), A, rtol=1e-6, floor=2.2e-4, **settings_)
    assert failure is None and b == Bounds(0.0, 0.0, 2.2e-4)
