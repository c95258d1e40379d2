"""Laplace ledgers of many runs (10^4), answered by the split path (atoms enumerated, the rest inverted).

Before: ``log(expm1(n log(1 + ratio)))`` overflowed beyond 709 in the rest's transform and its decay bound (NaN
nodes, a lower end of 0: AccuracyError for Laplace x 10^4 at scale 5, any delta), and the damping floor of 0.25 sat
above the Chernoff best (about 0.12 at scale 2, delta 1e-8), where the terms' rounding was 6e-6 of delta. The rest's
nodes carry their float rounding, bounded (``LaplaceSplit.node_enclosure``): ``n`` runs of a per-run log multiply its
absolute rounding by ``n`` (40 times the inversion's per-node allowance at 10^4 runs before it was bounded).

Oracles, computed outside the suite:
* dp_accounting 0.6.0's PLD at ``value_discretization_interval = 1e-4``, ``pldm.from_laplace_mechanism(5.0,
  value_discretization_interval=1e-4, pessimistic_estimate=P).self_compose(10_000).get_epsilon_for_delta(1e-5)``:
  268.5404812176067 (optimistic) and 268.58565410936 (pessimistic);
* importance sampling of scale 2 x 10^4 (each run's loss law tilted by ``e^(0.12 l)``, 2e5 samples, seed 1; the
  estimator ``M(0.12)^n E[e^(-0.12 L) (1 - e^(eps - L))_+]``): delta(1317.5) = 1.0693e-8 +- 5.8e-11,
  delta(1318.5) = 9.3801e-9 +- 5.1e-11 (one standard error). At scale 2 the PLD above (1318.85-1318.94 at delta
  1e-8) is off by its 10^4 roundings of 1e-4, which the sampling shows: delta(1318.5) is already below 1e-8.
"""

import mpmath as mp
import numpy as np
import pytest

from dpledger.accountants import FourierAccountant
from dpledger.mechanisms import LaplaceMechanism
from dpledger.mechanisms.closed_form_enclosures import log_expm1_enclosure


def test_scale_5_at_delta_1e5_lies_inside_the_fine_pld_bracket():
    bounds = FourierAccountant().compose(LaplaceMechanism(scale=5.0), 10_000).epsilon_bounds(1e-5)
    assert bounds.upper - bounds.lower <= 1e-6 * bounds.upper
    assert 268.5404812176067 <= bounds.lower and bounds.upper <= 268.58565410936 * (1 + 1e-9)


@pytest.mark.parametrize("epsilon, sampled, error", [(1317.5, 1.0693e-8, 5.8e-11), (1318.5, 9.3801e-9, 5.1e-11)])
def test_scale_2_delta_agrees_with_importance_sampling(epsilon, sampled, error):
    bounds = FourierAccountant().compose(LaplaceMechanism(scale=2.0), 10_000).delta_bounds(epsilon)
    assert bounds.upper - bounds.lower <= 1e-6 * bounds.estimate
    assert sampled - 4 * error <= bounds.lower and bounds.upper <= sampled + 4 * error


def test_scale_2_epsilon_at_delta_1e8_is_certified():
    accountant = FourierAccountant().compose(LaplaceMechanism(scale=2.0), 10_000)
    bounds = accountant.epsilon_bounds(1e-8)
    assert bounds.upper - bounds.lower <= 1e-6 * bounds.upper and 1317.5 < bounds.lower < bounds.upper < 1318.5
    assert accountant.delta_bounds(bounds.upper).upper <= 1e-8 * (1 + 1e-9)


@pytest.mark.parametrize("real", [-30.0, -1.0, 1e-8, 0.5, 1.0, 1.0 + 1e-9, 3.0, 700.0, 800.0, 5e4])
@pytest.mark.parametrize("imag", [0.0, 1e-3, 1.0, -2.5, 40.0])
def test_log_expm1_matches_mpmath_beyond_the_float_range_of_expm1(real, imag):
    z = complex(real, imag)
    if z == 0:
        return
    got = complex(log_expm1_enclosure(np.array([z]), np.zeros(1))[0][0])
    with mp.workdps(50):
        want = mp.log(mp.expm1(mp.mpc(real, imag)))
    # the branch: imaginary parts agree modulo 2 pi
    assert abs(got.real - float(want.real)) <= 1e-14 * (abs(float(want.real)) + 1.0)
    turn = (got.imag - float(want.imag)) / (2 * np.pi)
    assert abs(turn - round(turn)) <= 1e-12 * (abs(real) + abs(imag) + 1.0)


def test_a_million_runs_contain_the_mpmath_delta():
    """Laplace scale 1 x 10^6 at epsilon 371334.5251441117: mpmath's contour integral of ``M^n`` (40 digits, two
    dampings agreeing; computed outside the suite) gives delta = 9.9999999995e-6. With the closed forms' rounding
    left out of the nodes' error (before ``node_enclosure``), the proven lower end was 1.0000000000067e-5, above it;
    with a damping floor of 0.02 (above the Chernoff best, 0.007) the honest rounding left no answer at all."""
    accountant = FourierAccountant().compose(LaplaceMechanism(scale=1.0), 10**6)
    bounds = accountant.delta_bounds(371334.5251441117)
    assert bounds.lower <= 9.99999999955e-6 and 9.99999999945e-6 <= bounds.upper
    assert bounds.upper - bounds.lower <= 1e-6 * bounds.estimate
