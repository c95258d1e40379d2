"""Two-run ledgers of Poisson-subsampled Gaussians (accountants/two_runs.py): the few-run corner answered by the exact
second run, its interval checked against the count-2 mpmath oracle at both ends."""

import pytest

from dpledger.accountants import FourierAccountant
from dpledger.accountants.report import BoundKind
from dpledger.accountants.two_runs import NARROW, TwoRunLedger, narrowness
from dpledger.mechanisms import GaussianMechanism, LaplaceMechanism, PoissonSubsampled
from dpledger.mechanisms import subsampled_gaussian_two_runs as two
from tests.oracles.privacy_profiles import subsampled_gaussian_profile


@pytest.fixture(autouse=True)
def _the_two_run_path(monkeypatch):
    """These tests are of the two-run path: the routing that now sends most narrow two-run ledgers to the window
    (accountants.windowed_buckets.faster_than_inversion; tests/accountants/test_windowed_buckets.py) is switched off,
    as for the ledgers whose loss is too narrow for the window (sigma 0.5, q 1e-5)."""
    monkeypatch.setattr("dpledger.accountants.fourier_accountant.faster_than_inversion", lambda runs, rtol: False)


def _ledger(sigma, q, count=2):
    acc = FourierAccountant()
    acc.compose(PoissonSubsampled(GaussianMechanism(sigma=sigma), q), count)
    return acc


def _count_evaluations(monkeypatch):
    calls = []
    original = two.TwoSubsampledGaussians._direction
    monkeypatch.setattr(two.TwoSubsampledGaussians, "_direction",
                        lambda self, *args, **kw: calls.append(1) or original(self, *args, **kw))
    return calls


@pytest.mark.parametrize("sigma, q", [(0.6, 1e-4)])  # sigma 0.5, q 3e-4 below, against PLD
def test_the_few_run_corner_is_answered_within_rtol_and_contains_the_exact_epsilon(sigma, q, monkeypatch):
    """Two runs of little noise and a small q (the Fourier inversion ran short of nodes there and the privacy buckets
    left a 1e-3 wide interval after 2-5 s): now the exact epsilon lies in an interval within rtol, the upper end's
    delta at most 1e-5 and the lower end's above it by the count-2 oracle."""
    calls = _count_evaluations(monkeypatch)
    acc = _ledger(sigma, q)
    b = acc.epsilon_bounds(1e-5)
    assert b.upper - b.lower <= 1e-6 * b.upper
    assert subsampled_gaussian_profile(b.upper, q, sigma, 2) <= 1e-5 < subsampled_gaussian_profile(b.lower, q, sigma, 2)
    assert len(calls) <= 80  # both directions per evaluation: about 20 evaluations, on grids of a few thousand cells
    report = acc.epsilon_report(1e-5)
    assert report.bound is BoundKind.UPPER and report.epsilon == b.upper
    assert "two runs of Poisson-subsampled Gaussians" in report.method and "interval" in report.method
    assert acc._derived.get("path") is None  # neither the inversion nor the buckets were run


def test_the_upper_end_is_below_dp_accountings_pessimistic_pld_where_the_buckets_were_above():
    """sigma 0.5, q 3e-4, 2 runs: the privacy buckets' upper epsilon was 0.076612795, 2.8e-6 relative above
    dp_accounting's pessimistic PLD (0.07661258, benchmarks/RESULTS.md "Fourier: few runs"); the exact value is
    0.0766125...: now within 1e-6 of it, below the PLD's."""
    b = _ledger(0.5, 3e-4).epsilon_bounds(1e-5)
    assert b.upper < 0.07661258
    assert b.lower > 0.0766125


def test_the_delta_query_contains_the_oracle():
    acc = _ledger(0.6, 1e-4)
    epsilon = acc.epsilon_bounds(1e-5).upper
    d = acc.delta_bounds(epsilon)
    assert acc.delta_bounds(epsilon) == d and acc.epsilon_bounds(1e-5).upper == epsilon  # the same answer again
    exact = subsampled_gaussian_profile(epsilon, 1e-4, 0.6, 2)
    assert d.lower <= exact <= d.upper <= 1e-5
    assert d.upper - d.lower <= 1e-6 * d.upper
    for e in (0.05,):
        d = acc.delta_bounds(e)
        exact = subsampled_gaussian_profile(e, 1e-4, 0.6, 2)
        assert d.lower <= exact <= d.upper and d.upper - d.lower <= 1e-6 * d.upper + 1e-300


def test_the_narrowness_threshold_separates_the_measured_cells():
    """The two-run path where it was measured faster than inversion, inversion where that was faster (two runs at
    delta 1e-5; accountants.two_runs.narrowness)."""
    faster_two = [(0.5, 1e-2), (0.6, 1e-3), (0.6, 1e-4), (1.0, 1e-3), (1.0, 1e-4)]
    faster_inverted = [(1.0, 1e-2), (0.5, 0.1), (2.0, 1e-4), (5.0, 1e-4), (0.6, 0.1)]
    assert all(narrowness(1 / sigma, q) >= NARROW for sigma, q in faster_two)
    assert all(narrowness(1 / sigma, q) < NARROW for sigma, q in faster_inverted)


def test_two_different_subsampled_gaussians_take_the_same_path():
    acc = FourierAccountant()
    acc.compose(PoissonSubsampled(GaussianMechanism(sigma=0.6), 1e-4))
    acc.compose(PoissonSubsampled(GaussianMechanism(sigma=2.0, sensitivity=2.0), 0.01))
    assert acc._few_runs() is not None
    b = acc.epsilon_bounds(1e-5)
    # the same ledger the other way round: the first run is the one cut into cells, the answer is the same
    other = FourierAccountant()
    other.compose(PoissonSubsampled(GaussianMechanism(sigma=2.0, sensitivity=2.0), 0.01))
    other.compose(PoissonSubsampled(GaussianMechanism(sigma=0.6), 1e-4))
    c = other.epsilon_bounds(1e-5)
    assert max(b.lower, c.lower) <= min(b.upper, c.upper)
    assert b.upper - b.lower <= 1e-6 * b.upper


@pytest.mark.parametrize("ledger", [  # three runs: tests/accountants/test_windowed_buckets.py
    [(PoissonSubsampled(GaussianMechanism(sigma=0.6), 1e-4), 1), (GaussianMechanism(sigma=3.0), 1)],
    [(PoissonSubsampled(GaussianMechanism(sigma=0.6), 1e-4), 1), (PoissonSubsampled(LaplaceMechanism(1.0), 0.1), 1)],
    [(PoissonSubsampled(GaussianMechanism(sigma=0.04), 0.1), 2)],  # noise multiplier below 0.05
    [(PoissonSubsampled(GaussianMechanism(sigma=1.0), 0.01), 2)],  # wide enough that inversion is faster (94)
    [(PoissonSubsampled(GaussianMechanism(sigma=2.0), 0.1), 2)],
])
def test_other_ledgers_do_not_take_a_few_run_path(ledger):
    acc = FourierAccountant()
    for mechanism, count in ledger:
        acc.compose(mechanism, count)
    assert acc._few_runs() is None




@pytest.mark.parametrize("query", ["epsilon", "delta"])
def test_a_two_run_interval_wider_than_rtol_is_intersected_with_the_other_paths(query, monkeypatch):
    """Where the two-run interval misses rtol (a delta near the float64 floor, where its cells' masses stop at
    1e-300), the inversion and the buckets answer too and the intersection of the proven intervals is reported."""
    acc = _ledger(1.0, 1e-3)  # narrow enough for the two-run path (narrowness 166), inverted in 0.2 s
    reference = _ledger(1.0, 1e-3)
    monkeypatch.setattr(reference, "_few_runs", lambda: None)
    if query == "epsilon":
        monkeypatch.setattr(TwoRunLedger, "epsilon_bounds", lambda self, delta, rtol: (1e-3, 10.0))
        got, other = acc.epsilon_bounds(1e-5), reference.epsilon_bounds(1e-5)
        assert got.lower == max(1e-3, other.lower) and got.upper == other.upper < 10.0
    else:
        monkeypatch.setattr(TwoRunLedger, "delta_bounds", lambda self, epsilon, rtol: (1e-9, 0.5))
        got, other = acc.delta_bounds(0.01), reference.delta_bounds(0.01)
        assert got.lower == max(1e-9, other.lower) and got.upper == other.upper < 0.5
    assert acc._few_runs() is not None  # the ledger's two-run path is kept for the next query
    assert "intersected with the proven interval of the other paths" in acc._method()  # the report says so
    monkeypatch.undo()
    acc.epsilon_bounds(1e-5)  # the next query, within rtol, does not
    assert "intersected" not in acc._method() and "two runs" in acc._method()


def test_where_the_other_paths_fail_the_wide_two_run_interval_is_reported(monkeypatch):
    from dpledger.accountants import AccuracyError

    def fail(self, *args, **kwargs):
        raise AccuracyError("no answer")

    acc = _ledger(1.0, 1e-3)
    monkeypatch.setattr(TwoRunLedger, "epsilon_bounds", lambda self, delta, rtol: (1e-3, 10.0))
    monkeypatch.setattr(TwoRunLedger, "delta_bounds", lambda self, epsilon, rtol: (1e-9, 0.5))
    monkeypatch.setattr(FourierAccountant, "_via_buckets", fail)
    b = acc.epsilon_bounds(1e-5)
    assert (b.lower, b.upper) == (1e-3, 10.0)
    d = acc.delta_bounds(0.01)
    assert (d.lower, d.upper) == (1e-9, 0.5)
