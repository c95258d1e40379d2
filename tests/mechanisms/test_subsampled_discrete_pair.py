"""Poisson-subsampled discrete pairs (PoissonSubsampled over a DiscretePairMechanism): again pairs on the base's
finitely many outcomes, priced exactly. Before, they were labelled "estimate" and raised AccuracyError after 4-10 s
(red5 finding 2); now proven, through the privacy buckets alone or the inversion of mixed ledgers.

Oracles: tests/oracles/privacy_profiles.py's exact compositions of discrete pairs (mpmath, every multinomial count)
on the subsampled pairs written out ``((1 - q) Q + q P, Q)`` and ``(Q, (1 - q) Q + q P)`` (thesis Thm 3.3.5), and
with a Gaussian (its profile at any real argument)."""

import math

import mpmath as mp
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dpledger.accountants import FourierAccountant
from dpledger.accountants.report import BoundKind
from dpledger.mechanisms import GaussianMechanism, PoissonSubsampled
from dpledger.mechanisms.custom_pairs import DiscretePairMechanism
from dpledger.mechanisms.relations import Direction
from tests.oracles import privacy_profiles as profiles

P, Q = [0.5, 0.3, 0.2], [0.2, 0.3, 0.5]


def _pairs(p, q, g):
    """The remove and add pairs of the subsampled discrete pair, as tuples of outcomes ``(P-mass, Q-mass)``."""
    with mp.workdps(40):
        mix = [(1 - mp.mpf(g)) * mp.mpf(b) + mp.mpf(g) * mp.mpf(a) for a, b in zip(p, q)]
        q_ = [mp.mpf(b) for b in q]
        return tuple(zip(mix, q_)), tuple(zip(q_, mix))


def _mechanism(p, q, g):
    return PoissonSubsampled(DiscretePairMechanism(np.log(p), np.log(q)), g)


@settings(max_examples=25, deadline=None)
@given(st.lists(st.floats(0.05, 1.0), min_size=2, max_size=4), st.data(), st.floats(1e-3, 0.9),
       st.floats(-0.9, 3.0), st.floats(-200.0, 200.0), st.sampled_from([Direction.REMOVE, Direction.ADD]))
def test_enclosure_contains_the_exact_transform(weights, data, g, kappa, v, direction):
    others = data.draw(st.lists(st.floats(0.05, 1.0), min_size=len(weights), max_size=len(weights)))
    p = np.array(weights) / sum(weights)
    q = np.array(others) / sum(others)
    mechanism = _mechanism(p, q, g)
    s = np.array([kappa + 1j * v])
    value, log_err = mechanism.log_mgf_enclosure(s, direction)
    remove, add = _pairs(p, q, g)
    pair = remove if direction is Direction.REMOVE else add
    with mp.workdps(40):
        z = mp.mpc(kappa, v)
        exact = mp.fsum(a * mp.exp(z * mp.log(a / b)) for a, b in pair)
        assert abs(exact - mp.exp(mp.mpc(value[0].real, value[0].imag))) <= mp.exp(log_err[0])


@pytest.mark.parametrize("count", [1, 2, 4])
@pytest.mark.parametrize("epsilon", [0.05, 0.3, 1.0])
def test_delta_contains_the_exact_profile(count, epsilon):
    accountant = FourierAccountant().compose(_mechanism(P, Q, 0.2), count)
    bounds = accountant.delta_bounds(epsilon)
    assert accountant.bound_kind is BoundKind.UPPER
    exact = max(profiles.discrete_profile(epsilon, [(pair, count)]) for pair in _pairs(P, Q, 0.2))
    assert bounds.lower <= exact <= bounds.upper


def test_epsilon_is_proven_and_answers_at_once():
    accountant = FourierAccountant().compose(_mechanism(P, Q, 0.05), 100)
    bounds = accountant.epsilon_bounds(1e-5)
    assert accountant.bound_kind is BoundKind.UPPER
    assert 0.0 < bounds.lower <= bounds.upper < 2.0
    assert "privacy buckets" in accountant.epsilon_report(1e-5).method


@pytest.mark.parametrize("epsilon", [0.5, 1.5])
def test_with_a_gaussian_the_inversion_is_proven(epsilon):
    accountant = FourierAccountant().compose(_mechanism(P, Q, 0.2), 3).compose(GaussianMechanism(sigma=2.0), 1)
    bounds = accountant.delta_bounds(epsilon)
    assert accountant.bound_kind is BoundKind.UPPER
    assert bounds.upper - bounds.lower <= 1e-6 * bounds.upper
    exact = max(profiles.gaussian_mixture_profile(epsilon, 0.5, [(pair, 3)]) for pair in _pairs(P, Q, 0.2))
    assert bounds.lower <= exact <= bounds.upper


def test_an_outcome_only_the_record_produces_is_charged_as_delta():
    # q_3 = 0: that outcome's mass is charged as delta (DiscretePairMechanism.approximate; not amplified by the
    # subsampling), so no epsilon reaches delta 1e-5, and at a large epsilon the exact delta, 1 - (1 - g p_3)^10 =
    # 1 - 0.99^10 (some run hits the outcome with the record), lies in the interval
    mechanism = PoissonSubsampled(DiscretePairMechanism(np.log(P), np.array([math.log(0.5), math.log(0.5),
                                                                             -math.inf])), 0.05)
    accountant = FourierAccountant().compose(mechanism, 10)
    assert accountant.epsilon_bounds(1e-5).upper == math.inf
    bounds = accountant.delta_bounds(50.0)
    assert bounds.lower <= 1.0 - 0.99**10 <= bounds.upper
