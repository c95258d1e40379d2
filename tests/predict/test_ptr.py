"""Generalized PTR (thesis Algorithms 7 and 8): release or refuse, and what the ledger is charged."""

import math

import numpy as np
import pytest
from scipy import stats

from dpledger.accountants import FourierAccountant, RDPAccountant
from dpledger.predict.ptr import (
    PrivateTest,
    PrivateUpperBound,
    generalized_ptr,
    laplace_statistic_bound,
    ptr_select,
)


def _bound(gap_needed=10):
    # eps_phi(X) <= 0.1 once the gap is at least gap_needed, else at most 5
    return laplace_statistic_bound(lambda x: x["gap"], 1.0, lambda s: 0.1 if s >= gap_needed else 5.0,
                                   epsilon=0.5, failure_probability=1e-6)


def test_refused_test_releases_nothing_and_still_charges():
    calls = []
    acc = RDPAccountant()
    r = generalized_ptr({"gap": 0}, lambda x, rng: calls.append(1) or "secret", epsilon=0.2, delta=1e-6,
                        test=_bound(), accountant=acc, random_state=1)
    assert not r.released and r.output is None and calls == []
    assert r.test_release == 5.0
    # charged the whole guarantee (0.7, 2e-6), which contains the test's cost (0.5, 0)
    assert len(acc.ledger) == 1
    assert acc.get_delta(epsilon=r.guarantee.epsilon) >= r.guarantee.delta
    assert acc.get_epsilon(delta=1e-3) > 0.5  # at least the test's epsilon-cost is there
    fa = FourierAccountant()
    generalized_ptr({"gap": 0}, lambda x, rng: "secret", epsilon=0.2, delta=1e-6, test=_bound(), accountant=fa,
                    random_state=1)
    # (just above 0.7: the characteristic-function bound is loose exactly at the pair's loss atom)
    assert fa.get_delta(epsilon=0.7000001) == pytest.approx(2e-6, rel=1e-3)


def test_passed_test_releases_and_charges_the_same():
    acc_pass, acc_fail = RDPAccountant(), RDPAccountant()
    r = generalized_ptr({"gap": 100}, lambda x, rng: rng.normal(), epsilon=0.2, delta=1e-6, test=_bound(),
                        accountant=acc_pass, random_state=2)
    f = generalized_ptr({"gap": 0}, lambda x, rng: rng.normal(), epsilon=0.2, delta=1e-6, test=_bound(),
                        accountant=acc_fail, random_state=2)
    assert r.released and isinstance(r.output, float) and not f.released
    assert r.guarantee == f.guarantee and r.guarantee.theorem == "thesis Thm 6.4.6"
    assert acc_pass.get_epsilon(delta=1e-5) == acc_fail.get_epsilon(delta=1e-5)  # charge independent of outcome


def test_private_test_uses_thm_643_and_validates_its_answer():
    t = PrivateTest(run=lambda x, rng: x > 3, epsilon=0.3, delta=1e-7, false_positive_rate=1e-7)
    r = generalized_ptr(5, lambda x, rng: x, epsilon=1.0, delta=1e-7, test=t, random_state=0)
    assert r.released and r.output == 5 and r.guarantee.theorem == "thesis Thm 6.4.3"
    assert r.guarantee.delta == pytest.approx(3e-7)
    bad = PrivateTest(run=lambda x, rng: 1, epsilon=0.3, delta=0.0, false_positive_rate=0.0)
    with pytest.raises(TypeError, match="bool"):
        generalized_ptr(5, lambda x, rng: x, epsilon=1.0, delta=0.0, test=bad)


def test_invalid_input_changes_nothing():
    acc = RDPAccountant()
    with pytest.raises(TypeError, match="PrivateTest or a PrivateUpperBound"):
        generalized_ptr(1, lambda x, rng: x, epsilon=1.0, delta=0.0, test=lambda x, rng: True, accountant=acc)
    with pytest.raises(ValueError, match="epsilon"):
        generalized_ptr(1, lambda x, rng: x, epsilon=-1.0, delta=0.0, test=_bound(), accountant=acc)
    with pytest.raises(TypeError, match="mechanism"):
        generalized_ptr(1, "not callable", epsilon=1.0, delta=0.0, test=_bound(), accountant=acc)
    with pytest.raises(TypeError, match="random_state"):
        generalized_ptr(1, lambda x, rng: x, epsilon=1.0, delta=0.0, test=_bound(), accountant=acc,
                        random_state="seed")
    assert acc.ledger == ()
    with pytest.raises(ValueError, match="failure_probability"):
        PrivateUpperBound(release=lambda x, rng: 0.0, epsilon=1.0, delta=0.0, failure_probability=2.0)
    with pytest.raises(ValueError, match="failure_probability"):
        laplace_statistic_bound(len, 1.0, float, epsilon=1.0, failure_probability=0.5)


def test_fresh_entropy_by_default_and_reproducible_with_a_seed():
    mech = lambda x, rng: rng.normal()  # noqa: E731
    a = [generalized_ptr({"gap": 100}, mech, epsilon=0.2, delta=1e-6, test=_bound()).output for _ in range(2)]
    assert a[0] != a[1]
    s = [generalized_ptr({"gap": 100}, mech, epsilon=0.2, delta=1e-6, test=_bound(), random_state=7).output
         for _ in range(2)]
    assert s[0] == s[1]


def test_laplace_lower_bound_fails_with_the_stated_probability():
    # s^P > s happens with probability exactly delta' (the Laplace tail); check at delta' = 0.1
    seen = []
    t = laplace_statistic_bound(lambda x: 50.0, 2.0, lambda s: seen.append(s) or 0.0, epsilon=0.7,
                                failure_probability=0.1)
    rng = np.random.default_rng(3)
    n = 20_000
    for _ in range(n):
        t.release(None, rng)
    over = int(np.sum(np.array(seen) > 50.0))
    assert stats.binomtest(over, n, 0.1).pvalue > 1e-4
    assert t.epsilon == 0.7 and t.delta == 0.0


def test_ptr_select_runs_at_most_the_cutoff_and_keeps_the_best():
    proposals = [1.0, 2.0, 3.0]
    acc = RDPAccountant()
    res = ptr_select(
        {"gap": 100}, proposals, mechanism_for=lambda phi: (lambda x, rng: phi),
        test_for=lambda phi: _bound(gap_needed=10 if phi < 3 else 10**9), score=lambda out: out,
        epsilon=0.2, delta=1e-6, tau=0.2, delta_2=1e-6, accountant=acc, random_state=4)
    cutoff = res.guarantee.parts["cutoff"]
    assert cutoff == math.ceil(math.log(1e6) / 0.2) and 1 <= res.calls <= cutoff
    assert res.guarantee.theorem == "thesis Thm 6.4.5"
    assert res.output in (1.0, 2.0) and res.index in (0, 1)  # proposal 3 never passes its test
    assert acc.get_delta(epsilon=res.guarantee.epsilon) >= res.guarantee.delta
    with pytest.raises(ValueError, match="empty"):
        ptr_select(1, [], mechanism_for=None, test_for=None, score=None, epsilon=1.0, delta=0.0, tau=0.5,
                   delta_2=0.1)


# ---------------------------------------------------------------- binary voting (thesis Example 6.5.1)
from dpledger.accountants.binary_voting import epsilon_upper_from_gap  # noqa: E402
from dpledger.predict.ptr_voting import binary_voting_ptr, classic_binary_voting_ptr  # noqa: E402


def test_binary_voting_gen_ptr_releases_on_a_large_gap_and_refuses_a_tie():
    kw = dict(epsilon=2.0, budget=0.1, test_epsilon=1.0, delta=1e-6, false_positive_rate=1e-6)
    acc = RDPAccountant()
    big = binary_voting_ptr(300, 100, accountant=acc, random_state=0, **kw)
    tie = binary_voting_ptr(100, 100, accountant=acc, random_state=0, **kw)
    assert big.released and big.output == 0 and not tie.released and tie.output is None
    assert big.guarantee.epsilon == pytest.approx(1.1) and big.guarantee.delta == pytest.approx(2e-6)
    assert tie.test_release == epsilon_upper_from_gap(-math.inf, 2.0, 1e-6) > 0.1
    assert acc.ledger[0][1] == 2  # both runs charged the same guarantee


def test_binary_voting_false_positive_rate_is_respected():
    # at a tie the data-dependent epsilon exceeds the budget; the test may pass only with probability delta'
    kw = dict(epsilon=2.0, budget=0.5, test_epsilon=0.5, delta=1e-3, false_positive_rate=0.05)
    rng = np.random.default_rng(5)
    passed = sum(binary_voting_ptr(40, 40, random_state=rng, **kw).released for _ in range(4000))
    assert passed / 4000 <= 0.05 + 3 * math.sqrt(0.05 * 0.95 / 4000)


def test_classic_ptr():
    a, g = classic_binary_voting_ptr(500, 100, test_epsilon=1.0, false_positive_rate=1e-6, random_state=0)
    assert a == 0 and g.epsilon == 1.0 and g.delta == 1e-6
    with pytest.raises(ValueError, match="false_positive_rate"):
        classic_binary_voting_ptr(1, 0, test_epsilon=1.0, false_positive_rate=0.0)


# ---------------------------------------------------------------- PATE with generalized PTR (thesis Algorithm 9)
from dpledger.accountants.pate_ptr import PATEPTR  # noqa: E402
from dpledger.predict.pate_ptr import pate_ptr  # noqa: E402


def _pate_config(**kw):
    base = dict(sigma=100.0, budget=3.0, order=20.0, sigma_test=10.0, num_classes=3, max_votes=400,
                delta_mechanism=1e-6, delta_test=1e-6, false_positive_rate=1e-6)
    return PATEPTR(**{**base, **kw})


def test_pate_ptr_releases_high_consensus_and_refuses_low_consensus():
    cfg = _pate_config()
    acc = RDPAccountant()
    high = pate_ptr(np.tile([390, 5, 5], (20, 1)), cfg, accountant=acc, random_state=0)
    low = pate_ptr(np.tile([134, 133, 133], (200, 1)), _pate_config(sigma=5.0), accountant=acc, random_state=0)
    assert high.released and high.output.dtype == np.int64 and np.all(high.output == 0)
    assert not low.released and low.output is None and low.test_release > 3.0
    # both charged; the end-to-end guarantee adds up as Thm 6.4.6 (Algorithm 9's instance of Thm 6.4.13) states
    assert sum(count for _, count in acc.ledger) == 2
    for r, c in ((high, cfg), (low, _pate_config(sigma=5.0))):
        assert r.guarantee.epsilon == pytest.approx(c.budget + c.test_epsilon, rel=1e-14)
        assert r.guarantee.delta == pytest.approx(3e-6, rel=1e-12)
    total_eps = high.guarantee.epsilon + low.guarantee.epsilon
    assert acc.get_delta(epsilon=total_eps) >= 1 - (1 - 3e-6) ** 2 - 1e-17  # basic composition is certified


def test_pate_ptr_invalid_votes_change_nothing():
    acc = RDPAccountant()
    with pytest.raises(ValueError, match="max_votes"):
        pate_ptr(np.array([[400, 1, 0]]), _pate_config(), accountant=acc)
    with pytest.raises(TypeError, match="PATEPTR"):
        pate_ptr(np.array([[4, 1, 0]]), {"sigma": 1.0}, accountant=acc)
    assert acc.ledger == ()


# ---------------------------------------------------------------- Private-kNN's data-dependent mode
from dpledger.predict import PrivateKNNClassifier  # noqa: E402


def _clusters(n=300, seed=0):
    rng = np.random.default_rng(seed)
    X = np.vstack([rng.normal(0, 1, (n, 2)) + 8, rng.normal(0, 1, (n, 2)) - 8])
    return X, np.repeat([0, 1], n)


def test_private_knn_data_dependent_mode_answers_and_charges_thm_646():
    X, y = _clusters()
    cfg = PATEPTR(sigma=40.0, budget=4.0, order=20.0, sigma_test=10.0, num_classes=2, max_votes=100,
                  delta_mechanism=1e-6, delta_test=1e-6, false_positive_rate=1e-6)
    clf = PrivateKNNClassifier(k=100, sampling_probability=1.0, threshold=None, sigma_vote=40.0,
                               metric="euclidean", n_classes=2, random_state=0, data_dependent=cfg).fit(X, y)
    Q = np.array([[8.0, 8.0]] * 10 + [[-8.0, -8.0]] * 10)
    out = clf.predict(Q)
    assert clf.last_ptr_result_.released and out.tolist() == [0] * 10 + [1] * 10
    g = cfg.guarantee()
    assert clf.accountant_.ledger == ((g.mechanism(), 1),)
    assert clf.privacy_report(1e-5).epsilon <= g.epsilon + 1e-9
    # low consensus (ties at the boundary) with small noise: refused, every query abstains, still charged
    tight = PATEPTR(sigma=1.0, budget=0.05, order=20.0, sigma_test=10.0, num_classes=2, max_votes=100,
                    delta_mechanism=1e-6, delta_test=1e-6, false_positive_rate=1e-6)
    clf2 = PrivateKNNClassifier(k=100, sampling_probability=1.0, threshold=None, sigma_vote=1.0,
                                metric="euclidean", n_classes=2, random_state=0, data_dependent=tight).fit(X, y)
    out2 = clf2.predict(np.zeros((5, 2)))
    assert not clf2.last_ptr_result_.released and np.all(out2 == -1)
    assert sum(c for _, c in clf2.accountant_.ledger) == 1 and clf2.n_answered_ == 0


def test_private_knn_data_dependent_mode_refuses_inconsistent_settings():
    X, y = _clusters(50)
    cfg = PATEPTR(sigma=20.0, budget=4.0, order=20.0, sigma_test=10.0, num_classes=2, max_votes=30,
                  delta_mechanism=1e-6, delta_test=1e-6, false_positive_rate=1e-6)
    with pytest.raises(ValueError, match="sampling_probability must be 1"):
        PrivateKNNClassifier(k=30, sampling_probability=0.5, sigma_vote=20.0, n_classes=2,
                             data_dependent=cfg).fit(X, y)
    with pytest.raises(ValueError, match="max_votes must equal k"):
        PrivateKNNClassifier(k=20, sampling_probability=1.0, sigma_vote=20.0, n_classes=2,
                             data_dependent=cfg).fit(X, y)
    with pytest.raises(TypeError, match="PATEPTR"):
        PrivateKNNClassifier(k=30, sampling_probability=1.0, n_classes=2, data_dependent={"budget": 1}).fit(X, y)


from dpledger.predict.ptr_voting import classic_ptr_epsilon_for_error, classic_ptr_error_rate  # noqa: E402


@pytest.mark.parametrize("gap, eps_t, fp", [(6, 1.0, 0.05), (3, 2.0, 0.1), (12, 0.5, 0.01), (1, 1.0, 0.2)])
def test_classic_ptr_error_rate_matches_simulation(gap, eps_t, fp):
    exact = classic_ptr_error_rate(gap, test_epsilon=eps_t, false_positive_rate=fp)
    rng = np.random.default_rng(5)
    trials = 20_000
    wrong = sum(classic_binary_voting_ptr(gap, 0, test_epsilon=eps_t, false_positive_rate=fp, random_state=rng)[0]
                for _ in range(trials))  # the majority is class 0: answer 1 is the error
    se = math.sqrt(exact * (1 - exact) / trials)
    assert abs(wrong / trials - exact) <= 5 * se + 1e-4


@pytest.mark.parametrize("gap, err, fp", [(101, 1e-86, 5e-6), (100, 1e-10, 5e-6), (5, 0.2, 0.1)])
def test_classic_ptr_epsilon_for_error_is_the_smallest(gap, err, fp):
    eps = classic_ptr_epsilon_for_error(gap, err, false_positive_rate=fp)
    assert classic_ptr_error_rate(gap, test_epsilon=eps, false_positive_rate=fp) <= err
    assert classic_ptr_error_rate(gap, test_epsilon=eps * (1 - 1e-9), false_positive_rate=fp) > err
    for bad in ({"error": 0.3}, {"error": 0.0}, {"false_positive_rate": 0.5}):
        with pytest.raises(ValueError):
            classic_ptr_epsilon_for_error(gap, **({"error": err, "false_positive_rate": fp} | bad))
    with pytest.raises(ValueError):
        classic_ptr_epsilon_for_error(1, err, false_positive_rate=fp)


def test_classic_ptr_epsilon_for_log_error_matches_and_reaches_below_floats():
    eps = classic_ptr_epsilon_for_error(100, 1e-30, false_positive_rate=5e-6)
    assert classic_ptr_epsilon_for_error(100, false_positive_rate=5e-6, log_error=math.log(1e-30)) == \
        pytest.approx(eps, rel=1e-12)
    tiny = classic_ptr_epsilon_for_error(100, false_positive_rate=5e-6, log_error=-5000.0)
    assert tiny >= (math.log(1e5) - math.log(4) + 5000) / 99
    with pytest.raises(ValueError, match="exactly one"):
        classic_ptr_epsilon_for_error(100, 1e-3, false_positive_rate=5e-6, log_error=-3.0)
    with pytest.raises(ValueError, match="log_error"):
        classic_ptr_epsilon_for_error(100, false_positive_rate=5e-6, log_error=0.0)


def test_private_knn_data_dependent_mode_with_a_free_beta_and_sigma_2():
    # the recovered settings of Figure 6.2 (beta not tied to the order, sigma_2 != sigma_s) go through the same
    # charge: one PTR run, thesis Thm 6.4.6's guarantee with this config's (smaller) test epsilon
    X, y = _clusters()
    base = dict(sigma=40.0, budget=8.0, order=32.0, sigma_test=15.0, num_classes=2, max_votes=100,
                delta_mechanism=2e-6, delta_test=6e-6, false_positive_rate=2e-6)
    tied, free = PATEPTR(**base), PATEPTR(**base, beta=0.05, sigma_2=5.0)
    assert free.beta == 0.05 and tied.beta == pytest.approx(0.2 / 32)
    clf = PrivateKNNClassifier(k=100, sampling_probability=1.0, threshold=None, sigma_vote=40.0,
                               metric="euclidean", n_classes=2, random_state=0, data_dependent=free).fit(X, y)
    out = clf.predict(np.array([[8.0, 8.0]] * 10 + [[-8.0, -8.0]] * 10))
    assert clf.last_ptr_result_.released and out.tolist() == [0] * 10 + [1] * 10
    assert clf.last_ptr_result_.test_release <= free.budget
    assert clf.accountant_.ledger == ((free.guarantee().mechanism(), 1),)
    assert clf.last_ptr_result_.guarantee == free.guarantee()
