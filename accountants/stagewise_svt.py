"""(epsilon, delta) of the stage-wise generalized SVT (thesis Algorithm 12, Thms 7.2.9 and 7.2.10).

Algorithm 12 runs ``stages`` independent copies of one stage, Algorithm 11 with cut-off ``c'`` (a
:class:`~dpledger.mechanisms.SparseVector`; a last stage with a smaller cut-off is a post-processing of a full
one, so it is covered). Two ways to compose the stages, both proven; :func:`stagewise_svt_epsilon` reports the
smaller with its source:

* **RDP composition**: the stage's RDP (thesis Thm 7.2.1 / 7.2.7 / Lemma 7.1.3 / the ``Q_+`` bounds of
  ``SparseVector``) times ``stages``, converted by :class:`~dpledger.accountants.RDPAccountant`;
* **advanced composition** (the form of thesis Thms 7.2.9 and 7.2.10): each stage is ``(epsilon', delta')``-DP
  with ``epsilon'`` the RDP accountant's bound for one stage at ``delta'``; the ``stages``-fold adaptive
  composition of ``(epsilon', delta')``-DP mechanisms is ``(epsilon, 1 - (1 - delta')^m (1 - delta_rr(epsilon)))``
  -DP, ``delta_rr`` the hockey-stick divergence of the ``m``-fold randomized response with loss ``+-epsilon'``
  (Kairouz, Oh & Viswanath 2015, Thm 3.3, the optimal composition the thesis' Remark 7.2.12 recommends):
  ``delta_rr(epsilon) = sum_l Binom(l; m, 1 / (1 + e^epsilon')) (1 - e^{epsilon - (m - 2 l) epsilon'})_+``.
  The split of ``delta`` into ``delta'`` and ``delta~`` (the thesis' ``c / c' delta' + delta~``) is searched
  over a grid; each point of the grid is a valid guarantee, so the smallest is. Thms 7.2.9 / 7.2.10 state only
  the order ``O(sqrt(c Delta^2 / sigma_1^2 log(1/delta') log(1/delta~)))`` of this epsilon, under conditions
  (``sigma_2 = 2 sigma_1``, ``sigma_1 >= 8 Delta sqrt(c log(1/delta'))``, ``c' C(k', c') <= 1/delta'``) that
  serve only that rate: the composition itself needs nothing but each stage's ``(epsilon', delta')``.

Rounding: ``epsilon`` is found by bisection to a relative ``1e-10`` and the upper end returned; the target is
``delta_rr <= (1 - 1e-6)`` times the allowed value, a margin far above the float error of the binomial
log-probabilities and the log-sum-exp (relative ``< 1e-12``).
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np
from scipy import special

from dpledger.accountants.rdp_accountant import RDPAccountant
from dpledger.mechanisms import SparseVector, _validate

__all__ = ["StagewiseGuarantee", "stagewise_svt_epsilon", "optimal_composition_epsilon"]

_SPLITS = (0.02, 0.05, 0.1, 0.2, 0.3, 0.5, 0.7, 0.9)  # delta~ / delta tried


@dataclasses.dataclass(frozen=True, slots=True)
class StagewiseGuarantee:
    """An ``(epsilon, delta)``-DP upper bound (add-or-remove-one) of Algorithm 12, with its source.

    ``method`` is ``"rdp"`` (RDP composition of the stages) or ``"advanced"`` (thesis Thms 7.2.9 / 7.2.10 form:
    per-stage ``(stage_epsilon, stage_delta)``, Kairouz, Oh & Viswanath 2015 Thm 3.3 over the stages with
    ``delta_tilde``); ``rdp_epsilon`` and ``advanced_epsilon`` are both routes' values.
    """

    epsilon: float
    delta: float
    method: str
    rdp_epsilon: float
    advanced_epsilon: float
    stage_epsilon: float
    stage_delta: float
    delta_tilde: float


def _log_delta_rr(epsilon, log_pmf, losses):
    keep = losses > epsilon
    if not keep.any():
        return -math.inf
    return float(special.logsumexp(log_pmf[keep] + np.log(-np.expm1(epsilon - losses[keep]))))


def optimal_composition_epsilon(stage_epsilon: float, stage_delta: float, count: int, delta: float) -> float:
    """Smallest ``epsilon`` (upper bound, to a relative ``1e-10``) such that the ``count``-fold adaptive composition
    of ``(stage_epsilon, stage_delta)``-DP mechanisms is ``(epsilon, delta)``-DP by Kairouz, Oh & Viswanath 2015,
    Thm 3.3 (see the module docstring); ``inf`` when ``count * stage_delta`` already uses up ``delta``."""
    stage_epsilon = _validate.nonnegative(stage_epsilon, "stage_epsilon", "optimal_composition_epsilon",
                                          allow_inf=True)
    stage_delta = _validate.probability(stage_delta, "stage_delta", "optimal_composition_epsilon")
    count = _validate.positive_int(count, "count", "optimal_composition_epsilon")
    delta = _validate.open_unit_interval(delta, "delta", "optimal_composition_epsilon")
    if not math.isfinite(stage_epsilon):
        return math.inf
    log_rest = math.log1p(-delta) - count * math.log1p(-stage_delta)  # log(1 - delta_rr) allowed
    if log_rest >= 0.0:
        return math.inf
    log_target = math.log(-math.expm1(log_rest)) + math.log1p(-1e-6)
    ls = np.arange(count + 1)
    from scipy import stats  # imported here: scipy.stats costs ~0.5 s at start-up

    log_pmf = stats.binom.logpmf(ls, count, 1.0 / (1.0 + math.exp(stage_epsilon)))
    losses = (count - 2.0 * ls) * stage_epsilon
    if _log_delta_rr(0.0, log_pmf, losses) <= log_target:
        return 0.0
    lo, hi = 0.0, count * stage_epsilon  # delta_rr(count * stage_epsilon) = 0
    while hi - lo > 1e-10 * hi:
        mid = 0.5 * (lo + hi)
        if _log_delta_rr(mid, log_pmf, losses) <= log_target:
            hi = mid
        else:
            lo = mid
    return math.nextafter(hi, math.inf)


def stagewise_svt_epsilon(stage: SparseVector, stages: int, delta: float) -> StagewiseGuarantee:
    """``(epsilon, delta)``-DP upper bound of thesis Algorithm 12 with ``stages`` copies of ``stage``: the smaller
    of RDP composition and the advanced composition of Thms 7.2.9 / 7.2.10 (module docstring).

    Examples
    --------
    >>> from dpledger.mechanisms import GaussianMechanism
    >>> stage = SparseVector(threshold=GaussianMechanism(sigma=210.0), queries=GaussianMechanism(sigma=420.0),
    ...                      nonnegative_queries=True, margin=1000.0)
    >>> g = stagewise_svt_epsilon(stage, 200, 1e-6)
    >>> g.method, g.epsilon == min(g.rdp_epsilon, g.advanced_epsilon)
    ('advanced', True)
    """
    if not isinstance(stage, SparseVector):
        raise TypeError(f"`stage` of stagewise_svt_epsilon must be a SparseVector; got {type(stage).__name__}.")
    stages = _validate.positive_int(stages, "stages", "stagewise_svt_epsilon")
    delta = _validate.open_unit_interval(delta, "delta", "stagewise_svt_epsilon")
    rdp_eps = RDPAccountant().compose(stage, stages).get_epsilon(delta)
    best = (math.inf, math.nan, math.nan, math.nan)
    for split in _SPLITS:
        delta_tilde = split * delta
        # 1 - (1 - delta')^m (1 - delta~) = delta, delta' rounded down
        stage_delta = -math.expm1((math.log1p(-delta) - math.log1p(-delta_tilde)) / stages) * (1 - 1e-9)
        if not 0.0 < stage_delta < 1.0:
            continue
        stage_eps = RDPAccountant().compose(stage).get_epsilon(stage_delta)
        eps = optimal_composition_epsilon(stage_eps, stage_delta, stages, delta)
        if eps < best[0]:  # delta~ as used: the delta left after the stages' (a hair above split * delta)
            used = -math.expm1(math.log1p(-delta) - stages * math.log1p(-stage_delta))
            best = (eps, stage_eps, stage_delta, used)
    adv_eps, stage_eps, stage_delta, delta_tilde = best
    method = "advanced" if adv_eps < rdp_eps else "rdp"
    return StagewiseGuarantee(epsilon=min(adv_eps, rdp_eps), delta=delta, method=method, rdp_epsilon=rdp_eps,
                              advanced_epsilon=adv_eps, stage_epsilon=stage_eps, stage_delta=stage_delta,
                              delta_tilde=delta_tilde)
