"""Exact privacy profiles of compositions of two-point losses (randomized response, pure DP, their
Poisson-subsampled versions, the atoms of Laplace losses), with every float64 rounding bounded.

Group ``i`` (``n_i`` runs) has loss ``l1_i`` with probability ``P1_i`` and ``l0_i`` with ``P0_i`` under the first
distribution of its pair. Outcome ``j = (j_1, ...)`` (``j_i`` runs at ``l1_i``) has loss ``l_j = sum j_i l1_i + (n_i -
j_i) l0_i`` and probability ``prod C(n_i, j_i) P1_i^j_i P0_i^(n_i - j_i)``, and::

    delta(eps) = sum_j P_j (1 - e^(eps - l_j))_+.

The characteristic function of such a ledger does not decay, so Fourier inversion cannot certify it (issue 14 item
4); the sum is finite and is formed exactly.

**Enumeration.** Up to :data:`MAX_ATOMS` composed outcomes are enumerated. The group with the most runs, where it
has at least :data:`TAIL_MIN_RUNS` or the outcomes would exceed :data:`MAX_ATOMS` (the *tail group*, ``n + 1``
outcomes ``l(k)`` in increasing order with probabilities ``p(k)``), is not enumerated:
for each outcome ``o`` of the other groups (loss ``l_o``, probability ``P_o``; at most ``MAX_ATOMS`` of them), with
``c = eps - l_o`` and ``J`` the first ``k`` with ``l(k) > c``::

    sum_k p(k) (1 - e^(c - l(k)))_+ = p(J) (1 - e^(c - l(J))) + T_P(J + 1) (1 - e^x),
    x = c + log T_W(J + 1) - log T_P(J + 1),   T_P(K) = sum_(k >= K) p(k),   T_W(K) = sum_(k >= K) p(k) e^(-l(k)),

where ``T_W / T_P`` is a weighted mean of ``e^(-l(k)) <= e^(-l(J + 1))``, so ``x <= c - l(J + 1) < 0`` and ``1 - e^x``
loses no digits to cancellation beyond ``e^x / (1 - e^x)`` times the error of ``x``. The tail sums' logarithms are
formed once per ledger, from the top, by ``logaddexp``; so a query costs ``O(K log n)`` for ``K`` enumerated
outcomes (a sorted search each) instead of ``O(K n)``. Randomized response x 4,711 with randomized response x 1,666
(7.9 million outcomes) was left to the privacy buckets before: a 0.1% wide interval at delta 1e-5 and AccuracyError
at 1e-8.

**Rounding.** Each composed loss is within ``eta`` of its exact value and each log-probability within ``rho``, both
bounded from the magnitudes of the summands (inputs within a few ulps of their exact values); the upper (lower)
bound shifts every loss up (down) by ``eta`` plus the rounding of ``c``, which can only raise (lower) each term,
and scales by ``e^(+-rho)``. The value at the shifted losses is then formed from non-negative terms, each with a
bounded relative error; their sum's rounding is bounded for any order of summation (blocks of ``B`` terms summed by
numpy in some order, then the ``N / B`` block sums: at most ``(B + N / B + 2) u`` of the sum, Higham, *Accuracy and
Stability*, Lemma 3.5). A tail sum's log carries the rounding of each ``logaddexp`` step (the result within ``u`` of
its magnitude plus ``4u``), each step's weighted by how much of the final sum it had formed (``_TailGroup``).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Sequence

import numpy as np
from scipy import special

from dpledger.accountants._roots import brentq
from dpledger.accountants.report import Bounds

__all__ = ["LedgerMax", "MAX_ATOMS", "TAIL_MIN_RUNS", "TwoPointLedger", "enumerated_outcomes"]

_EPS = np.finfo(np.float64).eps
_U = _EPS / 2.0

#: Largest number of composed outcomes enumerated exactly for ledgers of two-point losses (beyond, the group with
#: the most runs is summed through its tail sums: the others' outcomes must stay within this number).
MAX_ATOMS = 1 << 21
#: A group of at least this many runs is the tail group whatever the number of outcomes (the largest such): a query
#: then costs ``O(K log n)`` for ``K`` enumerated outcomes instead of ``O(K n)`` (randomized response x 3,717 with
#: pure DP x 105: 394,000 outcomes, 1.1 s for epsilon before; a single group of 300,000 runs: 0.27 s).
TAIL_MIN_RUNS = 64
#: Outcomes of the enumerated groups handled at once by a tail-group query (bounds its temporary arrays).
_CHUNK = 1 << 16


def enumerated_outcomes(counts: Iterable[float]) -> float:
    """How many composed outcomes :class:`TwoPointLedger` enumerates for groups of these run counts: the product of
    ``n + 1``, less the largest factor where that product exceeds :data:`MAX_ATOMS` (the tail group); a ledger is
    within reach when this is at most :data:`MAX_ATOMS`."""
    sizes = sorted(float(n) + 1.0 for n in counts)
    total = float(np.prod(sizes)) if sizes else 1.0
    if total <= MAX_ATOMS or len(sizes) < 2:
        return total
    return float(np.prod(sizes[:-1]))


def _group_outcomes(l1, l0, log_pos, log_neg, n):
    """``(losses, log-probabilities)`` of the ``n + 1`` outcomes of one group (``j`` runs at ``l1``)."""
    j = np.arange(n + 1, dtype=np.float64)
    log_binom = special.gammaln(n + 1.0) - special.gammaln(j + 1.0) - special.gammaln(n - j + 1.0)
    return j * l1 + (n - j) * l0, log_binom + j * log_pos + (n - j) * log_neg


def _positive_sum(terms):
    """``(sum, relative bound)`` of non-negative float terms, for any order of summation within numpy: blocks of
    ``B ~ sqrt(N)`` terms, then the block sums; at most ``(B + N / B + 2) u`` of the sum (module docstring)."""
    terms = np.ravel(terms)
    n = terms.size
    if n <= 64:
        return float(np.sum(terms)), (n + 2) * _U * 1.01
    block = 1 << int(math.ceil(0.5 * math.log2(n)))
    padded = np.zeros(-(-n // block) * block)
    padded[:n] = terms
    rows = padded.reshape(-1, block).sum(axis=1)
    return float(np.sum(rows)), (block + rows.size + 2) * _U * 1.01


class TwoPointLedger:
    """Exact privacy profile of a composition of two-point losses, with float64 rounding bounded (module docstring).

    Given as ``e_values`` (symmetric losses ``+-E_i``) with optional ``log_masses`` ``(log P(+E), log P(-E))`` per
    group (default: the pair (Bernoulli(p*), Bernoulli(1 - p*)) of randomized response, ``p* = 1 / (1 + e^-E)``), or
    as ``atoms``: ``(l1, l0, log P1, log P0)`` per group (asymmetric pairs, e.g. Poisson-subsampled randomized
    response in one direction; :meth:`mechanisms.base.Mechanism.loss_atoms`). ValueError where even without the
    group of most runs the outcomes exceed :data:`MAX_ATOMS` (:func:`enumerated_outcomes`).
    """

    def __init__(
        self,
        e_values: Iterable[float] = (),
        counts: Iterable[int] = (),
        log_masses: Sequence[tuple[float, float]] | None = None,
        *,
        atoms: Iterable[tuple[tuple[float, float, float, float], int]] | None = None,
        enumerate_all: bool = False,
    ):
        groups = []
        for i, (e, n) in enumerate(zip(e_values, counts)):
            if log_masses is None:
                log_pos = -np.log1p(np.exp(-e))  # log p*
                log_neg = log_pos - e  # log (1 - p*)
            else:  # a sub-probability two-point part (the atoms of a Laplace loss)
                log_pos, log_neg = log_masses[i]
            groups.append((float(e), -float(e), float(log_pos), float(log_neg), int(n)))
        if atoms is not None:
            groups += [(float(l1), float(l0), float(p1), float(p0), int(n)) for (l1, l0, p1, p0), n in atoms]
        if enumerated_outcomes([g[4] for g in groups]) > MAX_ATOMS:
            raise ValueError(f"TwoPointLedger: the groups of {[g[4] for g in groups]} runs have more than "
                             f"{MAX_ATOMS} composed outcomes even without the largest group.")
        loss_mag = sum(g[4] * max(abs(g[0]), abs(g[1])) for g in groups)
        logp_mag = sum(3.0 * special.gammaln(g[4] + 1.0) + g[4] * (abs(g[2]) + abs(g[3])) for g in groups)
        if enumerate_all and float(np.prod([g[4] + 1.0 for g in groups])) > MAX_ATOMS:
            raise ValueError(f"TwoPointLedger: the groups of {[g[4] for g in groups]} runs have more than "
                             f"{MAX_ATOMS} composed outcomes (enumerate_all).")
        tail = None
        if groups and not enumerate_all and (max(g[4] for g in groups) >= TAIL_MIN_RUNS
                                             or float(np.prod([g[4] + 1.0 for g in groups])) > MAX_ATOMS):
            tail = groups.pop(int(np.argmax([g[4] for g in groups])))
        loss, log_p = np.zeros(1), np.zeros(1)
        for group in groups:
            group_loss, group_log_p = _group_outcomes(*group)
            loss = (loss[:, None] + group_loss[None, :]).ravel()
            log_p = (log_p[:, None] + group_log_p[None, :]).ravel()
        self.loss = loss
        self.prob = np.exp(log_p)
        self._loss_mag = float(np.max(np.abs(loss)))  # for the rounding of c at each query (:meth:`_eta`)
        count = len(groups) + (tail is not None)
        self.eta = 8.0 * _EPS * (loss_mag + 1.0) * (count + 1)
        self.rho = 8.0 * _EPS * (logp_mag + 1.0) * (count + 1)
        self._tail = None if tail is None else _TailGroup(*_group_outcomes(*tail))

    def _terms(self, epsilon, shift, upper):
        """The terms ``P_o sum_k p(k) (1 - e^(c - l(k)))_+`` (``P_o (1 - e^(c - l_o))_+`` without a tail group) at
        ``c = epsilon + shift - l_o``; a tail group's sums made upper (``upper``) or lower bounds, or plain (None)."""
        if self._tail is None:
            with np.errstate(over="ignore"):  # e^(eps - l) overflowing is a term (1 - e^(eps - l))_+ = 0, exactly
                return self.prob * np.maximum(-np.expm1(epsilon - self.loss + shift), 0.0)
        parts = []
        for start in range(0, self.loss.size, _CHUNK):
            loss, prob = self.loss[start:start + _CHUNK], self.prob[start:start + _CHUNK]
            parts.append(prob * self._tail.sums(epsilon + shift - loss, upper))
        return np.concatenate(parts)

    def _total(self, epsilon, shift, upper):
        """The sum at losses moved by ``-shift`` (``c = epsilon + shift - l``), made an upper (``upper``) or lower
        bound on its exact value at the rounded inputs (module docstring, "Rounding"): each term's own roundings
        (``expm1`` within 2u, a product and an addition within u each: ``8u`` with room; a tail group's sums bound
        theirs) and the sum's (:func:`_positive_sum`)."""
        total, rel = _positive_sum(self._terms(epsilon, shift, upper))
        rel += 8.0 * _U
        return total * (1.0 + rel) if upper else total * (1.0 - rel)

    def _eta(self, epsilon):
        """The losses' shift at ``epsilon``: their rounding ``eta`` and that of ``c = epsilon + shift - l`` (each
        within u of its magnitude)."""
        return self.eta + 4.0 * _U * (abs(epsilon) + self.eta + self._loss_mag)

    def delta_bounds(self, epsilon: float) -> Bounds:
        upper, lower = self.field(epsilon, "upper"), self.field(epsilon, "lower")
        estimate = min(max(self.field(epsilon, "estimate"), lower), upper)
        return Bounds(lower=lower, estimate=estimate, upper=upper)

    def field(self, epsilon: float, name: str) -> float:
        """One end of :meth:`delta_bounds` alone (``"upper"``, ``"lower"``, or the unclipped ``"estimate"``): the
        epsilon searches ask for one at a time."""
        if name not in ("upper", "lower", "estimate"):
            raise ValueError(f"`name` of TwoPointLedger.field must be 'upper', 'lower' or 'estimate'; got {name!r}.")
        if name == "estimate":
            return float(np.sum(self._terms(epsilon, 0.0, None)))
        eta = self._eta(epsilon)
        if name == "upper":
            return min(self._total(epsilon, -eta, True) * np.exp(self.rho) * (1.0 + 4.0 * _U), 1.0)
        return max(self._total(epsilon, eta, False) * np.exp(-self.rho) * (1.0 - 4.0 * _U), 0.0)

    def kernel_bounds(self, epsilon: float, kernel: Callable[[np.ndarray], tuple[np.ndarray, np.ndarray]]) -> Bounds:
        """Bounds on ``sum_j P_j k(epsilon - l_j)`` for a non-negative, non-increasing ``k`` (every outcome
        enumerated: ``enumerate_all``), where ``kernel(c)`` returns ``(k~(c), relative error bound)`` at the float
        ``c``; the losses moved by ``eta`` as in :meth:`delta_bounds` (``k`` non-increasing, so moving them up can
        only raise each term), the log-probabilities by ``rho``, the sum's rounding by :func:`_positive_sum`."""
        if self._tail is not None:
            raise ValueError("TwoPointLedger.kernel_bounds needs every outcome enumerated (enumerate_all=True).")
        eta = self._eta(epsilon)

        def total(shift, sign):
            value, rel = kernel(epsilon + shift - self.loss)
            terms = self.prob * value * (1.0 + sign * (rel + 4.0 * _U))  # the product and exp(log p): u each
            out, sum_rel = _positive_sum(np.maximum(terms, 0.0))
            return out * (1.0 + sign * sum_rel)

        upper = total(-eta, 1.0) * np.exp(self.rho) * (1.0 + 4.0 * _U)
        lower = max(total(eta, -1.0) * np.exp(-self.rho) * (1.0 - 4.0 * _U), 0.0)
        estimate = float(np.sum(self.prob * kernel(epsilon - self.loss)[0]))
        return Bounds(lower=lower, estimate=min(max(estimate, lower), upper), upper=upper)

    def epsilon_bounds(self, delta: float, pure: float) -> Bounds:
        """Bounds on the smallest epsilon with delta at most ``delta`` (``pure``: the pure epsilon, where delta is 0).

        The upper end: the smallest epsilon found in ``[0, pure]`` whose upper delta was evaluated at most ``delta``.
        The lower and estimate curves lie below the upper one, so their crossings lie below its: each is bracketed
        from just under it (steps of ``10^-12``, then ten times each, relative) and found by Brent's method, a few
        evaluations instead of a search of the whole range; the lower end is just below the lower curve's crossing.
        Only evaluated points become ends, so how they are found does not affect the proof."""
        def smallest(name, top, near):
            """Smallest epsilon in [0, top] with the ``name`` delta at most ``delta`` (non-increasing); ``near``:
            bracketed from just under ``top`` first."""
            excess = lambda e: self.field(e, name) - delta  # noqa: E731
            if excess(top) > 0:  # only rounding can make this happen at the pure epsilon, where delta is 0
                return top
            lo, gap = None, 1e-12
            while near and top > 0.0 and gap < 1.0:
                point = top * (1.0 - gap)
                if excess(point) > 0:
                    lo = point
                    break
                gap *= 10.0
            if lo is None:
                if excess(0.0) <= 0:
                    return 0.0
                lo = 0.0
            root = brentq(excess, lo, top, xtol=1e-15, rtol=4 * _EPS)
            step = max(root * 1e-15, 1e-300)
            while excess(root) > 0 and root < top:
                root, step = min(root + step, top), 2.0 * step
            return root

        upper = smallest("upper", pure, False)
        # the lower-delta curve crosses delta at its root: just below it even the lower delta exceeds delta
        lower = min(smallest("lower", upper, True) * (1.0 - 1e-14), upper)
        estimate = min(max(smallest("estimate", upper, True), lower), upper)
        return Bounds(lower=lower, estimate=estimate, upper=upper)


class _TailGroup:
    """The tail group of a :class:`TwoPointLedger`: its outcomes in increasing loss, their probabilities, and the
    logs of the tail sums ``T_P``, ``T_W`` with bounds on their absolute rounding (module docstring)."""

    def __init__(self, loss, log_p):
        order = np.argsort(loss, kind="stable")
        self.loss, self.log_p = loss[order], log_p[order]
        self.prob = np.exp(self.log_p)
        self.log_tp, self.err_tp = self._log_tail_sums(self.log_p)
        self.log_tw, self.err_tw = self._log_tail_sums(self.log_p - self.loss)
        # the exponents log p - l are each rounded once (u of their magnitude): the log of a sum whose terms' logs
        # are each off by at most e_k is off by at most the largest e_k
        parts = 2.0 * _U * (np.abs(self.log_p) + np.abs(self.loss))
        self.err_tw = self.err_tw + np.append(np.maximum.accumulate(parts[::-1])[::-1], 0.0)

    @staticmethod
    def _log_tail_sums(log_terms):
        """``(log S_K, bound on its absolute rounding)`` with ``S_K = sum_(k >= K) e^(t_k)`` for every ``K`` (``-inf``
        past the end), formed from the top by ``s_K = logaddexp(s_(K+1), t_K)``.

        Each step rounds its result by at most ``a_K = u |s_K| + 4u`` (the final addition, then ``log1p(exp(-d))``
        and the rounding of ``d`` within a few ulps of at most 1) and carries the error of ``s_(K+1)`` with weight
        ``ds_K / ds_(K+1) = e^(s_(K+1) - s_K) <= 1``; so the error of ``s_K`` is at most ``sum_(i >= K) a_i e^(s_i -
        s_K)``, formed the same way (its own rounding within the 1% added)."""
        reversed_logs = np.logaddexp.accumulate(log_terms[::-1])
        steps = _U * np.abs(reversed_logs) + 4.0 * _U
        steps[0] = _U * abs(float(reversed_logs[0]))  # the first is a copy
        with np.errstate(divide="ignore", invalid="ignore"):
            weighted = np.logaddexp.accumulate(np.log(steps) + reversed_logs)
            errors = np.where(np.isfinite(reversed_logs), np.exp(weighted - reversed_logs), 0.0) * 1.01
        return (np.append(reversed_logs[::-1], -np.inf), np.append(errors[::-1], 0.0))

    def sums(self, c, upper):
        """``sum_k p(k) (1 - e^(c - l(k)))_+`` for each ``c`` (array), made an upper (``upper`` True) or lower
        (False) bound on its exact value at these rounded inputs; ``upper`` None: the plain value."""
        size = self.loss.size
        j = np.searchsorted(self.loss, c, side="right")  # the first outcome above c
        has_direct = j < size
        jd = np.minimum(j, size - 1)
        with np.errstate(over="ignore", invalid="ignore"):
            direct = np.where(has_direct, self.prob[jd] * -np.expm1(np.minimum(c - self.loss[jd], 0.0)), 0.0)
        k = np.minimum(j + 1, size)  # the tail starts after the direct outcome (size: empty)
        log_tp, log_tw = self.log_tp[k], self.log_tw[k]
        has_tail = np.isfinite(log_tp)
        with np.errstate(invalid="ignore", over="ignore"):
            x = np.where(has_tail, c + log_tw - log_tp, -np.inf)
            t_p = np.where(has_tail, np.exp(log_tp), 0.0)
            tail = t_p * -np.expm1(np.minimum(x, 0.0))
        if upper is None:
            return direct + tail
        # the direct term: p(J) within u (exp), expm1 within 2u, their product within u; the difference c - l within
        # u of |c| + |l| (doubled), amplified by expm1's relative slope
        d_rel = 6.0 * _U + 2.0 * _U * (np.abs(c) + np.abs(self.loss[jd])) * np.where(
            has_direct, np.exp(np.minimum(c - self.loss[jd], 0.0)) / np.maximum(
                -np.expm1(np.minimum(c - self.loss[jd], 0.0)), 1e-300), 0.0)
        # the tail term: T_P's exponential (its log's error, 2u), and 1 - e^x with x off by dx (module docstring)
        dx = np.where(has_tail, self.err_tw[k] + self.err_tp[k] + 2.0 * _U * (np.abs(c) + np.abs(log_tw)
                                                                            + np.abs(log_tp)), 0.0)
        x_hi = x + dx
        sure = has_tail & (x_hi < 0.0)
        with np.errstate(invalid="ignore", over="ignore", divide="ignore"):
            amplify = np.where(sure, np.exp(x_hi) / -np.expm1(np.where(sure, x_hi, -1.0)), 0.0)
        t_rel = np.where(has_tail, np.expm1(self.err_tp[k]) + 2.0 * _U + amplify * dx * 1.01 + 4.0 * _U, 0.0)
        if upper:
            # where x + dx may reach 0 the factor 1 - e^x is only known to lie in [0, 1]
            tail_b = np.where(sure, tail * (1.0 + t_rel), t_p * np.exp(self.err_tp[k]) * (1.0 + 2.0 * _U))
            return direct * (1.0 + d_rel) + tail_b
        tail_b = np.where(sure, tail * np.maximum(1.0 - t_rel, 0.0), 0.0)
        return direct * np.maximum(1.0 - d_rel, 0.0) + tail_b


class LedgerMax:
    """``delta(eps) = max_d delta_d(eps)`` over exact ledgers of the two directions (thesis Thm 3.3.5): the maximum
    of the lower, estimate and upper bounds (each bracket holds, so the maximum's does); epsilon by the same search
    as :meth:`TwoPointLedger.epsilon_bounds`."""

    def __init__(self, ledgers: Iterable[TwoPointLedger]):
        self.ledgers = tuple(ledgers)

    def delta_bounds(self, epsilon: float) -> Bounds:
        parts = [ledger.delta_bounds(epsilon) for ledger in self.ledgers]
        return Bounds(*(max(getattr(b, f) for b in parts) for f in ("lower", "estimate", "upper")))

    def field(self, epsilon: float, name: str) -> float:
        """The maximum of the ledgers' :meth:`TwoPointLedger.field`."""
        return max(ledger.field(epsilon, name) for ledger in self.ledgers)

    epsilon_bounds = TwoPointLedger.epsilon_bounds
