"""Noisy screening (Private-kNN Thm 9): mpmath brute force, data processing, order inf, subsampling, refusal."""

import math

import numpy as np
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st
from numpy.testing import assert_allclose

from dpledger.accountants import FourierAccountant, RDPAccountant
from dpledger.mechanisms import GaussianMechanism, Mechanism, PoissonSubsampled, subsampled_rdp
from dpledger.mechanisms.noisy_screening import (
    DataDependentScreening,
    NoisyScreening,
    SubsampledScreening,
    subsampled_screening,
)
from tests.oracles import mpmath_screening as oracle

# (k, threshold, sigma, num_classes): the paper's Figure 5 / CIFAR-10 setting, scaled-down MNIST and SVHN
# ones (k / 5, same T / k and sigma / k), and small or extreme ones (threshold outside the range, tiny sigma so
# that probabilities reach 1e-300).
SETTINGS = [
    (300, 210, 85.0, 10),
    (60, 36, 15.0, 10),
    (160, 96, 40.0, 10),
    (20, 12, 1.5, 3),
    (50, 10, 0.3, 5),
    (10, 5, 20.0, 2),
    (7, 100.0, 4.0, 2),
    (12, 3.5, 0.08, 4),
]
ORDERS = [1.001, 1.5, 2.0, 3.0, 7.25, 32.0, 100.0, 1000.0, 1e5, float("inf")]
#: The library rounds up by a relative 1e-11 (noisy_screening._RELATIVE_SLACK); float64 error is far below.
RTOL = 2e-11


@pytest.mark.parametrize("k,threshold,sigma,c", SETTINGS)
def test_matches_mpmath_brute_force_over_every_plurality(k, threshold, sigma, c):
    m = NoisyScreening(k=k, threshold=threshold, sigma=sigma, num_classes=c)
    values = m.rdp(ORDERS)
    for value, order in zip(values, ORDERS):
        ref = float(oracle.screening_rdp(order, k, threshold, sigma, math.ceil(k / c)))
        assert value >= ref, (order, value, ref)  # an upper bound, rounded up
        assert value <= ref * (1 + RTOL) + 1e-300, (order, value, ref)


def test_min_plurality_zero_covers_more_pairs_and_matches_oracle():
    loose = NoisyScreening(k=30, threshold=5.0, sigma=2.0, num_classes=3, min_plurality=0)
    strict = NoisyScreening(k=30, threshold=5.0, sigma=2.0, num_classes=3)
    assert strict.min_plurality == 10 and loose.min_plurality == 0
    for order in (2.0, 20.0, float("inf")):
        ref = float(oracle.screening_rdp(order, 30, 5.0, 2.0, 0))
        assert ref <= loose.rdp(order) <= ref * (1 + RTOL)
    assert loose.rdp(2.0) > strict.rdp(2.0)  # the extra pluralities 0..9 straddle the threshold 5


@settings(max_examples=30)
@given(
    k=st.integers(1, 400),
    threshold_fraction=st.floats(-0.5, 1.5),
    sigma=st.floats(0.05, 500.0),
    c=st.integers(1, 20),
    order=st.floats(1.0001, 1e4),
)
@example(k=300, threshold_fraction=0.7, sigma=85.0, c=10, order=2.0)
@example(k=2, threshold_fraction=0.75, sigma=0.05, c=2, order=1.0001)
def test_data_processing_never_above_the_gaussian_with_sensitivity_one(k, threshold_fraction, sigma, c, order):
    m = NoisyScreening(k=k, threshold=threshold_fraction * k, sigma=sigma, num_classes=c, min_plurality=0)
    gauss = GaussianMechanism(sigma=sigma, sensitivity=1.0)
    orders = np.array([order, 2.0 * order, 10.0 * order])
    values = m.rdp(orders)
    assert np.all(values >= 0)
    assert np.all(values <= gauss.rdp(orders) * (1 + 1e-10))
    # Renyi divergences are non-decreasing in the order (van Erven & Harremoes 2014, Thm 3), up to order inf.
    assert np.all(np.diff(values) >= -1e-12 * values[1:])
    assert values[-1] <= m.rdp(np.inf) * (1 + 1e-12)


def test_order_inf_is_the_largest_log_likelihood_ratio_and_finite():
    m = NoisyScreening(k=300, threshold=210, sigma=85.0, num_classes=10)
    lp, l1p = m.log_pass_probabilities()
    expected = max(np.abs(np.diff(lp)).max(), np.abs(np.diff(l1p)).max())
    assert m.rdp(np.inf) == pytest.approx(expected, rel=RTOL)
    assert m.pure_epsilon() == m.rdp(np.inf)
    assert np.isfinite(m.rdp(np.inf))
    # at order inf the worst pair is at a boundary plurality, ceil(k/c) or k (Private-kNN App. B, "Where is
    # t* in practice?"); here the bottom one, 30, which is further from T = 210 in units of sigma
    per_pair = m.rdp_by_plurality(np.inf)[0]
    n = m.k - m.min_plurality
    assert np.argmax(per_pair) in (0, n - 1, n, 2 * n - 1)


def test_worst_plurality_near_the_threshold_at_small_orders():
    """Private-kNN App. B / Figure 6: below order 50 the worst pair sits at the threshold T = 210."""
    m = NoisyScreening(k=300, threshold=210, sigma=85.0, num_classes=10)
    per_pair = m.rdp_by_plurality([2.0, 10.0])
    n = m.k - m.min_plurality
    t_of_pair = np.concatenate((m.pluralities[:-1], m.pluralities[:-1]))
    assert n == 270
    for row in per_pair:
        assert abs(t_of_pair[np.argmax(row)] - 210) <= 0.1 * 85.0
        # the pairs at t = T are within 1% of the worst one (0.13% at order 10)
        assert row[t_of_pair == 210].max() >= row.max() * (1 - 1e-2)


def test_single_possible_plurality_is_data_independent():
    m = NoisyScreening(k=5, threshold=2.0, sigma=1.0, num_classes=1)
    assert m.rdp([2.0, np.inf]).tolist() == [0.0, 0.0]


def test_vectorised_shapes_and_scalar():
    m = NoisyScreening(k=30, threshold=20, sigma=5.0, num_classes=3)
    grid = np.array([[2.0, 3.0], [4.0, np.inf]])
    out = m.rdp(grid)
    assert out.shape == (2, 2)
    assert_allclose(out.ravel(), [m.rdp(float(x)) for x in grid.ravel()], rtol=0)
    assert np.ndim(m.rdp(2.0)) == 0


@pytest.mark.parametrize(
    "kwargs,error,match",
    [
        (dict(k=0, threshold=1.0, sigma=1.0, num_classes=2), ValueError, r"`k` of NoisyScreening must be at least 1"),
        (dict(k=2.5, threshold=1.0, sigma=1.0, num_classes=2), TypeError, r"`k` of NoisyScreening must be an integer"),
        (dict(k=True, threshold=1.0, sigma=1.0, num_classes=2), TypeError, r"`k` of NoisyScreening"),
        (dict(k=3, threshold=float("nan"), sigma=1.0, num_classes=2), ValueError, r"`threshold`.*got nan"),
        (dict(k=3, threshold=float("inf"), sigma=1.0, num_classes=2), ValueError, r"`threshold`.*finite"),
        (dict(k=3, threshold=1.0, sigma=0.0, num_classes=2), ValueError, r"`sigma` of NoisyScreening must be positive"),
        (dict(k=3, threshold=1.0, sigma=-1.0, num_classes=2), ValueError, r"`sigma`"),
        (dict(k=3, threshold=1.0, sigma=1.0, num_classes=0), ValueError, r"`num_classes`.*at least 1"),
        (dict(k=3, threshold=1.0, sigma=1.0, num_classes="2"), TypeError, r"`num_classes`"),
        (dict(k=3, threshold=1.0, sigma=1.0, num_classes=2, min_plurality=4), ValueError, r"`min_plurality`.*at most"),
        (dict(k=3, threshold=1.0, sigma=1.0, num_classes=2, min_plurality=-1), ValueError, r"`min_plurality`"),
    ],
)
def test_invalid_parameters(kwargs, error, match):
    with pytest.raises(error, match=match):
        NoisyScreening(**kwargs)


def test_positional_arguments_and_bad_orders_are_refused():
    with pytest.raises(TypeError):
        NoisyScreening(300, 210, 85.0, 10)
    m = NoisyScreening(k=3, threshold=1.0, sigma=1.0, num_classes=2)
    with pytest.raises(ValueError, match=r"`orders` of NoisyScreening must be > 1"):
        m.rdp(1.0)
    with pytest.raises(ValueError, match="nan"):
        m.rdp(float("nan"))


# ----------------------------------------------------------------------------------- the subsampling trap
def test_pearson_vajda_term_of_a_bernoulli_pair_can_be_negative():
    """Issue 4's trap: for P = Bern(0.2), Q = Bern(0.3) the chi^3 term is negative, so thesis condition (2.2)
    fails and the tight subsampling bound (Thm 2.3.4) is not proven for screening."""
    value = oracle.pearson_vajda_term(3, 0.2, 0.3)
    closed = (0.2 - 0.3) ** 3 * (0.3**-2 - 0.7**-2)
    assert float(value) == pytest.approx(closed, rel=1e-12)
    assert value < 0
    # pairs straddling 1/2 keep it non-negative
    assert oracle.pearson_vajda_term(3, 0.3, 0.7) >= 0 and oracle.pearson_vajda_term(3, 0.7, 0.3) >= 0
    # screening pairs far from the threshold do not straddle 1/2: both pass probabilities are below 1/2
    m = NoisyScreening(k=300, threshold=210, sigma=85.0, num_classes=10)
    lp, _ = m.log_pass_probabilities([100, 101])
    p, q = np.exp(lp)
    assert p < q < 0.5 and oracle.pearson_vajda_term(3, p, q) < 0  # P: plurality 100, Q: 101


def test_poisson_subsampled_screening_is_subsampled_screening():
    # The base knows a better proven subsampled bound than thesis Thm 2.3.1's general one
    # (Mechanism.subsampled_rdp_bound): PoissonSubsampled takes it, so both spellings give the same curve.
    m = NoisyScreening(k=300, threshold=210, sigma=85.0, num_classes=10)
    assert m.satisfies_pearson_vajda is False
    sub = PoissonSubsampled(m, sampling_probability=0.25)
    orders = np.array([1.5, 2.0, 3.0, 8.0, 20.0, np.inf])
    assert_allclose(sub.rdp(orders), subsampled_screening(m, 0.25).rdp(orders), rtol=1e-14)
    general = np.minimum(subsampled_rdp.general_bound(orders[1:5], 0.25, m.rdp), m.rdp(orders[1:5]))
    assert np.all(sub.rdp(orders[1:5]) <= general) and np.any(sub.rdp(orders[1:5]) < 0.5 * general)
    # and the general bound is strictly above the (unproven here) tight formula at orders >= 3
    general = subsampled_rdp.general_bound(orders[2:5], 0.25, m.rdp)
    assert np.all(general > subsampled_rdp.tight_bound(orders[2:5], 0.25, m.rdp))


def test_both_spellings_of_subsampled_screening_account_alike():
    # Private-kNN's Figure 5 setting: PoissonSubsampled(NoisyScreening) used to give 3.93 against 0.848
    m = NoisyScreening(k=300, threshold=210, sigma=85.0, num_classes=10)
    plain = RDPAccountant().compose(PoissonSubsampled(m, sampling_probability=0.25), count=1000).get_epsilon(1e-5)
    named = RDPAccountant().compose(subsampled_screening(m, 0.25), count=1000).get_epsilon(1e-5)
    assert plain == named
    # the Fourier accountant composes both through the subsampled Gaussian they post-process, and says so
    fourier = FourierAccountant().compose(PoissonSubsampled(m, sampling_probability=0.25), count=1000)
    report = fourier.epsilon_report(1e-5)
    gaussian = FourierAccountant().compose(subsampled_screening(m, 0.25).dominating_gaussian, count=1000)
    assert report.epsilon == gaussian.get_epsilon(1e-5) and "dominating pair" in report.method


def test_general_bound_matches_mpmath_formula():
    m = NoisyScreening(k=20, threshold=12, sigma=1.5, num_classes=3)
    sub = PoissonSubsampled(m, sampling_probability=0.3)
    for order in (2, 3, 6):
        ref = oracle.general_formula(order, 0.3, lambda l: (l - 1) * oracle.screening_rdp(float(l), 20, 12, 1.5, 7))
        general = float(subsampled_rdp.general_bound(np.array([float(order)]), 0.3, m.rdp)[0])
        assert general == pytest.approx(float(ref), rel=1e-9)
        assert float(sub.rdp(float(order))) <= min(general, float(m.rdp(float(order)))) * (1 + 1e-12)


@pytest.mark.parametrize(
    "k,threshold,sigma,c,q",
    [(300, 210, 85.0, 10, 0.25), (20, 12, 1.5, 3, 0.3), (12, 3.5, 0.08, 4, 0.5), (30, 20, 5.0, 3, 1e-6),
     (10, 5, 20.0, 2, 1e-9)],
)
def test_pairwise_subsampled_bound_matches_mpmath(k, threshold, sigma, c, q):
    """Joint quasi-convexity bound: max over ordered neighbouring pluralities of the exact divergences of
    (Bern((1-q) p_t + q p_t'), Bern(p_t)) in both directions, against a 100-digit brute force."""
    s = NoisyScreening(k=k, threshold=threshold, sigma=sigma, num_classes=c)
    m = subsampled_screening(s, q)
    lo = math.ceil(k / c)
    orders = [1.01, 2.0, 5.5, 40.0, float("inf")]
    for value, order in zip(m.pairwise_rdp(orders), orders):
        ref = float(oracle.subsampled_screening_pairwise_rdp(order, k, threshold, sigma, lo, q))
        assert ref <= value <= ref * (1 + RTOL) + 1e-300, (order, value, ref)


@settings(max_examples=25)
@given(
    sigma=st.floats(0.5, 200.0),
    q=st.floats(0.0, 1.0),
    order=st.sampled_from([1.5, 2.0, 3.0, 4.5, 10.0, 31.0, 64.0, float("inf")]),
)
@example(sigma=85.0, q=0.25, order=2.0)
@example(sigma=2.0, q=1e-7, order=3.0)
def test_subsampled_screening_is_the_minimum_of_proven_bounds(sigma, q, order):
    s = NoisyScreening(k=60, threshold=40, sigma=sigma, num_classes=10)
    m = subsampled_screening(s, q)
    assert isinstance(m, SubsampledScreening) and isinstance(m, Mechanism)
    pairwise = m.pairwise_rdp(order)
    gaussian = PoissonSubsampled(GaussianMechanism(sigma=sigma), sampling_probability=q).rdp(order)
    general = PoissonSubsampled(s, sampling_probability=q).rdp(order)
    value = m.rdp(order)
    assert value == min(pairwise, gaussian)
    assert value >= 0
    # the pairwise bound is never above the other two (post-processing; Thm 2.3.1 on each two-point pair)
    assert pairwise <= gaussian * (1 + 1e-9) + 1e-300
    assert pairwise <= general * (1 + 1e-9) + 1e-300
    assert value <= s.rdp(order) * (1 + 1e-9) + 1e-300
    # more sampling, more privacy loss
    assert m.pairwise_rdp(order) <= subsampled_screening(s, min(1.0, 2 * q)).pairwise_rdp(order) * (1 + 1e-12)


@pytest.mark.parametrize("min_plurality", [None, 0])
def test_pairwise_bound_at_full_sampling_is_the_screening_curve(min_plurality):
    """At sampling probability 1 the mixtures are the base pairs themselves, in both orders: Thm 9's curve."""
    s = NoisyScreening(k=40, threshold=25, sigma=6.0, num_classes=4, min_plurality=min_plurality)
    orders = [1.2, 2.0, 9.5, 80.0, float("inf")]
    assert_allclose(subsampled_screening(s, 1.0).pairwise_rdp(orders), s.rdp(orders), rtol=1e-10)


def test_subsampled_screening_edges_and_validation():
    s = NoisyScreening(k=60, threshold=40, sigma=10.0, num_classes=10)
    assert subsampled_screening(s, 0.0).rdp(5.0) == 0.0
    assert subsampled_screening(s, 1.0).rdp(5.0) == pytest.approx(s.rdp(5.0), rel=1e-10)
    assert subsampled_screening(s, 0.1).rdp(np.inf) == pytest.approx(math.log1p(0.1 * math.expm1(s.rdp(np.inf))))
    with pytest.raises(ValueError, match=r"`sampling_probability` of SubsampledScreening must be in \[0, 1\]"):
        subsampled_screening(s, 1.5)
    with pytest.raises(TypeError, match=r"`screening` of SubsampledScreening must be a NoisyScreening"):
        subsampled_screening(GaussianMechanism(sigma=1.0), 0.5)


def test_figure5_setting_proven_bound_no_larger_than_subsampled_gaussian_or_general():
    s = NoisyScreening(k=300, threshold=210, sigma=85.0, num_classes=10)
    ours = RDPAccountant().compose(subsampled_screening(s, 0.25), count=8192).get_epsilon(1e-5)
    gauss = RDPAccountant().compose(subsampled_screening(s, 0.25).dominating_gaussian, count=8192).get_epsilon(1e-5)
    assert ours <= gauss
    general = RDPAccountant().compose(subsampled_screening(s, 0.25).general, count=8192)
    # .general is PoissonSubsampled(s), which now takes the screening's own bound: equal, both below Thm 2.3.1's
    assert ours == general.get_epsilon(1e-5)
    thm_2_3_1 = np.minimum(subsampled_rdp.general_bound(np.arange(2.0, 65.0), 0.25, s.rdp), s.rdp(np.arange(2.0, 65.0)))
    assert np.all(subsampled_screening(s, 0.25).rdp(np.arange(2.0, 65.0)) <= thm_2_3_1)


# ----------------------------------------------------------------------------------- data-dependent
@pytest.mark.parametrize("t", [30, 100, 209, 210, 211, 300])
def test_data_dependent_matches_oracle_and_is_below_data_independent(t):
    s = NoisyScreening(k=300, threshold=210, sigma=85.0, num_classes=10)
    votes = tuple(int(min(t, max(0, 300 - i * t))) for i in range(10))  # greedy: plurality t, 300 votes
    assert sum(votes) == 300
    d = DataDependentScreening(screening=s, votes=votes)
    assert d.plurality == t
    for order in (2.0, 50.0, float("inf")):
        ref = float(oracle.data_dependent_rdp(order, 300, 210, 85.0, 30, t))
        value = float(d.data_dependent_rdp(order))
        assert ref <= value <= ref * (1 + RTOL) + 1e-300
        assert value <= s.rdp(order)


def test_data_dependent_is_not_a_mechanism_and_accountants_refuse_it():
    s = NoisyScreening(k=300, threshold=210, sigma=85.0, num_classes=10)
    d = DataDependentScreening(screening=s, votes=(300,) + (0,) * 9)
    assert not isinstance(d, Mechanism)
    acc = RDPAccountant()
    with pytest.raises(TypeError, match=r"data-dependent privacy loss .* rule 7"):
        acc.compose(d)
    assert acc.ledger == () and not acc.supports(d)
    fourier = FourierAccountant()
    assert not fourier.supports(d)
    with pytest.raises(TypeError, match="DataDependentScreening"):
        fourier.compose(d)


@pytest.mark.parametrize(
    "votes,error,match",
    [
        ((300,) + (0,) * 8, ValueError, r"num_classes = 10 entries"),
        ((301,) + (0,) * 9, ValueError, r"at most k = 300"),
        ((29,) * 10, ValueError, r"plurality at least min_plurality = 30"),
        ((300.0,) + (0,) * 9, TypeError, r"`votes` of DataDependentScreening must be an integer"),
        ((-1, 300) + (0,) * 8, ValueError, r"`votes`.*non-negative"),
        (5, TypeError, r"sequence of integers"),
    ],
)
def test_data_dependent_validation(votes, error, match):
    s = NoisyScreening(k=300, threshold=210, sigma=85.0, num_classes=10)
    with pytest.raises(error, match=match):
        DataDependentScreening(screening=s, votes=votes)
    with pytest.raises(TypeError, match="NoisyScreening"):
        DataDependentScreening(screening=GaussianMechanism(sigma=1.0), votes=(1,))
