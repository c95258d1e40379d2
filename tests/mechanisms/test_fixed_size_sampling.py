"""SampledWithoutReplacement: soundness against exact enumeration of every batch, known values, validation."""

from fractions import Fraction

import mpmath
import numpy as np
import pytest
from numpy.testing import assert_allclose

from dpledger.accountants import FourierAccountant, RDPAccountant
from dpledger.mechanisms import (
    GaussianMechanism,
    LaplaceMechanism,
    PoissonSubsampled,
    RandomizedResponse,
    SampledWithoutReplacement,
)
from dpledger.mechanisms.fixed_size_sampling import replace_one_rdp
from dpledger.mechanisms.relations import Direction
from tests.oracles import fixed_size_sampling as oracle

P = Fraction(3, 4)
EPSILONS = (0.0, 0.3, 0.8, 1.5)
CASES = [(4, 1), (5, 2), (6, 3), (8, 3)]


def _rr(n, b):
    return SampledWithoutReplacement(RandomizedResponse(p=float(P)), batch_size=b, dataset_size=n)


@pytest.mark.parametrize(("n", "b"), CASES)
@pytest.mark.parametrize("count", [1, 3])
def test_exact_add_or_remove_profile_never_exceeds_either_accountant(n, b, count):
    """Every pair (D, D minus a record) and its mirror, every batch enumerated (exact fractions), three boolean
    functions of the batch: the exact delta(epsilon) of ``count`` runs is below both accountants' deltas, and the
    exact Renyi divergences below ``count`` times the reported RDP."""
    m = _rr(n, b)
    fourier = FourierAccountant().compose(m, count=count)
    rdp = RDPAccountant().compose(m, count=count)
    orders = [2, 3, 5]
    curve = count * m.rdp(np.array(orders, dtype=float))
    worst = {e: mpmath.mpf(0) for e in EPSILONS}
    for f in oracle.FUNCTIONS:
        for p1, q1 in oracle.one_probability_pairs(oracle.remove_pairs(n, b), b, P, f):
            for e in EPSILONS:
                worst[e] = max(worst[e], oracle.hockey_stick(p1, q1, count, e))
            for order, bound in zip(orders, curve):
                assert oracle.renyi(p1, q1, count, order) <= bound, (f, p1, q1, order)
    for e in EPSILONS:
        assert worst[e] <= fourier.get_delta(e), e
        assert worst[e] <= rdp.get_delta(e), e
        # tight: the pair (0..0 1, 0..0) under "or" realises thesis Thm 3.3.5(2)'s pair, so the certified Fourier
        # delta is the exact one up to its numerical slack (a wrong rate b / (n - 1) or b / (n + 1) fails here)
        assert fourier.get_delta(e) <= float(worst[e]) * 1.01 + 1e-9, e
        # the worst pair realises the dominating pair, so the exact delta is inside the reported interval
        assert fourier.delta_bounds(e).lower <= worst[e] <= fourier.delta_bounds(e).upper, e
    # and at the epsilon each accountant reports for a delta, the exact delta is within it
    for delta in (1e-3, 1e-2):
        for acc in (fourier, rdp):
            eps = acc.get_epsilon(delta)
            assert max(oracle.hockey_stick(p1, q1, count, eps) for f in oracle.FUNCTIONS
                       for p1, q1 in oracle.one_probability_pairs(oracle.remove_pairs(n, b), b, P, f)) <= delta


@pytest.mark.parametrize(("n", "b"), CASES)
@pytest.mark.parametrize("count", [1, 4])
def test_exact_replace_one_renyi_never_exceeds_the_wang_balle_kasiviswanathan_bound(n, b, count):
    m = _rr(n, b)
    orders = np.array([2.0, 3.0, 4.0, 7.0, 2.5])
    bound = count * m.replace_one_rdp(orders)
    for f in oracle.FUNCTIONS:
        for p1, q1 in oracle.one_probability_pairs(oracle.replace_pairs(n), b, P, f):
            for order, value in zip(orders[:4].astype(int), bound[:4]):
                assert oracle.renyi(p1, q1, count, int(order)) <= value, (f, p1, q1, order)
            # the chord at 2.5 is above the exact divergence, which is below the mean of orders 2 and 3 by
            # convexity of (alpha - 1) D_alpha
            chord = (0.5 * oracle.renyi(p1, q1, count, 2) + 0.5 * 2 * oracle.renyi(p1, q1, count, 3)) / 1.5
            assert chord <= bound[4]


def test_add_or_remove_curves_are_the_poisson_pairs_at_rate_b_over_n():
    base = GaussianMechanism(sigma=0.9, sensitivity=2.0)
    m = SampledWithoutReplacement(base, batch_size=64, dataset_size=6000)
    poisson = PoissonSubsampled(base, sampling_probability=64 / 6000)
    orders = np.array([1.5, 2.0, 7.25, 64.0, np.inf])
    assert np.array_equal(m.rdp(orders), poisson.rdp(orders))
    s = np.array([0.5 + 3.0j, -0.3 + 10.0j, 2.0])
    for d in Direction:
        assert_allclose(m.log_mgf(s, d), poisson.log_mgf(s, d), rtol=0, atol=0)
    assert m.children == (base,) and m.log_mgf_is_proven and m.rdp_is_proven
    assert FourierAccountant().compose(m, count=50).get_epsilon(1e-5) == \
        FourierAccountant().compose(poisson, count=50).get_epsilon(1e-5)


def test_replace_one_bound_is_the_published_theorem_9_value_and_never_below_dp_accounting():
    """autodp's ``compose_subsampled_mechanism`` (Thm 9, its default) for sigma = 1.1, gamma = 0.01, read off with
    autodp 0.2 (numbers recorded here); dp_accounting's subsampled-Gaussian version (WBK19 Thm 27, valid only for
    the Gaussian) is at most the Thm 9 function's value wherever that is not capped by the unsampled curve. (The
    Gaussian mechanism's own ``replace_one_rdp`` also uses Thm 27: tests/mechanisms/test_replace_one_gaussian.py.)"""
    orders = [2.0, 3.0, 4.0, 8.0, 16.0, 32.0]
    autodp_values = [0.0004569322693074045, 0.0006970023520156887, 0.0009455028197419964, 0.002042153123842926,
                     1.7460409811472597, 8.491776020153317]
    values = replace_one_rdp(orders, 0.01, GaussianMechanism(sigma=1.1).rdp)
    assert np.all(values >= autodp_values)
    assert_allclose(values, autodp_values, rtol=1e-9)
    rdp_module = pytest.importorskip("dp_accounting.rdp.rdp_privacy_accountant")
    for sigma, gamma in [(1.1, 0.01), (0.7, 0.1), (3.0, 0.5)]:
        ours = replace_one_rdp(np.array(orders), gamma, GaussianMechanism(sigma=sigma).rdp)
        theirs = rdp_module._compute_rdp_sample_wor_gaussian(gamma, sigma, orders)
        # theirs is not capped by the unsampled curve (subsampling never hurts: joint convexity); ours is
        floor = np.minimum(theirs, GaussianMechanism(sigma=sigma).rdp(np.array(orders)))
        assert np.all(ours >= floor * (1 - 1e-12))


def test_replace_one_bound_caps_and_edges():
    base = LaplaceMechanism(scale=1.0)
    orders = np.array([1.2, 2.0, 5.0, 5000.0, np.inf])
    assert np.all(replace_one_rdp(orders, 0.0, base.rdp) == 0.0)
    full = replace_one_rdp(orders, 1.0, base.rdp)
    assert np.all(full <= base.rdp(orders)) and full[-1] == base.rdp(np.inf)
    part = replace_one_rdp(orders, 0.05, base.rdp)
    pure = np.log1p(0.05 * np.expm1(1.0))
    assert np.all(part <= pure * (1 + 1e-12)) and part[-1] >= pure
    assert np.all(np.diff(part[:-1]) >= 0)  # RDP is non-decreasing in the order
    with pytest.raises(ValueError, match="gamma"):
        replace_one_rdp(orders, 1.5, base.rdp)


@pytest.mark.parametrize(
    ("kwargs", "error", "match"),
    [
        ({"batch_size": 11, "dataset_size": 10}, ValueError, "below dataset_size"),
        ({"batch_size": 10, "dataset_size": 10}, ValueError, "below dataset_size"),
        ({"batch_size": -1, "dataset_size": 10}, ValueError, "batch_size"),
        ({"batch_size": 1, "dataset_size": 0}, ValueError, "dataset_size"),
        ({"batch_size": 2.0, "dataset_size": 10}, TypeError, "batch_size"),
        ({"batch_size": True, "dataset_size": 10}, TypeError, "batch_size"),
    ],
)
def test_bad_input_is_refused(kwargs, error, match):
    with pytest.raises(error, match=match):
        SampledWithoutReplacement(GaussianMechanism(sigma=1.0), **kwargs)
    with pytest.raises(TypeError, match="Mechanism"):
        SampledWithoutReplacement("gaussian", batch_size=1, dataset_size=2)


def test_empty_and_full_batches():
    base = GaussianMechanism(sigma=2.0)
    assert SampledWithoutReplacement(base, batch_size=0, dataset_size=5).rdp(3.0) == 0.0
    assert SampledWithoutReplacement(base, batch_size=4, dataset_size=5).rdp(3.0) < base.rdp(3.0)
