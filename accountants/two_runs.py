"""Ledgers of two runs of Poisson-subsampled Gaussians: epsilon and delta from the exact second run.

:mod:`mechanisms.subsampled_gaussian_two_runs` bounds ``delta(eps)`` of such a composition on a grid of the first
run's outputs, from above by chords and from below by Jensen's inequality, both of second order in the grid's
cells. Here the grid is refined where it matters and the bounds are searched for epsilon:

* delta at ``eps``: the grid refined at ``eps`` until the interval is within ``rtol`` of its upper end;
* epsilon at ``delta``: a first crossing of the upper bound on the coarse grid, the grid refined there (until the
  delta interval's width, through the profile's slope, is half of ``rtol`` in epsilon), then the upper bound's
  crossing on it (:func:`accountants._roots.bracket_crossing`; ``upper`` is an epsilon whose upper delta was
  evaluated at most ``delta``) and a lower end: one evaluation a little below where the lower bound should cross,
  taken if its lower delta is above ``delta``, else that crossing searched too (``lower`` is an epsilon whose lower
  delta was evaluated above ``delta``); refined again at the new upper end while the interval is wider than
  ``rtol``.

Every grid gives proven bounds, so the tightest ends seen are kept; the grid only decides how tight and how fast.
Each query starts from the coarse grid, so the same question gets the same answer whatever was asked before.
This is the few-run corner of :class:`accountants.fourier_accountant.FourierAccountant` (two runs of sigma 0.6, q
1e-4: the Fourier inversion runs out of nodes there and the privacy buckets leave a 1e-3 wide interval).
"""

from __future__ import annotations

import math

from dpledger.accountants._roots import bracket_crossing
from dpledger.mechanisms.subsampled_gaussian_two_runs import TwoSubsampledGaussians

__all__ = ["NARROW", "TwoRunLedger", "narrowness"]

#: Ledgers at least this narrow (:func:`narrowness`) take the two-run path; wider ones are inverted faster.
NARROW = 100.0


def narrowness(mu: float, q: float) -> float:
    """How many one-run loss spreads fit under its upper reach, ``log1p(q expm1(mu (mu / 2 + 5)))`` (the loss at 5
    standard deviations of the output above the shifted mean) over ``q sqrt(expm1(mu^2))`` (about the loss's standard
    deviation for small ``q``): roughly the nodes an inversion of two runs needs per unit of its bandwidth. Only the
    path, never the proof, depends on it. Measured (two runs, delta 1e-5, this repository's Intel machine): the
    inversion was faster up to about 100 (sigma 1, q 0.01: 94, 0.05 s against 0.10 s; sigma 0.5, q 0.1: 13) and
    slower from there (sigma 0.5, q 0.01: 101, 0.51 s against 0.08 s; sigma 1, q 1e-3: 166, 0.20 against 0.11 s;
    sigma 0.6, q 1e-3: 738, 1.8 s against 0.09 s)."""
    reach = math.log1p(q * math.expm1(min(mu * (0.5 * mu + 5.0), 700.0)))
    return reach / (q * math.sqrt(math.expm1(min(mu * mu, 700.0))))


class TwoRunLedger:
    """Proven ``delta(eps)`` and ``eps(delta)`` of two Poisson-subsampled Gaussian runs, ``first`` and ``second``
    given as ``(mu, q)`` (module docstring)."""

    def __init__(self, first: tuple[float, float], second: tuple[float, float]):
        self._pair = TwoSubsampledGaussians(first, second)

    def delta_bounds(self, epsilon: float, rtol: float) -> tuple[float, float]:
        """``(lower, upper)`` of ``delta(eps)``: the larger of the two directions (thesis Thm 3.3.5)."""
        return self._pair.refined(float(epsilon), self._pair.coarse_grid(), rtol)[1:]

    def epsilon_bounds(self, delta: float, rtol: float) -> tuple[float, float]:
        """``(lower, upper)`` of the smallest epsilon with ``delta(eps) <= delta`` (module docstring)."""
        pair, grid = self._pair, self._pair.coarse_grid()
        tolerance = rtol / 8.0

        def upper_curve(g):
            return lambda e: pair.bounds(e, g, want_lower=False)[1]

        def lower_curve(g):
            return lambda e: pair.bounds(e, g)[0]

        upper = bracket_crossing(upper_curve(grid), delta, tolerance=1e-4)[1]
        if upper == 0.0 or not math.isfinite(upper):
            return 0.0, upper
        # the slope k of log delta there: a relative gap g of the delta interval moves epsilon by about g / k, so the
        # grid is refined until g <= rtol eps k / 2 (more rounds where epsilon's interval is still too wide)
        step = 0.01 * upper
        coarse_lo, coarse_hi = pair.bounds(upper, grid)
        k = max(math.log(coarse_hi / max(upper_curve(grid)(upper + step), 1e-300)) / step, 1e-300)
        goal = min(max(rtol * upper * k / 2.0, rtol / 64.0), 0.01)
        # how far the refined crossing may lie below the coarse one: the coarse interval's width over the slope
        drift = min(max(2.0 * (coarse_hi - coarse_lo) / coarse_hi / k, 1e-9 * upper), 0.02 * upper)
        lower = 0.0
        for _ in range(4):
            grid, low_here, high_here = self._pair.refined(upper, grid, goal)
            upper = min(upper, bracket_crossing(upper_curve(grid), delta, start=upper, below=upper - drift,
                                                tolerance=tolerance)[1])
            # the lower curve crosses about (its gap below the upper one) / k lower: one evaluation a little beyond,
            # a search only where that one is not above delta
            guess = upper - 1.5 * (high_here - low_here) / high_here / k
            if 0.0 < guess < upper and lower_curve(grid)(guess) > delta:
                lower = max(lower, guess)
            else:
                lower = max(lower, bracket_crossing(lower_curve(grid), delta, start=upper,
                                                    below=upper * (1.0 - 2.0 * rtol), tolerance=tolerance)[0])
            if upper - lower <= rtol * upper:
                break
            goal /= 4.0
            drift = min(max(2.0 * goal / k, 1e-9 * upper), 0.02 * upper)
        return min(lower, upper), upper
