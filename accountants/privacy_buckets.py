"""Privacy buckets: proven discretised privacy-loss distributions composed by FFT, every error bounded.

Where Fourier inversion of the characteristic function cannot work (few runs of a small sampling probability:
the loss piles up at its infimum and the characteristic function barely decays), the loss distribution itself is
discretised on a grid ``l_k = k h`` (``h`` a power of two, so every grid point is exact) and composed by
convolution. Two measures per direction bracket the exact ``delta(eps) = E_P[(1 - e^(eps - L))_+]`` of the
composition (thesis Lemma 3.1.4, Thm 3.3.4: independent losses add):

* **upper**: connect-the-dots (Doroshenko, Ghazi, Kamath, Kumar & Manurangsi, PETS 2022). The mass ``m`` of a
  bucket ``(a, b]`` with Q-mass ``r = E_P[e^-L; (a, b]]`` goes to its edges, ``p_a`` at ``a`` and ``p_b`` at
  ``b``, with ``p_a + p_b = m`` and ``p_a e^-a + p_b e^-b = r``: a mean-preserving spread of ``y = e^-L``. The
  composed ``delta(eps) = E[(1 - e^eps prod y_i)_+]`` is convex in each ``y_i`` (others fixed), so by Jensen
  and independence the spread can only raise it; upper bounds on ``p_a`` and ``p_b`` raise it further (the
  integrand is non-negative). The lowest bucket ``(-inf, e_0]`` goes to ``e_0`` and the highest to ``+inf``
  (rounding up; delta is non-decreasing in each loss).
  The share at ``a`` need not exceed ``M - P_b`` (``M >= m`` and ``P_b >= p_b`` the upper bounds used): the pair
  ``(min(P_a, M - P_b), P_b)`` at ``(a, b)`` has at least ``p_b`` at losses ``>= t`` for ``a < t <= b`` and
  ``min(P_a + P_b, M) >= m`` for ``t <= a``, so it is above the spread in the order of upper tails kept below.
  Without that cap the two shares of a bucket can exceed its mass by about ``g m / h`` (``g`` the relative width
  of the enclosure of the bucket's masses, which grows like ``1 / h`` for masses computed as differences of
  CDFs): measured for the with-replacement pair at ``h = 2^-12``, a run's total exceeded 1 by ``1.8e-6``
  (``1.1e-10`` with the cap), which 14,063 runs compound to 2.6 % of delta. ``M - P_b`` is computed from
  ``M (1 + 4u)``, which keeps it at or above its exact value (``fl(A - B) >= (A - B)(1 - u)``).
* **lower**: where the bucket masses are of the loss itself (:attr:`mechanisms.loss_buckets.LossBuckets.of_loss`:
  the Gaussian and its Poisson-subsampled version), connect-the-dots lowered by its sags
  (:func:`accountants.lowered_dots.lowered_dots`: each bucket's mass at or above its mean ``y = e^-l``, a
  contraction, then on the grid with the same mass and mean ``y``; of second order, about as tight as the upper
  measure), or where its checks fail Jensen's pairs (:func:`_jensen_pairs`: buckets paired across their shared edge
  and contracted onto it, what is left moved to lower loss, which shifts the mean; of second order too, but looser:
  :func:`_lower_measure`). Otherwise
  every loss rounded down to the grid (Meiser & Mohammadi, CCS 2018, "privacy buckets"), masses taken from below,
  of first order. The lowest bucket is dropped either way.

Both are non-negative measures (not necessarily of total mass 1). The upper one keeps the order of upper tails: if
``mu'([t, inf]) >= mu([t, inf])`` for every ``t``, the same holds after convolving both with any non-negative
measure ``nu`` (``(mu * nu)([t, inf]) = int mu([t - y, inf]) d nu(y)``), and ``int g d mu' >= int g d mu`` for every
non-decreasing ``g >= 0``. The lower one keeps the weaker order ``int g d nu <= int g d mu`` for every ``g >= 0``
convex and non-increasing in ``y = e^-l`` (non-decreasing in the loss), which rounding down, contractions, moving
mass to lower loss and removing mass all keep, and which convolution with a non-negative measure keeps (``y_1
-> int g(y_1 y_2) d nu(y_2)`` is again such a function); ``(1 - e^(eps - l))_+ = (1 - e^eps y)_+`` is one. Every
step below keeps these orders (upper: ``>=``; lower: ``<=``):

* **convolution by FFT** (radix 2, numpy's pocketfft): with ``rho = 2 log2(N) eta / (1 - log2(N) eta)``,
  ``eta = mu + gamma_4 (sqrt 2 + mu)`` and twiddle-factor error ``mu <= 8u`` (Higham, *Accuracy and Stability
  of Numerical Algorithms*, 2nd ed., Thm 24.2; the factor 2 for the real-input variant), the computed ``c~`` of
  ``c = a * b`` satisfies ``||c~ - c||_2 <= E_2`` (:func:`_fft_error`), so ``||c~ - c||_1 <= sqrt(M) E_2`` over
  its ``M`` entries. Negative entries are set to 0 (``c >= 0``: this moves no entry away from ``c``). Upper
  measure: ``sqrt(M) E_2`` more mass at ``+inf``. Lower measure: the same mass removed from the top entries.
* **truncation** after each convolution: upper tails of mass at most ``T`` go to ``+inf`` (upper) or to the last
  kept point (lower); lower tails to the first kept point (upper) or dropped (lower). ``T`` is :data:`TAIL`, or that
  convolution's error bound ``sqrt(M) E_2`` where it is larger (any ``T`` keeps the orders; this one adds at most
  that bound at each end, so at most twice the error the convolution already carries): the FFT's rounding leaves
  tiny entries across its whole length, and tails of at most :data:`TAIL` could not cut that floor, so each squaring
  doubled the support (many runs of a narrow loss, sigma 0.53, q 1.3e-5, 4,131 runs: 31 million points instead of
  ten thousand, 43 s instead of 0.1 s by a one-off timing).
* **evaluation**: ``sum_k c_k (1 - e^(eps - l_k))_+`` of non-negative terms, each within 4u, the sum within
  ``M u`` relative.

The upper measure's error is of second order in ``h`` per run (the spread is at most one bucket wide); the lower's
too for the Gaussian and its Poisson-subsampled version, of first order otherwise (there ``upper`` is the tight
end).
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Iterable

import numpy as np

from dpledger.accountants.lowered_dots import lowered_dots
from dpledger.mechanisms._fft_error import fft_rho, norm2_upper, shave_top
from dpledger.mechanisms._logmath import EPS
from dpledger.mechanisms.base import Mechanism
from dpledger.mechanisms.relations import Direction

__all__ = ["BucketLedger", "MAX_POINTS", "TAIL"]

_U = EPS / 2
#: Grid points of the largest composed distribution (the grid step is the finest power of two that fits).
MAX_POINTS = 1 << 20
#: The finest grid step used (connect-the-dots errors are of second order in it; finer grids only cost time).
FINEST_STEP = 2.0**-14
#: Mass moved off each end of a distribution after each convolution (or that convolution's error bound, if larger).
TAIL = 2.0**-48
#: Buckets of the first, coarse pass that finds the composed support.
_COARSE_POINTS = 1 << 12
#: Most coarse passes per direction (each on a finer step, while the composed width allows one).
_COARSE_ROUNDS = 4
#: Where the first coarse pass allows no step this fine, the pass is repeated on finer steps and the grid step
#: is the finest that fits but at most this fine (finer steps gain little once they are about this fine: the
#: second-order connect-the-dots error is then below the FFT's and the masses' rounding, compounded over runs).
STEP_GOAL = 2.0**-10


@dataclasses.dataclass
class _Measure:
    """Masses ``values[j]`` at losses ``(start + j) h`` and ``infinite`` at ``+inf``; ``upper`` says which of the
    two bracketing measures (module docstring) it is, and so which way every rounding goes."""

    start: int
    values: np.ndarray
    infinite: float
    upper: bool

    def total(self):
        """Sum of the finite masses, rounded outward (``len`` roundings of relative size u)."""
        s = float(np.sum(self.values))
        slack = 1.0 + (self.values.size + 2) * _U
        return s * slack if self.upper else s / slack


def _fft_error(n, a, b):
    """``E_2``, a bound on ``||c~ - c||_2`` for the FFT convolution of non-negative ``a`` and ``b`` in length ``n``
    (module docstring): forward transforms within ``rho ||A||_2`` (``||A||_2 = sqrt(n) ||a||_2``), their
    product within ``sqrt(2) gamma_2`` and the errors carried by ``||A||_inf <= ||a||_1``, the inverse within
    ``rho`` of its output and ``1 / sqrt(n)`` of its input error."""
    rho = fft_rho(n)
    a1, b1 = float(np.sum(a)) * (1 + 1e-12), float(np.sum(b)) * (1 + 1e-12)
    a2, b2 = norm2_upper(a), norm2_upper(b)
    root = math.sqrt(n)
    e_a, e_b = rho * root * a2, rho * root * b2
    gamma = math.sqrt(2.0) * 2 * _U / (1 - 2 * _U)
    product = e_a * (b1 + e_b) + a1 * e_b + gamma * (a1 + e_a) * (root * b2 + e_b)
    return (product / root + rho * (a1 * b2 + product / root)) * (1.0 + 1e-9)


def _truncate(m, tail=TAIL):
    """Move tails of mass at most ``tail`` (:data:`TAIL`, or a convolution's error bound where larger) off both ends
    (module docstring)."""
    v = m.values
    if v.size <= 2:
        return m
    slack = (v.size + 2) * _U
    from_top = np.cumsum(v[::-1])
    top = int(np.searchsorted(from_top, tail, side="right"))  # top entries whose total is at most tail
    top = min(top, v.size - 1)
    from_bottom = np.cumsum(v)
    bottom = int(np.searchsorted(from_bottom, tail, side="right"))
    bottom = min(bottom, v.size - 1 - top)
    if not top and not bottom:
        return m
    top_mass = float(from_top[top - 1]) if top else 0.0
    bottom_mass = float(from_bottom[bottom - 1]) if bottom else 0.0
    kept = v[bottom:v.size - top].copy()
    infinite = m.infinite
    if m.upper:
        infinite += top_mass * (1.0 + slack)
        kept[0] += bottom_mass * (1.0 + slack)
    else:
        kept[-1] += top_mass * (1.0 - slack)
    return _Measure(m.start + bottom, kept, infinite, m.upper)


def _convolve(a, b):
    """The composition of two independent losses' measures (module docstring), truncated."""
    size = a.values.size + b.values.size - 1
    n = 1 << max(int(size - 1).bit_length(), 1)
    if min(a.values.size, b.values.size) <= 64:
        c = np.convolve(a.values, b.values)  # direct: each entry a sum of at most 64 products
        err1 = float(np.sum(c)) * (2 * 66 * _U)
    else:
        c = np.fft.irfft(np.fft.rfft(a.values, n) * np.fft.rfft(b.values, n), n)[:size]
        err1 = math.sqrt(size) * _fft_error(n, a.values, b.values)
    np.maximum(c, 0.0, out=c)
    a_total, b_total = a.total(), b.total()
    infinite = (a.infinite * (b_total + b.infinite) + b.infinite * a_total) * (1.0 + 8 * _U)
    if a.upper:
        infinite += err1
    else:
        infinite *= 1.0 - 8 * _U
        c = shave_top(c, err1)
    # the tails may carry as much mass as the convolution's error bound: an FFT's rounding leaves a floor of tiny
    # entries across its whole length, which tails of at most TAIL could not cut, so each squaring doubled the support
    # (sigma 0.53, q 1.3e-5, 4,131 runs: 31 million points against the 2^20 the step was chosen for)
    return _truncate(_Measure(a.start + b.start, c, infinite, a.upper), max(TAIL, err1))


def _power(m, count):
    """``count``-fold composition by repeated squaring."""
    result, base = None, m
    while True:
        if count & 1:
            result = base if result is None else _convolve(result, base)
        count >>= 1
        if not count:
            return result
        base = _convolve(base, base)


def _connect_the_dots(b, edges, h):
    """The connect-the-dots spread (module docstring) of the interior buckets ``1 .. n-1`` of :class:`LossBuckets`
    ``b`` on the grid ``edges`` (``n`` points ``h`` apart): masses at each edge, bounded above (the first and last
    buckets are the caller's)."""
    n = edges.size
    a_edges = edges[:-1]
    one_minus = float(-np.expm1(-h))  # 1 - e^-h, within 2u
    with np.errstate(over="ignore", under="ignore", invalid="ignore"):
        r_hi = b.q_upper[1:n] * np.exp(a_edges)  # r e^a (e^a within 2u; products within u)
        r_lo = b.q_lower[1:n] * np.exp(a_edges)
        m_hi, m_lo = b.p_upper[1:n], b.p_lower[1:n]
        e_h = math.exp(-h)
        p_a = (r_hi * (1 + 4 * _U) - m_lo * e_h * (1 - 4 * _U)) / one_minus
        p_b = (m_hi - r_lo * (1 - 4 * _U)) / one_minus
        # each difference within u of itself, the division within u, 1 - e^-h within 2u: 8u of the terms' sum
        p_a = p_a + 8 * _U * (r_hi + m_lo) / one_minus
        p_b = p_b + 8 * _U * (m_hi + r_lo) / one_minus
    p_a = np.where(np.isfinite(p_a), np.clip(p_a, 0.0, m_hi), m_hi)  # p_a <= m: a bound too
    p_b = np.where(np.isfinite(p_b), np.clip(p_b, 0.0, m_hi), m_hi)
    # the two shares need not exceed the bucket's mass: p_a no more than m_hi - p_b (module docstring)
    p_a = np.minimum(p_a, np.maximum(m_hi * (1.0 + 4 * _U) - p_b, 0.0))
    up = np.zeros(n)
    up[:-1] += p_a
    up[1:] += p_b
    return up * (1.0 + 4 * _U)  # the two additions per point


def _jensen_pairs(b, edges):
    """The lower measure of one run on grid points ``edges`` (module docstring; :mod:`accountants.windowed_buckets`):
    masses at each edge from the interior buckets ``1 .. n-1`` of ``b`` (bucket ``i = (e_(i-1), e_i]``), buckets ``i``
    and ``i + 1`` paired on ``e_i`` for ``i = 1, 3, ...``; an unpaired last bucket goes whole to its lower edge.

    In units of ``e^(-e_i)`` (``R = r e^(e_i)``, ``r`` a bucket's Q-mass, so a bucket's mean ``y`` is ``R / m``), the
    upper bucket's atom lies at or below 1 and the lower one's at or above. Taking all ``m_(i+1)`` and ``alpha`` of
    ``m_i`` keeps the pair's mean at most 1 iff ``alpha (R_i / m_i - 1) <= m_(i+1) - R_(i+1)``: ``alpha = m_i min(1,
    (m_(i+1) - R_(i+1)) / (R_i - m_i))``, with ``m`` from below and ``R`` from above (each makes ``alpha`` smaller, and
    any smaller ``alpha >= 0`` is as valid: its leftover moves up in ``y`` to ``e_(i-1)``); the differences' rounding
    is taken off the numerator and put on the denominator."""
    n = edges.size
    m, r_hi = b.p_lower, b.q_upper
    low = np.zeros(n)
    i = np.arange(1, n - 1, 2)
    with np.errstate(over="ignore", under="ignore", invalid="ignore", divide="ignore"):
        scale = np.exp(edges[i]) * (1.0 + 4 * _U)
        r_low, r_up = r_hi[i] * scale * (1.0 + 2 * _U), r_hi[i + 1] * scale * (1.0 + 2 * _U)
        num = m[i + 1] - r_up - 2 * _U * (m[i + 1] + r_up)
        den = r_low - m[i] + 2 * _U * (r_low + m[i])
        share = np.where(den > 0.0, num / den, 1.0)
    share = np.where(np.isfinite(share), np.clip(share, 0.0, 1.0), 0.0)
    alpha = m[i] * share * (1.0 - 1e-12)
    low[i] += m[i + 1] + alpha
    low[i - 1] += np.maximum(m[i] - alpha, 0.0)
    if (n - 1) % 2:
        low[n - 2] += m[n - 1]
    return low * (1.0 - 4 * _U)


def _lower_measure(b, edges):
    """The lower measure of one run's interior buckets on the grid ``edges`` (``b.of_loss``): the lowered dots
    (:func:`accountants.lowered_dots.lowered_dots`), or Jensen's pairs where the lowered dots' checks fail."""
    low = lowered_dots(b, edges)
    return _jensen_pairs(b, edges) if low is None else low


def _discretise(mechanism, direction, h, floor, cap):
    """``(upper, lower)`` measures of one run on the grid ``k h``, ``floor <= k h <= cap`` (module docstring)."""
    k0, k1 = math.floor(floor / h), math.ceil(cap / h)
    edges = np.arange(k0, k1 + 1, dtype=np.float64) * h
    b = mechanism.loss_buckets(edges, direction)
    up = _connect_the_dots(b, edges, h)
    up[0] += b.p_upper[0] * (1.0 + 4 * _U)  # the lowest bucket at e_0 (its sum with the spread's share rounded)
    upper = _Measure(k0, up, float(b.p_upper[edges.size]), True)
    if b.of_loss:
        # the lowered dots (or Jensen's pairs) on the interior buckets, the highest bucket at e_(n-1), the lowest
        # dropped
        low = _lower_measure(b, edges)
        low[-1] = (low[-1] + b.p_lower[edges.size] * (1.0 - 4 * _U)) * (1.0 - 2 * _U)
    else:
        low = b.down[1:].astype(np.float64)
    lower = _Measure(k0, low, 0.0, False)
    return _truncate(upper), _truncate(lower)


def _loss_range(mechanism, direction, count):
    """``(floor, cap)`` of one run's loss outside which the mass is negligible (at most :data:`TAIL` as far as
    the coarse buckets show): only where the grid is cut, never a bound (cutting anywhere is sound)."""
    log_tail = math.log(TAIL)
    cap = float(mechanism.loss_cut(direction, TAIL))
    floor = log_tail - 1.0  # P(L <= -t) <= e^-t E_P[e^-L] <= e^-t
    if not math.isfinite(cap) or cap <= floor:
        cap = 64.0 if not math.isfinite(cap) else floor + 1.0
    edges = np.linspace(floor, cap, _COARSE_POINTS)
    b = mechanism.loss_buckets(edges, direction)
    below = np.cumsum(b.p_upper)
    above = np.cumsum(b.p_upper[::-1])[::-1]
    i = int(np.searchsorted(below, TAIL, side="right"))  # buckets 0 .. i-1 hold at most TAIL
    j = int(np.searchsorted(-above, -TAIL, side="left"))  # buckets j .. n hold at most TAIL
    lo = edges[max(i - 1, 0)]
    hi = edges[min(max(j - 1, i), edges.size - 1)]
    return float(lo), float(max(hi, lo))


class BucketLedger:
    """The composed upper and lower measures of a ledger, both directions (module docstring).

    ``entries`` are ``(mechanism, count)`` with :attr:`~mechanisms.base.Mechanism.has_loss_buckets`; each run's
    grid is cut where :meth:`~mechanisms.base.Mechanism.loss_cut` says (any cut is sound: module docstring). The
    grid step is a power of two: at least :data:`FINEST_STEP` and fine enough to keep the composed support (found
    by a coarse first pass) within :data:`MAX_POINTS` points. Where that first pass allows no step as fine as
    :data:`STEP_GOAL` (its coarse step comes from the sum of the runs' ranges, which overstates a long ledger's
    width, and the coarse step's spread widens what it sees), the pass is repeated on the finer steps the widths
    seen suggest, and the step is the finest that fits but no finer than :data:`STEP_GOAL`. The step changes no
    proof, only how tight and how slow the result is. Where an answer is at the scale of that step (epsilon
    below ``REFINE_BELOW`` steps: a loss narrower than the grid, such as few runs of a small sampling
    probability), the ledger is composed again on the finest step that fits :data:`MAX_POINTS` (at most
    ``2^-20``), and the tighter end of each side is kept: both grids give proven bounds.
    """

    REFINE_BELOW = 64

    def __init__(self, entries: Iterable[tuple[Mechanism, int]]):
        self._entries = [(m, int(n)) for m, n in entries]
        self._ranges = {(m, d): _loss_range(m, d, n) for m, n in self._entries for d in Direction}
        first = {d: self._coarse_pass(d) for d in Direction}
        finest = self._fitting(first.values())
        self.h = max(finest, FINEST_STEP)
        if finest > STEP_GOAL:
            # the sum of the runs' ranges overstates a long ledger's width (and the coarse step's spread widens
            # it): look again on the finer steps the widths seen suggest, and go no finer than STEP_GOAL
            finest = self._fitting(self._coarse_pass(d, *first[d]) for d in Direction)
            self.h = max(finest, STEP_GOAL)
        self._finest = finest
        self._grids = {self.h: {d: self._compose(d, self.h) for d in Direction}}

    def _coarse_pass(self, direction, width=None, coarse_h=None):
        """``(width, step)``: the width of the composed upper measure on a coarse step (at first from the sum of
        the runs' ranges; given the width a pass saw on ``coarse_h``, repeated on the step it suggests while that
        is at least eight times finer, at most :data:`_COARSE_ROUNDS` passes in all)."""
        ranges = [self._ranges[m, direction] for m, _ in self._entries]
        widest = max(hi - lo for lo, hi in ranges)
        least = 2.0 ** math.ceil(math.log2(max(widest, 1e-6) / (MAX_POINTS / 4)))
        if width is None:
            total = sum(n * (hi - lo) for (lo, hi), (_, n) in zip(ranges, self._entries))
            coarse_h = max(2.0 ** math.floor(math.log2(max(total, widest, 1e-6) / _COARSE_POINTS)), least)
            upper, _ = self._compose(direction, coarse_h, lower=False)
            return max(upper.values.size * coarse_h, widest), coarse_h
        for _ in range(_COARSE_ROUNDS - 1):
            finer = max(2.0 ** math.floor(math.log2(width / _COARSE_POINTS)), least)
            if finer > coarse_h / 8:
                break
            coarse_h = finer
            upper, _ = self._compose(direction, coarse_h, lower=False)
            width = max(upper.values.size * coarse_h, widest)
        return width, coarse_h

    @staticmethod
    def _fitting(passes):
        """The finest power-of-two step (at least ``2^-20``) at which the widest composed support fits
        ``MAX_POINTS / 2`` points."""
        width = max(w for w, _ in passes)
        return max(2.0 ** -math.floor(math.log2((MAX_POINTS / 2) / width)), 2.0**-20)

    def _refine(self, scale):
        """Add the finest grid when ``scale`` (an epsilon) is within :attr:`REFINE_BELOW` steps; True if added."""
        if scale >= self.REFINE_BELOW * self.h or self._finest >= self.h:
            return False
        self.h = self._finest
        self._grids[self.h] = {d: self._compose(d, self.h) for d in Direction}
        return True

    def _compose(self, direction, h, lower=True):
        ups, lows = [], []
        for m, n in self._entries:
            floor, cap = self._ranges[m, direction]
            u, lo = _discretise(m, direction, h, floor, cap)
            ups.append(_power(u, n))
            if lower:
                lows.append(_power(lo, n))
        up = ups[0]
        for other in ups[1:]:
            up = _convolve(up, other)
        low = None
        if lower:
            low = lows[0]
            for other in lows[1:]:
                low = _convolve(low, other)
        return up, low

    @staticmethod
    def _delta(m, h, epsilon):
        """``int (1 - e^(eps - l))_+ dm``, rounded outward (module docstring)."""
        k = max(math.floor(epsilon / h) + 1 - m.start, 0)  # first index with loss > epsilon (or equal: term 0)
        tail = m.values[k:]
        s = 0.0
        if tail.size:
            losses = np.arange(m.start + k, m.start + k + tail.size, dtype=np.float64) * h
            with np.errstate(over="ignore"):
                s = float(np.sum(tail * np.maximum(-np.expm1(epsilon - losses), 0.0)))
        slack = (tail.size + 8) * _U
        if m.upper:
            return min((s + m.infinite) * (1.0 + slack), 1.0)
        return max(s * (1.0 - slack), 0.0)

    def _grid_delta(self, h, epsilon):
        grid = self._grids[h]
        return (max(self._delta(grid[d][1], h, epsilon) for d in Direction),
                max(self._delta(grid[d][0], h, epsilon) for d in Direction))

    def delta_bounds(self, epsilon: float) -> tuple[float, float]:
        """``(lower, upper)`` of ``delta(epsilon)``, the larger of the two directions (thesis Thm 3.3.5); the
        tightest over the grids composed so far."""
        self._refine(epsilon)
        ends = [self._grid_delta(h, epsilon) for h in self._grids]
        return max(e[0] for e in ends), min(e[1] for e in ends)

    def _grid_epsilon(self, h, delta):
        grid = self._grids[h]

        def smallest(index):
            def meets(e):
                return max(self._delta(grid[d][index], h, e) for d in Direction) <= delta

            if meets(0.0):
                return 0.0, 0.0
            hi = max(max((grid[d][index].start + grid[d][index].values.size) * h for d in Direction), h)
            if not meets(hi):
                return hi, math.inf
            lo = 0.0
            while hi - lo > 1e-13 * max(hi, 1.0):
                mid = 0.5 * (lo + hi)
                if mid in (lo, hi):
                    break
                lo, hi = (lo, mid) if meets(mid) else (mid, hi)
            return lo, hi

        upper = smallest(0)[1]
        return min(smallest(1)[0], upper), upper

    def epsilon_bounds(self, delta: float) -> tuple[float, float]:
        """``(lower, upper)``: ``upper`` an epsilon whose upper delta was evaluated at most ``delta`` (``inf`` if
        the mass at ``+inf`` alone exceeds it), ``lower`` one whose lower delta was evaluated above it; the
        tightest over the grids (a second, finer one where the answer is at the scale of the first's step)."""
        ends = [self._grid_epsilon(h, delta) for h in self._grids]
        if self._refine(min(e[1] for e in ends)):
            ends.append(self._grid_epsilon(self.h, delta))
        lower, upper = max(e[0] for e in ends), min(e[1] for e in ends)
        return min(lower, upper), upper
