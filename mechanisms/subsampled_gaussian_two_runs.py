"""Two runs of Poisson-subsampled Gaussians composed, with proven bounds of second order: the last run exact.

Few runs of little noise and a small sampling probability are the hard corner of both other proofs: the loss of a
run piles up in a lump of width about ``q`` at its infimum, so its characteristic function barely decays (the
Fourier inversion needs millions of nodes) and a loss grid fine enough for the lump is far too long for the tail
(the privacy buckets' interval stays 1e-3 wide). Two runs need neither: the second run's privacy profile is a
closed form, and only the first run is discretised, in its Gaussian output ``x``, where its law is smooth.

**The identity.** For one direction's pairs ``(P1, Q1)`` and ``(P2, Q2)`` with losses ``L1, L2`` (thesis Lemma 3.1.4,
Thm 3.3.4), ``delta(eps) = E_(Q1 x Q2)[(e^(L1 + L2) - e^eps)_+] = E_(P1)[D2(e^eps Y)]``, ``Y = e^-L1``, where
``D2(t) = E_(Q2)[(e^(L2) - t)_+]`` is the second run's hockey-stick divergence at ratio ``t``: its profile
``delta2(log t)`` for ``t >= 1``, and through the mirror identity ``D2(t) = 1 - t + t D2'(1 / t)`` (``D2'`` the
mirrored pair's, i.e. the other direction's) for ``t < 1`` (``E_Q[e^L] = 1``; the pairs are mutually continuous).
``D2`` is convex and non-increasing in ``t`` (a supremum of affine functions ``P2(A) - t Q2(A)``).

**The bounds.** Cut the first run's output axis at ``x_0 < ... < x_N``, each cell ``[x_k, x_(k+1)]`` a power of two
long and starting at a multiple of its length (so every edge is exact and no cell straddles 0). On a cell ``Y`` is
monotone and lies in ``[y_lo, y_hi]`` (its values at the cell's ends). With ``P = P1(cell)`` and ``theta =
E_P1[Y - y_lo; cell] / (y_hi - y_lo)`` (in ``[0, P]``):

* **upper** (the chord): ``D2(e^eps y)`` lies below its chord over ``[y_lo, y_hi]`` (convexity), whose
  ``P1``-integral over the cell is ``P D2(e^eps y_lo) - (D2(e^eps y_lo) - D2(e^eps y_hi)) theta``;
* **lower** (Jensen): ``E_P1[D2(e^eps Y); cell] >= P D2(e^eps ybar)``, ``ybar = y_lo + theta (y_hi - y_lo) / P``
  the cell's mean of ``Y``; ``P D2(e^eps Q' / P)`` increases in ``P`` and decreases in ``Q' = P ybar`` (its
  derivative in ``P`` is ``E[X; X > t] >= 0`` for ``X = e^(L2)`` under ``Q2``), so a lower bound on ``P`` and an upper
  bound on ``ybar`` keep it a lower bound.

Both are of second order in a cell's length ``h``: the chord and the tangent at the mean differ by about ``h^2 D2''
/ 8`` on it, so halving a cell takes its share of the interval to about a quarter. The grid starts uniform and
halves the cells holding most of the interval at the epsilon asked (:meth:`TwoSubsampledGaussians.refined`). The
two unbounded end cells are bounded by monotonicity alone (``P D2`` at their smallest ``Y``; 0 below), and hold
almost no mass.

**The cell quantities**, base pair ``A = N(mu, 1)``, ``B = N(0, 1)``, ``w(x) = e^(mu x - mu^2/2)``, ``lambda(x) =
1 - q + q w(x)``, ``l = log lambda = log1p(q expm1(mu x - mu^2/2))``:

* remove, ``(P1, Q1) = ((1 - q) B + q A, B)``: ``Y = 1 / lambda`` decreases in ``x``; on ``[a, b]``, ``y_lo = 1 /
  lambda(b)``, ``y_hi = 1 / lambda(a)``, and ``theta = lambda(a) int_a^b phi(x) (1 - e^(-mu (b - x))) dx / (1 -
  e^(-mu h))`` (``P1`` has density ``phi lambda``);
* add, ``(B, (1 - q) B + q A)``: ``Y = lambda`` increases; ``y_lo = lambda(a)``, ``y_hi = lambda(b)``, ``theta = int_a^b
  phi(x) (e^(mu (x - a)) - 1) dx / (e^(mu h) - 1)``;
* ``phi`` lies between its values at the cell's ends (every cell lies on one side of 0, an edge), so the integrals
  lie between those values times ``I = (e^(-mu h) - 1 + mu h) / mu`` (remove) or ``J = (e^(mu h) - 1 - mu h) / mu``
  (add), computed by their Taylor series where ``mu h`` is small (no cancellation); these, not differences of masses
  (which would cancel to a relative error ``u / h^2``), give ``theta`` to a few ulps;
* ``P`` from :func:`mechanisms.loss_buckets._normal_interval` (tail-side differences of ``Phi``);
* ``(y_hi - y_lo) / y_lo = expm1(l(b) - l(a))`` in both directions.

**Rounding.** ``l`` at each edge carries a bound on its error (below, :func:`_log_lambda`); ``eps + log y`` is then an
interval, and ``D2`` is evaluated at its two ends (upper bound at the lower end, lower bound at the upper end:
``D2(e^eps y)`` is non-increasing in ``eps + log y``). ``D2`` itself is enclosed by :func:`profile_bound`, whose
Gaussian part is :func:`mechanisms.gaussian.analytic_gaussian_delta_bound` (the one-run path's, on arrays). The
upper sum is numpy's sum of the terms, each a product or a difference and a product within ``2u`` of itself, plus
``4u`` of the sum of their magnitudes for those and ``gamma_(n-1)`` of it for the summation (:func:`_sum_up`); the
lower sum's terms are lowered by ``2u`` each and its result by the summation's bound.
"""

from __future__ import annotations

import math

import numpy as np
from scipy import special

from dpledger.mechanisms import _logmath
from dpledger.mechanisms.gaussian import analytic_gaussian_delta_bound
from dpledger.mechanisms.loss_buckets import _normal_interval, _widen

__all__ = ["TwoSubsampledGaussians", "profile_bound"]

#: A grid: the first run's cell edges for the remove direction and for the add direction.
Grid = tuple[np.ndarray, np.ndarray]

_U = 2.0**-53
_LOG_SQRT_2PI = 0.5 * math.log(2.0 * math.pi)


def _down(value):
    """``value`` (a product of factors each within a few u, possibly subnormal) lowered past its rounding."""
    return np.maximum(np.nextafter(np.nextafter(value * (1.0 - 2.0**-49), 0.0), 0.0), 0.0)


def _profile_nonnegative(mu, q, eps, remove, upper):
    """One run's bound at ``eps >= 0``: :meth:`mechanisms.subsampled.PoissonSubsampled.delta_bounds_one_run` (which
    proves the two identities) element by element."""
    if remove:
        # log(1 + expm1(eps) / q), within about 4u relative; above 30 as eps - log q + log1p((q - 1) e^-eps) (no
        # overflow; within 4u of eps + |log q| + 1, which is below 8u of the value)
        big = eps > 30.0
        with np.errstate(over="ignore"):
            e1 = np.where(big, eps - math.log(q) + np.log1p((q - 1.0) * np.exp(-np.where(big, eps, 0.0))),
                          np.log1p(np.expm1(np.where(big, 0.0, eps)) / q))
        if upper:
            high = analytic_gaussian_delta_bound(mu, np.maximum(e1 * (1.0 - 8 * _U), 0.0), True)
            return np.minimum(np.where(high > 0.0, _logmath.round_up(high * q, 8), 0.0), 1.0)
        return _down(analytic_gaussian_delta_bound(mu, e1 * (1.0 + 8 * _U), False) * q)
    # add: c = e^eps (q + expm1(-eps)) and g'' = q / (q + expm1(-eps)); c <= 0 gives 0
    m1 = np.expm1(-eps)
    room = 4.0 * _U * (q + np.abs(m1))
    c = q + m1 + room if upper else q + m1 - room
    safe = np.where(c > 0.0, c, 1.0)
    log_ratio = np.log(q / safe) + (-4.0 if upper else 4.0) * _U * (abs(math.log(q)) + 1.0)
    value = analytic_gaussian_delta_bound(mu, np.maximum(log_ratio, 0.0), upper)
    value = value * np.exp(np.minimum(eps, 700.0)) * safe
    if upper:
        value = np.minimum(np.where(value > 0.0, _logmath.round_up(value, 16), 0.0), 1.0)
    else:
        value = _down(value * (1.0 - 16 * _U))
    return np.where(c > 0.0, value, 0.0)


def profile_bound(mu: float, q: float, epsilon: np.ndarray, remove: bool, upper: bool) -> np.ndarray:
    """A bound (``upper`` or lower) on one run's ``delta(eps)`` of the Poisson-subsampled Gaussian pair (``0 < q <
    1``, base ``(N(mu, 1), N(0, 1))``) at every real ``eps`` of an array: the profile for ``eps >= 0``, and below 0
    the mirror identity ``delta(eps) = -expm1(eps) + e^eps delta'(-eps)``, ``delta'`` the other direction's (module
    docstring), both terms non-negative, the sum rounded outward by ``8u``."""
    eps = np.asarray(epsilon, dtype=np.float64)
    neg = eps < 0.0
    if not neg.any():
        return _profile_nonnegative(mu, q, eps, remove, upper)
    out = np.empty(eps.shape)
    pos = ~neg
    out[pos] = _profile_nonnegative(mu, q, eps[pos], remove, upper)
    e = eps[neg]
    value = -np.expm1(e) + np.exp(e) * _profile_nonnegative(mu, q, -e, not remove, upper)
    out[neg] = np.minimum(value * (1.0 + 8.0 * _U), 1.0) if upper else np.maximum(value * (1.0 - 8.0 * _U), 0.0)
    return out


def _log_lambda(x, mu, q):
    """``(l, error bound)`` of ``l(x) = log1p(q expm1(mu x - mu^2/2))`` at floats ``x``: the exponent within ``8u`` of
    its magnitudes (``mu`` itself within ``4u`` of ``1 / noise_multiplier``), ``expm1`` ``2u`` of itself plus the
    exponent's error times ``e^z``, the product ``u``, and ``log1p`` divides its argument's error by ``lambda >= 1 -
    q`` and adds ``2u`` of itself; all doubled."""
    z = mu * x - 0.5 * mu * mu
    e_z = 8.0 * _U * (np.abs(mu * x) + mu * mu + 1.0)
    with np.errstate(over="ignore"):
        em = np.expm1(z)
        arg = q * em
        l_val = np.log1p(arg)
        e_arg = q * (2.0 * _U * np.abs(em) + e_z * np.exp(z) * 1.01) + _U * np.abs(arg)
        lam = np.exp(np.minimum(l_val, 700.0))
    return l_val, 2.0 * (e_arg / (lam * (1.0 - 1e-12)) + 2.0 * _U * np.abs(l_val)) + 1e-300


def _series_excess(t, sign):
    """``(lo, hi)`` of ``e^(sign t) - 1 - sign t`` at each ``t > 0`` of an array (``sign`` +1 or -1): its Taylor series
    where ``t < 1/2`` (terms ``(sign t)^k / k!`` for ``k = 2 .. 25``, the rest below ``t^26 / 26!``; no cancellation
    worse than the series' first two terms, a factor 3 at ``t = 1/2``), else directly (``e^-t - 1 + t >= t^2 / 2 -
    t^3 / 6``: cancellation at most a factor 12); ``1e-13`` relative slack either way, far above the few dozen
    roundings."""
    t = np.asarray(t, dtype=np.float64)
    small = t < 0.5
    ts = np.where(small, t, 0.0)
    series = np.zeros(t.shape)
    term = np.ones(t.shape)
    for k in range(1, 26):
        term = term * (sign * ts) / k
        if k >= 2:
            series = series + term
    direct = np.expm1(sign * t) - sign * t
    value = np.where(small, series, direct)
    slack = 1e-13 * np.abs(value) + np.where(small, ts**26 / math.factorial(26), 0.0)
    return value - slack, value + slack


class _Cells:
    """The first run's cells ``[x_k, x_(k+1)]`` in one direction (module docstring): arrays over the interior cells
    (each a power of two long and starting at a multiple of its length, so every edge is exact and no cell straddles
    0) and the two end cells, fixed for every epsilon."""

    def __init__(self, mu, q, remove, x):
        width = x[1:] - x[:-1]  # exact: both ends are multiples of the width
        l_val, l_err = _log_lambda(x, mu, q)
        # P-masses of the cells: interior, then (-inf, x_0] and [x_N, inf)
        a = np.concatenate([x[:-1], [-np.inf], x[-1:]])
        b = np.concatenate([x[1:], x[:1], [np.inf]])
        comps = {}
        for shift in (0.0, mu):
            s_u = 4.0 * _U * (abs(shift) + 1.0)
            comps[shift] = _normal_interval(_widen(a - shift, s_u, -1), _widen(a - shift, s_u, 1),
                                            _widen(b - shift, s_u, -1), _widen(b - shift, s_u, 1))
        if remove:
            p_lo = ((1.0 - q) * comps[0.0][0] + q * comps[mu][0]) * (1.0 - 4 * _U)
            p_hi = ((1.0 - q) * comps[0.0][1] + q * comps[mu][1]) * (1.0 + 4 * _U)
        else:
            p_lo, p_hi = comps[0.0]
        self.p_lo, self.p_hi = p_lo[:-2], p_hi[:-2]
        self.end_p_hi = p_hi[-2:]
        # log y at each edge: -l (remove) or l (add), with its error; y_lo is at a cell's right end (remove) or left
        self.log_y = -l_val if remove else l_val
        self.log_y_err = l_err
        self.lo_at, self.hi_at = (slice(1, None), slice(None, -1)) if remove else (slice(None, -1), slice(1, None))
        # r = (y_hi - y_lo) / y_lo = expm1(l(b) - l(a)) >= 0, from above
        diff = (l_val[1:] - l_val[:-1]) * (1.0 + 2 * _U) + l_err[1:] + l_err[:-1]
        self.r_hi = np.expm1(np.maximum(diff, 0.0)) * (1.0 + 4 * _U)
        # phi between its values at the cell's ends (each cell lies on one side of 0)
        log_phi = -0.5 * x * x - _LOG_SQRT_2PI
        phi_err = 4.0 * _U * (1.0 + x * x)
        phi_lo = np.exp(np.minimum(log_phi[:-1], log_phi[1:]) - phi_err[:-1] - phi_err[1:]) * (1.0 - 4 * _U)
        phi_hi = np.exp(np.maximum(log_phi[:-1], log_phi[1:]) + phi_err[:-1] + phi_err[1:]) * (1.0 + 4 * _U)
        # theta = phi * h * g(t), t = mu h (within 8u: mu within 4u, the product u); remove: g(t) = (e^-t - 1 + t) /
        # (t (1 - e^-t)) = 1 / (1 - e^-t) - 1 / t, times lambda(a), rises in t (its derivative is >= 0 iff t <= 2
        # sinh(t / 2)); add: g(t) = (e^t - 1 - t) / (t (e^t - 1)), one less the remove's, falls in t
        t_lo, t_hi = mu * width * (1.0 - 8 * _U), mu * width * (1.0 + 8 * _U)
        if remove:
            g_lo = _series_excess(t_lo, -1.0)[0] / (t_lo * -np.expm1(-t_lo)) * (1.0 - 8 * _U)
            g_hi = _series_excess(t_hi, -1.0)[1] / (t_hi * -np.expm1(-t_hi)) * (1.0 + 8 * _U)
            lam_lo = np.exp(l_val[:-1] - l_err[:-1]) * (1.0 - 4 * _U)
            lam_hi = np.exp(l_val[:-1] + l_err[:-1]) * (1.0 + 4 * _U)
        else:
            g_lo = _series_excess(t_hi, 1.0)[0] / (t_hi * np.expm1(t_hi)) * (1.0 - 8 * _U)
            g_hi = _series_excess(t_lo, 1.0)[1] / (t_lo * np.expm1(t_lo)) * (1.0 + 8 * _U)
            lam_lo = lam_hi = 1.0
        self.theta_lo = np.minimum(lam_lo * phi_lo * (width * g_lo) * (1.0 - 4 * _U), self.p_hi)
        self.theta_hi = np.minimum(lam_hi * phi_hi * (width * g_hi) * (1.0 + 4 * _U), self.p_hi)
        # smallest log y of the end cells: remove (-inf, x_0] from y(x_0), [x_N, inf) down to 0;
        # add (-inf, x_0] down to 1 - q, [x_N, inf) from y(x_N) = lambda(x_N)
        if remove:
            self.end_log_y = np.array([self.log_y[0] - l_err[0], -np.inf])
        else:
            self.end_log_y = np.array([math.log1p(-q) * (1.0 + 2 * _U), self.log_y[-1] - l_err[-1]])


def _evaluation_points(epsilon, log_y, log_y_err):
    """``(low, high)`` ends of ``eps + log y`` (its sum rounded: ``u`` of the magnitudes, doubled)."""
    centre = epsilon + log_y
    err = log_y_err + 2.0 * _U * (abs(epsilon) + np.abs(log_y))
    return centre - err, centre + err


def _sum_and_slack(terms):
    """numpy's sum of float terms and ``gamma_(n-1)`` of the sum of their magnitudes, a bound on its error in any
    order of summation (Higham, *Accuracy and Stability of Numerical Algorithms*, 2nd ed., eq. (4.4)), that magnitude
    sum taken ``1.01`` times (its own rounding)."""
    return float(np.sum(terms)), (terms.size + 2) * _U * 1.01 * float(np.sum(np.abs(terms)))


def _sum_up(terms):
    """An upper bound on the exact sum of float terms (:func:`_sum_and_slack`, one more ulp)."""
    total, slack = _sum_and_slack(terms)
    return float(np.nextafter(total + slack, np.inf))


def _sum_down(terms):
    """A lower bound on the exact sum of float terms (:func:`_sum_and_slack`, one more ulp)."""
    total, slack = _sum_and_slack(terms)
    return float(np.nextafter(total - slack, -np.inf))


def _split(x, gaps, share, finest):
    """``x`` with the cells of largest ``gaps`` that together hold ``share`` of the positive gaps halved (those still
    at least ``2 finest`` long): a half of a cell ``[k w, (k + 1) w]`` is again a power of two long and starts at a
    multiple of its length."""
    width = x[1:] - x[:-1]
    gaps = np.where((width >= 2.0 * finest) & (gaps > 0.0), gaps, 0.0)
    total = float(np.sum(gaps))
    if not total > 0.0:
        return x
    order = np.argsort(-gaps)
    count = int(np.searchsorted(np.cumsum(gaps[order]), share * total)) + 1
    chosen = order[:count]
    chosen = chosen[gaps[chosen] > 0.0]
    return np.sort(np.concatenate([x, x[chosen] + 0.5 * width[chosen]]))


class TwoSubsampledGaussians:
    """``delta(eps)`` of two runs of Poisson-subsampled Gaussians, ``first`` then ``second`` as ``(mu, q)`` (``mu``
    the inverse noise multiplier, ``0 < q < 1``), bounded above and below (module docstring).

    The first run's output axis ``[-X, mu + X]`` (``X`` = :data:`REACH` at first: the mass outside, below ``1e-25``,
    is bounded as two end cells; widened where those would decide a tiny delta) starts in cells :data:`COARSE_STEP`
    long; :meth:`refined` halves those where the upper and lower bounds differ most at a given epsilon, down to
    :data:`FINEST_STEP`. A grid is a pair of edge arrays, one per direction (remove, add); every grid gives proven
    bounds, finer ones tighter.
    """

    #: Half-width, in standard deviations, of the output range cut into cells.
    REACH = 10.5
    #: Length of the first grid's cells, and of the shortest cell.
    COARSE_STEP, FINEST_STEP = 2.0**-5, 2.0**-20
    #: Largest ``mu`` (noise multiplier 0.05), and the widest reach: ``mu x - mu^2 / 2`` stays below 650 at ``x = mu +
    #: reach`` (``lambda`` far inside the float64 range), and the mass beyond 38 standard deviations is below 1e-316.
    MAX_MU, MAX_REACH = 20.0, 38.0

    def __init__(self, first: tuple[float, float], second: tuple[float, float]):
        self.first, self.second = (float(first[0]), float(first[1])), (float(second[0]), float(second[1]))
        for mu, q in (self.first, self.second):
            if not (0.0 < mu <= self.MAX_MU and 0.0 < q < 1.0):
                raise ValueError(f"two runs need 0 < mu <= {self.MAX_MU:g} and 0 < q < 1, got mu = {mu!r}, q = {q!r}")
        self._cells = {}

    def coarse_grid(self, reach: float | None = None) -> Grid:
        """Uniform cells :data:`COARSE_STEP` long over ``[-reach, mu + reach]`` (default :data:`REACH`), both
        directions."""
        h, mu = self.COARSE_STEP, self.first[0]
        reach = self.REACH if reach is None else reach
        x = np.arange(math.floor(-reach / h), math.ceil((mu + reach) / h) + 1, dtype=np.float64) * h
        return x, x

    def _cells_of(self, x, remove):
        key = (remove, x.size, x.tobytes())
        cells = self._cells.get(key)
        if cells is None:
            if len(self._cells) > 8:
                self._cells.clear()
            cells = self._cells[key] = _Cells(self.first[0], self.first[1], remove, x)
        return cells

    def _direction(self, cells, epsilon, remove, want_lower=True):
        """``(lower, upper, per-cell gap, the end cells' share of upper)`` of one direction's ``delta(eps)`` on these
        cells (module docstring)."""
        mu, q = self.second
        low_arg, high_arg = _evaluation_points(epsilon, cells.log_y, cells.log_y_err)
        d_hi = profile_bound(mu, q, low_arg, remove, True)  # D at each edge's y, from above
        top = cells.p_hi * d_hi[cells.lo_at]
        d_lo = profile_bound(mu, q, high_arg, remove, False)  # and from below
        drop = np.maximum(d_lo[cells.lo_at] - d_hi[cells.hi_at], 0.0) * cells.theta_lo
        end_low = epsilon + cells.end_log_y - 2.0 * _U * (abs(epsilon) + np.abs(cells.end_log_y))
        finite = np.isfinite(end_low)
        ends = cells.end_p_hi * np.where(finite, profile_bound(mu, q, np.where(finite, end_low, 0.0), remove, True),
                                         1.0)
        terms = np.concatenate([top, ends, -drop])
        upper = min(_sum_up(terms) + 4.0 * _U * float(np.sum(np.abs(terms))), 1.0)
        if not want_lower:
            return 0.0, upper, None, 0.0
        usable = cells.p_lo > 0.0
        ratio = np.where(usable, np.minimum(cells.theta_hi / np.where(usable, cells.p_lo, 1.0), 1.0), 1.0)
        log_mean = (cells.log_y[cells.lo_at] + cells.log_y_err[cells.lo_at]
                    + np.log1p(ratio * cells.r_hi) * (1.0 + 8 * _U) + 1e-300)
        mean_arg = _evaluation_points(epsilon, log_mean, np.zeros_like(log_mean))[1]
        below = cells.p_lo * profile_bound(mu, q, mean_arg, remove, False) * (1.0 - 2 * _U)
        lower = max(_sum_down(below), 0.0)
        return min(lower, upper), upper, top - drop - below, float(np.sum(ends))

    def _parts(self, epsilon, grid, want_lower=True):
        return [self._direction(self._cells_of(x, remove), float(epsilon), remove, want_lower)
                for x, remove in zip(grid, (True, False))]

    def bounds(self, epsilon: float, grid: Grid, want_lower: bool = True) -> tuple[float, float]:
        """``(lower, upper)`` of ``delta(eps)`` on ``grid``, the larger of the two directions (thesis Thm 3.3.5)."""
        parts = self._parts(epsilon, grid, want_lower)
        return max(p[0] for p in parts), max(p[1] for p in parts)

    def _widest_reach(self):
        mu = self.first[0]
        return min(self.MAX_REACH, (650.0 - 0.5 * mu * mu) / mu - mu)

    def refined(self, epsilon: float, grid: Grid, rtol: float, max_rounds: int = 16) -> tuple[Grid, float, float]:
        """``(grid, lower, upper)``: ``grid`` refined at ``epsilon`` until the bounds there are within ``rtol`` of the
        upper end, or no cell holding a gap can be halved, or after ``max_rounds`` rounds. Each round halves, in each
        direction whose gap is not negligible, the cells holding 95% of that gap (a halving takes a cell's gap to
        about a quarter). Where the end cells hold more than ``rtol / 8`` of the upper end (a tiny delta), the grid
        starts again, coarse, over a range whose outside holds less than ``rtol / 64`` of it (at most
        :meth:`_widest_reach`)."""
        rounds = 0
        while True:
            parts = self._parts(epsilon, grid)
            lower, upper = max(p[0] for p in parts), max(p[1] for p in parts)
            if upper - lower <= rtol * upper or rounds >= max_rounds:
                break
            reach, widest, ends = -float(grid[0][0]), self._widest_reach(), max(p[3] for p in parts)
            if ends > rtol * upper / 8.0 and reach < widest:
                # the end cells' mass scales with Phi(-reach): aim at rtol / 64 of the upper end
                target = float(special.ndtr(-reach)) * rtol * upper / (64.0 * ends)
                wanted = -float(special.ndtri(max(target, 1e-320))) + 0.5
                grid = self.coarse_grid(min(max(wanted, reach + 1.0), widest))
                continue
            finer = tuple(x if hi - lo <= 1e-9 * upper else _split(x, gaps, 0.95, self.FINEST_STEP)
                          for x, (lo, hi, gaps, _) in zip(grid, parts))
            if all(a.size == b.size for a, b in zip(finer, grid)):
                break
            grid, rounds = finer, rounds + 1
        return grid, lower, upper

    def delta_bounds(self, epsilon: float, rtol: float = 1e-6) -> tuple[float, float]:
        """``(lower, upper)`` of ``delta(eps)`` on a grid refined from the coarse one (:meth:`refined`)."""
        return self.refined(epsilon, self.coarse_grid(), rtol)[1:]
