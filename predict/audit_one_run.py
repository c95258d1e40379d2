"""The one-run audit: a lower bound on epsilon from ONE run with many canaries (Steinke, Nasr & Jagielski 2023).

Steinke, Nasr & Jagielski, "Privacy auditing with one (1) training run", NeurIPS 2023 (arXiv:2305.08846). Each of
``m`` canaries is included in the input independently with probability 1/2 (``S_i`` uniform in {0, 1}); the
release runs once; from its output alone an auditor guesses ``S_i`` for ``r`` of the canaries (abstaining on the
rest, the number of guesses fixed in advance) and gets ``v`` right.

Pure DP (``delta = 0``), proved here: given the output and the other canaries' bits, the posterior odds of
``S_i = 1`` are ``P[out | S_i = 1, S_-i] / P[out | S_i = 0, S_-i]`` (the prior is 1/2), at most ``e^eps`` and at
least ``e^-eps`` for an eps-DP release (the two inputs are add-or-remove neighbours). So each guess, given the
output and all earlier bits, is right with probability at most ``q = e^eps / (1 + e^eps)``, and the number of
right guesses is stochastically dominated by ``Binomial(r, q)`` (the paper's main theorem, pure-DP case). The
p-value of ``v`` right guesses under "the release is eps-DP" is ``P[Binomial(r, q) >= v]``.

Approximate DP (``delta > 0``): the paper's main theorem adds a ``delta`` term; the p-value is

    P[Binomial(r, q) >= v] + 2 m delta max_{1 <= i <= v} P[v - i <= Binomial(r, q) < v] / i,

as computed by the paper's appendix code and, independently, by Google DeepMind's ``jax_privacy.auditing``
(``_one_run_p_value``). **Verification status:** this formula was checked against those two implementations, not
against the theorem's proof, and the theorem's number could not be checked here (no access to the paper's text);
:func:`one_run_p_value` with ``delta > 0`` inherits that status. The ``delta = 0`` case is proved above and
tested against an exact (mpmath) binomial tail and by simulation.

:func:`one_run_epsilon_lower` returns the largest epsilon whose p-value is below ``1 - confidence``: with
probability at least ``confidence`` the release is not (epsilon, delta)-DP for any smaller epsilon. A **lower
bound** from the audit's own randomness, never an accounting bound. This module is not imported by
:mod:`dpledger.mechanisms` or :mod:`dpledger.accountants`.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy import special, stats

from dpledger.mechanisms import _validate
from dpledger.predict._common import seed_sequence

__all__ = ["OneRunAuditResult", "audit_one_run", "one_run_epsilon_lower", "one_run_p_value"]

_OWNER = "audit_one_run"
# Relative slack on the p-value for the floating-point error of scipy's binomial tail (accurate to ~1e-14).
_P_SLACK = 1e-9
_TOL = 1e-9


@dataclass(frozen=True, slots=True)
class OneRunAuditResult:
    """The outcome of :func:`audit_one_run`.

    Attributes
    ----------
    lower : float
        A **statistical lower bound** on epsilon at ``delta``, valid with probability ``confidence``
        (:func:`one_run_epsilon_lower`); not an accounting bound.
    canaries, guesses, correct : int
        ``m``, ``r`` and ``v``: canaries, guesses made (the rest abstained), guesses that were right.
    included : int
        How many canaries the coin flips put in.
    delta, confidence : float
        As passed.
    """

    lower: float
    canaries: int
    guesses: int
    correct: int
    included: int
    delta: float
    confidence: float

    def to_dict(self) -> dict[str, Any]:
        """The result as a plain dict (JSON-serialisable)."""
        return {name: getattr(self, name) for name in self.__dataclass_fields__}


def _counts(canaries, guesses, correct, owner):
    m = _validate.integer(canaries, "canaries", owner, minimum=1)
    r = _validate.integer(guesses, "guesses", owner, minimum=0)
    v = _validate.integer(correct, "correct", owner, minimum=0)
    if not v <= r <= m:
        raise ValueError(f"`correct` <= `guesses` <= `canaries` must hold for {owner}; got {v}, {r} and {m}.")
    return m, r, v


def _p_value(m, r, v, epsilon, delta):
    q = float(special.expit(epsilon))
    tail = float(stats.binom.sf(v - 1, r, q))  # P[Bin(r, q) >= v]
    if delta > 0.0 and v > 0:
        i = np.arange(1, v + 1)
        between = np.cumsum(stats.binom.pmf(v - i, r, q))  # P[v - i <= Bin(r, q) < v]
        tail += 2.0 * m * delta * float(np.max(between / i))
    return min(1.0, tail * (1.0 + _P_SLACK))


def one_run_p_value(canaries: int, guesses: int, correct: int, *, epsilon: float, delta: float) -> float:
    """P-value of ``correct`` right guesses out of ``guesses`` with ``canaries`` canaries, under the hypothesis
    that the release is ``(epsilon, delta)``-DP (Steinke, Nasr & Jagielski 2023; the formula and its
    verification status are in the module docstring). Raised by a relative ``1e-9`` for floating-point error
    (a larger p-value only makes the audit more cautious); capped at 1.

    Examples
    --------
    >>> round(one_run_p_value(100, 10, 10, epsilon=0.0, delta=0.0), 12)   # ten fair coins all right: 2^-10
    0.000976562501
    """
    m, r, v = _counts(canaries, guesses, correct, "one_run_p_value")
    epsilon = _validate.real(epsilon, "epsilon", "one_run_p_value")
    delta = _validate.real(delta, "delta", "one_run_p_value")
    if not epsilon >= 0.0:
        raise ValueError(f"`epsilon` of one_run_p_value must be non-negative; got {epsilon}.")
    if not 0.0 <= delta < 1.0:
        raise ValueError(f"`delta` of one_run_p_value must be in [0, 1); got {delta}.")
    return _p_value(m, r, v, epsilon, delta)


def one_run_epsilon_lower(canaries: int, guesses: int, correct: int, *, delta: float,
                          confidence: float = 0.95) -> float:
    """The largest epsilon (bisected to ``1e-9`` and rounded down) whose p-value (:func:`one_run_p_value`) is
    below ``1 - confidence``: a **lower bound** on the epsilon of every ``(epsilon, delta)`` guarantee of the
    release, valid with probability ``confidence``. ``0`` when even epsilon = 0 is not rejected; ``inf`` when no
    epsilon up to 1e4 is accepted (impossible for ``r`` below about 1e4 guesses).

    Examples
    --------
    >>> lower = one_run_epsilon_lower(1000, 100, 90, delta=0.0)
    >>> from scipy import stats, special
    >>> tail = lambda eps: stats.binom.sf(89, 100, special.expit(eps))    # P[Bin(100, q) >= 90]
    >>> bool(tail(lower) < 0.05 <= tail(lower + 1e-6))
    True
    """
    owner = "one_run_epsilon_lower"
    m, r, v = _counts(canaries, guesses, correct, owner)
    delta = _validate.real(delta, "delta", owner)
    if not 0.0 <= delta < 1.0:
        raise ValueError(f"`delta` of {owner} must be in [0, 1); got {delta}.")
    confidence = _validate.open_unit_interval(confidence, "confidence", owner)
    level = 1.0 - confidence
    if not _p_value(m, r, v, 0.0, delta) < level:
        return 0.0
    lo, hi = 0.0, 1.0  # invariant: p(lo) < level
    while _p_value(m, r, v, hi, delta) < level:
        lo, hi = hi, 2.0 * hi
        if hi > 1e4:
            return math.inf
    while hi - lo > _TOL:
        mid = 0.5 * (lo + hi)
        if _p_value(m, r, v, mid, delta) < level:
            lo = mid
        else:
            hi = mid
    return lo


def audit_one_run(
    release: Callable[[np.ndarray, np.random.Generator], Any],
    canaries: int,
    *,
    guesses_in: int,
    guesses_out: int,
    delta: float,
    confidence: float = 0.95,
    random_state: int | np.random.SeedSequence | np.random.Generator | None = None,
) -> OneRunAuditResult:
    """Run the one-run audit of Steinke, Nasr & Jagielski 2023 on ``release``.

    Parameters
    ----------
    release : callable
        ``release(included, rng) -> scores``: ONE run of the mechanism on an input holding canary ``i`` exactly
        when ``included[i]`` (a boolean array of length ``canaries``), returning one real score per canary
        computed from the run's output only (higher: more likely included). It must be (epsilon, delta)-DP with
        respect to adding or removing each canary.
    canaries : int
        ``m``; each canary is included independently with probability 1/2.
    guesses_in, guesses_out : int
        Fixed before the run: the ``guesses_in`` highest scores are guessed "in", the ``guesses_out`` lowest
        "out", the rest abstain (ties broken by canary index, which is independent of the coin flips).
    delta : float
        In [0, 1); see the module docstring for the status of ``delta > 0``.
    confidence : float
        In (0, 1).
    random_state : None, int, SeedSequence or Generator
        One ``SeedSequence`` (fresh entropy when None) spawns the coin flips' generator and the run's.

    Returns
    -------
    OneRunAuditResult
        ``lower`` is :func:`one_run_epsilon_lower` of the counts: a statistical lower bound.
    """
    if not callable(release):
        raise TypeError(f"`release` of {_OWNER} must be callable; got {type(release).__name__}.")
    m = _validate.integer(canaries, "canaries", _OWNER, minimum=1)
    k_in = _validate.integer(guesses_in, "guesses_in", _OWNER, minimum=0)
    k_out = _validate.integer(guesses_out, "guesses_out", _OWNER, minimum=0)
    if not 1 <= k_in + k_out <= m:
        raise ValueError(f"`guesses_in` + `guesses_out` of {_OWNER} must be in [1, canaries = {m}]; got "
                         f"{k_in + k_out}.")
    delta = _validate.real(delta, "delta", _OWNER)
    if not 0.0 <= delta < 1.0:
        raise ValueError(f"`delta` of {_OWNER} must be in [0, 1); got {delta}.")
    confidence = _validate.open_unit_interval(confidence, "confidence", _OWNER)
    coins, run = seed_sequence(random_state, _OWNER).spawn(2)
    included = np.random.default_rng(coins).random(m) < 0.5
    try:
        scores = np.asarray(release(included.copy(), np.random.default_rng(run)), dtype=np.float64)
    except (TypeError, ValueError):
        raise TypeError(f"`release` of {_OWNER} must return {m} real scores.") from None
    if scores.shape != (m,) or np.isnan(scores).any():
        raise ValueError(f"`release` of {_OWNER} must return {m} scores, none nan; got shape {scores.shape}.")
    order = np.argsort(scores, kind="stable")
    correct = int(included[order[m - k_in:]].sum()) if k_in else 0
    correct += int((~included[order[:k_out]]).sum())
    lower = one_run_epsilon_lower(m, k_in + k_out, correct, delta=delta, confidence=confidence)
    return OneRunAuditResult(lower=lower, canaries=m, guesses=k_in + k_out, correct=correct,
                             included=int(included.sum()), delta=delta, confidence=confidence)
