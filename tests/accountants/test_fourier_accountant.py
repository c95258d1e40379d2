"""FourierAccountant: exact oracles, published values, properties, contract and invalid input.

Exact references (independent of the library, mpmath): :mod:`tests.oracles.analytic_gaussian` (Balle & Wang 2018
Thm 8) and :mod:`tests.oracles.privacy_profiles` (randomized response and pure DP by exact enumeration, Laplace
compositions in closed form, Gaussian + discrete mixtures as exact sums, Poisson-subsampled Gaussians by mpmath
integration). Published numbers come from :mod:`tests.published_values`, which records their sources.
"""

import contextlib
import signal

import mpmath as mp
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dpledger.accountants import AccuracyError, Bounds, FourierAccountant, PrivacyReport, RDPAccountant
from dpledger.mechanisms import (
    Composed,
    CustomRDPMechanism,
    GaussianMechanism,
    LaplaceMechanism,
    MissingCapabilityError,
    NeighboringRelation,
    PoissonSubsampled,
    PureDPMechanism,
    RandomizedResponse,
    SelfComposed,
    ZCDPMechanism,
)
from dpledger.mechanisms.relations import Direction
from tests import published_values
from tests.mechanisms._shared import EstimatedLaplace
from tests.oracles import privacy_profiles as pp
from tests.oracles.analytic_gaussian import (
    composed_mu,
    gaussian_delta,
    gaussian_delta_float,
    gaussian_epsilon_float,
    heterogeneous_mu,
)

#: Slack for comparing a float64 bound with an mpmath value rounded to float64.
ROUND = 4 * np.finfo(np.float64).eps


def sgd(q, sigma):
    return PoissonSubsampled(GaussianMechanism(sigma=sigma), sampling_probability=q)


def assert_brackets(bounds, exact, *, rtol=None):
    """``lower <= exact <= upper`` (up to float64 rounding of the oracle) and, if given, ``upper`` within
    ``rtol`` of the exact value."""
    exact = float(exact)
    assert bounds.lower <= bounds.estimate <= bounds.upper, bounds
    assert bounds.lower <= exact * (1 + ROUND), (bounds, exact)
    assert exact <= bounds.upper * (1 + ROUND), (bounds, exact)
    if rtol is not None:
        assert bounds.upper <= exact * (1 + rtol) + 1e-300, (bounds, exact)


def published(identifier):
    for entry in published_values.PUBLISHED_VALUES + published_values.SETTINGS_WITHOUT_PUBLISHED_NUMBER:
        if entry["id"] == identifier:
            return entry
    raise KeyError(identifier)


@contextlib.contextmanager
def time_limit(seconds):
    """Turn a hang into a TimeoutError (SIGALRM; the tests run on the main thread)."""

    def handler(signum, frame):
        raise TimeoutError(f"no answer within {seconds} s")

    previous = signal.signal(signal.SIGALRM, handler)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


# --------------------------------------------------------------------------- Gaussian: exact and published
def test_published_check_sigma_30_count_240():
    # Published check (tests/published_values.py, "brief_gaussian_240"): sigma = 30 composed 240 times,
    # delta = 1e-10 gives epsilon = 3.207781 (exact, Balle & Wang 2018), where RDP gives 3.3567.
    entry = published("brief_gaussian_240")
    fa = FourierAccountant().compose(GaussianMechanism(sigma=30.0), count=240)
    bounds = fa.epsilon_bounds(1e-10)
    assert round(bounds.upper, 6) == 3.207781
    assert_brackets(bounds, entry["oracle_value"], rtol=1e-6)
    rdp = RDPAccountant().compose(GaussianMechanism(sigma=30.0), count=240).get_epsilon(1e-10)
    assert bounds.upper < 3.21 < 3.35 < rdp


@pytest.mark.parametrize("delta", [1e-3, 1e-5, 1e-8, 1e-10, 1e-12])
@pytest.mark.parametrize("sigma,count", [(30.0, 240), (1.0, 1), (5.0, 100), (100.0, 1), (0.3, 4), (2.0, 10_000)])
def test_gaussian_compositions_equal_the_analytic_gaussian(sigma, count, delta):
    exact = gaussian_epsilon_float(delta, composed_mu(sigma, count=count))
    bounds = FourierAccountant().compose(GaussianMechanism(sigma=sigma), count=count).epsilon_bounds(delta)
    assert_brackets(bounds, exact, rtol=1e-6)
    assert bounds.upper == pytest.approx(exact, rel=1e-6)


@pytest.mark.parametrize("delta", [1e-3, 1e-7, 1e-12])
def test_heterogeneous_gaussians_equal_the_analytic_gaussian(delta):
    # sigma_i with their own sensitivities compose to mu = sqrt(sum mu_i^2) (Dong, Roth & Su 2019, Cor 3.3).
    fa = FourierAccountant()
    fa.compose(GaussianMechanism(sigma=3.0), count=7).compose(GaussianMechanism(sigma=2.0, sensitivity=0.5), count=3)
    fa.compose(GaussianMechanism(sigma=10.0, sensitivity=4.0))
    mu = heterogeneous_mu([composed_mu(3.0, 7), composed_mu(2.0, 3, sensitivity=0.5), composed_mu(10.0, 1, 4.0)])
    assert_brackets(fa.epsilon_bounds(delta), gaussian_epsilon_float(delta, mu), rtol=1e-6)


@pytest.mark.parametrize("epsilon", [0.0, 0.3, 1.0, 4.0, 9.0])
@pytest.mark.parametrize("sigma,count", [(1.0, 1), (30.0, 240), (0.5, 3)])
def test_gaussian_delta_is_bracketed_and_tight(sigma, count, epsilon):
    exact = gaussian_delta_float(epsilon, composed_mu(sigma, count=count))
    bounds = FourierAccountant().compose(GaussianMechanism(sigma=sigma), count=count).delta_bounds(epsilon)
    assert_brackets(bounds, exact, rtol=1e-6)
    assert bounds.upper - bounds.lower <= 1e-6 * exact


@pytest.mark.parametrize("identifier,sigma,count,epsilon", [
    ("pld_gaussian_basic", 3**0.5, 3, 1.0),
    ("pld_smallest_gaussian_noise", 1 / 3, 1, 1.0),
])
def test_published_pld_gaussian_deltas(identifier, sigma, count, epsilon):
    # dp_accounting's PLD tests (tests/published_values.py records file and test names and tolerances).
    entry = published(identifier)
    delta = FourierAccountant().compose(GaussianMechanism(sigma=sigma), count=count).get_delta(epsilon)
    assert delta == pytest.approx(entry["value"], abs=1e-6 if identifier == "pld_smallest_gaussian_noise" else 1e-3)
    assert delta == pytest.approx(list(entry["recomputed"].values())[0], rel=1e-6)


@pytest.mark.parametrize("identifier,ledger", [
    ("prv_gaussian_homogeneous", [(100.0, 10_000)]),
    ("prv_gaussian_heterogeneous", [(10.0, 50), (5.0, 50)]),
])
def test_prv_accountant_settings(identifier, ledger):
    # prv_accountant's tests assert only lower <= exact <= upper here; the exact values are recorded oracles.
    entry = published(identifier)
    fa = FourierAccountant()
    for sigma, count in ledger:
        fa.compose(GaussianMechanism(sigma=sigma), count=count)
    assert_brackets(fa.delta_bounds(entry["setting"]["epsilon"]), entry["oracle_value"], rtol=1e-6)


# --------------------------------------------------------------------------- discrete and Laplace losses
def rr_gaussian_profile(epsilon, p, k, mu):
    return pp.gaussian_mixture_profile(epsilon, mu, [(pp.rr_pair_from_p(p), k)])


@pytest.mark.parametrize("p,k,sigma,epsilon", [(0.6, 5, 2.0, 1.0), (0.9, 3, 1.0, 0.0), (0.75, 20, 4.0, 3.0),
                                               (0.51, 50, 0.8, 6.0)])
def test_gaussians_with_randomized_response_against_exact_enumeration(p, k, sigma, epsilon):
    fa = FourierAccountant().compose(RandomizedResponse(p=p), count=k).compose(GaussianMechanism(sigma=sigma))
    assert_brackets(fa.delta_bounds(epsilon), rr_gaussian_profile(epsilon, p, k, 1 / sigma), rtol=1e-6)


def test_gaussians_with_pure_dp_and_randomized_response_epsilon():
    # Two Gaussians, pure-DP mechanisms and randomized responses: epsilon(delta) against the exact profile.
    fa = FourierAccountant().compose(GaussianMechanism(sigma=2.0), count=3).compose(GaussianMechanism(sigma=5.0))
    fa.compose(PureDPMechanism(epsilon=0.2), count=4).compose(RandomizedResponse(p=0.7), count=2)
    mu = heterogeneous_mu([composed_mu(2.0, 3), composed_mu(5.0)])
    groups = [(pp.pure_dp_pair(0.2), 4), (pp.rr_pair_from_p(0.7), 2)]
    for delta in (1e-3, 1e-9):
        exact = pp.epsilon_from_profile(lambda e: pp.gaussian_mixture_profile(e, mu, groups, dps=30), delta)
        assert_brackets(fa.epsilon_bounds(delta), exact, rtol=1e-6)


@pytest.mark.parametrize("ledger,ts,epsilon", [
    ([(LaplaceMechanism(scale=1.0), 1)], [1.0], 0.4),
    ([(LaplaceMechanism(scale=1.0), 2), (LaplaceMechanism(scale=2.0), 1)], [1.0, 1.0, 0.5], 1.0),
    ([(LaplaceMechanism(scale=0.5, sensitivity=2.0), 2)], [4.0, 4.0], 7.9),
])
def test_laplace_compositions_against_closed_form_convolution(ledger, ts, epsilon):
    # The loss has atoms, so its characteristic function does not decay: the atoms are enumerated exactly and
    # only the rest (which decays like 1/u) is Fourier-inverted, certified at the default rtol.
    fa = FourierAccountant()
    for m, count in ledger:
        fa.compose(m, count=count)
    assert_brackets(fa.delta_bounds(epsilon), pp.laplace_profile(epsilon, ts), rtol=1e-6)


@pytest.mark.parametrize("epsilon", [0.0, 0.7, 2.0])
def test_laplace_with_randomized_response_against_exact_sums(epsilon):
    # Composition adds losses: delta = sum_k P(L_RR = c_k) delta_Laplace(epsilon - c_k) (the Laplace profile in
    # closed form at any real argument; the randomized-response loss enumerated exactly).
    fa = FourierAccountant().compose(LaplaceMechanism(scale=1.0), count=2).compose(RandomizedResponse(p=0.7), 3)
    with mp.workdps(40):
        exact = mp.fsum(w * pp.laplace_profile(epsilon - c, [1.0, 1.0], dps=30)
                        for c, w in pp.discrete_loss([(pp.rr_pair_from_p(0.7), 3)], dps=40))
    assert_brackets(fa.delta_bounds(epsilon), exact, rtol=1e-6)


@pytest.mark.parametrize("delta", [0.1, 1e-3, 1e-6, 1e-10])
def test_laplace_composition_epsilon_against_closed_form_convolution(delta):
    # Near the pure epsilon 2.5 (delta 1e-10: epsilon within 1e-9 of it) the pure epsilon itself is returned once
    # the lower delta just below it is certified above delta.
    fa = FourierAccountant().compose(LaplaceMechanism(scale=1.0), count=2).compose(LaplaceMechanism(scale=2.0))
    exact = pp.epsilon_from_profile(lambda e: pp.laplace_profile(e, [1.0, 1.0, 0.5], dps=30), delta, rtol=1e-13)
    b = fa.epsilon_bounds(delta)
    assert b.lower <= b.estimate <= b.upper <= fa.pure_epsilon() == 2.5
    assert b.lower <= exact * (1 + 1e-12) and exact <= b.upper * (1 + 1e-12)
    assert b.upper <= exact * (1 + 1e-6)
    # get_delta plans its own grid, so it need not repeat the search's delta bit for bit: within rtol
    assert fa.get_delta(b.upper) <= delta * (1 + 1e-6)


@settings(max_examples=8)
@given(scales=st.lists(st.tuples(st.floats(0.3, 5.0), st.integers(1, 2)), min_size=1, max_size=2),
       epsilon=st.floats(0.0, 6.0))
def test_lower_exact_upper_for_laplace_ledgers(scales, epsilon):
    fa = FourierAccountant()
    ts = []
    for scale, count in scales:
        fa.compose(LaplaceMechanism(scale=scale), count=count)
        ts += [1.0 / scale] * count
    exact = float(pp.laplace_profile(epsilon, ts, dps=30))
    bounds = fa.delta_bounds(epsilon)
    if exact == 0.0:
        assert bounds.upper == 0.0 or epsilon >= sum(ts) * (1 - 1e-12)
    else:
        assert_brackets(bounds, exact, rtol=1e-6)


@pytest.mark.parametrize("ledger,groups,epsilon", [
    ([(RandomizedResponse(p=0.75), 3)], [(pp.rr_pair_from_p(0.75), 3)], 1.0),
    ([(PureDPMechanism(epsilon=0.3), 5), (PureDPMechanism(epsilon=1.0), 2)],
     [(pp.pure_dp_pair(0.3), 5), (pp.pure_dp_pair(1.0), 2)], 1.7),
])
def test_pure_dp_compositions_against_exact_enumeration(ledger, groups, epsilon):
    fa = FourierAccountant()
    for m, count in ledger:
        fa.compose(m, count=count)
    assert_brackets(fa.delta_bounds(epsilon), pp.discrete_profile(epsilon, groups), rtol=1e-10)
    # With a Gaussian the same ledger goes through Fourier inversion (the Gaussian makes it decay).
    mixed = build(ledger).compose(GaussianMechanism(sigma=3.0), count=2)
    exact = pp.gaussian_mixture_profile(epsilon, composed_mu(3.0, count=2), groups, dps=30)
    assert_brackets(mixed.delta_bounds(epsilon), exact, rtol=1e-6)


def test_pure_dp_ledgers_have_zero_delta_beyond_basic_composition():
    fa = FourierAccountant().compose(LaplaceMechanism(scale=2.0), count=4).compose(PureDPMechanism(epsilon=0.5))
    assert fa.delta_bounds(2.5) == Bounds(0.0, 0.0, 0.0)
    assert fa.get_delta(7.0) == 0.0


def test_laplace_ledgers_the_split_cannot_certify_go_to_the_privacy_buckets():
    # Documented limits: atoms enumerated, but too few nodes for the rest (small max_terms keep this fast). (1) Ten
    # Laplace groups of 3 runs (4^10 atoms): the rest's truncation falls like 1/nodes; (2) rtol 1e-12 on 64 nodes.
    # Both are answered by the privacy buckets (proven, their width set by the grid), whose report says why; the
    # upper ends stay below RDP's.
    many = FourierAccountant(max_terms=1 << 12)
    rdp = RDPAccountant()
    for k in range(10):
        many.compose(LaplaceMechanism(scale=2.0 + k), count=3)
        rdp.compose(LaplaceMechanism(scale=2.0 + k), count=3)
    bounds = many.epsilon_bounds(1e-6)
    assert 0.0 < bounds.lower <= bounds.upper < rdp.get_epsilon(1e-6)
    method = many.epsilon_report(1e-6).method
    assert "privacy buckets" in method and "Fourier inversion cannot reach" in method
    # (2) answers from the privacy buckets (proven, set by their grid, not by rtol), and says why
    few = FourierAccountant(rtol=1e-12, max_terms=64).compose(LaplaceMechanism(scale=1.0), count=2)
    tight = FourierAccountant().compose(LaplaceMechanism(scale=1.0), count=2)
    for query, argument in (("delta", 1.0), ("epsilon", 1e-3)):
        bounds = getattr(few, f"{query}_bounds")(argument)
        exact = getattr(tight, f"{query}_bounds")(argument)
        assert max(bounds.lower, exact.lower) <= min(bounds.upper, exact.upper)  # both proven: they overlap
        method = getattr(few, f"{query}_report")(argument).method
        assert "privacy buckets" in method and "Fourier inversion cannot reach" in method


@pytest.mark.parametrize("ledger,groups", [
    ([(RandomizedResponse(p=0.75), 3)], [(pp.rr_pair_from_p(0.75), 3)]),
    ([(RandomizedResponse(p=0.6), 20), (PureDPMechanism(epsilon=0.05), 40), (RandomizedResponse(p=0.3), 2)],
     [(pp.rr_pair_from_p(0.6), 20), (pp.pure_dp_pair(0.05), 40), (pp.rr_pair_from_p(0.7), 2)]),
])
@pytest.mark.parametrize("epsilon", [0.0, 0.4, 1.0, 2.5])
def test_two_point_ledgers_are_exact_at_the_default_rtol(ledger, groups, epsilon):
    # Randomized response and pure DP alone: enumerated exactly (rounding bounded conservatively: the interval
    # is ~1e-11 wide), far tighter than rtol.
    fa = build(ledger)
    exact = pp.discrete_profile(epsilon, groups, dps=30)
    bounds = fa.delta_bounds(epsilon)
    if exact == 0:
        assert bounds == Bounds(0.0, 0.0, 0.0) or bounds.upper <= 1e-300
    else:
        assert_brackets(bounds, exact, rtol=1e-10)


@pytest.mark.parametrize("delta", [0.3, 1e-3, 1e-9])
def test_two_point_ledger_epsilon_is_exact(delta):
    fa = FourierAccountant().compose(RandomizedResponse(p=0.6), count=30).compose(PureDPMechanism(epsilon=0.2), 5)
    groups = [(pp.rr_pair_from_p(0.6), 30), (pp.pure_dp_pair(0.2), 5)]
    exact = pp.epsilon_from_profile(lambda e: pp.discrete_profile(e, groups, dps=30), delta, rtol=1e-14)
    b = fa.epsilon_bounds(delta)
    assert b.lower <= b.estimate <= b.upper
    assert b.lower <= exact * (1 + 1e-13) and exact <= b.upper * (1 + 1e-13) + 1e-300
    assert b.upper <= exact * (1 + 1e-10) + 1e-300
    assert fa.get_delta(b.upper) <= delta
    report = fa.epsilon_report(delta)
    assert report.epsilon == b.upper and report.bound == "upper bound" and "exact enumeration" in report.method


# --------------------------------------------------------------------------- Poisson subsampling vs mpmath
@pytest.mark.parametrize("q,sigma,sigma2,epsilon", [(0.1, 1.0, 2.0, 0.5), (0.5, 0.7, 1.5, 1.0), (0.01, 0.8, 4.0, 0.2)])
def test_subsampled_gaussian_with_a_gaussian_against_mpmath(q, sigma, sigma2, epsilon):
    # One subsampled Gaussian and one Gaussian: delta per direction is one mpmath integral over the subsampled
    # output of the Gaussian profile; the add-or-remove-one delta is the larger direction (thesis Thm 3.3.5).
    fa = FourierAccountant().compose(sgd(q, sigma)).compose(GaussianMechanism(sigma=sigma2))
    per_direction = [pp.subsampled_gaussian_with_gaussian_delta_direction(epsilon, q, sigma, 1 / sigma2, d)
                     for d in ("remove", "add")]
    assert_brackets(fa.delta_bounds(epsilon), max(per_direction), rtol=1e-6)
    # Each direction on its own: the accountant's log MGF per direction is the oracle's pair.
    assert per_direction[0] != per_direction[1]


def test_subsampled_gaussian_twice_against_mpmath():
    # Count 2 on its own (no Gaussian to make the characteristic function decay): the quadrature-based decay
    # bound needs many nodes, so a loose rtol and max_terms keep this fast.
    fa = FourierAccountant(rtol=1e-3, max_terms=2048).compose(sgd(0.5, 2.0), count=2)
    assert_brackets(fa.delta_bounds(0.2), pp.subsampled_gaussian_profile(0.2, 0.5, 2.0, 2, maxdegree=4), rtol=1e-3)


@pytest.mark.parametrize("p,q,count,sigma,epsilon", [(0.9, 0.1, 20, 3.0, 0.5), (0.99, 0.01, 50, 5.0, 0.3)])
def test_subsampled_randomized_response_with_a_gaussian_against_exact_enumeration(p, q, count, sigma, epsilon):
    # Subsampled randomized response has different remove and add pairs; both are two-point, so each direction is
    # an exact binomial sum of Gaussian profiles.
    fa = FourierAccountant().compose(PoissonSubsampled(RandomizedResponse(p=p), sampling_probability=q), count=count)
    fa.compose(GaussianMechanism(sigma=sigma))
    remove, add = pp.subsampled_rr_pairs(p, q)
    exact = {pair: pp.gaussian_mixture_profile(epsilon, 1 / sigma, [(pair, count)], dps=30) for pair in (remove, add)}
    assert exact[remove] != exact[add]
    assert_brackets(fa.delta_bounds(epsilon), max(exact.values()), rtol=1e-6)


# --------------------------------------------------------------------------- properties
def closed_form_ledger():
    """At least one Gaussian (so every inversion is certifiable at the default rtol) plus closed-form others."""
    gaussian = st.tuples(st.builds(GaussianMechanism, sigma=st.floats(0.5, 50.0)), st.integers(1, 500))
    other = st.tuples(
        st.one_of(
            st.builds(GaussianMechanism, sigma=st.floats(0.5, 50.0), sensitivity=st.floats(0.5, 2.0)),
            st.builds(LaplaceMechanism, scale=st.floats(2.0, 50.0)),
            st.builds(RandomizedResponse, p=st.floats(0.5, 0.8)),
            st.builds(PureDPMechanism, epsilon=st.floats(0.0, 0.5)),
        ),
        st.integers(1, 20),
    )
    return st.tuples(gaussian, st.lists(other, max_size=3)).map(lambda t: [t[0]] + t[1])


def build(ledger, accountant=None):
    fa = FourierAccountant() if accountant is None else accountant
    for m, count in ledger:
        fa.compose(m, count=count)
    return fa


@settings(max_examples=12)
@given(ledger=closed_form_ledger(), log10_delta=st.floats(-12.0, -2.0))
def test_fourier_epsilon_never_above_rdp(ledger, log10_delta):
    delta = 10.0**log10_delta
    fourier = build(ledger).epsilon_bounds(delta)
    rdp = build(ledger, RDPAccountant()).get_epsilon(delta)
    assert fourier.lower <= fourier.estimate <= fourier.upper <= rdp * (1 + 1e-12)


@pytest.mark.parametrize("q,sigma,count", [(0.01, 1.1, 1000), (0.1, 2.0, 100)])
def test_fourier_epsilon_never_above_rdp_for_subsampled_ledgers(q, sigma, count):
    fourier = FourierAccountant().compose(sgd(q, sigma), count=count).epsilon_bounds(1e-5)
    rdp = RDPAccountant().compose(sgd(q, sigma), count=count).get_epsilon(1e-5)
    assert fourier.lower <= fourier.estimate <= fourier.upper < rdp


@settings(max_examples=12)
@given(ledger=closed_form_ledger(), log10_delta=st.floats(-12.0, -2.0))
def test_epsilon_delta_round_trip(ledger, log10_delta):
    fa = build(ledger)
    delta = 10.0**log10_delta
    eps = fa.epsilon_bounds(delta)
    if eps.upper > 0:
        # at the certified epsilon the certified delta is at most the requested one; just below the certified
        # lower epsilon, even the lower delta exceeds it
        assert fa.get_delta(eps.upper) <= delta * (1 + 1e-9)
        assert fa.delta_bounds(eps.lower * (1 - 1e-9)).upper > delta
    deltas = fa.delta_bounds(1.0)
    if 1e-290 < deltas.upper < 0.99:  # below, the upper bound is a (subnormal) Chernoff bound; see the next test
        # and back: the epsilon certified at (slightly more than) the certified delta(1) is at most 1
        assert fa.get_epsilon(deltas.upper * (1 + 1e-5)) <= 1.0


def test_negligible_deltas_are_positive_upper_bounds_and_tiny_targets_are_refused_clearly():
    # Issue 12 item 2: the upper bound was 0.0 where the exact delta is positive (underflow), e.g. sigma 1 at
    # epsilon 40 (exact 3.9e-343), sigma 5 x 100 at epsilon 100 (exact 1.4e-525). mpmath oracle.
    from tests.oracles.analytic_gaussian import composed_mu, gaussian_delta

    for sigma, count, epsilon in [(1.0, 1, 40.0), (5.0, 100, 100.0), (0.7, 1, 60.0), (38.0, 1, 1.0), (1.0, 1, 27.5)]:
        fa = FourierAccountant().compose(GaussianMechanism(sigma=sigma), count=count)
        b = fa.delta_bounds(epsilon)
        exact = gaussian_delta(epsilon, composed_mu(sigma, count))
        assert b.upper > 0.0 and mp.mpf(b.upper) >= exact >= mp.mpf(b.lower)
    # one run: the exact profile, in log space, answers even there (mpmath oracle); by inversion (two runs): refused
    eps = FourierAccountant().compose(GaussianMechanism(sigma=38.0)).get_epsilon(1e-300)
    assert gaussian_delta(eps, composed_mu(38.0, 1)) <= mp.mpf(1e-300)
    with pytest.raises(AccuracyError, match="RDPAccountant"):
        FourierAccountant().compose(GaussianMechanism(sigma=38.0), count=2).get_epsilon(1e-300)


@settings(max_examples=15)
@given(sigmas=st.lists(st.tuples(st.floats(0.3, 40.0), st.integers(1, 300)), min_size=1, max_size=3),
       epsilon=st.floats(0.0, 12.0))
def test_lower_exact_upper_for_gaussian_ledgers(sigmas, epsilon):
    fa = FourierAccountant()
    for sigma, count in sigmas:
        fa.compose(GaussianMechanism(sigma=sigma), count=count)
    mu = heterogeneous_mu([composed_mu(sigma, count) for sigma, count in sigmas])
    exact = float(gaussian_delta(epsilon, mu))
    bounds = fa.delta_bounds(epsilon)
    assert bounds.lower <= exact * (1 + ROUND) and exact <= bounds.upper * (1 + ROUND) + 1e-300
    if exact > 1e-250:
        assert_brackets(bounds, exact, rtol=1e-6)


@settings(max_examples=8)
@given(p=st.floats(0.55, 0.95), k=st.integers(1, 30), sigma=st.floats(0.5, 10.0), epsilon=st.floats(0.0, 6.0))
def test_lower_exact_upper_for_gaussian_with_randomized_response(p, k, sigma, epsilon):
    fa = FourierAccountant().compose(RandomizedResponse(p=p), count=k).compose(GaussianMechanism(sigma=sigma))
    exact = float(pp.gaussian_mixture_profile(epsilon, 1 / sigma, [(pp.rr_pair_from_p(p), k)], dps=30))
    bounds = fa.delta_bounds(epsilon)
    assert bounds.lower <= exact * (1 + ROUND) and exact <= bounds.upper * (1 + ROUND) + 1e-300
    if exact > 1e-250:
        assert_brackets(bounds, exact, rtol=1e-6)


@settings(max_examples=10)
@given(ledger=closed_form_ledger(), extra=st.integers(1, 50), log10_delta=st.floats(-10.0, -3.0))
def test_monotone_in_count(ledger, extra, log10_delta):
    delta = 10.0**log10_delta
    # The exact values grow; the certified ones are within rtol = 1e-6 above them.
    before = build(ledger).get_epsilon(delta)
    more = build(ledger).compose(ledger[0][0], count=extra)
    assert more.get_epsilon(delta) >= before * (1 - 1e-6)
    assert more.get_delta(1.0) >= build(ledger).get_delta(1.0) * (1 - 1e-6)


@settings(max_examples=10)
@given(sigma=st.floats(0.5, 20.0), factor=st.floats(1.01, 3.0), count=st.integers(1, 1000),
       rr=st.floats(0.5, 0.9), log10_delta=st.floats(-10.0, -3.0))
def test_monotone_in_noise(sigma, factor, count, rr, log10_delta):
    delta = 10.0**log10_delta

    def eps(s):
        fa = FourierAccountant().compose(GaussianMechanism(sigma=s), count=count)
        return fa.compose(RandomizedResponse(p=rr), count=3).get_epsilon(delta)

    assert eps(sigma * factor) <= eps(sigma) * (1 + 1e-6)


@pytest.mark.parametrize("q", [0.01, 0.05])
def test_subsampled_monotone_in_count_noise_and_sampling(q):
    base = FourierAccountant().compose(sgd(q, 1.0), count=200).get_epsilon(1e-6)
    assert FourierAccountant().compose(sgd(q, 1.0), count=400).get_epsilon(1e-6) > base
    assert FourierAccountant().compose(sgd(q, 1.3), count=200).get_epsilon(1e-6) < base
    assert FourierAccountant().compose(sgd(q / 2, 1.0), count=200).get_epsilon(1e-6) < base


def test_privacy_profile_is_the_pointwise_bounds_and_non_increasing():
    fa = FourierAccountant().compose(GaussianMechanism(sigma=1.5), count=4).compose(RandomizedResponse(p=0.6))
    grid = np.array([0.0, 0.25, 0.5, 1.0, 2.0, 4.0, 8.0])
    lower, estimate, upper = fa.privacy_profile(grid)
    for i, e in enumerate(grid):
        assert (lower[i], estimate[i], upper[i]) == tuple(fa.delta_bounds(e))
    assert np.all(np.diff(upper) <= 0) and np.all(lower <= estimate) and np.all(estimate <= upper)


def test_tradeoff_curve_is_a_valid_lower_bound_on_the_gaussian_tradeoff():
    # mu-GDP has the exact trade-off beta(a) = Phi(Phi^-1(1 - a) - mu) (Dong, Roth & Su 2019); the accountant's
    # curve (from upper deltas over an epsilon grid) must lie below it and approach it on a fine grid.
    mu = composed_mu(2.0, count=4)
    fa = FourierAccountant().compose(GaussianMechanism(sigma=2.0), count=4)
    alphas = np.array([0.0, 1e-4, 0.01, 0.1, 0.3, 0.7, 1.0])
    beta = fa.tradeoff_curve(alphas, epsilons=np.linspace(0.0, 6.0, 121))
    exact = np.array([float(mp.ncdf(mp.sqrt(2) * mp.erfinv(1 - 2 * a) - mu)) if 0 < a < 1 else float(a == 0)
                      for a in alphas])
    assert np.all((beta >= 0) & (beta <= 1))
    assert np.all(np.diff(beta) <= 1e-15)
    assert np.all(beta <= exact + 1e-12)
    np.testing.assert_allclose(beta[1:-1], exact[1:-1], atol=0.02)
    assert beta[-1] == 0.0


@pytest.mark.parametrize("ledger", [
    ((GaussianMechanism(sigma=2.0), 4),),
    ((PoissonSubsampled(GaussianMechanism(sigma=1.0), sampling_probability=0.05), 20),),
])
def test_chernoff_grid_bounds_the_certified_delta_and_keeps_the_tradeoff_curve(ledger):
    # tradeoff_curve skips the inversion where a Chernoff bound already puts delta below 2^-60: that bound must
    # lie above the certified upper delta everywhere, and the curve must equal the one built from upper deltas.
    fa = FourierAccountant()
    for mechanism, count in ledger:
        fa.compose(mechanism, count=count)
    eps = np.linspace(0.0, 12.0, 25)
    upper = fa.privacy_profile(eps)[2]
    log_bound = fa._chernoff_log_delta_grid(eps)
    assert np.all(np.exp(log_bound) >= upper * (1 - 1e-9))
    assert np.any(log_bound < -60 * np.log(2.0))  # the shortcut is taken somewhere on this grid
    alphas = np.linspace(0.0, 1.0, 21)
    e, d = eps[:, None], upper[:, None]
    reference = np.maximum(np.maximum(0.0, 1.0 - d - np.exp(e) * alphas), np.exp(-e) * (1.0 - d - alphas)).max(axis=0)
    np.testing.assert_allclose(fa.tradeoff_curve(alphas, epsilons=eps), reference, rtol=0, atol=1e-15)


# --------------------------------------------------------------------------- state and contract
def test_compose_returns_self_and_merges_equal_mechanisms():
    fa = FourierAccountant()
    assert fa.compose(GaussianMechanism(sigma=2.0), count=3) is fa
    fa.compose(LaplaceMechanism(scale=3.0)).compose(GaussianMechanism(sigma=2.0), count=4)
    fa.compose(GaussianMechanism(sigma=2), count=np.int64(1))
    assert fa.ledger == ((GaussianMechanism(sigma=2.0), 8), (LaplaceMechanism(scale=3.0), 1))


def test_log_mgf_is_additive_over_the_ledger():
    parts = [(GaussianMechanism(sigma=1.5), 3), (LaplaceMechanism(scale=2.0), 2), (RandomizedResponse(p=0.7), 5),
             (sgd(0.05, 1.0), 10), (GaussianMechanism(sigma=3.0, sensitivity=2.0), 1)]
    fa = build(parts)
    s = np.array([0.5, 1.0 + 3.0j, 2.5 - 0.5j, 0.0])
    for direction in Direction:
        expected = sum(count * m.log_mgf(s, direction) for m, count in parts)
        np.testing.assert_allclose(np.exp(fa.log_mgf(s, direction) - 5), np.exp(expected - 5), rtol=1e-12, atol=0)
    np.testing.assert_array_equal(FourierAccountant().log_mgf(s), 0.0)


def test_combinators_equal_separate_composition():
    m = sgd(0.05, 1.3)
    direct = FourierAccountant().compose(m, count=25).compose(LaplaceMechanism(scale=4.0), count=2)
    nested = FourierAccountant().compose(Composed([SelfComposed(m, count=25), SelfComposed(LaplaceMechanism(scale=4.0),
                                                                                             count=2)]))
    assert nested.get_epsilon(1e-6) == pytest.approx(direct.get_epsilon(1e-6), rel=1e-6)
    gaussian = FourierAccountant().compose(SelfComposed(GaussianMechanism(sigma=30.0), count=240))
    assert gaussian.get_epsilon(1e-10) == pytest.approx(3.2077805449532346, rel=1e-6)
    q_one = FourierAccountant().compose(PoissonSubsampled(GaussianMechanism(sigma=30.0), sampling_probability=1.0), 240)
    assert q_one.get_epsilon(1e-10) == pytest.approx(3.2077805449532346, rel=1e-6)


def test_getters_do_not_mutate():
    fa = FourierAccountant().compose(GaussianMechanism(sigma=2.0), count=3).compose(RandomizedResponse(p=0.6))
    before = fa.ledger
    first = (fa.get_epsilon(1e-6), fa.get_delta(1.0), fa.epsilon_bounds(1e-6), fa.delta_bounds(1.0))
    fa.privacy_profile([0.5, 1.0])
    fa.tradeoff_curve([0.1], epsilons=[0.5, 1.0])
    fa.epsilon_report(1e-6), fa.delta_report(1.0), fa.supports(ZCDPMechanism(rho=0.1)), fa.certified
    assert fa.ledger == before
    assert (fa.get_epsilon(1e-6), fa.get_delta(1.0), fa.epsilon_bounds(1e-6), fa.delta_bounds(1.0)) == first


@pytest.mark.parametrize("mechanism", [
    ZCDPMechanism(rho=0.1),
    CustomRDPMechanism(lambda a: a / 8.0),
    RandomizedResponse(p=1.0),
    PoissonSubsampled(ZCDPMechanism(rho=0.1), sampling_probability=0.5),
    Composed([GaussianMechanism(sigma=1.0), ZCDPMechanism(rho=0.1)]),
])
def test_mechanisms_without_a_dominating_pair_are_refused_without_change(mechanism):
    fa = FourierAccountant().compose(GaussianMechanism(sigma=2.0))
    before = (fa.ledger, fa.get_epsilon(1e-6))
    assert not fa.supports(mechanism)
    with pytest.raises(MissingCapabilityError):
        fa.compose(mechanism, count=3)
    assert (fa.ledger, fa.get_epsilon(1e-6)) == before


def test_supports_is_a_dry_run():
    fa = FourierAccountant()
    for m in (GaussianMechanism(sigma=1.0), LaplaceMechanism(scale=1.0), RandomizedResponse(p=0.3),
              PureDPMechanism(epsilon=1.0), sgd(0.01, 1.0), SelfComposed(LaplaceMechanism(scale=1.0), count=2)):
        assert fa.supports(m)
    assert not fa.supports("gaussian")
    assert fa.ledger == ()


def test_empty_ledger():
    fa = FourierAccountant()
    assert fa.epsilon_bounds(1e-5) == Bounds(0.0, 0.0, 0.0)
    assert fa.delta_bounds(0.0) == Bounds(0.0, 0.0, 0.0)
    assert fa.certified
    np.testing.assert_allclose(fa.tradeoff_curve([0.0, 0.3, 1.0]), [1.0, 0.7, 0.0])


def test_bounds_object():
    b = FourierAccountant().compose(GaussianMechanism(sigma=1.0)).epsilon_bounds(1e-5)
    lower, estimate, upper = b
    assert (lower, estimate, upper) == (b.lower, b.estimate, b.upper)
    with pytest.raises(AttributeError):
        b.upper = 0.0  # frozen


def test_reports_say_what_they_are():
    closed = FourierAccountant().compose(GaussianMechanism(sigma=2.0), count=3).compose(LaplaceMechanism(scale=5.0))
    report = closed.epsilon_report(1e-6)
    assert isinstance(report, PrivacyReport)
    assert report.epsilon == closed.get_epsilon(1e-6) and report.delta == 1e-6
    assert report.bound == "upper bound" and report.relation is NeighboringRelation.ADD_OR_REMOVE_ONE
    assert report.accountant == "Fourier" and "interval" in report.method
    d_report = closed.delta_report(1.0)
    assert d_report.delta == closed.get_delta(1.0) and d_report.epsilon == 1.0
    sub = FourierAccountant().compose(sgd(0.05, 1.0), count=500)  # a proven enclosure (issue 14)
    assert sub.certified and sub.epsilon_report(1e-5).bound == "upper bound"
    assert "proven enclosures" in sub.epsilon_report(1e-5).method
    laplace = FourierAccountant().compose(PoissonSubsampled(LaplaceMechanism(scale=1.0), 0.1), count=100)
    assert laplace.certified and laplace.epsilon_report(1e-5).bound == "upper bound"  # its proven enclosure
    assert "proven enclosures" in laplace.epsilon_report(1e-5).method

    class BucketedLaplace(LaplaceMechanism):  # loss buckets, but no proven characteristic function
        has_subsampled_enclosure = False

        def subsampled_loss_split(self, sampling_probability):
            return None

    bucketed = FourierAccountant().compose(PoissonSubsampled(BucketedLaplace(scale=1.0), 0.1), count=100)
    bucketed_report = bucketed.epsilon_report(1e-5)
    assert "privacy buckets" in bucketed_report.method and "only be estimated" in bucketed_report.method
    estimated = FourierAccountant().compose(PoissonSubsampled(EstimatedLaplace(scale=1.0), 0.1), count=100)
    assert not estimated.certified and estimated.epsilon_report(1e-5).bound == "estimate"
    assert "quadrature" in estimated.epsilon_report(1e-5).method


# --------------------------------------------------------------------------- invalid input
@pytest.fixture
def gaussian_accountant():
    return FourierAccountant().compose(GaussianMechanism(sigma=2.0))


@pytest.mark.parametrize("delta", [0.0, 1.0, -1e-5, 2.0, float("nan"), float("inf"), float("-inf")])
def test_bad_delta_is_a_value_error(gaussian_accountant, delta):
    for getter in (gaussian_accountant.get_epsilon, gaussian_accountant.epsilon_bounds,
                   gaussian_accountant.epsilon_report):
        with pytest.raises(ValueError, match="`delta`"):
            getter(delta)


@pytest.mark.parametrize("epsilon", [-0.1, float("nan"), float("inf"), float("-inf")])
def test_bad_epsilon_is_a_value_error(gaussian_accountant, epsilon):
    for getter in (gaussian_accountant.get_delta, gaussian_accountant.delta_bounds, gaussian_accountant.delta_report):
        with pytest.raises(ValueError, match="`epsilon`"):
            getter(epsilon)
    with pytest.raises(ValueError, match="`epsilon"):
        gaussian_accountant.privacy_profile([1.0, epsilon])


@pytest.mark.parametrize("value", ["1e-5", None, [1e-5], np.array([1e-5]), True, 1j])
def test_bad_types_are_type_errors(gaussian_accountant, value):
    with pytest.raises(TypeError, match="`delta`"):
        gaussian_accountant.get_epsilon(value)
    with pytest.raises(TypeError, match="`epsilon`"):
        gaussian_accountant.get_delta(value)


@pytest.mark.parametrize("count,exc", [(0, ValueError), (-2, ValueError), (1.0, TypeError), (True, TypeError),
                                       ("3", TypeError), (None, TypeError)])
def test_bad_count_is_refused_without_change(gaussian_accountant, count, exc):
    before = gaussian_accountant.ledger
    with pytest.raises(exc, match="`count`"):
        gaussian_accountant.compose(LaplaceMechanism(scale=1.0), count=count)
    assert gaussian_accountant.ledger == before


@pytest.mark.parametrize("mechanism", ["gaussian", 3.0, None, RDPAccountant])
def test_non_mechanisms_are_type_errors(gaussian_accountant, mechanism):
    with pytest.raises(TypeError, match="`mechanism`"):
        gaussian_accountant.compose(mechanism)
    assert not gaussian_accountant.supports(mechanism)


def test_unhashable_non_mechanism_names_the_parameter(gaussian_accountant):
    with pytest.raises(TypeError, match="`mechanism`"):
        gaussian_accountant.compose([GaussianMechanism(sigma=1.0)])


@pytest.mark.parametrize("kwargs,exc,match", [
    (dict(rtol=0.0), ValueError, "`rtol`"), (dict(rtol=-1e-3), ValueError, "`rtol`"),
    (dict(rtol=float("nan")), ValueError, "`rtol`"), (dict(rtol="1e-6"), TypeError, "`rtol`"),
    (dict(max_terms=0), ValueError, "`max_terms`"), (dict(max_terms=2.0**20), TypeError, "`max_terms`"),
])
def test_bad_constructor_arguments(kwargs, exc, match):
    with pytest.raises(exc, match=match):
        FourierAccountant(**kwargs)
    with pytest.raises(TypeError):
        FourierAccountant(1e-6)  # keyword-only


@pytest.mark.parametrize("alphas", [[-0.1], [1.5], [float("nan")], [0.2, float("nan")]])
def test_bad_alphas_are_value_errors(gaussian_accountant, alphas):
    with pytest.raises(ValueError, match="`alphas`"):
        gaussian_accountant.tradeoff_curve(alphas)


def test_log_mgf_checks_its_direction(gaussian_accountant):
    with pytest.raises(TypeError, match="`direction`"):
        gaussian_accountant.log_mgf(0.5, "add")
    with pytest.raises(ValueError, match="`s`"):
        gaussian_accountant.log_mgf([0.5, float("nan")])


@pytest.mark.parametrize("call", ["privacy_profile", "tradeoff_curve", "log_mgf"])
def test_non_numeric_grids_are_type_errors(gaussian_accountant, call):
    name = {"privacy_profile": "`epsilons`", "tradeoff_curve": "`alphas`", "log_mgf": "`s`"}[call]
    with pytest.raises(TypeError, match=name):
        getattr(gaussian_accountant, call)("abc")


def test_empty_epsilon_grid(gaussian_accountant):
    lower, estimate, upper = gaussian_accountant.privacy_profile([])
    assert lower.shape == estimate.shape == upper.shape == (0,)


def test_too_little_noise_for_fourier_is_a_clear_error_not_an_exhausted_machine():
    # Such losses need quadratures of millions of nodes; the accountant refuses before allocating them.
    from dpledger.mechanisms.errors import NumericalError

    fa = FourierAccountant()
    with pytest.raises(NumericalError, match="use RDPAccountant"):  # from compose or from the report
        fa.compose(PoissonSubsampled(GaussianMechanism(sigma=1e-6), sampling_probability=0.2), count=10)
        fa.epsilon_report(1e-5)


def test_compose_skips_the_subsampled_gaussians_probe_only_where_it_cannot_fail():
    from dpledger.mechanisms.errors import NumericalError
    from dpledger.mechanisms.subsampled import PROBE_FREE_NOISE

    # below the threshold the probe still runs and refuses at compose, as before
    with pytest.raises(NumericalError, match="use RDPAccountant"):
        FourierAccountant().compose(PoissonSubsampled(GaussianMechanism(sigma=3e-4), sampling_probability=0.2))
    # at the threshold and above, the probe it skips would have passed (the largest failing noise was ~4.3e-4)
    probe = np.array([0.5, 0.5 + 1.0j])
    assert not PoissonSubsampled(GaussianMechanism(sigma=3e-4), sampling_probability=0.2).log_mgf_defined_everywhere
    for sigma in (PROBE_FREE_NOISE, 2.0 * PROBE_FREE_NOISE):
        for q in (1e-8, 0.5, 1.0 - 1e-6):
            m = PoissonSubsampled(GaussianMechanism(sigma=sigma), sampling_probability=q)
            assert m.log_mgf_defined_everywhere
            for direction in Direction:
                assert np.all(np.isfinite(m.log_mgf(probe, direction).real))


def test_little_noise_is_answered_by_the_privacy_buckets_with_a_sound_interval():
    # sigma 1e-3: the loss of a sampled run is about mu^2 / 2 = 5e5. With 10 runs at q = 0.2, P(at least 8
    # sampled) = 7.8e-5 > 1e-5, so epsilon(1e-5) exceeds 7 such losses; Fourier inversion cannot reach it.
    fa = FourierAccountant().compose(PoissonSubsampled(GaussianMechanism(sigma=1e-3), sampling_probability=0.2), 10)
    bounds = fa.epsilon_bounds(1e-5)  # (12 s: the report's own query is not repeated; _method is what it prints)
    assert "privacy buckets" in fa._method() and fa.bound_kind == "upper bound"
    assert 7 * 5e5 < bounds.lower <= bounds.upper


def test_supports_and_compose_agree_on_mechanisms_known_through_their_dominating_mechanism():
    from dpledger.mechanisms import NoisyScreening, subsampled_screening

    screening = subsampled_screening(NoisyScreening(k=30, threshold=21.0, sigma=8.0, num_classes=10), 0.25)
    fa = FourierAccountant()
    assert fa.supports(screening) and fa.supports(screening.screening) and not fa.supports("gaussian")
    assert fa.compose(screening, count=3).get_epsilon(1e-5) == (
        FourierAccountant().compose(screening.dominating_gaussian, count=3).get_epsilon(1e-5))
