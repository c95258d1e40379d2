"""The generalized sparse vector technique (thesis Ch. 7, Algorithm 11) as an immutable mechanism description."""

from __future__ import annotations

import dataclasses
import functools
import math

import numpy as np

from dpledger.mechanisms import _logmath, _svt_moments, _validate
from dpledger.mechanisms.base import Mechanism
from dpledger.mechanisms.errors import MissingCapabilityError
from dpledger.mechanisms.gaussian import GaussianMechanism
from dpledger.mechanisms.laplace import LaplaceMechanism
from dpledger.mechanisms.randomized_response import PureDPMechanism

__all__ = ["SparseVector"]

_NOISES = (GaussianMechanism, LaplaceMechanism)


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class SparseVector(Mechanism):
    """Generalized SVT (thesis Algorithm 11, RESAMPLE = False): the threshold ``T`` is perturbed once by the
    ``threshold`` noise, each query answer ``q_i(D)`` by fresh ``queries`` noise, and the released vector of
    ``bot``/``top`` answers stops at the ``cutoff``-th ``top`` or after ``max_length`` queries (``None``:
    unbounded).

    ``threshold`` and ``queries`` are noise-adding mechanisms (a :class:`GaussianMechanism` or a
    :class:`LaplaceMechanism`, thesis Def 7.1.1) with the same ``sensitivity`` ``Delta``, the sensitivity of
    every query. As in thesis Thm 7.2.1, ``eps_rho`` is the RDP of the threshold noise at sensitivity
    ``Delta`` and ``eps_nu`` that of the query noise at sensitivity ``2 Delta`` (so Algorithm 10's
    ``Lap(2 Delta / epsilon_2)`` query noise is ``LaplaceMechanism(scale=2 Delta / epsilon_2,
    sensitivity=Delta)``). ``nonnegative_queries`` states the query model (``Q_+(Delta)`` of thesis Def 7.2.4
    if True, ``Q(Delta)`` otherwise); every bound below holds in both models.

    ``rdp(alpha)`` is the smallest of the bounds that apply (each a proven upper bound):

    * **Thm 7.2.1 (7.3)**, ``cutoff = 1`` and ``eps_nu(inf) < inf`` (Laplace query noise; Remark 7.2.2):
      ``eps_rho(alpha) + eps_nu(inf)``, any ``max_length``;
    * **Thm 7.2.1 (7.1)** with ``sup_z E[K | rho = z] <= 1 + max_length`` (Remark 7.2.3), ``cutoff = 1``,
      finite ``max_length``: ``eps_rho(alpha) + eps_nu(alpha) + log(1 + max_length) / (alpha - 1)``;
    * **Thm 7.2.7**, ``cutoff = c > 1``, finite ``max_length``:
      ``eps_rho(alpha) + c eps_nu(alpha) + (1 + log sum_{k=0}^{c} C(max_length, k)) / (alpha - 1)``;
    * **Lemma 7.1.3** (Lyu et al. 2017, Alg. 1), both noises Laplace, any cutoff and length: pure
      ``eps = eps_rho(inf) + c eps_nu(inf)``-DP, hence the RDP of randomized response with ``p = e^eps / (1 +
      e^eps)``, which dominates every ``eps``-DP pair (Kairouz, Oh & Viswanath 2015, Thm 2.4;
      :class:`PureDPMechanism`): at most ``eps`` and ``alpha eps^2 / 2`` (Bun & Steinke 2016, Prop 3.3);
    * **non-negative queries** (``nonnegative_queries=True`` with the public threshold ``margin=T``; both noises
      Gaussian, ``cutoff = 1``, any ``max_length`` including None): on ``Q_+(Delta)``, given ``rho = z``,
      ``E[K | z] <= h(z) = sum_{j=0}^{k_max} Phi((T + z) / sigma_2)^j`` (``1 / (1 - Phi)`` unbounded; thesis
      proof of Prop 7.6.5, with ``E[K]`` where the thesis writes ``E[K] - 1``). Two bounds use it, see
      :func:`_margin_envelope`: the last step of the proof of Thm 7.2.1 before Holder's inequality, which for
      Gaussian threshold noise is exactly ``eps_rho(alpha) + eps_nu(alpha) + log E_{N(alpha Delta,
      sigma_1^2)}[h] / (alpha - 1)`` (needs ``sigma_2 > sigma_1`` if unbounded); and **Thm 7.2.1 (7.2)**
      ``(alpha - (gamma-1)/gamma) / (alpha - 1) eps_rho(gamma alpha / (gamma - 1)) + eps_nu(alpha) + log
      E_{N(0, sigma_1^2)}[h^gamma] / (gamma (alpha - 1))`` minimised over a grid of ``gamma > 1`` (each a valid
      bound; ``sigma_2^2 > gamma sigma_1^2`` if unbounded). The moments are integrated with a proven upper
      Riemann sum and tail bound (:mod:`mechanisms._svt_moments`). This is the provable form of **Prop
      7.2.5**; the printed statement is not used, because its derivation (thesis Prop 7.6.5 and (7.2)) has
      three faults: (i) the RDP's first term ``alpha Delta^2 / sigma_1^2`` is ``eps_rho(2 alpha)``, but (7.2)
      at ``gamma = 2`` gives ``(alpha - 1/2) / (alpha - 1) eps_rho(2 alpha)``, larger by ``alpha Delta^2 /
      (2 (alpha - 1) sigma_1^2)``; (ii) (7.13) bounds ``E[K | z]`` by ``Phi / (1 - Phi)``, which is ``E[K] -
      1``; (iii) the step ``int_{-inf}^{y} ... <= Phi(y / sigma_1)`` needs ``Phi / (1 - Phi) <= 1`` below
      ``y``, false there (it reaches ``Phi(1) / (1 - Phi(1)) = 5.3`` at ``x = 1``). The mpmath oracle finds no
      instance where the printed bound fails (it is loose on small instances), but it is not proven.
      The margin must be at least the threshold the runner uses (the bound grows with ``T``);
      ``SparseVectorRunner`` checks this. Reported at order ``alpha``: the smallest value at the grid orders
      ``>= alpha`` of ``_svt_moments.GRID_ORDERS`` (none above the grid: ``+inf`` from this bound), which keeps
      the curve non-decreasing in the order.

    At ``alpha = inf`` the two length-dependent bounds give nothing (``+inf``). Where no bound applies (Gaussian
    query noise with ``max_length=None``; thesis Remark 7.2.3: the RDP is then not bounded by these theorems)
    the constructor raises ``ValueError``. In the ``Q(Delta)`` model (7.2) is never below (7.1) (with
    ``sup_z E[K | z] <= 1 + k_max`` the only data-independent moment bound, ``g(beta) = (beta - 1)
    eps_rho(beta)`` is convex with ``g(0) = 0``, so ``g(gamma* alpha) / gamma* >= g(alpha)``), so it is used
    only with ``margin`` on ``Q_+(Delta)``.

    Rounding: ``eps_rho`` and ``eps_nu`` are the noises' own rounded-up curves; ``c eps_nu`` and the sums are
    rounded up (:func:`~mechanisms._logmath.mul_up`, :func:`~mechanisms._logmath.add_up`); the logarithm of the
    exact integer count and its division by ``alpha - 1`` (exact for ``alpha < 2^53``) are rounded up by
    :func:`~mechanisms._logmath.round_up` with 4 ulps each.

    The mechanism has no dominating pair (the base class's default): the characteristic-function and
    privacy-buckets accountants refuse it with ``MissingCapabilityError``; account for it with
    ``RDPAccountant``.

    Examples
    --------
    >>> svt = SparseVector(threshold=LaplaceMechanism(scale=2.0), queries=LaplaceMechanism(scale=4.0))
    >>> float(svt.rdp(float("inf")))
    1.0
    """

    threshold: Mechanism
    queries: Mechanism
    cutoff: int = 1
    max_length: int | None = None
    nonnegative_queries: bool = False
    margin: float | None = None

    def __post_init__(self):
        owner = "SparseVector"
        for name in ("threshold", "queries"):
            noise = getattr(self, name)
            if type(noise) not in _NOISES:
                raise TypeError(
                    f"`{name}` of {owner} must be a GaussianMechanism or LaplaceMechanism (a noise-adding "
                    f"mechanism, thesis Def 7.1.1); got {noise!r}."
                )
        if self.threshold.sensitivity != self.queries.sensitivity:
            raise ValueError(
                f"`threshold` and `queries` of {owner} must have the same sensitivity Delta (that of every query); "
                f"got {self.threshold.sensitivity} and {self.queries.sensitivity}."
            )
        object.__setattr__(self, "cutoff", _validate.positive_int(self.cutoff, "cutoff", owner))
        if self.max_length is not None:
            object.__setattr__(self, "max_length", _validate.positive_int(self.max_length, "max_length", owner))
        if not isinstance(self.nonnegative_queries, (bool, np.bool_)):
            raise TypeError(f"`nonnegative_queries` of {owner} must be a bool; got {self.nonnegative_queries!r}.")
        object.__setattr__(self, "nonnegative_queries", bool(self.nonnegative_queries))
        if self.margin is not None:
            object.__setattr__(self, "margin", _validate.real(self.margin, "margin", owner))
            if not self.nonnegative_queries:
                raise ValueError(
                    f"`margin` of {owner} is only used by the bounds for non-negative queries (thesis Prop 7.2.5); "
                    "pass nonnegative_queries=True with it, or leave it None."
                )
        if not self._applicable():
            raise ValueError(
                f"No theorem bounds the RDP of {owner} with {type(self.queries).__name__} query noise, cutoff "
                f"{self.cutoff} and max_length=None: Thm 7.2.1 (7.1) and Thm 7.2.7 need a finite max_length, "
                "Thm 7.2.1 (7.3) and Lemma 7.1.3 need Laplace (pure-DP) query noise. Pass max_length=."
            )

    def _applicable(self):
        laplace_nu = type(self.queries) is LaplaceMechanism
        both_laplace = laplace_nu and type(self.threshold) is LaplaceMechanism
        return (self.max_length is not None or (self.cutoff == 1 and laplace_nu) or both_laplace
                or (self._uses_margin() and self.queries.sigma > self.threshold.sigma))

    def _uses_margin(self):
        """Whether the non-negative-query bounds (Thm 7.2.1 with the moments of Prop 7.6.5) apply."""
        return (self.margin is not None and self.cutoff == 1 and type(self.threshold) is GaussianMechanism
                and type(self.queries) is GaussianMechanism)

    def _margin_bound(self, orders):
        """The non-negative-query bound at each order (``+inf`` above the grid); see :func:`_margin_envelope`."""
        envelope = _margin_envelope(self.threshold.sigma, self.queries.sigma, self.threshold.sensitivity,
                                    self.margin, self.max_length)
        grid = _svt_moments.GRID_ORDERS
        index = np.searchsorted(grid, orders, side="left")
        padded = np.append(envelope, np.inf)
        return padded[np.minimum(index, grid.size)]

    @property
    def children(self) -> tuple[Mechanism, ...]:
        return (self.threshold, self.queries)

    def query_noise_at_double_sensitivity(self) -> Mechanism:
        """The query noise at sensitivity ``2 Delta``: the mechanism whose curve is ``eps_nu`` of Thm 7.2.1."""
        return dataclasses.replace(self.queries, sensitivity=2.0 * self.queries.sensitivity)

    def _log_count_term(self, orders):
        """``L / (alpha - 1)`` rounded up, with ``L`` Thm 7.2.1's ``log(1 + k_max)`` (cut-off 1) or Thm 7.2.7's
        ``1 + log sum_{k<=c} C(k_max, k)``; ``+inf`` at order inf."""
        k_max, c = self.max_length, self.cutoff
        if c == 1:
            log_count = _logmath.round_up(math.log(1 + k_max), 4)
        else:
            count = sum(math.comb(k_max, k) for k in range(min(c, k_max) + 1))
            log_count = _logmath.round_up(1.0 + math.log(count), 4)
        with np.errstate(divide="ignore"):
            term = _logmath.round_up(log_count / (orders - 1.0), 4)
        return np.where(np.isinf(orders), np.inf, term)

    def _length_bound_orders(self, orders):
        """Orders at which to evaluate the length-dependent bound for each requested order.

        The Renyi divergence is non-decreasing in the order (van Erven & Harremoes 2014, Thm 3), so a bound at
        any order ``alpha' >= alpha`` bounds the divergence at ``alpha``. With both noises Gaussian the bound is
        ``A alpha + L / (alpha - 1)``, smallest at ``alpha* = 1 + sqrt(L / A)``: orders below ``alpha*`` are
        evaluated at ``alpha*``, which makes the reported curve non-decreasing in the order. (``alpha*`` only
        chooses where to evaluate; validity needs nothing but ``alpha' >= alpha``.) Other noises: ``orders``.
        """
        if not (type(self.threshold) is GaussianMechanism and type(self.queries) is GaussianMechanism):
            return orders
        delta = self.threshold.sensitivity
        slope = delta**2 / (2.0 * self.threshold.sigma**2) + self.cutoff * (2.0 * delta) ** 2 / (
            2.0 * self.queries.sigma**2)
        log_count = float(self._log_count_term(np.array([2.0]))[0])  # L / (2 - 1)
        alpha_star = 1.0 + math.sqrt(log_count / slope)
        if not math.isfinite(alpha_star):
            return orders
        return np.where(np.isinf(orders), orders, np.maximum(orders, alpha_star))

    def _rdp(self, orders):
        c = self.cutoff
        eps_rho = np.asarray(self.threshold.rdp(orders), dtype=np.float64)
        nu = self.query_noise_at_double_sensitivity()
        eps_nu = np.asarray(nu.rdp(orders), dtype=np.float64)
        candidates = []
        laplace_nu = type(self.queries) is LaplaceMechanism
        if self.max_length is not None:  # Thm 7.2.1 (7.1) at c = 1, Thm 7.2.7 at c > 1
            at = self._length_bound_orders(orders)
            eps_rho_at, eps_nu_at = (eps_rho, eps_nu) if at is orders else (self.threshold.rdp(at), nu.rdp(at))
            base = _logmath.add_up(eps_rho_at, _logmath.mul_up(float(c), eps_nu_at))
            candidates.append(_logmath.add_up(base, self._log_count_term(at)))
        if c == 1 and laplace_nu:  # Thm 7.2.1 (7.3)
            candidates.append(_logmath.add_up(eps_rho, float(nu.rdp(np.inf))))
        if laplace_nu and type(self.threshold) is LaplaceMechanism:  # Lemma 7.1.3: pure DP
            pure = _logmath.add_up(float(self.threshold.rdp(np.inf)), _logmath.mul_up(float(c), float(nu.rdp(np.inf))))
            # an eps-DP mechanism has at most the RDP of randomized response with p = e^eps / (1 + e^eps)
            # (Kairouz, Oh & Viswanath 2015, Thm 2.4), below eps itself and below alpha eps^2 / 2
            candidates.append(np.asarray(PureDPMechanism(epsilon=float(pure)).rdp(orders), dtype=np.float64))
        if self._uses_margin():  # Thm 7.2.1 before Holder / (7.2) with the moments of Prop 7.6.5
            candidates.append(self._margin_bound(orders))
        if not candidates:  # the constructor refuses these; kept so that no path returns an unproven value
            raise MissingCapabilityError(f"No theorem bounds the RDP of {self!r}.")
        return np.minimum.reduce([np.broadcast_to(x, orders.shape) for x in candidates])


@functools.lru_cache(maxsize=256)
def _margin_envelope(sigma1, sigma2, sensitivity, margin, max_length):
    """Gaussian SVT, cut-off 1, queries in ``Q_+(Delta)``, margin ``T``: at each order ``g`` of
    ``_svt_moments.GRID_ORDERS``, the smallest of the bounds below over all grid orders ``>= g`` (suffix
    minimum; a bound at a larger order bounds the divergence at a smaller one), a read-only array.

    * the last inequality of the proof of thesis Thm 7.2.1 before Holder's inequality, ``E_{z ~ p_rho}[(p_rho(z
      - Delta) / p_rho(z))^alpha E[K | z]] e^{(alpha - 1) eps_nu(alpha)}``, with the Gaussian identity
      ``p_rho(z) (p_rho(z - Delta) / p_rho(z))^alpha = e^{(alpha - 1) eps_rho(alpha)} N(z; alpha Delta,
      sigma_1^2)`` (complete the square): ``eps_rho(alpha) + eps_nu(alpha) + log E_{z ~ N(alpha Delta,
      sigma_1^2)}[h(z)] / (alpha - 1)``; finite when ``sigma_2 > sigma_1`` or ``k_max`` is finite;
    * thesis (7.2) for each ``gamma`` in ``_svt_moments.HOLDER_GAMMAS``: ``(alpha - (gamma - 1)/gamma) /
      (alpha - 1) eps_rho(gamma alpha / (gamma - 1)) + eps_nu(alpha) + log E_{z ~ N(0, sigma_1^2)}[h(z)^gamma]
      / (gamma (alpha - 1))``; finite when ``sigma_2^2 > gamma sigma_1^2`` or ``k_max`` is finite.

    ``h(z) >= E[K | rho = z]`` on ``Q_+(Delta)`` and its moments are bounded from above by
    :func:`_svt_moments.log_gaussian_moment_up`.
    """
    rho = GaussianMechanism(sigma=sigma1, sensitivity=sensitivity)
    nu = GaussianMechanism(sigma=sigma2, sensitivity=2.0 * sensitivity)
    orders = _svt_moments.GRID_ORDERS
    eps_rho = np.asarray(rho.rdp(orders), dtype=np.float64)
    eps_nu = np.asarray(nu.rdp(orders), dtype=np.float64)
    values = [_svt_moments.tilted_bound(orders, eps_rho, eps_nu, sigma1, sigma2, sensitivity, margin, max_length)]
    for gamma in _svt_moments.HOLDER_GAMMAS:
        values.append(_svt_moments.holder_bound(orders, rho.rdp, eps_nu, sigma1, sigma2, margin, max_length, gamma))
    best = np.minimum.reduce(values)
    envelope = np.minimum.accumulate(best[::-1])[::-1].copy()
    envelope.setflags(write=False)
    return envelope
