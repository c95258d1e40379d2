"""Black-box empirical privacy audits: a statistical lower bound on epsilon from many runs of a release.

An (epsilon, delta)-DP release ``M`` satisfies, for a neighbouring pair ``(D, D')`` and every set ``S`` of outputs,
``P[M(D) in S] <= e^epsilon P[M(D') in S] + delta`` and the same with ``D`` and ``D'`` exchanged (Dwork & Roth
2014, Def 2.4; the neighbouring relation is symmetric). With ``TPR = P[M(D) in S]`` and ``FPR = P[M(D') in S]``:

* applied to ``S``:                   ``TPR <= e^epsilon FPR + delta``, so
  ``epsilon >= log((TPR - delta) / FPR)``;
* applied to the complement of ``S`` with ``D`` and ``D'`` exchanged: ``1 - FPR <= e^epsilon (1 - TPR) + delta``,
  so ``epsilon >= log((1 - FPR - delta) / (1 - TPR))``.

Both right-hand sides increase in ``TPR`` and decrease in ``FPR``, so replacing ``TPR`` by a one-sided lower
confidence bound and ``FPR`` by a one-sided upper one gives, in both, a lower bound on the epsilon of every
(epsilon, delta) guarantee the release can have, valid with the two bounds' joint confidence (the complement
form needs ``FPR_upper`` and ``TPR_lower`` too, not ``FPR_lower`` and ``TPR_upper``: those would be optimistic).
Either data set of the pair may play the role of ``D`` (the "positive" one).
This is the audit of Jagielski, Ullman & Oprea (NeurIPS 2020, "Auditing differentially private machine
learning: how private is private SGD?", Sec 3 and Algorithm 2) and Nasr, Song, Thakurta, Papernot & Carlini
(IEEE S&P 2021, "Adversary instantiation: lower bounds for differentially private machine learning", Sec 3.2),
with Clopper-Pearson intervals (Clopper & Pearson 1934) as in both papers.

The runs also give a Gaussian-DP (f-DP) reading of the trade-off. A ``mu``-GDP release has, for every test,
type-II error ``1 - TPR >= G_mu(FPR) = Phi(Phi^-1(1 - FPR) - mu)`` (Dong, Roth & Su, "Gaussian differential
privacy", JRSS-B 2022, arXiv:1905.02383: the definitions of f-DP and mu-GDP in Sec 2; the formula below is their
Eq. (6) rearranged), so

    mu >= Phi^-1(1 - FPR) - Phi^-1(1 - TPR) = Phi^-1(TPR) - Phi^-1(FPR),

increasing in ``TPR`` and decreasing in ``FPR``: with ``TPR_lower`` and ``FPR_upper`` of one test it is a lower
bound on the ``mu`` of every GDP guarantee the release can have, at the intervals' confidence (the complement form
gives the same value: the Gaussian trade-off function is symmetric). That test is chosen separately, on the same
held-out runs, by the ``mu`` it would give (the test that maximises the epsilon bound sits in a tail and reads
``mu`` poorly). Converted to epsilon at ``delta`` through the exact mu-GDP profile (Dong, Roth & Su, Cor 2.13) it
is only an **estimate** of epsilon: it assumes the release's trade-off curve is Gaussian, which the audit does not
establish.

:func:`audit_epsilon` runs the release ``runs`` times on each data set, chooses the distinguishing test (a
threshold on a scalar score of the output, its direction, and which data set is positive) on a held-out
third of the runs only, and computes the bound from the remaining runs, which the choice never saw: given the
choice, the two counts there are independent binomials, so the Clopper-Pearson bounds hold at their stated
levels (they are conservative). This module is
not imported by :mod:`dpledger.mechanisms` or :mod:`dpledger.accountants`.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np
from scipy import special, stats

from dpledger.accountants.individual_conversions import gdp_epsilon
from dpledger.mechanisms import _validate
from dpledger.predict._common import seed_sequence

__all__ = ["AuditResult", "audit_epsilon", "clopper_pearson_lower", "clopper_pearson_upper", "gdp_mu_lower",
           "gdp_epsilon_estimate"]

_OWNER = "audit_epsilon"
# Relative slack applied to scipy's beta quantiles and to the final logarithm, toward the conservative side, for
# their floating-point error (scipy's incomplete-beta inverse is accurate to a few ulps; 1e-12 covers it amply).
_SLACK = 1e-12
_ABS_SLACK = 1e-10
# The held-out choice scans at most this many thresholds (quantiles of the pooled held-out scores).
_MAX_THRESHOLDS = 512


@dataclass(frozen=True, slots=True)
class AuditResult:
    """The outcome of :func:`audit_epsilon`.

    Attributes
    ----------
    lower : float
        A **statistical lower bound** on epsilon: with probability at least ``confidence`` over the runs, every
        ``(epsilon, delta)``-DP guarantee of the release for this neighbouring pair (at this ``delta``) has
        ``epsilon >= lower``. ``0.0`` when the test finds nothing. Not an accounting bound.
    threshold : float
        The test's threshold on the score.
    direction : {"greater_equal", "less_equal"}
        The test's set: ``S = {score >= threshold}`` or ``S = {score <= threshold}``.
    positive : {"dataset", "neighbouring_dataset"}
        The data set whose rate in ``S`` is ``TPR`` (the other's is ``FPR``).
    form : {"set", "complement"}
        Which inequality gave the bound: ``"set"`` is ``log((TPR_lower - delta) / FPR_upper)``, ``"complement"`` is
        ``log((1 - FPR_upper - delta) / (1 - TPR_lower))``.
    true_positives, false_positives : int
        On the bound runs: how many outputs on the positive (resp. the other) data set fell in ``S``.
    bound_runs, holdout_runs : int
        Runs per data set used for the bound and for choosing the test (``bound_runs + holdout_runs == runs``).
    tpr_lower, fpr_upper : float
        The one-sided Clopper-Pearson bounds used, each at confidence ``1 - (1 - confidence) / 2`` (Bonferroni).
    runs : int
        Releases per data set.
    delta, confidence : float
        As passed.
    gdp_mu_lower : float
        A **statistical lower bound** on ``mu`` for Gaussian DP (:func:`gdp_mu_lower`) from a second test, chosen
        on the same held-out runs by the ``mu`` it would give, and Clopper-Pearson limits on the bound runs at the
        same levels: with probability ``confidence``, the release is not ``mu``-GDP for any
        ``mu < gdp_mu_lower``. It is a claim of its own (the epsilon bound and it each hold with probability
        ``confidence``; both together with probability ``2 confidence - 1``). ``0.0`` when the test finds nothing.
    gdp_tpr_lower, gdp_fpr_upper : float
        The limits behind ``gdp_mu_lower``: with ``confidence``, the release's trade-off function (f-DP) at
        ``gdp_fpr_upper`` is at most ``1 - gdp_tpr_lower`` (an empirical point of the trade-off curve).
    gdp_epsilon_estimate : float
        The epsilon at ``delta`` of ``gdp_mu_lower``-GDP (:func:`gdp_epsilon_estimate`): an **estimate** of the
        release's epsilon that assumes a Gaussian trade-off curve; never a bound. ``inf`` at ``delta = 0`` when
        ``gdp_mu_lower > 0`` (GDP is never pure DP).
    """

    lower: float
    threshold: float
    direction: Literal["greater_equal", "less_equal"]
    positive: Literal["dataset", "neighbouring_dataset"]
    form: Literal["set", "complement"]
    true_positives: int
    false_positives: int
    bound_runs: int
    holdout_runs: int
    tpr_lower: float
    fpr_upper: float
    runs: int
    delta: float
    confidence: float
    gdp_mu_lower: float = 0.0
    gdp_epsilon_estimate: float = 0.0
    gdp_tpr_lower: float = 0.0
    gdp_fpr_upper: float = 1.0

    def to_dict(self) -> dict[str, Any]:
        """The result as a plain dict (JSON-serialisable)."""
        return {name: getattr(self, name) for name in self.__dataclass_fields__}


def clopper_pearson_lower(successes: Any, trials: Any, alpha: float) -> np.ndarray:
    """One-sided Clopper-Pearson lower bound: ``P[p < bound] <= alpha`` for ``successes ~ Bin(trials, p)``.

    ``bound = Beta^{-1}(alpha; k, n - k + 1)`` for ``k >= 1`` and ``0`` for ``k = 0`` (Clopper & Pearson 1934),
    moved down by a relative ``1e-12`` for the quantile's floating-point error. Vectorised; ``successes`` may be
    non-integer (then it is the beta quantile at those parameters, used only to *choose* tests).
    """
    k = np.asarray(successes, dtype=np.float64)
    n = np.asarray(trials, dtype=np.float64)
    with np.errstate(invalid="ignore", divide="ignore"):
        q = stats.beta.ppf(alpha, np.maximum(k, 1e-300), n - k + 1.0)
    q = np.where(k <= 0, 0.0, q * (1.0 - _SLACK))
    return np.clip(q, 0.0, 1.0)[()]


def clopper_pearson_upper(successes: Any, trials: Any, alpha: float) -> np.ndarray:
    """One-sided Clopper-Pearson upper bound: ``P[p > bound] <= alpha``; ``1 - lower(n - k, n, alpha)``.

    ``bound = Beta^{-1}(1 - alpha; k + 1, n - k)`` for ``k < n`` and ``1`` for ``k = n``, moved up for the
    quantile's floating-point error.
    """
    return _upper(successes, trials, alpha)


def _upper(k, n, alpha):
    k = np.asarray(k, dtype=np.float64)
    n = np.asarray(n, dtype=np.float64)
    lo = np.asarray(clopper_pearson_lower(n - k, n, alpha), dtype=np.float64)
    up = (1.0 - lo) * (1.0 + _SLACK)
    return np.clip(up, 0.0, 1.0)[()]


def gdp_mu_lower(tpr_lower: float, fpr_upper: float) -> float:
    """Lower bound on the ``mu`` of Gaussian DP from a test's ``TPR`` lower and ``FPR`` upper confidence limits.

    ``mu >= Phi^-1(TPR_lower) - Phi^-1(FPR_upper)`` (mu-GDP of Dong, Roth & Su 2022, Sec 2, with the Gaussian
    trade-off function ``G_mu(a) = Phi(Phi^-1(1 - a) - mu)``: ``1 - TPR >= G_mu(FPR)``; their Eq. (6)), clipped
    at 0 and lowered by ``1e-10`` for the quantile function's floating-point error. It holds whenever the two
    limits hold.

    Examples
    --------
    >>> from scipy.stats import norm
    >>> round(gdp_mu_lower(norm.cdf(0.5), norm.cdf(-0.5)), 9)    # the Gaussian pair N(1, 1) vs N(0, 1)
    1.0
    """
    tpr = _validate.real(tpr_lower, "tpr_lower", "gdp_mu_lower")
    fpr = _validate.real(fpr_upper, "fpr_upper", "gdp_mu_lower")
    if not (0.0 <= tpr <= 1.0 and 0.0 <= fpr <= 1.0):
        raise ValueError(f"`tpr_lower` and `fpr_upper` of gdp_mu_lower must be in [0, 1]; got {tpr} and {fpr}.")
    with np.errstate(invalid="ignore"):
        mu = float(special.ndtri(tpr) - special.ndtri(fpr))
    if not mu > _ABS_SLACK:  # nan (both 0 or both 1) and non-positive values say nothing
        return 0.0
    return mu - _ABS_SLACK if math.isfinite(mu) else math.inf


def gdp_epsilon_estimate(mu: float, delta: float) -> float:
    """Epsilon at ``delta`` of ``mu``-GDP, from the exact GDP profile ``delta(eps) = Phi(-eps/mu + mu/2) -
    e^eps Phi(-eps/mu - mu/2)`` (Dong, Roth & Su 2022, Cor 2.13;
    :func:`~dpledger.accountants.individual_conversions.gdp_epsilon`). Applied to an audit's ``mu`` it is an
    **estimate** of the audited release's epsilon (it assumes a Gaussian trade-off curve). ``0`` for ``mu = 0``;
    ``inf`` for ``delta = 0`` and ``mu > 0``.
    """
    mu = _validate.real(mu, "mu", "gdp_epsilon_estimate")
    delta = _validate.real(delta, "delta", "gdp_epsilon_estimate")
    if mu < 0.0 or not 0.0 <= delta < 1.0:
        raise ValueError(f"`mu` of gdp_epsilon_estimate must be >= 0 and `delta` in [0, 1); got {mu} and {delta}.")
    if mu == 0.0:
        return 0.0
    if delta == 0.0 or math.isinf(mu):
        return math.inf
    return float(gdp_epsilon(0.5 * mu * mu, delta))


def _epsilon_bounds(tp, fp, n, delta, alpha_each):
    """Both forms' lower bounds on epsilon from ``TPR_lower`` and ``FPR_upper``, vectorised over the counts.

    ``log((TPR_lower - delta) / FPR_upper)`` and ``log((1 - FPR_upper - delta) / (1 - TPR_lower))``; both are
    increasing in ``TPR`` and decreasing in ``FPR``, so the same two one-sided bounds serve both. ``-inf`` where a
    numerator is not positive.
    """
    tpr_lo = np.asarray(clopper_pearson_lower(tp, n, alpha_each), dtype=np.float64)
    fpr_up = np.asarray(_upper(fp, n, alpha_each), dtype=np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        set_form = np.log(np.maximum(tpr_lo - delta, 0.0)) - np.log(fpr_up)
        complement_form = np.log(np.maximum(1.0 - fpr_up - delta, 0.0)) - np.log(1.0 - tpr_lo)
    set_form = np.where(np.isnan(set_form), -np.inf, set_form)
    complement_form = np.where(np.isnan(complement_form), -np.inf, complement_form)
    return set_form, complement_form, tpr_lo, fpr_up


def _scores(outputs, score, which):
    if score is None:
        try:
            values = np.asarray(outputs, dtype=np.float64)
        except (TypeError, ValueError):
            raise TypeError(
                f"outputs of `release` on `{which}` of {_OWNER} must be real numbers when no `score` is given; "
                "pass `score=` to map each output to a float."
            ) from None
    else:
        values = np.empty(len(outputs), dtype=np.float64)
        for i, out in enumerate(outputs):
            s = score(out)
            if isinstance(s, (bool, np.bool_)):
                s = float(s)
            if not isinstance(s, numbers.Real) and not (isinstance(s, np.ndarray) and s.ndim == 0):
                raise TypeError(f"`score` of {_OWNER} must return a real number; got {type(s).__name__} {s!r}.")
            values[i] = float(s)
    if values.ndim != 1:
        raise ValueError(
            f"outputs of `release` on `{which}` of {_OWNER} must be scalars when no `score` is given; got shape "
            f"{values.shape[1:]} per run; pass `score=`."
        )
    if np.isnan(values).any():
        raise ValueError(f"scores of the outputs on `{which}` of {_OWNER} must be numbers; got nan.")
    return values


def _run(release, data, seeds, batch, which):
    if batch:
        outputs = release(data, np.random.default_rng(seeds[0]), len(seeds) - 1)
        try:
            count = len(outputs)
        except TypeError:
            raise TypeError(
                f"`release` of {_OWNER} with batch=True must return a sequence of outputs on `{which}`; "
                f"got {type(outputs).__name__}."
            ) from None
        if count != len(seeds) - 1:
            raise ValueError(
                f"`release` of {_OWNER} with batch=True must return `runs` = {len(seeds) - 1} outputs on "
                f"`{which}`; got {count}."
            )
        return outputs
    return [release(data, np.random.default_rng(s)) for s in seeds[1:]]


def _counts(d_sorted, n_sorted, thresholds, direction):
    h_d, h_n = d_sorted.size, n_sorted.size
    if direction == "greater_equal":
        return (h_d - np.searchsorted(d_sorted, thresholds, side="left"),
                h_n - np.searchsorted(n_sorted, thresholds, side="left"))
    return np.searchsorted(d_sorted, thresholds, side="right"), np.searchsorted(n_sorted, thresholds, side="right")


def _epsilon_objective(n_bound, delta, alpha_each):
    def objective(tp, fp):
        set_form, complement_form, _, _ = _epsilon_bounds(tp, fp, n_bound, delta, alpha_each)
        return np.maximum(set_form, complement_form)
    return objective


def _gdp_objective(n_bound, alpha_each):
    def objective(tp, fp):
        tpr_lo = np.asarray(clopper_pearson_lower(tp, n_bound, alpha_each), dtype=np.float64)
        fpr_up = np.asarray(_upper(fp, n_bound, alpha_each), dtype=np.float64)
        with np.errstate(invalid="ignore"):
            mu = special.ndtri(tpr_lo) - special.ndtri(fpr_up)
        return np.where(np.isnan(mu), -np.inf, mu)
    return objective


def _choose(held_d, held_n, n_bound, objective):
    """The test (threshold, direction, positive data set) maximising, on the held-out runs, ``objective`` of the
    counts that the bound runs would give if their rates equalled the held-out rates (the objective is the bound
    itself, evaluated at those counts: a regularised empirical value; the raw ratio would pick tests with an
    empirical rate of 0 and an infinite estimate)."""
    pooled = np.concatenate([held_d, held_n])
    candidates = np.unique(pooled)
    if candidates.size > _MAX_THRESHOLDS:
        candidates = np.unique(np.quantile(pooled, np.linspace(0.0, 1.0, _MAX_THRESHOLDS), method="inverted_cdf"))
    d_sorted, n_sorted = np.sort(held_d), np.sort(held_n)
    scale = n_bound / held_d.size
    best_value, best = -np.inf, (float(candidates[0]), "greater_equal", "dataset")
    for direction in ("greater_equal", "less_equal"):
        in_d, in_n = _counts(d_sorted, n_sorted, candidates, direction)
        for positive, tp, fp in (("dataset", in_d, in_n), ("neighbouring_dataset", in_n, in_d)):
            values = objective(tp * scale, fp * scale)
            i = int(np.argmax(values))
            if values[i] > best_value:
                best_value, best = values[i], (float(candidates[i]), direction, positive)
    return best  # when nothing separates the held-out runs, a fixed test: its (zero) bound is still valid


def _bound_counts(s_d, s_n, test):
    threshold, direction, positive = test
    in_d, in_n = _counts(np.sort(s_d), np.sort(s_n), np.array([threshold]), direction)
    return (int(in_d[0]), int(in_n[0])) if positive == "dataset" else (int(in_n[0]), int(in_d[0]))


def audit_epsilon(
    release: Callable[..., Any],
    dataset: Any,
    neighbouring_dataset: Any,
    *,
    runs: int,
    delta: float,
    confidence: float = 0.95,
    random_state: int | np.random.SeedSequence | np.random.Generator | None = None,
    score: Callable[[Any], float] | None = None,
    batch: bool = False,
) -> AuditResult:
    """A lower bound on the epsilon of ``release`` at ``delta``, valid with probability ``confidence``.

    Parameters
    ----------
    release : callable
        ``release(dataset, rng) -> output``: one run of the mechanism under audit with the generator ``rng``.
        With ``batch=True``, ``release(dataset, rng, size)`` must return ``size`` outputs drawn **independently**
        (e.g. one vectorised call); the audit then relies on that independence.
    dataset, neighbouring_dataset : object
        A neighbouring pair, passed unchanged to ``release``.
    runs : int
        Releases on each data set (at least 3). The first ``runs // 3`` of each choose the test; the other
        ``runs - runs // 3`` give the bound.
    delta : float
        The delta at which epsilon is bounded, in [0, 1).
    confidence : float
        In (0, 1). The failure probability ``1 - confidence`` is split equally (Bonferroni) between the two
        one-sided Clopper-Pearson bounds, on the rate on ``dataset`` and on ``neighbouring_dataset``.
    random_state : None, int, SeedSequence or Generator
        One ``SeedSequence`` (fresh entropy when None) is spawned into one independent generator per run and data
        set.
    score : callable, optional
        Maps an output to a real number; default: the output itself as a float. Needed for non-scalar outputs.
    batch : bool
        Call ``release`` once per data set with a ``size`` argument (see ``release``).

    Returns
    -------
    AuditResult
        ``.lower`` is the bound. With ``S`` the chosen test set, ``TPR``/``FPR`` its probability on ``dataset`` /
        ``neighbouring_dataset``, and Clopper-Pearson bounds at level ``(1 - confidence) / 2`` each on the bound
        runs::

            lower = max(log((TPR_lower - delta) / FPR_upper),
                        log((1 - FPR_upper - delta) / (1 - TPR_lower)), 0)

        from ``P[S] <= e^epsilon Q[S] + delta`` applied to ``S`` and, with the pair exchanged, to its complement
        (Jagielski, Ullman & Oprea 2020, Sec 3; Nasr et al. 2021, Sec 3.2); both forms use the same two
        intervals. The threshold, the direction and the positive data set are chosen on the held-out runs (by the
        bound they would give at the bound runs' size); the value is lowered by 1e-10 for floating-point error.
        It is a statistical lower bound (valid with probability ``confidence``), not a proven accounting bound.
        ``gdp_mu_lower`` and ``gdp_epsilon_estimate`` read the same test as Gaussian DP (see the module
        docstring): a lower bound on ``mu`` and, from it, an estimate (not a bound) of epsilon.

    Examples
    --------
    >>> import numpy as np
    >>> p = np.exp(1.0) / (1.0 + np.exp(1.0))          # randomized response with epsilon = 1
    >>> rr = lambda bit, rng, size: np.where(rng.random(size) < p, bit, 1 - bit)
    >>> result = audit_epsilon(rr, 1, 0, runs=30_000, delta=0.0, random_state=0, batch=True)
    >>> 0.9 < result.lower <= 1.0
    True
    """
    if not callable(release):
        raise TypeError(f"`release` of {_OWNER} must be callable; got {type(release).__name__}.")
    if score is not None and not callable(score):
        raise TypeError(f"`score` of {_OWNER} must be callable or None; got {type(score).__name__}.")
    if not isinstance(batch, (bool, np.bool_)):
        raise TypeError(f"`batch` of {_OWNER} must be a bool; got {type(batch).__name__}.")
    runs = _validate.integer(runs, "runs", _OWNER, minimum=3)
    delta = _validate.real(delta, "delta", _OWNER)
    if not 0.0 <= delta < 1.0:
        raise ValueError(f"`delta` of {_OWNER} must be in [0, 1); got {delta}.")
    confidence = _validate.open_unit_interval(confidence, "confidence", _OWNER)
    seeds = seed_sequence(random_state, _OWNER).spawn(2 * (runs + 1))

    outputs_d = _run(release, dataset, seeds[: runs + 1], batch, "dataset")
    outputs_n = _run(release, neighbouring_dataset, seeds[runs + 1 :], batch, "neighbouring_dataset")
    s_d = _scores(outputs_d, score, "dataset")
    s_n = _scores(outputs_n, score, "neighbouring_dataset")

    holdout = runs // 3
    n_bound = runs - holdout
    alpha_each = (1.0 - confidence) / 2.0  # Bonferroni: the two one-sided bounds fail together w.p. <= 1 - conf.
    test = _choose(s_d[:holdout], s_n[:holdout], n_bound, _epsilon_objective(n_bound, delta, alpha_each))
    threshold, direction, positive = test
    tp, fp = _bound_counts(s_d[holdout:], s_n[holdout:], test)
    # the Gaussian-DP reading has its own test, chosen on the same held-out runs by the mu it would give
    gdp_test = _choose(s_d[:holdout], s_n[:holdout], n_bound, _gdp_objective(n_bound, alpha_each))
    gdp_tp, gdp_fp = _bound_counts(s_d[holdout:], s_n[holdout:], gdp_test)
    gdp_tpr_lo = float(clopper_pearson_lower(gdp_tp, n_bound, alpha_each))
    gdp_fpr_up = float(_upper(gdp_fp, n_bound, alpha_each))
    set_form, complement_form, tpr_lo, fpr_up = _epsilon_bounds(tp, fp, n_bound, delta, alpha_each)
    set_value, complement_value = float(set_form), float(complement_form)
    form = "set" if set_value >= complement_value else "complement"
    value = max(set_value, complement_value)
    # log(a) - log(b) with a, b >= 1e-308 errs by at most a few ulps of 2 * 709: 1e-10 covers it.
    lower = 0.0 if not value > 0.0 else max(0.0, math.nextafter(value - _ABS_SLACK, 0.0))
    return AuditResult(
        lower=lower,
        threshold=threshold,
        direction=direction,
        positive=positive,
        form=form,
        true_positives=tp,
        false_positives=fp,
        bound_runs=n_bound,
        holdout_runs=holdout,
        tpr_lower=float(tpr_lo),
        fpr_upper=float(fpr_up),
        runs=runs,
        delta=delta,
        confidence=confidence,
        gdp_mu_lower=(mu := gdp_mu_lower(gdp_tpr_lo, gdp_fpr_up)),
        gdp_epsilon_estimate=gdp_epsilon_estimate(mu, delta),
        gdp_tpr_lower=gdp_tpr_lo,
        gdp_fpr_upper=gdp_fpr_up,
    )

