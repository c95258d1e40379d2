"""FourierAccountant essentials: the analytic Gaussian, brackets, Fourier <= RDP, refusals and bad input."""

import numpy as np
import pytest

from dpledger.accountants import FourierAccountant, RDPAccountant
from dpledger.mechanisms import (
    CustomRDPMechanism,
    GaussianMechanism,
    LaplaceMechanism,
    MissingCapabilityError,
    PoissonSubsampled,
    RandomizedResponse,
    ZCDPMechanism,
)
from tests.mechanisms._shared import EstimatedLaplace
from tests.oracles.analytic_gaussian import composed_mu, gaussian_delta_float, gaussian_epsilon_float


@pytest.mark.parametrize("delta", [1e-3, 1e-6, 1e-9, 1e-12])
def test_gaussian_composition_equals_the_analytic_gaussian(delta):
    exact = gaussian_epsilon_float(delta, composed_mu(30.0, count=240))
    bounds = FourierAccountant().compose(GaussianMechanism(sigma=30.0), count=240).epsilon_bounds(delta)
    assert bounds.lower <= exact * (1 + 1e-12) and exact <= bounds.upper * (1 + 1e-15)
    assert bounds.upper == pytest.approx(exact, rel=1e-6)


def test_published_check_sigma_30():
    # sigma = 30 composed 240 times, delta = 1e-10: epsilon 3.207781, where RDP gives about 3.3567.
    fa = FourierAccountant().compose(GaussianMechanism(sigma=30.0), count=240)
    assert round(fa.get_epsilon(1e-10), 6) == 3.207781
    assert RDPAccountant().compose(GaussianMechanism(sigma=30.0), count=240).get_epsilon(1e-10) > 3.35


@pytest.mark.parametrize("epsilon", [0.0, 0.5, 2.0, 5.0])
def test_heterogeneous_gaussian_deltas_are_bracketed(epsilon):
    fa = FourierAccountant().compose(GaussianMechanism(sigma=2.0), count=3).compose(GaussianMechanism(sigma=5.0))
    mu = np.sqrt(3 / 4.0 + 1 / 25.0)
    exact = gaussian_delta_float(epsilon, mu)
    bounds = fa.delta_bounds(epsilon)
    assert bounds.lower <= exact <= bounds.upper
    assert bounds.upper == pytest.approx(exact, rel=1e-6, abs=1e-300)


@pytest.mark.parametrize("q,sigma,count", [(0.01, 1.1, 1000), (0.1, 2.0, 50), (0.3, 5.0, 20)])
def test_fourier_never_above_rdp_for_the_same_ledger(q, sigma, count):
    m = PoissonSubsampled(GaussianMechanism(sigma=sigma), sampling_probability=q)
    fourier = FourierAccountant().compose(m, count=count).epsilon_bounds(1e-5)
    rdp = RDPAccountant().compose(m, count=count).get_epsilon(1e-5)
    assert fourier.lower <= fourier.estimate <= fourier.upper <= rdp


def test_epsilon_delta_round_trip():
    fa = FourierAccountant().compose(PoissonSubsampled(GaussianMechanism(sigma=1.0), sampling_probability=0.05), 200)
    eps = fa.get_epsilon(1e-6)
    assert fa.get_delta(eps) <= 1e-6 * (1 + 1e-9)
    assert fa.get_delta(eps * (1 - 1e-4)) > 1e-6


def test_monotone_in_count_and_noise():
    m = lambda s: PoissonSubsampled(GaussianMechanism(sigma=s), sampling_probability=0.02)  # noqa: E731
    e1 = FourierAccountant().compose(m(1.0), count=100).get_epsilon(1e-5)
    e2 = FourierAccountant().compose(m(1.0), count=200).get_epsilon(1e-5)
    e3 = FourierAccountant().compose(m(1.5), count=200).get_epsilon(1e-5)
    assert e1 < e2 and e3 < e2


def test_randomized_response_with_a_gaussian_against_exact_enumeration():
    # k runs of RR(p) with one Gaussian(sigma): the loss is a binomial lattice plus a Gaussian; delta is an
    # exact finite sum of Gaussian-profile terms (remove direction; the pair is symmetric, so add is equal).
    p, k, sigma, epsilon = 0.6, 5, 2.0, 1.0
    e = np.log(p / (1 - p))
    mu = 1.0 / sigma
    from scipy.stats import binom, norm

    delta = 0.0
    for j in range(k + 1):  # j outcomes with loss +e
        shift = (2 * j - k) * e
        eps_eff = epsilon - shift  # E[(1 - e^(eps - shift - G))_+] for G ~ N(mu^2/2, mu^2)
        term = norm.cdf(mu / 2 - eps_eff / mu) - np.exp(eps_eff) * norm.cdf(-mu / 2 - eps_eff / mu)
        delta += binom.pmf(j, k, p) * term
    fa = FourierAccountant().compose(RandomizedResponse(p=p), count=k).compose(GaussianMechanism(sigma=sigma))
    bounds = fa.delta_bounds(epsilon)
    assert bounds.lower <= delta * (1 + 1e-12) and delta <= bounds.upper * (1 + 1e-12)
    assert bounds.upper == pytest.approx(delta, rel=1e-6)


def test_report_says_whether_the_bound_is_proven():
    closed = FourierAccountant().compose(GaussianMechanism(sigma=2.0), count=3)
    assert closed.certified and closed.epsilon_report(1e-5).bound == "upper bound"
    sub = FourierAccountant().compose(PoissonSubsampled(GaussianMechanism(sigma=1.0), sampling_probability=0.05), 500)
    assert sub.certified and sub.epsilon_report(1e-5).bound == "upper bound"  # proven enclosure (issue 14)
    laplace = FourierAccountant().compose(PoissonSubsampled(EstimatedLaplace(scale=1.0), 0.1), count=100)
    assert not laplace.certified and laplace.epsilon_report(1e-5).bound == "estimate"


def test_pure_dp_cap_and_empty_ledger():
    fa = FourierAccountant().compose(LaplaceMechanism(scale=2.0), count=4)
    assert fa.get_delta(2.0) == 0.0
    assert FourierAccountant().get_epsilon(1e-5) == 0.0


@pytest.mark.parametrize("mechanism", [ZCDPMechanism(rho=0.1), CustomRDPMechanism(lambda a: a / 8.0)])
def test_mechanisms_without_a_dominating_pair_are_refused_before_any_change(mechanism):
    fa = FourierAccountant().compose(GaussianMechanism(sigma=2.0))
    before = fa.ledger
    assert not fa.supports(mechanism)
    with pytest.raises(MissingCapabilityError):
        fa.compose(mechanism)
    assert fa.ledger == before


def test_accuracy_that_cannot_be_met_says_what_was_tried():
    # the split's rest cannot reach rtol 1e-12 on 64 nodes: the privacy buckets answer, and the report says why
    fa = FourierAccountant(rtol=1e-12, max_terms=64).compose(LaplaceMechanism(scale=1.0), count=3)
    tight = FourierAccountant().compose(LaplaceMechanism(scale=1.0), count=3).epsilon_bounds(1e-5)
    bounds = fa.epsilon_bounds(1e-5)
    assert max(bounds.lower, tight.lower) <= min(bounds.upper, tight.upper)  # both proven: they overlap
    assert "Fourier inversion cannot reach" in fa.epsilon_report(1e-5).method


@pytest.mark.parametrize("bad,exc,match", [
    (dict(delta=0.0), ValueError, "`delta`"), (dict(delta=float("nan")), ValueError, "`delta`"),
    (dict(delta="1e-5"), TypeError, "`delta`"), (dict(epsilon=-1.0), ValueError, "`epsilon`"),
])
def test_bad_input(bad, exc, match):
    fa = FourierAccountant().compose(GaussianMechanism(sigma=2.0))
    with pytest.raises(exc, match=match):
        if "delta" in bad:
            fa.get_epsilon(bad["delta"])
        else:
            fa.get_delta(bad["epsilon"])
    with pytest.raises(ValueError, match="`rtol`"):
        FourierAccountant(rtol=0.0)
    with pytest.raises(ValueError, match="`count`"):
        fa.compose(GaussianMechanism(sigma=1.0), count=0)
