"""Stage-wise SVT (thesis Algorithm 12, Thms 7.2.9 / 7.2.10): optimal advanced composition against mpmath,
the smaller-of-two report, properties, validation."""

import math

import mpmath as mp
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dpledger.accountants import RDPAccountant
from dpledger.accountants.stagewise_svt import optimal_composition_epsilon, stagewise_svt_epsilon
from dpledger.mechanisms import GaussianMechanism, LaplaceMechanism, SparseVector


def _mp_delta_rr(eps, eps0, k):
    """Hockey-stick divergence of the k-fold randomized response with loss +-eps0 at eps (mpmath, exact sum)."""
    with mp.workdps(40):
        e0, q = mp.mpf(eps0), 1 / (1 + mp.exp(mp.mpf(eps0)))
        total = mp.mpf(0)
        for ell in range(k + 1):
            loss = (k - 2 * ell) * e0
            if loss > eps:
                total += mp.binomial(k, ell) * q**ell * (1 - q) ** (k - ell) * (1 - mp.exp(mp.mpf(eps) - loss))
        return total


@pytest.mark.parametrize("eps0, delta0, k, delta", [(0.05, 0.0, 100, 1e-6), (0.2, 1e-8, 30, 1e-5),
                                                    (0.0135, 1e-10, 229, 1e-6), (1.0, 0.0, 3, 0.01)])
def test_optimal_composition_meets_delta_and_is_tight(eps0, delta0, k, delta):
    eps = optimal_composition_epsilon(eps0, delta0, k, delta)
    allowed = 1 - (1 - mp.mpf(delta)) / (1 - mp.mpf(delta0)) ** k  # delta_rr allowed
    assert _mp_delta_rr(eps, eps0, k) <= allowed
    assert _mp_delta_rr(eps * (1 - 1e-5), eps0, k) > allowed * (1 - 1e-6) or eps == 0.0


def test_optimal_composition_is_below_the_dwork_rothblum_vadhan_bound():
    # Dwork, Rothblum & Vadhan 2010 (Dwork & Roth 2014, Thm 3.20): sqrt(2 k log(1/d)) eps0 + k eps0 (e^eps0 - 1)
    for eps0, k in ((0.01, 1000), (0.1, 50), (0.5, 10)):
        drv = math.sqrt(2 * k * math.log(1e6)) * eps0 + k * eps0 * math.expm1(eps0)
        assert optimal_composition_epsilon(eps0, 0.0, k, 1e-6) <= min(drv, k * eps0)


def test_optimal_composition_of_one_mechanism_is_its_epsilon():
    # one (0.3, 1e-7)-DP mechanism at delta = 1e-6: at most 0.3, a little below with the spare delta
    assert 0.3 * (1 - 1e-4) < optimal_composition_epsilon(0.3, 1e-7, 1, 1e-6) <= 0.3
    assert optimal_composition_epsilon(0.3, 1e-6, 2, 1e-6) == math.inf  # the stages' delta uses up delta


def test_stagewise_reports_the_smaller_route_with_its_name():
    lap = SparseVector(threshold=LaplaceMechanism(scale=148.5), queries=LaplaceMechanism(scale=297.0))
    few, many = stagewise_svt_epsilon(lap, 2, 1e-6), stagewise_svt_epsilon(lap, 229, 1e-6)
    for g in (few, many):
        assert g.epsilon == min(g.rdp_epsilon, g.advanced_epsilon)
        assert g.method == ("advanced" if g.advanced_epsilon < g.rdp_epsilon else "rdp")
        assert g.rdp_epsilon == RDPAccountant().compose(lap, g is few and 2 or 229).get_epsilon(1e-6)
    assert many.method == "advanced"  # sqrt(c) scaling wins for many stages (thesis Thm 7.2.9's point)
    # the per-stage guarantee and the delta split are consistent: 1 - (1 - delta')^m (1 - delta~) <= delta
    with mp.workdps(40):
        used = 1 - (1 - mp.mpf(many.stage_delta)) ** 229 * (1 - mp.mpf(many.delta_tilde))
        assert used <= mp.mpf(1e-6) * (1 + mp.mpf(1e-12))


@settings(max_examples=8, deadline=None)
@given(stages=st.integers(1, 300), extra=st.integers(1, 300))
def test_stagewise_epsilon_grows_with_the_number_of_stages(stages, extra):
    stage = SparseVector(threshold=GaussianMechanism(sigma=50.0), queries=GaussianMechanism(sigma=100.0),
                         max_length=100)
    assert stagewise_svt_epsilon(stage, stages, 1e-6).epsilon <= stagewise_svt_epsilon(stage, stages + extra,
                                                                                      1e-6).epsilon


def test_invalid_inputs():
    stage = SparseVector(threshold=LaplaceMechanism(scale=1.0), queries=LaplaceMechanism(scale=2.0))
    with pytest.raises(TypeError, match="SparseVector"):
        stagewise_svt_epsilon(LaplaceMechanism(scale=1.0), 3, 1e-6)
    with pytest.raises(ValueError, match="stages"):
        stagewise_svt_epsilon(stage, 0, 1e-6)
    with pytest.raises(ValueError, match="delta"):
        stagewise_svt_epsilon(stage, 3, 1.5)
    with pytest.raises(ValueError, match="stage_epsilon"):
        optimal_composition_epsilon(-1.0, 0.0, 3, 1e-6)
    with pytest.raises(ValueError, match="stage_delta"):
        optimal_composition_epsilon(1.0, 2.0, 3, 1e-6)
