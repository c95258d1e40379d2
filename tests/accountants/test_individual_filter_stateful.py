"""A stateful test of IndividualRenyiFilter against a plain per-record model.

Invariants checked after every step: no spend ever exceeds the budget (up to the documented tolerance
B * RTOL), spends never decrease, refused or invalid charges change nothing, retired and removed records are
never admitted again (their spend is frozen), save-restore keeps every spend, flag and the guarantee, and the
guarantee never changes, whatever the number of charges.
"""

import io

import numpy as np
from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, precondition, rule

from dpledger.accountants.individual_filter import RTOL, IndividualRenyiFilter

DELTA = 1e-6


class FilterMachine(RuleBasedStateMachine):
    @initialize(
        budget=st.sampled_from([0.05, 1.0, 3.7]),
        n=st.integers(0, 8),
        accounting=st.sampled_from(["rdp", "gdp"]),
    )
    def start(self, budget, n, accounting):
        self.f = IndividualRenyiFilter(budget, n, accounting=accounting)
        self.budget = budget
        self.spent = [0.0] * n
        self.retired = [False] * n
        self.removed = [False] * n
        self.frozen = {}  # index -> spend when it became inactive
        self.guarantee = self.f.guarantee(DELTA)

    # ------------------------------------------------------------------ helpers
    def _active(self, i):
        return not (self.retired[i] or self.removed[i])

    def _freeze(self):
        for i in range(len(self.spent)):
            if not self._active(i) and i not in self.frozen:
                self.frozen[i] = self.spent[i]

    def _snapshot(self):
        return self.f.spent, self.f.retired, self.f.removed

    def _unchanged(self, snap):
        for a, b in zip(snap, self._snapshot()):
            np.testing.assert_array_equal(a, b)

    # -------------------------------------------------------------------- rules
    @precondition(lambda self: any(not r for r in self.removed))
    @rule(data=st.data())
    def charge(self, data):
        candidates = [i for i in range(len(self.spent)) if not self.removed[i]]
        idx = data.draw(st.lists(st.sampled_from(candidates), min_size=1, max_size=len(candidates), unique=True))
        remaining = self.f.remaining
        kinds = data.draw(
            st.lists(
                st.sampled_from(["zero", "exact", "over", "fraction", "tiny"]), min_size=len(idx), max_size=len(idx)
            )
        )
        amounts = []
        for i, kind in zip(idx, kinds):
            if kind == "zero":
                amounts.append(0.0)
            elif kind == "exact":
                amounts.append(float(remaining[i]))
            elif kind == "over":
                amounts.append(float(remaining[i]) + self.budget * 1e-9)
            elif kind == "tiny":
                amounts.append(self.budget * 1e-13)
            else:
                amounts.append(data.draw(st.floats(0.0, 1.0)) * self.budget)
        admitted = self.f.admit(np.array(idx), np.array(amounts))
        assert admitted.dtype == np.bool_ and admitted.shape == (len(idx),)
        for k, (i, a) in enumerate(zip(idx, amounts)):
            expected = self._active(i) and self.spent[i] + a <= self.budget * (1.0 + RTOL)
            assert bool(admitted[k]) == expected, (i, a, self.spent[i], self._active(i))
            if kinds[k] == "exact" and self._active(i):
                assert admitted[k]  # a charge equal to what is left is admitted ...
            if expected:
                self.spent[i] += a
                if self.spent[i] >= self.budget * (1.0 - RTOL):
                    self.retired[i] = True
            if kinds[k] == "exact" and expected:
                assert self.retired[i]  # ... and retires the record
        self._freeze()

    @precondition(lambda self: len(self.spent) > 0)
    @rule(data=st.data(), kind=st.sampled_from(["duplicate", "nan", "negative", "removed", "range", "float"]))
    def invalid_charge_changes_nothing(self, data, kind):
        n = len(self.spent)
        i = data.draw(st.integers(0, n - 1))
        snap = self._snapshot()
        indices, amounts = [i], [0.0]
        if kind == "duplicate":
            indices, amounts = [i, i], [0.0, 0.0]
        elif kind == "nan":
            amounts = [float("nan")]
        elif kind == "negative":
            amounts = [-self.budget]
        elif kind == "removed":
            if not self.removed[i]:
                return
        elif kind == "range":
            indices = [n]
        else:
            indices = [float(i)]
        try:
            self.f.admit(indices, amounts)
        except (TypeError, ValueError):
            pass
        else:
            raise AssertionError(f"invalid charge ({kind}) was accepted")
        self._unchanged(snap)

    @precondition(lambda self: len(self.spent) > 0)
    @rule(data=st.data())
    def retire(self, data):
        idx = data.draw(st.lists(st.integers(0, len(self.spent) - 1), max_size=3))
        self.f.retire(idx)
        for i in idx:
            self.retired[i] = True
        self._freeze()

    @precondition(lambda self: len(self.spent) > 0)
    @rule(data=st.data())
    def remove(self, data):
        idx = data.draw(st.lists(st.integers(0, len(self.spent) - 1), max_size=3))
        self.f.remove(idx)
        for i in idx:
            self.removed[i] = True
        self._freeze()

    @rule(n=st.integers(0, 4))
    def add(self, n):
        start = len(self.spent)
        new = self.f.add(n)
        assert new.tolist() == list(range(start, start + n))
        self.spent += [0.0] * n
        self.retired += [False] * n
        self.removed += [False] * n

    @rule(through_file=st.booleans())
    def save_and_restore(self, through_file):
        state = self.f.state_dict()
        if through_file:  # plain values survive numpy's own file format (no pickle)
            buffer = io.BytesIO()
            np.savez(buffer, **state)
            buffer.seek(0)
            with np.load(buffer, allow_pickle=False) as loaded:
                state = {key: loaded[key] for key in loaded.files}
        restored = IndividualRenyiFilter.from_state_dict(state)
        for name in ("spent", "retired", "removed", "remaining", "active"):
            np.testing.assert_array_equal(getattr(restored, name), getattr(self.f, name))
        assert restored.guarantee(DELTA) == self.guarantee
        self.f = restored

    # --------------------------------------------------------------- invariants
    @invariant()
    def matches_model(self):
        np.testing.assert_array_equal(self.f.spent, np.array(self.spent, dtype=np.float64))
        assert self.f.retired.tolist() == self.retired
        assert self.f.removed.tolist() == self.removed
        assert self.f.n_records == len(self.spent)

    @invariant()
    def remaining_is_positive_exactly_for_active_records(self):
        idx = np.arange(len(self.spent))
        remaining = self.f.remaining_at(idx)
        np.testing.assert_array_equal(remaining > 0, self.f.active)
        np.testing.assert_array_equal(remaining, self.f.remaining)
        np.testing.assert_array_equal(self.f.spent_at(idx), self.f.spent)

    @invariant()
    def no_spend_exceeds_the_budget(self):
        spent = self.f.spent
        assert np.all(spent >= 0.0) and np.all(spent <= self.budget * (1.0 + RTOL))
        assert np.all(self.f.remaining >= 0.0) and np.all(self.f.remaining[~self.f.active] == 0.0)

    @invariant()
    def inactive_records_are_frozen(self):
        for i, value in self.frozen.items():
            assert self.f.spent[i] == value and not self.f.active[i]

    @invariant()
    def guarantee_never_changes(self):
        assert self.f.guarantee(DELTA) == self.guarantee
        eps = self.f.individual_epsilons(DELTA)
        assert eps.shape == (len(self.spent),) and np.all(eps <= self.guarantee.epsilon)


FilterMachine.TestCase.settings = settings(max_examples=30, stateful_step_count=25, deadline=None)
TestFilterMachine = FilterMachine.TestCase
