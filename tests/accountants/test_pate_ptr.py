"""PATE with generalized PTR (thesis Algorithm 9, Lemma 6.4.12): smooth sensitivity, data-dependent RDP."""

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import special

from dpledger.accountants.pate_ptr import (
    PATEPTR,
    data_dependent_rdp_from_gap,
    gnss_test_rdp,
    local_sensitivity_bounds,
    per_histogram_rdp,
    smooth_sensitivity,
    top_gaps,
)


def _neighbour_histograms(h, max_votes):
    """Every histogram one private record away: one vote moved, added or removed."""
    out = []
    c = len(h)
    for a in range(c):
        if h[a] > 0:
            rem = h.copy()
            rem[a] -= 1
            out.append(rem)
            for b in range(c):
                if b != a:
                    mv = rem.copy()
                    mv[b] += 1
                    out.append(mv)
        if h.sum() < max_votes:
            add = h.copy()
            add[a] += 1
            out.append(add)
    return out


@st.composite
def vote_setups(draw):
    c = draw(st.integers(2, 5))
    k = draw(st.integers(4, 60))
    t = draw(st.integers(1, 6))
    rows = []
    for _ in range(t):
        weights = np.array(draw(st.lists(st.floats(0.0, 1.0), min_size=c, max_size=c))) + 1e-3
        total = draw(st.integers(0, k))
        row = np.floor(weights / weights.sum() * total).astype(np.int64)
        rows.append(row)
    sigma = draw(st.floats(0.5, 20.0))
    order = draw(st.floats(1.5, 40.0))
    beta = draw(st.floats(0.001, 0.4))
    return np.array(rows), c, k, sigma, order, beta


@given(vote_setups())
@settings(max_examples=60, deadline=None)
def test_smooth_sensitivity_dominates_local_sensitivity(setup):
    votes, c, k, sigma, order, beta = setup
    r = per_histogram_rdp(k, sigma, c, order)
    gaps = top_gaps(votes)
    f_here = r[gaps]
    up, down = 0.0, 0.0  # one record changes every histogram at once: the worst sign-consistent choice
    for i, h in enumerate(votes):
        changes = [r[top_gaps(n[None, :])[0]] - f_here[i] for n in _neighbour_histograms(h, k)]
        up += max(changes + [0.0])
        down += max([-x for x in changes] + [0.0])
    local = max(up, down)
    ss = smooth_sensitivity(gaps, r, beta)
    assert local <= ss
    # smoothness: SS(X) <= e^beta SS(X') for a neighbour (each histogram moved by one vote)
    rng = np.random.default_rng(0)
    neighbour = np.array([nb[rng.integers(len(nb))] if (nb := _neighbour_histograms(h, k)) else h for h in votes])
    ss_n = smooth_sensitivity(top_gaps(neighbour), r, beta)
    assert ss <= math.exp(beta) * ss_n * (1 + 1e-12) and ss_n <= math.exp(beta) * ss * (1 + 1e-12)
    # the distance-d bounds grow with d and dominate the local sensitivity two steps away
    a = local_sensitivity_bounds(gaps, r)
    assert np.all(np.diff(a) >= 0)


def _exact_binary_rdp(g, g2, sigma, order):
    """D_order(Bern(p_g) || Bern(p_g2)), p = P(class 0 wins) = Phi(g / (sqrt(2) sigma)), signed gaps."""
    lp, lq = special.log_ndtr(g / (math.sqrt(2) * sigma)), special.log_ndtr(-g / (math.sqrt(2) * sigma))
    lp2, lq2 = special.log_ndtr(g2 / (math.sqrt(2) * sigma)), special.log_ndtr(-g2 / (math.sqrt(2) * sigma))
    terms = [order * lp + (1 - order) * lp2, order * lq + (1 - order) * lq2]
    return float(np.logaddexp(*terms) / (order - 1))


@pytest.mark.parametrize("sigma, order", [(4.0, 5.0), (8.0, 10.0), (2.0, 3.0), (10.0, 30.0)])
def test_per_histogram_bound_dominates_the_exact_binary_divergence(sigma, order):
    k = 80
    r = per_histogram_rdp(k, sigma, 2, order)
    for g in range(0, k + 1):
        for shift in (-2, -1, 1, 2):  # a moved vote changes the gap by 2, an added/removed one by 1
            if 0 <= g + shift <= k or g + shift < 0:
                exact = max(_exact_binary_rdp(g, g + shift, sigma, order),
                            _exact_binary_rdp(g + shift, g, sigma, order))
                assert exact <= r[g] * (1 + 1e-9) + 1e-300, (g, shift)
    # and the data-dependent bound is far below the data-independent one at large gaps (k >> sigma sqrt(order))
    assert r[k] <= order / sigma**2
    if sigma <= 8:
        assert r[k] < 1e-3 * order / sigma**2


def test_data_dependent_rdp_is_capped_by_the_data_independent_bound():
    b = data_dependent_rdp_from_gap(np.arange(0, 300), 20.0, 10, 25.0)
    assert np.all(b <= 25.0 / 400.0 * (1 + 1e-12)) and b[0] == pytest.approx(25.0 / 400.0)
    assert np.all(np.diff(b) <= 1e-18)  # non-increasing in the gap here


def test_gnss_rdp_range_and_value():
    # Papernot et al. 2018, Thm 23 plus lambda / (2 sigma_2^2), at lambda = 2, beta = 0.1, sigma = 3
    expect = 2 / 18 + 2 * math.exp(0.2) / 9 + (0.2 - 0.5 * math.log(1 - 0.4)) / 1
    assert gnss_test_rdp(np.array([2.0]), 0.1, 3.0, 3.0)[0] == pytest.approx(expect, rel=1e-12)
    assert np.isinf(gnss_test_rdp(np.array([5.0]), 0.1, 3.0, 3.0)[0])


def test_config_guarantee_adds_up_thm_646():
    cfg = PATEPTR.from_test_epsilon(test_epsilon=1.0, delta=1e-5, sigma=40.0, budget=2.0, num_classes=10,
                                    max_votes=400)
    assert cfg.beta == pytest.approx(0.2 / cfg.order)
    g = cfg.guarantee()
    assert g.theorem == "thesis Thm 6.4.6"
    assert g.epsilon == pytest.approx(2.0 + cfg.test_epsilon, rel=1e-14) and g.epsilon >= 2.0 + cfg.test_epsilon
    assert g.delta == pytest.approx(1e-5, rel=1e-12)
    # the test's epsilon is a proven conversion of its curve at some order (never below any order's value)
    lam = np.linspace(1.5, 1 / (2 * cfg.beta) - 0.5, 50)
    rdp = gnss_test_rdp(lam, cfg.beta, cfg.sigma_test, cfg.sigma_test)
    classic = rdp + math.log(1 / cfg.delta_test) / (lam - 1)
    assert cfg.test_epsilon <= classic.min()


def test_lemma_6412_upper_bound_holds_with_probability_one_minus_delta2():
    cfg = PATEPTR(sigma=15.0, budget=1.0, order=10.0, sigma_test=3.0, num_classes=4, max_votes=100,
                  delta_mechanism=1e-5, delta_test=1e-5, false_positive_rate=0.2)
    rng = np.random.default_rng(1)
    votes = np.array([[60, 30, 5, 5], [90, 4, 3, 3], [40, 35, 20, 5]])
    r = cfg.rdp_table()
    target = cfg.epsilon_from_rdp(float(r[top_gaps(votes)].sum()))
    n = 4000
    below = sum(cfg.release_upper_bound(votes, rng) < target for _ in range(n))
    assert below / n <= 0.2


def test_validation():
    kw = dict(sigma=15.0, budget=1.0, order=10.0, sigma_test=3.0, num_classes=4, max_votes=100,
              delta_mechanism=1e-5, delta_test=1e-5, false_positive_rate=1e-5)
    with pytest.raises(ValueError, match="order"):
        PATEPTR(**{**kw, "order": 1.0})
    with pytest.raises(ValueError, match="delta_test"):
        PATEPTR(**{**kw, "delta_test": 0.0})
    cfg = PATEPTR(**kw)
    with pytest.raises(ValueError, match="max_votes"):
        cfg.check_votes(np.array([[100, 1, 0, 0]]))
    with pytest.raises(ValueError, match="integer"):
        cfg.check_votes(np.array([[1.5, 1, 0, 0]]))
    with pytest.raises(ValueError, match="shape"):
        cfg.check_votes(np.array([[1, 1, 0]]))


# ------------------------------------------------- separate sigma_2 and a free beta (Figure 6.2's recovered settings)
def _cfg(**kw):
    base = dict(sigma=15.0, budget=1.0, order=32.0, sigma_test=15.0, num_classes=4, max_votes=100,
                delta_mechanism=2e-6, delta_test=6e-6, false_positive_rate=2e-6, beta=0.05)
    return PATEPTR(**(base | kw))


def test_sigma_2_defaults_to_sigma_test_and_enters_the_test_epsilon():
    assert _cfg().sigma_2 == 15.0
    assert _cfg(sigma_2=15.0).test_epsilon == _cfg().test_epsilon
    values = [_cfg(sigma_2=s).test_epsilon for s in (2.0, 5.0, 15.0, 50.0)]
    assert all(a > b for a, b in zip(values, values[1:]))  # more noise on log SS, cheaper test
    cfg = _cfg(sigma_2=5.0)
    lam = np.linspace(1.2, 1 / (2 * cfg.beta) - 0.2, 80)
    classic = gnss_test_rdp(lam, cfg.beta, 15.0, 5.0) + math.log(1 / cfg.delta_test) / (lam - 1)
    assert cfg.test_epsilon <= classic.min()  # a proven conversion: never above the classic one at any order
    # the guarantee adds up (thesis Thm 6.4.6) with the three deltas as given
    g = cfg.guarantee()
    assert g.epsilon == pytest.approx(1.0 + cfg.test_epsilon) and g.delta == pytest.approx(1e-5)
    with pytest.raises(ValueError, match="sigma_2"):
        _cfg(sigma_2=0.0)
    with pytest.raises(ValueError, match="sigma_2"):
        _cfg(sigma_2=-1.0)


def test_release_from_statistics_is_the_release_and_its_formula():
    cfg = _cfg(sigma_2=5.0)
    votes = np.array([[80, 10, 5, 5], [60, 30, 5, 5], [95, 5, 0, 0]])
    gaps = top_gaps(votes)
    r = cfg.rdp_table()
    f, ss = float(r[gaps].sum()), smooth_sensitivity(gaps, r, cfg.beta)
    a = cfg.release_upper_bound(votes, np.random.default_rng(4))
    b = cfg.release_from_statistics(f, ss, np.random.default_rng(4))
    assert a == pytest.approx(b, rel=1e-12)
    rng = np.random.default_rng(4)
    n1, n2 = rng.normal(), rng.normal()
    z = math.sqrt(2 * math.log(2 / cfg.false_positive_rate))
    mu = math.log(ss) + 0.05 * 5.0 * n1 + z * 5.0 * 0.05
    upper = f + ss * 15.0 * n2 + 15.0 * z * math.exp(mu)
    assert b >= cfg.epsilon_from_rdp(upper) and b == pytest.approx(cfg.epsilon_from_rdp(upper), rel=1e-9)
    with pytest.raises(ValueError, match="rdp_value"):
        cfg.release_from_statistics(-1.0, ss, rng)
    with pytest.raises(ValueError, match="smooth_sens"):
        cfg.release_from_statistics(f, float("nan"), rng)


def test_lemma_6412_coverage_with_separate_sigma_2_and_a_large_beta():
    cfg = PATEPTR(sigma=15.0, budget=1.0, order=10.0, sigma_test=3.0, sigma_2=0.7, beta=0.3, num_classes=4,
                  max_votes=100, delta_mechanism=1e-5, delta_test=1e-5, false_positive_rate=0.2)
    rng = np.random.default_rng(2)
    votes = np.array([[60, 30, 5, 5], [90, 4, 3, 3], [40, 35, 20, 5]])
    target = cfg.epsilon_from_rdp(float(cfg.rdp_table()[top_gaps(votes)].sum()))
    n = 4000
    below = sum(cfg.release_upper_bound(votes, rng) < target for _ in range(n))
    assert below / n <= 0.2
