"""Few runs of Poisson-subsampled Gaussians: privacy buckets on a window around epsilon, second order at both ends.

Two to fifty runs of little noise and a small sampling probability (the accountant routes here where this is
faster, :func:`faster_than_inversion`) are the corner Fourier inversion cannot serve (it needs many runs for the
characteristic function to decay: sigma 0.6, q 1e-4, three runs took 4 s there for an interval 3e-4 wide); two runs
too narrow even for the window take the two-run path (:mod:`accountants.two_runs`). The loss
of such a run piles up in a lump about ``q`` wide at its infimum ``log(1 - q)``, and epsilon is a few hundred lump
widths away; the whole-range privacy buckets (:mod:`accountants.privacy_buckets`) cannot afford a grid that fine,
and their lower measure (every loss rounded down) is of first order. Here:

**The window.** ``delta(eps) = E_P[f(L)]``, ``f(L) = (1 - e^(eps - L))_+``, ``L`` the sum of the runs' losses under
``P`` (thesis Lemma 3.1.4, Thm 3.3.4). A Poisson-subsampled run's loss is at least ``-a``, ``a = -log(1 - q)``, in
the remove direction and at most ``a`` in the add direction (Thm 3.3.5's pairs: ``log(1 - q + q dA/dB)`` and its
negative). So for every ``eps`` in ``[eps_lo, eps_hi]``, with ``s_r`` run ``r``'s bound as grid steps:

* a partial sum ``l`` of some runs with ``l + sum_(rest) (-s_r h) >= eps_hi`` (remove) has ``f`` linear in ``y =
  e^-l`` whatever the rest adds: its atoms are *lumped*, each contributing exactly ``m (1 - e^(eps - l) E[Y_rest])``
  with ``E[Y_rest] = 1`` (``E_P[dQ/dP] = 1`` for the true rest), i.e. a mass ``M`` and a moment ``S = sum m e^-l``
  giving ``M - e^eps S``;
* a partial sum with ``l + sum_(rest) s_r h <= eps_lo`` (add) has ``f = 0`` whatever the rest adds: *dropped*.

Only the window between stays on the grid ``l_k = k h`` (``h`` a power of two, so every grid loss is exact); it is
about ``eps_hi + 2 sum a`` wide, whatever the runs' tails do.

**The two measures** (each run's buckets :func:`mechanisms.loss_buckets.subsampled_gaussian_buckets`, proven
``P``- and ``Q``-masses of every bucket ``(e_(i-1), e_i]``; ``Q``-mass = ``E_P[e^-L; bucket]``). What is kept is the
order ``nu <= mu`` iff ``int g dnu <= int g dmu`` for every ``g >= 0`` convex and non-increasing in ``y = e^-l``:

* **upper**: connect-the-dots (Doroshenko et al., PETS 2022; :func:`accountants.privacy_buckets._connect_the_dots`),
  a mean-preserving spread of ``y`` within each bucket;
* **lower** (:func:`accountants.privacy_buckets._lower_measure`): connect-the-dots lowered by its sags
  (:func:`accountants.lowered_dots.lowered_dots`): each bucket's mass at or above its mean ``y`` (Jensen's
  inequality: a contraction; moving mass up in ``y`` and removing mass also lower ``int g``), then put on the grid
  with the same mass and mean ``y``, every grid point's ``Pi(t) = int (t - y)_+`` lowered by about the sag
  connect-the-dots adds there: of second order, about as tight as the upper one. Where its checks fail, Jensen's
  pairs (:func:`accountants.privacy_buckets._jensen_pairs`: buckets paired across their shared edge and contracted
  onto it, the leftover moved up in ``y``; second order too, but the moves shift the mean of each run's bulk, which
  every composed loss feels: 1.8e-5 of delta at sigma 0.6, q 1e-4 x 10 on a grid of ``2^-20``, against 1.7e-7
  for the lowered dots, ``python -m benchmarks.bench_lower_measure``).

Both orders survive composition: for independent runs ``g(y_1) = int f(e^eps y_1 y_2) dnu_2(y_2)`` is again ``>= 0``,
convex and non-increasing in ``y_1`` for any non-negative ``nu_2``, so the runs are replaced one at a time.

**Products.** A *part* ``X`` is the measure of a set of runs (reach ``d_X`` grid steps, ``s_r = ceil(a / h) + 1``
each: the grid's supports lie one step beyond the true ones): masses ``v_k`` on the grid from index ``-d_X`` up to
``tau_X = top + (total - d_X)``, and a lump ``(M_X, S_X)`` standing for atoms above ``tau_X``, known only by their
mass and moment. Its claim (upper; reversed for the lower measure): ``X(phi) = sum v_k phi(l_k) + M_X alpha - S_X
beta >= E[phi(L_X)]`` for every ``phi >= 0`` convex non-increasing in ``y`` and affine, ``alpha - beta y``, above
``tau_X h``. One run's part is its buckets (the last one its lump). For parts of disjoint runs, ``psi(l) =
E[phi(l + L_Y)]`` is again such a function for ``X`` (affine above ``tau_X h``, as ``L_Y >= -d_Y h``, with
coefficients ``alpha`` and ``beta E[e^-L_Y] = beta``: ``E_P[dQ/dP] = 1``), and ``phi(l_k + .)`` one for ``Y`` at
every kept ``l_k >= -d_X h``; applying both claims, ``E[phi(L_X + L_Y)] <= sum v_k w_i phi(l_k + l_i) + (M_X + V_X
M_Y) alpha - (S_X + Vm_X S_Y) beta``, ``V_X`` and ``Vm_X`` the mass and moment of ``X``'s values: so ``X * Y`` is
the convolution of the values with the lump ``(M_X + V_X M_Y, S_X + Vm_X S_Y)``, and its atoms above ``tau_(XY)``
are added to the lump (exact: ``phi`` is affine there). The add direction is the mirror image: parts hold no lump,
and atoms that cannot reach ``eps_lo`` (``phi = 0`` below ``(bottom - rest) h``) are dropped. ``f`` itself is such
a ``phi`` for every ``eps`` in the window, so any order of products is proven: a group of identical runs is raised
to its count by repeated squaring (ten runs: three convolutions, not nine), and the groups' powers are multiplied
in turn.

**The last product.** Of the last product only the entries in ``(eps_lo, eps_hi]`` are needed (a few, once the
window has closed in on epsilon): each is computed directly, a sum of non-negative products; the atoms above
``top`` are lumped through tail sums of ``Y``: ``sum_j x_j T_Y(top + 1 - j)`` and the same with moments, ``T_Y(i)
= sum_(i' >= i) y_(i')`` (cumulative sums of non-negative terms, within ``gamma_n`` relative). Where that range
holds more than :data:`DIRECT_ENTRIES` entries (the first, wide windows) it is an ordinary product. The tilt of the
next grid comes from the upper delta's log-slope at epsilon, ``(sum_(l_k > eps) c_k e^(eps - l_k) + e^eps S) /
delta``, which needs no entries below the window.

**Float error.** Bucket masses are proven enclosures; each measure takes the bound in its own direction (the
pairing's ``alpha`` from the ends that make it smaller). Convolutions are numpy FFTs of the *tilted* measures
``a_k e^(theta l_k)`` (tilting commutes with convolution, and puts the entries near epsilon, tiny in absolute terms,
on the scale of the largest ones, so the FFT's error, bounded in 2-norm relative to the inputs' norms by
:func:`accountants.privacy_buckets._fft_error`, Higham Thm 24.2, is small relative to them); every output entry is
within that 2-norm of exact, so ``E_2`` is added to (upper) or taken from (lower, clipped at 0) every entry of the
product's support before untilting, and the tilt factors' rounding (``4u (theta l + 1)`` each) is covered by a
relative factor. ``theta`` only decides how tight, never whether the bound holds. Sums are rounded outward by
``gamma_(n-1)`` of their sum (every term summed here is non-negative: :func:`_nonneg_up`).

Each query starts from a coarse grid (4,096 window points) and refines it, keeping the tightest proven ends seen;
the next step is predicted from the second-order convergence. The upper and lower measures of a grid are composed
on two threads (:func:`mechanisms._threads.run_in_parallel`). Validated against the two-run path and the count-2
mpmath oracle (tests/accountants/test_windowed_buckets.py).
"""

from __future__ import annotations

import functools
import math
from collections.abc import Sequence

import numpy as np

from dpledger.accountants._roots import narrow_crossing
from dpledger.accountants.privacy_buckets import _connect_the_dots, _fft_error, _lower_measure
from dpledger.accountants.two_runs import narrowness
from dpledger.mechanisms._threads import run_in_parallel
from dpledger.mechanisms.loss_buckets import subsampled_gaussian_buckets

__all__ = ["MAX_RUNS", "WindowedLedger", "faster_than_inversion"]

_U = 2.0**-53
#: Most runs this path composes (their count in squarings, at most one more product per group).
MAX_RUNS = 50
#: The most runs the windowed path takes, by the ledger's narrowness (:func:`accountants.two_runs.narrowness`, the
#: largest over its runs; at least :data:`accountants.two_runs.NARROW`): where it was faster than inversion
#: (:func:`faster_than_inversion`).
RUN_LIMITS = ((1500.0, MAX_RUNS), (700.0, 30), (100.0, 10))
#: The smallest one-run loss spread ``q sqrt(expm1(mu^2))`` (about the loss's standard deviation) the path takes at
#: rtol 1e-6, scaled by ``1e-6 / rtol``: the bucket masses' enclosures (their relative width grows like ``1 / h``)
#: put a floor under the interval near ``1e-6`` of delta over the loss's scale (``python -m
#: benchmarks.bench_fourier_few_runs crossover`` at 69eb0aa: sigma 1, q 1e-4, spread 1.3e-4, 9.5e-7 wide at x5 and
#: 1.2e-6 at x10, whatever the grid; sigma 0.7, q 1e-4 x 10, spread 2.6e-4, 4.2e-7).
MIN_SPREAD = 2e-4
#: Window points of the first grid, and the most a refined grid may have.
FIRST_POINTS, MAX_POINTS = 1 << 12, 1 << 18
#: Largest window searched for epsilon (beyond it, far from the corner this path is for, the other paths answer).
MAX_EPSILON = 64.0
#: Largest ``theta`` times the window's length: a tilt that lifts the entries beyond epsilon far above those at it
#: lets the FFT's error (relative to the largest tilted entries) swamp them (sigma 0.6, q 1e-3 x 3: 30 over a
#: window of 0.19 gave the tightest interval, 300 a useless one).
MAX_TILT = 12.0
#: The tilt, as a multiple of the upper delta's log-slope near epsilon (the measures' densities fall faster than
#: delta does: sigma 0.6, q 1e-4 x 3 at delta 1e-8, slope 15.6: theta 60 gave an interval 4.6e-7 wide, 15.6 one
#: 8e-4 wide; sigma 0.6, q 1e-3 x 3 at 1e-5, slope 10: 30 best).
TILT_PER_SLOPE = 4.0
#: The last product computes its window's entries directly where there are at most this many (module docstring,
#: "The last product").
DIRECT_ENTRIES = 32
#: Windows of at least this many points compose their two measures on two threads (below it the threads' turns at
#: the GIL, between many short numpy calls, cost more than they save: 4,718 points took 5.7 ms a measure on two
#: threads, 2 ms in turn).
THREADED_POINTS = 1 << 14


def faster_than_inversion(runs: Sequence[tuple[float, float, int]], rtol: float) -> bool:
    """Whether two or more runs of Poisson-subsampled Gaussians, given as ``(mu, q, count)``, are answered faster
    here than by inversion, within ``rtol``: only the path, never the proof, depends on it. At most
    :data:`RUN_LIMITS` runs for their narrowness, each run's spread at least :data:`MIN_SPREAD` (scaled by rtol).
    Measured (``python -m benchmarks.bench_fourier_few_runs crossover`` at 69eb0aa, benchmarks/RESULTS.md; epsilon at
    delta 1e-5, this repository's Intel machine, medians of three, windowed against the other paths, milliseconds):
    sigma 0.6, q 1e-4 (narrowness 2,527): x10 8 against 166, x50 26 against 56; sigma 0.6, q 3e-4 (1,539): x50 28
    against 55; sigma 0.6, q 1e-3 (740): x10 26 against 75, x30 40 against 59, x50 48 against 31; sigma 1, q 1e-3
    (166): x10 23 against 27, x20 28 against 19; sigma 0.6, q 0.01 (132): x10 25 against 41, x20 23 against 34 (left
    to inversion: the limits are by narrowness alone, and sigma 1 at that narrowness is slower on the window). Two
    runs (``python -m benchmarks.bench_fourier_few_runs`` at e9a8f4a): 4-13 ms on the window, where the two-run path
    (:mod:`accountants.two_runs`) took 0.06-0.12 s at 69eb0aa; where the spread is below :data:`MIN_SPREAD` (sigma
    0.5, q 1e-5: the window 5e-6 wide) the two-run path answers."""
    count = sum(int(n) for _, _, n in runs)
    if count < 2:
        return False
    narrow = max(narrowness(mu, q) for mu, q, _ in runs)
    spread = min(q * math.sqrt(math.expm1(min(mu * mu, 700.0))) for mu, q, _ in runs)
    if spread < MIN_SPREAD * 1e-6 / rtol:
        return False
    return any(narrow >= least and count <= most for least, most in RUN_LIMITS)


def _nonneg_up(terms):
    """An upper bound on the exact sum of non-negative float terms: numpy's sum (any order) is within ``gamma_(n-1)``
    of the exact sum (Higham, *Accuracy and Stability of Numerical Algorithms*, 2nd ed., eq. (4.4)), taken of the
    computed sum 1.01 times, and one more ulp."""
    total = float(np.sum(terms))
    return float(np.nextafter(total + (terms.size + 2) * _U * 1.01 * total, np.inf))


def _nonneg_down(terms):
    """A lower bound on the exact sum of non-negative float terms (:func:`_nonneg_up`)."""
    total = float(np.sum(terms))
    return float(np.nextafter(total - (terms.size + 2) * _U * 1.01 * total, -np.inf))


def _convolve(a, b, h, theta, upper):
    """The composition of two measures on the grid (``a`` and ``b`` non-negative, index 0 at each one's start), each
    entry bounded in the measure's direction (module docstring, "Float error")."""
    size = a.size + b.size - 1
    if min(a.size, b.size) <= 64:
        c = np.convolve(a, b)  # direct: non-negative terms, each entry within gamma_65 of exact
        return c * (1.0 + 70 * _U) if upper else c * (1.0 - 70 * _U)
    n = 1 << max(int(size - 1).bit_length(), 1)
    with np.errstate(under="ignore"):
        ta = a * np.exp(theta * (np.arange(a.size) * h))
        if b is a:  # a square: one transform (the same computed spectrum either way)
            tb = ta
            spectrum = np.fft.rfft(ta, n)
            spectrum = spectrum * spectrum
        else:
            tb = b * np.exp(theta * (np.arange(b.size) * h))
            spectrum = np.fft.rfft(ta, n) * np.fft.rfft(tb, n)
        c = np.fft.irfft(spectrum, n)[:size]
        error = _fft_error(n, ta, tb) + size * 1e-300  # and the tilted entries' underflow, absolute
        untilt = np.exp(-theta * (np.arange(size) * h))
    slack = 16.0 * _U * (theta * size * h + 1.0)
    if upper:
        return (np.maximum(c, 0.0) + error) * untilt * (1.0 + slack)
    return np.maximum(c - error, 0.0) * untilt * (1.0 - slack)


class _Part:
    """A measure of some of the runs (upper or lower) on the grid: masses ``values`` at losses ``(start + k) h``, the
    lumped atoms' mass and moment (``lump_mass``, ``lump_moment``: atoms above index ``top + rest``, ``rest`` the
    grid steps of the runs not in it), and ``steps``, the grid reach of its runs (module docstring, "Products")."""

    __slots__ = ("start", "values", "lump_mass", "lump_moment", "steps")

    def __init__(self, start, values, lump_mass, lump_moment, steps):
        self.start, self.values, self.steps = start, values, steps
        self.lump_mass, self.lump_moment = lump_mass, lump_moment

    def sums(self, h, upper):
        """``(V, Vm)``: the mass and the moment ``sum v_k e^(-l_k)`` of ``values``, bounded in the measure's
        direction (the mass up and the moment down for the upper measure; the reverse for the lower)."""
        with np.errstate(over="ignore", under="ignore"):
            weighted = self.values * np.exp(-(self.start + np.arange(self.values.size)) * h)
        if upper:
            return _nonneg_up(self.values), _nonneg_down(weighted) * (1.0 - 4 * _U)  # exp and product: 4u
        return _nonneg_down(self.values), _nonneg_up(weighted) * (1.0 + 4 * _U)


class _Grid:
    """One direction's composition on one grid: the window's ends as indices, the runs' total reach, and the
    measure's direction (module docstring)."""

    def __init__(self, remove, eps_lo, eps_hi, h, theta, upper, total):
        self.remove, self.h, self.theta, self.upper, self.total = remove, h, theta, upper, total
        self.top, self.bottom = math.ceil(eps_hi / h), math.floor(eps_lo / h)

    def _directed(self, x, terms=2):
        """``x`` (a non-negative product or sum of ``terms`` roundings) moved ``terms u`` in the direction."""
        return x * (1.0 + terms * _U) if self.upper else x * (1.0 - terms * _U)

    def product(self, x, y):
        """``x * y`` of two parts of disjoint runs, cut to the window (module docstring, "Products"): the values
        convolved, ``x``'s lump kept and ``y``'s taken against ``x``'s values (``M_x + V_x M_y``, ``S_x + Vm_x
        S_y``), then atoms above ``top + rest`` lumped (remove) or below ``bottom - rest`` dropped (add)."""
        steps = x.steps + y.steps
        rest = self.total - steps
        values = _convolve(x.values, y.values, self.h, self.theta, self.upper)
        start = x.start + y.start
        mass, moment = self._lumps(x, y)
        if self.remove:
            keep = self.top + rest - start + 1  # indices above top + rest are lumped
            if keep < values.size:
                extra = _Part(start + max(keep, 0), values[max(keep, 0):], 0.0, 0.0, 0)
                extra_mass, extra_moment = extra.sums(self.h, self.upper)
                mass, moment = mass + extra_mass, moment + extra_moment
                values = values[:max(keep, 0)]
        else:
            cut = self.bottom - rest - start  # indices below bottom - rest are dropped
            if cut > 0:
                values, start = values[cut:], start + cut
        if values.size == 0:
            values = np.zeros(1)
        # each lump a sum of three terms: two more roundings
        return _Part(start, values, self._directed(mass), self._directed(moment, -2 if self.upper else 2), steps)

    def _lumps(self, x, y):
        """``(M_x + V_x M_y, S_x + Vm_x S_y)``, each rounded in its direction (the moment opposite to the mass)."""
        if y.lump_mass == 0.0 and y.lump_moment == 0.0:
            return x.lump_mass, x.lump_moment
        v, vm = x.sums(self.h, self.upper)
        up, down = (1.0 + 4 * _U), (1.0 - 4 * _U)
        if self.upper:
            return (x.lump_mass + v * y.lump_mass * up) * up, (x.lump_moment + vm * y.lump_moment * down) * down
        return (x.lump_mass + v * y.lump_mass * down) * down, (x.lump_moment + vm * y.lump_moment * up) * up

    def final(self, x, y):
        """The last product, ``x * y`` of all the runs, as a :class:`_Composed` on ``[eps_lo, eps_hi]``: only the
        entries in ``(eps_lo, eps_hi]`` are computed (directly, each a sum of non-negative products), the ones above
        lumped through tail sums of ``y`` (module docstring, "The last product"); where that range holds more than
        :data:`DIRECT_ENTRIES` entries, by :meth:`product`."""
        first = self.bottom + 1
        if self.top - first + 1 > DIRECT_ENTRIES:
            part = self.product(x, y)
            return _Composed(part.start, part.values, part.lump_mass, part.lump_moment, self.h, self.upper)
        h, upper = self.h, self.upper
        nx, ny = x.values.size, y.values.size
        mass, moment = self._lumps(x, y)
        # atoms above top: y's entries from t_j = top + 1 - x.start - y.start - j on, for x's entry j
        with np.errstate(over="ignore", under="ignore"):
            y_weighted = y.values * np.exp(-(y.start + np.arange(ny)) * h)
            x_weighted = x.values * np.exp(-(x.start + np.arange(nx)) * h)
        tails = np.concatenate([np.cumsum(y.values[::-1])[::-1], [0.0]])
        tails_weighted = np.concatenate([np.cumsum(y_weighted[::-1])[::-1], [0.0]])
        t = np.clip(self.top + 1 - x.start - y.start - np.arange(nx), 0, ny)
        # cumulative sums of non-negative terms, each within gamma_(ny) of exact; the exponentials and products 4u
        slack = (ny + 8) * _U * 1.01
        if upper:
            mass += _nonneg_up(x.values * tails[t]) * (1.0 + slack)
            moment += _nonneg_down(x_weighted * tails_weighted[t]) * (1.0 - slack)
        else:
            mass += _nonneg_down(x.values * tails[t]) * (1.0 - slack)
            moment += _nonneg_up(x_weighted * tails_weighted[t]) * (1.0 + slack)
        # the entries first .. top, each sum_j x_j y_(m - j) of non-negative terms: within gamma_(nx + 1)
        count = max(self.top - first + 1, 0)
        values = np.zeros(max(count, 1))
        for k in range(count):
            m = first + k - x.start - y.start
            j0, j1 = max(0, m - ny + 1), min(nx - 1, m)
            if j0 <= j1:
                values[k] = float(np.sum(x.values[j0:j1 + 1] * y.values[m - j1:m - j0 + 1][::-1]))
        values *= (1.0 + (nx + 4) * _U * 1.01) if upper else (1.0 - (nx + 4) * _U * 1.01)
        return _Composed(first, values, self._directed(mass), self._directed(moment, -2 if upper else 2), h, upper)


class _Composed:
    """One direction's composed measure (upper or lower) for epsilons in ``[eps_lo, eps_hi]``: masses ``values`` at
    losses ``(start + k) h`` and the lumped atoms' mass and moment (module docstring)."""

    def __init__(self, start, values, lump_mass, lump_moment, h, upper):
        self.start, self.values, self.h, self.upper = start, values, h, upper
        self.lump_mass, self.lump_moment = lump_mass, lump_moment

    def _tail(self, epsilon):
        """The entries above ``epsilon`` and ``epsilon`` less their losses."""
        first = max(math.floor(epsilon / self.h) + 1 - self.start, 0)
        tail = self.values[first:]
        return tail, epsilon - (self.start + first + np.arange(tail.size)) * self.h

    def delta(self, epsilon):
        """``sum_k c_k (1 - e^(eps - l_k))_+ + M - e^eps S``, rounded in the measure's direction."""
        tail, gaps = self._tail(epsilon)
        with np.errstate(over="ignore", under="ignore"):
            terms = tail * np.maximum(-np.expm1(gaps), 0.0)
        e_eps = math.exp(epsilon)
        if self.upper:
            lump = self.lump_mass - e_eps * (1.0 - 4 * _U) * self.lump_moment
            lump += 4 * _U * (self.lump_mass + e_eps * self.lump_moment)
            # each term a product and an expm1, within 4u of itself
            return min((_nonneg_up(terms) * (1.0 + 4 * _U) + max(lump, 0.0) * (1.0 + 2 * _U)) * (1.0 + 2 * _U), 1.0)
        lump = self.lump_mass - e_eps * (1.0 + 4 * _U) * self.lump_moment
        lump -= 4 * _U * (self.lump_mass + e_eps * self.lump_moment)
        return max(float(np.nextafter(_nonneg_down(terms) * (1.0 - 4 * _U) + lump, -np.inf)), 0.0)

    def log_slope(self, epsilon):
        """``-d/d eps log delta`` of this measure's delta at ``epsilon`` (a heuristic for the tilt, not a bound):
        ``(sum_(l_k > eps) c_k e^(eps - l_k) + e^eps S) / delta``; 0 where delta is 0."""
        here = self.delta(epsilon)
        if not here > 0.0:
            return 0.0
        tail, gaps = self._tail(epsilon)
        with np.errstate(over="ignore", under="ignore"):
            return (float(np.sum(tail * np.exp(gaps))) + math.exp(epsilon) * self.lump_moment) / here



class WindowedLedger:
    """Proven ``delta(eps)`` and ``eps(delta)`` of a few Poisson-subsampled Gaussian runs, given as ``(mu, q, count)``
    (``mu`` the inverse noise multiplier, ``0 < q < 1``; at most :data:`MAX_RUNS` runs in all), module docstring."""

    def __init__(self, runs: Sequence[tuple[float, float, int]]):
        groups = []
        for mu, q, count in runs:
            mu, q, count = float(mu), float(q), int(count)
            if not (mu > 0.0 and math.isfinite(mu) and 0.0 < q < 1.0 and count >= 1):
                raise ValueError(f"windowed buckets need mu > 0, 0 < q < 1 and count >= 1, got {(mu, q, count)!r}")
            if groups and groups[-1][:2] == (mu, q):
                groups[-1] = (mu, q, groups[-1][2] + count)
            else:
                groups.append((mu, q, count))
        if not 1 <= sum(g[2] for g in groups) <= MAX_RUNS:
            raise ValueError(f"windowed buckets compose 1 to {MAX_RUNS} runs, got {sum(g[2] for g in groups)}")
        # each group's runs and -log1p(-q) rounded up: the bound of each run's loss on its finite side
        self._groups = [(mu, q, count, -math.log1p(-q) * (1.0 + 4 * _U)) for mu, q, count in groups]

    # -------------------------------------------------------------- composition
    def _steps(self, h):
        """Each group's ``s_r = ceil(a / h) + 1`` and the total over all runs."""
        steps = [math.ceil(reach / h) + 1 for _, _, _, reach in self._groups]
        return steps, sum(s * g[2] for s, g in zip(steps, self._groups))

    def _width(self, eps_hi):
        """The remove direction's window, ``[-sum a, eps_hi + sum a]`` (the add direction's is narrower)."""
        return eps_hi + 2.0 * sum(count * reach for _, _, count, reach in self._groups) + 1e-12

    def _buckets(self, remove, eps_lo, eps_hi, h):
        """Each group's run on its window of the grid: ``(k0, buckets, edges)``, or None where the add direction's
        delta is 0 in the whole window."""
        steps, total = self._steps(h)
        top, bottom = math.ceil(eps_hi / h), math.floor(eps_lo / h)
        if not remove and bottom >= total:
            return None  # the add direction's loss is at most sum a <= total h <= eps_lo
        out = []
        for (mu, q, _, _), s in zip(self._groups, steps):
            others = total - s
            k0, k1 = (-s, top + others) if remove else (bottom - others, s)
            edges = np.arange(k0, k1 + 1, dtype=np.float64) * h
            out.append((k0, subsampled_gaussian_buckets(mu, q, edges, remove), edges))
        return out

    def _compose(self, remove, eps_lo, eps_hi, h, theta, upper, buckets):
        """One direction's composed measure (module docstring): each group's run discretised, raised to its count
        by repeated squaring, the groups' powers multiplied in turn, the last product by :meth:`_Grid.final`."""
        steps, total = self._steps(h)
        grid = _Grid(remove, eps_lo, eps_hi, h, theta, upper, total)
        factors = []
        for (_, _, count, _), s, (k0, b, edges) in zip(self._groups, steps, buckets):
            if upper:
                values = _connect_the_dots(b, edges, h)
                tail = (float(b.p_upper[-1]), float(b.q_lower[-1]))
            else:
                values = _lower_measure(b, edges)
                tail = (float(b.p_lower[-1]), float(b.q_upper[-1]))
            # remove: the last bucket lies above the window (lumped); add: beyond the support (empty). The first
            # bucket: remove, below the support (empty); add, below the window (dropped)
            power = _Part(k0, values, *(tail if remove else (0.0, 0.0)), s)
            if len(self._groups) == 1 and count >= 2 and count & (count - 1) == 0:
                # 2^k runs alone: the last squaring is the last product, on the window only
                for _ in range(count.bit_length() - 2):
                    power = grid.product(power, power)
                factors += [power, power]
                continue
            while True:
                if count & 1:
                    factors.append(power)
                count >>= 1
                if not count:
                    break
                power = grid.product(power, power)
        if sum(factor.steps for factor in factors) != total:  # every run exactly once
            raise RuntimeError(f"windowed buckets: the factors compose {sum(f.steps for f in factors)} grid steps "
                               f"of runs, not the ledger's {total}")
        if len(factors) == 1:
            part = factors[0]
            return _Composed(part.start, part.values, part.lump_mass, part.lump_moment, h, upper)
        part = factors[0]
        for factor in factors[1:-1]:
            part = grid.product(part, factor)
        return grid.final(part, factors[-1])

    def _pass(self, eps_lo, eps_hi, h, theta):
        """``(lower, upper, slope)`` of one grid: the lower and upper delta functions, each the larger of the two
        directions (thesis Thm 3.3.5), and the log-slope of the upper one (for the next tilt). The upper and lower
        measures are composed on two threads (numpy's FFTs release the GIL; each thread has its own arrays)."""
        measures = {}
        for remove in (True, False):
            buckets = self._buckets(remove, eps_lo, eps_hi, h)
            if buckets is None:
                continue
            calls = [functools.partial(self._compose, remove, eps_lo, eps_hi, h, theta, upper, buckets)
                     for upper in (True, False)]
            threaded = self._width(eps_hi) / h >= THREADED_POINTS
            for upper, measure in zip((True, False), run_in_parallel(calls) if threaded else [c() for c in calls]):
                measures[remove, upper] = measure
        directions = sorted({remove for remove, _ in measures})

        def lower(e):
            return max(measures[r, False].delta(e) for r in directions)

        def upper(e):
            return max(measures[r, True].delta(e) for r in directions)

        def slope(e):
            return max(measures[r, True].log_slope(e) for r in directions)

        return lower, upper, slope

    def _first_step(self, eps_hi):
        return 2.0 ** math.floor(math.log2(self._width(eps_hi) / FIRST_POINTS))

    def _finer(self, h, gap, goal, eps_hi):
        """The next step: second order, so ``gap`` scales with ``h^2``; a power of two at least twice and at most
        four times finer, or None past :data:`MAX_POINTS`."""
        ratio = math.sqrt(goal / gap) * 0.7 if gap > 0.0 else 0.5
        finer = h * min(max(2.0 ** math.floor(math.log2(max(ratio, 1e-300))), 0.25), 0.5)
        return finer if self._width(eps_hi) / finer <= MAX_POINTS else None

    def _first_theta(self, delta, eps_hi):
        """The tilt before any slope is seen: :data:`TILT_PER_SLOPE` times ``log(1 / delta) / eps_hi``, the
        log-slope of a delta falling from about 1 to ``delta`` over the window (at most :data:`MAX_TILT` over its
        width)."""
        return min(TILT_PER_SLOPE * math.log(1.0 / delta) / eps_hi, MAX_TILT / self._width(eps_hi))

    @staticmethod
    def _theta(slope, epsilon, width):
        """:data:`TILT_PER_SLOPE` times the log-slope of the upper delta at ``epsilon`` (about the tilt that levels
        the measures near epsilon), at most :data:`MAX_TILT` over the window's width."""
        return min(max(TILT_PER_SLOPE * slope(epsilon), 0.0), MAX_TILT / width)

    # -------------------------------------------------------------- queries
    def delta_bounds(self, epsilon: float, rtol: float) -> tuple[float, float]:
        """``(lower, upper)`` of ``delta(eps)`` at ``epsilon >= 0``: the grid refined until within ``rtol`` of the
        upper end or :data:`MAX_POINTS`; the trivial ``(0, 1)`` beyond :data:`MAX_EPSILON`."""
        eps = float(epsilon)
        if not eps >= 0.0:
            raise ValueError(f"epsilon must be a non-negative number, got {epsilon!r}")
        if eps > MAX_EPSILON:
            return 0.0, 1.0  # far from the corner this path is for: the other paths answer
        h, theta, best, gap = self._first_step(eps), 0.0, (0.0, 1.0), math.inf
        while h is not None:
            lower_fn, upper_fn, slope = self._pass(eps, eps, h, theta)
            best = (max(best[0], lower_fn(eps)), min(best[1], upper_fn(eps)))
            gap, last = best[1] - best[0], gap
            if gap <= rtol * best[1] or gap > 0.5 * last:
                break  # within rtol, or at the floor of the masses' enclosures (a finer grid would not help)
            theta = self._theta(slope, eps, self._width(eps)) if eps > 0.0 else 0.0
            h = self._finer(h, gap, rtol * best[1], eps)
        return min(best[0], best[1]), best[1]

    def epsilon_bounds(self, delta: float, rtol: float) -> tuple[float, float]:
        """``(lower, upper)`` of the smallest epsilon with ``delta(eps) <= delta``: the window starts at ``[0,
        16 sum a]`` and grows fourfold while the upper delta at its top end exceeds ``delta``; each grid's crossings
        are found by bracketed secant steps on its proven curves (:func:`_crossing`; ``upper`` an epsilon whose upper
        delta was evaluated at most ``delta``, ``lower`` one whose lower delta was above it), and the window shrinks
        to the interval found."""
        delta = float(delta)
        if not 0.0 < delta < 1.0:
            raise ValueError(f"delta must lie in (0, 1), got {delta!r}")
        # exp(eps) stays far inside float64
        eps_lo, eps_hi = 0.0, min(16.0 * sum(c * reach for _, _, c, reach in self._groups), MAX_EPSILON)
        h, theta = self._first_step(eps_hi), self._first_theta(delta, eps_hi)
        lower, upper, gap = 0.0, math.inf, math.inf
        while True:
            lower_fn, upper_fn, slope = self._pass(eps_lo, eps_hi, h, theta)
            if upper == math.inf and not upper_fn(eps_hi) <= delta:  # (a NaN proves nothing: grow)
                if eps_hi > MAX_EPSILON:
                    return lower, math.inf  # far from the corner this path is for: the other paths answer
                if lower_fn(eps_hi) > delta:
                    lower = eps_lo = eps_hi
                eps_hi *= 4.0
                h, theta = self._first_step(eps_hi), self._first_theta(delta, eps_hi)
                continue
            # each crossing to a thousandth of rtol: it adds at most that to the interval's width
            upper = min(upper, _crossing(upper_fn, delta, eps_lo, eps_hi, 1e-3 * rtol)[1])
            if lower_fn(eps_lo) > delta:
                lower = max(lower, _crossing(lower_fn, delta, eps_lo, upper, 1e-3 * rtol)[0])
            gap, last = upper - lower, gap
            if gap <= rtol * upper or gap > 0.5 * last:
                break  # within rtol, or at the floor of the masses' enclosures
            h = self._finer(h, gap, rtol * upper, upper)
            if h is None:
                break
            theta = self._theta(slope, upper, self._width(upper))
            eps_lo, eps_hi = lower, upper
        return min(lower, upper), upper


def _crossing(curve, delta, lo, hi, tol):
    """``(a, b)``, ``lo <= a <= b <= hi``: ``curve(a) > delta >= curve(b)`` to ``tol`` relative
    (:func:`accountants._roots.narrow_crossing`), ``curve`` non-increasing, given ``curve(hi) <= delta`` (else ``b =
    hi`` is not a crossing: the caller checks) and ``curve(lo) > delta`` (else ``a = lo``)."""
    f_lo = curve(lo)
    if f_lo <= delta:
        return lo, lo  # (a NaN at lo is taken as above delta: lo is then the caller's proven end, unchanged)
    return narrow_crossing(curve, delta, lo, f_lo, hi, curve(hi), tol)
