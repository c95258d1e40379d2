"""Tests of predict.audit.audit_epsilon (issue 18 item 1: the black-box empirical lower bound on epsilon).

Kinds:
* coverage of the Clopper-Pearson bounds, computed exactly from the binomial distribution;
* validity: over 50 seeds on randomized response (epsilon known in closed form) and the Gaussian mechanism
  (delta at epsilon = 1 from the analytic formula, Balle & Wang 2018, Thm 8), the number of seeds whose lower
  bound exceeds the true epsilon is checked against Binomial(50, 1 - confidence) (a test an optimistic bound,
  e.g. point estimates or no Bonferroni split, fails);
* power: 20,000 runs of randomized response reach 70% of the true epsilon; a mechanism that claims epsilon 1 but
  adds no noise is flagged;
* the split: the bound counts only the runs the choice did not see; generators are independent per run;
* reproducibility and validation messages.
"""

import math

import numpy as np
import pytest
from scipy import stats

from dpledger.mechanisms.gaussian import analytic_gaussian_delta_bounds
from dpledger.predict.audit import AuditResult, audit_epsilon, clopper_pearson_lower, clopper_pearson_upper

SEEDS = range(50)
CONFIDENCE = 0.95


def randomized_response(epsilon):
    """Release the bit with probability e^eps / (1 + e^eps), else flip it: exactly eps-DP (and not less)."""
    keep = math.exp(epsilon) / (1.0 + math.exp(epsilon))

    def release(bit, rng, size):
        return np.where(rng.random(size) < keep, bit, 1 - bit)

    return release


def gaussian(sigma):
    def release(x, rng, size):
        return x + sigma * rng.standard_normal(size)

    return release


def allowed_exceedances(trials, failure_probability, tolerance=1e-4):
    """The largest count k with P[Binomial(trials, failure_probability) > k] >= ... : exceed k only w.p. 1e-4."""
    return int(stats.binom.isf(tolerance, trials, failure_probability))


@pytest.mark.parametrize("n", [1, 7, 30])
@pytest.mark.parametrize("alpha", [0.025, 0.2])
def test_clopper_pearson_coverage_exact(n, alpha):
    k = np.arange(n + 1)
    lower, upper = clopper_pearson_lower(k, n, alpha), clopper_pearson_upper(k, n, alpha)
    assert np.all((0 <= lower) & (lower <= k / n) & (k / n <= upper) & (upper <= 1))
    for p in np.linspace(0.0, 1.0, 101):
        pmf = stats.binom.pmf(k, n, p)
        assert pmf[lower > p].sum() <= alpha + 1e-12
        assert pmf[upper < p].sum() <= alpha + 1e-12
    # the bound is the exact quantile: at p = lower(k) the probability of >= k successes is alpha
    i = n // 2 + 1
    assert stats.binom.sf(i - 1, n, lower[i]) == pytest.approx(alpha, rel=1e-9)


def test_validity_randomized_response():
    epsilon = 1.0
    results = [
        audit_epsilon(randomized_response(epsilon), 1, 0, runs=3000, delta=0.0, random_state=s, batch=True)
        for s in SEEDS
    ]
    exceed = sum(r.lower > epsilon for r in results)
    assert exceed <= allowed_exceedances(len(SEEDS), 1 - CONFIDENCE)
    # the bound is not trivially small either (so this validity check is not vacuous)
    assert np.median([r.lower for r in results]) > 0.75 * epsilon


def test_validity_gaussian_at_delta():
    epsilon, sigma = 1.0, 0.5
    # delta_lower <= delta(1): the true epsilon at delta_lower is >= 1, so comparing with 1 is stricter
    delta, _ = analytic_gaussian_delta_bounds(1.0 / sigma, epsilon)
    results = [
        audit_epsilon(gaussian(sigma), 1.0, 0.0, runs=3000, delta=delta, random_state=s, batch=True) for s in SEEDS
    ]
    exceed = sum(r.lower > epsilon for r in results)
    assert exceed <= allowed_exceedances(len(SEEDS), 1 - CONFIDENCE)
    assert np.median([r.lower for r in results]) > 0.5 * epsilon


def test_point_estimates_would_fail_the_validity_check():
    """The validity check above has teeth: the same audit without confidence intervals exceeds epsilon often."""
    epsilon = 1.0
    exceed = 0
    for s in SEEDS:
        r = audit_epsilon(randomized_response(epsilon), 1, 0, runs=3000, delta=0.0, random_state=s, batch=True)
        exceed += math.log(r.true_positives / r.false_positives) > epsilon
    assert exceed > allowed_exceedances(len(SEEDS), 1 - CONFIDENCE)


def test_power_randomized_response():
    epsilon = 1.0
    r = audit_epsilon(randomized_response(epsilon), 1, 0, runs=20_000, delta=0.0, random_state=2024, batch=True)
    assert 0.7 * epsilon <= r.lower <= epsilon
    assert (r.runs, r.holdout_runs, r.bound_runs) == (20_000, 6666, 13_334)
    assert (r.threshold, r.direction, r.positive) in {(1.0, "greater_equal", "dataset"),
                                                      (0.0, "less_equal", "neighbouring_dataset")}


def test_broken_mechanism_is_flagged():
    """A Gaussian mechanism calibrated to (1, 1e-5)-DP whose release forgets the noise."""
    delta = 1e-5
    sigma = 3.8  # analytic Gaussian: sigma 3.73 gives (1, 1e-5) at sensitivity 1, so 3.8 is private enough
    assert analytic_gaussian_delta_bounds(1.0 / sigma, 1.0)[1] <= delta
    honest = audit_epsilon(gaussian(sigma), 1.0, 0.0, runs=3000, delta=delta, random_state=5, batch=True)
    assert honest.lower <= 1.0

    def broken(x, rng, size):
        return np.full(size, x)

    r = audit_epsilon(broken, 1.0, 0.0, runs=3000, delta=delta, random_state=5, batch=True)
    assert r.lower > 1.0
    assert (r.true_positives, r.false_positives) == (r.bound_runs, 0)
    # both counts at their extremes: the Clopper-Pearson bounds are alpha^(1/n) and 1 - alpha^(1/n)
    a = (1 - CONFIDENCE) / 2
    assert r.tpr_lower == pytest.approx(a ** (1 / r.bound_runs), rel=1e-9)
    assert r.lower == pytest.approx(math.log((a ** (1 / r.bound_runs) - delta) / (1 - a ** (1 / r.bound_runs))),
                                    rel=1e-8)


def test_bound_uses_only_the_runs_the_choice_did_not_see():
    """Held-out runs separate perfectly, the bound runs are identical on both data sets: the bound is 0."""
    runs = 300
    calls = {0: 0, 1: 0}

    def release(x, rng):
        calls[x] += 1
        return float(x) if calls[x] <= runs // 3 else 0.5

    r = audit_epsilon(release, 1, 0, runs=runs, delta=0.0, random_state=0)
    assert r.lower == 0.0
    assert calls == {0: runs, 1: runs}
    assert r.true_positives in (0, r.bound_runs) and r.true_positives == r.false_positives


def test_generators_are_independent_per_run():
    draws = []

    def release(x, rng):
        draws.append(rng.integers(2**62))
        return x + rng.standard_normal()

    audit_epsilon(release, 1.0, 0.0, runs=50, delta=0.0, random_state=3)
    assert len(draws) == 100 and len(set(draws)) == 100


def test_non_batch_matches_scalar_semantics():
    """Non-batch with a scalar release gives a valid bound, with outputs scored by a score function."""
    keep = math.exp(1.0) / (1.0 + math.exp(1.0))

    def release(bit, rng):
        return {"label": bit if rng.random() < keep else 1 - bit}

    r = audit_epsilon(release, 1, 0, runs=3000, delta=0.0, random_state=1, score=lambda out: out["label"])
    assert 0.5 < r.lower <= 1.0


def test_reproducible_and_fresh_entropy():
    release = gaussian(1.0)
    a = audit_epsilon(release, 1.0, 0.0, runs=300, delta=1e-3, random_state=11, batch=True)
    b = audit_epsilon(release, 1.0, 0.0, runs=300, delta=1e-3, random_state=np.random.SeedSequence(11), batch=True)
    assert a == b
    assert isinstance(a, AuditResult) and a.to_dict()["lower"] == a.lower
    c = audit_epsilon(release, 1.0, 0.0, runs=300, delta=1e-3, random_state=np.random.default_rng(1), batch=True)
    assert isinstance(c.lower, float)
    fresh = {audit_epsilon(release, 1.0, 0.0, runs=300, delta=1e-3, batch=True).threshold for _ in range(3)}
    assert len(fresh) > 1
    with pytest.raises(AttributeError):
        a.lower = 0.0  # frozen


@pytest.mark.parametrize(
    ("kwargs", "error", "match"),
    [
        ({"runs": 2}, ValueError, "`runs` of audit_epsilon must be at least 3"),
        ({"runs": 10.0}, TypeError, "`runs` of audit_epsilon must be an integer"),
        ({"delta": 1.0}, ValueError, r"`delta` of audit_epsilon must be in \[0, 1\)"),
        ({"delta": -0.1}, ValueError, r"`delta` of audit_epsilon must be in \[0, 1\)"),
        ({"delta": float("nan")}, ValueError, "`delta` of audit_epsilon must be a number"),
        ({"confidence": 1.0}, ValueError, r"`confidence` of audit_epsilon must be in \(0, 1\)"),
        ({"confidence": "0.9"}, TypeError, "`confidence` of audit_epsilon must be a real number"),
        ({"random_state": -1}, ValueError, "`random_state` of audit_epsilon must be non-negative"),
        ({"random_state": 1.5}, TypeError, "`random_state` of audit_epsilon must be None, an int"),
        ({"score": 3}, TypeError, "`score` of audit_epsilon must be callable"),
        ({"batch": 1}, TypeError, "`batch` of audit_epsilon must be a bool"),
    ],
)
def test_validation(kwargs, error, match):
    args = {"runs": 30, "delta": 0.0} | kwargs
    with pytest.raises(error, match=match):
        audit_epsilon(lambda x, rng: float(x), 1, 0, **args)


def test_validation_of_release_and_outputs():
    with pytest.raises(TypeError, match="`release` of audit_epsilon must be callable"):
        audit_epsilon(None, 1, 0, runs=30, delta=0.0)
    with pytest.raises(ValueError, match="must be scalars when no `score` is given"):
        audit_epsilon(lambda x, rng: np.zeros(2), 1, 0, runs=30, delta=0.0)
    with pytest.raises(TypeError, match="must be real numbers when no `score` is given"):
        audit_epsilon(lambda x, rng: "a", 1, 0, runs=30, delta=0.0)
    with pytest.raises(ValueError, match="must be numbers; got nan"):
        audit_epsilon(lambda x, rng: float("nan"), 1, 0, runs=30, delta=0.0)
    with pytest.raises(TypeError, match="`score` of audit_epsilon must return a real number"):
        audit_epsilon(lambda x, rng: x, 1, 0, runs=30, delta=0.0, score=lambda out: "high")
    with pytest.raises(ValueError, match="must return `runs` = 30 outputs"):
        audit_epsilon(lambda x, rng, size: np.zeros(size + 1), 1, 0, runs=30, delta=0.0, batch=True)


# ---------------------------------------------------------------- the Gaussian-DP (f-DP) reading of the audit


def test_gdp_mu_lower_known_values():
    from dpledger.predict.audit import gdp_mu_lower

    # the exact rates of the test {x >= 1/2} on N(1, 1) against N(0, 1): mu = 1 exactly
    assert gdp_mu_lower(stats.norm.cdf(0.5), stats.norm.cdf(-0.5)) == pytest.approx(1.0, abs=1e-9)
    assert gdp_mu_lower(stats.norm.cdf(0.5), stats.norm.cdf(-0.5)) < 1.0  # lowered, never raised
    assert gdp_mu_lower(0.3, 0.3) == 0.0 and gdp_mu_lower(0.2, 0.6) == 0.0 and gdp_mu_lower(0.0, 0.0) == 0.0
    with pytest.raises(ValueError, match="must be in \\[0, 1\\]"):
        gdp_mu_lower(1.5, 0.1)


def test_gdp_epsilon_estimate_is_the_gaussian_profile():
    from dpledger.predict.audit import gdp_epsilon_estimate

    eps = gdp_epsilon_estimate(1.0, 1e-5)
    delta_low, delta_up = analytic_gaussian_delta_bounds(1.0, eps)  # sigma = 1, sensitivity 1: mu = 1
    assert delta_low <= 1e-5 * (1 + 1e-9) and eps == pytest.approx(4.3772, abs=1e-4)
    assert gdp_epsilon_estimate(0.0, 1e-5) == 0.0 and gdp_epsilon_estimate(0.5, 0.0) == math.inf


def test_gdp_mu_lower_is_valid_and_tight_over_50_seeds():
    """sigma = 1: the Gaussian mechanism is exactly 1-GDP. The mu lower bound exceeds 1 no more often than the
    confidence allows and, from 3,000 runs, gets within 30% of it; its epsilon estimate is labelled and differs
    from the (much looser) epsilon lower bound."""
    results = [audit_epsilon(gaussian(1.0), 1.0, 0.0, runs=3000, delta=1e-5, random_state=s, batch=True)
               for s in SEEDS]
    mus = [r.gdp_mu_lower for r in results]
    assert sum(mu > 1.0 for mu in mus) <= allowed_exceedances(len(SEEDS), 1 - CONFIDENCE)
    assert np.median(mus) > 0.7
    r = results[0]
    assert gdp_point_consistent(r)
    assert np.median([x.gdp_epsilon_estimate for x in results]) > np.median([x.lower for x in results])


def gdp_point_consistent(r):
    """The Clopper-Pearson point of the GDP test lies on the Gaussian trade-off curve of mu_lower (+ slack)."""
    beta = stats.norm.cdf(stats.norm.ppf(1 - r.gdp_fpr_upper) - r.gdp_mu_lower)
    return abs(beta - (1 - r.gdp_tpr_lower)) < 1e-8


def test_gdp_mu_lower_of_a_noiseless_release_is_large():
    r = audit_epsilon(lambda x, rng, size: np.full(size, x), 1.0, 0.0, runs=300, delta=1e-5, random_state=0,
                      batch=True)
    a = (1 - CONFIDENCE) / 2
    # both counts extreme: TPR_lower = a^(1/n), FPR_upper = 1 - a^(1/n)
    n = r.bound_runs
    assert r.gdp_mu_lower == pytest.approx(2 * stats.norm.ppf(a ** (1 / n)), rel=1e-8)
