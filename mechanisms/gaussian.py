"""The Gaussian mechanism (Mironov 2017, Prop 7; thesis Sec 2.4)."""

from __future__ import annotations

import dataclasses
import fractions
import functools
import math

import numpy as np
from numpy.typing import ArrayLike

from dpledger.mechanisms import (
    _logmath,
    _validate,
    closed_form_enclosures,
    loss_buckets,
    privacy_loss,
    subsampled_gaussian_cf,
    subsampled_gaussian_decay,
    subsampled_rdp,
)
from dpledger.mechanisms.base import Mechanism
from dpledger.mechanisms.relations import Direction

__all__ = ["GaussianMechanism", "analytic_gaussian_delta_bound", "analytic_gaussian_delta_bounds"]

_U = 2.0**-53


def analytic_gaussian_delta_bound(mu: float, epsilon: ArrayLike, upper: bool) -> np.ndarray:
    """A bound (``upper`` or lower) on ``delta(eps) = Phi(a) - e^eps Phi(a - mu)``, ``a = mu/2 - eps/mu`` (Balle &
    Wang 2018, Thm 8), at each real ``eps`` of an array.

    Computed as ``exp(log Phi(a)) (1 - exp(z))``, ``z = eps + log Phi(a - mu) - log Phi(a) <= 0``: ``log_ndtr`` is
    taken good to ``1e-13`` relative (scipy's is to a few ulps), the arguments' rounding moves each log by at most
    ``4u`` times ``|a| + 1`` (``|d log Phi(x) / dx| <= |x| + 1`` for ``x <= 0``, ``<= 1`` above), and the result's
    own roundings are a few ``u``; all are added with a factor 2 of room. Products of two factors each within a few
    ``u``: ``round_up`` / ``nextafter`` also cover subnormal results, and an upper bound that underflowed is the
    smallest positive float (``delta(eps) > 0`` for every finite ``eps``). An ``eps`` so large that the error terms
    overflow (searches probe up to 1e300) gives the trivial bounds 1 and 0.
    """
    eps = np.asarray(epsilon, dtype=np.float64)
    with np.errstate(under="ignore", over="ignore", invalid="ignore"):
        terms = _delta_terms(mu, eps)
        return _upper(*terms) if upper else _lower(*terms)


def _delta_terms(mu, eps):
    """``(log Phi(a), its error, z, its error)`` at ``eps``, an array or a numpy scalar (the same ufuncs on either):
    the terms of :func:`analytic_gaussian_delta_bound`'s docstring."""
    from scipy.special import log_ndtr

    a = 0.5 * mu - eps / mu
    b = a - mu
    la, lb = log_ndtr(a), log_ndtr(b)
    reach = abs(mu) + np.abs(eps / mu) + 1.0
    err_a = 2.0 * (1e-13 * np.abs(la) + 4.0 * _U * (np.abs(a) + reach) * (np.abs(a) + 1.0))
    err_b = 2.0 * (1e-13 * np.abs(lb) + 4.0 * _U * (np.abs(b) + reach) * (np.abs(b) + 1.0))
    z = eps + lb - la
    z_err = err_a + err_b + 4.0 * _U * (np.abs(eps) + np.abs(lb) + np.abs(la))
    return la, err_a, z, z_err


def _upper(la, err_a, z, z_err):
    value = _logmath.round_up(np.exp(la + err_a) * -np.expm1(np.minimum(z - z_err, 0.0)), 16)
    return np.where(np.isnan(value), 1.0, np.minimum(np.maximum(value, 5e-324), 1.0))


def _lower(la, err_a, z, z_err):
    value = np.exp(la - err_a) * -np.expm1(np.minimum(z + z_err, 0.0))
    value = np.nextafter(np.nextafter(value * (1.0 - 16.0 * _U), 0.0), 0.0)
    return np.where(np.isnan(value), 0.0, np.maximum(value, 0.0))


def analytic_gaussian_delta_bounds(mu: float, epsilon: float) -> tuple[float, float]:
    """``(lower, upper)`` of ``delta(eps) = Phi(a) - e^eps Phi(a - mu)``, ``a = mu/2 - eps/mu`` (any real ``eps``):
    :func:`analytic_gaussian_delta_bound` at one point, both sides from the same terms (numpy scalars: a one-run
    query makes dozens of these calls)."""
    with np.errstate(under="ignore", over="ignore", invalid="ignore"):
        terms = _delta_terms(float(mu), np.float64(epsilon))
        return float(_lower(*terms)), float(_upper(*terms))


def _cut_keyword(cut):
    """``cut`` as the keyword of :mod:`mechanisms.subsampled_gaussian_cf`'s functions, left out for the full law
    (``cut = inf``, their default): the full law's calls stay exactly as they were."""
    return {} if cut == math.inf else {"cut": cut}


@functools.lru_cache(maxsize=4096)
def _rdp_slope_up(sensitivity, sigma):
    """``sensitivity^2 / (2 sigma^2)`` rounded up, in exact rational arithmetic (a pure function of the two floats,
    kept: ledgers and searches ask for the same mechanisms' slopes again and again)."""
    exact = fractions.Fraction(sensitivity) ** 2 / (2 * fractions.Fraction(sigma) ** 2)
    return _logmath.fraction_up(exact)


@dataclasses.dataclass(frozen=True, slots=True)
class GaussianMechanism(Mechanism):
    """Adds N(0, sigma^2) noise to each coordinate of a query with L2 sensitivity ``sensitivity``.

    RDP (exact, add-or-remove-one): ``epsilon(alpha) = alpha * sensitivity^2 / (2 sigma^2)`` (Mironov 2017,
    Prop 7); no pure-DP guarantee (``inf`` at alpha = inf).

    Rounding: the returned value is at or above the exact value at every order in (1, inf), and a few floats
    above it at most (two upward roundings, each of relative size at most ``EPS``).
    ``c = sensitivity^2 / (2 sigma^2)`` is rounded up once in exact rational arithmetic
    (:func:`~mechanisms._logmath.fraction_up`), and ``alpha * c`` is rounded up with an error-free product
    (:func:`~mechanisms._logmath.mul_up`); no cancellation occurs, also for orders near 1, and a ``c`` below
    the smallest float is the smallest positive float, never 0.

    Pearson-Vajda condition (thesis condition (2.2), needed by the tight subsampling bound of thesis
    Thm 2.3.4): **holds**. For neighbouring inputs the output pair is ``(N(f(X), sigma^2 I), N(f(X'), sigma^2
    I))``; the likelihood ratio depends only on the projection onto ``f(X) - f(X')``, so every divergence equals
    that of the one-dimensional pair ``(N(sqrt(s), 1), N(0, 1))`` with ``sqrt(s) = ||f(X) - f(X')||_2 / sigma``
    (reflection and translation map the reversed pair to the same form). Thesis Thm 2.5.5 (proof of Prop
    2.3.6) shows ``E_mu[(pi/mu - 1)^l] >= 0`` for every odd ``l`` and every ``s >= 0``: the expression is 0 at
    ``s = 0`` and its derivative in ``s`` is ``l (l - 1)/2 E_mu[(pi/mu)^2 (pi/mu - 1)^(l-2)]``, which is at least
    ``l (l - 1)/2 E_mu[(pi/mu - 1)^(l-2)] >= 0`` by thesis Lemma 2.5.4 and induction over odd ``l``.

    Examples
    --------
    >>> GaussianMechanism(sigma=2.0).rdp([2.0, 10.0]).tolist()
    [0.25, 1.25]
    """

    sigma: float
    sensitivity: float = dataclasses.field(default=1.0, kw_only=True)

    satisfies_pearson_vajda = True  # thesis Prop 2.3.6 (proof: thesis Thm 2.5.5)
    has_subsampled_enclosure = True  # mechanisms.subsampled_gaussian_cf

    def __post_init__(self):
        object.__setattr__(self, "sigma", _validate.positive(self.sigma, "sigma", "GaussianMechanism"))
        object.__setattr__(
            self, "sensitivity", _validate.positive(self.sensitivity, "sensitivity", "GaussianMechanism")
        )

    @property
    def noise_multiplier(self) -> float:
        """``sigma / sensitivity``: the only quantity the privacy curves depend on."""
        return self.sigma / self.sensitivity

    def _rdp(self, orders):
        return np.where(np.isinf(orders), np.inf, _logmath.mul_up(orders, self._rdp_slope()))

    def _rdp_slope(self):
        """``sensitivity^2 / (2 sigma^2)`` rounded up, in exact rational arithmetic (:func:`_rdp_slope_up`)."""
        return _rdp_slope_up(float(self.sensitivity), float(self.sigma))

    def _log_mgf(self, s):
        """Pair (N(sensitivity, sigma^2), N(0, sigma^2)): ``L ~ N(mu^2/2, mu^2)``, ``mu = 1/noise_multiplier``."""
        return privacy_loss.gaussian_log_mgf(s, 1.0 / self.noise_multiplier)

    def _log_mgf_enclosure(self, s):
        """:func:`mechanisms.closed_form_enclosures.gaussian_log_mgf_enclosure` with ``mu^2`` formed as ``mu mu``,
        ``mu = 1 / (sigma / sensitivity)``: three roundings, within ``3u`` of the exact ``(sensitivity / sigma)^2``
        (``2 eps`` allowed)."""
        mu = 1.0 / self.noise_multiplier
        return closed_form_enclosures.gaussian_log_mgf_enclosure(s, mu * mu, 2.0 * _logmath.EPS)

    def log_mgf_sup(self, real_part: float, u_min: float) -> float:
        """Exact: ``Re log M(c + iu) = mu^2 (c (c + 1) - u^2) / 2`` decreases in ``|u|``."""
        mu2 = self.noise_multiplier**-2
        return 0.5 * mu2 * (real_part * (real_part + 1.0) - u_min * u_min)

    has_exact_profile = True

    def delta_bounds_one_run(self, epsilon: float, direction: Direction) -> tuple[float, float]:
        """The analytic Gaussian mechanism (Balle & Wang 2018, Thm 8), the same in both directions (symmetric
        pair): ``delta(eps) = Phi(mu/2 - eps/mu) - e^eps Phi(-mu/2 - eps/mu)``, ``mu = 1 / noise_multiplier``;
        :func:`analytic_gaussian_delta_bounds`."""
        return analytic_gaussian_delta_bounds(1.0 / self.noise_multiplier, epsilon)

    def gaussian_loss_noise_multiplier(self) -> float | None:
        return self.noise_multiplier

    def subsampled_rdp_bound(self, orders: ArrayLike, sampling_probability: float) -> np.ndarray:
        """The exact series of Mironov, Talwar & Zhang 2019 at non-integer orders up to
        ``subsampled_rdp.EXACT_MAX_ORDER`` (:func:`mechanisms.subsampled_rdp.gaussian_fractional_rdp`); NaN at
        the others (``PoissonSubsampled`` has its own bounds there)."""
        orders = np.asarray(orders, dtype=np.float64)
        values = np.full(orders.shape, np.nan)
        series = np.isfinite(orders) & (orders != np.round(orders)) & (orders <= subsampled_rdp.EXACT_MAX_ORDER)
        if series.any():
            values[series] = subsampled_rdp.gaussian_fractional_rdp(
                orders[series], sampling_probability, self.noise_multiplier)
        return values

    has_loss_buckets = True
    has_subsampled_loss_buckets = True
    loss_is_discrete = False

    def loss_buckets(self, edges: ArrayLike, direction: Direction) -> loss_buckets.LossBuckets:
        """Bucket masses of ``L ~ N(mu^2/2, mu^2)`` (both directions;
        :func:`mechanisms.loss_buckets.subsampled_gaussian_buckets` at ``q = 1``)."""
        return loss_buckets.subsampled_gaussian_buckets(1.0 / self.noise_multiplier, 1.0, edges, True)

    def subsampled_loss_buckets(
        self, edges: ArrayLike, direction: Direction, sampling_probability: float
    ) -> loss_buckets.LossBuckets:
        """:func:`mechanisms.loss_buckets.subsampled_gaussian_buckets` of the Poisson-subsampled pair."""
        return loss_buckets.subsampled_gaussian_buckets(
            1.0 / self.noise_multiplier, sampling_probability, edges, direction is Direction.REMOVE)

    def subsampled_log_f_enclosure(
        self, a: float, v: ArrayLike, sampling_probability: float, *, cut: float = math.inf
    ) -> tuple[np.ndarray, np.ndarray]:
        """Proven enclosure of the subsampled pair's ``F(a + iv)``, or with a finite ``cut`` of its body ``F_b(a +
        iv) = E[B(X)^(a + iv); X <= cut]`` (:func:`mechanisms.subsampled_gaussian_cf.log_f_enclosure`)."""
        return subsampled_gaussian_cf.log_f_enclosure(
            a, v, sampling_probability, 1.0 / self.noise_multiplier, **_cut_keyword(cut))

    def subsampled_log_f_real_enclosure(
        self, a: ArrayLike, sampling_probability: float, *, cut: float = math.inf
    ) -> tuple[np.ndarray, np.ndarray]:
        """The same at many real ``a`` on one shared layout
        (:func:`mechanisms.subsampled_gaussian_cf.log_f_real_enclosure`)."""
        return subsampled_gaussian_cf.log_f_real_enclosure(
            a, sampling_probability, 1.0 / self.noise_multiplier, **_cut_keyword(cut))

    def subsampled_log_f_sup(
        self, a: float, v_min: float, sampling_probability: float, *, cut: float = math.inf
    ) -> float:
        """Proven decay bound, of ``F`` or (finite ``cut``) of ``F_b``
        (:func:`mechanisms.subsampled_gaussian_decay.log_f_sup`)."""
        return subsampled_gaussian_decay.log_f_sup(
            a, v_min, sampling_probability, 1.0 / self.noise_multiplier, **_cut_keyword(cut))

    def _output_quadrature(self, max_frequency, tilt, gamma=None):
        return privacy_loss.gaussian_output_quadrature(1.0 / self.noise_multiplier, max_frequency, tilt, gamma)
