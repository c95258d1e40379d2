"""Random allocation's amplified dominating pair (AllocationPair, proven loss buckets): the exact profile of two
steps by mpmath (both directions), recorded values, properties of the bucket masses, validation."""

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dpledger.accountants import FourierAccountant
from dpledger.mechanisms import GaussianMechanism, LaplaceMechanism, RandomAllocation
from dpledger.mechanisms.allocation_pld import allocation_buckets
from dpledger.mechanisms.random_allocation import AllocationPair
from dpledger.mechanisms.relations import Direction
from tests.oracles import allocation_profile as oracle


@pytest.mark.parametrize("sigma", [1.1, 2.0])
def test_exact_profile_of_two_steps_is_inside_the_reported_interval(sigma):
    """One epoch, one of two steps: the exact delta(eps) (the larger direction) lies in the Fourier accountant's
    interval (privacy buckets of the pair), and the upper end is close (the grid's rounding)."""
    acc = FourierAccountant().compose(RandomAllocation(GaussianMechanism(sigma=sigma), steps=2), count=1)
    for eps in (0.0, 0.3, 1.0, 2.0):
        exact = max(float(oracle.delta(eps, 1.0 / sigma, True)), float(oracle.delta(eps, 1.0 / sigma, False)))
        b = acc.delta_bounds(eps)
        assert b.lower <= exact * (1 + 1e-9) + 1e-15, (eps, b, exact)
        assert exact <= b.upper, (eps, b, exact)
        assert b.upper <= exact * 1.05 + 1e-4, (eps, b, exact)


def test_each_direction_is_bracketed_by_its_own_buckets():
    """Each direction's buckets bracket that direction's exact delta (at eps = 0.5 the removal delta is 0.1198 and
    the addition one 0.1143)."""
    mu, eps = 1.0 / 1.1, 0.5
    edges = np.arange(-12.0, 12.0, 2.0**-9)
    for direction, remove in ((Direction.REMOVE, True), (Direction.ADD, False)):
        b = allocation_buckets(mu, 2, edges, remove)
        exact = float(oracle.delta(eps, mu, remove))
        # upper: every bucket's mass at its upper edge (+inf for the last); lower: the rounded-down losses
        upper = float(np.sum(b.p_upper[1:-1] * np.maximum(0.0, 1 - np.exp(eps - edges[1:]))) + b.p_upper[-1])
        lower = float(np.sum(b.down[1:-1] * np.maximum(0.0, 1 - np.exp(eps - edges[:-1]))))
        assert lower <= exact <= upper, (direction, lower, exact, upper)
        assert upper - lower < 0.01


def test_one_of_ten_steps_ten_epochs_reaches_the_published_interval():
    """Published tools give about [5.11, 5.20] (issue 19); recorded: [5.1537, 5.1603] (delta 1e-5, linear grid;
    the log grid gave [5.1107, 5.2203])."""
    acc = FourierAccountant().compose(RandomAllocation(GaussianMechanism(sigma=1.1), steps=10), count=10)
    b = acc.epsilon_bounds(1e-5)
    assert b.upper == pytest.approx(5.1603, abs=1e-3)
    assert b.lower == pytest.approx(5.1537, abs=1e-3)
    assert b.upper < 5.91  # Poisson at rate 1/10, Fourier


@settings(max_examples=15, deadline=None)
@given(sigma=st.sampled_from([0.8, 1.1, 3.0]), steps=st.sampled_from([2, 3, 5]),
       lo=st.floats(-6.0, 0.0), width=st.floats(0.5, 8.0), remove=st.booleans())
def test_bucket_masses_are_consistent(sigma, steps, lo, width, remove):
    edges = np.linspace(lo, lo + width, 64)
    b = allocation_buckets(1.0 / sigma, steps, edges, remove)
    assert np.all(b.p_lower <= b.p_upper) and np.all(b.q_lower <= b.q_upper) and np.all(b.p_lower >= 0)
    assert 1.0 - 1e-6 <= b.p_upper.sum() <= 1.0 + 1e-6
    assert b.down[1:].sum() <= 1.0
    # q = E_P[e^-L; bucket] is at most e^-(lower edge) times the P-mass of the interior buckets
    inner = slice(1, edges.size)
    assert np.all(b.q_lower[inner] <= b.p_upper[inner] * np.exp(-edges[:-1]) * (1 + 1e-9))


def test_dominating_mechanism_and_validation():
    g = GaussianMechanism(sigma=1.1)
    m = RandomAllocation(g, steps=10)
    pair = m.dominating_mechanism()
    assert pair == AllocationPair(mechanism=g, steps=10)
    assert pair.has_loss_buckets and pair.loss_is_discrete and not pair.log_mgf_is_proven
    assert np.array_equal(pair.rdp(np.array([2.0, 8.0])), m.rdp(np.array([2.0, 8.0])))
    assert math.isfinite(float(pair.log_mgf(0.5 + 1.0j, Direction.REMOVE).real))
    with pytest.raises(TypeError, match="Gaussian"):
        AllocationPair(mechanism=LaplaceMechanism(scale=1.0), steps=3)
    with pytest.raises(ValueError, match="steps"):
        AllocationPair(mechanism=g, steps=1)


def test_the_cut_holds_at_most_the_tail_and_a_low_cut_stays_proven():
    """``loss_cut`` from the pair's own atoms: the finite atoms above it hold at most the tail and the atom at it
    tips that over. A cut inside the support (mass above it sent to +inf) must still bracket the exact profile."""
    from dpledger.accountants import privacy_buckets
    from dpledger.mechanisms.allocation_pld import linear_losses, linear_step

    mu, tail = 1.0 / 1.1, 1e-9
    pair = AllocationPair(GaussianMechanism(sigma=1.1), steps=2)
    for direction, remove in ((Direction.REMOVE, True), (Direction.ADD, False)):
        cut = pair.loss_cut(direction, tail)
        loss, masses = linear_losses(mu, 2, remove, *linear_step(mu, 2))[:2]
        finite = np.isfinite(loss)
        assert masses[finite & (loss > cut)].sum() <= tail < masses[finite & (loss >= cut)].sum()

    class LowCut(AllocationPair):
        __slots__ = ()

        def loss_cut(self, direction, tail):
            return 0.2  # about a third of the removal mass lies above

    ledger = privacy_buckets.BucketLedger([(LowCut(GaussianMechanism(sigma=1.1), steps=2), 1)])
    for eps in (0.0, 0.3, 1.0):
        exact = max(float(oracle.delta(eps, mu, True)), float(oracle.delta(eps, mu, False)))
        lower, upper = ledger.delta_bounds(eps)
        assert lower <= exact * (1 + 1e-9) + 1e-15 and exact <= upper, (eps, lower, exact, upper)
