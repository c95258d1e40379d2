"""Private linear regression with generalized PTR (thesis Sec 6.4.5, Thm 6.4.7, Example 6.4.8)."""

import math

import numpy as np
import pytest

from dpledger.accountants import RDPAccountant
from dpledger.accountants.ops_regression import ops_epsilon, ops_largest_gamma
from dpledger.predict.ptr_regression import (
    ops_data_independent,
    ops_ptr,
    ops_ptr_select,
    ops_sample,
    output_perturbation,
    ridge,
)


def _data(n=400, d=5, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    X /= np.linalg.norm(X, axis=1, keepdims=True)
    y = np.clip(X @ np.linspace(1, -1, d) * 0.8 + rng.normal(0, 0.05, n), -1, 1)
    return X, y


def test_thm_647_formula_and_gamma_calibration():
    # sqrt(g L^2 log(2/d) / l) + g L^2 / (2 (l + 1)) + (1 + log(2/d)) / (2 l) at g = 2, L = 3, l = 50, d = 1e-6
    lg = math.log(2e6)
    expect = math.sqrt(2 * 9 * lg / 50) + 2 * 9 / (2 * 51) + (1 + lg) / 100
    assert ops_epsilon(2.0, 50.0, 3.0, 1e-6) == pytest.approx(expect, rel=1e-14)
    assert ops_epsilon(2.0, 50.0, 3.0, 1e-6) >= expect
    g = ops_largest_gamma(1.0, 50.0, 3.0, 1e-6)
    assert ops_epsilon(g, 50.0, 3.0, 1e-6) <= 1.0 < ops_epsilon(g * 1.001, 50.0, 3.0, 1e-6)
    assert ops_largest_gamma(0.1, 50.0, 3.0, 1e-6) is None  # (1 + log(2e6)) / 100 = 0.155 > 0.1


def test_ops_sample_has_the_posterior_covariance():
    X, y = _data()
    rng = np.random.default_rng(1)
    draws = np.array([ops_sample(X, y, 10.0, 4.0, rng) for _ in range(4000)])
    A = X.T @ X + 10.0 * np.eye(X.shape[1])
    np.testing.assert_allclose(draws.mean(axis=0), ridge(X, y, 10.0), atol=0.02)
    np.testing.assert_allclose(np.cov(draws.T), np.linalg.inv(4.0 * A), atol=0.004)


def test_ops_ptr_releases_and_charges_thm_646():
    X, y = _data()
    acc = RDPAccountant()
    r = ops_ptr(X, y, 50.0, epsilon=1.0, test_epsilon=0.5, delta=1e-6, false_positive_rate=1e-6, accountant=acc,
                random_state=0)
    assert r.released and r.output.shape == (5,) and r.test_release <= 1.0
    assert r.guarantee.theorem == "thesis Thm 6.4.6" and r.guarantee.epsilon == pytest.approx(1.5)
    # a tiny lambda leaves no gamma within a tiny budget: refused, still charged
    f = ops_ptr(X, y, 0.01, epsilon=0.05, test_epsilon=0.5, delta=1e-6, false_positive_rate=1e-6, accountant=acc,
                random_state=0)
    assert not f.released and f.output is None and math.isinf(f.test_release)
    assert sum(c for _, c in acc.ledger) == 2
    with pytest.raises(ValueError, match="norm"):
        ops_ptr(X * 2, y, 50.0, epsilon=1.0, test_epsilon=0.5, delta=1e-6, false_positive_rate=1e-6)


def test_selection_meets_the_target_and_baselines_run():
    X, y = _data()
    lams = 2.5 ** np.linspace(1, 10, 12)
    res = ops_ptr_select(X[:300], y[:300], lams, X[300:350], y[300:350], epsilon=1.0, delta=1e-6, random_state=0)
    assert res.guarantee.theorem == "thesis Thm 6.4.5"
    assert res.guarantee.epsilon <= 1.0 and res.guarantee.delta <= 1e-6
    assert res.output is not None and res.index is not None
    theta, g = output_perturbation(X, y, 100.0, epsilon=1.0, delta=1e-6, random_state=0)
    assert theta.shape == (5,) and g.epsilon == 1.0
    theta, _ = ops_data_independent(X, y, 100.0, epsilon=1.0, delta=1e-6, random_state=0)
    assert theta is not None


# ---------------------------------------------------------------------------------- AdaOPS and baseline selection
from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from dpledger.predict.ptr_regression import ADAOPS_GRID, _adaops_choice, adaops, baseline_select  # noqa: E402


def test_adaops_charges_thm_646_and_releases():
    X, y = _data(n=2000)
    acc = RDPAccountant()
    r = adaops(X, y, epsilon=1.0, delta=1e-6, accountant=acc, random_state=3)
    assert r.released and r.output.shape == (5,)
    assert r.guarantee.theorem == "thesis Thm 6.4.6"
    assert r.guarantee.epsilon == pytest.approx(1.0) and r.guarantee.delta == pytest.approx(1e-6)
    assert r.guarantee.parts["test_epsilon"] == 0.5 and r.guarantee.parts["false_positive_rate"] == 5e-7
    assert 0 < r.test_release <= 0.5
    assert sum(c for _, c in acc.ledger) == 1


def test_adaops_refuses_when_no_lambda_fits_and_still_charges():
    X, y = _data(n=50)
    acc = RDPAccountant()
    r = adaops(X, y, epsilon=0.05, delta=1e-6, lams=[0.01, 0.1], accountant=acc, random_state=0)
    assert not r.released and r.output is None and math.isinf(r.test_release)
    assert sum(c for _, c in acc.ledger) == 1


@pytest.mark.parametrize("kwargs, match", [
    ({"epsilon": 0.0}, "epsilon"), ({"delta": 1.0}, "delta"), ({"lams": []}, "lams"), ({"lams": [-1.0]}, "lams"),
    ({"theta_norm": -1.0}, "theta_norm"),
])
def test_adaops_rejects_bad_input_and_charges_nothing(kwargs, match):
    X, y = _data(n=100)
    acc = RDPAccountant()
    args = {"epsilon": 1.0, "delta": 1e-6} | kwargs
    with pytest.raises(ValueError, match=match):
        adaops(X, y, accountant=acc, **args)
    assert acc.ledger == [] or sum(c for _, c in acc.ledger) == 0
    with pytest.raises(ValueError, match="norm"):
        adaops(X * 2, y, epsilon=1.0, delta=1e-6, accountant=acc)


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 10_000), n=st.integers(20, 600), low=st.floats(0.0, 1.0), high=st.floats(1.0, 3.0),
       eps=st.floats(0.2, 8.0))
def test_adaops_choice_bounds_the_true_thm_647_epsilon(seed, n, low, high, eps):
    # oracle: whenever the released bounds are valid (lambda_min^P <= lambda_min, ||X^T y||^P >= ||X^T y||), the
    # chosen (lambda, gamma) meets the budget under Thm 6.4.7 at the *true* lambda_min and ||theta*_lambda||
    X, y = _data(n=n, seed=seed)
    lam_min = float(np.linalg.eigvalsh(X.T @ X)[0])
    xty = float(np.linalg.norm(X.T @ y))
    choice = _adaops_choice(low * lam_min, high * xty, eps, 1e-6, X.shape[1], ADAOPS_GRID[::8], 1.0, 1.0, 1.0)
    if choice is None:
        return
    lam, gamma, _, _ = choice
    true_l = 1.0 * (np.linalg.norm(ridge(X, y, lam)) + 1.0)
    assert ops_epsilon(gamma, lam + lam_min, true_l, 1e-6) <= eps


def test_baseline_select_meets_the_target_by_thm_645():
    X, y = _data()
    lams = 2.5 ** np.linspace(1, 10, 8)
    acc = RDPAccountant()
    for method in ("outpert", "ops"):
        res = baseline_select(X[:300], y[:300], lams, X[300:350], y[300:350], method=method, epsilon=1.0,
                              delta=1e-6, accountant=acc, random_state=0)
        assert res.guarantee.theorem == "thesis Thm 6.4.5"
        assert res.guarantee.epsilon <= 1.0 and res.guarantee.delta <= 1e-6
        assert res.calls >= 1 and (res.index is None or res.output.shape == (5,))
    assert sum(c for _, c in acc.ledger) == 2
    with pytest.raises(ValueError, match="method"):
        baseline_select(X, y, lams, X, y, method="lasso", epsilon=1.0, delta=1e-6, accountant=acc)
    with pytest.raises(ValueError, match="too small"):
        baseline_select(X, y, lams, X, y, method="ops", epsilon=1e-12, delta=1e-6, accountant=acc)
    assert sum(c for _, c in acc.ledger) == 2
