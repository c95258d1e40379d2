"""Where the privacy buckets answer without reaching rtol, FourierAccountant lowers the upper end to RDPAccountant's
on the same ledger when that proven bound is smaller (red5 finding 4: a negligible delta was reported as [0, 9.6e-10]
where RDP proves 1e-323)."""

import math

from dpledger.accountants import FourierAccountant, RDPAccountant
from dpledger.mechanisms import (
    GaussianMechanism,
    LaplaceMechanism,
    PoissonSubsampled,
    RandomizedResponse,
)
from tests.oracles import privacy_profiles as profiles


def _both(entries):
    fourier, rdp = FourierAccountant(), RDPAccountant()
    for mechanism, count in entries:
        fourier.compose(mechanism, count)
        rdp.compose(mechanism, count)
    return fourier, rdp


def test_negligible_delta_takes_the_rdp_bound():
    entries = [(PoissonSubsampled(RandomizedResponse(p=0.8777), 0.000422), 2294),
               (PoissonSubsampled(LaplaceMechanism(scale=12.2612), 0.00938), 14)]
    fourier, rdp = _both(entries)
    bounds = fourier.delta_bounds(4.9861)
    assert bounds.upper == rdp.get_delta(4.9861) < 1e-300
    assert 0.0 == bounds.lower <= bounds.estimate <= bounds.upper
    assert "lowered to RDPAccountant's" in fourier.delta_report(4.9861).method
    # the next query, answered within rtol by another path, does not say so
    wide = fourier.delta_bounds(0.05)
    assert "lowered to RDPAccountant's" not in fourier.delta_report(0.05).method or wide.upper == rdp.get_delta(0.05)


def test_the_cap_stays_above_the_exact_delta(monkeypatch):
    # two steps of a subsampled Gaussian at a large epsilon (delta ~ 1e-251): the buckets leave [0, ~1e-26]; the
    # RDP bound is smaller and still above the exact value (mpmath). Narrow two-run ledgers take accountants.two_runs
    # (a proven interval within rtol, tests/accountants/test_two_runs.py): the buckets' path is kept here by hand
    monkeypatch.setattr(FourierAccountant, "_few_runs", lambda self: None)
    entries = [(PoissonSubsampled(GaussianMechanism(sigma=2.0), 1e-3), 2)]
    fourier, rdp = _both(entries)
    bounds = fourier.delta_bounds(10.0)
    exact = profiles.subsampled_gaussian_profile(10.0, 1e-3, 2.0, 2)
    assert bounds.lower <= exact <= bounds.upper <= rdp.get_delta(10.0)


def test_within_rtol_the_buckets_are_not_capped():
    fourier, _ = _both([(PoissonSubsampled(RandomizedResponse(p=0.7), 0.1), 50), (LaplaceMechanism(scale=2.0), 3)])
    bounds = fourier.epsilon_bounds(1e-5)
    assert bounds.upper - bounds.lower <= 1e-6 * bounds.upper and math.isfinite(bounds.upper)
    method = fourier.epsilon_report(1e-5).method
    assert "lowered to RDPAccountant's" not in method and "wider than rtol" not in method


def test_an_interval_wider_than_rtol_says_so():
    """red5 finding 8: the buckets' [0, 0.0501] for epsilon was printed with nothing to say it misses rtol."""
    fourier, _ = _both([(PoissonSubsampled(RandomizedResponse(p=0.6014), 0.000458), 8151),
                        (PoissonSubsampled(LaplaceMechanism(scale=37.6429), 0.000136), 68)])
    report = fourier.epsilon_report(1e-5)
    assert report.method.endswith("wider than rtol 1e-06 asks (both ends proven)")


def test_an_epsilon_at_the_pure_epsilon_takes_the_rdp_bound_where_lower():
    """red5 finding 5: at a tiny delta a Laplace ledger's search ends at the pure epsilon, 3.6e-9 above RDP's."""
    fourier, rdp = _both([(LaplaceMechanism(scale=0.8445), 3)])
    bounds = fourier.epsilon_bounds(1.59e-9)
    assert bounds.upper == rdp.get_epsilon(1.59e-9) < fourier.pure_epsilon()
    assert bounds.lower <= bounds.upper
    assert "lowered to RDPAccountant's" in fourier.epsilon_report(1.59e-9).method
