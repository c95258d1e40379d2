"""Stateful machine (issue 13 item 10): no sequence of fit, refit, add, remove, predict and save/restore lowers
what any record identity has spent, and no spend exceeds the budget."""

import pickle

import numpy as np
from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, rule

from dpledger.accountants.individual_filter import RTOL
from dpledger.predict.identity import fingerprints
from dpledger.predict.ind_knn import IndKNNClassifier
from dpledger.predict.neighbours import prepare_points

RNG = np.random.default_rng(0)
POOL_X = RNG.normal(size=(30, 3)).astype(np.float32)
POOL_Y = RNG.integers(0, 3, 30)
POOL_FP = [f.tobytes() for f in fingerprints(prepare_points(POOL_X, "cosine"), POOL_Y)]
QUERIES = RNG.normal(size=(40, 3)).astype(np.float32)


class IdentityMachine(RuleBasedStateMachine):
    def __init__(self):
        super().__init__()
        self.clf = IndKNNClassifier(epsilon=0.3, delta=1e-5, tau=0.3, sigma_vote=0.4, n_queries=5, min_count=3,
                                    n_classes=3,
                                    random_state=1).fit(POOL_X[:15], POOL_Y[:15])
        self.rows = list(range(15))  # pool index of each row the classifier holds
        self.seen = {}  # identity -> largest spend observed

    def _observe(self):
        for row, spent in zip(self.rows, self.clf.filter_.spent):
            key = POOL_FP[row]
            self.seen[key] = max(self.seen.get(key, 0.0), float(spent))

    @rule(start=st.integers(0, 39), n=st.integers(1, 8))
    def predict(self, start, n):
        self.clf.predict(QUERIES[start : start + n])
        self._observe()

    @rule(subset=st.lists(st.integers(0, 29), min_size=3, max_size=20, unique=True))
    def refit(self, subset):
        self._observe()
        self.clf.fit(POOL_X[subset], POOL_Y[subset])
        self.rows = list(subset)

    @rule(extra=st.lists(st.integers(0, 29), min_size=1, max_size=4))
    def add(self, extra):
        self._observe()
        self.clf.add(POOL_X[extra], POOL_Y[extra])
        self.rows += list(extra)

    @rule(data=st.data())
    def remove(self, data):
        present = np.flatnonzero(~self.clf.filter_.removed)
        if present.size:
            self._observe()
            self.clf.remove([int(data.draw(st.sampled_from(present.tolist())))])

    @rule()
    def save_and_restore(self):
        self._observe()
        state = pickle.loads(pickle.dumps(self.clf.state_dict()))
        self.clf = IndKNNClassifier().load_state_dict(state)

    @invariant()
    def no_identity_ever_spends_less_and_none_exceeds_the_budget(self):
        spent = self.clf.filter_.spent
        for row, s in zip(self.rows, spent):
            assert s >= self.seen.get(POOL_FP[row], 0.0)
        assert (spent <= self.clf.budget_ * (1 + RTOL)).all()
        assert len(self.rows) == self.clf.filter_.n_records


TestIdentityMachine = IdentityMachine.TestCase
TestIdentityMachine.settings = settings(max_examples=20, stateful_step_count=15, deadline=None)
