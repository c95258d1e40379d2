"""Fixed-size batches drawn without replacement: ``SampledWithoutReplacement`` and its replace-one RDP bound.

Two neighbouring relations, two different proofs:

* **add-or-remove-one** (dpledger's relation; the data sets have ``n`` and ``n - 1`` records, ``n`` public, and the
  batch has ``b`` records drawn uniformly from whichever set is used; thesis Sec 3.3.1, "subset sampling", with
  ``gamma = b / n``): thesis Thm 3.3.5(2). If ``(P, Q)`` dominates the mechanism on the batch for *replacing* one
  batch record, then ``((1 - gamma) P + gamma Q, P)`` dominates the sampled mechanism for removal and
  ``(P, (1 - gamma) P + gamma Q)`` for addition. A pair that dominates a symmetric relation for all
  ``alpha >= 0`` dominates it swapped too (``H_a(Q || P) = 1 - a + a H_(1/a)(P || Q)``), so these are exactly
  the two pairs of Poisson subsampling at rate ``gamma`` (thesis Thm 3.3.5(1)) of the batch mechanism's pair.
  The same coupling gives the Renyi divergences: with ``D = D' + {x}``, the batch of ``D`` is
  ``(1 - gamma)``-mixed over ``b``-subsets ``T`` of ``D'`` and ``gamma``-mixed over ``T - {y} + {x}`` with ``y``
  uniform in ``T``, so ``M(D) = E_T[(1 - gamma) M(T) + gamma M(T')]`` and ``M(D') = E_T[M(T)]`` with ``T, T'``
  differing by one replaced record; ``exp((alpha - 1) D_alpha)`` is jointly convex, so the sampled RDP is at
  most the Poisson-subsampled RDP (thesis Thm 2.3.1 / 2.3.4) of the batch mechanism's replace-one curve.
  Hence every curve of ``SampledWithoutReplacement`` under add-or-remove-one is ``PoissonSubsampled``'s at
  ``sampling_probability = b / n``, **with the batch mechanism described under replace-one**.

* **replace-one** (the data set keeps its ``n`` records, one is replaced): Wang, Balle & Kasiviswanathan 2019
  (AISTATS), Thm 9, an RDP upper bound at integer orders, :func:`replace_one_rdp`. dpledger's accountants
  report add-or-remove-one, so this curve is offered as :meth:`SampledWithoutReplacement.replace_one_rdp`
  and is not composed by them; no dominating pair for replace-one is proven here (thesis Thm 3.3.5(2) is an
  add/remove statement, and a pair valid only for ``alpha >= 1`` does not compose), so none is reported.

The batch mechanism's parameters are its replace-one description: for the sum of per-example gradients
clipped to norm ``C``, replacing one batch record moves the sum by up to ``2 C``, so ``sensitivity = 2 C``
(``GaussianMechanism(sigma=z * C, sensitivity=2 * C)``): half the noise multiplier that a Poisson-sampled sum
(add-or-remove sensitivity ``C``) enjoys.
"""

from __future__ import annotations

import dataclasses
import fractions
from collections.abc import Callable

import numpy as np
from numpy.typing import ArrayLike

from dpledger.mechanisms import _validate
from dpledger.mechanisms._logmath import EPS, ROUNDING, log_binom, log_expm1
from dpledger.mechanisms.base import Mechanism
from dpledger.mechanisms.gaussian import GaussianMechanism
from dpledger.mechanisms.gaussian_moments import log_gaussian_binomial_moments
from dpledger.mechanisms.loss_buckets import LossBuckets
from dpledger.mechanisms.relations import Direction
from dpledger.mechanisms.subsampled import PoissonSubsampled
from dpledger.mechanisms.subsampled_rdp import chord_rdp, pure_dp_bound

__all__ = ["SampledWithoutReplacement", "replace_one_gaussian_rdp", "replace_one_rdp"]

#: Integer orders above this use only the order-free caps in :func:`replace_one_rdp` (the sum has alpha terms).
REPLACE_ONE_MAX_ORDER = 4096


def _gaussian_brackets(c: fractions.Fraction, top: int) -> np.ndarray:
    """WBK19 Thm 27's bracket for ``j = 2..top`` (log, rounded up; ``inf`` beyond the moment table): for ``j = 2``
    ``4 (e^(2c) - 1) = 4 Delta^2 g(0)``, for ``j >= 3`` ``4 sqrt(Delta^(2 floor(j/2)) g(0) Delta^(2 ceil(j/2)) g(0))``
    (:mod:`mechanisms.gaussian_moments`). The caller takes the minimum with Thm 9's bracket."""
    moments = log_gaussian_binomial_moments(c)
    js = np.arange(2, top + 1)
    out = np.full(js.shape, np.inf)
    usable = 2 * ((js + 1) // 2) < moments.size
    lo = moments[2 * (js[usable] // 2)]
    hi = moments[2 * ((js[usable] + 1) // 2)]
    out[usable] = (np.log(4.0) + 0.5 * (lo + hi)) * (1.0 + ROUNDING) + ROUNDING
    return out


def _integer_replace_one_rdp(orders, gamma, rdp, gaussian_c=None):
    """Thm 9 of Wang, Balle & Kasiviswanathan 2019 at integer orders >= 2 (see :func:`replace_one_rdp`); with
    ``gaussian_c`` (the Gaussian batch mechanism's ``sensitivity^2 / (2 sigma^2)``, exact) each bracket is also
    capped by Thm 27's (see :func:`replace_one_gaussian_rdp`)."""
    orders = np.asarray(orders, dtype=np.float64)
    out = np.full(orders.shape, np.inf)
    eps_inf = float(rdp(np.array([np.inf]))[0])
    log_e_inf = float(log_expm1(eps_inf)) if np.isfinite(eps_inf) else np.inf  # log(e^eps(inf) - 1)
    direct = orders <= REPLACE_ONE_MAX_ORDER
    if not direct.any():
        return out
    top = int(orders[direct].max())
    js = np.arange(2, top + 1, dtype=np.float64)
    eps_j = np.asarray(rdp(js), dtype=np.float64)  # eps(j), j = 2..top
    eps2 = float(eps_j[0])
    log_g = np.log(gamma)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        # j = 2: min{4 (e^eps(2) - 1), e^eps(2) min{2, (e^eps(inf) - 1)^2}}
        two = min(np.log(4.0) + float(log_expm1(eps2)), eps2 + min(np.log(2.0), 2.0 * log_e_inf))
        # j >= 3: e^((j - 1) eps(j)) min{2, (e^eps(inf) - 1)^j}
        rest = (js - 1.0) * eps_j + np.minimum(np.log(2.0), js * log_e_inf)
        rest[0] = two
        if gaussian_c is not None:
            rest = np.minimum(rest, _gaussian_brackets(gaussian_c, top))
        base_terms = js * log_g + rest
        for idx in np.flatnonzero(direct):
            a = float(orders[idx])
            n = int(a) - 1  # j = 2..a
            log_c, _ = log_binom(a, js[:n])
            terms = log_c + base_terms[:n]
            finite = terms[np.isfinite(terms)]
            if np.isposinf(terms).any():
                continue  # stays inf
            peak = max(0.0, float(finite.max()) if finite.size else 0.0)
            mass = np.exp(-peak) + float(np.exp(finite - peak).sum())
            log_s = peak + np.log(mass)
            # rounding: each log-term is a sum of a few float64 values (log C, j log g, (j - 1) eps(j), a log)
            size = np.abs(log_c) + np.abs(js[:n] * log_g) + np.abs(np.nan_to_num(rest[:n], posinf=0.0)) + 4.0
            slack = ROUNDING * (1.0 + abs(log_s)) + 8.0 * EPS * float(size.max())
            out[idx] = (log_s + slack) / (a - 1.0) * (1.0 + ROUNDING)
    return out


def replace_one_rdp(orders: ArrayLike, gamma: float, rdp: Callable[[np.ndarray], np.ndarray]) -> np.ndarray:
    """RDP upper bound of a mechanism run on a batch of ``b = gamma n`` records drawn without replacement from
    ``n``, under **replace-one** (Wang, Balle & Kasiviswanathan 2019, Thm 9; non-integer orders by their Cor 10).

    With ``eps(.)`` the batch mechanism's replace-one RDP curve and integer ``alpha >= 2``::

        (alpha - 1) eps'(alpha) <= log(1 + gamma^2 C(alpha, 2) min{4 (e^eps(2) - 1),
                                                               e^eps(2) min{2, (e^eps(inf) - 1)^2}}
                                      + sum_{j=3}^{alpha} gamma^j C(alpha, j) e^((j-1) eps(j))
                                                          min{2, (e^eps(inf) - 1)^j})

    and, at every order, ``eps'(alpha) <= min(eps(alpha), log(1 + gamma (e^eps(inf) - 1)))`` (the coupled
    mixtures share the batches without the replaced record, and ``exp((alpha-1) D_alpha)`` is jointly convex;
    the second is Balle, Barthe & Gaboardi 2018's pure-DP amplification for this sampler and relation).
    Non-integer orders: the chord of the convex ``(alpha - 1) eps'(alpha)`` between integer orders (WBK19 Cor 10;
    in ``(1, 2)`` the chord from ``alpha = 1``). Orders above ``REPLACE_ONE_MAX_ORDER`` get only the caps.

    Parameters
    ----------
    orders : array_like of float
        Orders in (1, inf].
    gamma : float
        ``b / n`` in [0, 1].
    rdp : callable
        The batch mechanism's replace-one RDP curve (vectorised, orders in (1, inf]).

    Returns
    -------
    numpy.ndarray of float64
        Upper bounds, rounded up past float64 error; ``inf`` where none is finite.

    Examples
    --------
    >>> from dpledger.mechanisms import GaussianMechanism
    >>> g = GaussianMechanism(sigma=2.0)
    >>> bool(replace_one_rdp([2.0], 1.0, g.rdp)[0] >= g.rdp(2.0))
    True
    """
    gamma = _validate.probability(gamma, "gamma", "replace_one_rdp")
    orders = _validate.orders_array(orders, "replace_one_rdp").reshape(-1)
    return _replace_one(orders, gamma, rdp, None)


def replace_one_gaussian_rdp(orders: ArrayLike, gamma: float, sigma: float, sensitivity: float = 1.0) -> np.ndarray:
    """RDP upper bound of the Gaussian mechanism ``N(f(T), sigma^2 I)`` (``||f(T) - f(T')|| <= sensitivity`` for
    batches differing in one record) on a batch of ``b = gamma n`` records drawn without replacement from ``n``,
    under **replace-one**: Wang, Balle & Kasiviswanathan 2019, Thm 27 (their subsampled-Gaussian refinement of
    Thm 9, the bound dp_accounting's RDP accountant uses for this event), at the minimum with everything
    :func:`replace_one_rdp` proves.

    With ``c = sensitivity^2 / (2 sigma^2)``, ``g(k) = exp(k (k - 1) c) = e^((k-1) eps(k))`` and the forward
    differences ``Delta^m g(0) = E_Q[(P/Q - 1)^m]`` (:mod:`mechanisms.gaussian_moments`), at integer ``alpha``::

        (alpha - 1) eps'(alpha) <= log(1 + gamma^2 C(alpha, 2) min{4 (e^(2c) - 1), 2 e^(2c)}
                       + sum_{j=3}^{alpha} gamma^j C(alpha, j) min{4 sqrt(Delta^(2 floor(j/2)) g(0)
                                                                          Delta^(2 ceil(j/2)) g(0)),
                                                                  2 e^((j-1) eps(j))})

    termwise at most Thm 9's series for the Gaussian (whose ``eps(inf)`` is infinite), so the minimum with
    :func:`replace_one_rdp` is taken term by term; the moments are enclosed in exact interval arithmetic and
    rounded up, and terms with ``j`` beyond ``gaussian_moments.MOMENT_MAX_ORDER`` use Thm 9's bracket.
    Non-integer orders: the chord between integer orders (WBK19 Cor 10). The formula was transcribed from
    dp_accounting's implementation (``_compute_rdp_sample_wor_gaussian_int``, which cites Thm 27); this code is
    independent of it and is tested against the exact Renyi divergence of tiny instances (mpmath).

    Parameters
    ----------
    orders : array_like of float
        Orders in (1, inf].
    gamma : float
        ``b / n`` in [0, 1].
    sigma : float
        Standard deviation of the noise, > 0.
    sensitivity : float
        Replace-one L2 sensitivity of ``f`` on the batch, > 0.

    Returns
    -------
    numpy.ndarray of float64
        Upper bounds, rounded up; ``inf`` at ``alpha = inf``.

    Examples
    --------
    >>> a = replace_one_gaussian_rdp([16.0], 512 / 60_000, sigma=4.0)
    >>> b = replace_one_rdp([16.0], 512 / 60_000, GaussianMechanism(sigma=4.0).rdp)
    >>> bool(a[0] < b[0])
    True
    """
    owner = "replace_one_gaussian_rdp"
    gamma = _validate.probability(gamma, "gamma", owner)
    orders = _validate.orders_array(orders, owner).reshape(-1)
    base = GaussianMechanism(sigma=sigma, sensitivity=sensitivity)
    c = fractions.Fraction(base.sensitivity) ** 2 / (2 * fractions.Fraction(base.sigma) ** 2)
    thm9 = _replace_one(orders, gamma, base.rdp, None)
    if not c > 1e-300:  # a noiseless-looking or absurdly noisy pair: Thm 9 alone
        return thm9
    # both are proven; the whole-series minimum also covers the case where each is only its rounding slack
    # (gamma ~ 1e-130: the termwise minimum's slack came out 1e-15 above Thm 9's)
    return np.minimum(_replace_one(orders, gamma, base.rdp, c), thm9)


def _replace_one(orders, gamma, rdp, gaussian_c):
    """:func:`replace_one_rdp` (and Thm 27's brackets with ``gaussian_c``) on validated inputs."""
    base = np.asarray(rdp(orders), dtype=np.float64)
    if gamma == 0.0:
        return np.zeros(orders.shape)
    eps_inf = float(np.asarray(rdp(np.array([np.inf])), dtype=np.float64)[0])
    pure = pure_dp_bound(gamma, eps_inf)
    out = np.full(orders.shape, np.inf)
    finite_order = np.isfinite(orders)
    if finite_order.any():

        def integer_curve(ints):
            return _integer_replace_one_rdp(ints, gamma, rdp, gaussian_c)

        fin = orders[finite_order]
        integer = fin == np.round(fin)
        vals = np.empty(fin.shape)
        if integer.any():
            vals[integer] = integer_curve(fin[integer])
        if (~integer).any():
            vals[~integer] = chord_rdp(fin[~integer], integer_curve)
        out[finite_order] = vals
    return np.minimum(np.minimum(out, base), pure)


@dataclasses.dataclass(frozen=True, slots=True)
class SampledWithoutReplacement(Mechanism):
    """``mechanism`` run on a batch of exactly ``batch_size`` records drawn uniformly without replacement from a
    data set of ``dataset_size`` records.

    ``mechanism`` describes what is run on the batch **under replace-one of a batch record** (for a sum of
    gradients clipped to ``C``: ``sensitivity = 2 C``). Under add-or-remove-one (``n`` public; the data sets have
    ``n`` and ``n - 1`` records) every curve, RDP and dominating pair alike, is that of
    ``PoissonSubsampled(mechanism, sampling_probability=batch_size / dataset_size)``: thesis Thm 3.3.5(2) and
    the coupling argument in this module's docstring; these are proven upper bounds wherever the Poisson ones are.
    Under replace-one, :meth:`replace_one_rdp` gives Wang, Balle & Kasiviswanathan 2019's Thm 9 bound (RDP only).

    Examples
    --------
    >>> from dpledger.mechanisms import GaussianMechanism
    >>> m = SampledWithoutReplacement(GaussianMechanism(sigma=2.0, sensitivity=2.0), batch_size=256,
    ...                               dataset_size=60_000)
    >>> m.sampling_probability == 256 / 60_000
    True
    """

    mechanism: Mechanism
    batch_size: int
    dataset_size: int

    def __post_init__(self):
        owner = "SampledWithoutReplacement"
        if not isinstance(self.mechanism, Mechanism):
            raise TypeError(f"`mechanism` of {owner} must be a Mechanism; got {type(self.mechanism).__name__}.")
        n = _validate.integer(self.dataset_size, "dataset_size", owner, minimum=1)
        b = _validate.integer(self.batch_size, "batch_size", owner, minimum=0)
        if b >= n:
            raise ValueError(
                f"`batch_size` of {owner} must be below dataset_size = {n} (at most {n - 1}); got {b}. A batch of "
                "every record is no sampling: under add-or-remove-one the smaller data set has no batch of that size; "
                "account the mechanism itself."
            )
        object.__setattr__(self, "dataset_size", n)
        object.__setattr__(self, "batch_size", b)

    @property
    def sampling_probability(self) -> float:
        """``gamma = batch_size / dataset_size``: the probability that a given record is in the batch."""
        return self.batch_size / self.dataset_size

    @property
    def poisson_equivalent(self) -> PoissonSubsampled:
        """``PoissonSubsampled(mechanism, gamma)``: the same dominating pairs under add-or-remove-one."""
        return PoissonSubsampled(self.mechanism, sampling_probability=self.sampling_probability)

    @property
    def children(self) -> tuple[Mechanism, ...]:
        return (self.mechanism,)

    def replace_one_rdp(self, orders: ArrayLike) -> np.ndarray:
        """RDP upper bound under **replace-one** (``n`` records on both sides): :func:`replace_one_rdp` of the batch
        mechanism's curve (Wang, Balle & Kasiviswanathan 2019, Thm 9), and for a ``GaussianMechanism`` batch
        mechanism :func:`replace_one_gaussian_rdp` (their Thm 27, never above Thm 9). Not an add-or-remove-one
        curve."""
        arr = _validate.orders_array(orders, "SampledWithoutReplacement.replace_one_rdp")
        gamma = self.sampling_probability
        if type(self.mechanism) is GaussianMechanism:  # Thm 27 is proven for the Gaussian mechanism itself only
            g = self.mechanism
            values = replace_one_gaussian_rdp(arr.reshape(-1), gamma, g.sigma, g.sensitivity)
        else:
            values = replace_one_rdp(arr.reshape(-1), gamma, self.mechanism.rdp)
        return values.reshape(arr.shape)[()]

    # ---------------------------------------------- add-or-remove-one: the Poisson pairs of thesis Thm 3.3.5(2)
    def _rdp(self, orders):
        return self.poisson_equivalent._rdp(orders)

    @property
    def rdp_is_proven(self) -> bool:
        return self.mechanism.rdp_is_proven

    @property
    def log_mgf_is_closed_form(self) -> bool:
        return self.poisson_equivalent.log_mgf_is_closed_form

    @property
    def log_mgf_is_proven(self) -> bool:
        return self.poisson_equivalent.log_mgf_is_proven

    @property
    def has_exact_profile(self) -> bool:
        return self.poisson_equivalent.has_exact_profile

    def delta_bounds_one_run(self, epsilon: float, direction: Direction) -> tuple[float, float]:
        return self.poisson_equivalent.delta_bounds_one_run(epsilon, direction)

    def delta_bound_one_run(self, epsilon: float, direction: Direction, *, upper: bool) -> float:
        return self.poisson_equivalent.delta_bound_one_run(epsilon, direction, upper=upper)

    def approximate(self) -> tuple[Mechanism, float]:
        """``(SampledWithoutReplacement(core, ...), delta)`` when the batch mechanism is ``delta``-approximately
        ``core``: the mixture argument of ``PoissonSubsampled.approximate`` over the coupled batches."""
        core, delta = self.mechanism.approximate()
        if delta == 0.0:
            return self, 0.0
        return SampledWithoutReplacement(core, batch_size=self.batch_size, dataset_size=self.dataset_size), delta

    def dominating_randomized_response(self) -> fractions.Fraction | None:
        return self.poisson_equivalent.dominating_randomized_response()

    def loss_atoms(self) -> dict | None:
        return self.poisson_equivalent.loss_atoms()

    def dominating_mechanism(self) -> Mechanism:
        """The Poisson subsample of the batch mechanism's dominating mechanism (thesis Thm 3.3.5(2))."""
        inner = self.poisson_equivalent
        dom = inner.dominating_mechanism()
        return self if dom is inner else dom

    def gaussian_loss_noise_multiplier(self) -> float | None:
        return self.poisson_equivalent.gaussian_loss_noise_multiplier()

    def laplace_loss_ratio(self) -> float | None:
        return self.poisson_equivalent.laplace_loss_ratio()

    @property
    def has_loss_buckets(self) -> bool:
        return self.poisson_equivalent.has_loss_buckets

    @property
    def loss_is_discrete(self) -> bool:
        return self.poisson_equivalent.loss_is_discrete

    def loss_buckets(self, edges: ArrayLike, direction: Direction) -> LossBuckets:
        return self.poisson_equivalent.loss_buckets(edges, direction)

    def _log_mgf(self, s):
        return self.poisson_equivalent._log_mgf(s)

    def _log_mgf_enclosure(self, s):
        return self.poisson_equivalent._log_mgf_enclosure(s)

    def log_mgf_upper(self, s: ArrayLike, direction: Direction) -> np.ndarray:
        return self.poisson_equivalent.log_mgf_upper(s, direction)

    def log_mgf_sup(self, real_part: float, u_min: float) -> float:
        return self.poisson_equivalent.log_mgf_sup(real_part, u_min)
