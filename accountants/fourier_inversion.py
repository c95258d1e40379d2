"""Certified Fourier inversion: delta(epsilon) = E_P[(1 - e^(epsilon - L))_+] from the log MGF of L.

With ``g(x) = (1 - e^(eps - x))_+ e^(-kappa x)`` (damping ``kappa > 0``) and ``s = kappa + iu``::

    delta(eps) = (1 / 2 pi) int M(s) e^(-s eps) / (s (1 + s)) du,      M(s) = E_P[e^(s L)]

(the shifted-contour, Carr-Madan style pricing of the "option" ``(1 - e^(eps - L))_+``; it avoids the
difference of two nearly equal probabilities in thesis Lemma 3.1.4 (3)). The integral converges absolutely
(``|1/(s(1+s))| <= 1/u^2``). We sum it with the trapezoidal rule of step ``du = 2 pi / T`` over |k| <= K:

* aliasing: by Poisson summation the full trapezoidal sum equals ``sum_j E[e^(kappa L) g(L + jT)]``, whose
  j = 0 term is delta and whose other terms are >= 0. So the full sum is an upper bound, and it exceeds delta
  by at most ``e^(-kappa T)/(1 - e^(-kappa T)) + M(k') e^(-k' eps) e^(-(k' - kappa) T)/(1 - e^(-(k'-kappa) T))``
  for any ``k' > kappa`` (the second from a Chernoff bound on the upper tail of L; a plan keeps several ``k'``,
  ``InversionPlan.kappa_tail``, and each epsilon takes the best of them);
* lower aliasing (exact part): the ``j >= 1`` terms are ``e^(-kappa j T) delta(eps - jT)``, and pointwise
  ``(1 - e^(x - L))_+ = (1 - e^(x - L)) + (e^(x - L) - 1)_+`` with ``0 <= (e^y - 1)_+ <= e^((1 + b) y)`` for every
  ``b >= 0``, so ``delta(x) = m0 - e^x m1 + c(x)``, ``m0 = M(0)`` (the mass: 1, a cut law's body's, or a part's),
  ``m1 = M(-1) = E_P[e^-L] <= 1`` and ``0 <= c(x) <= e^((1 + b) x) M(-1 - b)``. Summed over ``j``, the lower
  aliasing is ``m0 G(kappa T) - m1 e^eps G((kappa + 1) T) + C``, ``G(y) = 1 / (e^y - 1)``, ``0 <= C <= e^((1 + b)
  eps) M(-1 - b) G((kappa + 1 + b) T)``. Where a plan carries bounds on ``m0``, ``m1`` and ``M(-1 - b)``
  (``make_plan``'s ``exact_lower``: the split ledgers' delta queries), the inversion takes the known part off the
  sum and only its uncertainty, mostly ``C``, remains: tiny where the loss is far above ``eps - T`` (bounded
  below, as every subsampled loss is by ``log(1 - q)`` per run), so the period needs no longer ``e^(-kappa T)``
  below the tolerance (``PoissonSubsampled(Laplace(0.5), 0.001) x 10`` at delta: period 0.109 -> 0.079, 32,768 ->
  16,384 nodes);
* truncation: the terms beyond K sum to at most ``e^(-kappa eps) S(U) / (pi U)``, ``U = K du``, where
  ``S(U) >= sup_{u >= U} |M(kappa + iu)|`` is supplied by the mechanisms (``log_mgf_sup``);
* float64 rounding of each term is bounded and carried.

``upper = sum - low + truncation + rounding`` and ``lower = sum - high - upper aliasing - truncation - rounding``,
with ``[low, high]`` the lower aliasing's bracket (``[0, G(kappa T)]`` without its exact part), so
``lower <= delta <= upper`` whenever ``S`` is a true bound; the Chernoff bound ``M(kappa) e^(-kappa eps)
kappa^kappa / (1 + kappa)^(1 + kappa)`` (the improved RDP conversion) caps ``upper``.

Where delta is large (the Chernoff-optimal damping is near 0, far below the mean of L), the same integrand on a
contour ``Re s = kappa`` in (-1, 0) prices ``1 - delta = E_P[min(1, e^(eps - L))]`` instead (:func:`invert`
handles both; the aliasing terms then bound the upper end).

**Cut laws.** A law may come with a part left out: ``P = P_body + P_tail`` (both non-negative measures), the
transform that of the sub-probability measure ``P_body`` only (``log_mgf.left_out`` bounds the mass of
``P_tail``; :meth:`mechanisms.subsampled.PoissonSubsampled.remove_body` cuts a subsampled Gaussian's heavy upper
tail, whose MGF explodes at large tilts). Everything above holds for a sub-probability measure (the aliasing terms
are its integrals of non-negative functions, at most those of a probability measure; the Chernoff bound is a
pointwise inequality integrated against it), so the inversion brackets ``delta_body(eps) = E_P_body[(1 - e^(eps -
L))_+]``; and since ``0 <= (1 - e^(eps - L))_+ <= 1``, ``delta_body <= delta <= delta_body + P_tail(everything)``:
:func:`invert` adds ``left_out`` to the upper end only. The complement contour (``1 - delta``) assumes mass 1 and
is refused for such laws.

Ledgers of two-point losses only (randomized response, pure DP) do not need any of this: their profile is a
finite sum, enumerated by :class:`accountants.two_point_ledger.TwoPointLedger` with its float64 rounding bounded
(re-exported here).
"""

from __future__ import annotations

import dataclasses
import functools
import math
from collections.abc import Callable

import numpy as np
from numpy.typing import ArrayLike

from dpledger.accountants.conversions import minimize_over_orders
from dpledger.accountants.report import Bounds
from dpledger.accountants.two_point_ledger import MAX_ATOMS, TwoPointLedger
from dpledger.mechanisms._tilts import exact_tilt

__all__ = [
    "Bounds",
    "InversionPlan",
    "make_plan",
    "invert",
    "TwoPointLedger",
    "MAX_ATOMS",
    "MAX_DAMPING",
    "MAX_DAMPING_CLOSED_FORM",
    "MAX_DAMPING_ENCLOSED",
    "TruncationLimit",
    "with_left_out",
    "with_more_tails",
]

_EPS = np.finfo(np.float64).eps
#: Largest damping used by the inversion when some characteristic function comes from a quadrature whose
#: range grows with the tilt (Poisson-subsampled mechanisms): any damping > 0 is valid; this one bounds the cost.
MAX_DAMPING = 64.0
#: Largest damping for ledgers whose log MGFs cost the same at any tilt (closed forms). Capping there at
#: ``MAX_DAMPING`` would be valid too, but far from the saddle point the terms of the sum are many orders of
#: magnitude above delta and cancel, so the (bounded) float64 rounding error swamps a tiny delta.
MAX_DAMPING_CLOSED_FORM = 1e6
#: Largest damping for ledgers whose characteristic functions are closed forms or proven enclosures
#: (:mod:`mechanisms.subsampled_gaussian_cf`, whose range grows only linearly with the tilt).
MAX_DAMPING_ENCLOSED = 1024.0


#: A plan whose truncation bound at ``max_terms`` nodes is this many times its tolerance cannot certify anything:
#: the callers' tolerances are at least this much below the interval width they accept.
_HOPELESS = 1e4


class TruncationLimit(ArithmeticError):
    """The characteristic function does not decay fast enough for ``max_terms`` nodes to bound the truncation
    (raised before any node is evaluated, so the caller can say why at once)."""


#: Octaves of frequency above the last node over which :func:`_banded_sup` spreads the truncation bound.
_TRUNCATION_BANDS = 3


def _banded_sup(log_mgf_sup, kappa, v0):
    """``banded(m)``: the log of the truncation bound's weighted supremum for nodes up to ``V = 2^m v0``, a bound
    ``S`` with ``(step / pi) sum_(k > K) |M(s_k)| / |s_k (1 + s_k)| <= S / (pi V)`` that the plan then uses as
    ``log_sup``. With ``sup_j = sup_(|v| >= 2^j V) |M(kappa + iv)|`` (``log_mgf_sup``), ``|s (1 + s)| >= v^2`` and
    ``sum_(k = a + 1)^b 1 / k^2 <= 1 / a - 1 / b``, the nodes in each octave ``(2^j V, 2^(j+1) V]`` add at most
    ``sup_j (1 / (2^j V) - 1 / (2^(j+1) V)) / pi`` and those beyond the last, ``sup_J / (2^J pi V)``, so ``S = sum_(j <
    J) sup_j 2^(-j-1) + sup_J 2^-J`` (``J = _TRUNCATION_BANDS``), at most ``sup_0``, the bound of a single
    supremum: smaller by ~2 where the characteristic function keeps decaying (the narrow losses of few runs of a
    small sampling probability). Each ``sup`` is asked once (the octaves of one ``m`` are those of the next), and the
    sum is raised by its rounding (a relative ``1e-12``). ``banded(m, single=True)`` is ``sup_0`` alone (no further
    octaves asked): :func:`make_plan` chooses its nodes by it, as before the bands, and keeps the banded bound for
    a plan of at least :data:`_BANDED_MIN_TERMS` nodes (a smaller truncation error at the same nodes: sigma 0.6,
    q 1e-4, 100 runs then meets rtol with its first plan, 8,192 nodes, instead of planning again with 16,384)."""

    @functools.cache
    def sup(m):
        return float(log_mgf_sup(kappa, v0 * 2.0**m))

    def banded(m, single=False):
        if single:
            return sup(m)
        parts = [sup(m + j) - (j + 1) * _LOG2 for j in range(_TRUNCATION_BANDS)]
        parts.append(sup(m + _TRUNCATION_BANDS) - _TRUNCATION_BANDS * _LOG2)
        top = max(parts)
        if not math.isfinite(top):
            return top
        total = top + math.log(sum(math.exp(p - top) for p in parts))
        return total + 1e-12 * (abs(total) + 1.0)

    return banded


_LOG2 = math.log(2.0)
#: Plans of fewer nodes keep the single supremum: the octaves' suprema cost as much as a tenth of such a plan (a
#: few milliseconds in all), and a plan that misses its accuracy by the truncation is cheap to make again.
_BANDED_MIN_TERMS = 4096


def _check_truncation(log_trunc, tolerance, terms, max_terms, step, log_sup):
    if log_trunc > np.log(tolerance * _HOPELESS):
        # the bound in log form beyond the float range (np.exp's overflow warning is an error under -W error)
        bound = f"{np.exp(log_trunc):.3g}" if log_trunc < 700.0 else f"exp({log_trunc:.4g})"
        raise TruncationLimit(
            f"{terms + 1} nodes (max_terms={max_terms}): the truncation bound {bound} stays far "
            f"above the tolerance {tolerance:.3g} because the characteristic function does not decay fast enough "
            f"(it still reaches exp({log_sup:.4g}) beyond frequency {terms * step:.4g}): the privacy loss is too "
            "narrow or too lumpy for Fourier inversion (few steps of a small sampling probability, or atoms)"
        )


def _log_geometric_tail(log_m, gap_period):
    """``log M - G - log(1 - e^-G)`` (``G = gap_period > 0``): the log of an aliasing bound summed over its
    periods, ``M sum_(j >= 1) e^(-j G)``, raised by the rounding of its parts (``8u`` of each magnitude)."""
    log_geometric = np.log(-np.expm1(-gap_period))
    base = log_m - gap_period - log_geometric
    return base + 8.0 * _EPS * (np.abs(log_m) + gap_period + np.abs(log_geometric) + 4.0)


@dataclasses.dataclass(frozen=True)
class InversionPlan:
    """Contour and grid of one inversion: damping ``kappa``, period ``period`` (step ``2 pi / period``),
    ``terms`` nodes, and the precomputed ``log M`` at the nodes."""

    kappa: float
    #: The Chernoff exponents ``k' > kappa`` the upper aliasing bound may use (:func:`invert` takes the best at each
    #: epsilon), and ``log M`` (an upper bound) at each; empty on the complement contour (``kappa < 0``).
    kappa_tail: np.ndarray
    period: float
    terms: int
    log_m_nodes: np.ndarray
    log_m_kappa: float
    log_m_tail: np.ndarray
    #: The truncation bound's weighted supremum of ``|M|`` beyond the last node (:func:`_banded_sup`), in logs
    log_sup: float
    #: ``log E`` at the nodes, ``|M - exp(log_m_nodes)| <= E`` (None: no enclosure, an estimate's plan)
    log_err_nodes: np.ndarray = None
    #: Upper bound on the probability mass left out of the transform (a law cut at a high loss, see "Cut laws" in
    #: the module docstring): delta exceeds the transform's by at most this, and never falls below it.
    left_out: float = 0.0
    #: The lower aliasing's exact part ("lower aliasing" in the module docstring): orders ``b >= 0`` of its
    #: remainder's Chernoff bound and ``log M(-1 - b)`` (upper bounds) at each; empty: none.
    complement_tails: np.ndarray = ()
    log_m_complement: np.ndarray = ()
    #: ``(lower, upper)`` bounds on the inverted measure's mass ``M(0)`` and on ``M(-1) = E[e^-L]``: ``(0, 1)`` says
    #: nothing (both are at most 1 for a privacy loss's law and for any part of it).
    mass_bounds: tuple = (0.0, 1.0)
    m1_bounds: tuple = (0.0, 1.0)

    def __post_init__(self):
        """``kappa_tail`` and ``log_m_tail`` become read-only 1-D float arrays of one size (a single number is one
        exponent); ValueError where an exponent is not above ``kappa`` or its ``log M`` is NaN or ``-inf``: the
        aliasing bound takes the minimum over them, and one such entry made it NaN at every epsilon, so the lower
        end NaN (``max(NaN, 0)`` is NaN), while it is valid only for ``k' > kappa`` and an upper bound on ``log M``
        (``+inf``, no bound, is kept: that exponent is never the best)."""
        tails = np.array(self.kappa_tail, dtype=np.float64, ndmin=1)
        log_m = np.array(self.log_m_tail, dtype=np.float64, ndmin=1)
        if tails.ndim != 1 or tails.shape != log_m.shape:
            raise ValueError(f"`kappa_tail` and `log_m_tail` of InversionPlan must be 1-D of one size; got shapes "
                             f"{tails.shape} and {log_m.shape}.")
        bad = ~(tails > self.kappa) | np.isnan(log_m) | (log_m == -np.inf)
        if bad.any():
            i = int(np.argmax(bad))
            raise ValueError(f"InversionPlan: each exponent k' of the upper aliasing bound must exceed kappa = "
                             f"{self.kappa}, with log M(k') an upper bound (not NaN or -inf); got k' = {tails[i]}, "
                             f"log M = {log_m[i]}.")
        orders = np.array(self.complement_tails, dtype=np.float64, ndmin=1)
        log_mc = np.array(self.log_m_complement, dtype=np.float64, ndmin=1)
        if orders.ndim != 1 or orders.shape != log_mc.shape:
            raise ValueError(f"`complement_tails` and `log_m_complement` of InversionPlan must be 1-D of one size; "
                             f"got shapes {orders.shape} and {log_mc.shape}.")
        bad = ~(orders >= 0.0) | np.isnan(log_mc) | (log_mc == -np.inf)
        if bad.any():
            i = int(np.argmax(bad))
            raise ValueError(f"InversionPlan: each order b of the lower aliasing's remainder must be >= 0, with log "
                             f"M(-1 - b) an upper bound (not NaN or -inf); got b = {orders[i]}, log M = {log_mc[i]}.")
        for name in ("mass_bounds", "m1_bounds"):
            pair = tuple(float(x) for x in getattr(self, name))
            if len(pair) != 2 or not 0.0 <= pair[0] <= pair[1] <= 1.0:
                raise ValueError(f"`{name}` of InversionPlan must be (lower, upper) with 0 <= lower <= upper <= 1; "
                                 f"got {getattr(self, name)}.")
            object.__setattr__(self, name, pair)
        for name, array in (("kappa_tail", tails), ("log_m_tail", log_m), ("complement_tails", orders),
                            ("log_m_complement", log_mc)):
            array.setflags(write=False)
            object.__setattr__(self, name, array)

    @property
    def step(self) -> float:
        return 2.0 * np.pi / self.period

    @functools.cached_property
    def contour(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """``(s, log M(s) - log s - log(1 + s), trapezoid weights, weights (8 + |log M|), log |s (1 + s)|)`` at the
        nodes: what :func:`invert` needs at every epsilon, computed once per plan (a search inverts one plan at
        dozens of epsilons). The same float64 operations as term by term, only in another order: the exponent
        ``log M - s eps - log s - log(1 + s)`` is the sum of the same four rounded parts. Its absolute error is
        within ``eps_mach (8 + |log M| + 2 |s| |epsilon|)``: the parts other than ``s eps`` within a few ulps of
        ``|log M| + |log s| + |log(1 + s)|`` (the 8 covers the logarithms of ``|s|`` up to ``e^8``'s order, the
        constant being generous), ``fl(s eps)`` within ``u |s eps|`` per part and the additions within ``u`` of
        partial sums bounded by the same magnitudes; a term ``e^t`` with exponent error ``d`` is off by at most
        ``|e^t| (e^|d| - 1)``, i.e. ``|d| |e^t|`` to first order (the ``1 + log2`` factor of the bound absorbs the
        second order). :func:`_terms` adds the ``2 |s| |epsilon|`` at each epsilon (it grows with the
        frequency: high-frequency terms of slowly decaying characteristic functions carry a phase error of about
        ``u |Im s| epsilon``, beyond ``8 + |log M|`` there)."""
        s = self.kappa + 1j * self.step * np.arange(self.terms + 1)
        log_s, log_1s = np.log(s), np.log1p(s)
        base = self.log_m_nodes - log_s - log_1s
        weights = np.ones(self.terms + 1)
        weights[0] = 0.5
        magnitude_weights = weights * (8.0 + np.abs(self.log_m_nodes))
        log_denominator = log_s.real + log_1s.real  # log |s| + log |1 + s|, as numpy forms them
        for array in (s, base, weights, magnitude_weights, log_denominator):
            array.setflags(write=False)
        return s, base, weights, magnitude_weights, log_denominator

    @functools.cached_property
    def frequency_weights(self) -> np.ndarray:
        """``2 w |s|`` at the nodes (trapezoid weights ``w``): times ``|epsilon|``, the part of each term's
        exponent error that comes from ``s epsilon`` (:attr:`contour`)."""
        s, _, weights = self.contour[:3]
        out = 2.0 * weights * np.abs(s)
        out.setflags(write=False)
        return out

    @functools.cached_property
    def moduli(self) -> tuple[float, np.ndarray, float, float]:
        """``(peak0, w e^(Re base - peak0), sum_k (8 + |log M_k|) w_k e^(Re base_k - peak0), sum_k 2 w_k |s_k|
        e^(Re base_k - peak0))`` with ``peak0 = max Re base`` (:attr:`contour`, :attr:`frequency_weights`).

        At epsilon every term's exponent has the real part ``Re base - kappa eps``: the same shift at every node, so
        the moduli relative to the peak, and the sums :func:`_terms` weighs them by, are the same at every
        epsilon and are formed once per plan (a search inverts one plan at dozens of epsilons); :func:`invert`
        scales them by ``e^(peak0 - kappa eps)``. Each modulus is one rounding of ``Re base - peak0`` and one
        exponential, a subset of the roundings of the term by term computation (``Re base - kappa eps``, then
        minus its maximum), which the per-term bound of :attr:`contour` covers; the two sums are of non-negative
        terms, made larger by ``gamma_(K+2)`` (Higham Lemma 3.5) for their rounding in any order."""
        base_re = self.contour_parts[0]
        peak0 = float(np.max(base_re))
        modulus = np.exp(base_re - peak0)
        weights, magnitude_weights = self.contour[2], self.contour[3]
        slack = 1.0 + (modulus.size + 2) * _EPS * 1.01
        weighted = weights * modulus
        weighted.setflags(write=False)
        return (peak0, weighted, float(np.sum(magnitude_weights * modulus)) * slack,
                float(np.sum(self.frequency_weights * modulus)) * slack)

    @functools.cached_property
    def phasors(self) -> tuple[np.ndarray, np.ndarray]:
        """``(Re, Im)`` of ``w_k e^(base_k - peak0)`` at the nodes (:attr:`moduli`' weighted moduli times ``e^(i Im
        base_k)``): a term at epsilon is this times ``e^(-i k step eps)`` (:func:`_node_phases`), so an inversion
        costs a few products per node instead of a cosine (:func:`_terms`). Each part is the modulus times one
        ``cos`` or ``sin`` of the exact ``Im base_k`` (within an ulp), so within ``2u`` of its value."""
        weighted = self.moduli[1]
        base_im = self.contour_parts[1]
        parts = (weighted * np.cos(base_im), weighted * np.sin(base_im))
        for array in parts:
            array.setflags(write=False)
        return parts

    @functools.cached_property
    def enclosure_parts(self) -> tuple[float, float]:
        """``(top0, sum_k w_k e^(l_k - top0))`` with ``l_k = log E_k - log |s_k (1 + s_k)|`` and ``top0 = max l``
        (``(-inf, 0)`` without an enclosure): :func:`_enclosure_error` at epsilon is this sum times
        ``e^(top0 - kappa eps) step / pi`` (the same shift at every node, as in :attr:`moduli`)."""
        if self.log_err_nodes is None:
            return -np.inf, 0.0
        log_terms = self.log_err_nodes - self.contour[4]
        top0 = float(np.max(log_terms))
        if not np.isfinite(top0):
            return top0, 0.0
        return top0, float(np.sum(self.contour[2] * np.exp(log_terms - top0)))

    @functools.cached_property
    def aliasing_parts(self) -> tuple[np.ndarray, np.ndarray]:
        """``(k', log M(k') - (k' - kappa) T - log(1 - e^(-(k' - kappa) T)))`` over :attr:`kappa_tail`: the upper
        aliasing bound's log less ``k' eps`` (:func:`_log_upper_aliasing`), raised by the rounding of its parts (a
        few ulps of their magnitudes: ``8 u`` of each, and of the ``k' eps`` added at each epsilon)."""
        tails = self.kappa_tail
        return tails, _log_geometric_tail(self.log_m_tail, (tails - self.kappa) * self.period)

    @functools.cached_property
    def complement_parts(self) -> tuple[np.ndarray, np.ndarray]:
        """``(b, log M(-1 - b) - (kappa + 1 + b) T - log(1 - e^(-(kappa + 1 + b) T)))`` over :attr:`complement_tails`:
        the log of the lower aliasing remainder's bound less ``(1 + b) eps`` (:func:`_lower_aliasing`), raised by
        the rounding of its parts (``8u`` of each, as :attr:`aliasing_parts`)."""
        orders = self.complement_tails
        return orders, _log_geometric_tail(self.log_m_complement, (self.kappa + 1.0 + orders) * self.period)

    @functools.cached_property
    def contour_parts(self) -> tuple[np.ndarray, np.ndarray]:
        """``(Re base, Im base)`` of :attr:`contour`, contiguous: a term ``e^(t - peak)``, ``t = base - s eps``, has
        modulus ``e^(Re base - kappa eps - peak)`` and phase ``Im base - k step eps``: the moduli are formed once per
        plan (:attr:`moduli`), and so are the phasors (:attr:`phasors`) that :func:`_terms` turns to each epsilon,
        each part within a few ulps (which the per-term rounding bound of :attr:`contour` covers)."""
        base = self.contour[1]
        parts = (np.ascontiguousarray(base.real), np.ascontiguousarray(base.imag))
        for array in parts:
            array.setflags(write=False)
        return parts


def log_chernoff_constant(kappa: ArrayLike) -> np.ndarray:
    """``log(kappa^kappa / (1 + kappa)^(1 + kappa)) = max_x log((1 - e^-x) e^(-kappa x))`` for ``kappa > 0``.

    Computed as ``-kappa log1p(1 / kappa) - log1p(kappa)``: two terms of magnitude at most ``1`` and ``log(1 +
    kappa)``, each within a few ulps. The textbook ``kappa log kappa - (1 + kappa) log1p(kappa)`` subtracts two
    numbers of size ``kappa log kappa`` and lost ~1e-10 at ``kappa = 3e4`` and ~1e-9 at ``1e6`` (dampings the
    cut laws and closed forms reach), beyond the Chernoff bounds' 1e-9 slack."""
    kappa = np.asarray(kappa, dtype=np.float64)
    return -kappa * np.log1p(1.0 / kappa) - np.log1p(kappa)


def chernoff_log_delta(
    log_mgf_real: Callable[[np.ndarray], np.ndarray], epsilon: float, max_kappa: float = 1e7,
    near: float | None = None,
) -> tuple[float, float]:
    """Best ``log M(kappa) - kappa eps + log c(kappa)`` over ``0 < kappa <= max_kappa`` and the ``kappa``
    attaining it (searching beyond the damping cap would only cost evaluations).

    The search starts from 61 dampings from 1e-3 to ``min(1e3, max_kappa)``, or, given ``near`` (a damping where the
    best is expected, such as the other direction's of the same ledger), from :data:`_NEAR_FACTORS` times it;
    :func:`accountants.conversions.minimize_over_orders` extends either grid while its best sits at an end, so only
    the work changes (every value is a bound): sigma 5, q 1e-3, 10^4 steps, the add direction at epsilon 0.06 (best
    damping 162, 158.9 for the remove direction) takes 36 evaluations of ``log M`` (about 2 ms) from 158.9, 88 (4.5 ms)
    from the wide grid."""

    def objective(orders):
        kappa = np.asarray(orders) - 1.0
        return np.real(log_mgf_real(kappa)) - kappa * epsilon + log_chernoff_constant(kappa)

    if near is not None and 0.0 < near < max_kappa:
        grid = 1.0 + np.unique(np.minimum(near * _NEAR_FACTORS, max_kappa))
    else:
        grid = 1.0 + np.geomspace(1e-3, min(1e3, max_kappa), 61)
    opt = minimize_over_orders(objective, grid, objective(grid), max_order=1.0 + max_kappa)
    return opt.value, opt.order - 1.0


#: The first dampings of a Chernoff search started near a known damping (:func:`chernoff_log_delta`'s ``near``).
_NEAR_FACTORS = np.geomspace(0.25, 4.0, 9)


def make_plan(
    log_mgf: Callable[[np.ndarray], np.ndarray],
    log_mgf_sup: Callable[[float, float], float],
    epsilon: float,
    tolerance: float,
    *,
    max_terms: int = 1 << 20,
    kappa: float | None = None,
    max_damping: float = MAX_DAMPING,
    node_enclosure: Callable[[np.ndarray], tuple[np.ndarray, np.ndarray]] | None = None,
    shorten: bool | float = False,
    exact_lower: bool = False,
) -> InversionPlan:
    """Choose damping, period and number of nodes so that aliasing and truncation at ``epsilon`` are each at
    most ``tolerance`` (absolute), if ``max_terms`` nodes suffice; evaluate ``log M`` at the nodes. The damping
    is the Chernoff-optimal one (the saddle point, where the terms are smallest) capped at ``max_damping``.

    ``node_enclosure``, if given, supplies ``(log M~, log E)`` at the nodes instead of ``log_mgf``: the log
    transform of a non-negative part of the loss's law, with its float error bounded (its aliasing and Chernoff
    terms are then bounded through the whole law's ``log_mgf``, which dominates it; ``log_mgf_sup`` must bound the
    part).

    ``shorten``: try smaller dampings where the upper aliasing bound sets a long period
    (:func:`_damping_and_period`: ``True`` halves the damping at each candidate, a float in (0, 1) takes that ratio
    between candidates, down to the same smallest); their terms are larger, so a caller whose plan then misses its
    accuracy should plan again without it.

    ``exact_lower``: where it saves nodes (:func:`_exact_lower_period`), the plan carries the lower aliasing's known
    part (:func:`_complement_data`), which every inversion of it then takes off ("lower aliasing" in the module
    docstring), and its period needs only meet that aliasing's uncertainty, not ``e^(-kappa T)`` itself: for a
    caller that inverts at ``epsilon`` itself (a delta query; :mod:`accountants._fourier_search` asks it for the
    split ledgers' rest, whose plans it can halve, and not for whole laws, whose delta plans on issue 14's grid
    keep their node counts, 64 or 128). Below the epsilon a plan is made for, its upper aliasing grows like
    ``e^(k' (epsilon - eps))``, and the longer period the former bound asked for is what let an epsilon search's
    first plan, made above the answer, hold there (sigma 0.6, q 1e-4, 10 steps: made at 0.66, the answer 0.0104)."""
    # A tolerance below 1e-300 (delta near the float range) only sets the plan's ambition; the bounds computed from
    # it are proven whatever it is, so it is floored where its logarithm stays finite.
    tolerance = max(float(tolerance), 1e-300)
    if not isinstance(shorten, (bool, np.bool_)) and not 0.0 < float(shorten) < 1.0:
        raise ValueError(f"`shorten` of make_plan must be True, False or a ratio in (0, 1); got {shorten}.")
    left_out = float(getattr(log_mgf, "left_out", 0.0))
    if kappa is None:
        _, kappa = chernoff_log_delta(lambda k: log_mgf(k.astype(np.complex128)), epsilon, max_damping)
    if kappa < 0:
        if left_out:  # 1 - delta of a cut law is not the complement of its transform's delta
            raise ValueError("make_plan: a cut law (left_out > 0) has no complement plan (kappa < 0).")
        return _make_negative_plan(log_mgf, log_mgf_sup, epsilon, tolerance, max_terms, float(exact_tilt(kappa)))
    # Any damping gives valid bounds; very large ones (light-tailed losses far from their mean) make the
    # tilted integrands extreme and costly, so cap it. Every damping a plan takes is moved to a float at which
    # 1 + kappa and -1 - kappa are exact (exact_tilt: the enclosures then need no allowance for their rounding).
    kappa = float(exact_tilt(min(max(kappa, 1e-6), max_damping)))
    log_tol = np.log(tolerance / 2.0)
    kappa, log_m_kappa, kappa_tail, log_m_tail, period = _damping_and_period(
        log_mgf, epsilon, kappa, log_tol, shorten, _log_headroom(log_mgf) if shorten else _LOG_TERM_HEADROOM)
    terms, log_sup, log_trunc, banded = _node_count(log_mgf_sup, kappa, epsilon, tolerance, max_terms, period)
    complement = {}
    if exact_lower:
        shorter = _exact_lower_period(log_mgf, log_mgf_sup, node_enclosure, kappa, kappa_tail, log_m_tail, epsilon,
                                      tolerance, max_terms, max_damping, left_out, period, terms)
        if shorter is not None:
            complement, period, (terms, log_sup, log_trunc, banded) = shorter
    step = 2.0 * np.pi / period
    _check_truncation(log_trunc, tolerance, terms, max_terms, step, log_sup)
    if terms >= _BANDED_MIN_TERMS:  # the nodes are chosen as before; their bound is the banded one
        log_sup = banded(int(math.log2(terms // 64)))
    nodes = kappa + 1j * step * np.arange(terms + 1)
    log_m_nodes, log_err_nodes = _at_nodes(log_mgf, node_enclosure, nodes)
    return InversionPlan(
        kappa=kappa,
        kappa_tail=kappa_tail,
        period=period,
        terms=terms,
        log_m_nodes=log_m_nodes,
        log_m_kappa=log_m_kappa,
        log_m_tail=log_m_tail,
        log_sup=float(log_sup),
        log_err_nodes=log_err_nodes,
        left_out=left_out,
        **complement,
    )


#: Log of the size of the contour sum's largest term (``M(kappa) e^(-kappa eps) / (kappa (1 + kappa))``) allowed,
#: relative to the tolerance, when a smaller damping is chosen for a shorter period: its float64 rounding (about
#: 1e-13 of it over the whole sum) then stays below the tolerance. Where the law's transform is enclosed less
#: tightly than :data:`_BASE_RELATIVE_ERROR` (many runs: each run's enclosure error adds up), the headroom shrinks
#: in proportion.
_LOG_TERM_HEADROOM = 25.0
_BASE_RELATIVE_ERROR = 1e-11


#: Chernoff exponents ``k' = kappa f + d`` of the upper aliasing bound that choose the period (all seven are kept
#: in the plan: :func:`invert` takes the best at each epsilon).
_TAIL_FACTORS = 1.0 + np.array([0.02, 0.05, 0.1, 0.2, 0.5, 1.0, 2.0])
_TAIL_SHIFTS = np.array([0, 0, 0, 0, 0, 0.5, 1.0])
#: More exponents, ``k' = kappa f`` then ``kappa + d``, that :func:`with_more_tails` adds to a plan whose lower
#: bound the aliasing spoils.
_MORE_TAIL_FACTORS = 1.0 + np.geomspace(0.01, 1.5, 12)
_MORE_TAIL_SHIFTS = np.array([0.05, 0.1, 0.2, 0.35, 0.5, 0.75, 1.0, 1.5])
#: Dampings tried by ``shorten``: the Chernoff-optimal one and smaller ones down to this many halvings of it.
_HALVINGS = 8


def _log_headroom(log_mgf):
    """``log`` of the headroom of :func:`_damping_and_period`'s shorter dampings: :data:`_LOG_TERM_HEADROOM`, less the
    log of the law's relative enclosure error over :data:`_BASE_RELATIVE_ERROR` where that is larger (a million runs of
    a subsampled Gaussian carry ~4e-8: a plan at half the damping then missed its accuracy by rounding alone, and was
    made for nothing). The error is the law's own estimate, ``log_mgf.relative_error`` (0 if it has none: closed forms);
    only the choice of plan depends on it, never a bound."""
    relative = float(getattr(log_mgf, "relative_error", 0.0))
    if not relative > _BASE_RELATIVE_ERROR:
        return _LOG_TERM_HEADROOM
    return _LOG_TERM_HEADROOM - float(np.log(relative / _BASE_RELATIVE_ERROR))


#: Orders ``b`` of the lower aliasing remainder's Chernoff bound (``M(-1 - b)``), as multiples of the damping: the
#: remainder vanishes fastest at large ``b`` where the loss is bounded below, at small ``b`` where its lower tail is
#: heavy. At most the plan's largest damping, and for a whole law at most :data:`_COMPLEMENT_WHOLE_CAP`: a
#: subsampled Gaussian's add direction has ``M(-1 - b) = F(1 + b)``, whose quadrature range grows with ``b`` (orders
#: up to 16 x 1,100 took 150-300 ms at q 1e-4, sigma 2, 10^4 steps). A split's rest (subsampled Laplace) is priced
#: at any tilt for about the same cost.
_COMPLEMENT_FACTORS = np.array([0.25, 1.0, 4.0, 16.0])
_COMPLEMENT_WHOLE_CAP = 64.0


def _complement_data(log_mgf, node_enclosure, kappa, max_damping, left_out):
    """The plan's fields of the lower aliasing's exact part (:func:`_lower_aliasing`): ``complement_tails`` and
    ``log_m_complement`` (the whole law's ``log_mgf`` at real ``-1 - b``, proven upper bounds, which bound a part's
    too; finite ones only; ``b`` a few multiples of the damping ``kappa``, capped: :data:`_COMPLEMENT_FACTORS`), and
    the bounds on ``M(0)`` and ``M(-1)`` of the measure inverted: for the whole law ``M(0) >= 1 - left_out`` (a cut
    law's body weighs at least that) and ``M(-1)`` from its enclosure (``log_mgf.enclosure``); for a part
    (``node_enclosure``) both from the part's enclosure at 0 and -1 (``Re e^(log M~) -+ E``, rounded outwards,
    within [0, 1]). A law without an enclosure keeps ``(0, 1)``: the bound is then the former ``G(kappa T)``. Only
    the plan depends on the choice of orders: every bound computed from them is proven."""
    none = {"complement_tails": (), "log_m_complement": (), "mass_bounds": (0.0, 1.0), "m1_bounds": (0.0, 1.0)}
    enclosure = node_enclosure if node_enclosure is not None else getattr(log_mgf, "enclosure", None)
    if enclosure is None:
        return none
    try:
        with np.errstate(all="ignore"):  # a tilt beyond float64 is a NumericalError, caught below
            value, log_err = enclosure(np.array([0.0 + 0.0j, -1.0 + 0.0j]))
            value, log_err = np.asarray(value, dtype=np.complex128), np.asarray(log_err, dtype=np.float64)
            cap = max_damping if node_enclosure is not None else min(max_damping, _COMPLEMENT_WHOLE_CAP)
            orders = np.unique(exact_tilt(-1.0 - np.minimum(kappa * _COMPLEMENT_FACTORS, cap)))
            log_m = np.real(log_mgf(orders.astype(np.complex128)))
    except (ArithmeticError, ValueError):  # NumericalError among them: the former bound then
        return none
    with np.errstate(over="ignore", invalid="ignore"):
        centre = np.exp(value.real) * np.cos(value.imag)
        radius = np.exp(log_err) * (1.0 + 4.0 * _EPS) + 4.0 * _EPS * np.abs(centre)
    lower = np.clip(centre - radius, 0.0, 1.0)
    upper = np.clip(centre + radius, 0.0, 1.0)
    keep = np.isfinite(log_m) & (orders <= -1.0)
    if not (np.isfinite(lower).all() and np.isfinite(upper).all() and lower[1] > 0.0 and keep.any()):
        return none
    mass = (float(lower[0]), float(upper[0]))
    if node_enclosure is None:  # the whole law: mass 1, or a cut law's body at least 1 - left_out
        mass = (max((1.0 - float(left_out)) * (1.0 - 2.0 * _EPS), mass[0], 0.0), 1.0)
    return {"complement_tails": -1.0 - orders[keep], "log_m_complement": log_m[keep],
            "mass_bounds": mass, "m1_bounds": (float(lower[1]), 1.0 if node_enclosure is None else float(upper[1]))}


def _lower_period(complement, kappas, epsilon, log_tol, log_headroom):
    """Shortest period at which the lower aliasing's uncertainty (:func:`_lower_aliasing`: the gaps of ``m0`` and
    ``m1`` times ``G(kappa T)`` and ``e^eps G((kappa + 1) T)``, and ``C``) is about ``e^log_tol`` at each damping,
    its three parts a third each, and its known part, ``G(kappa T)`` at most, within ``log_headroom`` of the
    tolerance (it is taken off the sum, whose rounding grows with it)."""
    third = log_tol - math.log(3.0)
    orders = np.asarray(complement["complement_tails"])[None, :]
    log_m = np.asarray(complement["log_m_complement"])[None, :]
    k = kappas[:, None]
    remainder = np.min(((1.0 + orders) * epsilon + log_m - third) / (k + 1.0 + orders), axis=1)
    with np.errstate(divide="ignore"):
        m1_gap = math.log(max(complement["m1_bounds"][1] - complement["m1_bounds"][0], 0.0))
        m0_gap = math.log(max(complement["mass_bounds"][1] - complement["mass_bounds"][0], 0.0))
    m1_part = (m1_gap + epsilon - third) / (kappas + 1.0)
    m0_part = (m0_gap - third) / kappas
    headroom = (-log_tol - log_headroom) / kappas
    return np.maximum.reduce([remainder, m1_part, m0_part, headroom, np.zeros(kappas.shape)])


def _exact_lower_period(log_mgf, log_mgf_sup, node_enclosure, kappa, kappa_tail, log_m_tail, epsilon, tolerance,
                        max_terms, max_damping, left_out, period, terms):
    """``(complement, period, node count)`` of a plan whose lower aliasing's known part is taken off (``make_plan``'s
    ``exact_lower``), or None where that saves no nodes over ``terms`` at the former ``period``. The period then
    need only meet the upper aliasing (the plan's exponents ``kappa_tail``) and the lower aliasing's uncertainty
    (:func:`_lower_period`). The known part's evaluations (:func:`_complement_data`) are made only where even the
    upper aliasing and the headroom alone, which bound that period from below, would save nodes: a split rest of
    ``PS(Laplace(10), 0.001) x 10`` kept its nodes and paid 1.5-2.5 ms per plan for them. The same count at a
    shorter period would reach higher frequencies, whose enclosures cost more, so a tie keeps the former period
    (``PS(Laplace(0.5), 0.01) x 10``: 16,384 nodes either way, 21 ms at period 0.90, 29 ms at 0.65)."""
    log_tol = math.log(tolerance / 2.0)
    upper = float(np.min((log_m_tail - kappa_tail * epsilon - log_tol) / (kappa_tail - kappa), initial=np.inf))
    floor = max(upper, (-log_tol - _LOG_TERM_HEADROOM) / kappa) * 1.05
    if not (floor < period and terms > 64 and _truncation_meets(log_mgf_sup, kappa, epsilon, tolerance,
                                                                 terms // 2, floor)):
        return None
    complement = _complement_data(log_mgf, node_enclosure, kappa, max_damping, left_out)
    if not len(complement["complement_tails"]):
        return None
    lower = float(_lower_period(complement, np.array([kappa]), epsilon, log_tol, _LOG_TERM_HEADROOM)[0])
    shorter = max(upper, lower) * 1.05
    if not shorter < period:
        return None
    if not _truncation_meets(log_mgf_sup, kappa, epsilon, tolerance, terms // 2, shorter):
        return None
    return complement, float(shorter), _node_count(log_mgf_sup, kappa, epsilon, tolerance, terms // 2, shorter)


def _truncation_meets(log_mgf_sup, kappa, epsilon, tolerance, terms, period):
    """Whether ``terms`` nodes of step ``2 pi / period`` meet ``tolerance`` by the single-supremum truncation bound
    (:func:`_node_count`'s test, one ``log_mgf_sup`` evaluation instead of its doubling search: a split rest's decay
    bound costs ~0.7 ms each)."""
    step = 2.0 * np.pi / period
    log_trunc = float(log_mgf_sup(kappa, terms * step)) - kappa * epsilon - math.log(math.pi * terms * step)
    return log_trunc <= math.log(tolerance)


def _node_count(log_mgf_sup, kappa, epsilon, tolerance, max_terms, period):
    """``(terms, log sup, log truncation, banded)``: the smallest power of two (from 64, at most ``max_terms``) of
    nodes of step ``2 pi / period`` whose truncation bound at ``epsilon`` (the single supremum beyond the last
    node, :func:`_banded_sup`) meets ``tolerance``, with that bound and the banded bound's function."""
    step = 2.0 * np.pi / period
    terms = 64
    banded = _banded_sup(log_mgf_sup, kappa, terms * step)
    while True:
        log_sup = banded(int(math.log2(terms // 64)), single=True)
        log_trunc = log_sup - kappa * epsilon - np.log(np.pi * terms * step)
        if log_trunc <= np.log(tolerance) or terms >= max_terms:
            return terms, log_sup, log_trunc, banded
        terms *= 2


def _damping_and_period(log_mgf, epsilon, kappa, log_tol, shorten=True, log_headroom=_LOG_TERM_HEADROOM):
    """``(kappa, log M(kappa), tails, log M(tails), period)``, the tails those of :data:`_TAIL_FACTORS` (above
    ``kappa``, ``log M`` finite) for the chosen damping.

    The period meets both aliasing bounds at ``kappa``: the lower one ``e^(-kappa T)`` and the upper one through a
    Chernoff exponent ``k' > kappa`` (the one needing the shortest period). The Chernoff-optimal damping makes the
    terms smallest, but where the loss has a heavy upper tail (subsampled mechanisms: ``log M`` grows like ``k^2``)
    the tilt ``e^(kappa L)`` spreads the law over a range far wider than the loss itself, and the upper aliasing
    bound then asks for a long period, so many nodes (q = 1e-3, sigma = 2, 10 steps: period 35 at kappa = 54, 1.5
    at kappa = 20). Any damping gives proven bounds, so with ``shorten`` smaller dampings (halvings, or steps of the
    ratio ``shorten``) are taken while
    their period is shorter and the largest term stays within ``log_headroom`` (:func:`_log_headroom`) of the
    tolerance (its rounding then stays below it). Each candidate's ``log M`` (at its damping and tails) comes from
    one call, made only when the search reaches it."""
    ratio = 0.5 if shorten is True else float(shorten)
    count = int(np.ceil(_HALVINGS * np.log(0.5) / np.log(ratio))) if shorten else 0
    kappas = exact_tilt(kappa * ratio ** np.arange(count + 1))
    tails = exact_tilt(kappas[:, None] * _TAIL_FACTORS[None, :] + _TAIL_SHIFTS[None, :])
    t1 = -log_tol / kappas

    @functools.cache
    def candidate(i):
        """``(log M(kappa_i), the best tail's index, log M there, period)`` of the i-th candidate, from one call."""
        values = np.real(log_mgf(np.concatenate([kappas[i:i + 1], tails[i]]).astype(np.complex128)))
        log_m_tails = values[1:]
        periods = (log_m_tails - tails[i] * epsilon - log_tol) / (tails[i] - kappas[i])
        periods = np.where(np.isfinite(periods), periods, np.inf)
        period = max(t1[i], float(np.min(periods))) * 1.05  # no floor: a tiny-scale loss needs a short period
        return float(values[0]), log_m_tails, float(period)

    def pick(i):
        log_m_kappa, log_m_tails, period = candidate(i)
        keep = np.isfinite(log_m_tails) & (tails[i] > kappas[i])
        return float(kappas[i]), log_m_kappa, tails[i][keep], log_m_tails[keep], period

    chosen = 0
    if shorten and candidate(0)[2] > 4.0 * t1[0] * 1.05:  # else the lower aliasing bound sets it: no gain
        # the candidates are evaluated one by one, as far as the search goes (usually two or three of nine)
        for i in range(1, kappas.size):
            log_m_kappa, _, period = candidate(i)
            log_term = log_m_kappa - kappas[i] * epsilon - np.log(kappas[i] * (1.0 + kappas[i]))
            if not (np.isfinite(period) and log_term <= log_tol + log_headroom):
                break
            if period < candidate(chosen)[2] / 1.2:
                chosen = i
            elif period > candidate(chosen)[2]:
                break
    return pick(chosen)


def _at_nodes(log_mgf, node_enclosure, nodes):
    """``(log M, log E or None)`` at the nodes: ``node_enclosure``'s where given, else the enclosure of ``log_mgf``
    where it has one."""
    enclosure = node_enclosure if node_enclosure is not None else getattr(log_mgf, "enclosure", None)
    if enclosure is None:
        return np.asarray(log_mgf(nodes), dtype=np.complex128), None
    value, error = enclosure(nodes)
    return np.asarray(value, dtype=np.complex128), np.asarray(error, dtype=np.float64)


def _enclosure_error(plan, epsilon):
    """Bound on what the nodes' enclosure errors add to the contour sum:
    ``(step / pi) sum_k w_k E_k |e^(-s_k eps)| / |s_k (1 + s_k)|`` (0 without an enclosure), from the sum formed once
    per plan (:attr:`InversionPlan.enclosure_parts`); the 1e-12 covers the roundings of each term's exponent
    relative to ``top0`` (a few ulps of magnitudes below 10^3) and of the sum, and ``8u (|top0| + |kappa eps|)``
    those of the common exponent ``top0 - kappa eps`` (dampings reach 10^3 and more)."""
    top0, total = plan.enclosure_parts
    if not np.isfinite(top0):
        return 0.0 if top0 == -np.inf else np.inf
    shift = top0 - plan.kappa * epsilon
    slack = 1.0 + 1e-12 + 8.0 * _EPS * (abs(top0) + abs(plan.kappa * epsilon) + 1.0)
    with np.errstate(over="ignore"):  # beyond float64 an infinite bound (no certainty at this epsilon), no warning
        return float(total * np.exp(shift) * plan.step / np.pi * slack)


def complement_damping(log_mgf: Callable[[np.ndarray], np.ndarray], epsilon: float) -> float:
    """Damping ``kappa`` in (-1, 0) for pricing ``1 - delta``: the minimiser of ``log M(kappa) - kappa eps``
    on a grid (the size of the terms of the contour sum at ``u = 0``, up to ``1 / |kappa (1 + kappa)|``)."""
    grid = exact_tilt(-np.linspace(0.02, 0.98, 49))
    values = np.real(log_mgf(grid.astype(np.complex128))) - grid * epsilon - np.log(-grid * (1.0 + grid))
    return float(grid[int(np.argmin(values))])


def _make_negative_plan(log_mgf, log_mgf_sup, epsilon, tolerance, max_terms, kappa):
    """Plan on the contour ``Re s = kappa`` in (-1, 0) (see :func:`invert`): aliasing
    ``e^eps e^(-(1 - a) T) / (1 - e^(-(1 - a) T)) + e^(-a T) / (1 - e^(-a T))``, ``a = -kappa``, each half at
    most ``tolerance / 2``."""
    a = -float(kappa)
    if not 0.0 < a < 1.0:
        raise ValueError(f"`kappa` of make_plan must be in (-1, 0) or positive; got {kappa}.")
    log_tol = np.log(tolerance / 4.0)
    period = max((epsilon - log_tol) / (1.0 - a), -log_tol / a) * 1.05
    step = 2.0 * np.pi / period
    terms = 64
    banded = _banded_sup(log_mgf_sup, -a, terms * step)
    while True:
        log_sup = banded(int(math.log2(terms // 64)), single=True)
        log_trunc = log_sup + a * epsilon - np.log(np.pi * terms * step)
        if log_trunc <= np.log(tolerance) or terms >= max_terms:
            break
        terms *= 2
    _check_truncation(log_trunc, tolerance, terms, max_terms, step, log_sup)
    if terms >= _BANDED_MIN_TERMS:
        log_sup = banded(int(math.log2(terms // 64)))
    nodes = -a + 1j * step * np.arange(terms + 1)
    log_m_nodes, log_err_nodes = _at_nodes(log_mgf, None, nodes)
    return InversionPlan(
        kappa=-a,
        kappa_tail=np.empty(0),
        period=period,
        terms=terms,
        log_m_nodes=log_m_nodes,
        log_m_kappa=float(np.real(log_mgf(np.array([-a], dtype=np.complex128))[0])),
        log_m_tail=np.empty(0),
        log_sup=float(log_sup),
        log_err_nodes=log_err_nodes,
    )


def _peak(plan, epsilon):
    """The largest real part of the terms' exponents ``t_k = base_k - s_k eps`` (:attr:`InversionPlan.contour`):
    ``max Re base - kappa eps``, the same shift at every node (:attr:`InversionPlan.moduli`)."""
    return plan.moduli[0] - plan.kappa * epsilon


def _terms(plan, epsilon):
    """``((step / pi) sum_k w_k Re e^(t_k), sum_k w_k (8 + |log M_k| + 2 |s_k| |epsilon|) |e^(t_k)|)``: the contour
    sum and the terms' exponent errors in units of machine epsilon, weighted by their moduli. The moduli relative
    to ``e^peak`` (:func:`_peak`) and the magnitude's sums come from :attr:`InversionPlan.moduli`; only the phases
    depend on epsilon: ``e^(t_k - peak)`` is :attr:`InversionPlan.phasors` times ``e^(-i k step eps)``
    (:func:`_node_phases`), and its real part is ``Re p Re e - Im p Im e``, summed as two float sums (pairwise, as
    before: the same depth). Its phase is within ``(2 |u_k eps| + 12) u`` of ``Im base_k - u_k eps`` (the products'
    and the phases' roundings, :func:`_node_phases`), inside the ``(8 + 2 |s_k| |eps|) u`` per term that the
    magnitude carries (with its ``1 + log2 K`` factor, :func:`invert`). The caller has checked that ``e^peak`` does
    not overflow."""
    _, _, magnitude, frequency = plan.moduli
    re, im = plan.phasors
    cos, sin = _node_phases(re.size, plan.step * epsilon)
    scale = np.exp(_peak(plan, epsilon))
    total = (float(np.sum(re * cos)) + float(np.sum(im * sin))) * scale * plan.step / np.pi
    return total, (magnitude + abs(epsilon) * frequency) * scale


#: Nodes per block of :func:`_node_phases` (a block's phases are its first phase times the first block's).
_PHASE_BLOCK = 256


def _node_phases(count, phi):
    """``(cos(k phi), sin(k phi))`` for ``k < count``: ``e^(-i k phi) = e^(-i b B phi) e^(-i m phi)`` with ``k = b B +
    m``, ``B`` = :data:`_PHASE_BLOCK`, so ``count / B + B`` cosines and sines and one complex product per node
    instead of a cosine per node. Each phase is within ``(|k phi| + 8) u`` of ``k phi``: the two products ``m
    phi`` and ``b B phi`` (``u`` of each, ``b B`` exact), their cosines and sines (an ulp each) and the complex
    product (``sqrt(2) gamma_2``, Higham Lemma 3.5); the sign of ``sin`` is the caller's (``Re (p e^(-i k phi)) =
    Re p cos + Im p sin``)."""
    size = min(_PHASE_BLOCK, max(count, 1))
    rows = -(-count // size)
    inner = np.arange(size) * phi
    outer = np.arange(rows) * (size * phi)
    c_in, s_in, c_out, s_out = np.cos(inner), np.sin(inner), np.cos(outer), np.sin(outer)
    cos = (np.outer(c_out, c_in) - np.outer(s_out, s_in)).ravel()[:count]
    sin = (np.outer(s_out, c_in) + np.outer(c_out, s_in)).ravel()[:count]
    return cos, sin


def _invert_negative(plan, epsilon):
    """``delta = 1 + I`` with ``I`` the same contour integral on ``Re s = kappa`` in (-1, 0) (moving the
    contour across the pole at ``s = 0``, residue 1). The trapezoidal sum of ``-I = 1 - delta =
    E_P[min(1, e^(eps - L))]`` is, by Poisson summation, that value plus non-negative aliasing terms bounded by
    ``e^eps e^(-(1-a) j T)`` (``j >= 1``, as ``E_P[e^-L] <= 1``) and ``e^(-a |j| T)`` (``j <= -1``)."""
    a, step, k_max = -plan.kappa, plan.step, plan.terms
    log_trunc = plan.log_sup + a * epsilon - np.log(np.pi * k_max * step)
    if max(_peak(plan, epsilon), log_trunc) > 600.0:
        errors = {"aliasing": np.inf, "truncation": np.inf, "rounding": np.inf, "nodes": k_max + 1}
        return Bounds(lower=0.0, estimate=1.0, upper=1.0), errors
    total, magnitude = _terms(plan, epsilon)
    rounding = magnitude * _EPS * step / np.pi * (1.0 + np.log2(k_max + 1)) + 2.0 * _EPS
    rounding += _enclosure_error(plan, epsilon)
    truncation = float(np.exp(log_trunc))
    aliasing = float(
        np.exp(epsilon - (1.0 - a) * plan.period) / -np.expm1(-(1.0 - a) * plan.period)
        + np.exp(-a * plan.period) / -np.expm1(-a * plan.period)
    )
    upper = min(1.0 + total + aliasing + truncation + rounding, 1.0)
    lower = max(1.0 + total - truncation - rounding, 0.0)
    estimate = min(max(1.0 + total, lower), upper)
    errors = {"aliasing": aliasing, "truncation": truncation, "rounding": rounding, "nodes": k_max + 1}
    return Bounds(lower=lower, estimate=estimate, upper=upper), errors


def invert(plan: InversionPlan, epsilon: float) -> tuple[Bounds, dict[str, float]]:
    """``(Bounds, errors)`` for ``delta(epsilon)`` on a plan (any epsilon; the bounds are computed for it).

    Where the plan's scale overflows float64 at this epsilon (far from the epsilon it was made for), the
    result is the trivial interval ``[0, min(Chernoff, 1)]``.
    """
    if plan.kappa < 0:
        return _invert_negative(plan, epsilon)
    kappa, step, k_max = plan.kappa, plan.step, plan.terms
    log_c = log_chernoff_constant(kappa)
    log_chernoff = plan.log_m_kappa - kappa * epsilon + log_c
    # its float error: a few ulps of each part (log M(kappa) itself is an upper bound), made larger
    log_chernoff += 8.0 * _EPS * (abs(plan.log_m_kappa) + abs(kappa * epsilon) + abs(float(log_c)) + 1.0)
    chernoff = float(np.exp(min(log_chernoff, 0.0))) * (1.0 + 4.0 * _EPS)
    log_a2 = _log_upper_aliasing(plan, epsilon)
    log_trunc = plan.log_sup - kappa * epsilon - np.log(np.pi * k_max * step)
    if max(_peak(plan, epsilon), log_a2, log_trunc) > 600.0:
        errors = {"aliasing": np.inf, "truncation": np.inf, "rounding": np.inf, "nodes": k_max + 1}
        upper = with_left_out(chernoff, plan.left_out)
        return Bounds(lower=0.0, estimate=upper, upper=upper), errors
    total, magnitude = _terms(plan, epsilon)
    rounding = magnitude * _EPS * step / np.pi * (1.0 + np.log2(k_max + 1))
    rounding += _enclosure_error(plan, epsilon)
    truncation = float(np.exp(log_trunc))
    low, high = _lower_aliasing(plan, epsilon)
    # the full sum less the lower aliasing's known part: its rounding (u of the larger magnitude) joins the error
    rounding += 2.0 * _EPS * (abs(total) + low)
    corrected = total - low
    aliasing = float((high - low) + np.exp(log_a2))
    upper = with_left_out(min(corrected + truncation + rounding, chernoff), plan.left_out)
    lower = max(corrected - aliasing - truncation - rounding, 0.0)
    estimate = min(max(corrected, lower), upper)
    errors = {"aliasing": aliasing, "truncation": truncation, "rounding": rounding, "nodes": k_max + 1}
    return Bounds(lower=lower, estimate=estimate, upper=upper), errors


def with_more_tails(plan: InversionPlan, log_mgf: Callable[[np.ndarray], np.ndarray]) -> InversionPlan:
    """The plan with more Chernoff exponents ``k'`` for its upper aliasing bound (:data:`_MORE_TAIL_FACTORS`,
    :data:`_MORE_TAIL_SHIFTS`; ``log M`` there from ``log_mgf``, proven upper bounds on the real axis), for a caller
    whose plan missed its accuracy through the aliasing alone: only the lower end changes (the upper end holds
    whatever bounds the aliasing), and only where some new ``k'`` bounds it better.

    Below the epsilon a plan was made for, the best ``k'`` moves: q 1e-4, sigma 0.6, 10^4 steps, the plan made at
    1.18 (damping 5.96) queried at the answer 0.275 bounds the aliasing by 3.6e-11 at ``k' = 6.56``, the best of
    the plan's seven, and by 1e-17 at 6.96, where the cut law's ``log M`` turns steep; the plan then meets rtol and
    the second plan (20 ms) is not needed."""
    if plan.kappa <= 0.0:
        return plan
    tails = exact_tilt(np.concatenate((plan.kappa * _MORE_TAIL_FACTORS, plan.kappa + _MORE_TAIL_SHIFTS)))
    values = np.real(log_mgf(tails.astype(np.complex128)))
    keep = np.isfinite(values) & (tails > plan.kappa)
    refined = dataclasses.replace(plan, kappa_tail=np.concatenate((plan.kappa_tail, tails[keep])),
                                  log_m_tail=np.concatenate((plan.log_m_tail, values[keep])))
    for name in _TAIL_FREE_PARTS:  # the contour's parts, formed once per plan, do not depend on the tails
        if name in plan.__dict__:
            refined.__dict__[name] = plan.__dict__[name]
    return refined


#: The cached properties of :class:`InversionPlan` that :func:`with_more_tails` carries over.
_TAIL_FREE_PARTS = ("contour", "frequency_weights", "moduli", "enclosure_parts", "contour_parts", "phasors",
                    "complement_parts")


def _lower_aliasing(plan, epsilon):
    """``(low, high)``: bounds on the lower aliasing ``A = sum_(j >= 1) e^(-kappa j T) delta(eps - jT)`` of a plan
    with ``kappa > 0`` ("lower aliasing" in the module docstring): ``A = m0 G(kappa T) - m1 e^eps G((kappa + 1) T) +
    C`` with ``G(y) = 1 / (e^y - 1)``, ``m0 = M(0)`` and ``m1 = M(-1)`` within the plan's ``mass_bounds`` and
    ``m1_bounds``, and ``0 <= C <= e^((1 + b) eps) M(-1 - b) G((kappa + 1 + b) T)`` for each order ``b`` of the plan.
    ``high`` is also at most ``m0 G(kappa T)`` (``delta <= m0``: the bound used before, with ``m0 <= 1``). Each
    value is a few roundings of its parts (``exp``, ``expm1``, a product or two): ``8u`` of the magnitudes involved
    is added or taken off, in the safe direction; where a part overflows, ``(0, G(kappa T))``."""
    kappa, period = plan.kappa, plan.period
    (m0_lo, m0_hi), (m1_lo, m1_hi) = plan.mass_bounds, plan.m1_bounds
    g0 = float(np.exp(-kappa * period) / -np.expm1(-kappa * period))
    high = m0_hi * g0 * (1.0 + 8.0 * _EPS)
    exponent = epsilon - (kappa + 1.0) * period
    if exponent > 600.0:
        return 0.0, high
    g1 = float(np.exp(exponent) / -np.expm1(-(kappa + 1.0) * period))  # e^eps G((kappa + 1) T)
    slack = 8.0 * _EPS * (g0 + g1)
    low = max(m0_lo * g0 - m1_hi * g1 - slack, 0.0)
    if m1_lo > 0.0 and plan.complement_tails.size:
        orders, base = plan.complement_parts
        values = base + (1.0 + orders) * epsilon
        best = float(np.min(values + 8.0 * _EPS * np.abs(values)))
        if best < 600.0:
            remainder = math.exp(best)
            high = min(high, (m0_hi * g0 - m1_lo * g1 + remainder) * (1.0 + 8.0 * _EPS) + slack)
    return low, max(high, low)


def _log_upper_aliasing(plan, epsilon):
    """``log`` of the upper aliasing bound ``M(k') e^(-k' eps) e^(-(k' - kappa) T) / (1 - e^(-(k' - kappa) T))``
    (module docstring) at the best of the plan's exponents ``k'`` (:attr:`InversionPlan.aliasing_parts`), raised by
    the rounding of ``k' eps`` and of the sum; ``inf`` where the plan has none."""
    tails, base = plan.aliasing_parts
    if tails.size == 0:
        return np.inf
    products = tails * epsilon
    return float(np.min(base - products + 8.0 * _EPS * np.abs(products)))


def with_left_out(upper: float, left_out: float) -> float:
    """``min(upper + left_out, 1)``, the addition rounded up: a cut law's delta exceeds its transform's by at most
    the mass left out ("Cut laws" in the module docstring)."""
    if left_out:
        upper = (upper + left_out) * (1.0 + 2.0 * _EPS)
    return min(upper, 1.0)
