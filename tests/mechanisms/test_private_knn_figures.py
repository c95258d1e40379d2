"""Known values: the privacy figures of the Private-kNN paper (Zhu et al., CVPR 2020), recomputed.

Sources: ``/work/shared/papers/002_f59dc044678d5227.txt`` Sec 4.3 (Figure 5), Table 1 and Sec 4.1-4.2 (MNIST,
SVHN, CIFAR-10 parameters), Table 3 (multi-label). The paper's conventions (found in the authors' scripts,
github.com/jeremy43/Private_kNN ``privacy_analysis/analysis.py``: autodp ``anaRDPacct``, delta = 1e-5): classic
conversion ``eps + log(1/delta)/(alpha - 1)`` over real orders (integer orders for subsampled mechanisms), the
tight subsampling formula (thesis Thm 2.3.4) for the Gaussian and, unproven, for screening. The paper prints
truncations to two decimals (1.313 to three). Full table: ``benchmarks/results/private_knn_figures.md``.
"""

import math

import numpy as np
import pytest

from dpledger.accountants import RDPAccountant
from dpledger.mechanisms import GaussianMechanism, PoissonSubsampled, subsampled_rdp
from dpledger.mechanisms.noisy_aggregation import NoisyArgmax, TauClippedVotes
from dpledger.mechanisms.noisy_screening import NoisyScreening, subsampled_screening

DELTA = 1e-5
LOG_1_DELTA = math.log(1.0 / DELTA)
INTEGER_ORDERS = np.arange(2.0, 257.0)  # every optimum below sits between orders 5 and 40


def classic_integer(total, delta=DELTA):
    """The paper's conversion for subsampled mechanisms: integer orders (autodp's chord makes them optimal)."""
    return float(np.min(total(INTEGER_ORDERS) + math.log(1.0 / delta) / (INTEGER_ORDERS - 1.0)))


def truncate(x, digits=2):
    return math.floor(x * 10**digits) / 10**digits


def epsilon(ledger, conversion, delta=DELTA):
    acc = RDPAccountant(conversion=conversion)
    for mechanism, count in ledger:
        acc.compose(mechanism, count=count)
    return acc.get_epsilon(delta)


@pytest.fixture(scope="module")
def fig5():
    """Figure 5: 8192 queries, gamma = 0.25, sigma1 = 85, T = 210, k = 300, CIFAR-10 (c = 10)."""
    return NoisyScreening(k=300, threshold=210, sigma=85.0, num_classes=10)


# ------------------------------------------------------------------------------------------------ Figure 5
def test_figure5_gaussian_mechanism_5_67(fig5):
    """Green curve (PATE's Gaussian screening): rho + 2 sqrt(rho log(1/delta)), rho = 8192 / (2 * 85^2)."""
    rho = 8192 / (2 * 85.0**2)
    closed = rho + 2 * math.sqrt(rho * LOG_1_DELTA)
    value = epsilon([(GaussianMechanism(sigma=85.0), 8192)], "classic")
    assert closed * (1 - 1e-12) <= value <= closed * (1 + 1e-6)  # the accountant's order search, not exact
    assert truncate(value) == 5.67  # paper: 5.67 (value 5.6765)


def test_figure5_subsampled_gaussian_1_313():
    """Black dashed curve: the Poisson-subsampled Gaussian, tight (proven) bound, classic conversion."""
    value = epsilon([(PoissonSubsampled(GaussianMechanism(sigma=85.0), sampling_probability=0.25), 8192)], "classic")
    assert round(value, 3) == 1.313  # paper: 1.313 (value 1.31317)
    integer = classic_integer(lambda a: 8192 * PoissonSubsampled(GaussianMechanism(sigma=85.0),
                                                                 sampling_probability=0.25).rdp(a))
    assert integer == pytest.approx(value, abs=2e-4)  # autodp's integer orders give the same figure


def test_figure5_data_independent_screening_4_43(fig5):
    """Blue curve: Thm 9 composed 8192 times without subsampling (a proven bound)."""
    value = epsilon([(fig5, 8192)], "classic")
    assert truncate(value) == 4.43  # paper: 4.43 (value 4.4380)
    assert value == pytest.approx(4.4380, abs=2e-4)
    assert value < epsilon([(GaussianMechanism(sigma=85.0), 8192)], "classic")


def test_figure5_subsampled_screening_1_04_papers_method_and_our_proof(fig5):
    """Red curve: the paper applies thesis Thm 2.3.4's formula to the screening curve (UNPROVEN for screening:
    the Pearson-Vajda condition fails for screening pairs). Our pairwise bound (joint quasi-convexity over the
    subsamples, see SubsampledScreening) proves the same figure: 1.0420 <= the paper's 1.0422."""
    paper_method = classic_integer(
        lambda a: 8192 * np.minimum(subsampled_rdp.tight_bound(a, 0.25, fig5.rdp), fig5.rdp(a)))
    assert truncate(paper_method) == 1.04  # paper: 1.04 (value 1.0422)
    assert paper_method == pytest.approx(1.0422, abs=2e-4)
    sub = subsampled_screening(fig5, 0.25)
    proven_classic = epsilon([(sub, 8192)], "classic")
    assert proven_classic <= epsilon([(sub.dominating_gaussian, 8192)], "classic")
    assert proven_classic <= paper_method
    assert truncate(proven_classic) == 1.04
    assert proven_classic == pytest.approx(1.0420, abs=2e-4)  # this library; benchmarks/results


def test_figure5_our_proven_epsilon_with_the_improved_conversion(fig5):
    sub = subsampled_screening(fig5, 0.25)
    ours = epsilon([(sub, 8192)], "improved")
    assert ours <= epsilon([(sub.dominating_gaussian, 8192)], "improved")
    assert ours == pytest.approx(0.8481, abs=2e-4)  # this library, recorded in the benchmark's results
    # Thm 2.3.1 alone (uncapped) is very loose at gamma = 0.25: about 10, as issue 4 says
    general = classic_integer(lambda a: 8192 * subsampled_rdp.general_bound(a, 0.25, fig5.rdp))
    assert 9.0 < general < 12.0


# ------------------------------------------------------------------------------------------------ Table 1
@pytest.mark.parametrize(
    "sigma2,q,answered,paper",
    [(20.0, 0.2, 3877, 2.92), (25.0, 0.15, 735, 0.47)],  # CIFAR-10 (Sec 4.2), MNIST (Sec 4.1)
)
def test_table1_epsilons_are_below_the_cost_of_the_answered_queries_alone(sigma2, q, answered, paper):
    """Not reproduced: even the aggregation alone with the most favourable sensitivity 1 costs more than the
    paper's total, so these figures do not follow from a data-independent analysis of the stated parameters."""
    floor = classic_integer(
        lambda a: answered * PoissonSubsampled(GaussianMechanism(sigma=sigma2), sampling_probability=q).rdp(a))
    assert floor > paper + 0.25


def test_table1_cifar10_proven_epsilon():
    """CIFAR-10: K = 300, T = 210, sigma1 = 85, sigma2 = 20, p = 0.2, 18,000 screened, 3,877 answered, delta
    1e-5 (paper: 2.92, not reproduced). Proven here, aggregation on a fresh subsample (DESIGN.md rule 6)."""
    s = NoisyScreening(k=300, threshold=210, sigma=85.0, num_classes=10)
    ledger = [(subsampled_screening(s, 0.2), 18000),
              (PoissonSubsampled(NoisyArgmax(sigma=20.0), sampling_probability=0.2), 3877)]
    classic, improved = epsilon(ledger, "classic"), epsilon(ledger, "improved")
    assert classic == pytest.approx(4.8284, abs=2e-3)
    assert improved == pytest.approx(4.2880, abs=2e-3)
    assert improved < classic


def test_table1_svhn_stated_parameters_give_less_than_the_paper():
    """SVHN: k = 800, T = 480, sigma1 = 200, sigma2 = 60, gamma = 0.03, 6000 screened, 2939 answered
    (paper 0.49, not reproduced: the stated parameters give about 0.21 even at delta 1e-6)."""
    s = NoisyScreening(k=800, threshold=480, sigma=200.0, num_classes=10)
    ledger = [(subsampled_screening(s, 0.03), 6000),
              (PoissonSubsampled(NoisyArgmax(sigma=60.0), sampling_probability=0.03), 2939)]
    value = epsilon(ledger, "classic", delta=1e-6)
    assert value == pytest.approx(0.2083, abs=2e-3)
    assert value < 0.49


# ------------------------------------------------------------------------------------------------ Table 3
TABLE3 = [  # k, sigma, gamma, queries, delta, paper, our proven (classic)
    (800, 50.0, 0.05, 800, 1e-6, 1.24, 0.6796),
    (800, 100.0, 0.10, 800, 1e-6, 1.20, 0.6757),
    (300, 100.0, 0.05, 1200, 1e-5, 0.67, 0.3760),
    (300, 100.0, 0.10, 1200, 1e-5, 1.38, 0.7578),
]


@pytest.mark.parametrize("k,sigma,q,n,delta,paper,ours", TABLE3)
def test_table3_matched_by_sensitivity_eight_and_our_proven_values(k, sigma, q, n, delta, paper, ours):
    """Table 3 (tau = 10): matched within 0.03 by a subsampled Gaussian of L2 sensitivity 8 (no stated
    convention gives 8); our proven value (Thm 13: sensitivity sqrt(2 tau)) is smaller."""
    at8 = classic_integer(
        lambda a: n * PoissonSubsampled(GaussianMechanism(sigma=sigma, sensitivity=8.0), sampling_probability=q).rdp(a),
        delta)
    assert abs(at8 - paper) < 0.03
    proven = epsilon([(PoissonSubsampled(TauClippedVotes(sigma=sigma, tau=10.0), sampling_probability=q), n)],
                     "classic", delta=delta)
    assert proven == pytest.approx(ours, abs=1e-3)
    assert proven < paper
