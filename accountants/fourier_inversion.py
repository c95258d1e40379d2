"""Certified Fourier inversion: delta(epsilon) = E_P[(1 - e^(epsilon - L))_+] from the log MGF of L.

With ``g(x) = (1 - e^(eps - x))_+ e^(-kappa x)`` (damping ``kappa > 0``) and ``s = kappa + iu``::

    delta(eps) = (1 / 2 pi) int M(s) e^(-s eps) / (s (1 + s)) du,      M(s) = E_P[e^(s L)]

(the shifted-contour, Carr-Madan style pricing of the "option" ``(1 - e^(eps - L))_+``; it avoids the
difference of two nearly equal probabilities in thesis Lemma 3.1.4 (3)). The integral converges absolutely
(``|1/(s(1+s))| <= 1/u^2``). We sum it with the trapezoidal rule of step ``du = 2 pi / T`` over |k| <= K:

* aliasing: by Poisson summation the full trapezoidal sum equals ``sum_j E[e^(kappa L) g(L + jT)]``, whose
  j = 0 term is delta and whose other terms are >= 0. So the full sum is an upper bound, and it exceeds delta
  by at most ``e^(-kappa T)/(1 - e^(-kappa T)) + M(k') e^(-k' eps) e^(-(k' - kappa) T)/(1 - e^(-(k'-kappa) T))``
  for any ``k' > kappa`` (the second from a Chernoff bound on the upper tail of L);
* truncation: the terms beyond K sum to at most ``e^(-kappa eps) S(U) / (pi U)``, ``U = K du``, where
  ``S(U) >= sup_{u >= U} |M(kappa + iu)|`` is supplied by the mechanisms (``log_mgf_sup``);
* float64 rounding of each term is bounded and carried.

``upper = sum + truncation + rounding`` and ``lower = sum - aliasing - truncation - rounding``, so
``lower <= delta <= upper`` whenever ``S`` is a true bound; the Chernoff bound ``M(kappa) e^(-kappa eps)
kappa^kappa / (1 + kappa)^(1 + kappa)`` (the improved RDP conversion) caps ``upper``.
"""

import dataclasses

import numpy as np

from accountants.conversions import minimize_over_orders

__all__ = ["Bounds", "InversionPlan", "make_plan", "invert"]

_EPS = np.finfo(np.float64).eps
#: Largest damping used by the inversion (any damping > 0 is valid; this one bounds the cost).
MAX_DAMPING = 64.0


@dataclasses.dataclass(frozen=True)
class Bounds:
    """A numerical result as ``(lower, estimate, upper)``; getters that return one number return ``upper``."""

    lower: float
    estimate: float
    upper: float

    def __iter__(self):
        return iter((self.lower, self.estimate, self.upper))


@dataclasses.dataclass(frozen=True)
class InversionPlan:
    """Contour and grid of one inversion: damping ``kappa``, period ``period`` (step ``2 pi / period``),
    ``terms`` nodes, and the precomputed ``log M`` at the nodes."""

    kappa: float
    kappa_tail: float
    period: float
    terms: int
    log_m_nodes: np.ndarray
    log_m_kappa: float
    log_m_tail: float
    log_sup: float

    @property
    def step(self):
        return 2.0 * np.pi / self.period


def log_chernoff_constant(kappa):
    """``log(kappa^kappa / (1 + kappa)^(1 + kappa)) = max_x log((1 - e^-x) e^(-kappa x))``."""
    return kappa * np.log(kappa) - (1.0 + kappa) * np.log1p(kappa)


def chernoff_log_delta(log_mgf_real, epsilon):
    """Best ``log M(kappa) - kappa eps + log c(kappa)`` over ``kappa > 0`` and the ``kappa`` attaining it."""

    def objective(orders):
        kappa = np.asarray(orders) - 1.0
        return np.real(log_mgf_real(kappa)) - kappa * epsilon + log_chernoff_constant(kappa)

    grid = 1.0 + np.geomspace(1e-3, 1e3, 61)
    opt = minimize_over_orders(objective, grid, objective(grid), max_order=1e7)
    return opt.value, opt.order - 1.0


def make_plan(log_mgf, log_mgf_sup, epsilon, tolerance, *, max_terms=1 << 20, kappa=None):
    """Choose damping, period and number of nodes so that aliasing and truncation at ``epsilon`` are each at
    most ``tolerance`` (absolute), if ``max_terms`` nodes suffice; evaluate ``log M`` at the nodes."""
    if kappa is None:
        _, kappa = chernoff_log_delta(lambda k: log_mgf(k.astype(np.complex128)), epsilon)
    # Any damping gives valid bounds; very large ones (light-tailed losses far from their mean) make the
    # tilted integrands extreme and costly, so cap it.
    kappa = float(min(max(kappa, 1e-6), MAX_DAMPING))
    log_m_kappa = float(np.real(log_mgf(np.array([kappa], dtype=np.complex128))[0]))
    log_tol = np.log(tolerance / 2.0)
    # The Chernoff exponent k' > kappa for the upper-tail aliasing: pick the one needing the shortest period.
    tails = kappa * (1.0 + np.array([0.02, 0.05, 0.1, 0.2, 0.5, 1.0, 2.0])) + np.array([0, 0, 0, 0, 0, 0.5, 1.0])
    log_m_tails = np.real(log_mgf(tails.astype(np.complex128)))
    periods = (log_m_tails - tails * epsilon - log_tol) / (tails - kappa)
    best = int(np.nanargmin(np.where(np.isfinite(periods), periods, np.inf)))
    kappa_tail, log_m_tail, t2 = float(tails[best]), float(log_m_tails[best]), float(periods[best])
    t1 = -log_tol / kappa
    period = max(t1, t2, 1.0) * 1.05
    step = 2.0 * np.pi / period
    terms = 64
    while True:
        log_sup = log_mgf_sup(kappa, terms * step)
        trunc = np.exp(log_sup - kappa * epsilon) / (np.pi * terms * step)
        if trunc <= tolerance or terms >= max_terms:
            break
        terms *= 2
    nodes = kappa + 1j * step * np.arange(terms + 1)
    return InversionPlan(
        kappa=kappa,
        kappa_tail=kappa_tail,
        period=period,
        terms=terms,
        log_m_nodes=np.asarray(log_mgf(nodes), dtype=np.complex128),
        log_m_kappa=log_m_kappa,
        log_m_tail=log_m_tail,
        log_sup=float(log_sup),
    )


def invert(plan, epsilon):
    """``(Bounds, errors)`` for ``delta(epsilon)`` on a plan (any epsilon; the bounds are computed for it).

    Where the plan's scale overflows float64 at this epsilon (far from the epsilon it was made for), the
    result is the trivial interval ``[0, min(Chernoff, 1)]``.
    """
    kappa, step, k_max = plan.kappa, plan.step, plan.terms
    s = kappa + 1j * step * np.arange(k_max + 1)
    t = plan.log_m_nodes - s * epsilon - np.log(s) - np.log1p(s)
    peak = float(np.max(t.real))
    log_chernoff = plan.log_m_kappa - kappa * epsilon + log_chernoff_constant(kappa)
    chernoff = float(np.exp(min(log_chernoff, 0.0)))
    gap = plan.kappa_tail - kappa
    log_a2 = plan.log_m_tail - plan.kappa_tail * epsilon - gap * plan.period - np.log(-np.expm1(-gap * plan.period))
    log_trunc = plan.log_sup - kappa * epsilon - np.log(np.pi * k_max * step)
    if max(peak, log_a2, log_trunc) > 600.0:
        errors = {"aliasing": np.inf, "truncation": np.inf, "rounding": np.inf, "nodes": k_max + 1}
        return Bounds(lower=0.0, estimate=min(chernoff, 1.0), upper=min(chernoff, 1.0)), errors
    scaled = np.exp(t - peak)
    weights = np.ones(k_max + 1)
    weights[0] = 0.5
    total = float(np.sum(weights * scaled.real)) * np.exp(peak) * step / np.pi
    magnitude = float(np.sum(weights * np.abs(scaled) * (8.0 + np.abs(plan.log_m_nodes)))) * np.exp(peak)
    rounding = magnitude * _EPS * step / np.pi * (1.0 + np.log2(k_max + 1))
    truncation = float(np.exp(log_trunc))
    a1 = np.exp(-kappa * plan.period) / -np.expm1(-kappa * plan.period)
    aliasing = float(a1 + np.exp(log_a2))
    upper = min(total + truncation + rounding, chernoff, 1.0)
    lower = max(total - aliasing - truncation - rounding, 0.0)
    estimate = min(max(total, lower), upper)
    errors = {"aliasing": aliasing, "truncation": truncation, "rounding": rounding, "nodes": k_max + 1}
    return Bounds(lower=lower, estimate=estimate, upper=upper), errors
