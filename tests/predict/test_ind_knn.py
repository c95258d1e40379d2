"""Tests of IndKNNClassifier (Ind-KNN Algorithm 3 with the intended clipping, prediction reuse, LSH search).

Kinds:
* equivalence: the blocked implementation against :class:`ReferenceIndKNN`, a one-query-at-a-time float64 loop
  written from Algorithm 3 and papers/README.md, under the same random_state (labels exactly equal, spends to
  rounding);
* privacy properties (hypothesis): no spend above B; unselected records charged exactly zero; selection does
  not depend on other records; pure-noise answers do not depend on the data; the guarantee does not depend on
  the number of queries; reuse never charges; removed records never contribute; save and restore keep spends;
* known values: the default sigma1 (supplement Sec 3), the budget from the filter;
* validation messages.
"""

import functools
import math
import pickle

import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from dpledger.accountants.individual_filter import RTOL, budget_for
from dpledger.predict._common import NotFittedError
from dpledger.predict.ind_knn import IndKNNClassifier

cached_budget = functools.lru_cache(maxsize=64)(budget_for)
MARGIN = 1e-5  # float32 kernels vs the float64 reference: draws with a kernel value this close to tau are skipped


class ReferenceIndKNN:
    """Ind-KNN written the straightforward way: one query at a time, one record at a time, float64.

    Noise: query t uses the t-th group of ``1 + c`` standard normals of
    ``Generator(PCG64(SeedSequence(seed).spawn(2)[0]))`` (first the count's, then the votes').
    """

    def __init__(self, X, y, *, epsilon, delta, tau, sigma_vote, sigma_count=None, n_queries=1000, min_count=30,
                 kernel="cosine", nu=None, reuse=False, n_classes=None, seed=0):
        self.B = cached_budget(epsilon, delta)
        self.s1 = sigma_count if sigma_count is not None else math.sqrt(n_queries / (6 * self.B))
        self.s2, self.tau, self.min_count = sigma_vote, tau, min_count
        self.kernel, self.nu, self.reuse = kernel, nu, reuse
        self.X = [np.asarray(x, dtype=np.float64) for x in X]
        self.y = [int(v) for v in y]
        self.c = n_classes if n_classes is not None else max(self.y) + 1
        self.spent = [0.0] * len(self.X)
        self.retired = [False] * len(self.X)
        self.removed = [False] * len(self.X)
        self.public = []
        self.rng = np.random.Generator(np.random.PCG64(np.random.SeedSequence(seed).spawn(2)[0]))

    def kappa(self, x, q):
        if self.kernel == "cosine":
            return min(max(float(x @ q / (np.linalg.norm(x) * np.linalg.norm(q))), 0.0), 1.0)
        return math.exp(-float(((x - q) ** 2).sum()) / self.nu**2)

    def kernels(self, q):
        return [self.kappa(x, q) for x in self.X]

    def add(self, X, y):
        for x, v in zip(X, y):
            self.X.append(np.asarray(x, dtype=np.float64))
            self.y.append(int(v))
            self.spent.append(0.0)
            self.retired.append(False)
            self.removed.append(False)

    def remove(self, indices):
        for i in indices:
            self.removed[i] = True

    def _pay(self, i, amount):
        self.spent[i] += amount
        if self.spent[i] >= self.B * (1 - RTOL):
            self.retired[i] = True

    def predict_one(self, q):
        q = np.asarray(q, dtype=np.float64)
        noise = self.rng.standard_normal(1 + self.c)
        selected = [i for i, k in enumerate(self.kernels(q))
                    if not self.retired[i] and not self.removed[i] and k >= self.tau]
        count = 0.0
        still = []
        for i in selected:  # noisy count; a record that cannot pay 1/(2 s1^2) pays what is left and retires
            z = self.B - self.spent[i]
            full = 1.0 / (2 * self.s1**2)
            if z > full:
                count += 1.0
                self._pay(i, full)
                still.append(i)
            else:
                count += self.s1 * math.sqrt(2 * z)
                self._pay(i, z)
                self.retired[i] = True
        pub = [(self.kappa(p, q), label) for p, label in self.public] if self.reuse else []
        pub = [(k, label) for k, label in pub if k >= self.tau]
        K = max(count + len(pub) + self.s1 * noise[0], self.min_count)
        votes = np.zeros(self.c)
        for i in still:  # kernel-weighted votes, clipped so the charge fits the remaining budget
            z = self.B - self.spent[i]
            if self.retired[i]:
                continue
            f = min(self.kappa(self.X[i], q), self.s2 * math.sqrt(2 * K * z))
            self._pay(i, f * f / (2 * self.s2**2 * K))
            votes[self.y[i]] += f
        for k, label in pub:
            votes[label] += k
        votes += self.s2 * math.sqrt(K) * noise[1:]
        label = int(np.argmax(votes))
        if self.reuse:
            self.public.append((q, label))
        return label

    def predict(self, Q):
        return np.array([self.predict_one(q) for q in Q], dtype=np.int64)


def blobs(seed, n, m, d, c, spread=0.6):
    """Private records around c centres, queries near them (so neighbourhoods are dense)."""
    rng = np.random.default_rng(seed)
    centres = rng.normal(size=(c, d)) * 2
    y = rng.integers(0, c, n)
    X = centres[y] + spread * rng.normal(size=(n, d))
    yq = rng.integers(0, c, m)
    Q = centres[yq] + spread * rng.normal(size=(m, d))
    return X.astype(np.float32), y, Q.astype(np.float32)


def far_from_tau(ref, Q, tau, extra=()):
    """True when no kernel value between the queries and the records / earlier queries is within MARGIN of tau."""
    pts = list(ref.X) + [np.asarray(q, dtype=np.float64) for q in extra]
    return all(abs(ref.kappa(x, np.asarray(q, dtype=np.float64)) - tau) > MARGIN for q in Q for x in pts)


settings_small = settings(max_examples=20, deadline=None)

equivalence_cases = st.tuples(
    st.integers(0, 2**32 - 1),            # seed
    st.integers(5, 40),                   # n
    st.integers(1, 25),                   # queries
    st.sampled_from(["cosine", "rbf"]),
    st.floats(0.3, 0.9),                  # tau
    st.sampled_from([0.1, 0.5, 2.0]),     # epsilon (small: many retire)
    st.sampled_from([0.2, 1.0]),          # sigma2
    st.sampled_from([1, 5, 30]),          # min_count
    st.booleans(),                        # reuse
    st.integers(1, 9),                    # block size
)


@settings_small
@given(equivalence_cases)
def test_blocked_equals_one_query_at_a_time_reference(case):
    seed, n, m, kernel, tau, epsilon, sigma2, min_count, reuse, block = case
    X, y, Q = blobs(seed, n, m, 3, 3)
    nu = 2.0 if kernel == "rbf" else None
    params = dict(epsilon=epsilon, delta=1e-5, tau=tau, sigma_vote=sigma2, n_queries=5, min_count=min_count)
    ref = ReferenceIndKNN(X, y, kernel=kernel, nu=nu, reuse=reuse, n_classes=3, seed=seed, **params)
    assume(far_from_tau(ref, Q, tau, extra=Q if reuse else ()))
    clf = IndKNNClassifier(kernel=kernel, nu=nu, reuse_predictions=reuse, n_classes=3, block_size=block,
                           random_state=seed, **params).fit(X, y)
    got = np.concatenate([clf.predict(Q[: m // 2]), clf.predict(Q[m // 2:])])  # two calls: state carries over
    want = ref.predict(Q)
    np.testing.assert_array_equal(got, want)
    np.testing.assert_allclose(clf.filter_.spent, ref.spent, rtol=1e-6, atol=1e-12)
    np.testing.assert_array_equal(clf.filter_.retired, ref.retired)
    assert clf.n_queries_ == clf.n_answered_ == m


@settings(max_examples=10, deadline=None)
@given(st.integers(0, 2**32 - 1), st.booleans())
def test_lsh_with_many_tables_equals_exact(seed, reuse):
    X, y, Q = blobs(seed, 60, 15, 4, 3)
    params = dict(epsilon=0.5, delta=1e-5, tau=0.6, sigma_vote=0.5, n_queries=10, min_count=5, n_classes=3,
                  reuse_predictions=reuse, random_state=seed)
    exact = IndKNNClassifier(**params).fit(X, y)
    lsh = IndKNNClassifier(search="lsh", lsh_tables=80, lsh_bits=1, **params).fit(X, y)
    assume(len(lsh.search_.candidates(Q)[0]) == 60)
    np.testing.assert_array_equal(lsh.predict(Q), exact.predict(Q))
    np.testing.assert_allclose(lsh.filter_.spent, exact.filter_.spent, rtol=1e-6)


@settings_small
@given(st.integers(0, 2**32 - 1), st.sampled_from([0.05, 0.3, 1.0]), st.sampled_from(["cosine", "rbf"]),
       st.booleans())
def test_no_spend_exceeds_budget_and_unselected_pay_nothing(seed, epsilon, kernel, reuse):
    X, y, Q = blobs(seed, 40, 30, 3, 3)
    nu = 2.0 if kernel == "rbf" else None
    clf = IndKNNClassifier(epsilon=epsilon, delta=1e-5, kernel=kernel, nu=nu, tau=0.7, sigma_vote=0.3, n_queries=4,
                           min_count=3,
                           reuse_predictions=reuse, n_classes=3, random_state=seed).fit(X, y)
    ref = ReferenceIndKNN(X, y, epsilon=epsilon, delta=1e-5, tau=0.7, sigma_vote=0.3, kernel=kernel, nu=nu)
    assume(far_from_tau(ref, Q, 0.7))
    clf.predict(Q)
    spent = clf.filter_.spent
    assert np.all(spent <= clf.budget_ * (1 + RTOL))
    ever = np.array([any(ref.kappa(x, q) >= 0.7 for q in Q.astype(np.float64)) for x in ref.X])
    assert np.all(spent[~ever] == 0.0)  # exactly zero
    assert np.all(spent[ever] > 0.0)
    assert clf.n_retired_ == int(clf.filter_.retired.sum())
    assert np.all(clf.filter_.retired == (spent >= clf.budget_ * (1 - RTOL)))


@settings(max_examples=15, deadline=None)
@given(st.integers(0, 2**32 - 1), st.integers(1, 30))
def test_selection_does_not_depend_on_other_records(seed, n_extra):
    """With budgets that never run out, the records charged are those with kappa >= tau, with or without others."""
    X, y, Q = blobs(seed, 30, 8, 3, 2)
    extra, y_extra, _ = blobs(seed + 1, n_extra, 1, 3, 2)
    params = dict(epsilon=50.0, delta=1e-5, tau=0.8, sigma_vote=3.0, sigma_count=3.0, min_count=3, n_classes=2)
    a = IndKNNClassifier(random_state=seed, **params).fit(X, y)
    b = IndKNNClassifier(random_state=seed + 7, **params).fit(np.concatenate([X, extra]), np.concatenate([y, y_extra]))
    a.predict(Q)
    b.predict(Q)
    assert a.n_retired_ == 0
    np.testing.assert_array_equal(a.filter_.spent > 0, b.filter_.spent[:30] > 0)
    c = IndKNNClassifier(random_state=seed, **params).fit(np.concatenate([X, extra]), np.concatenate([y, y_extra]))
    c.remove(np.arange(30, 30 + n_extra))
    np.testing.assert_array_equal(c.predict(Q), IndKNNClassifier(random_state=seed, **params).fit(X, y).predict(Q))


@settings(max_examples=15, deadline=None)
@given(st.integers(0, 2**32 - 1), st.integers(0, 2**32 - 1))
def test_query_without_selected_record_is_pure_noise(seed, data_seed):
    """No record reaches tau: the answers are the same function of the noise whatever the data set."""
    X1, y1, _ = blobs(data_seed, 20, 1, 3, 4)
    X2 = -np.abs(X1) - 1.0  # another data set, all far from the queries
    y2 = (y1 + 1) % 4
    Q = np.abs(np.random.default_rng(seed).normal(size=(40, 3))).astype(np.float32) + 1.0
    X1 = -np.abs(X1) - 1.0
    params = dict(epsilon=1.0, delta=1e-5, tau=0.5, sigma_vote=1.0, n_queries=10, n_classes=4, random_state=seed)
    a = IndKNNClassifier(**params).fit(X1, y1).predict(Q)
    b = IndKNNClassifier(**params).fit(X2, y2).predict(Q)
    np.testing.assert_array_equal(a, b)
    ref = ReferenceIndKNN(X1, y1, epsilon=1.0, delta=1e-5, tau=0.5, sigma_vote=1.0, n_queries=10, n_classes=4,
                          seed=seed)
    np.testing.assert_array_equal(a, ref.predict(Q))


def test_pure_noise_answers_are_not_a_fixed_label():
    X = -np.ones((5, 2), dtype=np.float32)
    Q = np.ones((400, 2), dtype=np.float32)
    clf = IndKNNClassifier(epsilon=1.0, delta=1e-5, tau=0.5, n_classes=4, random_state=1).fit(X, np.zeros(5, dtype=int))
    counts = np.bincount(clf.predict(Q), minlength=4)
    assert np.all(counts > 60), counts  # each about 100 of 400 (binomial sd 8.7)
    assert np.all(clf.filter_.spent == 0.0)


def test_guarantee_does_not_depend_on_number_of_queries():
    X, y, Q = blobs(0, 50, 60, 3, 3)
    clf = IndKNNClassifier(epsilon=1.0, delta=1e-5,
                           tau=0.6, sigma_vote=0.5, n_queries=20, n_classes=3, random_state=0).fit(X, y)
    before = clf.privacy_report(1e-5)
    clf.predict(Q)
    clf.predict(Q)
    after = clf.privacy_report(1e-5)
    assert before == after
    assert after.epsilon <= 1.0 and after.epsilon > 0.999
    assert after.bound == "upper bound"
    eps = clf.individual_epsilons(1e-5)
    assert eps.shape == (50,) and np.all(eps <= after.epsilon + 1e-9)
    assert clf.n_retired_ > 0


def test_reuse_never_charges():
    """Queries far from every record but close to each other: only public points vote, nothing is charged."""
    X = -np.ones((10, 3), dtype=np.float32)
    rng = np.random.default_rng(0)
    Q = (np.ones((50, 3)) + 0.01 * rng.normal(size=(50, 3))).astype(np.float32)
    clf = IndKNNClassifier(epsilon=0.5, delta=1e-5, tau=0.5, sigma_vote=0.05, n_classes=3, reuse_predictions=True,
                           min_count=1,
                           random_state=3, block_size=7).fit(X, np.zeros(10, dtype=int))
    out = clf.predict(Q)
    assert np.all(clf.filter_.spent == 0.0)
    assert clf.filter_.n_records == 10
    assert np.all(out[5:] == out[0])  # the public votes dominate the noise once released
    assert clf._public_y.shape == (50,)


@settings(max_examples=10, deadline=None)
@given(st.integers(0, 2**32 - 1))
def test_removed_records_never_contribute(seed):
    X, y, Q = blobs(seed, 40, 20, 3, 3)
    params = dict(epsilon=0.5, delta=1e-5, tau=0.6, sigma_vote=0.5, n_queries=10, min_count=5, n_classes=3)
    ref = ReferenceIndKNN(X, y, seed=seed, **params)
    assume(far_from_tau(ref, Q, 0.6))
    clf = IndKNNClassifier(random_state=seed, **params).fit(X, y)
    gone = np.arange(0, 40, 3)
    np.testing.assert_array_equal(clf.predict(Q[:10]), ref.predict(Q[:10]))
    spent_before = clf.filter_.spent[gone]
    clf.remove(gone)
    ref.remove(gone)
    np.testing.assert_array_equal(clf.predict(Q[10:]), ref.predict(Q[10:]))
    np.testing.assert_array_equal(clf.filter_.spent[gone], spent_before)
    np.testing.assert_allclose(clf.filter_.spent, ref.spent, rtol=1e-6)
    # removed from the start: the same answers and spends as never having had them
    keep = np.setdiff1d(np.arange(40), gone)
    a = IndKNNClassifier(random_state=seed, **params).fit(X, y)
    a.remove(gone)
    b = IndKNNClassifier(random_state=seed, **params).fit(X[keep], y[keep])
    np.testing.assert_array_equal(a.predict(Q), b.predict(Q))
    np.testing.assert_allclose(a.filter_.spent[keep], b.filter_.spent, rtol=1e-12)
    assert np.all(a.filter_.spent[gone] == 0.0)


@settings(max_examples=10, deadline=None)
@given(st.integers(0, 2**32 - 1), st.sampled_from(["exact", "lsh"]), st.booleans())
def test_save_restore_keeps_spends_and_continues_identically(seed, search, reuse):
    X, y, Q = blobs(seed, 40, 24, 3, 3)
    params = dict(epsilon=0.3, delta=1e-5, tau=0.6, sigma_vote=0.5, n_queries=10, min_count=5, n_classes=3,
                  search=search, lsh_tables=4, lsh_bits=2, reuse_predictions=reuse, random_state=seed)
    clf = IndKNNClassifier(**params).fit(X, y)
    clf.predict(Q[:12])
    clf.remove([1, 2])
    clf.add(X[:3] + 0.01, y[:3])
    state = pickle.loads(pickle.dumps(clf.state_dict()))
    spent = clf.filter_.spent
    restored = IndKNNClassifier().load_state_dict(state)
    np.testing.assert_array_equal(restored.filter_.spent, spent)
    np.testing.assert_array_equal(restored.filter_.removed, clf.filter_.removed)
    assert restored.get_params() == clf.get_params()
    np.testing.assert_array_equal(restored.predict(Q[12:]), clf.predict(Q[12:]))
    np.testing.assert_array_equal(restored.filter_.spent, clf.filter_.spent)
    np.testing.assert_allclose(restored.median_epsilon_history(1e-5), clf.median_epsilon_history(1e-5))
    assert restored.n_queries_ == clf.n_queries_ == 24
    assert np.all(restored.filter_.spent >= spent)  # nothing was refreshed


def test_add_gives_fresh_budgets_to_new_records_only():
    X, y, Q = blobs(1, 30, 40, 3, 2)
    clf = IndKNNClassifier(epsilon=0.2, delta=1e-5,
                           tau=0.5, sigma_vote=0.5, n_queries=5, n_classes=2, random_state=0).fit(X, y)
    clf.predict(Q)
    assert clf.n_retired_ > 0
    new = clf.add(X[:5] + 0.01, y[:5])  # new records
    assert new.tolist() == [30, 31, 32, 33, 34]
    assert np.all(clf.filter_.spent[new] == 0.0) and np.all(clf.filter_.active[new])
    clf.predict(Q[:5])
    assert clf.filter_.spent[new].max() > 0.0
    # the same content again (issue 13 item 2): it starts from what its identity spent, never from zero
    again = clf.add(X[:5], y[:5])
    np.testing.assert_array_equal(clf.filter_.spent[again], clf.filter_.spent[:5])


def test_median_epsilon_history_matches_spends():
    X, y, Q = blobs(2, 31, 25, 3, 3)
    clf = IndKNNClassifier(epsilon=1.0, delta=1e-5,
                           tau=0.6, sigma_vote=0.4, n_queries=10, n_classes=3, random_state=0).fit(X, y)
    spends = []
    for q in Q:
        clf.predict(q[None, :])
        spends.append(clf.filter_.spent)
    clf.remove([0])
    clf.add(X[:2], y[:2])
    clf.predict(Q[:3])
    hist = clf.median_epsilon_history(1e-5)
    assert hist.shape == (28,)
    from dpledger.accountants.individual_conversions import rdp_epsilon

    for t, s in enumerate(spends):  # 31 records: the median is the 16th smallest spend
        np.testing.assert_allclose(hist[t], rdp_epsilon(np.median(s), 1e-5)[0], rtol=1e-12)
    s = clf.filter_.spent[~clf.filter_.removed]  # 32 records now: mean of the two middle conversions
    lo, hi = np.sort(s)[15], np.sort(s)[16]
    np.testing.assert_allclose(hist[-1], 0.5 * (rdp_epsilon(lo, 1e-5)[0] + rdp_epsilon(hi, 1e-5)[0]), rtol=1e-12)
    assert np.all(np.diff(hist[:25]) >= 0)
    np.testing.assert_allclose(np.median(clf.individual_epsilons(1e-5)[~clf.filter_.removed]), hist[-1], rtol=1e-12)


def test_default_sigma1_and_budget():
    X, y, _ = blobs(0, 10, 1, 2, 2)
    clf = IndKNNClassifier(epsilon=1.0, delta=1e-5, n_queries=600, n_classes=2).fit(X, y)
    assert clf.budget_ == budget_for(1.0, 1e-5)
    assert clf.sigma_count_ == pytest.approx(math.sqrt(600 / (6 * clf.budget_)), rel=1e-15)  # supplement Sec 3
    assert IndKNNClassifier(epsilon=1.0, delta=1e-5, sigma_count=2.5, n_classes=2).fit(X, y).sigma_count_ == 2.5
    gdp = IndKNNClassifier(epsilon=1.0, delta=1e-5, accounting="gdp", n_classes=2).fit(X, y)
    assert gdp.budget_ > clf.budget_ and gdp.privacy_report(1e-5).epsilon <= 1.0


def test_blocking_and_call_splitting_do_not_change_outputs():
    X, y, Q = blobs(4, 200, 60, 5, 4)
    params = dict(epsilon=0.5, delta=1e-5, tau=0.5, sigma_vote=0.5, n_queries=30, reuse_predictions=True,
                  n_classes=4, random_state=11)
    a = IndKNNClassifier(block_size=1, **params).fit(X, y).predict(Q)
    b = IndKNNClassifier(block_size=256, **params).fit(X, y).predict(Q)
    c_clf = IndKNNClassifier(block_size=7, **params).fit(X, y)
    c = np.concatenate([c_clf.predict(Q[i:i + 13]) for i in range(0, 60, 13)])
    np.testing.assert_array_equal(a, b)
    np.testing.assert_array_equal(a, c)


def test_not_fitted_and_validation():
    clf = IndKNNClassifier()
    for call in (lambda: clf.predict([[1.0]]), lambda: clf.privacy_report(1e-5), lambda: clf.state_dict()):
        with pytest.raises(NotFittedError, match="not fitted yet"):
            call()
    X, y, _ = blobs(0, 10, 1, 2, 2)
    cases = [
        (dict(epsilon=0.0), ValueError, r"`epsilon` of IndKNNClassifier must be in \(0.0, inf\)"),
        (dict(delta=1.0), ValueError, r"`delta` of IndKNNClassifier must be in \(0.0, 1.0\)"),
        (dict(tau=0.0), ValueError, r"`tau` of IndKNNClassifier must be in \(0, 1\]"),
        (dict(kernel="rbf"), TypeError, "`nu` of IndKNNClassifier must be a positive real"),
        (dict(kernel="linear"), ValueError, "`kernel` of IndKNNClassifier must be one of"),
        (dict(sigma_vote=-1.0), ValueError, "`sigma_vote` of IndKNNClassifier must be in"),
        (dict(sigma_count=float("nan")), ValueError, "`sigma_count` of IndKNNClassifier must be in"),
        (dict(min_count=0), ValueError, "`min_count` of IndKNNClassifier must be in"),
        (dict(search="ivf"), ValueError, "`search` of IndKNNClassifier must be one of"),
        (dict(reuse_predictions="yes"), TypeError, "`reuse_predictions` of IndKNNClassifier must be a bool"),
        (dict(n_queries=0), ValueError, "`n_queries` of IndKNNClassifier must be an integer >= 1"),
        (dict(random_state="a"), TypeError, "`random_state` of IndKNNClassifier must be None, an int"),
        (dict(accounting="pld"), ValueError, "`accounting` of IndKNNClassifier must be one of"),
    ]
    for kwargs, error, match in cases:
        with pytest.raises(error, match=match):
            IndKNNClassifier(**{"n_classes": 2, **kwargs}).fit(X, y)
    fitted = IndKNNClassifier(n_classes=2).fit(X, y)
    with pytest.raises(ValueError, match="must be finite"):
        fitted.predict([[np.nan, 1.0]])
    with pytest.raises(ValueError, match="must have 2 features"):
        fitted.predict([[1.0, 2.0, 3.0]])
    with pytest.raises(ValueError, match="labels in"):
        IndKNNClassifier(n_classes=2).fit(X, y + 1)
    with pytest.raises(ValueError, match="must come from state_dict"):
        IndKNNClassifier().load_state_dict({"format": "other"})
    assert fitted.predict(np.zeros((0, 2))).shape == (0,)
