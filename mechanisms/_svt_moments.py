"""Stopping-time moments of the Gaussian SVT on non-negative queries (thesis Def 7.2.4, Prop 7.2.5 / 7.6.5),
and the RDP bounds of thesis Thm 7.2.1 that use them. Private helper of :mod:`mechanisms.sparse_vector`.

Setting: Algorithm 11 with cut-off 1, threshold noise ``rho ~ N(0, sigma_1^2)``, query noise ``nu_i ~ N(0,
sigma_2^2)``, public threshold (margin) ``T``, queries in ``Q_+(Delta)``. Given ``rho = z`` the answers are
independent; query ``i`` is answered bot when ``q_i(D') + nu_i < T + z``, which for ``q_i(D') >= 0`` has
probability at most ``Phi(x)``, ``x = (T + z) / sigma_2``. Hence (thesis Lemma 7.6.4, ``E[K] = sum_k P(K > k)``)

    E[K | rho = z] <= h(z) := sum_{j=0}^{k_max} Phi(x)^j = (1 - Phi(x)^{k_max + 1}) / (1 - Phi(x)),

``h(z) = 1 / (1 - Phi(x))`` when ``k_max`` is unbounded. (The thesis' (7.13) writes ``Phi / (1 - Phi)``, the
expected number of bots, ``E[K] - 1``: one short of ``E[K]``, which is what the proof of Thm 7.2.1 needs.)
``h`` is non-decreasing in ``z``.

:func:`log_gaussian_moment_up` bounds ``log E_{z ~ N(m, sigma_1^2)}[h(z)^gamma]`` from above, rigorously:

* cells ``[z_j, z_{j+1}]`` of a grid: ``h`` is non-decreasing, so each cell contributes at most
  ``h(z_{j+1})^gamma P(z in cell)``; the left tail ``(-inf, z_0]`` at most ``h(z_0)^gamma P(z <= z_0)``;
* the right tail ``[z_N, inf)``: with ``k_max`` finite ``h <= k_max + 1``; unbounded, the log-integrand
  ``f(z) = log N(z; m, sigma_1^2) - gamma log(1 - Phi(x))`` has ``f'' = -1/sigma_1^2 + gamma lambda'(x) /
  sigma_2^2`` with ``lambda = phi / (1 - Phi)`` the normal hazard, ``0 < lambda' < 1`` (Sampford 1953), so ``f``
  is concave when ``sigma_2^2 > gamma sigma_1^2`` (the condition of thesis Prop 7.6.5) and, with ``f'(z_N) <
  0``, ``int_{z_N}^inf e^f <= e^{f(z_N)} / |f'(z_N)|`` (tangent line above a concave function);
* float error: every term is a product of ``log_ndtr`` / ``ndtr`` values and ``exp`` of sums of a few terms
  (relative error well below ``1e-12`` each, including the cancellation in cell masses, which are computed from
  whichever tail is smaller); the sum is widened by a relative ``1e-9`` before the logarithm, and the logarithm
  by ``1e-12`` absolute.

Without a finite ``k_max`` and with ``sigma_2^2 <= gamma sigma_1^2`` the moment is infinite: ``inf`` is
returned.
"""

from __future__ import annotations

import functools
import math

import numpy as np
from scipy import special

from dpledger.mechanisms import _logmath

__all__ = ["log_gaussian_moment_up", "HOLDER_GAMMAS", "GRID_ORDERS"]

#: Holder exponents gamma of thesis (7.2) tried (each gives a valid bound; the smallest is taken).
HOLDER_GAMMAS = tuple(float(g) for g in np.concatenate([1.0 + np.geomspace(0.01, 1.0, 12), np.geomspace(2.2, 64, 14)]))

#: Orders at which the margin-dependent bounds are evaluated; a requested order ``alpha`` gets the smallest value
#: at a grid order ``>= alpha`` (Renyi divergence is non-decreasing in the order: van Erven & Harremoes 2014,
#: Thm 3), which makes the reported curve non-decreasing and independent of the other requested orders.
GRID_ORDERS = 1.0 + np.geomspace(1e-2, 1e4, 161)

_CELLS = 10000
_SPAN = 14.0  # grid half-widths in standard deviations


def _log_h(z, margin, sigma2, max_length):
    """``log h(z)`` (see the module docstring)."""
    x = (margin + z) / sigma2
    log_tail = special.log_ndtr(-x)  # log(1 - Phi(x))
    if max_length is None:
        return -log_tail
    log_phi_cdf = special.log_ndtr(x)
    # h = (1 - Phi^(k+1)) / (1 - Phi), both from log Phi; where Phi rounds to 1 (log Phi = 0), h = k + 1 (its
    # supremum), so the value stays an upper bound
    with np.errstate(divide="ignore", invalid="ignore"):
        log_h = np.log(-np.expm1((max_length + 1) * log_phi_cdf)) - np.log(-np.expm1(log_phi_cdf))
    cap = math.log(max_length + 1.0)
    return np.where(np.isfinite(log_h), np.minimum(log_h, cap), cap)


def _log_cell_masses(a, b):
    """``log P(a < U <= b)`` for standard normal ``U``, from the smaller tail."""
    right = a >= 0
    lo = np.where(right, special.log_ndtr(-b), special.log_ndtr(a))
    hi = np.where(right, special.log_ndtr(-a), special.log_ndtr(b))
    with np.errstate(divide="ignore"):
        return hi + np.log1p(-np.exp(lo - hi))


@functools.lru_cache(maxsize=4096)
def log_gaussian_moment_up(sigma1: float, sigma2: float, margin: float, gamma: float, mean: float,
                           max_length: int | None) -> float:
    """An upper bound on ``log E_{z ~ N(mean, sigma1^2)}[h(z)^gamma]`` (module docstring); ``inf`` if that
    moment is infinite."""
    if max_length is None and sigma2 * sigma2 <= gamma * sigma1 * sigma1:
        return math.inf
    if max_length is None:
        tau2 = 1.0 / sigma1**2 - gamma / sigma2**2  # precision of the Gaussian part of the integrand
        peak = (mean / sigma1**2 + gamma * margin / sigma2**2) / tau2
        z_hi = max(peak, mean) + _SPAN / math.sqrt(tau2)
    else:
        z_hi = mean + _SPAN * sigma1
    z_lo = mean - _SPAN * sigma1
    z = np.linspace(z_lo, z_hi, _CELLS + 1)
    u = (z - mean) / sigma1
    log_h = _log_h(z, margin, sigma2, max_length)
    terms = [gamma * log_h[1:] + _log_cell_masses(u[:-1], u[1:]),
             np.array([gamma * log_h[0] + special.log_ndtr(u[0])])]
    if max_length is None:
        for _ in range(60):  # move z_hi right until the tangent bound applies
            x = (margin + z_hi) / sigma2
            hazard = math.exp(-0.5 * x * x - 0.5 * math.log(2 * math.pi) - float(special.log_ndtr(-x)))
            slope = -(z_hi - mean) / sigma1**2 + gamma * hazard / sigma2
            if slope < 0:
                break
            z_hi += 4.0 / math.sqrt(tau2)
        else:  # pragma: no cover - the slope tends to -inf since tau2 > 0
            return math.inf
        if z_hi > z[-1]:  # the extra stretch [z[-1], z_hi] as one cell
            extra = (gamma * float(_log_h(np.array([z_hi]), margin, sigma2, None)[0])
                     + float(_log_cell_masses(np.array([u[-1]]), np.array([(z_hi - mean) / sigma1]))[0]))
            terms.append(np.array([extra]))
        log_f = (-0.5 * ((z_hi - mean) / sigma1) ** 2 - math.log(sigma1 * math.sqrt(2 * math.pi))
                 + gamma * float(_log_h(np.array([z_hi]), margin, sigma2, None)[0]))
        terms.append(np.array([log_f - math.log(-slope)]))
    else:
        terms.append(np.array([gamma * math.log(max_length + 1.0) + float(special.log_ndtr(-u[-1]))]))
    total = float(special.logsumexp(np.concatenate(terms)))
    # widen: relative 1e-9 on the sum (log1p(1e-9) < 1e-9), then 1e-12 absolute on the log
    return float(_logmath.widen_up(total + 1e-9, 0.0, 1e-12 + 8 * _logmath.EPS * abs(total)))


def tilted_bound(orders, eps_rho, eps_nu, sigma1, sigma2, sensitivity, margin, max_length):
    """Thm 7.2.1 before Holder's inequality, Gaussian threshold noise (module :mod:`sparse_vector`):
    ``eps_rho(alpha) + eps_nu(alpha) + log E_{z ~ N(alpha Delta, sigma_1^2)}[h(z)] / (alpha - 1)``."""
    log_m = np.array([log_gaussian_moment_up(sigma1, sigma2, margin, 1.0, float(a) * sensitivity, max_length)
                      for a in orders])
    with np.errstate(invalid="ignore"):
        term = _logmath.round_up(log_m / (orders - 1.0), 4)
    return _logmath.add_up(_logmath.add_up(eps_rho, eps_nu), term)


def holder_bound(orders, rho_rdp, eps_nu, sigma1, sigma2, margin, max_length, gamma):
    """Thm 7.2.1 (7.2) with the moment of :func:`log_gaussian_moment_up` (mean 0):
    ``(alpha - 1/gamma*) / (alpha - 1) eps_rho(gamma* alpha) + eps_nu(alpha) + log M_gamma / (gamma (alpha - 1))``,
    ``gamma* = gamma / (gamma - 1)``; ``rho_rdp`` is the threshold noise's RDP function."""
    log_m = log_gaussian_moment_up(sigma1, sigma2, margin, gamma, 0.0, max_length)
    if not math.isfinite(log_m):
        return np.full(orders.shape, np.inf)
    g_star = gamma / (gamma - 1.0)
    coef = _logmath.round_up((orders - 1.0 / g_star) / (orders - 1.0), 4)
    rho_term = _logmath.mul_up(coef, np.asarray(rho_rdp(_logmath.round_up(g_star * orders, 2)), dtype=np.float64))
    moment_term = _logmath.round_up(log_m / (gamma * (orders - 1.0)), 4)
    return _logmath.add_up(_logmath.add_up(rho_term, eps_nu), moment_term)
