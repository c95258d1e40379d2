"""The ``Mechanism`` interface: an immutable description of what was run, able to report its privacy curves."""

from __future__ import annotations

import abc
import fractions
import functools
import math
import typing
from typing import TYPE_CHECKING

import numpy as np
from numpy.typing import ArrayLike

from dpledger.mechanisms import _tilts, _validate, closed_form_enclosures, loss_buckets, two_point
from dpledger.mechanisms.errors import MissingCapabilityError, NumericalError
from dpledger.mechanisms.relations import Direction

if TYPE_CHECKING:
    from dpledger.mechanisms.subsampled_body import RemoveBody

__all__ = ["LossSplit", "Mechanism"]


class LossSplit(typing.NamedTuple):
    """One direction of a privacy loss made of two atoms and a continuous part: ``M(s) = A(s) + C(s)``."""

    #: ``(l1, l0, log P1, log P0)``: the atoms' losses and log-masses under the direction's first distribution, each
    #: within ``u`` of its exact value (relative), as :meth:`Mechanism.loss_atoms` gives them.
    atoms: tuple[float, float, float, float]
    #: ``(c, u_min) -> `` a proven upper bound on ``sup_{|u| >= u_min} log |C(c + iu)|`` (float ``c``).
    continuous_sup: typing.Callable[[float, float], float]
    #: ``c -> (k~, relative error bound)``: the continuous part's profile ``k(c) = int (1 - e^(c - L))_+ dC(L)`` at
    #: float arrays ``c`` (non-increasing), for accountants that price the products with one continuous run exactly.
    continuous_profile: typing.Callable[[np.ndarray], tuple[np.ndarray, np.ndarray]]


class Mechanism(abc.ABC):
    """An immutable description of a randomized algorithm, under the add-or-remove-one relation.

    Subclasses are frozen, slotted dataclasses; they implement ``_rdp`` on a validated 1-D float64 array of
    orders in (1, inf]. The public ``rdp`` validates, reshapes and checks the result for NaN.
    """

    __slots__ = ()

    #: Whether every pair of neighbouring outputs has non-negative Pearson-Vajda chi^l divergences at all odd
    #: l >= 3 (thesis condition (2.2)), so that the tight subsampling bound of thesis Thm 2.3.4 applies. Only
    #: set to True with a proof (thesis Prop 2.3.6 proves it for the Gaussian and Laplace mechanisms).
    satisfies_pearson_vajda = False

    #: Whether ``rdp`` is a proven upper bound. False where the curve comes from a quadrature whose error is
    #: estimated, not proven (a user's continuous pair); accountants then label their reports "estimate".
    #: Combinators override it with the conjunction over their children.
    rdp_is_proven = True

    #: Whether ``log_mgf`` is a closed form whose cost does not depend on the tilt ``Re s`` (the characteristic-
    #: function accountant then allows large dampings). Poisson-subsampled mechanisms integrate over an output
    #: range that grows with the tilt. Combinators: the conjunction over their children.
    log_mgf_is_closed_form = True

    #: Whether the mechanism's Poisson-subsampled enclosure (:meth:`subsampled_log_f_enclosure`) integrates over an
    #: output range that does not grow with the tilt (the Laplace mechanism: ``[-t, t]``; the Gaussian's grows).
    subsampled_enclosure_range_is_fixed = False

    @property
    def log_mgf_allows_large_damping(self) -> bool:
        """Whether the characteristic-function accountant may use large dampings (up to
        ``accountants.fourier_inversion.MAX_DAMPING_CLOSED_FORM``): a closed form, or an enclosure whose range does
        not grow with the tilt (:attr:`subsampled_enclosure_range_is_fixed`). Any damping is valid; this one only
        governs cost. Default: :attr:`log_mgf_is_closed_form` (combinators: theirs)."""
        return self.log_mgf_is_closed_form

    #: Whether ``log_mgf`` is proven: a closed form (whose float64 rounding, a few ulps relative, the Fourier
    #: inversion bounds) or a value whose every other error :meth:`log_mgf_enclosure` bounds, with a proven
    #: :meth:`log_mgf_sup`. False where the characteristic function comes from a quadrature whose error is only
    #: estimated (a user's continuous pair): the accountants then label reports "estimate".
    log_mgf_is_proven = True

    #: Whether the mechanism provides :meth:`subsampled_log_f_enclosure` (a proven characteristic function of
    #: its Poisson-subsampled pair; the Gaussian mechanism does).
    has_subsampled_enclosure = False

    #: Whether ``log_mgf`` is known to be finite at every argument of the right half-plane ``0 < Re s``, so the
    #: characteristic-function accountant need not probe it at compose (a probe costs about a millisecond for an
    #: enclosure). False by default: the accountant probes (closed forms it recognises itself are never probed).
    log_mgf_defined_everywhere = False

    def approximate(self) -> tuple[Mechanism, float]:
        """``(core, delta)``: this mechanism is ``delta``-approximately the mechanism ``core``.

        Meaning: for every pair of neighbouring inputs the output distributions decompose as
        ``P = (1 - delta) P' + delta P''`` and ``Q = (1 - delta) Q' + delta Q''`` where ``(P', Q')`` is dominated
        by ``core`` (its RDP curve and its dominating pair hold for ``(P', Q')``): the approximate-RDP notion of
        Bun & Steinke 2016 (Sec 8, "approximate zCDP"), and thesis Ex. 3.2.1 / 3.2.3's infinite-loss atoms of
        mass ``delta``. Accountants compose ``core`` and charge ``delta`` separately:

        * if ``core`` is ``(epsilon, d)``-DP, this mechanism is ``(epsilon, d + delta)``-DP, since
          ``P(S) <= (1 - delta) P'(S) + delta <= (1 - delta)(e^epsilon Q'(S) + d) + delta
          <= e^epsilon Q(S) + d + delta``;
        * the adaptive composition of mechanisms ``(core_i, delta_i)`` is ``(1 - prod_i (1 - delta_i))``-
          approximately the composition of the cores (on the product of the "good" components every step
          follows its core; the rest has probability at most ``1 - prod_i (1 - delta_i)``).

        The strict curve ``rdp`` of such a mechanism is ``+inf`` whenever ``delta > 0`` (an infinite-loss atom has
        no Renyi divergence, thesis Ex. 3.2.1). The default is ``(self, 0.0)``: the mechanism is its own core.

        Returns
        -------
        (Mechanism, float)
            ``core`` (with ``core.approximate()[1] == 0``) and ``delta`` in [0, 1].
        """
        return self, 0.0

    def dominating_randomized_response(self) -> fractions.Fraction | None:
        """The flip probability ``b`` in ``[0, 1/2]`` (an exact ``fractions.Fraction``) of a randomized response
        whose pair ``(Bern(1 - b), Bern(b))`` dominates this mechanism in both directions (thesis Def 3.3.1), or
        ``None`` (the default) if no such pair is known.

        A mechanism that has one is, for every purpose of accounting, a post-processing of ``RR(p)``: its
        Poisson-subsampled RDP is then the exact two-point divergence of :mod:`mechanisms.two_point`.
        """
        return None

    def discrete_masses(self) -> tuple[np.ndarray, np.ndarray] | None:
        """``(log_p, log_q)``: the log-masses of a dominating pair on a finite set of outcomes (remove direction), or
        ``None`` (the default). A Poisson-subsampled version of such a mechanism is again a pair on those outcomes
        (:class:`~mechanisms.subsampled.PoissonSubsampled` prices it exactly)."""
        return None

    def loss_atoms(self) -> dict | None:
        """The privacy loss as exact two-outcome atoms per direction, for accountants that enumerate compositions:
        ``{"remove": (l_1, l_0, log P(1), log P(0)), "add": (...)}`` (see
        :func:`mechanisms.two_point.subsampled_loss_atoms`), or ``None`` (the default). Randomized response and
        pure DP give their symmetric pair (loss ``+-E``, :meth:`two_point_loss`); Poisson-subsampled ones the
        subsampled pairs of thesis Thm 3.3.5(1)."""
        flip = self.dominating_randomized_response()
        if flip is None or flip == 0:
            return None
        return two_point.subsampled_loss_atoms(flip, 1.0)

    def loss_split(self) -> dict[str, LossSplit] | None:
        """The privacy loss as two atoms plus a continuous part, per direction (``{"remove": LossSplit, "add":
        LossSplit}``), for accountants that enumerate the atoms of a composition exactly and invert only the rest:
        the Poisson-subsampled Laplace mechanism (:meth:`subsampled_loss_split`); ``None`` by default."""
        return None

    def subsampled_loss_split(self, sampling_probability: float) -> dict[str, LossSplit] | None:
        """:meth:`loss_split` of this mechanism's Poisson-subsampled version (``0 < sampling_probability < 1``), or
        ``None`` (the default)."""
        return None

    @property
    def children(self) -> tuple[Mechanism, ...]:
        """The mechanisms a combinator is built from (``PoissonSubsampled``: its base; ``SelfComposed``: the
        repeated one; ``Composed``: its parts; subsampled or data-dependent screening: the screening); ``()``
        for a mechanism that is not a combinator."""
        return ()

    # ------------------------------------------------------------------ capabilities (defaults: none)
    def dominating_mechanism(self) -> Mechanism:
        """A mechanism whose dominating pair dominates this one's outputs (this mechanism is its
        post-processing), for accountants that need a dominating pair this mechanism does not offer itself:
        the characteristic-function accountant composes it in this one's place. Default: ``self``."""
        return self

    def gaussian_loss_noise_multiplier(self) -> float | None:
        """``sigma / sensitivity`` if this mechanism's privacy loss is exactly the Gaussian mechanism's
        (``L ~ N(mu^2/2, mu^2)``, ``mu = 1 / noise multiplier``, both directions), else None: accountants merge
        such losses into one (summed ``mu^2``)."""
        return None

    def laplace_loss_ratio(self) -> float | None:
        """``t = sensitivity / scale`` if this mechanism's privacy loss is exactly the Laplace mechanism's, else
        None: accountants enumerate the atoms of such losses exactly."""
        return None

    def subsampled_rdp_bound(self, orders: ArrayLike, sampling_probability: float) -> np.ndarray:
        """Proven upper bounds on the RDP of this mechanism's Poisson-subsampled version that the mechanism knows
        for itself (an array like ``orders``, NaN where it knows none); ``PoissonSubsampled`` takes the smaller
        of these and its generic bounds. Default: none."""
        return np.full(np.shape(orders), np.nan)

    def _output_quadrature(self, max_frequency, tilt, gamma=None):
        """A dominating pair on an output space with quadrature nodes (``privacy_loss.OutputQuadrature``), for
        the Poisson-subsampled characteristic function by quadrature; mechanisms with such a pair override."""
        raise MissingCapabilityError(
            f"PoissonSubsampled needs a dominating pair of its base on an output space; "
            f"{type(self).__name__} does not provide one."
        )

    @property
    def has_loss_buckets(self) -> bool:
        """Whether :meth:`loss_buckets` gives proven bucket masses (default: when the loss has two-point atoms,
        :meth:`loss_atoms`; the Gaussian, its Poisson-subsampled version and discrete pairs override)."""
        return self.loss_atoms() is not None

    @property
    def loss_is_discrete(self) -> bool:
        """Whether the privacy loss takes finitely many values in each direction (default: it has
        :meth:`loss_atoms`): its characteristic function does not decay."""
        return self.loss_atoms() is not None

    def loss_buckets(self, edges: ArrayLike, direction: Direction) -> loss_buckets.LossBuckets:
        """``(upper, lower)``: proven bounds on the masses of the privacy loss between consecutive ``edges`` in
        ``direction`` (:mod:`mechanisms.loss_buckets`; the privacy-buckets accountant composes them). Default:
        from the two-point atoms of :meth:`loss_atoms`."""
        atoms = self.loss_atoms()
        if atoms is None:
            raise MissingCapabilityError(f"{type(self).__name__} has no proven loss buckets.")
        l1, l0, p1, p0 = atoms["remove" if direction is Direction.REMOVE else "add"]
        return loss_buckets.atom_buckets([l1, l0], [p1, p0], edges)

    def loss_cut(self, direction: Direction, tail: float) -> float:
        """A loss above which this mechanism's privacy loss in ``direction`` puts (as far as this method knows) at
        most ``tail`` of its mass: where the privacy-buckets accountant (:mod:`accountants.privacy_buckets`) cuts
        its grid. Never a bound: any value is sound there (the buckets above the cut go to ``+inf`` in the upper
        measures, to the cut in the lower ones); a cut too low only loosens the upper end, one too high only costs
        grid points. Mechanisms that know their loss's support override it with a cheaper or tighter cut.

        Default: ``P(L >= c) <= e^((a - 1)(D_a - c))`` (Markov's inequality on ``e^((a - 1) L)``; the RDP
        :meth:`rdp` bounds both directions) minimised over 16 orders, or 64 where no order gives a finite value.
        """
        return _markov_cut(self, float(tail))

    def subsampled_loss_buckets(
        self, edges: ArrayLike, direction: Direction, sampling_probability: float
    ) -> loss_buckets.LossBuckets:
        """:meth:`loss_buckets` of this mechanism's Poisson-subsampled pair (thesis Thm 3.3.5), where the
        mechanism knows it (the Gaussian does)."""
        raise MissingCapabilityError(f"{type(self).__name__} has no proven subsampled loss buckets.")

    #: Whether :meth:`subsampled_loss_buckets` is implemented.
    has_subsampled_loss_buckets = False

    def two_point_loss(self) -> float | None:
        """A float ``E`` at or above the privacy loss of this mechanism's dominating randomized-response pair, whose
        loss takes the values ``+-E`` (``None`` without such a pair, or when ``E`` is infinite). Accountants that
        describe the pair by ``E`` (``p* = 1 / (1 + e^-E)``) stay upper bounds since a larger ``E`` dominates.
        Default: from :meth:`dominating_randomized_response` (:func:`mechanisms.two_point.loss_of_flip`)."""
        flip = self.dominating_randomized_response()
        if flip is None or flip == 0:
            return None
        return two_point.loss_of_flip(flip)

    def rdp(self, orders: ArrayLike) -> np.ndarray:
        """Renyi-DP upper bound ``epsilon(alpha)`` at each order, under add-or-remove-one.

        Parameters
        ----------
        orders : float or array_like of float
            Orders alpha in (1, inf]; ``inf`` means pure DP.

        Returns
        -------
        numpy.ndarray of float64
            Same shape as ``orders`` (a numpy scalar for a scalar input); ``+inf`` where no RDP bound exists.
        """
        arr = _validate.orders_array(orders, type(self).__name__)
        flat = arr.reshape(-1)
        out = np.asarray(self._rdp(flat), dtype=np.float64).reshape(flat.shape)
        if np.isnan(out).any():
            raise NumericalError(f"{self!r}.rdp produced NaN at orders {flat[np.isnan(out)][:5].tolist()}.")
        return out.reshape(arr.shape)[()]

    @abc.abstractmethod
    def _rdp(self, orders):
        """RDP at a validated 1-D float64 array of orders in (1, inf]."""

    def log_mgf(self, s: ArrayLike, direction: Direction = Direction.REMOVE) -> np.ndarray:
        """``log E_P[exp(s L)]`` of the privacy loss ``L = log(p/q)`` of this mechanism's dominating pair.

        The remove direction uses the pair (with the record, without it); the add direction is its mirror
        image, ``log_mgf(s, ADD) = log_mgf(-1 - s, REMOVE)``, because ``E_Q[(q/p)^s] = E_P[(p/q)^(-1-s)]``.
        On the imaginary axis this is the log characteristic function of thesis Def 3.3.7.

        Parameters
        ----------
        s : complex or array_like of complex
        direction : Direction

        Returns
        -------
        numpy.ndarray of complex128, same shape as ``s``.

        Raises
        ------
        MissingCapabilityError
            If the mechanism has no known dominating pair (for example a zCDP or custom-RDP mechanism).
        """
        arr, flat = self._argument(s, direction, "log_mgf")
        out = np.asarray(self._log_mgf(flat), dtype=np.complex128).reshape(arr.shape)
        if np.isnan(out).any():
            raise NumericalError(f"{self!r}.log_mgf produced NaN.")
        return out[()]

    def _argument(self, s, direction, method):
        """``(array, flat remove-direction arguments)`` of a validated complex ``s`` (``-1 - s`` for ADD)."""
        if not isinstance(direction, Direction):
            raise TypeError(f"`direction` of {type(self).__name__}.{method} must be a Direction; got {direction!r}.")
        try:
            raw = np.asarray(s)
            if raw.dtype == object or raw.dtype.kind not in "biufc":
                raise TypeError  # None, strings, mixed objects: not numbers (numpy would turn None into nan)
            arr = raw.astype(np.complex128)
        except (TypeError, ValueError):
            raise TypeError(f"`s` of {type(self).__name__}.{method} must be complex numbers; got {s!r}.") from None
        if np.isnan(arr).any():
            raise ValueError(f"`s` of {type(self).__name__}.{method} must be numbers; got nan.")
        flat = arr.reshape(-1)
        return arr, (-1.0 - flat if direction is Direction.ADD else flat)

    def _log_mgf(self, s):
        raise MissingCapabilityError(
            f"{type(self).__name__} has no dominating pair, so no characteristic-function representation; "
            "account for it with RDPAccountant, or describe it by a dominating pair (DominatingPairMechanism) "
            "or by its log characteristic function (CharacteristicFunctionMechanism)."
        )

    def log_mgf_enclosure(
        self, s: ArrayLike, direction: Direction = Direction.REMOVE
    ) -> tuple[np.ndarray, np.ndarray]:
        """``(log_m, log_error)``: ``log_m`` is ``log_mgf(s, direction)`` up to float rounding, and ``|M(s) -
        exp(log_m)| <= exp(log_error)``, float rounding included: the closed forms' is bounded in
        :mod:`mechanisms.closed_form_enclosures` (``n`` runs of a per-run log with an absolute error of a few ulps are
        off by ``n`` times that, which no model of ``M``'s own rounding covers). A mechanism described by a user's
        log characteristic function (:class:`~mechanisms.CharacteristicFunctionMechanism`) is trusted to float
        precision: ``log_error = -inf``. The add direction's argument ``-1 - s`` is a rounded float: its offset is
        bounded too (:meth:`_add_argument_error`).

        Raises
        ------
        MissingCapabilityError
            If the mechanism's characteristic function is not proven (:attr:`log_mgf_is_proven` is False).
        """
        if not self.log_mgf_is_proven:
            raise MissingCapabilityError(
                f"{self!r}: its characteristic function comes from a quadrature whose error is estimated, not "
                "proven, so it has no enclosure."
            )
        arr, flat = self._argument(s, direction, "log_mgf_enclosure")
        value, error = self._log_mgf_enclosure(flat)
        if direction is Direction.ADD:
            error = np.logaddexp(error, self._add_argument_error(arr.reshape(-1).real))
        value = np.asarray(value, dtype=np.complex128).reshape(arr.shape)
        if np.isnan(value).any():
            raise NumericalError(f"{self!r}.log_mgf_enclosure produced NaN.")
        return value[()], np.asarray(error, dtype=np.float64).reshape(arr.shape)[()]

    def _add_argument_error(self, real):
        """The add direction's ``M(s)`` is the remove direction's at ``-1 - s``, whose float ``t`` may miss it by
        ``e`` (:func:`mechanisms._tilts.two_sum`): a bound on ``log |M_R(t + e + iv) - M_R(t + iv)|`` per entry of
        ``real`` (``Re s``), by :func:`mechanisms._tilts.log_shift_error` with this mechanism's own real-axis
        upper bounds (``-inf`` where ``t`` is exact, as at the dampings the accountants choose)."""
        values, inverse = np.unique(np.asarray(real, dtype=np.float64), return_inverse=True)
        t, offset = _tilts.two_sum(-1.0, -values)
        widen = _tilts.log_shift_error(lambda points: self.log_mgf_upper(points, Direction.REMOVE), t, offset)
        return np.asarray(widen)[inverse]

    def _log_mgf_enclosure(self, s):
        """Remove direction at a 1-D complex array: ``(log_mgf, -inf)``, for log MGFs trusted to float precision (a
        user's function); the library's closed forms override it with their rounding bounded."""
        return self._log_mgf(s), np.full(s.shape, -np.inf)

    def subsampled_log_f_enclosure(
        self, a: float, v: ArrayLike, sampling_probability: float, *, cut: float = math.inf
    ) -> tuple[np.ndarray, np.ndarray]:
        """``(log F~, log E)`` of ``F(a + iv) = E_B[(1 - g + g dA/dB)^(a + iv)]`` for the Poisson-subsampled pair
        (``g`` = ``sampling_probability``), with ``|F - F~| <= E``: see :attr:`has_subsampled_enclosure`. With a
        finite ``cut``, the same for the body of the law cut there (:mod:`mechanisms.subsampled_body`)."""
        raise MissingCapabilityError(f"{type(self).__name__} has no proven subsampled characteristic function.")

    def subsampled_log_f_real_enclosure(
        self, a: ArrayLike, sampling_probability: float, *, cut: float = math.inf
    ) -> tuple[np.ndarray, np.ndarray]:
        """:meth:`subsampled_log_f_enclosure` at many real ``a`` (``v = 0``); by default one call each."""
        pairs = [self.subsampled_log_f_enclosure(float(x), np.zeros(1), sampling_probability, cut=cut)
                 for x in np.ravel(a)]
        return (np.array([p[0][0] for p in pairs], dtype=np.complex128), np.array([p[1][0] for p in pairs]))

    def subsampled_log_f_sup(
        self, a: float, v_min: float, sampling_probability: float, *, cut: float = math.inf
    ) -> float:
        """A proven bound on ``sup_{|v| >= v_min} log |F(a + iv)|`` (see :meth:`subsampled_log_f_enclosure`)."""
        raise MissingCapabilityError(f"{type(self).__name__} has no proven subsampled characteristic function.")

    def log_mgf_upper(self, s: ArrayLike, direction: Direction) -> np.ndarray:
        """A proven upper bound on ``log M(s)`` at real ``s`` (arrays; for Chernoff bounds and searches, which
        need no more). Closed forms: the upper end of :meth:`log_mgf_enclosure` (their rounding bounded). Default:
        the real part of :meth:`log_mgf` (itself the upper end of an enclosure where the characteristic function is
        enclosed). The add direction's argument ``-1 - s`` is rounded: where it is not
        exact, the larger of the values at the two floats around it (``log M`` is convex at real arguments)."""
        arr = np.asarray(s, dtype=np.float64)
        if self.log_mgf_is_closed_form and self.log_mgf_is_proven:
            # m <= |m~| + E (the enclosure: its rounding bounded, add direction's argument included)
            return closed_form_enclosures.upper_from_enclosure(*self.log_mgf_enclosure(arr, direction))
        value = np.array(np.real(self.log_mgf(arr, direction)), dtype=np.float64)
        if direction is Direction.ADD and not self.log_mgf_is_closed_form:
            t, offset = _tilts.two_sum(-1.0, -arr)
            where, other = _tilts.convex_bracket(t, offset)
            if where.any():
                value[where] = np.maximum(value[where], np.real(self.log_mgf(other, Direction.REMOVE)))
        return value[()]

    #: Whether :meth:`delta_bounds_one_run` gives proven bounds on the exact privacy profile of one run.
    has_exact_profile = False

    def poisson_gaussian_parameters(self) -> tuple[float, float] | None:
        """``(mu, q)`` where this mechanism's dominating pairs are those of a Gaussian of inverse noise multiplier
        ``mu`` Poisson-subsampled with probability ``0 < q < 1`` (thesis Thm 3.3.5), else None (the default). Ledgers
        of two such runs have an exact second run (:mod:`mechanisms.subsampled_gaussian_two_runs`)."""
        return None

    def delta_bounds_one_run(self, epsilon: float, direction: Direction) -> tuple[float, float]:
        """``(lower, upper)``, proven, of one run's exact ``delta(epsilon)`` in ``direction`` (the hockey-stick
        divergence ``H_(e^epsilon)(P || Q)`` of that direction's dominating pair, thesis Lemma 3.1.4), for
        ``epsilon >= 0``; mechanisms with :attr:`has_exact_profile` implement it."""
        raise MissingCapabilityError(f"{type(self).__name__} has no exact privacy profile.")

    def delta_bound_one_run(self, epsilon: float, direction: Direction, *, upper: bool) -> float:
        """One end of :meth:`delta_bounds_one_run`: the upper if ``upper``, else the lower. Root searches on one
        proven curve ask only that end (:meth:`accountants.FourierAccountant.epsilon_bounds` of one run); mechanisms
        whose ends cost separately override it (:class:`~mechanisms.subsampled.PoissonSubsampled`)."""
        return self.delta_bounds_one_run(epsilon, direction)[1 if upper else 0]

    def tilt_free_damping(self, direction: Direction) -> bool:
        """Whether this mechanism's log MGF in ``direction`` costs about the same at any real tilt, so that the
        Fourier accountant may search dampings far above its usual cap (default False). The Poisson-subsampled
        Gaussian's add direction overrides it: its loss is bounded above by ``log(1 / (1 - q))``."""
        return False

    def remove_body(self, log_mass: float) -> RemoveBody | None:
        """The remove direction's law with its upper tail cut away, the part cut away of mass at most
        ``e^log_mass`` (an object with ``log_tail_mass``, ``log_mgf_enclosure``, ``log_mgf_upper`` and
        ``log_mgf_sup``; the Fourier accountant inverts the rest, "Cut laws" in
        :mod:`accountants.fourier_inversion`); None (the default) where the mechanism has none. The
        Poisson-subsampled Gaussian overrides it: its loss's lognormal upper tail makes its MGF explode at the
        large tilts that few runs of a small sampling probability need."""
        return None

    def log_mgf_sup(self, real_part: float, u_min: float) -> float:
        """An upper bound on ``sup_{|u| >= u_min} Re log M(real_part + i u)`` (remove direction's ``M``).

        Used to bound the truncation error of Fourier inversion. The default, ``log M(real_part)``, always
        holds because ``|E[e^((c + iu) L)]| <= E[e^(c L)]``; mechanisms whose characteristic function decays
        override it.
        """
        return float(np.real(self._log_mgf(np.array([complex(real_part)]))[0]))

    def pure_epsilon(self) -> float:
        """The pure-DP epsilon (the RDP at order inf); raises if the mechanism is not pure DP."""
        eps = float(self._rdp(np.array([np.inf]))[0])
        if not np.isfinite(eps):
            raise MissingCapabilityError(f"{self!r} satisfies no pure (epsilon, 0)-DP guarantee.")
        return eps


@functools.lru_cache(maxsize=256)
def _markov_cut(mechanism, tail):
    """:meth:`Mechanism.loss_cut`'s default, cached (the RDP at 16 orders can be the slow part of a set-up)."""
    orders = np.geomspace(1.0 + 1.0 / 64, 4096.0, 16)
    rdp = np.asarray(mechanism.rdp(orders), dtype=np.float64)
    cut = float(np.min(rdp - math.log(tail) / (orders - 1.0)))
    return cut if math.isfinite(cut) else 64.0
