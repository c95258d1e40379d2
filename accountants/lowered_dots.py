"""A second-order lower measure of one run's privacy loss on a grid: connect-the-dots lowered by its sags.

The privacy-buckets accountants bracket ``delta`` with two grid measures per run
(:mod:`accountants.privacy_buckets`, :mod:`accountants.windowed_buckets`). The upper one, connect-the-dots, spreads
each bucket's mass to its two edges and keeps its mean ``y = e^-l``: its error is of second order and small. The
lower one must be a *contraction*; Jensen's pairs (:func:`accountants.privacy_buckets._jensen_pairs`) contract
pairs of buckets onto their shared edge and move what is left to the lower edge. Those moves shift the measure's
mean ``y``, and a shift of the mean of a run's bulk moves every composed loss. Here the lower measure keeps each
run's mass and mean ``y`` exactly and its error is local, about the size of the upper one's (``python -m
benchmarks.bench_lower_measure``, benchmarks/RESULTS.md: sigma 0.6, q 1e-4 x 10, one grid of ``2^-20``, delta's
proven interval 1.7e-7 wide relative, the pairs' 1.8e-5; one grid four times coarser, ``2^-18``, 1.3e-6 wide, about
what the pairs reached at ``2^-22``).

**The order.** For ``g >= 0`` convex and non-increasing in ``y`` (the functions the lower measure must keep below,
:mod:`accountants.windowed_buckets`), ``g(y) = g(inf) + int (t - y)_+ g''(dt)`` with ``g(inf) >= 0``, so ``int g
dG <= int g dT`` for every such ``g`` as soon as ``G(1) <= T(1)`` and ``Pi_G <= Pi_T`` everywhere, where ``Pi_nu(t)
= int (t - y)_+ nu(dy)``.

**The construction.** Grid points ``z_j = e^(-e_j)`` (``y`` decreases along the edges); bucket ``k`` (loss ``(e_(k-1),
e_k]``, interior buckets ``k = 1 .. n-1``) lies in ``y`` between ``z_k`` and ``z_(k-1)``.

1. *Jensen atoms* ``J``: each bucket's lower-bound mass ``m_k`` at one point ``yb_k`` at or above its true mean ``y``
   (``<= r_hi / m_lo``). Removing mass, contracting a bucket to its mean and moving mass up in ``y`` each lower
   ``Pi``: ``Pi_J <= Pi_T``.
2. On ``[z_k, z_(k-1)]`` only atom ``k`` lies inside, so ``Pi_J`` is the chord of its values at the two grid points
   less a tent of height ``s_k = A_k B_k / (m_k D_k)`` at ``yb_k`` (``A_k = m_k (z_(k-1) - yb_k)``, ``B_k = m_k (yb_k
   - z_k)``, ``D_k = z_(k-1) - z_k``): the *sag* connect-the-dots adds there.
3. ``G`` is the measure whose ``Pi_G`` interpolates ``Pi_J(z_j) - L_j`` linearly between grid points, with *lowerings*
   ``L_j >= 0``, ``L = 0`` at and beyond the ends of each run of non-empty buckets (so ``Pi_G = Pi_J`` there, where
   ``Pi_J`` is linear: same mass, same mean). ``Pi_G <= Pi_J`` on ``[z_k, z_(k-1)]`` iff the chord of ``L`` lies
   above the tent, i.e. at its peak: ``A_k L_k + B_k L_(k-1) >= A_k B_k`` (*the chord condition*).
4. ``G``'s masses are the slope changes of ``Pi_G``: bucket ``k`` gives ``W_k = (A_k + L_k - L_(k-1)) / D_k`` to
   ``z_k`` and ``U_k = (B_k + L_(k-1) - L_k) / D_k`` to ``z_(k-1)`` (``W_k + U_k = m_k``); each grid point's sum must
   be non-negative (*the sign condition*).

So ``G <= T`` in the order wherever both conditions hold. The chord condition of bucket ``k`` holds when ``L_k >=
t_k B_k`` and ``L_(k-1) >= (1 - t_k) A_k`` for any ``t_k`` in ``[0, 1]`` (``A t B + B (1 - t) A = A B``); each grid
point takes the larger of the two demands on it, and ``t_k = m_(k+1) / (m_(k-1) + m_(k+1))`` lays each bucket's
burden on its heavier side, so that the lowerings follow the masses and the sign condition holds where the masses
rise or fall steeply (a half where they are alike: ``L`` about the sags). At the lower-loss end ``p`` of a run
``L_(p-1) = 0``: the chord needs ``L_p >= B_p`` and the sign at ``z_(p-1)`` (``U_p >= 0``) needs ``L_p <= B_p``, so
``L_p = B_p`` (atom ``p`` goes whole to ``z_p``); at the higher-loss end ``q``, ``L_(q-1) = A_q``. Their neighbours
are raised to meet their chord conditions. Where a run holds fewer than :data:`MIN_RUN` buckets, or an atom sits on
a grid point, the atoms are put at their upper ``y`` edge (or on their point) instead: moving mass up in ``y``, of
first order but only there.

**Float error.** Atom positions are chosen on the safe side and then *are* the atoms: ``b_k = B_k / z_k`` a float at
or above the bound of step 1, and at the run ends the atom is placed where the exact identities need it (``L_p = b_p
z_p`` itself; ``A_q := e^h L_(q-1)`` for a float ``L_(q-1) / z_(q-1)`` at or below ``e^-h A_q / z_q``, which moves
atom ``q`` up), so ``U_p = W_q = 0`` exactly. Every other quantity is computed in units of its grid point with a
bound on its rounding (a few ``u`` of the magnitudes it is made of, and an absolute :data:`_TINY`); both conditions
are checked with those bounds, the chord condition divided by ``m_k`` so that no product of two masses leaves the
normal range (it did near 1e-154, and accepted what it refused at scale 1), and each mass is taken at its lower
bound. Buckets of less mass than :data:`_MIN_MASS` put their atoms at their upper ``y`` edge. If any check fails the
caller falls back to Jensen's pairs (:func:`lowered_dots` returns ``None``): on issue 14's grid 1 of the 14 grids
its windowed cells use (sigma 0.6, q 1e-3 x 10: the first, coarse window, step 2^-13); on irregular random discrete
laws about half (a red-team helper's sweep: 45% of 3,000).
"""

from __future__ import annotations

import math

import numpy as np

from dpledger.mechanisms._logmath import EPS
from dpledger.mechanisms.loss_buckets import LossBuckets

__all__ = ["MIN_RUN", "lowered_dots"]

_U = EPS / 2
#: Runs of non-empty buckets shorter than this put their atoms at their upper ``y`` edges (module docstring).
MIN_RUN = 4
#: Factor on the lowerings chosen, so that the chord conditions hold with room above their rounding (a few u).
_ROOM = 1.0 + 1e-12
#: Buckets of less mass than this put their atoms at their upper ``y`` edge (first order, at a negligible mass):
#: below it products of a mass with a grid step could leave the normal range, where rounding is absolute.
_MIN_MASS = 1e-250
#: An absolute slack on every bound of a sum (the subnormal results of a few operations, each within ``2^-1075``).
_TINY = 1e-300


def _runs(full):
    """``(starts, stops)``: the index ranges ``[start, stop)`` of the maximal runs of True in ``full``."""
    padded = np.concatenate([[False], full, [False]]).astype(np.int8)
    change = np.flatnonzero(np.diff(padded))
    return change[0::2], change[1::2]


def lowered_dots(b: LossBuckets, edges: np.ndarray) -> np.ndarray | None:
    """Lower-bound masses at each grid point ``edges`` (spacing ``h``, increasing) from the interior buckets ``1 ..
    n-1`` of :class:`mechanisms.loss_buckets.LossBuckets` ``b`` (module docstring), or ``None`` where a check fails.
    Uses ``b.p_lower`` (masses) and ``b.q_upper`` (Q-masses, ``E_P[e^-L; bucket]``)."""
    n = edges.size
    if n < 2:
        return np.zeros(n)
    h = float(edges[1] - edges[0])
    if not 0.0 < h <= 64.0:
        return None  # (e^h far beyond what a loss grid needs: the pairs answer)
    if not np.all(np.diff(edges) == h):
        return None  # the proof takes one step e^h - 1 for every bucket: an uneven grid is the pairs'

    e_h, e_mh, delta = math.exp(h), math.exp(-h), math.expm1(h)  # each within 2 ulps
    e_h_hi, e_mh_hi = e_h * (1.0 + 4 * _U), e_mh * (1.0 + 4 * _U)
    e_h_lo, delta_lo = e_h * (1.0 - 4 * _U), delta * (1.0 - 4 * _U)
    m = np.asarray(b.p_lower[1:n], dtype=np.float64)
    with np.errstate(over="ignore", under="ignore", invalid="ignore"):
        # in units of z_k: the atom's mean at most R / m, so b = m (yb / z_k - 1) <= R - m; the subtraction and the
        # addition of the margin each within u of their results, |R - m| <= R + m: 4u (R + m) keeps b above R - m
        scaled = b.q_upper[1:n] * np.exp(edges[1:n]) * (1.0 + 8 * _U)
        bb = scaled - m
        bb = bb + 4 * _U * (scaled + m)
    top = m * delta_lo * (1.0 - 4 * _U)  # at or below the exact m (e^h - 1)
    ok = np.isfinite(m) & (m > 0.0)
    small = ok & (m < _MIN_MASS)  # (module docstring: put at their upper edge)
    # the atom at (or taken to) its upper edge z_(k-1), which bounds every mean: also where the bound on its mean
    # overflowed or is not a number (a Q-mass of a loss beyond 709 underflows: nothing is known of its mean)
    on_top = ok & (small | ~(bb < top))
    on_low = ok & ~on_top & (bb <= 0.0)  # its mean is z_k itself
    full = ok & ~on_top & ~on_low
    bb = np.where(full, bb, 0.0)
    # a = m (e^h - 1) - b exactly; computed within err_a
    aa = np.where(full, m * delta - bb, 0.0)
    err_a = 4 * _U * (m * delta + bb) + 2 * _U * np.abs(aa)
    a_hi = aa + err_a
    a_lo = np.maximum(aa - err_a, 0.0)

    low = np.zeros(n)
    moved = np.zeros(n)  # atoms put on grid points (their upper edge, or their own point)
    moved[:-1] += np.where(on_top, m, 0.0)
    moved[1:] += np.where(on_low, m, 0.0)
    starts, stops = _runs(full)
    length = np.zeros(n - 1, dtype=np.int64)
    length[starts] = stops - starts
    run_of = np.cumsum(length > 0) - 1  # the run each index belongs to (where full)
    long_run = (stops - starts) >= MIN_RUN
    member = full & long_run[np.maximum(run_of, 0)] if starts.size else np.zeros(n - 1, dtype=bool)
    moved[:-1] += np.where(full & ~member, m, 0.0)  # short runs: up to z_(k-1)
    starts, stops = starts[long_run], stops[long_run]
    if starts.size:
        # lowerings in units of their own grid point, at the points strictly inside a run: bucket k's chord
        # condition a L_k + b e^h L_(k-1) >= a b holds when L_k >= t b and L_(k-1) >= (1 - t) a e^-h, its burden
        # shared towards the heavier neighbour, t = m_(k+1) / (m_(k-1) + m_(k+1)) (a half where they are alike)
        inside = np.zeros(n, dtype=bool)
        inside[1:-1] = member[:-1] & member[1:]
        mm = np.where(member, m, 0.0)
        before, after = np.concatenate([[0.0], mm[:-1]]), np.concatenate([mm[1:], [0.0]])
        with np.errstate(invalid="ignore"):
            share = np.where(before + after > 0.0, after / (before + after), 0.5)
        lift = np.zeros(n)
        lift[1:] = share * bb
        lift[:-1] = np.maximum(lift[:-1], (1.0 - share) * a_hi * e_mh_hi)
        lift = np.where(inside, lift * _ROOM, 0.0)
        p_idx, q_idx = starts, stops - 1  # array indices of the end atoms (bucket labels p = p_idx + 1, q = q_idx + 1)
        p_pt, q_pt = p_idx + 1, q_idx  # grid points z_p and z_(q-1)
        lift[p_pt] = bb[p_idx]  # L_p = B_p: atom p goes whole to z_p
        # L_(q-1) / z_(q-1) at or below e^-h A_q / z_q; atom q is moved up to A_q := e^h L_(q-1)
        lift[q_pt] = np.maximum(a_lo[q_idx] * e_mh * (1.0 - 8 * _U), 0.0)
        # the neighbours of the end points meet their chord conditions:
        #   bucket p+1: a L_(p+1) + b e^h L_p >= a b  ->  L_(p+1) >= b (1 - e^h L_p / a)
        #   bucket q-1: a L_(q-1) + b e^h L_(q-2) >= a b  ->  L_(q-2) >= a (b - L_(q-1)) / (b e^h)
        i1, i2 = p_idx + 1, q_idx - 1
        with np.errstate(invalid="ignore", divide="ignore"):
            need1 = bb[i1] * (1.0 - e_h_lo * lift[p_pt] / a_hi[i1]) * _ROOM
            need2 = a_hi[i2] * ((bb[i2] - lift[q_pt]) / bb[i2]) / e_h_lo * _ROOM  # (no product of two masses)
        lift[p_pt + 1] = np.maximum(lift[p_pt + 1], np.where(np.isfinite(need1), need1, np.inf))
        lift[q_pt - 1] = np.maximum(lift[q_pt - 1], np.where(np.isfinite(need2), need2, np.inf))
        if not np.all(np.isfinite(lift)):
            return None
        between = member.copy()
        between[p_idx] = between[q_idx] = False
        ix = np.flatnonzero(between)  # array indices of the buckets between the ends; bucket label k = ix + 1
        a_i, b_i, lk, lk1 = aa[ix], bb[ix], lift[ix + 1], lift[ix]
        # the chord condition a L_k + b e^h L_(k-1) >= a b (units of z_k) over m: (a / m) (L_k - b) + (b / m) e^h
        # L_(k-1) >= 0 (no product of two masses, which would leave the normal range for masses near 1e-154), at
        # its worst a, each quotient within u, with rounding
        m_i = m[ix]
        alpha_lo, alpha_hi = a_lo[ix] / m_i * (1.0 - 2 * _U), a_hi[ix] / m_i * (1.0 + 2 * _U)
        beta = b_i / m_i * (1.0 - 2 * _U)
        chord = np.minimum(alpha_lo * (lk - b_i), alpha_hi * (lk - b_i)) + beta * e_h_lo * lk1
        chord_err = 8 * _U * (alpha_hi * (lk + b_i) + b_i / m_i * e_h_hi * lk1) + _TINY
        if not np.all(chord - chord_err >= 0.0):
            return None
        # masses W_k = (a + L_k - e^h L_(k-1)) / delta at z_k, U_k = m - W_k at z_(k-1)
        w = (a_i + lk - e_h * lk1) / delta
        # (the numerator's rounding and e^h's; delta within 4u of e^h - 1, the division u)
        w_err = (err_a[ix] + 4 * _U * (np.abs(a_i) + lk + 2 * e_h_hi * lk1)) / delta_lo + 8 * _U * np.abs(w) + _TINY
        u = m[ix] - w
        u_err = w_err + 2 * _U * (m_i + np.abs(w)) + _TINY
        mass, err = np.zeros(n), np.zeros(n)
        mass[ix + 1] += w
        err[ix + 1] += w_err
        mass[ix] += u
        err[ix] += u_err
        # the ends: atom p whole at z_p, atom q whole at z_(q-1) (U_p = W_q = 0 exactly)
        mass[p_pt] += m[p_idx]
        mass[q_pt] += m[q_idx]
        lower = mass - err * (1.0 + 1e-6) - 4 * _U * mass - _TINY
        used = np.zeros(n, dtype=bool)
        used[ix] = used[ix + 1] = True
        if not np.all(lower[used] >= 0.0):
            return None
        low = np.maximum(lower, 0.0)
    return (low + moved) * (1.0 - 4 * _U)
