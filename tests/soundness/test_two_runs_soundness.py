"""Soundness of the few-run paths (accountants/two_runs.py, accountants/windowed_buckets.py) on random narrow and wide
two-run ledgers: the reported epsilon interval brackets the crossing of the exact two-run profile (the count-2 mpmath
oracle)."""

import math

from hypothesis import given
from hypothesis import strategies as st

from dpledger.accountants.two_runs import TwoRunLedger
from dpledger.accountants.windowed_buckets import WindowedLedger
from tests.oracles.privacy_profiles import subsampled_gaussian_profile
from tests.soundness._cases import budget, record


@budget(2)  # 50 with --soundness-long
@given(st.floats(0.5, 3.0), st.floats(-4.0, -0.3).map(lambda e: 10.0**e), st.sampled_from([1e-3, 1e-5, 1e-8]))
def test_random_two_run_ledgers_bracket_the_exact_epsilon(sigma, q, delta):
    ledger = TwoRunLedger((1 / sigma, q), (1 / sigma, q))
    lower, upper = ledger.epsilon_bounds(delta, 1e-6)
    assert math.isfinite(upper) and upper - lower <= 1e-6 * upper
    assert subsampled_gaussian_profile(upper, q, sigma, 2) <= delta
    if lower > 0.0:
        assert subsampled_gaussian_profile(lower, q, sigma, 2) > delta
    record("two runs: epsilon interval")


@budget(1)  # 25 with --soundness-long
@given(st.floats(0.5, 1.5), st.floats(-4.0, -2.0).map(lambda e: 10.0**e), st.sampled_from([1e-3, 1e-5, 1e-8]))
def test_random_two_run_ledgers_on_the_window_bracket_the_exact_epsilon(sigma, q, delta):
    """The windowed buckets (accountants/windowed_buckets.py) on two runs, where the count-2 oracle is exact: the
    interval brackets its crossing (its width is the accountant's concern: wider than rtol, the other paths answer
    too and the intervals are intersected)."""
    lower, upper = WindowedLedger([(1 / sigma, q, 2)]).epsilon_bounds(delta, 1e-6)
    assert math.isfinite(upper)
    assert subsampled_gaussian_profile(upper, q, sigma, 2) <= delta
    if lower > 0.0:
        assert subsampled_gaussian_profile(lower, q, sigma, 2) > delta
    record("windowed buckets: epsilon interval")
