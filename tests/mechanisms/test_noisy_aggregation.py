"""Noisy aggregation: Gaussian report-noisy-max (sensitivity sqrt 2) and the tau-approximation (Private-kNN App. D).

The sensitivities are checked by simulating k-NN vote histograms on neighbouring data sets (one record added
or removed), independently of the docstring arguments.
"""

import math

import numpy as np
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st
from numpy.testing import assert_allclose

from dpledger.accountants import FourierAccountant, RDPAccountant
from dpledger.mechanisms import GaussianMechanism, PoissonSubsampled, subsampled_rdp
from dpledger.mechanisms.noisy_aggregation import NoisyArgmax, TauClippedVotes, tau_clip

ORDERS = np.array([1.5, 2.0, 3.0, 7.5, 10.0, 64.0, 256.0])


def knn_histogram(points, labels, query, k, num_classes):
    """Vote histogram of the k nearest points (ties broken by index, a fixed rule independent of the data)."""
    order = np.lexsort((np.arange(len(points)), np.linalg.norm(points - query, axis=1)))[:k]
    return np.bincount(labels[order], minlength=num_classes)


@settings(max_examples=60)
@given(
    n=st.integers(1, 40),
    k=st.integers(1, 12),
    c=st.integers(1, 5),
    seed=st.integers(0, 2**32 - 1),
)
@example(n=1, k=3, c=2, seed=0)
@example(n=30, k=5, c=3, seed=1)
def test_knn_histograms_of_neighbouring_datasets_differ_by_at_most_one_moved_vote(n, k, c, seed):
    """Add-or-remove one record: histogram L2 change <= sqrt(2) (NoisyArgmax), plurality change <= 1
    (NoisyScreening), whatever the number of records relative to k."""
    rng = np.random.default_rng(seed)
    points = rng.normal(size=(n + 1, 2))
    labels = rng.integers(0, c, size=n + 1)
    query = rng.normal(size=2)
    full = knn_histogram(points, labels, query, k, c)
    for removed in range(n + 1):
        keep = np.arange(n + 1) != removed
        part = knn_histogram(points[keep], labels[keep], query, k, c)
        diff = full - part
        assert np.linalg.norm(diff) <= math.sqrt(2) + 1e-12
        assert abs(full.max() - part.max()) <= 1
        if n + 1 > k:  # at least k records on both sides: exactly k votes each
            assert full.sum() == part.sum() == k


def test_noisy_argmax_rdp_is_alpha_over_sigma_squared():
    for sigma in (0.5, 20.0, 60.0):
        m = NoisyArgmax(sigma=sigma)
        assert m.sensitivity == math.sqrt(2.0)
        assert_allclose(m.rdp(ORDERS), ORDERS / sigma**2, rtol=1e-14)
        assert m.rdp(np.inf) == np.inf
        assert m.satisfies_pearson_vajda is True  # a Gaussian mechanism (thesis Prop 2.3.6)


@pytest.mark.parametrize("sigma,q", [(20.0, 0.2), (25.0, 0.15), (60.0, 0.03), (2.0, 0.5)])
def test_subsampled_noisy_argmax_gets_the_tight_subsampled_gaussian_bound(sigma, q):
    m = PoissonSubsampled(NoisyArgmax(sigma=sigma), sampling_probability=q)
    same = PoissonSubsampled(GaussianMechanism(sigma=sigma, sensitivity=math.sqrt(2.0)), sampling_probability=q)
    orders = np.concatenate((ORDERS, [2.5, 12.25]))
    assert_allclose(m.rdp(orders), same.rdp(orders), rtol=1e-13)
    integer = np.array([2.0, 3.0, 10.0, 64.0])
    tight = subsampled_rdp.tight_bound(integer, q, NoisyArgmax(sigma=sigma).rdp)
    assert_allclose(m.rdp(integer), np.minimum(tight, NoisyArgmax(sigma=sigma).rdp(integer)), rtol=1e-13)
    # strictly tighter than the general bound, which is what a non-Gaussian base would get
    assert np.all(m.rdp(integer[1:]) < subsampled_rdp.general_bound(integer[1:], q, NoisyArgmax(sigma=sigma).rdp))


def test_noisy_argmax_in_both_accountants():
    m = PoissonSubsampled(NoisyArgmax(sigma=20.0), sampling_probability=0.2)
    rdp_eps = RDPAccountant().compose(m, count=100).get_epsilon(1e-5)
    fa = FourierAccountant()
    assert fa.supports(m)
    fourier_eps = fa.compose(m, count=100).get_epsilon(1e-5)
    assert 0 < fourier_eps <= rdp_eps


@pytest.mark.parametrize("kwargs,error,match", [
    (dict(sigma=0.0), ValueError, r"`sigma` of NoisyArgmax must be positive"),
    (dict(sigma=float("nan")), ValueError, r"`sigma` of NoisyArgmax.*nan"),
    (dict(sigma="1"), TypeError, r"`sigma` of NoisyArgmax must be a real number"),
    (dict(sigma=1.0, sensitivity=1.0), TypeError, r"sensitivity"),
])
def test_noisy_argmax_validation(kwargs, error, match):
    with pytest.raises(error, match=match):
        NoisyArgmax(**kwargs)


# --------------------------------------------------------------------------- tau-approximation (App. D)
@pytest.mark.parametrize("tau", [0.25, 1.0, 3.0, 10.0])
def test_tau_clipped_votes_rdp(tau):
    m = TauClippedVotes(sigma=10.0, tau=tau)
    assert_allclose(m.rdp(ORDERS), ORDERS * tau * min(1.0, tau) / 100.0, rtol=1e-14)
    if tau >= 1:  # Private-kNN Thm 13: alpha tau / sigma^2
        assert_allclose(m.rdp(ORDERS), ORDERS * tau / 10.0**2, rtol=1e-14)


@settings(max_examples=60)
@given(
    k=st.integers(1, 8),
    c=st.integers(1, 12),
    tau=st.floats(0.1, 15.0),
    seed=st.integers(0, 2**32 - 1),
)
@example(k=3, c=10, tau=10.0, seed=0)
@example(k=3, c=10, tau=0.5, seed=0)
def test_tau_clipped_histograms_have_the_stated_l2_sensitivity(k, c, tau, seed):
    rng = np.random.default_rng(seed)
    votes = (rng.random((k + 1, c)) < rng.random()).astype(np.float64)  # multi-hot labels of k + 1 records
    clipped = tau_clip(votes, tau)
    assert np.all(clipped.sum(axis=1) <= tau * (1 + 1e-12))
    assert np.all((clipped >= 0) & (clipped <= 1))
    sens = TauClippedVotes(sigma=1.0, tau=tau).sensitivity
    # swap one neighbour for another (fixed k) or drop one (fewer than k records)
    assert np.linalg.norm(clipped[0] - clipped[1]) <= sens * (1 + 1e-12)
    assert np.linalg.norm(clipped[:k].sum(axis=0) - clipped[1:].sum(axis=0)) <= sens * (1 + 1e-12)
    assert np.linalg.norm(clipped[0]) <= sens * (1 + 1e-12)


def test_tau_sensitivity_is_attained():
    """All-ones votes clipped to tau = 2 over 4 labels vs disjoint ones: |v - w|^2 = 2 tau min(1, tau) exactly."""
    v = tau_clip(np.array([[1.0, 1.0, 0.0, 0.0], [0.0, 0.0, 1.0, 1.0]]), 2.0)
    assert np.linalg.norm(v[0] - v[1]) == pytest.approx(TauClippedVotes(sigma=1.0, tau=2.0).sensitivity)


def test_tau_validation():
    with pytest.raises(ValueError, match=r"`tau` of TauClippedVotes must be positive"):
        TauClippedVotes(sigma=1.0, tau=0.0)
    with pytest.raises(ValueError, match=r"`tau` of tau_clip must be positive"):
        tau_clip(np.ones((2, 2)), -1.0)
    with pytest.raises(ValueError, match=r"entries in \[0, 1\]"):
        tau_clip(np.array([[2.0, 0.0]]), 1.0)
    with pytest.raises(ValueError, match=r"entries in \[0, 1\]"):
        tau_clip(np.array([[np.nan, 0.0]]), 1.0)
    with pytest.raises(ValueError, match="2-D"):
        tau_clip(np.ones(3), 1.0)
