"""Ledgers of randomized response, pure DP and their Poisson-subsampled versions are enumerated exactly, both
directions (issue 14 item 4): certified at the default rtol, the interval containing the exact mpmath profile.
``PoissonSubsampled(RandomizedResponse(p=0.6), 0.001)`` x 10,000 at delta 1e-8 raised AccuracyError before."""

import mpmath as mp
import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from dpledger.accountants import FourierAccountant, RDPAccountant
from dpledger.accountants.report import BoundKind
from dpledger.mechanisms import GaussianMechanism, PoissonSubsampled, PureDPMechanism, RandomizedResponse
from tests.oracles import privacy_profiles as pp

mp.mp.dps = 50


def _exact(eps, sub_p, q, n_sub, rr_p, n_rr):
    remove, add = pp.subsampled_rr_pairs(sub_p, q)
    extra = [(pp.rr_pair_from_p(rr_p), n_rr)] if n_rr else []
    return max(pp.discrete_profile(eps, [(remove, n_sub)] + extra), pp.discrete_profile(eps, [(add, n_sub)] + extra))


def test_the_issue_example_is_certified_and_below_rdp():
    m = PoissonSubsampled(RandomizedResponse(p=0.6), 0.001)
    fa = FourierAccountant().compose(m, count=10_000)
    assert fa.bound_kind is BoundKind.UPPER
    b = fa.epsilon_bounds(1e-8)
    assert b.upper - b.lower <= 1e-6 * b.upper
    assert b.upper < RDPAccountant().compose(m, count=10_000).get_epsilon(1e-8)
    with mp.workdps(40):
        remove, add = pp.subsampled_rr_pairs(0.6, 0.001)
        at_upper = max(pp.discrete_profile(b.upper, [(remove, 10_000)], dps=30),
                       pp.discrete_profile(b.upper, [(add, 10_000)], dps=30))
    assert at_upper <= mp.mpf(1e-8)


@settings(max_examples=15, deadline=None)
@given(st.floats(0.51, 0.999), st.floats(-5, 0).map(lambda e: 10.0**e), st.integers(1, 60),
       st.floats(0.51, 0.99), st.integers(0, 30), st.floats(0.0, 1.0))
def test_subsampled_and_plain_randomized_response_intervals_contain_the_exact_delta(p, q, n, rr_p, n_rr, fraction):
    fa = FourierAccountant().compose(PoissonSubsampled(RandomizedResponse(p=p), q), count=n)
    if n_rr:
        fa.compose(RandomizedResponse(p=rr_p), count=n_rr)
    assert fa.bound_kind is BoundKind.UPPER
    eps = fraction * fa.pure_epsilon()
    b = fa.delta_bounds(eps)
    exact = _exact(eps, p, q, n, rr_p, n_rr)
    tiny = mp.mpf(10) ** -40  # the oracle's own precision
    assert mp.mpf(b.lower) <= exact * (1 + mp.mpf(10) ** -30) + tiny and exact <= mp.mpf(b.upper) + tiny


def test_subsampled_pure_dp_and_fallbacks():
    fa = FourierAccountant().compose(PoissonSubsampled(PureDPMechanism(epsilon=1.0), 0.1), count=50)
    assert fa.bound_kind is BoundKind.UPPER and np.isfinite(fa.get_epsilon(1e-6))
    # a Gaussian in the ledger, or more outcomes than can be enumerated: back to inversion, still proven (the
    # subsampled two-point laws are closed forms), but no longer an exact enumeration
    mixed = FourierAccountant().compose(PoissonSubsampled(RandomizedResponse(p=0.6), 0.1), count=5)
    mixed.compose(GaussianMechanism(sigma=2.0))
    assert mixed._atom_lattice() is None and mixed.bound_kind is BoundKind.UPPER
    big = FourierAccountant()
    for p in (0.6, 0.7, 0.8):
        big.compose(PoissonSubsampled(RandomizedResponse(p=p), 0.01), count=200)
    # 201^3 outcomes: enumerated with the group of most runs summed through its tail sums (201^2 enumerated)
    assert big._atom_lattice() is not None and big.bound_kind is BoundKind.UPPER
    big.compose(PoissonSubsampled(RandomizedResponse(p=0.9), 0.01), count=200)  # 201^3 even without the largest
    assert big._atom_lattice() is None and big.bound_kind is BoundKind.UPPER
