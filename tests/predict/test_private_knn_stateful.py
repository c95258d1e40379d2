"""A stateful test of PrivateKNNClassifier: spent privacy only grows, and the ledger is exactly what was released.

Rules predict batches (possibly empty), send invalid queries (which must change nothing), refit on the same or
other data (which must not refresh the ledger) and read reports (which must not change it). A plain model
counts screenings and answers from the released labels alone.
"""

import numpy as np
from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

from dpledger.predict._common import ABSTAIN
from dpledger.predict.private_knn import PrivateKNNClassifier

RNG = np.random.default_rng(0)
CENTRES = np.array([[4.0, 0.0], [-4.0, 0.0], [0.0, 4.0]])
X = np.concatenate([RNG.normal(0.0, 1.0, (20, 2)) + c for c in CENTRES])
Y = np.repeat(np.arange(3), 20)
DELTAS = (1e-3, 1e-6)
ORDERS = np.array([1.5, 2.0, 8.0, 64.0])


class PrivateKNNMachine(RuleBasedStateMachine):
    def __init__(self):
        super().__init__()
        self.clf = PrivateKNNClassifier(k=5, sampling_probability=0.5, threshold=3.5, sigma_screen=1.5,
                                        sigma_vote=1.0, metric="euclidean", n_classes=3, random_state=0).fit(X, Y)
        self.screened = 0
        self.answered = 0
        self.last_epsilon = {d: 0.0 for d in DELTAS}
        self.last_rdp = np.zeros(ORDERS.shape)

    @rule(size=st.integers(0, 6), spread=st.sampled_from([0.0, 3.0, 8.0]), seed=st.integers(0, 2**16))
    def predict(self, size, spread, seed):
        Q = np.random.default_rng(seed).normal(0.0, spread, (size, 2)) if spread else np.zeros((size, 2))
        out = self.clf.predict(Q)
        assert out.shape == (size,) and out.dtype == np.int64
        assert ((out == ABSTAIN) | ((out >= 0) & (out < 3))).all()
        self.screened += size
        self.answered += int((out != ABSTAIN).sum())

    @rule(bad=st.sampled_from([[[np.nan, 0.0]], [[0.0, 1.0, 2.0]], [1.0, 2.0], "q"]))
    def invalid_predict_changes_nothing(self, bad):
        before = (self.clf.accountant_.ledger, self.clf.n_queries_, self.clf.n_answered_)
        try:
            self.clf.predict(bad)
        except (TypeError, ValueError):
            pass
        else:
            raise AssertionError(f"{bad!r} was accepted")
        assert (self.clf.accountant_.ledger, self.clf.n_queries_, self.clf.n_answered_) == before

    @rule(same=st.booleans())
    def refit_does_not_refresh(self, same):
        before = self.clf.accountant_.ledger
        if same:
            self.clf.fit(X, Y)
        else:
            self.clf.fit(X[::2] + 0.1, Y[::2])
        assert self.clf.accountant_.ledger == before

    @precondition(lambda self: self.screened > 0)
    @rule(delta=st.sampled_from(DELTAS))
    def report_does_not_mutate_and_only_grows(self, delta):
        before = self.clf.accountant_.ledger
        epsilon = self.clf.privacy_report(delta).epsilon
        assert epsilon >= self.last_epsilon[delta] - 1e-12 * max(1.0, epsilon)
        self.last_epsilon[delta] = epsilon
        assert self.clf.privacy_report(delta).epsilon == epsilon
        assert self.clf.accountant_.ledger == before

    @invariant()
    def counts_match_what_was_released(self):
        assert self.clf.n_queries_ == self.screened and self.clf.n_answered_ == self.answered
        expected = {}
        if self.screened:
            expected[self.clf.screening_mechanism_] = self.screened
            expected[self.clf.aggregation_mechanism_] = self.screened  # every query: the a-priori guarantee
        assert dict(self.clf.accountant_.ledger) == expected

    @invariant()
    def rdp_only_grows(self):
        rdp = np.asarray(self.clf.accountant_.rdp(ORDERS))
        assert (rdp >= self.last_rdp).all()
        self.last_rdp = rdp


TestPrivateKNNMachine = PrivateKNNMachine.TestCase
TestPrivateKNNMachine.settings = settings(max_examples=25, stateful_step_count=12, deadline=None)
