"""Two-point ledgers with a tail group (accountants.two_point_ledger): the group with the most runs, where it has
many or the outcomes exceed MAX_ATOMS, is summed through its tail sums. Its intervals contain the exact profile
(mpmath, every outcome enumerated at 50 digits), agree with the full enumeration, and the accountant certifies
ledgers it left to the privacy buckets."""

import itertools
import math

import mpmath
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dpledger.accountants import FourierAccountant, two_point_ledger
from dpledger.accountants.report import BoundKind
from dpledger.accountants.two_point_ledger import MAX_ATOMS, TwoPointLedger, enumerated_outcomes
from dpledger.mechanisms import PoissonSubsampled, PureDPMechanism, RandomizedResponse


def _exact_delta(groups, epsilon):
    """``sum_j P_j (1 - e^(eps - l_j))_+`` at 50 digits, every outcome enumerated; ``groups`` as
    ``((l1, l0, P1), n)``, ``P0 = 1 - P1`` exactly."""
    with mpmath.workdps(50):
        per_group = []
        for (l1, l0, p1), n in groups:
            p0 = 1 - mpmath.mpf(p1)
            per_group.append([(j * mpmath.mpf(l1) + (n - j) * mpmath.mpf(l0),
                               mpmath.binomial(n, j) * mpmath.mpf(p1) ** j * mpmath.mpf(p0) ** (n - j))
                              for j in range(n + 1)])
        total = mpmath.mpf(0)
        eps = mpmath.mpf(epsilon)
        for combo in itertools.product(*per_group):
            loss = sum(c[0] for c in combo)
            if loss > eps:
                total += mpmath.fprod(c[1] for c in combo) * (1 - mpmath.exp(eps - loss))
        return total


def _forced(build):
    """``(full, split)``: ``build()`` with every outcome enumerated, and with the tail group (MAX_ATOMS one below
    the ledger's full product of outcomes)."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(two_point_ledger, "TAIL_MIN_RUNS", 1 << 40)
        full = build()
        patch.setattr(two_point_ledger, "MAX_ATOMS", full.loss.size - 1)
        split = build()
    assert full._tail is None and split._tail is not None
    return full, split


@settings(max_examples=25, deadline=None)
@given(st.lists(st.tuples(st.floats(-2.0, 2.0), st.floats(-2.0, 2.0), st.floats(0.01, 0.99), st.integers(1, 12)),
                min_size=2, max_size=3),
       st.floats(-1.0, 1.0))
def test_the_tail_group_contains_the_exact_profile(specs, where):
    # asymmetric two-point groups (l1, l0 with masses p, 1 - p: a sub-probability pair is not needed here)
    groups = [((l1, l0, math.log(p), math.log1p(-p)), n) for l1, l0, p, n in specs]
    full, split = _forced(lambda: TwoPointLedger(atoms=groups))
    span = sum(n * max(abs(l1), abs(l0)) for l1, l0, _, n in specs)
    epsilon = where * span
    exact = _exact_delta([((l1, l0, p), n) for l1, l0, p, n in specs], epsilon)
    for ledger in (full, split):
        b = ledger.delta_bounds(epsilon)
        assert b.lower <= exact <= b.upper, (specs, epsilon, b, exact)
        # tight: relative to delta, up to the losses' rounding slack (a few ulps of the largest composed loss)
        assert b.upper - b.lower <= 1e-9 * float(exact) + 1e-13 * (span + 1.0)


@pytest.mark.parametrize("epsilon", [0.0, 0.3, 2.0, 7.5, 11.0])
def test_symmetric_groups_contain_the_exact_profile_far_in_the_tail(epsilon):
    # randomized response: +-E with P(+E) = 1 / (1 + e^-E); at epsilon 11 delta is ~1e-14 (the far tail sums)
    es, ns = np.array([0.9, 0.35]), np.array([9, 14])
    full, split = _forced(lambda: TwoPointLedger(es, ns))
    with mpmath.workdps(50):  # P(+E) = 1 / (1 + e^-E) exactly (the ledger's log-masses are within a few ulps)
        exact = _exact_delta([((e, -e, 1 / (1 + mpmath.exp(-mpmath.mpf(e)))), int(n)) for e, n in zip(es, ns)],
                             epsilon)
    for ledger in (full, split):
        b = ledger.delta_bounds(epsilon)
        assert b.lower <= exact <= b.upper
        assert b.upper - b.lower <= 1e-9 * float(exact)


def test_single_large_groups_take_the_tail_sums_and_contain_the_exact_profile():
    # one group of 200 runs (at least TAIL_MIN_RUNS): no enumeration at all, the group's tail sums only
    ledger = TwoPointLedger([0.4], [200])
    assert ledger._tail is not None and ledger.loss.size == 1
    for epsilon in (0.0, 5.0, 20.0, 40.0):
        exact = _exact_delta([((0.4, -0.4, 1 / (1 + mpmath.exp(-mpmath.mpf(0.4)))), 200)], epsilon)
        b = ledger.delta_bounds(epsilon)
        assert b.lower <= exact <= b.upper and b.upper - b.lower <= 1e-9 * float(exact)


def test_enumerated_outcomes_leaves_out_the_largest_group_only_beyond_the_limit():
    assert enumerated_outcomes([3, 4]) == 20.0
    assert enumerated_outcomes([4711, 1666]) == 1667.0
    assert enumerated_outcomes([5161, 291, 1]) == 292.0 * 2.0
    assert enumerated_outcomes([5000, 5000, 5000]) > MAX_ATOMS
    with pytest.raises(ValueError, match="composed outcomes even without the largest group"):
        TwoPointLedger([0.1, 0.2, 0.3], [5000, 5000, 5000])


def test_ledgers_beyond_the_limit_are_certified_to_rtol():
    """Found by a random sweep: randomized response x 4,711 and x 1,666 (7.9 million outcomes) went to the privacy
    buckets: [12394.47, 12406.02] at delta 1e-5 and AccuracyError at 1e-8. Now exact; the result lies in the
    buckets' proven interval."""
    acc = FourierAccountant()
    acc.compose(RandomizedResponse(p=0.929826758567122), 4711).compose(RandomizedResponse(p=0.8118133129419176), 1666)
    b = acc.epsilon_bounds(1e-5)
    assert acc.bound_kind is BoundKind.UPPER
    assert 12394.466865956347 <= b.lower <= b.upper <= 12406.022016990104
    assert b.upper - b.lower <= 1e-6 * b.upper
    tight = acc.epsilon_bounds(1e-8)
    assert tight.upper - tight.lower <= 1e-6 * tight.upper and tight.lower > b.upper


def test_asymmetric_ledgers_beyond_the_limit_are_certified_to_rtol():
    # Poisson-subsampled randomized response (asymmetric atoms, both directions) with pure DP: 3,001 x 1,001 outcomes
    acc = FourierAccountant()
    acc.compose(PoissonSubsampled(RandomizedResponse(p=0.6), 0.01), 3000).compose(PureDPMechanism(epsilon=0.05), 1000)
    b = acc.epsilon_bounds(1e-6)
    assert acc.bound_kind is BoundKind.UPPER
    assert b.upper - b.lower <= 1e-6 * b.upper
    # each direction's profile is a max of proven intervals: the delta there brackets 1e-6
    d = acc.delta_bounds(b.upper)
    assert d.upper <= 1e-6 * (1.0 + 1e-9)


def test_field_names_are_checked():
    with pytest.raises(ValueError, match="'upper', 'lower' or 'estimate'"):
        TwoPointLedger([0.3], [10]).field(1.0, "middle")
