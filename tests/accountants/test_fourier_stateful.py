"""A stateful test of FourierAccountant against a plain model of its ledger.

Invariants: the ledger is the model (equal mechanisms merged, in first-composed order), compose is transactional
(refused mechanisms and counts change nothing), getters and reports do not mutate and are repeatable, the
composed log MGF is the count-weighted sum of the mechanisms' log MGFs, epsilon only grows as runs are added, and
the certified interval always contains the estimate. The pool is closed-form (Gaussians keep every inversion
cheap; randomized responses and pure DP exercise the two-point paths) plus mechanisms that must be refused.
"""

import numpy as np
from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, rule

from dpledger.accountants import FourierAccountant
from dpledger.mechanisms import (
    CustomRDPMechanism,
    GaussianMechanism,
    LaplaceMechanism,
    MissingCapabilityError,
    PureDPMechanism,
    RandomizedResponse,
    ZCDPMechanism,
)
from dpledger.mechanisms.relations import Direction

POOL = [
    GaussianMechanism(sigma=8.0),
    GaussianMechanism(sigma=3.0, sensitivity=0.5),
    RandomizedResponse(p=0.55),
    PureDPMechanism(epsilon=0.1),
    LaplaceMechanism(scale=20.0),
]
REFUSED = [ZCDPMechanism(rho=0.1), CustomRDPMechanism(lambda a: a / 8.0), RandomizedResponse(p=1.0)]
S = np.array([0.5, 1.0 + 2.0j, 3.0 - 0.5j])


class FourierLedgerMachine(RuleBasedStateMachine):
    def __init__(self):
        super().__init__()
        self.acc = FourierAccountant()
        self.model = {}
        self.last_epsilon = 0.0

    @initialize(count=st.integers(1, 50))
    def start_with_a_gaussian(self, count):
        # Laplace losses have atoms: without a Gaussian their characteristic function does not decay and the
        # default rtol cannot be certified (test_fourier_accountant.py covers that limit).
        self.compose(0, count)

    @rule(index=st.integers(0, len(POOL) - 1), count=st.integers(1, 200))
    def compose(self, index, count):
        m = POOL[index]
        assert self.acc.compose(m, count=count) is self.acc
        self.model[m] = self.model.get(m, 0) + count

    @rule(index=st.integers(0, len(REFUSED) - 1), count=st.integers(1, 5))
    def refused_mechanism_changes_nothing(self, index, count):
        before = self.acc.ledger
        assert not self.acc.supports(REFUSED[index])
        try:
            self.acc.compose(REFUSED[index], count=count)
        except MissingCapabilityError:
            pass
        else:
            raise AssertionError(f"{REFUSED[index]!r} was accepted")
        assert self.acc.ledger == before

    @rule(count=st.one_of(st.integers(-3, 0), st.floats(0.5, 3.0), st.just("2"), st.booleans()))
    def bad_count_changes_nothing(self, count):
        before = self.acc.ledger
        try:
            self.acc.compose(POOL[0], count=count)
        except (TypeError, ValueError):
            pass
        else:
            raise AssertionError(f"count={count!r} was accepted")
        assert self.acc.ledger == before

    @rule(delta=st.sampled_from([1e-3, 1e-6, 1e-9]), epsilon=st.sampled_from([0.0, 0.5, 2.0]))
    def getters_do_not_mutate(self, delta, epsilon):
        before = self.acc.ledger
        first = (self.acc.epsilon_bounds(delta), self.acc.delta_bounds(epsilon))
        self.acc.epsilon_report(delta)
        self.acc.delta_report(epsilon)
        self.acc.supports(REFUSED[0])
        self.acc.log_mgf(S, Direction.ADD)
        assert (self.acc.epsilon_bounds(delta), self.acc.delta_bounds(epsilon)) == first
        assert self.acc.ledger == before

    @invariant()
    def ledger_matches_model(self):
        assert self.acc.ledger == tuple(self.model.items())

    @invariant()
    def log_mgf_is_the_weighted_sum(self):
        for direction in Direction:
            expected = sum((c * m.log_mgf(S, direction) for m, c in self.model.items()), np.zeros(S.shape, complex))
            np.testing.assert_allclose(np.exp(self.acc.log_mgf(S, direction) - 10), np.exp(expected - 10),
                                       rtol=1e-11, atol=0)

    @invariant()
    def epsilon_only_grows_and_is_bracketed(self):
        b = self.acc.epsilon_bounds(1e-6)
        assert 0.0 <= b.lower <= b.estimate <= b.upper
        # the exact epsilon grows; the certified upper value is within rtol (1e-6) of it
        assert b.upper >= self.last_epsilon * (1 - 2e-6)
        self.last_epsilon = b.upper


FourierLedgerMachine.TestCase.settings = settings(max_examples=8, stateful_step_count=6, deadline=None)
TestFourierLedgerMachine = FourierLedgerMachine.TestCase
