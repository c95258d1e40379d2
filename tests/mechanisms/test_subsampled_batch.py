"""Batched evaluations of many Poisson-subsampled mechanisms (issue 14, speed of the Fourier accountant).

``PoissonSubsampled.log_mgf_upper_many`` must give, for every mechanism of a random ledger, the bound that
mechanism's own ``log_mgf_upper`` gives (the batch only shares the work); ``gaussian_fractional_rdp`` with one
noise multiplier per order must give each order's value alone; and a short line of frequencies evaluated on one
shared panel layout must still enclose the exact characteristic function (mpmath).
"""

import mpmath as mp
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dpledger.accountants import FourierAccountant
from dpledger.mechanisms import GaussianMechanism, LaplaceMechanism, PoissonSubsampled, RandomizedResponse
from dpledger.mechanisms import subsampled_gaussian_cf as cf
from dpledger.mechanisms import subsampled_gaussian_decay as decay
from dpledger.mechanisms import subsampled_rdp as sr
from dpledger.mechanisms.relations import Direction
from tests.oracles import privacy_profiles as pp

_BASES = st.one_of(
    st.floats(0.6, 6.0).map(lambda s: ("gaussian", s)),
    st.floats(0.5, 3.0).map(lambda b: ("laplace", b)),
    st.floats(0.55, 0.9).map(lambda p: ("rr", p)),
)


def _mechanism(kind, value, q):
    base = {"gaussian": lambda: GaussianMechanism(sigma=value), "laplace": lambda: LaplaceMechanism(scale=value),
            "rr": lambda: RandomizedResponse(p=value)}[kind]()
    return base if q is None else PoissonSubsampled(base, sampling_probability=q)


@settings(max_examples=25, deadline=None)
@given(
    entries=st.lists(st.tuples(_BASES, st.sampled_from([None, 1e-3, 0.01, 0.2])), min_size=1, max_size=6),
    tilts=st.lists(st.one_of(st.floats(1e-3, 70.0), st.integers(1, 40).map(float)), min_size=1, max_size=12),
)
def test_batched_upper_bounds_are_each_mechanisms_own(entries, tilts):
    mechanisms = [_mechanism(kind, value, q) for (kind, value), q in entries]
    s = np.array(tilts)
    batch = PoissonSubsampled.log_mgf_upper_many(mechanisms, s, Direction.REMOVE)
    alone = np.array([m.log_mgf_upper(s, Direction.REMOVE) for m in mechanisms])
    assert batch.shape == alone.shape
    # the same terms summed in the same order give the same floats; where the batch pads a series row with more
    # zero terms (other mechanisms' unconverged orders) its float64 sum may differ in the last bits
    np.testing.assert_allclose(batch, alone, rtol=1e-13, atol=0.0)


def test_batched_upper_bounds_are_bitwise_the_one_by_one_ones_on_a_dp_sgd_grid():
    # the Fourier accountant's Chernoff grids on a ledger of distinct subsampled Gaussians (one integer order, 65)
    mechanisms = [PoissonSubsampled(GaussianMechanism(sigma=float(s)), sampling_probability=0.01)
                  for s in np.linspace(0.8, 3.0, 12)]
    for s in (np.geomspace(1e-3, 64.0, 41), np.linspace(4.0, 6.0, 9)):
        batch = PoissonSubsampled.log_mgf_upper_many(mechanisms, s, Direction.REMOVE)
        alone = np.array([m.log_mgf_upper(s, Direction.REMOVE) for m in mechanisms])
        assert np.array_equal(batch, alone)


@pytest.mark.parametrize("direction,s", [(Direction.ADD, np.array([0.5, 3.0, 7.0])),
                                         (Direction.REMOVE, np.array([-0.5, 2.5])),
                                         (Direction.REMOVE, np.array([2.0, 3.0]))])
def test_arguments_outside_the_batch_go_through_each_mechanism(direction, s):
    mechanisms = [PoissonSubsampled(GaussianMechanism(sigma=sigma), sampling_probability=0.05) for sigma in (1, 2)]
    batch = PoissonSubsampled.log_mgf_upper_many(mechanisms, s, direction)
    assert np.array_equal(batch, np.array([m.log_mgf_upper(s, direction) for m in mechanisms]))


def test_a_wrong_batch_would_be_caught():
    # the comparison above can fail: a mechanism's bound at another noise multiplier differs far beyond 1e-13
    a = PoissonSubsampled(GaussianMechanism(sigma=1.0), sampling_probability=0.01)
    b = PoissonSubsampled(GaussianMechanism(sigma=1.0 + 1e-9), sampling_probability=0.01)
    s = np.array([2.5])
    assert a.log_mgf_upper(s, Direction.REMOVE)[0] != b.log_mgf_upper(s, Direction.REMOVE)[0]
    assert PoissonSubsampled.log_mgf_upper_many([a, b], s, Direction.REMOVE)[0, 0] != (
        PoissonSubsampled.log_mgf_upper_many([b, a], s, Direction.REMOVE)[0, 0])


@settings(max_examples=20, deadline=None)
@given(orders=st.lists(st.floats(1.001, 80.0).filter(lambda a: a != round(a)), min_size=1, max_size=6),
       sigmas=st.lists(st.floats(0.5, 8.0), min_size=1, max_size=4), q=st.sampled_from([1e-4, 0.01, 0.3]))
def test_fractional_series_with_one_noise_multiplier_per_order(orders, sigmas, q):
    grid_o, grid_s = np.meshgrid(np.array(orders), np.array(sigmas))
    together = sr.gaussian_fractional_rdp(grid_o, q, grid_s).reshape(grid_o.shape)
    for i, sigma in enumerate(sigmas):
        np.testing.assert_allclose(together[i], sr.gaussian_fractional_rdp(np.array(orders), q, sigma),
                                   rtol=1e-13, atol=0.0)


def test_accountant_upper_bounds_match_the_mechanisms_sum():
    # the ledger-level real-tilt bound (one batch) equals the count-weighted sum of the mechanisms' own bounds
    fa = FourierAccountant()
    mechanisms = [PoissonSubsampled(GaussianMechanism(sigma=s), sampling_probability=0.02) for s in (0.9, 1.7, 2.6)]
    for n, m in zip((10, 3, 7), mechanisms):
        fa.compose(m, count=n)
    s = np.geomspace(1e-2, 30.0, 9)
    expected = sum(n * m.log_mgf_upper(s, Direction.REMOVE) for n, m in zip((10, 3, 7), mechanisms))
    np.testing.assert_allclose(fa._log_mgf_upper(s, Direction.REMOVE), expected, rtol=1e-14, atol=0.0)


# ------------------------------------------------------------------ one layout for a short line of frequencies
DPS, DEGREE = 30, 4


@pytest.mark.parametrize("a,g,sigma", [(3.5, 0.01, 1.3), (-2.0, 0.05, 2.0)])
def test_a_short_line_on_one_layout_encloses_the_exact_values(a, g, sigma):
    # a contour's nodes: low and high frequencies in one group (the layout of the highest) must each be enclosed
    v = np.array([0.0, 0.4, 1.7, 6.0, 19.0, 41.0])
    assert v.size <= cf._SHORT_LINE
    value, log_err = cf.log_f_enclosure(a, v, g, 1.0 / sigma)
    for k in range(v.size):
        with mp.workdps(DPS):
            exact = mp.exp(pp.subsampled_log_mgf(mp.mpc(a, v[k]) - 1, g, "gaussian", sigma, "remove", dps=DPS,
                                                 degree=DEGREE))
            gap = abs(mp.exp(mp.mpc(complex(value[k]))) - exact)
            assert gap <= mp.exp(mp.mpf(float(log_err[k])))
            # informative: the error far below the size of F(a)
            assert float(log_err[k]) < float(mp.log(abs(exact))) - 20.0 or v[k] > 5.0


@settings(max_examples=25, deadline=None)
@given(a=st.one_of(st.floats(-8.0, 0.0), st.floats(1.0, 12.0), st.floats(0.01, 0.99)), g=st.floats(1e-4, 0.6),
       sigma=st.floats(0.6, 6.0), v_min=st.floats(0.0, 60.0))
def test_the_decay_bound_skips_the_value_at_zero_only_where_it_cannot_be_smaller(a, g, sigma, v_min):
    # log_f_sup leaves out log_f_upper(a) where the decay bound is <= 0 and a is outside (0, 1): there F(a) >= 1
    # (F convex, F(0) = F(1) = 1), so its proven upper bound is >= 0 and the minimum is the decay bound
    upper = cf.log_f_upper(a, g, 1.0 / sigma)
    sup = decay.log_f_sup(a, v_min, g, 1.0 / sigma)
    assert sup <= upper
    if a <= 0.0 or a >= 1.0:
        assert upper >= 0.0
    else:
        assert upper <= 1e-9  # F(a) <= 1 inside: the value at zero is the one that can be smaller
