"""The Laplace mechanism (Mironov 2017, Prop 6; thesis Sec 2.4)."""

from __future__ import annotations

import dataclasses
import fractions
import functools
import math

import numpy as np
from numpy.typing import ArrayLike

from dpledger.mechanisms import (
    _logmath,
    _tilts,
    _validate,
    closed_form_enclosures,
    loss_buckets,
    privacy_loss,
    subsampled_laplace_cf,
)
from dpledger.mechanisms.base import LossSplit, Mechanism
from dpledger.mechanisms.relations import Direction

__all__ = ["LaplaceMechanism"]


@dataclasses.dataclass(frozen=True, slots=True)
class LaplaceMechanism(Mechanism):
    """Adds Laplace(0, scale) noise to a query with L1 sensitivity ``sensitivity``.

    With ``lam = scale / sensitivity`` the exact RDP is (Mironov 2017, Prop 6)::

        epsilon(alpha) = log( alpha/(2 alpha - 1) * exp((alpha - 1)/lam)
                              + (alpha - 1)/(2 alpha - 1) * exp(-alpha/lam) ) / (alpha - 1)

    and ``epsilon(inf) = 1 / lam`` (pure DP).

    Rounding (every returned value is at or above the exact value, at every order in (1, inf]): with
    ``t = 1 / lam`` rounded up exactly (:func:`~mechanisms._logmath.ratio_up`; the RDP increases with ``t``)
    and ``d = alpha - 1`` (exact in float64 for ``alpha < 2^53``), the argument of the logarithm is ``1 + x``
    with the first-order terms cancelled analytically::

        x = (alpha E2(d t) + d E2(-alpha t)) / (2 alpha - 1),    E2(y) = e^y - 1 - y >= 0,

    since ``alpha (e^(d t) - 1) + d (e^(-alpha t) - 1) = alpha E2(d t) + d E2(-alpha t) + alpha d t -
    d alpha t``. Both terms are non-negative, so nothing cancels, also for orders within 1e-12 of 1 (the
    former form ``alpha expm1(d t) + (alpha - 1) expm1(-alpha t)`` with ``1 - 1/alpha`` rounded lost 5.6e-5 of
    the value at scale 5516, order 1 + 5e-9). Error bound (model of :mod:`mechanisms._logmath`): for
    ``d t <= 2``, ``E2`` has relative error at most ``13 EPS`` plus its condition ``|y E2'(y) / E2(y)| <= 2.9``
    times the rounding ``u`` of ``y``; three more roundings in ``x``, ``log1p`` (condition at most 1, plus
    ``EPS``) and the division by ``d``: at most ``18 EPS`` in all. For ``d t > 2`` the value is
    ``logaddexp(d t - log(2 - 1/alpha), log(d) - log(2 alpha - 1) - alpha t) / d``: the logarithm is at least
    ``d t - log 2 > 1.3`` and its absolute error at most ``EPS (d t / 2 + 5)``, at most ``8 EPS`` relative.
    The value is rounded up by :func:`~mechanisms._logmath.round_up` with 32 ulps, then clipped to ``t``
    (``epsilon(alpha) <= epsilon(inf) = t``). Above order ``2^53``, ``d`` and ``2 alpha - 1`` carry a rounding
    of ``u`` each, which the 32-ulp margin also covers. For ``t < 2^-400`` (where ``E2`` would underflow) the
    zCDP bound ``alpha t^2 / 2`` is used, rounded up: a ``t``-DP mechanism is ``t^2/2``-zCDP (Bun & Steinke
    2016, Prop 1.4), and there it matches the exact value to relative ``O(alpha t)``.

    Pearson-Vajda condition (thesis condition (2.2), needed by the tight subsampling bound of thesis
    Thm 2.3.4): **holds** for the mechanism's pair ``(Laplace(s, scale), Laplace(0, scale))`` with any shift
    ``|s| <= sensitivity`` (a scalar query; for vector queries thesis Remark 2.5.7 argues coordinatewise).
    Thesis Thm 2.5.6 (proof of Prop 2.3.6): ``f(s) = E_mu[(pi/mu - 1)^l]`` is 0 at ``s = 0``; its
    subderivative in ``s`` is non-negative for ``s > 0`` and non-positive for ``s < 0``, because on
    ``[s, inf)`` the integrand compares ``(e^(s/lam) - 1)^(l-1)`` with ``(e^(-s/lam) - 1)^(l-1)`` and on
    ``[0, s]`` with ``(e^((s - 2u)/lam) - 1)^(l-1)``, and ``e^v - 1 >= 1 - e^(-v) >= 1 - e^(-w)`` for
    ``0 <= w <= v`` (``l - 1`` is even). Hence ``f(s) >= 0`` for every ``s`` and both orderings of the pair.

    Examples
    --------
    >>> float(LaplaceMechanism(scale=1.0).rdp(float("inf")))
    1.0
    """

    scale: float
    sensitivity: float = dataclasses.field(default=1.0, kw_only=True)

    satisfies_pearson_vajda = True  # thesis Prop 2.3.6 (proof: thesis Thm 2.5.6)

    def __post_init__(self):
        object.__setattr__(self, "scale", _validate.positive(self.scale, "scale", "LaplaceMechanism"))
        object.__setattr__(
            self, "sensitivity", _validate.positive(self.sensitivity, "sensitivity", "LaplaceMechanism")
        )

    def _rdp(self, orders):
        t = _logmath.ratio_up(self.sensitivity, self.scale)
        pure = np.isinf(orders)
        a = np.where(pure, 2.0, orders)  # a placeholder order where the value is t
        d = a - 1.0  # exact below 2^53, else within u
        if t < 2.0**-400:  # t-DP implies t^2/2-zCDP (Bun & Steinke 2016, Prop 1.4)
            slope = _logmath.fraction_up(fractions.Fraction(t) ** 2 / 2)
            return np.where(pure, t, np.minimum(_logmath.mul_up(a, slope), t))
        with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
            dt = d * t
            near = dt <= 2.0
            a_n, d_n = np.where(near, a, 2.0), np.where(near, d, 1.0)
            x = (a_n * _logmath.expm1_minus_linear(d_n * t) + d_n * _logmath.expm1_minus_linear(-a_n * t)) / (
                2.0 * a_n - 1.0
            )
            small = np.log1p(x) / d_n
            a_f, d_f = np.where(near, 2.0, a), np.where(near, 1.0, d)
            log_big = np.logaddexp(
                d_f * t - np.log(2.0 - 1.0 / a_f), np.log(d_f) - np.log(2.0 * a_f - 1.0) - a_f * t
            )
            large = log_big / d_f
        value = _logmath.round_up(np.where(near, small, large), 32)
        value = np.minimum(value, t)
        return np.where(pure, t, value)

    def _log_mgf(self, s):
        """Pair (Laplace(sensitivity, scale), Laplace(0, scale)); closed form in :mod:`mechanisms.privacy_loss`."""
        return privacy_loss.laplace_log_mgf(s, self.laplace_loss_ratio())

    def _log_mgf_enclosure(self, s):
        """:func:`mechanisms.closed_form_enclosures.laplace_log_mgf_enclosure` (the pair of the float ``t``, at or
        above the exact ratio: :meth:`laplace_loss_ratio`)."""
        return closed_form_enclosures.laplace_log_mgf_enclosure(s, self.laplace_loss_ratio())

    def log_mgf_sup(self, real_part: float, u_min: float) -> float:
        """``|M(c + iu)| <= A (1 + 1/|1 + 2c + 2iu|)`` with ``A = (e^(ct) + e^(-t(1+c)))/2``: the two atoms of the
        loss do not decay, the continuous part decays like ``1/u``."""
        t, c = self.laplace_loss_ratio(), real_part
        log_a = np.logaddexp(c * t, -t * (1.0 + c)) - np.log(2.0)
        return float(log_a + np.log1p(1.0 / np.hypot(1.0 + 2.0 * c, 2.0 * u_min)))

    has_exact_profile = True

    def delta_bounds_one_run(self, epsilon: float, direction: Direction) -> tuple[float, float]:
        """One run's exact profile, the same in both directions (the pair is symmetric): ``delta(eps) = 1 - e^((eps
        - t) / 2)`` for ``0 <= eps < t``, 0 beyond (the loss is ``2x - t`` between the two means, where ``P(X > x) -
        e^eps Q(X > x)`` at ``x = (t + eps) / 2`` gives it; the atoms at ``+-t`` add nothing above ``eps``), with
        ``t`` the exact ratio. Rounding: ``(eps - t) / 2`` within ``u`` of itself (halving is exact), ``expm1``
        within ``2u``, the argument's error moving it by ``u |x e^x / expm1(x)| <= u (1 + |x|)``: both ends widened
        by twice that. The profile increases with ``t``: the upper end is taken at the float at or above the exact
        ratio (:meth:`laplace_loss_ratio`), the lower end at the float at or below it."""
        epsilon = _validate.nonnegative(epsilon, "epsilon", "LaplaceMechanism.delta_bounds_one_run")
        t_up = self.laplace_loss_ratio()
        exact = fractions.Fraction(self.sensitivity) / fractions.Fraction(self.scale)
        t_low = t_up if fractions.Fraction(t_up) == exact else float(np.nextafter(t_up, 0.0))

        def profile(t):
            if epsilon >= t:
                return 0.0, 0.0
            x = (epsilon - t) / 2.0
            return -math.expm1(x), 2.0 * (3.0 + abs(x)) * _logmath.EPS

        low, low_rel = profile(t_low)
        high, high_rel = profile(t_up)
        upper = min(float(_logmath.widen_up(high, high_rel)), 1.0) if high > 0.0 else 0.0
        return max(low * (1.0 - low_rel), 0.0), upper

    def laplace_loss_ratio(self) -> float | None:
        """``t = sensitivity / scale`` rounded up (exact rational rounding, :func:`mechanisms._logmath.ratio_up`): the
        pair of a larger shift dominates, so the float pair the accountants price stays a dominating pair."""
        return float(_logmath.ratio_up(self.sensitivity, self.scale))

    has_loss_buckets = True
    has_subsampled_loss_buckets = True
    loss_is_discrete = False

    def loss_buckets(self, edges: ArrayLike, direction: Direction) -> loss_buckets.LossBuckets:
        """Bucket masses of the Laplace loss (two atoms and a uniform-in-log part; both directions alike):
        :func:`mechanisms.loss_buckets.subsampled_laplace_buckets` at ``q = 1``."""
        return loss_buckets.subsampled_laplace_buckets(self.laplace_loss_ratio(), 1.0, edges, True)

    def subsampled_loss_buckets(
        self, edges: ArrayLike, direction: Direction, sampling_probability: float
    ) -> loss_buckets.LossBuckets:
        """:func:`mechanisms.loss_buckets.subsampled_laplace_buckets` of the Poisson-subsampled pair."""
        return loss_buckets.subsampled_laplace_buckets(
            self.laplace_loss_ratio(), sampling_probability, edges, direction is Direction.REMOVE)

    def _output_quadrature(self, max_frequency, tilt, gamma=None):
        return privacy_loss.laplace_output_quadrature(self.sensitivity / self.scale, max_frequency)

    # ------------------------------------------------------------------ Poisson-subsampled characteristic function
    has_subsampled_enclosure = True  # mechanisms.subsampled_laplace_cf
    subsampled_enclosure_range_is_fixed = True  # its continuous part lives on [-t, t]

    def subsampled_log_f_enclosure(
        self, a: float, v: ArrayLike, sampling_probability: float, *, cut: float = math.inf
    ) -> tuple[np.ndarray, np.ndarray]:
        """Proven enclosure of the subsampled pair's ``F(a + iv)``: two atoms in closed form and the continuous part
        by quadrature with every error bounded (:func:`mechanisms.subsampled_laplace_cf.log_f_enclosure`; the pair
        of the float ``t``, :meth:`laplace_loss_ratio`). Only the whole law (``cut = inf``)."""
        _whole_law(cut)
        return subsampled_laplace_cf.log_f_enclosure(a, v, sampling_probability, self.laplace_loss_ratio())

    def subsampled_log_f_real_enclosure(
        self, a: ArrayLike, sampling_probability: float, *, cut: float = math.inf
    ) -> tuple[np.ndarray, np.ndarray]:
        """:meth:`subsampled_log_f_enclosure` at many real ``a``
        (:func:`mechanisms.subsampled_laplace_cf.log_f_real_enclosure`)."""
        _whole_law(cut)
        return subsampled_laplace_cf.log_f_real_enclosure(a, sampling_probability, self.laplace_loss_ratio())

    def subsampled_log_f_sup(
        self, a: float, v_min: float, sampling_probability: float, *, cut: float = math.inf
    ) -> float:
        """:func:`mechanisms.subsampled_laplace_cf.log_f_sup`: the atoms do not decay, the continuous part like
        ``1 / |v|``."""
        _whole_law(cut)
        return subsampled_laplace_cf.log_f_sup(a, v_min, sampling_probability, self.laplace_loss_ratio())

    def subsampled_loss_split(self, sampling_probability: float) -> dict[str, LossSplit]:
        """Each direction's two atoms (:func:`mechanisms.subsampled_laplace_cf.atoms`), the decay bound of its
        continuous part (:func:`mechanisms.subsampled_laplace_cf.log_g_sup`: the remove direction's ``C(s) = G(1 +
        s)`` at the float ``fl(1 + c)``, widened by the rounding offset, the add direction's ``C(s) = G(-s)``) and its
        profile (:func:`mechanisms.subsampled_laplace_cf.continuous_profile`)."""
        g, t = float(sampling_probability), self.laplace_loss_ratio()
        atoms = subsampled_laplace_cf.atoms(g, t)

        def remove_sup(c, u_min):
            a, offset = _tilts.two_sum(1.0, float(c))
            return subsampled_laplace_cf.log_g_sup(float(a), u_min, g, t, a_error=abs(float(offset)))

        def add_sup(c, u_min):
            return subsampled_laplace_cf.log_g_sup(-float(c), u_min, g, t)

        return {d: LossSplit(atoms[d], sup, functools.partial(subsampled_laplace_cf.continuous_profile, g=g, t=t,
                                                              direction=d))
                for d, sup in (("remove", remove_sup), ("add", add_sup))}


def _whole_law(cut):
    """The subsampled Laplace enclosures are of the whole law: ValueError for a finite ``cut``."""
    if cut != math.inf:
        raise ValueError(f"the subsampled Laplace mechanism's characteristic function has no cut law; got cut={cut}.")
