"""The ``PoissonSubsampled`` combinator: run a mechanism on a Poisson subsample (independent coin per record)."""

from __future__ import annotations

import dataclasses
import fractions
import math
from collections.abc import Iterable
from typing import TYPE_CHECKING

import numpy as np
from numpy.typing import ArrayLike

from dpledger.mechanisms import (
    _logmath,
    _tilts,
    _validate,
    closed_form_enclosures,
    loss_buckets,
    privacy_loss,
    subsampled_rdp,
    two_point,
)
from dpledger.mechanisms.base import Mechanism
from dpledger.mechanisms.errors import NumericalError
from dpledger.mechanisms.relations import Direction

if TYPE_CHECKING:
    from dpledger.mechanisms.subsampled_body import RemoveBody

__all__ = ["PoissonSubsampled"]

#: Nodes per quadrature when a long line of complex arguments is evaluated (see ``PoissonSubsampled._log_mgf``).
_CHUNK = 256


def _down(value):
    """``value`` (a product of factors each within a few u, possibly subnormal) lowered past its rounding."""
    return max(float(np.nextafter(np.nextafter(value * (1.0 - 2.0**-49), 0.0), 0.0)), 0.0)


#: Smallest noise multiplier of a Gaussian base at which :attr:`PoissonSubsampled.log_mgf_defined_everywhere`
#: holds: the characteristic-function accountant's compose probe (both directions at 0.5 and 0.5 + i) raises only
#: below about 4.3e-4 (the enclosure leaves the float64 range; found over sampling probabilities 1e-8 to 1 - 1e-6).
#: A failure the probe would have caught is still raised by the query.
PROBE_FREE_NOISE = 0.01


@dataclasses.dataclass(frozen=True, slots=True)
class PoissonSubsampled(Mechanism):
    """``mechanism`` applied to a subsample that keeps each record independently with ``sampling_probability``.

    RDP (upper bound, add-or-remove-one), by order:

    * a base dominated by randomized response (``dominating_randomized_response``: randomized response, pure DP):
      the exact divergence of the subsampled two-point pair at every order (:mod:`mechanisms.two_point`);
    * integer orders: thesis Thm 2.3.4 (tight) when the base satisfies the Pearson-Vajda condition (Gaussian
      and Laplace, thesis Prop 2.3.6), otherwise thesis Thm 2.3.1 (general); exact binomial sums up to
      ``subsampled_rdp.EXACT_MAX_ORDER``, tau-term bounds (thesis Thm 2.3.7 / 2.5.8) above;
    * non-integer orders: the exact series of Mironov, Talwar & Zhang 2019 for a Gaussian base; for any other
      base (or if the series does not converge) the chord of ``(alpha - 1) eps(alpha)`` between integer
      orders, an upper bound by convexity;
    * order inf: ``log(1 + q (e^eps - 1))`` of the base's pure epsilon (Balle et al. 2018), which also caps
      every order.

    ``sampling_probability`` 0 gives zero; 1 gives the base curve.

    Examples
    --------
    >>> from dpledger.mechanisms import GaussianMechanism
    >>> m = PoissonSubsampled(GaussianMechanism(sigma=1.0), sampling_probability=1.0)
    >>> float(m.rdp(2.0))
    1.0
    """

    mechanism: Mechanism
    sampling_probability: float

    def __post_init__(self):
        if not isinstance(self.mechanism, Mechanism):
            raise TypeError(
                f"`mechanism` of PoissonSubsampled must be a Mechanism; got {type(self.mechanism).__name__}."
            )
        object.__setattr__(
            self,
            "sampling_probability",
            _validate.probability(self.sampling_probability, "sampling_probability", "PoissonSubsampled"),
        )

    @property
    def rdp_is_proven(self) -> bool:
        return self.mechanism.rdp_is_proven

    @property
    def log_mgf_is_closed_form(self) -> bool:
        """Only without subsampling (q = 0 or 1): otherwise an integral over the base's output space."""
        return self.sampling_probability in (0.0, 1.0) and self.mechanism.log_mgf_is_closed_form

    @property
    def log_mgf_allows_large_damping(self) -> bool:
        """Also where ``0 < q < 1`` and the base's enclosure has a fixed range (the Laplace mechanism's ``[-t, t]``:
        a narrow subsampled Laplace loss needs dampings far above ``MAX_DAMPING``; q 0.001 x 10 at scale 2: 299 ->
        23 ms)."""
        q = self.sampling_probability
        return self.log_mgf_is_closed_form or (0.0 < q < 1.0 and self.mechanism.subsampled_enclosure_range_is_fixed)

    @property
    def log_mgf_is_proven(self) -> bool:
        """Proven for a Gaussian or Laplace base (proven enclosures, :mod:`mechanisms.subsampled_gaussian_cf`,
        :mod:`mechanisms.subsampled_laplace_cf`), for bases dominated by randomized response (a finite sum over two
        atoms, thesis Thm 3.3.5(1)) and for discrete pairs; estimated otherwise (continuous pairs: quadrature whose
        error is estimated)."""
        q = self.sampling_probability
        if q == 0.0:
            return True
        if q == 1.0:
            return self.mechanism.log_mgf_is_proven
        return self.mechanism.has_subsampled_enclosure or self._two_point_base() or self._discrete_base()

    @property
    def log_mgf_defined_everywhere(self) -> bool:
        """For a base with a proven subsampled enclosure (the Gaussian) of noise multiplier at least
        :data:`PROBE_FREE_NOISE`: its enclosure stays inside the float64 range at every argument there."""
        noise = self.mechanism.gaussian_loss_noise_multiplier()
        return bool(self.mechanism.has_subsampled_enclosure and noise is not None and noise >= PROBE_FREE_NOISE)

    def tilt_free_damping(self, direction: Direction) -> bool:
        """The add direction of a Gaussian base: its loss is at most ``log(1 / (1 - q))`` and the enclosure's range
        grows only like ``sqrt(|tilt| q)`` (:func:`mechanisms.subsampled_gaussian_cf._left_reach`)."""
        return (direction is Direction.ADD and self.mechanism.has_subsampled_enclosure
                and self.mechanism.gaussian_loss_noise_multiplier() is not None
                and 0.0 < self.sampling_probability < 1.0)

    @property
    def has_exact_profile(self) -> bool:
        return self.mechanism.has_exact_profile

    def poisson_gaussian_parameters(self) -> tuple[float, float] | None:
        """``(1 / noise multiplier, q)`` for a base whose loss is a Gaussian's, ``0 < q < 1``; else None."""
        noise = self.mechanism.gaussian_loss_noise_multiplier()
        q = self.sampling_probability
        return (1.0 / noise, q) if noise is not None and 0.0 < q < 1.0 else None

    def delta_bounds_one_run(self, epsilon: float, direction: Direction) -> tuple[float, float]:
        """Exact profile of one run from the base's (proven bounds carried through the rounding):

        * remove, ``((1-q) B + q A, B)``: ``H_g((1-q) B + q A || B) = q H_(g')(A || B)``, ``g' = 1 + (g - 1) / q``
          (pointwise ``((1-q) B + q A - g B)_+ = q (A - g' B)_+``; Balle, Barthe & Gaboardi 2018, Thm 8 is the
          inequality, here an identity);
        * add, ``(B, (1-q) B + q A)``: ``(B - g (1-q) B - g q A)_+ = c (B - g'' A)_+`` with ``c = 1 - g (1 - q)``
          and ``g'' = g q / c`` when ``c > 0`` (otherwise 0), so ``H = c H_(g'')(B || A)``;

        with ``g = e^epsilon``; ``H(B || A)`` is the base's add direction. Both factors are rounded outward, each end
        by :meth:`delta_bound_one_run` (the two ends ask the base at two arguments, one each).
        """
        return (self.delta_bound_one_run(epsilon, direction, upper=False),
                self.delta_bound_one_run(epsilon, direction, upper=True))

    def delta_bound_one_run(self, epsilon: float, direction: Direction, *, upper: bool) -> float:
        """One end of :meth:`delta_bounds_one_run` (the identities in its docstring), at half the base's work of
        both: the upper end asks the base's upper end at the argument rounded down (``log g'`` or ``log g''``; the
        base's profile does not increase with it), the lower end its lower end at the argument rounded up."""
        from dpledger.mechanisms.relations import Direction

        q = self.sampling_probability
        epsilon = _validate.nonnegative(epsilon, "epsilon", "PoissonSubsampled.delta_bound_one_run")
        if q == 0.0:
            return 0.0
        if q == 1.0:
            return self.mechanism.delta_bound_one_run(epsilon, direction, upper=upper)
        u = 2.0**-53
        base = self.mechanism
        if direction is Direction.REMOVE:
            e1 = float(np.log1p(np.expm1(epsilon) / q))  # log g', within about 4u relative
            if not upper:
                return float(_down(base.delta_bound_one_run(max(e1 * (1.0 + 8 * u), 0.0), direction, upper=False)
                                   * q))
            high = base.delta_bound_one_run(max(e1 * (1.0 - 8 * u), 0.0), direction, upper=True)
            return min(float(_logmath.round_up(high * q, 8)) if high > 0.0 else 0.0, 1.0)
        # add: c = e^eps (q + expm1(-eps)); g'' = q / (q + expm1(-eps))
        m1 = float(np.expm1(-epsilon))
        room = 4.0 * u * (q + abs(m1))
        if upper:
            c_hi = q + m1 + room
            if c_hi <= 0.0:
                return 0.0
            e2_lo = float(np.log(q / c_hi)) - 4.0 * u * (abs(np.log(q)) + 1.0)
            high = base.delta_bound_one_run(max(e2_lo, 0.0), direction, upper=True) * np.exp(epsilon) * c_hi
            return min(float(_logmath.round_up(float(high), 16)) if high > 0.0 else 0.0, 1.0)
        c_lo = q + m1 - room
        if c_lo <= 0.0:
            return 0.0
        e2_hi = float(np.log(q / c_lo)) + 4.0 * u * (abs(np.log(q)) + 1.0)
        low = base.delta_bound_one_run(e2_hi, direction, upper=False) * np.exp(epsilon) * c_lo
        return float(_down(float(low) * (1.0 - 16 * u)))

    def _two_point_base(self):
        flip = self.mechanism.dominating_randomized_response()
        return flip is not None and flip != 0

    def _discrete_base(self):
        """Whether the base is a pair on finitely many outcomes (:meth:`Mechanism.discrete_masses`) not dominated
        by randomized response (those take :meth:`loss_atoms`), subsampled (``0 < q < 1``)."""
        return (0.0 < self.sampling_probability < 1.0 and not self._two_point_base()
                and self.mechanism.discrete_masses() is not None)

    def _discrete_atoms(self, direction):
        """``(losses, log-masses, loss errors, log-mass errors)`` of one direction of a subsampled discrete pair.

        The remove pair of thesis Thm 3.3.5 is ``P' = (1 - g) Q + g P`` against ``Q`` on the base's outcomes: mass
        ``log P'_j = logaddexp(log(1 - g) + log q_j, log g + log p_j)`` and loss ``r_j = log P'_j - log q_j``
        (``+inf`` where ``q_j = 0``); the add pair ``(Q, P')``: mass ``log q_j``, loss ``-r_j``. Outcomes of zero
        mass under both are left out. Errors: each base log-mass within ``4u (|log m| + 1)``
        (:meth:`mechanisms.custom_pairs.DiscretePairMechanism.discrete_masses`); each argument of the
        ``logaddexp`` within that plus ``2u`` of its parts; the ``logaddexp`` carries the larger input error
        (its weights sum to 1) plus ``u |result| + 4u``; the loss, a difference, both errors plus ``u`` of
        itself; all raised by 1%."""
        log_p, log_q = (np.asarray(m, dtype=np.float64) for m in self.mechanism.discrete_masses())
        g = self.sampling_probability
        log_keep, log_g = math.log1p(-g), math.log(g)
        u = _logmath.EPS / 2.0
        def size(x):  # |x| where finite, else 0 (an absent mass carries no rounding)
            return np.abs(np.where(np.isfinite(x), x, 0.0))

        with np.errstate(invalid="ignore"):
            log_pp = np.logaddexp(log_keep + log_q, log_g + log_p)
            keep = np.isfinite(log_pp)
            err_p, err_q = 4.0 * u * (size(log_p) + 1.0), 4.0 * u * (size(log_q) + 1.0)
            arg_q = err_q + 2.0 * u * (abs(log_keep) + size(log_q))
            arg_p = err_p + 2.0 * u * (abs(log_g) + size(log_p))
            err_pp = (np.maximum(arg_q, arg_p) + u * size(log_pp) + 4.0 * u) * 1.01
            r = np.where(np.isfinite(log_q), log_pp - log_q, np.inf)
            err_r = np.where(np.isfinite(r), (err_pp + err_q + u * size(r)) * 1.01, 0.0)
        if direction is Direction.REMOVE:
            return r[keep], log_pp[keep], err_r[keep], err_pp[keep]
        present = keep & np.isfinite(log_q)
        return -r[present], log_q[present], err_r[present], err_q[present] * 1.01

    def dominating_randomized_response(self) -> fractions.Fraction | None:
        """The base's at ``q = 1`` (no subsampling), ``1/2`` at ``q = 0`` (nothing released); otherwise ``None``:
        a subsampled two-point pair is not a randomized-response pair (its two directions differ)."""
        q = self.sampling_probability
        if q == 0.0:
            return fractions.Fraction(1, 2)
        return self.mechanism.dominating_randomized_response() if q == 1.0 else None

    def loss_atoms(self) -> dict | None:
        """The two subsampled pairs' atoms when the base is dominated by randomized response (exact, thesis
        Thm 3.3.5(1); :func:`mechanisms.two_point.subsampled_loss_atoms`); ``None`` otherwise."""
        flip = self.mechanism.dominating_randomized_response()
        if flip is None or flip == 0:
            return None
        return two_point.subsampled_loss_atoms(flip, self.sampling_probability)

    def loss_split(self) -> dict | None:
        """The base's :meth:`~mechanisms.base.Mechanism.subsampled_loss_split` for ``0 < q < 1`` (the Laplace
        mechanism: two atoms and a continuous part per direction); ``None`` otherwise."""
        q = self.sampling_probability
        return self.mechanism.subsampled_loss_split(q) if 0.0 < q < 1.0 else None

    @property
    def children(self) -> tuple[Mechanism, ...]:
        return (self.mechanism,)

    def dominating_mechanism(self) -> Mechanism:
        """The subsample of the base's dominating mechanism (subsampling commutes with post-processing)."""
        base = self.mechanism.dominating_mechanism()
        if base is self.mechanism:
            return self
        return PoissonSubsampled(base, sampling_probability=self.sampling_probability)

    def gaussian_loss_noise_multiplier(self) -> float | None:
        return self.mechanism.gaussian_loss_noise_multiplier() if self.sampling_probability == 1.0 else None

    def laplace_loss_ratio(self) -> float | None:
        return self.mechanism.laplace_loss_ratio() if self.sampling_probability == 1.0 else None

    @property
    def has_loss_buckets(self) -> bool:
        q = self.sampling_probability
        if q in (0.0, 1.0):
            return q == 0.0 or self.mechanism.has_loss_buckets
        return self.loss_atoms() is not None or self._discrete_base() or self.mechanism.has_subsampled_loss_buckets

    @property
    def loss_is_discrete(self) -> bool:
        q = self.sampling_probability
        if q in (0.0, 1.0):
            return q == 0.0 or self.mechanism.loss_is_discrete
        return self.loss_atoms() is not None or self._discrete_base()

    def loss_buckets(self, edges: ArrayLike, direction: Direction) -> loss_buckets.LossBuckets:
        """Proven bucket masses (:mod:`mechanisms.loss_buckets`): a zero loss at ``q = 0``, the base's at
        ``q = 1``, the exact atoms of a base dominated by randomized response, otherwise the base's
        :meth:`~mechanisms.base.Mechanism.subsampled_loss_buckets` (the Gaussian)."""
        q = self.sampling_probability
        if q == 0.0:
            return loss_buckets.atom_buckets([0.0], [0.0], edges)
        if q == 1.0:
            return self.mechanism.loss_buckets(edges, direction)
        if self.loss_atoms() is not None:
            return super(PoissonSubsampled, self).loss_buckets(edges, direction)
        if self._discrete_base():
            loss, log_mass, loss_err, mass_err = self._discrete_atoms(direction)
            return loss_buckets.atom_buckets(loss, log_mass, edges, loss_error=loss_err, log_mass_error=mass_err)
        return self.mechanism.subsampled_loss_buckets(edges, direction, q)

    def approximate(self) -> tuple[Mechanism, float]:
        """``(PoissonSubsampled(core, q), delta)`` when the base is ``delta``-approximately ``core``
        (:meth:`Mechanism.approximate`).

        Proof: for neighbouring ``D = D' + {x}`` the subsampled outputs are ``P = (1 - q) M(S) + q M(S + {x})`` and
        ``Q = M(S)`` mixed over the subsample ``S`` of ``D'``. With ``M(S) = (1 - delta) A_S + delta A'_S`` and
        ``M(S + {x}) = (1 - delta) B_S + delta B'_S``, where each ``(B_S, A_S)`` is dominated by ``core``, both
        outputs decompose with weight ``1 - delta`` on ``(1 - q) A + q B`` and ``A`` (mixtures over ``S``), which is
        the pair of ``core`` subsampled, and weight ``delta`` on the rest; delta is not amplified upwards (nor is it
        claimed to be reduced)."""
        core, delta = self.mechanism.approximate()
        if delta == 0.0:
            return self, 0.0
        return PoissonSubsampled(core, sampling_probability=self.sampling_probability), delta

    def _integer_rdp(self, orders):
        orders = np.asarray(orders, dtype=np.float64)
        base = self.mechanism.rdp
        q = self.sampling_probability
        general = not self.mechanism.satisfies_pearson_vajda
        small = orders <= subsampled_rdp.EXACT_MAX_ORDER
        out = np.empty(orders.shape)
        bound = subsampled_rdp.general_bound if general else subsampled_rdp.tight_bound
        out[small] = bound(orders[small], q, base)
        if (~small).any():
            out[~small] = subsampled_rdp.tau_term_bound(orders[~small], q, base, general=general)
        return out

    def _rdp(self, orders):
        q = self.sampling_probability
        if q == 0.0:
            return np.zeros(orders.shape)
        if q == 1.0:
            return self.mechanism.rdp(orders)
        flip = self.mechanism.dominating_randomized_response()
        if flip is not None:  # a two-point pair: the subsampled divergence is exact (two_point.py) ...
            # ... and, like every bound here, never above the base curve (the remark at the end of this method)
            return np.minimum(two_point.randomized_response_rdp(orders, flip, q), self.mechanism.rdp(orders))
        out = np.empty(orders.shape)
        inf = np.isinf(orders)
        integer = ~inf & (orders == np.round(orders))
        frac = ~inf & ~integer
        base_pure = float(self.mechanism.rdp(np.inf))
        pure = subsampled_rdp.pure_dp_bound(q, base_pure)
        out[inf] = pure
        huge = integer & (orders > 2.0**53)  # beyond exact integers: the pure-DP cap below applies
        out[huge] = np.inf
        integer &= ~huge
        # A bound the base knows for itself (the Gaussian's exact series at fractional orders; each order's value
        # independent of the others asked for), computed once and used both below and as the fractional values.
        own = np.asarray(self.mechanism.subsampled_rdp_bound(orders, q), dtype=np.float64)
        if integer.any():
            out[integer] = self._integer_rdp(orders[integer])
        if frac.any():
            out[frac] = self._fractional_rdp(orders[frac], own[frac])
        # Subsampling is never worse than the base (joint quasi-convexity of the Renyi divergence), nor worse
        # than the subsampled pure-DP bound (D_alpha <= D_inf), nor than the base's own bound.
        return np.fmin(np.minimum(np.minimum(out, pure), self.mechanism.rdp(orders)), own)

    def _fractional_rdp(self, orders, own=None):
        """The exact series for a Gaussian base (each order with its own truncation, so a value does not depend
        on the other orders asked for; ``own``, if given, is the base's ``subsampled_rdp_bound`` at ``orders``,
        already computed); the chord between integer orders (always valid) otherwise, and where the value is so
        small that the series' float64 slack matters."""
        if own is None:
            own = self.mechanism.subsampled_rdp_bound(orders, self.sampling_probability)
        values = np.array(own, dtype=np.float64)
        # The chord where there is no series value, or where the series' float64 slack (about 1e-14 in
        # log A) is not small against the value itself.
        chord = np.isnan(values) | ((orders - 1.0) * values < 1e-9)
        if chord.any():
            values[chord] = np.fmin(values[chord], subsampled_rdp.chord_rdp(orders[chord], self._integer_rdp))
        return values

    # ------------------------------------------------------------------ characteristic functions
    def _quadrature(self, s):
        s = np.asarray(s, dtype=np.complex128)
        max_frequency = float(np.abs(s.imag).max(initial=0.0))
        z_real = 1.0 + s.real
        tilt = (min(0.0, float(z_real.min(initial=0.0))), max(0.0, float(z_real.max(initial=0.0))))
        return self.mechanism._output_quadrature(max_frequency, tilt, self.sampling_probability)

    def _log_mgf(self, s):
        """Remove pair ``((1-g) B + g A, B)`` of thesis Thm 3.3.5: ``log M(s) = log E_B[e^((1+s) r)]`` with
        ``r = log(1 - g + g a/b)``, by Gauss-Legendre quadrature over the base's output space (atoms exact).
        The add pair ``(B, (1-g) B + g A)`` is its mirror image (``Mechanism.log_mgf``)."""
        q = self.sampling_probability
        if q == 0.0:
            return np.zeros(np.shape(s), dtype=np.complex128)
        if q == 1.0:
            return self.mechanism._log_mgf(s)
        s = np.asarray(s, dtype=np.complex128)
        if self.mechanism.has_subsampled_enclosure:
            value, error = self._enclosure(s)
            # real arguments (Chernoff bounds, Renyi divergences, dampings): the upper end, a proven upper bound
            real = s.imag == 0.0
            return np.where(real, np.logaddexp(value.real, error), value)
        if s.size > 1 and np.all(s.imag == 0.0):
            # Real arguments (Chernoff bounds, RDP): one quadrature per group of tilts 1 + s within a factor 2
            # (its range covers the whole group, so it is at most about twice as wide as each one needs).
            flat = s.reshape(-1)
            z = 1.0 + flat.real
            keys = np.sign(z) * np.floor(np.log2(np.maximum(np.abs(z), 1.0)))
            out = np.empty(flat.shape, dtype=np.complex128)
            for key in np.unique(keys):
                sel = keys == key
                group = flat[sel]
                out[sel] = privacy_loss.subsampled_log_f(1.0 + group, q, self._quadrature(group))
            return out.reshape(s.shape)
        flat = s.reshape(-1)
        if flat.size > 2 * _CHUNK:
            # Long lines of nodes (Fourier inversion): the quadrature needs panels that resolve the highest
            # frequency asked for, so give each chunk of nodes its own quadrature (low frequencies are cheap).
            out = np.empty(flat.shape, dtype=np.complex128)
            work = 0
            # the quadratures' sizes first (cheap), so that a line beyond the work limit fails at once
            for start in range(0, flat.size, _CHUNK):
                part = flat[start : start + _CHUNK]
                work += part.size * self._quadrature(part).log_weights.size
                if work > privacy_loss.MAX_LINE_WORK:
                    raise NumericalError(
                        f"{self!r}: evaluating the characteristic function at {flat.size} frequencies exceeds the "
                        f"work limit {privacy_loss.MAX_LINE_WORK:.3g} (frequencies x quadrature nodes) after "
                        f"{start + part.size} of them: the privacy loss is too spread out for the "
                        "characteristic-function accountant at this accuracy (little noise); use RDPAccountant, "
                        "or a larger rtol."
                    )
            for start in range(0, flat.size, _CHUNK):
                part = flat[start : start + _CHUNK]
                out[start : start + _CHUNK] = privacy_loss.subsampled_log_f(1.0 + part, q, self._quadrature(part))
            return out.reshape(s.shape)
        return privacy_loss.subsampled_log_f(1.0 + s, q, self._quadrature(s))

    def log_mgf_upper(self, s: ArrayLike, direction: Direction) -> np.ndarray:
        """A cheap proven upper bound on ``log M(s)`` at real ``s``: for the remove direction of a Gaussian base and
        ``s > 0``, ``s eps(1 + s)`` from the RDP curve (``log M(s) = s D_(1+s)(P || Q)``; thesis Thm 2.3.4's bound,
        exact at integer orders and within about 5e-7 relative at fractional ones), a thousandth of the
        enclosure's cost; for a two-point base, the upper end of :meth:`_atoms_enclosure`; otherwise
        :meth:`Mechanism.log_mgf_upper`."""
        from dpledger.mechanisms.relations import Direction

        if 0.0 < self.sampling_probability < 1.0 and (self._two_point_base() or self._discrete_base()):
            # the upper end of the atoms' enclosure (its rounding bounded), the add direction's argument included
            return closed_form_enclosures.upper_from_enclosure(*self.log_mgf_enclosure(np.asarray(s, float), direction))
        if not (self.mechanism.has_subsampled_enclosure and direction is Direction.REMOVE
                and self.mechanism.gaussian_loss_noise_multiplier() is not None
                and 0.0 < self.sampling_probability < 1.0):
            return Mechanism.log_mgf_upper(self, s, direction)
        arr = np.asarray(s, dtype=np.float64)
        out = np.zeros(arr.shape)
        positive = arr > 0.0
        if positive.any():
            # D_alpha does not decrease with alpha: at the order 1 + s rounded up, s D is still an upper bound
            out[positive] = _logmath.mul_up(arr[positive], self.rdp(_logmath.add_up(1.0, arr[positive])))
        if (arr < 0.0).any():
            out[~positive & (arr != 0.0)] = Mechanism.log_mgf_upper(self, arr[~positive & (arr != 0.0)], direction)
        return out

    @staticmethod
    def log_mgf_upper_many(mechanisms: Iterable[Mechanism], s: ArrayLike, direction: Direction) -> np.ndarray:
        """``[m.log_mgf_upper(s, direction) for m in mechanisms]`` as one ``(len(mechanisms),) + s.shape`` array:
        the same bounds, the costly part computed in batch (one call instead of one per mechanism, whose fixed
        costs dominated the Chernoff searches of ledgers of many distinct mechanisms).

        Batched: the remove direction of Poisson-subsampled Gaussians (``0 < q < 1``) at real ``s > 0``. There
        :meth:`log_mgf_upper` is ``s eps(1 + s)`` rounded up, and :meth:`_rdp` gives ``eps`` at each non-integer
        order up to ``subsampled_rdp.EXACT_MAX_ORDER`` as the exact series
        (:func:`mechanisms.subsampled_rdp.gaussian_fractional_rdp`: here one call for all the mechanisms with the
        same sampling probability, each order summed with its own truncation as in the mechanism's own call)
        lowered to the base Gaussian's RDP (the pure-DP cap is infinite). The other orders (integer ones, thesis
        Thm 2.3.4) come from each mechanism's :meth:`rdp` at those orders only, as in :meth:`_rdp`. A mechanism
        whose series needs the chord (no value, or a value too small for the series' float64 slack) and every other
        mechanism or argument go through :meth:`log_mgf_upper` itself. So each value is the one that method gives,
        up to the order in which the series' float64 sum adds its (zero-padded) terms, which its rounding slack
        covers either way (tests/mechanisms/test_subsampled_batch.py).
        """
        from dpledger.mechanisms.gaussian import GaussianMechanism
        from dpledger.mechanisms.relations import Direction

        mechanisms = list(mechanisms)
        arr = np.asarray(s, dtype=np.float64).reshape(-1)
        out = np.empty((len(mechanisms), arr.size))
        orders = _logmath.add_up(1.0, arr)  # rounded up, as in log_mgf_upper
        batchable = direction is Direction.REMOVE and arr.size > 0 and bool(np.all(arr > 0.0))
        frac = (orders != np.round(orders)) & (orders <= subsampled_rdp.EXACT_MAX_ORDER)
        groups = {}
        for i, m in enumerate(mechanisms):
            if (batchable and frac.any() and isinstance(m, PoissonSubsampled)
                    and type(m.mechanism) is GaussianMechanism and 0.0 < m.sampling_probability < 1.0):
                groups.setdefault(m.sampling_probability, []).append(i)
            else:
                out[i] = np.reshape(m.log_mgf_upper(arr, direction), -1)
        for q, rows in groups.items():
            bases = [mechanisms[i].mechanism for i in rows]
            noise = np.array([b.noise_multiplier for b in bases])[:, None]
            series = subsampled_rdp.gaussian_fractional_rdp(
                np.broadcast_to(orders[frac], (len(rows), int(frac.sum()))), q, noise).reshape(len(rows), -1)
            base = _logmath.mul_up(orders[frac][None, :], np.array([b._rdp_slope() for b in bases])[:, None])
            chord = np.isnan(series) | ((orders[frac][None, :] - 1.0) * series < 1e-9)
            # PoissonSubsampled._rdp at these orders: min(series, pure = inf, base), fmin'ed with the series again
            rdp = np.empty((len(rows), arr.size))
            rdp[:, frac] = np.fmin(np.minimum(series, base), series)
            alone = chord.any(axis=1) | np.isnan(rdp[:, frac]).any(axis=1)
            for k, i in enumerate(rows):
                if not (alone[k] or frac.all()):
                    rdp[k, ~frac] = mechanisms[i].rdp(orders[~frac])
            values = _logmath.mul_up(arr[None, :], rdp)  # elementwise: as one row at a time
            for k, i in enumerate(rows):
                out[i] = np.reshape(mechanisms[i].log_mgf_upper(arr, direction), -1) if alone[k] else values[k]
        return out.reshape((len(mechanisms),) + np.shape(s))

    def _enclosure(self, s):
        """The base's proven ``F(1 + s)`` (remove direction) at complex ``s`` (:func:`tilted_enclosure`)."""
        flat = np.asarray(s, dtype=np.complex128).reshape(-1)
        value, error = tilted_enclosure(self.mechanism, self.sampling_probability, flat)
        return value.reshape(np.shape(s)), error.reshape(np.shape(s))

    def _log_mgf_enclosure(self, s):
        """Proven for a Gaussian base (its enclosure) and two-point bases (finite sums, their rounding bounded:
        :meth:`_atoms_enclosure`)."""
        q = self.sampling_probability
        if q == 1.0:
            return self.mechanism._log_mgf_enclosure(s)
        if q != 0.0 and self.mechanism.has_subsampled_enclosure:
            return self._enclosure(s)
        if q != 0.0 and self._two_point_base():
            return self._atoms_enclosure(s)
        if self._discrete_base():  # the remove pair's finitely many atoms (their rounding bounded)
            loss, log_mass, loss_err, mass_err = self._discrete_atoms(Direction.REMOVE)
            return closed_form_enclosures.atoms_log_mgf_enclosure(s, log_mass, loss, mass_err, loss_err)
        return Mechanism._log_mgf_enclosure(self, s)

    def _atoms_enclosure(self, s):
        """``(log M~, log E)`` of the remove direction for a base whose loss has atoms only (thesis Thm 3.3.5(1)):
        ``M(s) = sum_j B_j e^((1 + s) r_j) = sum_j e^((log B_j + r_j) + s r_j)``, ``r_j = log(1 - g + g e^(l_j))``,
        a discrete pair's, by :func:`mechanisms.closed_form_enclosures.atoms_log_mgf_enclosure`.

        The floats: each ``r_j`` (``logaddexp`` of ``log1p(-g)`` and ``log g + l_j``) within ``2 eps`` of the sum of
        its parts' magnitudes; the base's ``log B_j`` within ``2 eps (|log B_j| + |l_j| + 1)`` (for the two-point
        base, ``log p* = -log1p(e^-E)`` and ``log p* - E``); each sum ``log B_j + r_j`` within ``u`` of itself."""
        q = self.sampling_probability
        quadrature = self.mechanism._output_quadrature(0.0, (0.0, 0.0), q)
        log_w, loss = quadrature.log_weights[: quadrature.atoms], quadrature.log_ratio[: quadrature.atoms]
        log_keep, log_q = np.log1p(-q), np.log(q)
        r = np.logaddexp(log_keep, log_q + loss)
        r_error = 2.0 * _logmath.EPS * (abs(log_keep) + abs(log_q) + np.abs(loss) + np.abs(r) + 1.0)
        a = log_w + r
        a_error = 2.0 * _logmath.EPS * (np.abs(log_w) + np.abs(loss) + np.abs(a) + 1.0) + r_error
        return closed_form_enclosures.atoms_log_mgf_enclosure(s, a, r, a_error, r_error)

    def remove_body(self, log_mass: float) -> RemoveBody | None:
        """The body of the remove-direction law whose tail has mass at most ``e^log_mass``
        (:class:`~mechanisms.subsampled_body.RemoveBody`, cut by
        :func:`~mechanisms.subsampled_body.cut_for_tail_mass`); ``None`` where there is no proven
        enclosure to cut (a base other than the Gaussian, ``sampling_probability`` 0 or 1) and where cutting does
        not pay (``sampling_probability`` above :data:`~mechanisms.subsampled_body.CUT_MAX_SAMPLING`).

        The law-level facts (module docstring of :mod:`mechanisms.subsampled_body`): the body is the loss
        restricted to ``L <= r(cut)``; ``M_b(0) = 1 - p``; ``M_b(s) <= M(s)`` at real ``s``; after ``k`` runs
        ``delta_b(eps) <= delta(eps) <= delta_b(eps) + 1 - (1 - p)^k``. ``log_mass = -inf`` gives the whole law
        (``cut = inf``).
        """
        from dpledger.mechanisms import subsampled_body

        log_mass = _validate.real(log_mass, "log_mass", "PoissonSubsampled.remove_body", allow_inf=True)
        if not log_mass < 0.0:
            raise ValueError(f"`log_mass` of PoissonSubsampled.remove_body must be below 0; got {log_mass}.")
        q, noise = self.sampling_probability, self.mechanism.gaussian_loss_noise_multiplier()
        if (q in (0.0, 1.0) or not self.mechanism.has_subsampled_enclosure or noise is None
                or q > subsampled_body.CUT_MAX_SAMPLING):
            return None
        cut = subsampled_body.cut_for_tail_mass(q, 1.0 / noise, log_mass)
        return subsampled_body.RemoveBody(self, cut)

    def log_mgf_sup(self, real_part: float, u_min: float) -> float:
        """A proven bound for a Gaussian or Laplace base (the base's
        :meth:`~mechanisms.base.Mechanism.subsampled_log_f_sup`) and for two-point bases (``log M(real_part)``: their
        transforms do not decay); estimated (quadrature-based, see :func:`mechanisms.privacy_loss.subsampled_log_f_sup`)
        otherwise."""
        q = self.sampling_probability
        if q == 0.0:
            return 0.0
        if q == 1.0:
            return self.mechanism.log_mgf_sup(real_part, u_min)
        if self.mechanism.has_subsampled_enclosure:
            return tilted_sup(self.mechanism, q, real_part, u_min)
        if self._two_point_base():
            return Mechanism.log_mgf_sup(self, real_part, u_min)
        quad = self._quadrature(np.array([complex(real_part, 0.0)]))  # covers the tilt 1 + real_part
        return privacy_loss.subsampled_log_f_sup(1.0 + real_part, u_min, q, quad)


def _real_upper(base, q, cut):
    """``points -> `` proven upper bounds on ``log F`` (``log F_b`` for a finite ``cut``) at real floats: the base's
    real-axis enclosure, value plus error (the ``log_upper`` of :func:`mechanisms._tilts.log_shift_error`)."""

    def log_upper(points):
        values, errors = base.subsampled_log_f_real_enclosure(points, q, cut=cut)
        return np.logaddexp(np.real(values), errors)

    return log_upper


def tilted_enclosure(base: Mechanism, q: float, s: np.ndarray, cut: float = math.inf) -> tuple[np.ndarray, np.ndarray]:
    """``(log F~, log E)`` of ``F(1 + s) = E_B[(1 - q + q dA/dB)^(1 + s)]`` (the remove direction's ``M(s)``; the
    body ``F_b`` of :mod:`mechanisms.subsampled_body` for a finite ``cut``) at a 1-D complex array ``s``, from the
    base's proven enclosures (grouped by real part; an array of real arguments through its batched real-axis
    enclosure, one shared layout).

    The base encloses ``F`` at the float ``z~ = fl(1 + Re s)``; where that float is not the exact ``1 + Re s``
    (:func:`mechanisms._tilts.two_sum` gives the offset), the error is widened by
    :func:`mechanisms._tilts.log_shift_error` with the base's real-axis upper bounds, so the enclosure holds at the
    exact argument."""
    tilts, inverse = np.unique(s.real, return_inverse=True)
    z, offset = _tilts.two_sum(1.0, tilts)
    widen = _tilts.log_shift_error(_real_upper(base, q, cut), z, offset)
    if s.size > 1 and not s.imag.any():  # Chernoff searches, dampings: many tilts, one shared layout
        values, errors = base.subsampled_log_f_real_enclosure(z, q, cut=cut)
        return np.asarray(values)[inverse], np.logaddexp(errors, widen)[inverse]
    value, error = np.empty(s.shape, dtype=np.complex128), np.empty(s.shape)
    for i, a in enumerate(z):
        sel = inverse == i
        value[sel], error[sel] = base.subsampled_log_f_enclosure(float(a), s.imag[sel], q, cut=cut)
        error[sel] = np.logaddexp(error[sel], widen[i])
    return value, error


def tilted_sup(base: Mechanism, q: float, real_part: float, u_min: float, cut: float = math.inf) -> float:
    """The base's proven bound on ``sup_{|u| >= u_min} log |F(1 + real_part + iu)|`` (``F_b`` for a finite
    ``cut``), at the float ``fl(1 + real_part)`` and widened by :func:`mechanisms._tilts.log_shift_error` where that
    float is not exact (a bound on the difference at every ``u`` bounds the difference of the suprema)."""
    z, offset = _tilts.two_sum(1.0, float(real_part))
    value = base.subsampled_log_f_sup(float(z), u_min, q, cut=cut)
    if offset == 0.0:
        return value
    return float(np.logaddexp(value, _tilts.log_shift_error(_real_upper(base, q, cut), float(z), float(offset))))
