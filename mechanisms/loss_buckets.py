"""Proven bucket masses of a privacy-loss distribution: the input of the privacy-buckets accountant.

For a dominating pair ``(P, Q)`` of one direction, the privacy loss ``L = log dP/dQ`` is cut at edges
``e_0 < ... < e_(n-1)`` (``e_-1 = -inf``, ``e_n = +inf``) into buckets ``B_i = (e_(i-1), e_i]``.
:meth:`mechanisms.base.Mechanism.loss_buckets` returns :class:`LossBuckets`, arrays of length ``n + 1``:

* ``p_lower[i] <= P(L' in B_i) <= p_upper[i]`` (the last bucket includes ``L' = +inf``);
* ``q_lower[i] <= E_P[e^-L'; L' in B_i] <= q_upper[i]`` (for ``L' = L`` this is ``Q(B_i)``);
* ``down[i] <= P(e_(i-1) <= L'' < e_i)`` (the last one includes ``L'' = +inf``): putting ``down[i]`` at
  ``e_(i-1)`` and dropping ``down[0]`` rounds every loss down, the "privacy buckets" of Meiser & Mohammadi
  (CCS 2018);

for losses ``L'' <= L <= L'`` coupled pointwise: ``L`` itself for continuous laws, and for atoms known only to
within their rounding, each atom raised (``L'``) or lowered (``L''``) by its error. Since delta is
non-decreasing in the loss, bounds for ``L'`` are upper bounds for ``L`` and those for ``L''`` lower bounds.

The P- and Q-masses of a bucket fix how :mod:`accountants.privacy_buckets` splits it between its two edges
(connect-the-dots, Doroshenko et al. 2022); every float error is bounded, so both of its measures are proven.

Rounding model: ``exp``, ``expm1``, ``log1p`` and the basic operations are within 2 ulps; scipy's ``ndtr`` is
within ``8u (8 + x^2)`` relative for results above ``1e-300`` (the largest error seen against mpmath over
60,000 points in [-37.5, 8.5] was ``2u (8 + x^2)``, at x = -22.8; tests/mechanisms/test_loss_buckets.py checks
half the margin; the ``x^2`` term is the rounding of ``x^2 / 2`` inside ``exp``), below which the value is enclosed
by ``[0, 1e-300]``.
"""

from __future__ import annotations

import typing

import numpy as np
from numpy.typing import ArrayLike
from scipy import special

from dpledger.mechanisms._logmath import EPS

__all__ = [
    "LossBuckets",
    "atom_buckets",
    "normal_cdf_bounds",
    "subsampled_gaussian_buckets",
    "subsampled_laplace_buckets",
]

_U = EPS / 2


class LossBuckets(typing.NamedTuple):
    """Proven bucket masses of a privacy loss (module docstring). ``of_loss``: the bounds are of ``L`` itself
    (``L' = L'' = L``, a law known exactly up to the enclosures: the Gaussian and its Poisson-subsampled version),
    so a lower measure may also use ``p_lower`` and ``q_upper`` (Jensen's pairs,
    :func:`accountants.privacy_buckets._jensen_pairs`)."""

    p_upper: np.ndarray
    p_lower: np.ndarray
    q_upper: np.ndarray
    q_lower: np.ndarray
    down: np.ndarray
    of_loss: bool = False

#: Below this ndtr's relative accuracy is not relied upon: the value is enclosed by [0, _TINY].
_TINY = 1e-300


def _widen(x, slack, sign):
    """``x + sign * slack * (1 + |x|)`` where ``x`` is finite, ``x`` itself at +-inf."""
    finite = np.isfinite(x)
    return np.where(finite, x + sign * slack * (1.0 + np.abs(np.where(finite, x, 0.0))), x)


def normal_cdf_bounds(x_low: ArrayLike, x_high: ArrayLike) -> tuple[np.ndarray, np.ndarray]:
    """``(lo, hi)`` with ``lo <= Phi(x) <= hi`` for every ``x`` in ``[x_low, x_high]`` (arrays, +-inf allowed)."""
    x_low, x_high = np.asarray(x_low, dtype=np.float64), np.asarray(x_high, dtype=np.float64)
    with np.errstate(over="ignore", invalid="ignore"):
        lo, hi = special.ndtr(x_low), special.ndtr(x_high)
        # relative margins u (64 + 16 x^2); at x = +-inf they are inf or NaN, and the ends are set exactly below
        lo = np.where(lo < _TINY, 0.0, lo * (1.0 - _U * (64.0 + 16.0 * x_low * x_low)))
        hi = np.where(hi < _TINY, _TINY, np.minimum(hi * (1.0 + _U * (64.0 + 16.0 * x_high * x_high)), 1.0))
    lo = np.where(x_low == np.inf, 1.0, np.where(x_low == -np.inf, 0.0, lo))
    hi = np.where(x_high == -np.inf, 0.0, np.where(x_high == np.inf, 1.0, hi))
    return lo, hi


def _normal_interval(a_low, a_high, b_low, b_high):
    """Bounds on ``Phi(b) - Phi(a)`` for ``a`` in ``[a_low, a_high]``, ``b`` in ``[b_low, b_high]``, ``a <= b``
    (:func:`_combined_interval` of the four bounds on ``Phi`` it needs)."""
    return _combined_interval(a_low, a_high, b_low, normal_cdf_bounds(a_low, a_high), normal_cdf_bounds(b_low, b_high),
                              normal_cdf_bounds(-a_high, -a_low), normal_cdf_bounds(-b_high, -b_low))


def _combined_interval(a_low, a_high, b_low, cdf_a, cdf_b, tail_a, tail_b):
    """Bounds on ``Phi(b) - Phi(a)`` for ``a`` in ``[a_low, a_high]``, ``b`` at least ``b_low``, ``a <= b``, given
    ``cdf_a = (lo, hi)`` bounds on ``Phi`` over ``a``'s range (``cdf_b`` over ``b``'s) and ``tail_a`` on ``Phi(-a)``
    (``tail_b`` on ``Phi(-b)``), each from :func:`normal_cdf_bounds`.

    Each end is computed from bounds on ``Phi`` on the side of 0 where ``Phi`` (left) or ``1 - Phi`` (right,
    through ``Phi(-x)``) is small, so the relative margins are those of tail values: ``Phi(b) - Phi(a)``,
    ``Phi(-a) - Phi(-b)``, or ``1 - Phi(-b) - Phi(a)`` for an interval straddling 0; the subtractions' own
    rounding is covered by the factors ``1 +- 2u``."""
    right = a_low >= 0.0
    mixed = (a_high < 0.0) & (b_low > 0.0)
    (pa_lo, pa_hi), (pb_lo, pb_hi), (qa_lo, qa_hi), (qb_lo, qb_hi) = cdf_a, cdf_b, tail_a, tail_b
    hi = np.where(right, qa_hi - qb_lo, pb_hi - pa_lo)
    lo = np.where(right, qa_lo - qb_hi, pb_lo - pa_hi)
    # straddling 0: 1 - Phi(-b) - Phi(a), both tails small (two roundings, relative u each)
    hi = np.where(mixed, (1.0 - qb_lo - pa_lo) * (1.0 + 2.0 * _U), hi)
    lo = np.where(mixed, (1.0 - qb_hi - pa_hi) * (1.0 - 2.0 * _U), lo)
    return np.maximum(lo * (1.0 - 2.0 * _U), 0.0), np.minimum(np.maximum(hi, 0.0) * (1.0 + 2.0 * _U), 1.0)


def _edge_intervals(x_low, x_high, remove):
    """Bounds on ``Phi(b) - Phi(a)`` for every bucket between consecutive edge outputs ``x`` (each within ``[x_low,
    x_high]``): remove, buckets ``(-inf, x_0], (x_0, x_1], ..., (x_(n-1), inf)``; add, the outputs decrease with the
    loss, so bucket ``i`` is ``[x_i, x_(i-1))`` with ``x_(-1) = inf`` and ``x_n = -inf``. ``Phi`` and ``Phi(-x)``
    are bounded once per edge and shared by the two buckets it bounds."""
    cdf_lo, cdf_hi = normal_cdf_bounds(x_low, x_high)  # Phi over [x_low, x_high]
    tail_lo, tail_hi = normal_cdf_bounds(-x_high, -x_low)  # Phi(-x)

    def ends(values, before, after):
        return np.concatenate([[before], values]), np.concatenate([values, [after]])

    if remove:  # a = (-inf, x), b = (x, inf)
        (a_low, b_low), (a_high, _) = ends(x_low, -np.inf, np.inf), ends(x_high, -np.inf, np.inf)
        (ca_lo, cb_lo), (ca_hi, cb_hi) = ends(cdf_lo, 0.0, 1.0), ends(cdf_hi, 0.0, 1.0)
        (ta_lo, tb_lo), (ta_hi, tb_hi) = ends(tail_lo, 1.0, 0.0), ends(tail_hi, 1.0, 0.0)
    else:  # a = (x, -inf), b = (inf, x)
        (b_low, a_low), (_, a_high) = ends(x_low, np.inf, -np.inf), ends(x_high, np.inf, -np.inf)
        (cb_lo, ca_lo), (cb_hi, ca_hi) = ends(cdf_lo, 1.0, 0.0), ends(cdf_hi, 1.0, 0.0)
        (tb_lo, ta_lo), (tb_hi, ta_hi) = ends(tail_lo, 0.0, 1.0), ends(tail_hi, 0.0, 1.0)
    return _combined_interval(a_low, a_high, b_low, (ca_lo, ca_hi), (cb_lo, cb_hi), (ta_lo, ta_hi), (tb_lo, tb_hi))


def _log_ratio_argument(edges, q):
    """Bounds on ``z(l) = log(1 + expm1(l) / q)`` at each edge (``-inf`` where ``expm1(l) / q <= -1``): the
    log-likelihood ratio ``log dA/dB`` of the base pair at which the subsampled loss ``log(1 - q + q dA/dB)``
    equals ``l``. ``expm1`` and the division are within 3u of ``w``, ``log1p`` within 2u of its result."""
    edges = np.asarray(edges, dtype=np.float64)
    big = edges > 600.0  # expm1 would overflow: z = l - log q + log1p((q - 1) e^-l), each step within 2u
    safe = np.where(big, 0.0, edges)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        w = np.expm1(safe) / q
        w_lo, w_hi = w - 4.0 * _U * np.abs(w), w + 4.0 * _U * np.abs(w)
        z_lo = np.where(w_lo <= -1.0, -np.inf, np.log1p(np.maximum(w_lo, -1.0)))
        z_hi = np.where(w_hi <= -1.0, -np.inf, np.log1p(np.maximum(w_hi, -1.0)))
        z_lo = z_lo - 2.0 * _U * np.abs(np.where(np.isfinite(z_lo), z_lo, 0.0))
        z_hi = z_hi + 2.0 * _U * np.abs(np.where(np.isfinite(z_hi), z_hi, 0.0))
        if big.any():
            large = edges[big]
            log_q = np.log(q)
            z = large - log_q + np.log1p((q - 1.0) * np.exp(-large))
            slack = 8.0 * _U * (np.abs(large) + abs(log_q) + 1.0)
            z_lo[big], z_hi[big] = z - slack, z + slack
    return z_lo, z_hi


def _threshold(z_lo, z_hi, mu):
    """Bounds on ``x = (z + mu^2 / 2) / mu``, the output of ``N(0, 1)`` at which ``mu x - mu^2 / 2 = z``;
    ``mu`` itself is within 4u of the exact ``1 / noise_multiplier``, the operations within 2u each."""
    half = 0.5 * mu * mu
    with np.errstate(invalid="ignore"):
        x_lo, x_hi = (z_lo + half) / mu, (z_hi + half) / mu
        slack_lo = 12.0 * _U * (np.abs(np.where(np.isfinite(z_lo), z_lo, 0.0)) / mu + mu)
        slack_hi = 12.0 * _U * (np.abs(np.where(np.isfinite(z_hi), z_hi, 0.0)) / mu + mu)
    return x_lo - slack_lo, x_hi + slack_hi


def subsampled_gaussian_buckets(mu: float, q: float, edges: ArrayLike, remove: bool) -> LossBuckets:
    """:class:`LossBuckets` of the Poisson-subsampled Gaussian pair, ``q`` in ``(0, 1]`` (``q = 1``: the Gaussian
    itself), base pair ``A = N(mu, 1)``, ``B = N(0, 1)``.

    Remove direction, ``((1-q) B + q A, B)`` (thesis Thm 3.3.5): ``L(x) = log(1 - q + q e^(mu x - mu^2/2))``
    increases in the output ``x``, so ``L <= l`` iff ``x <= x(l) = (z(l) + mu^2/2) / mu`` with
    ``z(l) = log1p(expm1(l) / q)``, and ``P(a < L <= b) = (1-q) [Phi(x_b) - Phi(x_a)] + q [Phi(x_b - mu) -
    Phi(x_a - mu)]``. Add direction, ``(B, (1-q) B + q A)``: ``L = -log(1 - q + q e^(mu x - mu^2/2))`` decreases
    in ``x``, so ``P(a < L <= b) = Phi(x(-a)) - Phi(x(-b))`` under ``B``. The Q-masses are the same output
    intervals under the other distribution. Both laws are continuous: open and closed buckets agree."""
    edges = np.asarray(edges, dtype=np.float64)
    if remove:
        z_lo, z_hi = _log_ratio_argument(edges, q)
    else:
        z_lo, z_hi = _log_ratio_argument(-edges, q)  # L <= l iff x >= x(-l): bucket (a, b] is x in [x(-b), x(-a))
    x_lo, x_hi = _threshold(z_lo, z_hi, mu)

    def component(shift):
        s_u = 4.0 * _U * (abs(shift) + 1.0)  # the subtraction of shift, and shift's own error
        return _edge_intervals(_widen(x_lo - shift, s_u, -1), _widen(x_hi - shift, s_u, 1), remove)

    base, other = component(0.0), component(mu)  # (lo, hi) under B = N(0, 1) and A = N(mu, 1)
    if q < 1.0:
        mixed = tuple(((1.0 - q) * b_ + q * a_) * f for b_, a_, f in zip(base, other, (1.0 - 4 * _U, 1.0 + 4 * _U)))
    else:
        mixed = other
    (p_lo, p_hi), (q_lo, q_hi) = (mixed, base) if remove else (base, mixed)
    return LossBuckets(p_hi, p_lo, np.minimum(q_hi, 1.0), q_lo, p_lo, of_loss=True)


def atom_buckets(
    losses: ArrayLike,
    log_masses: ArrayLike,
    edges: ArrayLike,
    *,
    loss_error: ArrayLike | None = None,
    log_mass_error: ArrayLike | None = None,
) -> LossBuckets:
    """:class:`LossBuckets` of a loss with finitely many atoms: loss ``losses[j]`` (``+inf`` allowed) with P-mass
    ``exp(log_masses[j])`` and so Q-mass ``exp(log_masses[j] - losses[j])``. ``loss_error`` (default
    ``4u (|l| + 1)``) bounds each loss's distance from its exact value and ``log_mass_error`` (default
    ``4u (|log m| + 1)``) each log-mass's. The P- and Q-masses are those of the loss raised by its error (a
    loss ``L' >= L``); ``down`` is that of the loss lowered by its error."""
    losses = np.asarray(losses, dtype=np.float64)
    log_masses = np.asarray(log_masses, dtype=np.float64)
    edges = np.asarray(edges, dtype=np.float64)
    finite = np.isfinite(losses)
    if loss_error is None:
        loss_error = 4.0 * _U * (np.abs(np.where(finite, losses, 0.0)) + 1.0)
    if log_mass_error is None:
        log_mass_error = 4.0 * _U * (np.abs(log_masses) + 1.0)
    err = np.where(finite, loss_error, 0.0)
    size = edges.size + 1
    # each atom's loss raised by its error (a loss L' >= L, module docstring): bucket (e_(i-1), e_i] of l + err
    index = np.searchsorted(edges, losses + err, side="left")
    slack = log_mass_error + 4.0 * _U  # exp's rounding on top of the log-mass's error
    with np.errstate(invalid="ignore", over="ignore"):
        log_q = np.where(finite, log_masses - losses, -np.inf)  # Q-mass e^-l' m, l' within 2 err of l
    q_slack = slack + 2.0 * err
    n = max(losses.size, 1)  # bincount's sums: at most n roundings of relative size u each
    up, lo = 1.0 + 2.0 * n * _U, 1.0 - 2.0 * n * _U

    def count(where, weights):
        return np.bincount(where, weights=weights, minlength=size)

    p_upper, q_upper = count(index, np.exp(log_masses + slack)) * up, count(index, np.exp(log_q + q_slack)) * up
    p_lower, q_lower = count(index, np.exp(log_masses - slack)) * lo, count(index, np.exp(log_q - q_slack)) * lo
    # [e_(i-1), e_i) of the loss lowered by its error: i = number of edges at or below it
    down = count(np.searchsorted(edges, losses - err, side="right"), np.exp(log_masses - slack)) * lo
    return LossBuckets(p_upper, p_lower, q_upper, q_lower, down)


def _exp_interval(x1, x2, scale_exponent):
    """``exp(scale_exponent) (1 - e^(x1 - x2)) / 2`` (``x1 <= x2``) with its relative rounding bound: the mass
    of ``[x1, x2]`` under ``Laplace(0, 1)`` (``scale_exponent = -x1``, right of 0) or ``Laplace(t, 1)``
    (``scale_exponent = x2 - t``, left of t). ``exp`` and ``expm1`` within 1 ulp each, the subtractions within
    ``u`` of their magnitudes: 8u, plus the exponent's own rounding ``u |scale_exponent|``."""
    with np.errstate(invalid="ignore", over="ignore"):
        value = 0.5 * np.exp(scale_exponent) * -np.expm1(np.minimum(x1 - x2, 0.0))
        rel = _U * (8.0 + np.abs(scale_exponent) + np.abs(x2 - x1))
    return np.where(x2 > x1, value, 0.0), rel


def subsampled_laplace_buckets(t: float, q: float, edges: ArrayLike, remove: bool) -> LossBuckets:
    """:class:`LossBuckets` of the Poisson-subsampled Laplace pair, ``q`` in ``(0, 1]`` (``q = 1``: the Laplace
    mechanism itself), base pair ``A = Laplace(t, 1)``, ``B = Laplace(0, 1)`` (``t = sensitivity / scale``).

    ``log dA/dB (x) = |x| - |x - t|``: ``-t`` left of 0, ``2x - t`` on ``[0, t]``, ``t`` right of t. Remove
    direction, ``((1-q) B + q A, B)`` (thesis Thm 3.3.5): the loss ``log(1 - q + q e^(|x| - |x-t|))`` has an atom
    ``log(1 - q + q e^-t)`` of P-mass ``(1 - q + q e^-t) / 2`` (``x <= 0``), an atom ``log(1 - q + q e^t)`` of
    P-mass ``e^-t (1 - q + q e^t) / 2`` (``x >= t``) and between them increases with ``x``: ``L <= l`` iff
    ``x <= x(l) = (z(l) + t) / 2``, ``z(l) = log1p(expm1(l) / q)``; on ``[0, t]`` ``B`` has mass
    ``(e^-x1 - e^-x2) / 2`` on ``[x1, x2]`` and ``A`` has ``(e^(x2-t) - e^(x1-t)) / 2``. Add direction,
    ``(B, (1-q) B + q A)``: the negated losses, P-masses ``1/2`` and ``e^-t / 2`` for the atoms, and bucket
    ``(a, b]`` is ``x`` in ``[x(-b), x(-a))``."""
    edges = np.asarray(edges, dtype=np.float64)
    # the atoms: loss log(1 - q + q e^(-+t)) as a log-sum-exp (no cancellation, also at q = 1), its rounding
    # bounded by a few u of the magnitudes involved (t itself within u)
    with np.errstate(divide="ignore"):
        log_rest, log_q = float(np.log1p(-q)), float(np.log(q))
    l_lo, l_hi = float(np.logaddexp(log_rest, log_q - t)), float(np.logaddexp(log_rest, log_q + t))
    err = [8.0 * _U * (abs(l) + t + abs(log_q) + 1.0) for l in (l_lo, l_hi)]
    log_half = float(np.log(0.5))
    if remove:
        losses, log_p = [l_lo, l_hi], [log_half + l_lo, log_half - t + l_hi]
    else:
        losses, log_p = [-l_lo, -l_hi], [log_half, log_half - t]
    log_err = [e + 4.0 * _U * (abs(lp) + t + 1.0) for e, lp in zip(err, log_p)]
    atoms = atom_buckets(losses, log_p, edges, loss_error=np.array(err), log_mass_error=np.array(log_err))
    # the continuous part: thresholds x(l) = (z(l) + t) / 2 clipped to [0, t]
    z_lo, z_hi = _log_ratio_argument(edges if remove else -edges, q)
    with np.errstate(invalid="ignore"):
        x_lo = np.clip((z_lo + t) * 0.5 - 4.0 * _U * (np.abs(np.where(np.isfinite(z_lo), z_lo, 0.0)) + t), 0.0, t)
        x_hi = np.clip((z_hi + t) * 0.5 + 4.0 * _U * (np.abs(np.where(np.isfinite(z_hi), z_hi, 0.0)) + t), 0.0, t)
    if remove:  # bucket i: x in (x(e_(i-1)), x(e_i)]
        left_lo, left_hi = np.concatenate([[0.0], x_lo]), np.concatenate([[0.0], x_hi])
        right_lo, right_hi = np.concatenate([x_lo, [t]]), np.concatenate([x_hi, [t]])
    else:  # bucket i: x in [x(-e_i), x(-e_(i-1)))
        left_lo, left_hi = np.concatenate([x_lo, [0.0]]), np.concatenate([x_hi, [0.0]])
        right_lo, right_hi = np.concatenate([[t], x_lo]), np.concatenate([[t], x_hi])
    bounds = {}
    for name, (x1, x2) in (("hi", (left_lo, right_hi)), ("lo", (left_hi, right_lo))):
        b_mass, b_rel = _exp_interval(x1, x2, -x1)
        a_mass, a_rel = _exp_interval(x1, x2, x2 - t)
        sign = 1.0 if name == "hi" else -1.0
        b_mass, a_mass = b_mass * (1.0 + sign * b_rel), a_mass * (1.0 + sign * a_rel)
        mixed = ((1.0 - q) * b_mass + q * a_mass) * (1.0 + sign * 4.0 * _U)
        bounds[name] = (mixed, b_mass) if remove else (b_mass, mixed)
    (p_hi, q_hi), (p_lo, q_lo) = bounds["hi"], bounds["lo"]
    return LossBuckets(atoms.p_upper + p_hi * (1.0 + 2.0 * _U), atoms.p_lower + p_lo * (1.0 - 2.0 * _U),
                       atoms.q_upper + q_hi * (1.0 + 2.0 * _U), atoms.q_lower + q_lo * (1.0 - 2.0 * _U),
                       atoms.down + p_lo * (1.0 - 2.0 * _U))
