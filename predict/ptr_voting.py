"""Binary voting with generalized PTR (thesis Example 6.5.1, Thm 6.5.2), and the classic PTR it is compared with.

:func:`binary_voting_ptr` is the thesis's "Gen PTR" for report-noisy-max over two vote counts: it releases a
private lower bound ``g^P = g - log(1/(2 delta'))/eps_test + Lap(1/eps_test)`` of the gap ``g = |n_0 - n_1|``
(sensitivity 1 under adding or removing a voter), turns it into the upper bound
:func:`accountants.binary_voting.epsilon_upper_from_gap` of the data-dependent DP (thesis Thm 6.5.2 with
``delta``), and releases ``argmax_i (n_i + Lap(1/epsilon))`` iff that bound is at most ``budget``. Guarantee:
thesis Thm 6.4.6, ``(budget + eps_test, delta + delta')``. (The thesis writes the shift as ``log(1/delta)/eps``,
whose false-positive rate is ``delta/2``; here it is stated through ``delta'`` directly.)

:func:`classic_binary_voting_ptr` is the thesis's "classic PTR" (Dwork & Lei 2009, thesis Thm 6.2.2 form): if
the same lower bound of the gap exceeds 1 (local sensitivity 0 of the argmax) it releases the true majority,
else it answers a uniformly random class; ``(eps_test, delta')``-DP.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from dpledger.accountants.binary_voting import epsilon_upper_from_gap
from dpledger.accountants.ptr import PTRGuarantee
from dpledger.mechanisms import _validate
from dpledger.predict.ptr import PTRResult, RandomState, _generator, charge, generalized_ptr, laplace_statistic_bound

__all__ = ["binary_voting_ptr", "classic_binary_voting_ptr", "noisy_majority", "classic_ptr_error_rate",
           "classic_ptr_epsilon_for_error"]


def noisy_majority(n0: int, n1: int, epsilon: float, rng: np.random.Generator) -> int:
    """``argmax_i (n_i + Lap(1/epsilon))`` (thesis Example 6.5.1's report-noisy-max; ties have probability 0)."""
    a = n0 + rng.laplace(0.0, 1.0 / epsilon)
    b = n1 + rng.laplace(0.0, 1.0 / epsilon)
    return 0 if a > b else 1


def _counts(n0, n1, owner):
    return (_validate.integer(n0, "n0", owner, minimum=0), _validate.integer(n1, "n1", owner, minimum=0))


def binary_voting_ptr(n0: int, n1: int, *, epsilon: float, budget: float, test_epsilon: float, delta: float,
                      false_positive_rate: float, accountant: Any = None,
                      random_state: RandomState = None) -> PTRResult:
    """Thesis Example 6.5.1 "Gen PTR": report-noisy-max with Laplace(1/epsilon) noise, released after a private
    test of its data-dependent DP (thesis Thm 6.5.2 w.r.t. ``delta``) against ``budget``.

    Returns a :class:`~predict.ptr.PTRResult` whose ``guarantee`` is thesis Thm 6.4.6's
    ``(budget + test_epsilon, delta + false_positive_rate)`` and whose ``test_release`` is the private upper
    bound ``eps^P`` (a DP statistic, not a guarantee).

    Examples
    --------
    >>> r = binary_voting_ptr(150, 50, epsilon=2.0, budget=0.1, test_epsilon=1.0, delta=1e-6,
    ...                       false_positive_rate=1e-6, random_state=0)
    >>> r.released, r.output, r.guarantee.theorem, round(r.guarantee.epsilon, 12)
    (True, 0, 'thesis Thm 6.4.6', 1.1)
    """
    owner = "binary_voting_ptr"
    n0, n1 = _counts(n0, n1, owner)
    eps = _validate.positive(epsilon, "epsilon", owner)
    _validate.nonnegative(budget, "budget", owner)
    d = _validate.real(delta, "delta", owner)
    if not 0.0 <= d < 1.0:
        raise ValueError(f"`delta` of {owner} must be in [0, 1); got {d}.")
    test = laplace_statistic_bound(
        lambda x: float(abs(x[0] - x[1])), 1.0, lambda g: epsilon_upper_from_gap(g, eps, d),
        epsilon=test_epsilon, failure_probability=false_positive_rate, name="private lower bound of the vote gap")
    return generalized_ptr((n0, n1), lambda x, rng: noisy_majority(x[0], x[1], eps, rng), epsilon=budget,
                           delta=d, test=test, accountant=accountant, random_state=random_state)


def classic_binary_voting_ptr(n0: int, n1: int, *, test_epsilon: float, false_positive_rate: float,
                              accountant: Any = None,
                              random_state: RandomState = None) -> tuple[int | None, PTRGuarantee]:
    """Thesis Example 6.5.1's "classic PTR": ``(answer, guarantee)``.

    The gap ``g`` has sensitivity 1 and the distance to a data set whose argmax has positive local sensitivity is
    ``max(g - 1, 0)``; with ``g^P`` the same private lower bound as in :func:`binary_voting_ptr`, the answer is the
    true majority if ``g^P > 1`` and a uniformly random class otherwise (the thesis's choice). Guarantee
    ``(test_epsilon, false_positive_rate)`` (upper bound): the Laplace release is ``test_epsilon``-DP, and a
    data set with ``g <= 1`` (where the majority can flip) passes with probability at most ``delta'``
    (thesis Thm 6.2.2, Dwork & Lei 2009, stated with ``delta'``).
    """
    owner = "classic_binary_voting_ptr"
    n0, n1 = _counts(n0, n1, owner)
    eps_t = _validate.positive(test_epsilon, "test_epsilon", owner)
    fp = _validate.real(false_positive_rate, "false_positive_rate", owner)
    if not 0.0 < fp < 0.5:
        raise ValueError(f"`false_positive_rate` of {owner} must be in (0, 1/2); got {fp}.")
    guarantee = PTRGuarantee(epsilon=eps_t, delta=fp, theorem="thesis Thm 6.2.2 (classic PTR)",
                             parts={"test_epsilon": eps_t, "false_positive_rate": fp})
    rng = _generator(random_state, owner)
    charge(accountant, guarantee)
    shift = float(np.nextafter(math.log(1.0 / (2.0 * fp)) / eps_t, np.inf))
    lower = abs(n0 - n1) - shift + float(rng.laplace(0.0, 1.0 / eps_t))
    coin = int(rng.integers(2))
    answer = (0 if n0 > n1 else 1) if lower > 1.0 else coin
    return answer, guarantee


def _classic_args(gap, test_epsilon, false_positive_rate, owner):
    gap = _validate.integer(gap, "gap", owner, minimum=0)
    eps_t = _validate.positive(test_epsilon, "test_epsilon", owner)
    fp = _validate.real(false_positive_rate, "false_positive_rate", owner)
    if not 0.0 < fp < 0.5:
        raise ValueError(f"`false_positive_rate` of {owner} must be in (0, 1/2); got {fp}.")
    return gap, eps_t, fp


def classic_ptr_error_rate(gap: int, *, test_epsilon: float, false_positive_rate: float) -> float:
    """The exact probability that :func:`classic_binary_voting_ptr` answers the minority class at vote gap ``gap``.

    It answers a fair coin iff ``g^P = gap - s + Lap(1/eps) <= 1`` with ``s = log(1/(2 delta'))/eps``, so the
    error is ``P(Lap(1/eps) <= 1 - gap + s) / 2``: ``e^{-eps (gap - 1 - s)} / 4`` if ``gap - 1 >= s``, else
    ``(1 - e^{-eps (1 + s - gap)} / 2) / 2``. (A utility number, not a privacy bound; it is what the Monte Carlo
    estimate of a few thousand trials cannot resolve at the error rates of Figure 6.3(b).)
    """
    gap, eps_t, fp = _classic_args(gap, test_epsilon, false_positive_rate, "classic_ptr_error_rate")
    s = math.log(1.0 / (2.0 * fp)) / eps_t
    u = gap - 1.0 - s
    return math.exp(-eps_t * u) / 4.0 if u >= 0 else (1.0 - math.exp(eps_t * u) / 2.0) / 2.0


def classic_ptr_epsilon_for_error(gap: int, error: float | None = None, *, false_positive_rate: float,
                                  log_error: float | None = None) -> float:
    """The smallest ``test_epsilon`` at which :func:`classic_ptr_error_rate` is at most ``error`` (in (0, 1/4]):
    ``(log(1/(2 delta')) + log(1/(4 error))) / (gap - 1)`` (from ``e^{-eps (gap - 1) + log(1/(2 delta'))} / 4 =
    error``), nudged up until the rounded error meets ``error``. Requires ``gap >= 2`` (at ``gap <= 1`` the
    error is at least 1/4 for every ``eps``). ``log_error`` (instead of ``error``) gives error rates below the
    smallest float (the final check is then skipped: the closed form is used as is, rounded up by one ulp)."""
    owner = "classic_ptr_epsilon_for_error"
    gap = _validate.integer(gap, "gap", owner, minimum=2)
    if (error is None) == (log_error is None):
        raise ValueError(f"give exactly one of `error` and `log_error` to {owner}.")
    if log_error is not None:
        log_err = _validate.real(log_error, "log_error", owner)
        if not log_err <= math.log(0.25):
            raise ValueError(f"`log_error` of {owner} must be at most log(1/4); got {log_err}.")
        fp = _validate.real(false_positive_rate, "false_positive_rate", owner)
        if not 0.0 < fp < 0.5:
            raise ValueError(f"`false_positive_rate` of {owner} must be in (0, 1/2); got {fp}.")
        eps = (math.log(1.0 / (2.0 * fp)) - math.log(4.0) - log_err) / (gap - 1.0)
        return float(np.nextafter(eps, np.inf))
    err = _validate.real(error, "error", owner)
    if not 0.0 < err <= 0.25:
        raise ValueError(f"`error` of {owner} must be in (0, 1/4]; got {err}.")
    fp = _validate.real(false_positive_rate, "false_positive_rate", owner)
    if not 0.0 < fp < 0.5:
        raise ValueError(f"`false_positive_rate` of {owner} must be in (0, 1/2); got {fp}.")
    eps = (math.log(1.0 / (2.0 * fp)) + math.log(1.0 / (4.0 * err))) / (gap - 1.0)
    while classic_ptr_error_rate(gap, test_epsilon=eps, false_positive_rate=fp) > err:
        eps = float(np.nextafter(eps, np.inf))
    return eps
