"""Mechanisms defined by a dominating pair (discrete or continuous) or by their log characteristic function.

A user who knows a dominating pair (P, Q) of their mechanism for the remove direction (P: output with the
record, Q: without it; thesis Def 3.3.1) gets everything from it: the exact Renyi DP in both directions
(``(alpha - 1) D_alpha(P||Q) = log M(alpha - 1)`` and ``(alpha - 1) D_alpha(Q||P) = log M(-alpha)`` with
``M(s) = E_P[(p/q)^s]``), the characteristic-function accountant, and Poisson subsampling of the pair.

Mass that is not on the common support is never assumed away (DESIGN.md privacy rule 11). Let ``a`` and ``b``
be the masses P and Q put where both are positive (on the interval, for a continuous pair). Whatever is missing
(``1 - a`` of P, ``1 - b`` of Q) may sit where the other distribution has no mass: an infinite-loss atom (thesis
Ex. 3.2.1, 3.2.3). So such a pair has no Renyi divergence (``rdp`` is ``+inf`` at every order) and no
characteristic function, and :meth:`approximate` returns the normalised pair on the common support with
``delta = max(1 - a, 1 - b)``: ``P = (1 - delta) P' + delta P''`` with ``P' = P|_S / a`` (and likewise Q), since
``a >= 1 - delta``. The accountants compose the normalised pair and charge ``delta`` on top
(:meth:`mechanisms.base.Mechanism.approximate` proves the rule).

Pearson-Vajda condition (thesis Thm 2.3.4, condition (2.2)): not claimed for user pairs (it depends on the
pair), so Poisson subsampling of a pair uses the general bound of thesis Thm 2.3.1.
"""

from __future__ import annotations

import dataclasses
import functools
import math
from collections.abc import Callable

import numpy as np
from numpy.typing import ArrayLike

from dpledger.mechanisms import _logmath, _validate, closed_form_enclosures, loss_buckets, privacy_loss
from dpledger.mechanisms.base import Mechanism
from dpledger.mechanisms.errors import MissingCapabilityError, NumericalError
from dpledger.mechanisms.relations import Direction

__all__ = ["DiscretePairMechanism", "ContinuousPairMechanism", "CharacteristicFunctionMechanism"]

#: A continuous pair whose quadrature mass on the interval is within this of 1 is taken to be normalised: the
#: deficit is then of the order of the quadrature's own (estimated) error, and such pairs are labelled estimates
#: in any case (``rdp_is_proven`` is False). A larger deficit is charged as delta (module docstring).
CONTINUOUS_MASS_TOLERANCE = 1e-14


def _rdp_from_log_mgf(log_mgf, orders, eps_inf):
    """``max(log M(alpha - 1), log M(-alpha)) / (alpha - 1)``: the exact RDP of a pair, both directions."""
    out = np.empty(orders.shape)
    inf = np.isinf(orders)
    out[inf] = eps_inf
    a = orders[~inf]
    if a.size:
        s = np.concatenate((a - 1.0, -a)).astype(np.complex128)
        values = np.real(np.asarray(log_mgf(s)))
        both = np.maximum(values[: a.size], values[a.size :]) / (a - 1.0)
        out[~inf] = np.maximum(both * (1.0 + 1e-13) + 1e-15, 0.0)
    return out


def _no_pair_error(mechanism):
    return MissingCapabilityError(
        f"{mechanism.name!r}: {mechanism.missing_mass:.3g} of the mass is not on the common support of the pair "
        "(an infinite-loss atom), so it has no Renyi divergence and no characteristic function; accountants "
        "charge that mass as delta through approximate()."
    )


def _missing_mass(mass_p, mass_q, tolerance, owner):
    """``max(1 - mass_p, 1 - mass_q)`` plus ``tolerance`` (the masses' own rounding, so the charge is rounded
    up), or 0 when it is within ``tolerance`` of 0."""
    missing = max(1.0 - mass_p, 1.0 - mass_q)
    return 0.0 if missing <= tolerance else min(1.0, missing + tolerance)


def _shifted(log_density, shift, x):
    return np.asarray(log_density(x), dtype=np.float64) - shift


def _log_sum(values, what):
    arr = np.asarray(values, dtype=np.float64).reshape(-1)
    if np.isnan(arr).any() or np.isposinf(arr).any():
        raise ValueError(f"`{what}` must be finite log-probabilities (or -inf); got NaN or +inf.")
    return arr


@dataclasses.dataclass(frozen=True, slots=True, eq=False)
class DiscretePairMechanism(Mechanism):
    """A mechanism dominated by two probability mass functions on the same finite support.

    Parameters
    ----------
    log_p, log_q : array_like of float
        Log-masses of P (with the record) and Q (without), remove direction, on the same outcomes (``-inf`` for
        an outcome one of them cannot produce). Each must sum to at most 1 (up to float rounding). Mass outside
        the common support, or missing from the total, is charged as delta (module docstring): the mechanism's
        ``rdp`` is then ``+inf`` and :meth:`approximate` gives ``(normalised pair, missing mass)``. A total within
        ``8 n`` ulps of 1 is the rounding of a proper distribution and is renormalised.
    name : str

    Attributes
    ----------
    missing_mass : float
        ``max(1 - a, 1 - b)`` (module docstring), 0 for a pair with nothing missing.

    Examples
    --------
    >>> import numpy as np
    >>> m = DiscretePairMechanism(np.log([0.75, 0.25]), np.log([0.25, 0.75]))
    >>> round(float(m.rdp(float("inf"))), 6)
    1.098612
    >>> short = DiscretePairMechanism(np.log([0.6, 0.4 - 5e-10]), np.log([0.4, 0.6]))
    >>> float(short.rdp(2.0)), round(float(short.approximate()[1]), 12)
    (inf, 5e-10)
    """

    log_p: np.ndarray
    log_q: np.ndarray
    name: str = dataclasses.field(default="discrete pair", kw_only=True)
    missing_mass: float = dataclasses.field(default=0.0, init=False)

    def __post_init__(self):
        log_p = _log_sum(self.log_p, "log_p of DiscretePairMechanism")
        log_q = _log_sum(self.log_q, "log_q of DiscretePairMechanism")
        if log_p.shape != log_q.shape or log_p.size == 0:
            raise ValueError(
                f"`log_p` and `log_q` of DiscretePairMechanism must have the same non-zero length; got "
                f"{log_p.size} and {log_q.size}."
            )
        owner = "DiscretePairMechanism"
        tolerance = 8 * log_p.size * np.finfo(np.float64).eps  # float rounding of n masses and their sum
        for arr, what in ((log_p, "log_p"), (log_q, "log_q")):
            if math.fsum(np.exp(arr)) > 1.0 + tolerance:
                raise ValueError(f"`{what}` of {owner} must sum to at most 1; got {math.fsum(np.exp(arr))!r}.")
        keep = np.isfinite(log_p) & np.isfinite(log_q)
        if not keep.any():
            raise ValueError(f"`log_p` and `log_q` of {owner} must share at least one outcome of positive mass.")
        log_p, log_q = log_p[keep], log_q[keep]
        mass_p, mass_q = math.fsum(np.exp(log_p)), math.fsum(np.exp(log_q))
        missing = _missing_mass(mass_p, mass_q, tolerance, owner)
        if missing == 0.0:  # the rounding of a proper distribution: renormalise
            log_p, log_q = log_p - math.log(mass_p), log_q - math.log(mass_q)
        object.__setattr__(self, "log_p", log_p)
        object.__setattr__(self, "log_q", log_q)
        object.__setattr__(self, "missing_mass", missing)

    def approximate(self) -> tuple[Mechanism, float]:
        """``(normalised pair on the common support, missing_mass)``; ``(self, 0.0)`` if nothing is missing."""
        if self.missing_mass == 0.0:
            return self, 0.0
        a, b = math.fsum(np.exp(self.log_p)), math.fsum(np.exp(self.log_q))
        core = DiscretePairMechanism(self.log_p - math.log(a), self.log_q - math.log(b), name=self.name)
        # Renormalising has float64 rounding: the core is a proper pair up to 8 n ulps, below the tolerance.
        return core, self.missing_mass

    def __eq__(self, other):
        return (
            type(other) is type(self)
            and np.array_equal(self.log_p, other.log_p)
            and np.array_equal(self.log_q, other.log_q)
            and self.name == other.name
        )

    def __hash__(self):
        return hash((type(self), self.log_p.tobytes(), self.log_q.tobytes(), self.name))

    def _loss(self):
        return self.log_p - self.log_q

    has_loss_buckets = True
    loss_is_discrete = True

    def discrete_masses(self) -> tuple[np.ndarray, np.ndarray] | None:
        """The normalised pair's ``(log_p, log_q)`` (each log-mass within ``4u (|log m| + 1)`` of the normalised
        pair's, as :meth:`loss_buckets` allows); ``None`` where mass is missing (no pair: :meth:`approximate`)."""
        return None if self.missing_mass else (self.log_p, self.log_q)

    def loss_buckets(self, edges: ArrayLike, direction: Direction) -> loss_buckets.LossBuckets:
        """Bucket masses of the atoms ``log p - log q`` (mass ``p``; add direction: ``log q - log p``, mass
        ``q``) of the normalised pair (:func:`mechanisms.loss_buckets.atom_buckets`)."""
        if self.missing_mass:
            raise _no_pair_error(self)
        first, second = (self.log_p, self.log_q) if direction is Direction.REMOVE else (self.log_q, self.log_p)
        # each log-mass is within 4u (|log m| + 1) of the normalised pair's (the renormalising subtraction)
        err = 4.0 * _logmath.EPS * (np.abs(first) + np.abs(second) + 2.0)
        return loss_buckets.atom_buckets(first - second, first, edges, loss_error=err,
                                         log_mass_error=2.0 * _logmath.EPS * (np.abs(first) + 1.0))

    def _log_mgf(self, s):
        if self.missing_mass:
            raise _no_pair_error(self)
        terms = self.log_p[None, :] + np.asarray(s, dtype=np.complex128)[:, None] * self._loss()[None, :]
        return privacy_loss._complex_logsumexp(terms, axis=1)

    def _log_mgf_enclosure(self, s):
        """:func:`mechanisms.closed_form_enclosures.atoms_log_mgf_enclosure`; each stored log-mass within ``4u (|log
        m| + 1)`` of the normalised pair's (as :meth:`loss_buckets` allows, doubled), each loss within the sum of its
        two masses' errors and the subtraction's ``u``."""
        if self.missing_mass:
            raise _no_pair_error(self)
        loss = self._loss()
        mass_error = 4.0 * _logmath.EPS * (np.abs(self.log_p) + 1.0)
        loss_error = mass_error + 4.0 * _logmath.EPS * (np.abs(self.log_q) + 1.0) + _logmath.EPS * np.abs(loss)
        return closed_form_enclosures.atoms_log_mgf_enclosure(s, self.log_p, loss, mass_error, loss_error)

    def _rdp(self, orders):
        if self.missing_mass:
            return np.full(orders.shape, np.inf)
        # the largest |log p - log q| plus its error: the subtraction's, and the renormalisation's of each log-mass
        # (within 4u (|log m| + 1) of the exactly normalised pair; as loss_buckets allows): the pure epsilon must
        # be at or above every exact loss, or delta at it would not be 0
        slack = 8.0 * _logmath.EPS * (np.abs(self.log_p) + np.abs(self.log_q) + 2.0)
        eps_inf = float(_logmath.round_up(float(np.max(np.abs(self._loss()) + slack)), 4))
        # the upper ends of the enclosure: log M's rounding, divided by alpha - 1, exceeds the slack near order 1
        upper = lambda s: closed_form_enclosures.upper_from_enclosure(*self._log_mgf_enclosure(s))  # noqa: E731
        return _rdp_from_log_mgf(upper, orders, eps_inf)

    def _output_quadrature(self, max_frequency, tilt, gamma=None):
        if self.missing_mass:
            raise _no_pair_error(self)
        return privacy_loss.OutputQuadrature(
            log_weights=self.log_q.copy(),
            log_ratio=self._loss(),
            atoms=self.log_q.size,
            slope=np.zeros(0),
            log_density=np.zeros(0),
            neglected_log_mass=-np.inf,
        )


@dataclasses.dataclass(frozen=True, slots=True)
class ContinuousPairMechanism(Mechanism):
    """A mechanism dominated by two densities on an interval, given as vectorised log-density functions.

    Integrals over ``[lower, upper]`` use Gauss-Legendre panels (``panels`` of 24 nodes, more when a
    characteristic function at high frequency is asked for). Their error is estimated, not proven, so every
    number derived from a continuous pair is an estimate (``rdp_is_proven`` is False; the accountants label
    their reports accordingly).

    Mass is never assumed away: a density whose quadrature mass on the interval falls short of 1 by more than
    :data:`CONTINUOUS_MASS_TOLERANCE` (a truncated tail) leaves an infinite-loss atom (module docstring): ``rdp``
    is then ``+inf`` and :meth:`approximate` gives ``(normalised pair, missing mass)``, which the accountants
    charge as delta. A mass above ``1 + 1e-8`` is refused.

    Attributes
    ----------
    missing_mass : float
        ``max(1 - a, 1 - b)`` of the quadrature masses ``a``, ``b``; 0 within the tolerance.

    Examples
    --------
    >>> import numpy as np
    >>> lp = lambda x: -0.5 * (x - 1.0) ** 2 - 0.5 * np.log(2 * np.pi)
    >>> lq = lambda x: -0.5 * x ** 2 - 0.5 * np.log(2 * np.pi)
    >>> m = ContinuousPairMechanism(lp, lq, lower=-40.0, upper=41.0)
    >>> round(float(m.rdp(2.0)), 10)
    1.0

    Truncating N(0, 2) against N(0, 1) to [-10, 10] drops 1.5e-12 of P's mass, where the loss is unbounded
    (their order-2 divergence is infinite on the real line):

    >>> wide = lambda x: -x ** 2 / 4 - 0.5 * np.log(4 * np.pi)
    >>> cut = ContinuousPairMechanism(wide, lq, lower=-10.0, upper=10.0)
    >>> float(cut.rdp(2.0)), float(cut.approximate()[1]) > 1.5e-12
    (inf, True)
    """

    log_p: Callable
    log_q: Callable
    lower: float = dataclasses.field(kw_only=True)
    upper: float = dataclasses.field(kw_only=True)
    panels: int = dataclasses.field(default=256, kw_only=True)
    name: str = dataclasses.field(default="continuous pair", kw_only=True)
    missing_mass: float = dataclasses.field(default=0.0, init=False)
    _log_masses: tuple = dataclasses.field(default=(0.0, 0.0), init=False, repr=False, compare=False)

    rdp_is_proven = False  # quadrature with an estimated error
    log_mgf_is_proven = False

    def __post_init__(self):
        owner = "ContinuousPairMechanism"
        for f in ("log_p", "log_q"):
            if not callable(getattr(self, f)):
                raise TypeError(f"`{f}` of {owner} must be callable; got {type(getattr(self, f)).__name__}.")
        lo = _validate.real(self.lower, "lower", owner)
        hi = _validate.real(self.upper, "upper", owner)
        if not lo < hi:
            raise ValueError(f"`lower` of {owner} must be below `upper`; got [{lo}, {hi}].")
        object.__setattr__(self, "lower", lo)
        object.__setattr__(self, "upper", hi)
        object.__setattr__(self, "panels", _validate.positive_int(self.panels, "panels", owner))
        x, w = privacy_loss._gauss_legendre_panels(lo, hi, self.panels)
        masses = []
        for f in ("log_p", "log_q"):
            values = np.asarray(getattr(self, f)(x), dtype=np.float64)
            if values.shape != x.shape or np.isnan(values).any() or np.isposinf(values).any():
                raise NumericalError(f"`{f}` of {owner} must be vectorised and return finite log-densities.")
            if np.isneginf(values).any():
                raise ValueError(f"`{f}` of {owner} must be positive on [{lo}, {hi}]; got log-density -inf "
                                 "(restrict the interval to the common support and let the rest be charged).")
            masses.append(math.fsum(w * np.exp(values)))
        missing = _missing_mass(masses[0], masses[1], CONTINUOUS_MASS_TOLERANCE, owner)
        if max(masses) > 1.0 + 1e-8:
            raise ValueError(f"`log_p` and `log_q` of {owner} must integrate to at most 1 on [{lo}, {hi}]; "
                             f"got {masses[0]!r} and {masses[1]!r}.")
        object.__setattr__(self, "missing_mass", missing)
        object.__setattr__(self, "_log_masses", (math.log(masses[0]), math.log(masses[1])))

    def approximate(self) -> tuple[Mechanism, float]:
        """``(pair with both densities divided by their quadrature masses, missing_mass)``; ``(self, 0.0)`` if
        nothing is missing."""
        if self.missing_mass == 0.0:
            return self, 0.0
        shift_p, shift_q = self._log_masses
        core = ContinuousPairMechanism(
            functools.partial(_shifted, self.log_p, shift_p), functools.partial(_shifted, self.log_q, shift_q),
            lower=self.lower, upper=self.upper, panels=self.panels, name=self.name,
        )
        return core, self.missing_mass

    def _nodes(self, max_frequency=0.0):
        x, w = privacy_loss._gauss_legendre_panels(self.lower, self.upper, self.panels)
        log_p, log_q = self.log_p(x), self.log_q(x)
        slope = np.abs(np.gradient(log_p - log_q, x)).max() if x.size > 1 else 0.0
        extra = privacy_loss._panels(self.upper - self.lower, slope, max_frequency, per_unit=0.0)
        if extra > self.panels:
            x, w = privacy_loss._gauss_legendre_panels(self.lower, self.upper, extra)
            log_p, log_q = self.log_p(x), self.log_q(x)
        return x, np.log(w), np.asarray(log_p, dtype=float), np.asarray(log_q, dtype=float)

    def _log_mgf(self, s):
        if self.missing_mass:
            raise _no_pair_error(self)
        s = np.asarray(s, dtype=np.complex128)
        _, log_w, log_p, log_q = self._nodes(float(np.abs(s.imag).max(initial=0.0)))
        terms = (log_w + log_p)[None, :] + s[:, None] * (log_p - log_q)[None, :]
        return privacy_loss._complex_logsumexp(terms, axis=1)

    def _rdp(self, orders):
        if self.missing_mass:
            return np.full(orders.shape, np.inf)
        _, _, log_p, log_q = self._nodes()
        return _rdp_from_log_mgf(self._log_mgf, orders, float(np.abs(log_p - log_q).max()))

    def _output_quadrature(self, max_frequency, tilt, gamma=None):
        if self.missing_mass:
            raise _no_pair_error(self)
        x, log_w, log_p, log_q = self._nodes(max_frequency)
        return privacy_loss.OutputQuadrature(
            log_weights=log_w + log_q,
            log_ratio=log_p - log_q,
            atoms=0,
            slope=np.maximum(np.abs(np.gradient(log_p - log_q, x)), 1e-300),
            log_density=log_q,
            neglected_log_mass=-np.inf,
        )


@dataclasses.dataclass(frozen=True, slots=True)
class CharacteristicFunctionMechanism(Mechanism):
    """A mechanism given by ``log_mgf(s) = log E_P[e^(s L)]`` of a dominating pair (remove direction), a
    vectorised function of complex ``s`` that must be analytic on the strip the accountants use.

    Its RDP is read off the real axis (both directions); ``pure_epsilon_value`` (default inf) is the largest
    absolute privacy loss if known. ``log_mgf_sup_function(c, u_min)``, if given, must bound
    ``sup_{|u| >= u_min} Re log M(c + iu)``; without it the accountant assumes no decay (always valid, but a
    characteristic function that does decay then needs many more nodes, or cannot be certified). It cannot be
    Poisson-subsampled in the Fourier accountant (that needs the
    pair itself); use DiscretePairMechanism or ContinuousPairMechanism for that.

    Examples
    --------
    >>> m = CharacteristicFunctionMechanism(lambda s: 0.5 * s * (s + 1.0), name="mu = 1 Gaussian")
    >>> round(float(m.rdp(3.0)), 10)
    1.5
    """

    log_mgf_function: Callable
    pure_epsilon_value: float = dataclasses.field(default=float("inf"), kw_only=True)
    log_mgf_sup_function: Callable = dataclasses.field(default=None, kw_only=True)
    name: str = dataclasses.field(default="characteristic function", kw_only=True)

    def __post_init__(self):
        if self.log_mgf_sup_function is not None and not callable(self.log_mgf_sup_function):
            raise TypeError("`log_mgf_sup_function` of CharacteristicFunctionMechanism must be callable or None.")
        if not callable(self.log_mgf_function):
            raise TypeError(
                "`log_mgf_function` of CharacteristicFunctionMechanism must be callable; got "
                f"{type(self.log_mgf_function).__name__}."
            )
        object.__setattr__(
            self,
            "pure_epsilon_value",
            _validate.nonnegative(self.pure_epsilon_value, "pure_epsilon_value", "CharacteristicFunctionMechanism",
                                  allow_inf=True),
        )

    def _log_mgf(self, s):
        s = np.asarray(s, dtype=np.complex128)
        out = np.asarray(self.log_mgf_function(s.copy()), dtype=np.complex128)
        if out.shape != s.shape:
            raise NumericalError(
                f"log_mgf_function of {self.name!r} returned shape {out.shape} for input {s.shape}; "
                "it must be vectorised."
            )
        return out

    def _rdp(self, orders):
        return _rdp_from_log_mgf(self._log_mgf, orders, self.pure_epsilon_value)

    def log_mgf_sup(self, real_part: float, u_min: float) -> float:
        if self.log_mgf_sup_function is None:
            return Mechanism.log_mgf_sup(self, real_part, u_min)
        return float(self.log_mgf_sup_function(real_part, u_min))
