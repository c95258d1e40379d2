"""Tests of predict.audit_one_run (issue 18 item 1: the one-run audit of Steinke, Nasr & Jagielski 2023).

Kinds:
* oracle: the p-value against an exact mpmath binomial tail (delta = 0) and an mpmath evaluation of the
  approximate-DP formula (delta > 0); the epsilon lower bound is the exact root of p-value = 1 - confidence;
* validity by simulation: canaries released through eps-DP randomized response (the exact worst case of the
  pure-DP theorem): over 50 seeds the lower bound exceeds eps no more often than Binomial(50, 0.05) allows, and
  the bound is not vacuous;
* a check with teeth: the same simulation scored with a point estimate exceeds eps far more often;
* a release that leaks the coin flips is flagged; validation messages.
"""

import math

import mpmath
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats

from dpledger.predict.audit_one_run import (
    OneRunAuditResult,
    audit_one_run,
    one_run_epsilon_lower,
    one_run_p_value,
)

mpmath.mp.dps = 40
SEEDS = range(50)


def exact_tail(r, v, epsilon):
    q = mpmath.e ** epsilon / (1 + mpmath.e ** epsilon)
    return mpmath.fsum(mpmath.binomial(r, k) * q**k * (1 - q) ** (r - k) for k in range(v, r + 1))


def exact_p_value(m, r, v, epsilon, delta):
    q = mpmath.e ** mpmath.mpf(epsilon) / (1 + mpmath.e ** mpmath.mpf(epsilon))
    pmf = [mpmath.binomial(r, k) * q**k * (1 - q) ** (r - k) for k in range(r + 1)]
    tail = mpmath.fsum(pmf[v:])
    if delta > 0 and v > 0:
        tail += 2 * m * mpmath.mpf(delta) * max(mpmath.fsum(pmf[v - i:v]) / i for i in range(1, v + 1))
    return min(tail, 1)


@settings(max_examples=40, deadline=None)
@given(r=st.integers(1, 120), frac=st.floats(0, 1), epsilon=st.floats(0, 6),
       delta=st.sampled_from([0.0, 1e-6, 1e-3]))
def test_p_value_matches_mpmath(r, frac, epsilon, delta):
    v = int(round(frac * r))
    m = 3 * r
    got = one_run_p_value(m, r, v, epsilon=epsilon, delta=delta)
    want = float(exact_p_value(m, r, v, epsilon, delta))
    assert got >= want * (1 - 1e-12)  # never below the exact value (a smaller p-value would be optimistic)
    assert got == pytest.approx(want, rel=1e-8, abs=1e-300)


@pytest.mark.parametrize(("r", "v"), [(100, 90), (500, 400), (40, 40), (1000, 560)])
def test_lower_bound_is_the_exact_root(r, v):
    lower = one_run_epsilon_lower(10 * r, r, v, delta=0.0, confidence=0.95)
    assert lower > 0
    assert exact_tail(r, v, lower) < 0.05  # rejected at the bound ...
    assert exact_tail(r, v, lower + 1e-6) > 0.05  # ... and not beyond it (the bound is tight to the tolerance)


def test_known_values_and_monotonicity():
    # r = v = 10 guesses all right at confidence 1 - 2^-10 / 2: only eps = 0 is rejected (p = 2^-10 at eps = 0)
    assert one_run_p_value(100, 10, 10, epsilon=0.0, delta=0.0) == pytest.approx(2.0**-10, rel=1e-8)
    assert one_run_epsilon_lower(100, 10, 5, delta=0.0) == 0.0  # half right: nothing
    a = one_run_epsilon_lower(1000, 200, 150, delta=0.0)
    b = one_run_epsilon_lower(1000, 200, 150, delta=1e-5)
    c = one_run_epsilon_lower(1000, 200, 150, delta=0.0, confidence=0.99)
    assert 0 < b <= a and c < a
    # all r guesses right: the bound solves q^r = 1 - confidence, q = e^eps / (1 + e^eps)
    q = 0.05 ** (1 / 200)
    assert one_run_epsilon_lower(1000, 200, 200, delta=0.0) == pytest.approx(math.log(q / (1 - q)), rel=1e-7)


def _randomized_response(epsilon):
    keep = math.exp(epsilon) / (1 + math.exp(epsilon))

    def release(included, rng):  # each canary's bit through eps-DP randomized response, plus tie-breaking jitter
        flip = rng.random(included.size) >= keep
        return (included ^ flip).astype(float) + 1e-3 * rng.random(included.size)

    return release


@pytest.mark.parametrize("delta", [0.0, 1e-6])
def test_validity_over_50_seeds(delta):
    epsilon = 2.0
    lowers = [audit_one_run(_randomized_response(epsilon), 2000, guesses_in=300, guesses_out=300, delta=delta,
                            random_state=s).lower for s in SEEDS]
    allowed = int(stats.binom.isf(1e-4, len(SEEDS), 0.05))
    assert sum(lo > epsilon for lo in lowers) <= allowed
    assert np.median(lowers) > 0.8 * epsilon


def test_point_estimate_would_fail_the_validity_check():
    epsilon, exceed = 2.0, 0
    for s in SEEDS:
        r = audit_one_run(_randomized_response(epsilon), 2000, guesses_in=50, guesses_out=50, delta=0.0,
                          random_state=s)
        accuracy = r.correct / r.guesses
        exceed += accuracy >= 1 or math.log(accuracy / (1 - accuracy)) > epsilon
    assert exceed > int(stats.binom.isf(1e-4, len(SEEDS), 0.05))


def test_leaky_release_is_flagged():
    def leaky(included, rng):  # claims eps = 1 but returns the coin flips unchanged
        return included.astype(float)

    r = audit_one_run(leaky, 1000, guesses_in=200, guesses_out=200, delta=1e-5, random_state=0)
    assert r.correct == r.guesses == 400 and r.lower > 1.0
    assert isinstance(r, OneRunAuditResult) and r.to_dict()["canaries"] == 1000
    assert 350 < r.included < 650


def test_reproducible_and_fresh():
    rel = _randomized_response(1.0)
    a = audit_one_run(rel, 500, guesses_in=50, guesses_out=50, delta=0.0, random_state=3)
    assert a == audit_one_run(rel, 500, guesses_in=50, guesses_out=50, delta=0.0, random_state=3)
    fresh = {audit_one_run(rel, 500, guesses_in=50, guesses_out=50, delta=0.0).included for _ in range(4)}
    assert len(fresh) > 1


@pytest.mark.parametrize(
    ("kwargs", "error", "match"),
    [
        ({"guesses_in": 8, "guesses_out": 8}, ValueError, r"must be in \[1, canaries = 10\]"),
        ({"guesses_in": 0, "guesses_out": 0}, ValueError, r"must be in \[1, canaries = 10\]"),
        ({"delta": 1.0}, ValueError, r"`delta` of audit_one_run must be in \[0, 1\)"),
        ({"confidence": 0.0}, ValueError, r"`confidence` of audit_one_run must be in \(0, 1\)"),
        ({"guesses_in": 1.5}, TypeError, "`guesses_in` of audit_one_run must be an integer"),
        ({"random_state": -2}, ValueError, "`random_state` of audit_one_run must be non-negative"),
    ],
)
def test_validation(kwargs, error, match):
    args = {"guesses_in": 2, "guesses_out": 2, "delta": 0.0} | kwargs
    with pytest.raises(error, match=match):
        audit_one_run(_randomized_response(1.0), 10, **args)


def test_validation_of_release_and_counts():
    with pytest.raises(TypeError, match="`release` of audit_one_run must be callable"):
        audit_one_run(None, 10, guesses_in=1, guesses_out=1, delta=0.0)
    with pytest.raises(ValueError, match="must return 10 scores"):
        audit_one_run(lambda inc, rng: np.zeros(3), 10, guesses_in=1, guesses_out=1, delta=0.0)
    with pytest.raises(ValueError, match=r"`correct` <= `guesses` <= `canaries` must hold"):
        one_run_epsilon_lower(10, 5, 6, delta=0.0)
    with pytest.raises(ValueError, match="`epsilon` of one_run_p_value must be non-negative"):
        one_run_p_value(10, 5, 3, epsilon=-1.0, delta=0.0)
