"""A stateful test of RDPAccountant against a plain model of its ledger."""

import numpy as np
from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

from dpledger.accountants import RDPAccountant
from dpledger.mechanisms import GaussianMechanism, LaplaceMechanism, PoissonSubsampled, RandomizedResponse

POOL = [
    PoissonSubsampled(GaussianMechanism(sigma=1.1), sampling_probability=0.01),
    PoissonSubsampled(GaussianMechanism(sigma=0.9), sampling_probability=0.05),
    GaussianMechanism(sigma=8.0),
    LaplaceMechanism(scale=30.0),
    RandomizedResponse(p=0.52),
]
ORDERS = np.array([1.5, 2.0, 3.0, 8.0, 32.0, 200.0])


class AccountantMachine(RuleBasedStateMachine):
    def __init__(self):
        super().__init__()
        self.acc = RDPAccountant()
        self.model = {}
        self.last_epsilon = 0.0

    @rule(index=st.integers(0, len(POOL) - 1), count=st.integers(1, 500))
    def compose(self, index, count):
        m = POOL[index]
        assert self.acc.compose(m, count=count) is self.acc
        self.model[m] = self.model.get(m, 0) + count

    @rule(count=st.one_of(st.integers(-3, 0), st.floats(0.5, 3.0), st.just("2")))
    def bad_compose_changes_nothing(self, count):
        before = self.acc.ledger
        try:
            self.acc.compose(POOL[0], count=count)
        except (TypeError, ValueError):
            pass
        else:
            raise AssertionError(f"count={count!r} was accepted")
        assert self.acc.ledger == before

    @precondition(lambda self: self.model)
    @rule(delta=st.sampled_from([1e-3, 1e-6, 1e-9]))
    def getters_do_not_mutate(self, delta):
        before = self.acc.ledger
        first = self.acc.get_epsilon(delta)
        assert self.acc.get_epsilon(delta) == first
        assert self.acc.ledger == before

    @invariant()
    def ledger_matches_model(self):
        assert dict(self.acc.ledger) == self.model

    @invariant()
    def rdp_is_the_weighted_sum(self):
        expected = sum((c * m.rdp(ORDERS) for m, c in self.model.items()), np.zeros(ORDERS.shape))
        np.testing.assert_allclose(self.acc.rdp(ORDERS), expected, rtol=1e-12)

    @invariant()
    def epsilon_only_grows(self):
        eps = self.acc.get_epsilon(1e-6)
        assert eps >= self.last_epsilon * (1 - 1e-9)
        self.last_epsilon = eps


AccountantMachine.TestCase.settings = settings(max_examples=15, stateful_step_count=10, deadline=None)
TestAccountantMachine = AccountantMachine.TestCase
