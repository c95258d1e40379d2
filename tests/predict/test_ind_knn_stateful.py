"""Stateful test of IndKNNClassifier: random interleavings of queries, additions, removals and save/restore.

The model is :class:`tests.predict.test_ind_knn.ReferenceIndKNN` (one query at a time, float64) fed the same
operations; after every step the classifier must agree with it, and the privacy invariants must hold: no spend
above B, spends never decrease, removed records never pay again, retired records stay retired, the guarantee
never changes, nothing is refreshed by a save and restore.
"""

import pickle

import numpy as np
from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, rule

from dpledger.accountants.individual_filter import RTOL
from dpledger.predict.ind_knn import IndKNNClassifier
from tests.predict.test_ind_knn import MARGIN, ReferenceIndKNN

D, C, TAU = 3, 3, 0.6


class IndKNNMachine(RuleBasedStateMachine):
    @initialize(seed=st.integers(0, 2**32 - 1), n=st.integers(3, 25), reuse=st.booleans(),
                epsilon=st.sampled_from([0.1, 0.5, 2.0]), kernel=st.sampled_from(["cosine", "rbf"]),
                block=st.integers(1, 8))
    def start(self, seed, n, reuse, epsilon, kernel, block):
        self.rng = np.random.default_rng(seed)
        self.centres = self.rng.normal(size=(C, D)) * 2
        X, y = self._draw(n)
        nu = 2.0 if kernel == "rbf" else None
        params = dict(epsilon=epsilon, delta=1e-5, tau=TAU, sigma_vote=0.4, n_queries=6, min_count=4, n_classes=C)
        self.clf = IndKNNClassifier(kernel=kernel, nu=nu, reuse_predictions=reuse, block_size=block,
                                    random_state=seed, **params).fit(X, y)
        self.ref = ReferenceIndKNN(X, y, kernel=kernel, nu=nu, reuse=reuse, seed=seed, **params)
        self.report = self.clf.privacy_report(1e-5)
        self.last_spent = self.clf.filter_.spent
        self.removed_spent = {}
        self.retired = self.clf.filter_.retired
        self.queries = 0

    def _draw(self, n):
        y = self.rng.integers(0, C, n)
        return (self.centres[y] + 0.7 * self.rng.normal(size=(n, D))).astype(np.float32), y

    def _far_from_tau(self, Q):
        pts = list(self.ref.X) + [p for p, _ in self.ref.public] + [np.asarray(q, np.float64) for q in Q]
        return all(abs(self.ref.kappa(x, np.asarray(q, np.float64)) - TAU) > MARGIN for q in Q for x in pts)

    @rule(m=st.integers(1, 6))
    def predict(self, m):
        Q, _ = self._draw(m)
        if not self._far_from_tau(Q):
            return  # a float32 / float64 tie at the threshold: skip this draw
        np.testing.assert_array_equal(self.clf.predict(Q), self.ref.predict(Q))
        self.queries += m

    @rule(m=st.integers(0, 5))
    def add(self, m):
        X, y = self._draw(m)
        start = self.clf.filter_.n_records
        assert self.clf.add(X, y).tolist() == list(range(start, start + m))
        self.ref.add(X, y)
        self.last_spent = np.concatenate([self.last_spent, np.zeros(m)])
        self.retired = np.concatenate([self.retired, np.zeros(m, dtype=bool)])

    @rule(data=st.data())
    def remove(self, data):
        n = self.clf.filter_.n_records
        idx = data.draw(st.lists(st.integers(0, n - 1), max_size=3, unique=True))
        self.clf.remove(idx)
        self.ref.remove(idx)
        for i in idx:
            self.removed_spent.setdefault(i, self.clf.filter_.spent[i])

    @rule()
    def save_and_restore(self):
        state = pickle.loads(pickle.dumps(self.clf.state_dict()))
        self.clf = IndKNNClassifier().load_state_dict(state)

    @invariant()
    def agrees_with_reference(self):
        np.testing.assert_allclose(self.clf.filter_.spent, self.ref.spent, rtol=1e-6, atol=1e-12)
        np.testing.assert_array_equal(self.clf.filter_.retired, self.ref.retired)
        np.testing.assert_array_equal(self.clf.filter_.removed, self.ref.removed)

    @invariant()
    def the_filter_is_the_only_owner_of_budgets(self):
        """Everything the classifier reports about spends is the filter's state, read through its public methods."""
        f = self.clf.filter_
        spent = f.spent
        n = f.n_records
        # no copy of the spends or of the flags lives on the classifier (the median audit's sorted multiset of
        # spends is checked against the filter below)
        for name, value in vars(self.clf).items():
            array = isinstance(value, np.ndarray) and value.dtype in (np.float64, np.bool_) and value.shape == (n,)
            if name != "_sorted_spend" and array and n:
                assert not (np.array_equal(value, spent) or np.array_equal(value, f.active)), name
        idx = np.arange(n)
        np.testing.assert_array_equal(f.spent_at(idx), spent)
        np.testing.assert_array_equal(f.remaining_at(idx) > 0, f.active)
        np.testing.assert_array_equal(self.clf.individual_epsilons(1e-5), f.individual_epsilons(1e-5))
        assert self.clf.n_retired_ == int(f.retired.sum())
        state = self.clf.state_dict()
        np.testing.assert_array_equal(state["filter"]["spent"], spent)
        # the median audit replays the filter's spends: after a flush it holds exactly the present records' spends
        self.clf.median_epsilon_history(1e-5)
        np.testing.assert_array_equal(self.clf._sorted_spend, np.sort(spent[~f.removed]))

    @invariant()
    def budgets_hold(self):
        spent = self.clf.filter_.spent
        assert np.all(spent <= self.clf.budget_ * (1 + RTOL))
        assert np.all(spent >= self.last_spent)
        for i, s in self.removed_spent.items():
            assert spent[i] == s
        retired = self.clf.filter_.retired
        assert np.all(retired[self.retired])
        self.last_spent, self.retired = spent, retired

    @invariant()
    def guarantee_and_counters(self):
        assert self.clf.privacy_report(1e-5) == self.report
        assert self.clf.n_queries_ == self.clf.n_answered_ == self.queries
        hist = self.clf.median_epsilon_history(1e-5)
        assert hist.shape == (self.queries,)
        assert np.all(hist <= self.report.epsilon + 1e-9)


IndKNNMachine.TestCase.settings = settings(max_examples=15, stateful_step_count=10, deadline=None)
TestIndKNNStateful = IndKNNMachine.TestCase
