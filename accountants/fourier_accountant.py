"""``FourierAccountant``: composition by adding log characteristic functions, certified Fourier inversion.

The analytical Fourier accountant of thesis Sec 3.4 (Algorithm 1): each mechanism contributes the log moment
generating function of its dominating pair's privacy loss (thesis Def 3.3.7; ``Mechanism.log_mgf``), composition
adds them (thesis Prop 3.3.8, Thm 3.3.4), so ``count`` costs O(1). ``delta(epsilon)`` is priced per direction
(remove and add, thesis Thm 3.3.5) by :mod:`accountants.fourier_inversion` and the larger one is reported; a
direction whose certified upper bound is below the other's certified lower bound cannot decide the maximum and
needs no accuracy (:func:`accountants._fourier_search.max_delta_bounds`, which proves it). The add direction is
the remove direction's pair swapped, so the plan of the direction searched first also bounds the other's delta
(``delta_add(eps) = 1 - e^eps + e^eps delta_remove(-eps)``, :func:`accountants._fourier_search.mirror_delta_upper`):
a direction that bound rules out costs one inversion.

Paths, by ledger:

* a single run of a mechanism with an exact profile (``Mechanism.has_exact_profile``: the Gaussian, the Laplace
  mechanism and their Poisson-subsampled versions): that profile, with its rounding bounded
  (``Mechanism.delta_bounds_one_run``);
* a few runs of Poisson-subsampled Gaussians narrow enough that inversion would be slow
  (:meth:`FourierAccountant._few_runs`): two to ten runs (up to fifty of the narrowest) on privacy buckets cut to
  a window around epsilon, second order at both ends (:mod:`accountants.windowed_buckets`), or two runs whose loss
  is too narrow for the window with the second run's exact profile (:mod:`accountants.two_runs`); an interval wider
  than ``rtol`` there is intersected with the other paths';
* Gaussian entries merge into one Gaussian (summed ``mu^2``) and two-point entries (randomized response, pure
  DP) are evaluated together as arrays, so a ledger of m distinct mechanisms costs O(m) vectorised work;
* only two-point entries (at most ``MAX_ATOMS`` composed outcomes, not counting the group of most runs, which is
  summed through its tail sums: :mod:`accountants.two_point_ledger`): exact enumeration with bounded rounding
  (:func:`accountants._fourier_atoms.two_point_lattice`);
* Laplace (subsampled or not) and two-point entries only (no Gaussian; at most ``MAX_ATOMS`` composed atoms,
  counted the same way; Poisson-subsampled entries, whose atoms differ between the directions, make one split per
  direction): the all-atom part of the law is enumerated exactly, so are its products with one continuous run
  (:mod:`accountants._laplace_first_order`), and only the rest, whose transform decays like ``1/u^2``, is
  Fourier-inverted (:func:`accountants._fourier_atoms.laplace_split`); where that cannot reach ``rtol`` (a tiny
  delta), the privacy buckets (below);
* only purely atomic losses beyond the enumerations (discrete pairs), or a characteristic function that would
  only be estimated while proven loss buckets exist: the privacy buckets (below);
* otherwise Fourier inversion of the whole law, per direction (:mod:`accountants._fourier_search`): on the
  contour ``Re s = kappa > 0`` at the Chernoff-optimal (saddle-point) damping, capped at
  ``MAX_DAMPING_CLOSED_FORM`` for closed forms and ``MAX_DAMPING`` where a quadrature's range grows with it, or,
  for delta far below the mean loss (large delta), ``1 - delta`` on a contour left of the pole at 0.

Cut laws: where a mechanism offers one (:meth:`~mechanisms.base.Mechanism.remove_body`: the
Poisson-subsampled Gaussian at a sampling probability up to
:data:`mechanisms.subsampled_body.CUT_MAX_SAMPLING`), the remove direction's upper
tail is cut at a loss whose tail mass, over all runs, is at most ``rtol delta / CUT_SHARE``; the rest is inverted
as a sub-probability law and the mass left out joins the upper end ("Cut laws" in
:mod:`accountants.fourier_inversion`). The lognormal tail of a narrow loss makes the whole law's MGF explode at the
tilts its saddle point needs; cut, the saddle point is reachable (dampings up to ``CUT_MAX_DAMPING``) and a few
hundred nodes replace tens of thousands (q = 1e-4, sigma = 1-5, 10 steps: 8,192-32,768 nodes before). A delta
query does not know delta yet: its cut is sized from the Chernoff bound, then from the proven lower end of a first
attempt (:meth:`FourierAccountant._inverted_delta`), and the whole laws are inverted where neither meets ``rtol``.

Characteristic functions are closed forms or proven enclosures (the Poisson-subsampled Gaussian,
:mod:`mechanisms.subsampled_gaussian_cf`; their errors join the inversion's bound) and the reports say "upper
bound"; the Poisson-subsampled Laplace has one too (:mod:`mechanisms.subsampled_laplace_cf`); a ledger with a
characteristic function estimated by quadrature (custom continuous pairs) is labelled "estimate" and names that
part.

Privacy buckets (:mod:`accountants.privacy_buckets`): few runs of a small sampling probability (say q <= 1e-3
and 10-100 steps) give a privacy loss piled up near its infimum whose characteristic function decays only like a
lognormal's left tail, so the truncation cannot be bounded within ``max_terms`` nodes or the quadrature would
exceed its work limit (both found before any node is evaluated). Where every mechanism has proven loss buckets
(:meth:`mechanisms.base.Mechanism.loss_buckets`: the Gaussian, its Poisson-subsampled version, two-point atoms,
discrete pairs) such ledgers, ledgers whose characteristic functions would only be estimated, and ledgers of
purely atomic losses (discrete pairs, whose transforms do not decay) are answered by composing proven discretised
loss distributions instead; their interval is set by the grid (connect-the-dots above; Jensen's pairs below for
the Gaussian and its Poisson-subsampled version, both of second order; every loss rounded down below otherwise, of
first order), not by ``rtol``. Where the inversion was tried first and failed, what it proved (the error's
``proven``) is intersected with that interval, which loose inversions inside it may narrow further
(``_via_buckets``). Otherwise the request fails with the inversion's error (``AccuracyError`` / ``NumericalError``
naming RDPAccountant). Ledgers with more than ``MAX_ATOMS`` Laplace atoms and no Gaussian have non-decaying
characteristic functions; ``max_terms = 2**20`` certifies about rtol 1e-5 at best there: pass a larger ``rtol``.
"""

import functools
import math
import warnings

import numpy as np
from numpy.typing import ArrayLike

from dpledger.accountants._fourier_atoms import (
    laplace_split,
    two_point_lattice,
    two_point_log_mgf,
    two_point_log_mgf_enclosure,
    two_point_loss,
)
from dpledger.accountants._fourier_search import (  # AccuracyError (and COMPLEMENT_SWITCH) are re-exported from here
    COMPLEMENT_SWITCH,  # noqa: F401
    AccuracyError,
    bounds_in_bracket,
    damping_cap,
    max_delta_bounds,
    max_epsilon_bounds,
    split_delta_bounds,
    split_epsilon_bounds,
)
from dpledger.accountants._roots import bracket_crossing
from dpledger.accountants.fourier_inversion import (
    MAX_DAMPING,
    MAX_DAMPING_CLOSED_FORM,
    MAX_DAMPING_ENCLOSED,
    Bounds,
    chernoff_log_delta,
    log_chernoff_constant,
)
from dpledger.accountants.privacy_buckets import BucketLedger
from dpledger.accountants.report import BoundKind, PrivacyReport
from dpledger.accountants.risk import tradeoff_lower_bound
from dpledger.accountants.two_point_ledger import MAX_ATOMS, LedgerMax, TwoPointLedger, enumerated_outcomes
from dpledger.accountants.two_runs import NARROW, TwoRunLedger, narrowness
from dpledger.accountants.windowed_buckets import MAX_RUNS, WindowedLedger, faster_than_inversion
from dpledger.mechanisms import _logmath, _tilts, _validate, closed_form_enclosures, privacy_loss
from dpledger.mechanisms.base import Mechanism
from dpledger.mechanisms.composition import composed_delta
from dpledger.mechanisms.errors import EstimateWarning, MissingCapabilityError, NumericalError
from dpledger.mechanisms.relations import Direction, NeighboringRelation
from dpledger.mechanisms.subsampled import PoissonSubsampled
from dpledger.mechanisms.subsampled_gaussian_two_runs import TwoSubsampledGaussians

__all__ = ["FourierAccountant", "AccuracyError"]

#: tradeoff_curve: epsilons whose Chernoff bound on delta is below 2^-60 take that bound without an inversion.
_NEGLIGIBLE_LOG_DELTA = -60.0 * np.log(2.0)


#: Smallest delta at which epsilon is searched by Fourier inversion (its tolerances scale with delta).
SMALLEST_INVERTED_DELTA = 1e-290
#: Share of ``rtol delta`` the cut laws of an epsilon query may leave out (:meth:`FourierAccountant._remove_bodies`).
CUT_SHARE = 64.0
#: A delta query's first cut is sized for this fraction of a Chernoff bound on the remove direction's delta
#: (:meth:`FourierAccountant._inverted_delta`; only the work depends on it).
DELTA_CUT_GUESS = 1e-2
#: Damping cap of a direction whose transforms cost the same at any tilt: a remove direction made only of cut laws,
#: an add direction made only of mechanisms with :meth:`~mechanisms.base.Mechanism.tilt_free_damping`.
CUT_MAX_DAMPING = 1e5


class FourierAccountant:
    """Exact (epsilon, delta) accounting from characteristic functions, with certified error bounds.

    Parameters
    ----------
    rtol : float, default 1e-6
        Target relative width of the (lower, upper) interval of delta; epsilon inherits it.
    max_terms : int, default 2**20
        Largest number of Fourier nodes per inversion before giving up (:class:`AccuracyError`).

    Getters ``get_delta`` / ``get_epsilon`` return the upper end of the interval (``delta_bounds`` /
    ``epsilon_bounds`` return all three of lower, estimate and upper). It is a proven upper bound when
    :attr:`certified` (every characteristic function in closed form). For mechanisms whose characteristic
    function comes from numerical quadrature (custom continuous pairs) the error rests on that
    quadrature and is estimated, not proven: reports then say :attr:`~accountants.report.BoundKind.ESTIMATE`
    and which part is estimated, and ``get_delta`` / ``get_epsilon`` warn with
    :class:`~mechanisms.errors.EstimateWarning`. Randomized response and pure DP alone are enumerated exactly;
    Laplace ledgers (subsampled or not) without a Gaussian have their atoms enumerated exactly (see the module
    docstring for the paths and the remaining limit).

    A mechanism that is only ``delta_m``-approximately its core (:meth:`mechanisms.base.Mechanism.approximate`,
    for example a custom pair with mass off the common support) is composed through its core and the ledger
    charges ``1 - prod (1 - delta_m)^count`` (:attr:`charged_delta`): it is added to every delta, epsilon is
    found at ``delta`` minus it (``inf`` if nothing is left), and the lower ends become the trivial bounds (the
    missing mass may sit anywhere).

    Examples
    --------
    >>> from dpledger.mechanisms import GaussianMechanism
    >>> fa = FourierAccountant().compose(GaussianMechanism(sigma=30.0), count=240)
    >>> round(fa.get_epsilon(1e-10), 6)
    3.207781
    """

    relation = NeighboringRelation.ADD_OR_REMOVE_ONE

    def __init__(self, *, rtol: float = 1e-6, max_terms: int = 1 << 20) -> None:
        # a relative accuracy: 1 or more would ask for nothing (and left the search's tolerances above delta)
        self._rtol = _validate.open_unit_interval(rtol, "rtol", "FourierAccountant")
        self._max_terms = _validate.positive_int(max_terms, "max_terms", "FourierAccountant")
        self._entries = {}
        self._cores = {}  # mechanism -> (core, delta) of Mechanism.approximate
        self._compiled = self._closed = None
        self._derived = {}  # per-ledger caches (exact enumerations), cleared by compose

    # ------------------------------------------------------------------ state
    @property
    def ledger(self) -> tuple[tuple[Mechanism, int], ...]:
        """``((mechanism, count), ...)`` in the order mechanisms were first composed."""
        return tuple(self._entries.items())

    def supports(self, mechanism: Mechanism) -> bool:
        """Dry run: whether ``compose(mechanism)`` would succeed (the mechanism, or its
        :meth:`~mechanisms.base.Mechanism.dominating_mechanism`, has a dominating pair)."""
        if not isinstance(mechanism, Mechanism):
            return False
        try:
            self._check(self._core(mechanism)[0])
        except (MissingCapabilityError, TypeError):
            return False
        return True

    @staticmethod
    def _core(mechanism):
        """``(core, delta)``: the mechanism is ``delta``-approximately ``core`` (:meth:`Mechanism.approximate`),
        taken through its dominating mechanism (what this accountant composes in its place)."""
        core, delta = mechanism.approximate()
        return core.dominating_mechanism(), delta

    @staticmethod
    def _check(mechanism):
        if not isinstance(mechanism, Mechanism):
            raise TypeError(
                f"`mechanism` of FourierAccountant.compose must be a Mechanism; got {type(mechanism).__name__}."
            )
        if mechanism.gaussian_loss_noise_multiplier() is not None or two_point_loss(mechanism) is not None:
            return  # closed forms that always exist
        if mechanism.log_mgf_defined_everywhere:
            return  # nothing a probe could find (Mechanism.log_mgf_defined_everywhere)
        probe = np.array([0.5, 0.5 + 1.0j])
        for direction in Direction:
            mechanism.log_mgf(probe, direction)

    def compose(self, mechanism: Mechanism, count: int = 1) -> "FourierAccountant":
        """Add ``count`` runs of ``mechanism``; returns ``self``. Transactional (checks first)."""
        count = _validate.positive_int(count, "count", "FourierAccountant.compose")
        if not isinstance(mechanism, Mechanism) or mechanism not in self._entries:
            if not isinstance(mechanism, Mechanism):
                self._check(mechanism)
            core, delta = self._core(mechanism)
            self._check(core)
            self._cores[mechanism] = (core, float(delta))
        self._entries[mechanism] = self._entries.get(mechanism, 0) + count
        self._compiled = self._closed = None
        self._derived = {}
        return self

    def _compile(self):
        """The ledger grouped for vectorised evaluation: Gaussian losses merged into one (summed ``mu^2``),
        two-point losses (randomized response, pure DP) as arrays of ``(E, count)`` with equal ``E`` merged,
        and the rest as ``(mechanism, count)`` pairs."""
        if self._compiled is None:
            mu2, two_point, others = 0.0, {}, []
            for original, n in self._entries.items():
                m = self._cores[original][0]
                e = two_point_loss(m)
                noise = m.gaussian_loss_noise_multiplier()
                if noise is not None:
                    mu2 += n / noise**2
                elif e is not None:
                    two_point[e] = two_point.get(e, 0) + n
                else:
                    others.append((m, n))
            e_values = np.array(sorted(two_point), dtype=np.float64)
            counts = np.array([two_point[e] for e in e_values], dtype=np.float64)
            self._compiled = (mu2, e_values, counts, tuple(others))
        return self._compiled

    def log_mgf(self, s: ArrayLike, direction: Direction = Direction.REMOVE) -> np.ndarray:
        """``log E_P[e^(sL)]`` of the composed privacy loss for one direction (zero for an empty ledger)."""
        if not isinstance(direction, Direction):
            raise TypeError(f"`direction` of FourierAccountant.log_mgf must be a Direction; got {direction!r}.")
        try:
            arr = np.asarray(s, dtype=np.complex128)
        except (TypeError, ValueError):
            raise TypeError(f"`s` of FourierAccountant.log_mgf must be complex numbers; got {s!r}.") from None
        if np.isnan(arr).any():
            raise ValueError("`s` of FourierAccountant.log_mgf must be numbers; got nan.")
        return self._log_mgf(arr, direction)

    def _log_mgf(self, s, direction, bodies=None):
        """``log M(s)`` of the composed loss; ``bodies`` (:meth:`_remove_bodies`, remove direction only): the cut
        laws that replace those mechanisms (their enclosures' values; at real ``s`` their upper bounds)."""
        s = np.asarray(s, dtype=np.complex128)
        mu2, e_values, counts, others = self._compile()
        # Gaussian and two-point pairs are symmetric: both directions share one M.
        total = privacy_loss.gaussian_log_mgf(s, 1.0) * mu2 if mu2 else np.zeros(s.shape, dtype=np.complex128)
        if e_values.size:
            total = total + two_point_log_mgf(s, e_values, counts)
        for mechanism, count in others:
            body = bodies.get(mechanism) if bodies else None
            if body is None:
                total = total + count * mechanism.log_mgf(s, direction)
            elif not s.imag.any():
                total = total + count * body.log_mgf_upper(s.real)
            else:
                total = total + count * body.log_mgf_enclosure(s)[0]
        return total

    def _log_mgf_upper(self, s, direction, bodies=None):
        """Proven upper bounds on ``log M(s)`` at real ``s`` (:meth:`Mechanism.log_mgf_upper`: cheaper where a
        mechanism has a cheaper bound than its enclosure; ``bodies`` as in :meth:`_log_mgf`). The Gaussian and
        two-point parts: the upper ends of their enclosures (:meth:`_closed_parts`). The sum of the parts is rounded
        up by ``(k + 2) u`` of the sum of their magnitudes (``k`` of them)."""
        s = np.asarray(s, dtype=np.float64)
        others = self._compile()[3]
        parts = [closed_form_enclosures.upper_from_enclosure(value, error) for value, error in self._closed_parts(s)]
        whole = [(m, n) for m, n in others if not (bodies and m in bodies)]
        # every mechanism's bound from one batch (PoissonSubsampled.log_mgf_upper_many: the same bounds), summed in
        # the ledger's order as before
        values = iter(PoissonSubsampled.log_mgf_upper_many([m for m, _ in whole], s, direction))
        for mechanism, count in others:
            body = bodies.get(mechanism) if bodies else None
            parts.append(count * (next(values) if body is None else body.log_mgf_upper(s)))
        total, scale = np.zeros(s.shape), np.zeros(s.shape)
        for part in parts:
            total, scale = total + part, scale + np.abs(part)
        return np.asarray(total + (len(parts) + 2) * _logmath.EPS * scale, dtype=np.float64)

    def _closed_parts(self, s):
        """``[(log M~, log E)]`` of the ledger's Gaussian part (summed ``mu^2``) and two-point part, those it has:
        :func:`mechanisms.closed_form_enclosures.gaussian_log_mgf_enclosure` with ``mu^2`` within ``(k + 6) eps`` of
        the exact sum (``k`` Gaussian entries, each ``n / noise^2`` within ``4u`` after the noise multiplier's own
        rounding, summed: ``(k + 4) u``, doubled), and
        :func:`accountants._fourier_atoms.two_point_log_mgf_enclosure`."""
        s = np.asarray(s, dtype=np.complex128)
        mu2, e_values, counts, _ = self._compile()
        parts = []
        if mu2:
            gaussians = sum(1 for core, _ in self._cores.values() if core.gaussian_loss_noise_multiplier() is not None)
            parts.append(closed_form_enclosures.gaussian_log_mgf_enclosure(
                s, mu2, (gaussians + 6) * _logmath.EPS))
        if e_values.size:
            parts.append(two_point_log_mgf_enclosure(s, e_values, counts))
        return parts

    def _log_mgf_enclosure(self, s, direction, bodies=None):
        """``(log M~, log E)`` of the composed loss, ``|M(s) - M~(s)| <= E(s)``: the Gaussian and two-point parts'
        enclosures (:meth:`_closed_parts`, float rounding bounded: ``n`` runs of a per-run log carry ``n`` times its
        absolute rounding, which the inversion's model of a node's rounding, a few ulps of ``8 + |log M|``, does not
        cover) and the mechanisms' (``bodies``' where given, as in :meth:`_log_mgf`) combined by
        :func:`mechanisms._logmath.log_product_error`."""
        s = np.asarray(s, dtype=np.complex128)
        others = self._compile()[3]
        parts = [(1, value, error) for value, error in self._closed_parts(s)]
        for mechanism, count in others:
            body = bodies.get(mechanism) if bodies else None
            value, error = (mechanism.log_mgf_enclosure(s, direction) if body is None
                            else body.log_mgf_enclosure(s))
            parts.append((count, value, error))
        if not parts:
            return np.zeros(s.shape, dtype=np.complex128), np.full(s.shape, -np.inf)
        total = parts[0][0] * parts[0][1]
        for count, value, _ in parts[1:]:
            total = total + count * value
        return total, _logmath.log_product_error(parts)

    def _remove_bodies(self, delta):
        """``{mechanism: cut law}`` for an epsilon query at ``delta``: each mechanism of the ledger that can cut
        the upper tail of its remove-direction law (:meth:`~mechanisms.base.Mechanism.remove_body`: the
        Poisson-subsampled Gaussian), cut so that all runs together leave out at most ``rtol delta /
        CUT_SHARE`` (each run ``1 / runs`` of it); None where there is none, or the ledger is not certified.

        Why: few runs of a small sampling probability have a narrow loss with a lognormal upper tail, whose MGF
        explodes at the tilts the saddle point asks for; the inversion then needs a small damping and a long
        period (8,192-32,768 nodes at q = 1e-4, sigma 1-5, 10 steps). Cut, the law's MGF stays small at any tilt,
        and a few hundred nodes suffice. The composed law's part left out (some run in its tail) has mass at most
        ``sum_m n_m p_m`` (a union bound); "Cut laws" in :mod:`accountants.fourier_inversion` proves delta stays
        in ``[delta_body, delta_body + that]``, and ``CUT_SHARE`` keeps it a small part of ``rtol``."""
        cache = self._derived.setdefault("bodies", {})
        if delta not in cache:
            cache[delta] = self._cut_bodies(delta) if self._cf_proven() else None
        return cache[delta]

    def _cut_bodies(self, delta):
        """The cut laws of :meth:`_remove_bodies` (None if no mechanism has one)."""
        others = self._compile()[3]
        runs = sum(n for _, n in others)  # every run of the rest, cut or not: each share only smaller
        if not runs:
            return None
        log_mass = math.log(self._rtol * delta / CUT_SHARE / runs)  # < 0: rtol and delta are in (0, 1)
        bodies = {m: m.remove_body(log_mass) for m, _ in others}
        return {m: body for m, body in bodies.items() if body is not None} or None

    def _left_out(self, bodies):
        """Upper bound on the mass the ``bodies`` leave out of the composed law: ``sum_m n_m p_m`` (union bound over
        the runs), each product and sum rounded up."""
        total = 0.0
        for m, n in self._compile()[3]:
            if m in bodies:
                term = _logmath.mul_up(float(n), float(np.exp(bodies[m].log_tail_mass)) * (1.0 + 4.0 * _logmath.EPS))
                total = float(_logmath.add_up(total, term))
        return total

    def _direction_log_mgf(self, direction, bodies=None):
        """``s -> log M(s)`` of the composed loss for one direction; when :attr:`certified`, it also has an
        ``enclosure(s)`` method (``(log M~, log E)``, used for the Fourier nodes). ``bodies``: the remove
        direction's cut laws (:meth:`_remove_bodies`)."""
        return _DirectionLaw(self, direction, bodies)

    def _directions(self, delta=None):
        """``(direction, log MGF, decay bound)`` of the composed loss for both directions (the searches of
        :mod:`accountants._fourier_search` take the maximum over them). ``delta``: an epsilon query's, for which
        the remove direction's law is cut where that helps (:meth:`_remove_bodies`).

        A ledger of Gaussians and two-point pairs only (no other mechanism) has one law for both: ``M(-1 - s) =
        M(s)`` for ``exp(mu^2 s (s + 1) / 2)`` and for ``p e^(s E) + (1 - p) e^(-s E)`` with ``p = 1 / (1 +
        e^-E)`` (``p e^-E = 1 - p``), so the add direction's law, ``M(-1 - s)``, is the remove direction's, their
        deltas and epsilons are equal, and the remove direction alone is searched."""
        bodies = None if delta is None else self._remove_bodies(delta)
        symmetric = not self._compile()[3]
        return [(d, self._direction_log_mgf(d, bodies if d is Direction.REMOVE else None),
                 self._log_mgf_sup(d, bodies if d is Direction.REMOVE else None))
                for d in Direction if not (symmetric and d is Direction.ADD)]

    def _log_mgf_sup(self, direction, bodies=None):
        mu2, e_values, counts, others = self._compile()

        def sup(kappa, u_min):
            # the remove direction's argument; the add direction's -1 - kappa is exact at the dampings the plans
            # choose (mechanisms._tilts.exact_tilt), and where it is not, each mechanism's bound is widened
            c, offset = (kappa, 0.0) if direction is Direction.REMOVE else map(float, _tilts.two_sum(-1.0, -kappa))
            total = 0.5 * mu2 * (c * (c + 1.0) - u_min * u_min)  # Gaussian: exact, decreasing in |u|
            # its rounding: a few ulps of mu2 (c (c + 1) + u_min^2) / 2, and of each part added below
            scale = 0.5 * mu2 * (abs(c * (c + 1.0)) + u_min * u_min) + 1.0
            if e_values.size:  # two-point losses do not decay: |M(c + iu)| <= M(c) (its enclosure's upper end)
                value, error = two_point_log_mgf_enclosure(np.array([complex(c)]), e_values, counts)
                total += float(closed_form_enclosures.upper_from_enclosure(value[0], error[0]))
                scale += abs(total)
            for m, n in others:
                body = bodies.get(m) if bodies else None
                part = m.log_mgf_sup(c, u_min) if body is None else body.log_mgf_sup(c, u_min)
                if offset != 0.0 and not m.log_mgf_is_closed_form:
                    part = float(np.logaddexp(part, _tilts.log_shift_error(
                        lambda points, m=m: m.log_mgf_upper(points, Direction.REMOVE), c, offset)))
                total += n * part
                scale += n * (abs(part) + 1.0)  # each run's bound within a few ulps of its parts (about 1 + |part|)
            return float(total + (len(others) + 8) * _logmath.EPS * (scale + abs(total)))

        return sup

    def _two_point_lattice(self):
        if "lattice" not in self._derived:
            self._derived["lattice"] = two_point_lattice(self._compile())
        return self._derived["lattice"]

    def _atom_lattice(self):
        """Exact enumeration when every mechanism's loss is two-point in each direction
        (:meth:`~mechanisms.base.Mechanism.loss_atoms`: randomized response, pure DP and their Poisson-subsampled
        versions) and each direction has at most ``MAX_ATOMS`` composed outcomes: the maximum of the remove and add
        ledgers (:class:`~accountants.two_point_ledger.LedgerMax`); None otherwise. Their characteristic
        functions do not decay, so Fourier inversion could not certify them (issue 14 item 4)."""
        if "atoms" not in self._derived:
            groups = []
            for original, n in self._entries.items():
                atoms = self._cores[original][0].loss_atoms()
                if atoms is None:
                    groups = None
                    break
                if atoms["remove"][:2] != (0.0, 0.0):  # a zero loss adds nothing
                    groups.append((atoms, n))
            result = None
            if groups and enumerated_outcomes([n for _, n in groups]) <= MAX_ATOMS:
                result = LedgerMax([TwoPointLedger(atoms=[(atoms[d], n) for atoms, n in groups])
                                    for d in ("remove", "add")])
            self._derived["atoms"] = result
        return self._derived["atoms"]

    def _laplace_split(self):
        """``((direction, LaplaceSplit), ...)`` (:func:`accountants._fourier_atoms.laplace_split`) or None."""
        if "split" not in self._derived:
            self._derived["split"] = laplace_split(self._compile())
        return self._derived["split"]

    def _split_pairs(self, splits):
        """``[(log MGF of the whole ledger in that direction, its split)]`` for the split searches."""
        return [(self._direction_log_mgf(direction), split) for direction, split in splits]

    def _buckets(self):
        """The ledger's privacy buckets (:class:`accountants.privacy_buckets.BucketLedger`) when every mechanism
        has proven loss buckets, else None; built on first use and kept until the ledger changes."""
        if "buckets" not in self._derived:
            cores = [(self._cores[m][0], n) for m, n in self._entries.items()]
            self._derived["buckets"] = BucketLedger(cores) if self._bucketable() else None
        return self._derived["buckets"]

    def _cf_proven(self):
        return all(core.log_mgf_is_proven and core.rdp_is_proven for core, _ in self._cores.values())

    def _buckets_reason(self):
        if self._discrete():
            return "purely atomic losses, whose characteristic functions do not decay"
        if not self._cf_proven():
            return "this ledger's characteristic functions would only be estimated; its buckets are proven"
        return "Fourier inversion cannot reach this ledger: its characteristic function decays too slowly"

    def _bucketable(self):
        return bool(self._entries) and all(self._cores[m][0].has_loss_buckets for m in self._entries)

    def _discrete(self):
        """Every loss in the ledger purely atomic (its characteristic function does not decay, so inversion
        cannot certify it): such ledgers go to the privacy buckets directly."""
        return self._bucketable() and all(self._cores[m][0].loss_is_discrete for m in self._entries)

    def _via_buckets(self, inverted, bucketed, narrow=None):
        """``inverted()``, or ``bucketed(ledger)`` where the ledger has loss buckets and inversion cannot answer
        (the characteristic function decays too slowly: few runs of a small sampling probability, or atoms) or
        would rest on an estimated characteristic function (the buckets are proven).

        An inversion that failed may still have proven bounds (its error's ``proven``: certified, only wider than
        ``rtol``, :func:`accountants._fourier_search.max_epsilon_bounds`); the buckets' interval is then
        intersected with them (:func:`_intersect`): both contain the exact value, so their intersection does, and
        its ends are each one of the two proven ends. ``narrow``, if given, then maps that proven interval to a
        proven interval inside it (loose inversions, :func:`accountants._fourier_search.bounds_in_bracket`); it is
        called only where the failed search got as far as proving something (an inversion that could not start,
        say a characteristic function beyond float64, would fail there too)."""
        first = None
        if not (self._discrete() or (self._bucketable() and not self._cf_proven())):
            try:
                result = inverted()
                self._derived["path"] = "inversion"
                return result
            except (AccuracyError, NumericalError) as error:
                if not self._bucketable():
                    raise
                first = error
        try:
            result = bucketed(self._buckets())
            self._derived["bucketed"] = True  # this query's answer (the RDP cap may lower it: _rdp_capped)
        except AccuracyError as error:
            if first is None:
                raise
            first.add_note(f"The privacy buckets could not answer either: {error}")
            raise first from None
        proven = getattr(first, "proven", None)
        if proven is not None and self._cf_proven():
            combined = _intersect(result, proven)
            if narrow is not None:
                combined = _intersect(combined, narrow(combined))
            self._derived["path"] = "buckets+inversion" if combined != result else "buckets"
            return combined
        self._derived["path"] = "buckets"
        return result

    def _max_damping(self):
        """Damping cap: large for closed-form ledgers (cost independent of the tilt) and enclosures over a fixed range
        (:attr:`~mechanisms.base.Mechanism.log_mgf_allows_large_damping`: the subsampled Laplace), small where a
        quadrature's range grows with the tilt (the subsampled Gaussian)."""
        closed = all(core.log_mgf_allows_large_damping for core, _ in self._cores.values())
        if closed and self.certified:
            return MAX_DAMPING_CLOSED_FORM
        return MAX_DAMPING

    def _inverted(self, search, *args, delta=None):
        """``search(directions, *args, **settings)``; for proven enclosures (the subsampled Gaussian), which cost
        little more at large tilts, a failure at the usual damping cap is retried at ``MAX_DAMPING_ENCLOSED``: far
        below the saddle point the terms' rounding can swamp a small delta (long, lightly subsampled ledgers). Not
        where every deciding direction made all its plans below the cap (``AccuracyError.below_cap``: short of nodes
        there, or missing ``rtol`` at its Chernoff-optimal damping), which a larger cap would repeat."""
        settings = self._settings()
        try:
            return search(self._directions(delta), *args, **settings)
        except AccuracyError as error:
            if (not self.certified or settings["max_damping"] >= MAX_DAMPING_ENCLOSED or error.below_cap
                    or error.short_of_nodes):
                raise  # (every deciding plan below the cap, short of nodes or not: a larger cap would repeat them)
            first = error.proven
        try:
            return search(self._directions(delta), *args, **{**settings, "max_damping": MAX_DAMPING_ENCLOSED})
        except (AccuracyError, NumericalError) as error:
            if first is not None:  # both proven: keep the narrower ends of the two attempts
                error.proven = first if error.proven is None else _intersect(error.proven, first)
            raise

    def _settings(self):
        """Keyword arguments of the searches in :mod:`accountants._fourier_search`."""
        return {"rtol": self._rtol, "max_terms": self._max_terms, "max_damping": self._max_damping()}

    def pure_epsilon(self) -> float:
        """Basic composition of the pure-DP epsilons of the mechanisms' cores (inf if any has none): above it the
        delta is :attr:`charged_delta` (0 for a ledger of exact mechanisms)."""
        if "pure" in self._derived:
            return self._derived["pure"]
        mu2, e_values, counts, others = self._compile()
        if mu2:
            return float("inf")
        # rounded up (each product and sum): a float sum a few ulps below the exact one made delta 0 (and capped
        # epsilon) where the exact delta is positive (pure DP x 149 at delta 1e-13: exact delta 1.08e-13)
        total = 0.0
        for e, n in zip(e_values, counts):
            total = float(_logmath.add_up(total, _logmath.mul_up(float(n), float(e))))
        for m, n in others:
            if total == math.inf:  # nothing can lower it (subsampled Gaussians: no pure DP)
                break
            total = float(_logmath.add_up(total, _logmath.mul_up(float(n), float(m.rdp(np.inf)))))
        self._derived["pure"] = total
        return total

    @property
    def certified(self) -> bool:
        """Whether every characteristic function in the ledger is in closed form (so the error bounds are
        proofs, up to float64 rounding which is bounded too)."""
        if self._closed is None:
            self._closed = self._cf_proven() or (
                bool(self._entries) and (self._one_run() is not None or self._atom_lattice() is not None
                                         or self._bucketable()))
        return self._closed

    @property
    def bound_kind(self) -> BoundKind:
        """:attr:`BoundKind.UPPER` when :attr:`certified`, :attr:`BoundKind.ESTIMATE` otherwise."""
        return BoundKind.UPPER if self.certified else BoundKind.ESTIMATE

    @property
    def charged_delta(self) -> float:
        """``1 - prod (1 - delta_m)^count`` over the ledger's approximate mechanisms, rounded up (0 if none)."""
        return composed_delta([(self._cores[m][1], n) for m, n in self._entries.items()])

    def _warn_if_estimate(self, getter):
        if not self.certified:
            warnings.warn(
                f"FourierAccountant.{getter}: this ledger's characteristic functions are partly computed by "
                "quadrature whose error is estimated, not proven, so the value is an estimate, not a proven upper "
                f"bound ({self._method()}); use RDPAccountant for a proven bound, or the *_report methods, which "
                "carry the label.",
                EstimateWarning,
                stacklevel=3,
            )

    # ------------------------------------------------------------------ delta
    def delta_bounds(self, epsilon: float) -> Bounds:
        """(lower, estimate, upper) of the smallest delta for which the ledger is (epsilon, delta)-DP,
        add-or-remove-one: the larger of the remove and add directions (thesis Thm 3.3.5)."""
        epsilon = _validate.nonnegative(epsilon, "epsilon", "FourierAccountant.get_delta")
        charged = self.charged_delta
        self._derived["rdp_cap"] = self._derived["bucketed"] = self._derived["few_runs_wide"] = False
        core = self._core_delta_bounds(epsilon)
        if charged:
            # P = (1 - c) P' + c P'': delta <= delta' + c; the missing mass may sit anywhere, so no lower bound.
            core = Bounds(0.0, min(1.0, core.estimate + charged), min(1.0, (core.upper + charged) * (1.0 + 1e-15)))
        return self._rdp_capped(core, lambda rdp: rdp.get_delta(epsilon))

    def _rdp_capped(self, bounds, rdp_value, at_pure=False):
        """``bounds`` with its upper end lowered to ``rdp_value(RDPAccountant of the same ledger)`` where the privacy
        buckets answered without reaching ``rtol`` and that RDP bound is proven and smaller: both are proven upper
        bounds on the same quantity (the RDP accountant adds the same charged delta), so their minimum is one. The
        buckets' float error floor (about 1e-10, absolute) and their grid leave a negligible delta far above what
        the Renyi curve shows (Poisson-subsampled randomized response x 2,294 with subsampled Laplace x 14 at
        epsilon 4.99: [0, 9.6e-10] against RDP's 1e-323). ``at_pure``: an epsilon query whose upper end is the pure
        epsilon (a tiny delta the search could not resolve below it), where the RDP conversion can be a little lower
        (Laplace(0.8445) x 3 at delta 1.59e-9: 3.5523978686 against 3.5523978558)."""
        wide = self._derived.get("bucketed") and bounds.upper - bounds.lower > self._rtol * bounds.upper
        if not (wide or (at_pure and bounds.upper >= self.pure_epsilon())):
            return bounds
        from dpledger.accountants.rdp_accountant import RDPAccountant

        rdp = RDPAccountant()
        for mechanism, count in self._entries.items():
            rdp.compose(mechanism, count)
        if rdp.bound_kind is not BoundKind.UPPER:
            return bounds
        cap = float(rdp_value(rdp))
        if not cap < bounds.upper:
            return bounds
        self._derived["rdp_cap"] = True
        return Bounds(min(bounds.lower, cap), min(bounds.estimate, cap), cap)

    def _one_run(self):
        """The ledger's only mechanism (its core) if it is run once and has an exact profile, else None."""
        if len(self._entries) != 1:
            return None
        (original, n), = self._entries.items()
        core = self._cores[original][0]
        return core if n == 1 and core.has_exact_profile else None

    def _few_runs(self):
        """The ledger's few-run path if it is a few runs of Poisson-subsampled Gaussians
        (:meth:`~mechanisms.base.Mechanism.poisson_gaussian_parameters`) narrow enough that inversion would be the
        slower path (:func:`accountants.two_runs.narrowness`,
        :func:`accountants.windowed_buckets.faster_than_inversion`), else None: where the window is faster
        :class:`accountants.windowed_buckets.WindowedLedger`, else two runs take
        :class:`accountants.two_runs.TwoRunLedger` (the second run exact); kept until the ledger changes."""
        if "few_runs" not in self._derived:
            runs = [(self._cores[m][0].poisson_gaussian_parameters(), n) for m, n in self._entries.items()]
            count = sum(n for _, n in runs)
            usable = 2 <= count <= MAX_RUNS and all(
                p is not None and p[0] <= TwoSubsampledGaussians.MAX_MU for p, _ in runs)
            narrow = max(narrowness(*p) for p, _ in runs) if usable else 0.0
            windowed = usable and faster_than_inversion([(mu, q, n) for (mu, q), n in runs], self._rtol)
            if not (narrow >= NARROW and (count == 2 or windowed)):
                self._derived["few_runs"] = None
            elif windowed:
                self._derived["few_runs"] = WindowedLedger([(mu, q, n) for (mu, q), n in runs])
            else:
                self._derived["few_runs"] = TwoRunLedger(*[p for p, n in runs for _ in range(n)])
        return self._derived["few_runs"]

    def _one_run_delta(self, core, epsilon):
        parts = [core.delta_bounds_one_run(epsilon, d) for d in Direction]
        lower, upper = max(p[0] for p in parts), max(p[1] for p in parts)
        return Bounds(lower, upper, upper)

    def epsilon_floor(self, delta: float) -> float:
        """A cheap proven lower bound on the epsilon this accountant reports at ``delta`` (0 where it has none):
        the largest one-run epsilon among the ledger's cores with an exact profile (the Gaussian and its
        Poisson-subsampled version; :meth:`_one_run_epsilon`'s lower end), for a certified ledger.

        Why: one run's pair is a marginal (a post-processing) of the composed pair, so by the data-processing
        inequality of hockey-stick divergences the composed profile is at least that run's at every epsilon, and the
        composed epsilon at least its epsilon; the certified report is at least the composed epsilon, and the cores'
        epsilon at ``delta`` at most theirs at the smaller ``delta`` less a charged delta.
        Calibration (:func:`accountants.calibration.calibrate`) asks it first: a probe of little noise whose floor
        already exceeds the target is infeasible at once (sigma 0.1, q 0.01 x 100 took 8.45 s to answer)."""
        delta = _validate.open_unit_interval(delta, "delta", "FourierAccountant.epsilon_floor")
        if not self.certified:
            return 0.0
        floors = [self._one_run_epsilon(core, delta).lower for core, _ in self._cores.values()
                  if core.has_exact_profile]
        return max(floors, default=0.0)

    def _one_run_epsilon(self, core, delta):
        """Root search on the proven ends of the one-run profile: ``upper`` is an epsilon whose upper delta was
        evaluated at most ``delta`` (so the exact epsilon is at most it), ``lower`` one whose lower delta was
        evaluated above ``delta`` (so the exact epsilon exceeds it). Only evaluated points become ends, so how the
        next point is chosen (:func:`accountants._roots.bracket_crossing`) does not affect the proof."""
        def curve(upper):
            """One proven end of the profile, the maximum over the directions (each asked for that end alone)."""
            return lambda e: max(core.delta_bound_one_run(e, d, upper=upper) for d in Direction)

        upper_lo, upper = bracket_crossing(curve(True), delta)
        upper = min(upper, self.pure_epsilon())
        start = upper if math.isfinite(upper) and upper > 0.0 else 1.0
        # the two curves are within rounding of each other: the lower crossing lies just under the upper one
        lower = bracket_crossing(curve(False), delta, start=start, below=start * (1.0 - 1e-9))[0]
        return Bounds(min(lower, upper), upper, upper)

    def _core_delta_bounds(self, epsilon):
        if not self._entries or epsilon >= self.pure_epsilon():
            return Bounds(0.0, 0.0, 0.0)
        one = self._one_run()
        if one is not None:
            return self._one_run_delta(one, epsilon)
        few = self._few_runs()
        if few is not None:
            lower, upper = few.delta_bounds(epsilon, self._rtol)
            if upper - lower <= self._rtol * upper:
                return Bounds(lower, upper, upper)
            self._derived["few_runs"], self._derived["few_runs_wide"] = None, True  # as for epsilon
            try:
                other = self._core_delta_bounds(epsilon)
            except (AccuracyError, NumericalError):
                return Bounds(lower, upper, upper)
            finally:
                self._derived["few_runs"] = few
            lower, upper = max(lower, other.lower), min(upper, other.upper)
            return Bounds(min(lower, upper), upper, upper)
        lattice = self._two_point_lattice()
        if lattice is not None:
            return lattice.delta_bounds(epsilon)
        atoms = self._atom_lattice()
        if atoms is not None:
            return atoms.delta_bounds(epsilon)

        def bucketed(ledger):
            lower, upper = ledger.delta_bounds(epsilon)
            return Bounds(lower, upper, upper)

        splits = self._laplace_split()
        if splits is not None:  # the atoms enumerated, the rest inverted; the buckets where that cannot reach rtol
            return self._via_buckets(lambda: self._whole_or_split(
                splits, lambda: self._inverted_delta(epsilon),
                lambda: split_delta_bounds(self._split_pairs(splits), epsilon, **self._settings())), bucketed)
        return self._via_buckets(lambda: self._inverted_delta(epsilon), bucketed)

    def _whole_or_split(self, splits, whole, split):
        """``split()``, or first ``whole()`` where the split says so (its atoms weigh too little to hold the whole
        law's inversion back: :data:`accountants._fourier_atoms.WHOLE_FIRST_LOG_ATOM_MASS`), the split answering
        where the whole law cannot reach ``rtol``; both are proven. The report names the path taken."""
        if splits[0][1].whole_first:
            try:
                result = whole()
                self._derived["split_used"] = False
                return result
            except (AccuracyError, NumericalError):
                pass
        self._derived["split_used"] = True
        return split()

    def _inverted_delta(self, epsilon):
        """``max_delta_bounds`` at ``epsilon``: first on the remove direction's cut laws (:meth:`_remove_bodies`, as
        epsilon queries), then, where that cannot meet ``rtol``, on the whole laws.

        The cut must leave out a small part of ``rtol delta`` and delta is what is sought: the first cut is sized
        for ``DELTA_CUT_GUESS`` times a Chernoff bound on the remove direction's delta at ``epsilon`` (that of the
        law cut for ``delta = 1`` plus the mass it leaves out: within a few times delta on narrow losses, where the
        whole law's is hundreds of times above it and costs several times more), and where its interval misses
        ``rtol`` the second for the proven lower end that interval found. Each interval is proven whatever the cut
        (a cut law's upper end includes the mass it left out, "Cut laws" in :mod:`accountants.fourier_inversion`),
        so only the work depends on the guess. q = 1e-4, sigma 2, 10 steps at epsilon 2.3e-4: 8,192 + 65,536 nodes
        on the whole laws, a few hundred cut."""
        bodies = self._remove_bodies(1.0) if self.certified else None
        if bodies:
            remove = self._direction_log_mgf(Direction.REMOVE, bodies)
            log_chernoff = chernoff_log_delta(lambda k: remove(k.astype(np.complex128)), epsilon,
                                              damping_cap(remove, self._max_damping()))[0]
            guess = min(float(np.exp(min(log_chernoff, 0.0))) + remove.left_out, 1.0) * DELTA_CUT_GUESS
            for _ in range(2):
                if not guess >= SMALLEST_INVERTED_DELTA or self._remove_bodies(guess) is None:
                    break
                try:
                    result = max_delta_bounds(self._directions(guess), epsilon, mirrored=True, **self._settings())
                except AccuracyError as error:
                    proven = error.proven
                    if proven is None or not 0.0 < proven.lower < guess or error.short_of_nodes:
                        break  # (short of nodes: a cut for a smaller guess leaves the same slow decay)
                    guess = proven.lower
                    continue
                except NumericalError:
                    break
                self._derived["cut"] = self._left_out(self._remove_bodies(guess))
                return result
        self._derived["cut"] = None
        return self._inverted(functools.partial(max_delta_bounds, mirrored=True), epsilon)

    def get_delta(self, epsilon: float) -> float:
        """Upper end of :meth:`delta_bounds`: a proven upper bound on delta(epsilon) (add-or-remove-one) when
        :attr:`certified`, otherwise an estimate, with an :class:`~mechanisms.errors.EstimateWarning`."""
        value = self.delta_bounds(epsilon).upper
        self._warn_if_estimate("get_delta")
        return value

    def privacy_profile(self, epsilons: ArrayLike) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``(lower, estimate, upper)`` arrays of delta over a grid of epsilons (1-D, in the order given)."""
        grid = _real_array(epsilons, "epsilons", "FourierAccountant.privacy_profile").ravel()
        values = np.array([tuple(self.delta_bounds(float(e))) for e in grid]).reshape(grid.size, 3)
        return values[:, 0], values[:, 1], values[:, 2]

    def tradeoff_curve(self, alphas: ArrayLike, epsilons: ArrayLike | None = None) -> np.ndarray:
        """Lower bound on the trade-off function (f-DP): ``beta(a) >= max_eps max(0, 1 - d(eps) - e^eps a,
        e^-eps (1 - d(eps) - a))`` over a grid of epsilons (thesis Lemma 3.1.4 (2)), with the upper delta, rounded
        down (:func:`~dpledger.accountants.risk.tradeoff_lower_bound`; :mod:`~dpledger.accountants.risk` also
        optimises over epsilon continuously, for the attacker's true-positive rate)."""
        alphas = _real_array(alphas, "alphas", "FourierAccountant.tradeoff_curve")
        if ((alphas < 0) | (alphas > 1) | np.isnan(alphas)).any():
            raise ValueError("`alphas` of FourierAccountant.tradeoff_curve must be in [0, 1].")
        eps = np.linspace(0.0, 20.0, 201) if epsilons is None else (
            _real_array(epsilons, "epsilons", "FourierAccountant.tradeoff_curve").ravel())
        deltas = np.zeros(eps.size)
        certify = np.ones(eps.size, dtype=bool)
        if self._entries and self._two_point_lattice() is None and self._laplace_split() is None:
            # Where even a Chernoff bound puts delta below 2^-60, that bound serves: beta moves by at most 2^-60
            # (1 - d rounds to 1) and stays a lower bound, since beta decreases in d. No inversion is run there.
            log_bound = self._chernoff_log_delta_grid(eps)
            certify = ~(log_bound < _NEGLIGIBLE_LOG_DELTA)
            deltas[~certify] = np.minimum(1.0, np.exp(log_bound[~certify]) * (1.0 + 1e-9) + self.charged_delta)
        deltas[certify] = [self.delta_bounds(float(v)).upper for v in eps[certify]]
        return tradeoff_lower_bound(deltas, eps, alphas)

    def _chernoff_log_delta_grid(self, epsilons):
        """Upper bounds on ``log delta(eps)`` for many epsilons at once: ``log M(k) - k eps + log c(k)`` holds for
        every damping ``k > 0`` (``c`` as in :func:`accountants.fourier_inversion.log_chernoff_constant`); the
        smallest over a fixed grid of ``k``, the larger of the two directions."""
        kappa = _tilts.exact_tilt(np.geomspace(1e-3, min(1e3, float(self._settings()["max_damping"])), 256))
        out = np.full(epsilons.size, -np.inf)
        for _, lm, _ in self._directions():
            with np.errstate(over="ignore", invalid="ignore"):
                log_m = np.real(lm(kappa.astype(np.complex128))) + log_chernoff_constant(kappa)
                terms = log_m[None, :] - kappa[None, :] * epsilons[:, None]
            out = np.maximum(out, np.where(np.isnan(terms), np.inf, terms).min(axis=1))
        return out

    # ------------------------------------------------------------------ epsilon
    def epsilon_bounds(self, delta: float) -> Bounds:
        """(lower, estimate, upper) of the smallest epsilon with an (epsilon, delta)-DP guarantee.

        ``upper`` is an epsilon at which the certified upper delta is at most ``delta``; ``lower`` one at which
        the certified lower delta still exceeds ``delta``. Root finding has a tolerance relative to delta and
        no cap on epsilon (the bracket comes from the Chernoff bound of the same characteristic functions).
        """
        delta = _validate.open_unit_interval(delta, "delta", "FourierAccountant.get_epsilon")
        charged = self.charged_delta
        self._derived["rdp_cap"] = self._derived["bucketed"] = self._derived["few_runs_wide"] = False
        if not charged:
            return self._rdp_capped(self._core_epsilon_bounds(delta), lambda rdp: rdp.get_epsilon(delta), True)
        if delta <= charged:
            return Bounds(0.0, math.inf, math.inf)
        # the core at delta - charged (rounded down); no lower bound (the missing mass may sit anywhere)
        core = self._core_epsilon_bounds((delta - charged) * (1.0 - 1e-15))
        return self._rdp_capped(Bounds(0.0, core.estimate, core.upper), lambda rdp: rdp.get_epsilon(delta), True)

    def _core_epsilon_bounds(self, delta):
        if not self._entries or self.pure_epsilon() == 0.0:
            return Bounds(0.0, 0.0, 0.0)
        one = self._one_run()
        if one is not None:
            return self._one_run_epsilon(one, delta)
        few = self._few_runs()
        if few is not None:
            lower, upper = few.epsilon_bounds(delta, self._rtol)
            upper = min(upper, self.pure_epsilon())
            few_bounds = Bounds(min(lower, upper), upper, upper)
            if upper - lower <= self._rtol * upper:
                return few_bounds
            # a delta near the float64 floor (the cells' masses are bounded by 1e-300 below that), or a grid at the
            # floor of its bucket masses' enclosures: the other paths too, and both intervals kept
            self._derived["few_runs"], self._derived["few_runs_wide"] = None, True
            try:
                other = self._core_epsilon_bounds(delta)
            except (AccuracyError, NumericalError):
                return few_bounds  # proven, if wide: the others could not answer at all
            finally:
                self._derived["few_runs"] = few
            lower, upper = max(few_bounds.lower, other.lower), min(few_bounds.upper, other.upper)
            return Bounds(min(lower, upper), upper, upper)
        lattice = self._two_point_lattice()
        if lattice is not None:
            return lattice.epsilon_bounds(delta, self.pure_epsilon())
        atoms = self._atom_lattice()
        if atoms is not None:
            return atoms.epsilon_bounds(delta, self.pure_epsilon())
        if delta < SMALLEST_INVERTED_DELTA:
            raise AccuracyError(
                f"FourierAccountant cannot certify epsilon at delta = {delta:.3g}: below "
                f"{SMALLEST_INVERTED_DELTA:g} the inversion's error tolerance (relative to delta) leaves the float64 "
                "range; use RDPAccountant, whose conversion works in log space."
            )
        def bucketed(ledger):
            lower, upper = ledger.epsilon_bounds(delta)
            if upper == math.inf:
                raise AccuracyError(
                    f"FourierAccountant cannot certify epsilon at delta = {delta:.3g}: Fourier inversion cannot "
                    "reach this ledger and the privacy buckets' bounded float error (mass put at infinite loss) "
                    "exceeds delta; use RDPAccountant, or a larger delta.")
            return Bounds(lower, upper, upper)

        splits = self._laplace_split()
        if splits is not None:  # the atoms enumerated, the rest inverted; the buckets where that cannot reach rtol
            def whole():
                b = self._inverted(functools.partial(max_epsilon_bounds, mirrored=True), np.log(delta), delta=delta)
                pure = self.pure_epsilon()
                return Bounds(*(min(getattr(b, f), pure) for f in ("lower", "estimate", "upper")))

            return self._via_buckets(lambda: self._whole_or_split(splits, whole, lambda: split_epsilon_bounds(
                self._split_pairs(splits), delta, self.pure_epsilon(), **self._settings())), bucketed)

        def narrow(b):  # the search failed; loose inversions inside the proven interval may still narrow it
            if b.upper - b.lower <= self._rtol * b.upper:
                return b
            settings = self._settings()  # no accuracy is promised there: no rtol
            lower, upper = bounds_in_bracket(self._directions(), np.log(delta), b.lower, b.upper,
                                             max_terms=settings["max_terms"], max_damping=settings["max_damping"])
            return Bounds(lower, upper, upper)

        # the two directions are one ledger's remove and add laws, mirror images (max_epsilon_bounds' ``mirrored``)
        search = functools.partial(max_epsilon_bounds, mirrored=True)
        b = self._via_buckets(lambda: self._inverted(search, np.log(delta), delta=delta), bucketed, narrow)
        bodies = self._remove_bodies(delta) if self._derived.get("path") == "inversion" else None
        self._derived["cut"] = self._left_out(bodies) if bodies else None  # named by the report (_core_method)
        pure = self.pure_epsilon()  # (pure, 0)-DP holds, so epsilon never exceeds it
        return Bounds(*(min(getattr(b, f), pure) for f in ("lower", "estimate", "upper")))

    def get_epsilon(self, delta: float) -> float:
        """Upper end of :meth:`epsilon_bounds`: a proven upper bound on the smallest epsilon with an
        (epsilon, delta)-DP guarantee when :attr:`certified`, otherwise an estimate, with an
        :class:`~mechanisms.errors.EstimateWarning`."""
        value = self.epsilon_bounds(delta).upper
        self._warn_if_estimate("get_epsilon")
        return value

    # ------------------------------------------------------------------ reports
    def _method(self):
        charged = self.charged_delta
        extra = "" if not charged else f"; plus the charged delta {charged:.6g} of approximate mechanisms"
        through = sorted({type(m).__name__ for m in self._entries if self._cores[m][0] is not m.approximate()[0]})
        if through:
            extra += (f"; {', '.join(through)} composed through the dominating pair of the mechanism it "
                      "post-processes (Mechanism.dominating_mechanism)")
        if self._derived.get("rdp_cap"):
            extra += ("; the upper end lowered to RDPAccountant's on the same ledger (a proven Renyi-DP conversion, "
                      "tighter here)")
        return self._core_method() + extra

    def _core_method(self):
        if self._one_run() is not None:
            return ("exact privacy profile of the single run (Poisson subsampling: thesis Thm 3.3.5's pairs, whose "
                    "hockey-stick divergences are the base's at a transformed epsilon; the analytic Gaussian, Balle "
                    "& Wang 2018, Thm 8; the Laplace pair's 1 - e^((eps - t)/2)), float64 rounding bounded")
        few = self._few_runs()
        if few is not None:
            wide = "" if not self._derived.get("few_runs_wide") else (
                "; wider than rtol there (a delta near the float64 floor, an epsilon far beyond the corner it is "
                "for, or a grid at the floor of its masses' enclosures), so intersected with the proven interval "
                "of the other paths (Fourier inversion, privacy buckets) where they answered")
            if isinstance(few, WindowedLedger):
                return ("a few runs of Poisson-subsampled Gaussians: privacy buckets on a window around epsilon "
                        "(atoms beyond it lumped exactly or dropped), connect-the-dots above and Jensen's inequality "
                        "with paired buckets below, both of second order (accountants.windowed_buckets), composed by "
                        f"tilted FFT with its error bounded, float64 rounding bounded{wide}")
            return ("two runs of Poisson-subsampled Gaussians: the second run's exact privacy profile integrated "
                    "against the first run's output law, cut into cells (chords above, Jensen's inequality below; "
                    f"accountants.two_runs), float64 rounding bounded{wide}")
        if self._two_point_lattice() is not None:
            return ("exact enumeration of the composed two-point privacy losses (randomized response, pure DP; "
                    "Kairouz et al. 2015), float64 rounding bounded")
        if self._atom_lattice() is not None:
            return ("exact enumeration of the composed two-point privacy losses of each direction (randomized "
                    "response, pure DP and their Poisson-subsampled pairs, thesis Thm 3.3.5), float64 rounding bounded")
        path = self._derived.get("path")
        if path in ("buckets", "buckets+inversion") or (path is None and self._discrete()):
            buckets = ("privacy buckets: the loss distributions discretised on a grid of step "
                       f"{self._buckets().h:g} with proven bucket masses, connect-the-dots for the upper bound and "
                       "Jensen's inequality on paired buckets (Gaussian losses) or rounding down (others) for the "
                       "lower (Doroshenko et al. 2022; Meiser & Mohammadi 2018), composed by FFT with its error "
                       f"bounded ({self._buckets_reason()})")
            if path == "buckets+inversion":
                buckets += ("; intersected with the proven bounds of Fourier inversion (thesis Sec 3.4, "
                            "characteristic functions in closed form or proven enclosures), which could not reach "
                            f"rtol {self._rtol:g}: both intervals proven, the reported one is their intersection")
            return buckets
        if self._laplace_split() is not None and self._derived.get("split_used", True):
            closed = all(core.log_mgf_is_closed_form for core, _ in self._cores.values())
            how = "in closed form" if closed else "in closed form or proven enclosures (every error bounded)"
            return ("atoms of the composed privacy loss enumerated exactly, the rest by Fourier inversion "
                    f"(thesis Sec 3.4), characteristic functions {how}, rtol {self._rtol:g}")
        estimated = sorted({type(core).__name__ for core, _ in self._cores.values()
                            if not (core.log_mgf_is_proven and core.rdp_is_proven)})
        closed = all(core.log_mgf_is_closed_form for core, _ in self._cores.values())
        how = ("characteristic functions in closed form" if closed else
               "characteristic functions in closed form or proven enclosures (every error bounded)") if (
            self.certified) else (
            "characteristic functions partly by quadrature, its error estimated, not proven (estimated part: "
            f"{', '.join(estimated)})"
        )
        cut = self._derived.get("cut")
        cut = "" if not cut else (
            f"; the remove direction's upper tail cut at a total mass of at most {cut:.3g}, inverted as a "
            "sub-probability law, that mass added to the upper end")
        return f"Fourier inversion of the privacy-loss distribution (thesis Sec 3.4), {how}, rtol {self._rtol:g}{cut}"

    def epsilon_report(self, delta: float) -> PrivacyReport:
        b = self.epsilon_bounds(delta)
        return PrivacyReport(
            epsilon=b.upper,
            delta=float(delta),
            bound=self.bound_kind,
            relation=self.relation,
            accountant="Fourier",
            method=self._method() + self._interval_text(b),
        )

    def _interval_text(self, b):
        """``"; interval [lower, upper]"``, saying so where the interval is wider than ``rtol`` asks (a proven
        interval all the same: the buckets' grid, an inversion that could not reach rtol, or an interval at 0)."""
        text = f"; interval [{b.lower:.8g}, {b.upper:.8g}]"
        if b.upper - b.lower > self._rtol * b.upper:
            text += f", wider than rtol {self._rtol:g} asks (both ends proven)"
        return text

    def delta_report(self, epsilon: float) -> PrivacyReport:
        b = self.delta_bounds(epsilon)
        return PrivacyReport(
            epsilon=float(epsilon),
            delta=b.upper,
            bound=self.bound_kind,
            relation=self.relation,
            accountant="Fourier",
            method=self._method() + self._interval_text(b),
        )


def _intersect(a, b):
    """The intersection of two proven :class:`Bounds` ``(lower, estimate, upper)`` of the same quantity: ``(max of
    the lowers, a's estimate moved into the result, min of the uppers)``. Both contain the exact value, so the
    intersection does; an empty one means a proof or the code is wrong, and raises :class:`NumericalError`."""
    lower, upper = max(a.lower, b.lower), min(a.upper, b.upper)
    if not lower <= upper:
        raise NumericalError(
            f"FourierAccountant: proven intervals [{a.lower!r}, {a.upper!r}] and [{b.lower!r}, {b.upper!r}] of the "
            "same quantity do not meet; this is a bug, please report it with the ledger.")
    return Bounds(lower, min(max(a.estimate, lower), upper), upper)


#: Relative enclosure error of one run of a subsampled Gaussian's transform, roughly (measured: 3.6e-8 for 10^6 runs,
#: 3.7e-10 for 10^4, 4e-13 for 10); only used to choose plans.
_RUN_RELATIVE_ERROR = 4e-14


class _DirectionLaw:
    """``log M`` of one direction of a ledger as a callable, with its proven enclosure where the ledger is
    certified (what :func:`accountants.fourier_inversion.make_plan` evaluates at the Fourier nodes)."""

    def __init__(self, accountant, direction, bodies=None):
        self._accountant, self._direction, self._bodies = accountant, direction, bodies
        others = accountant._compile()[3]
        if accountant.certified:
            self.enclosure = functools.partial(accountant._log_mgf_enclosure, direction=direction, bodies=bodies)
            #: rough relative error of the enclosure (a few 1e-14 per run of a mechanism enclosed by quadrature):
            #: what make_plan's choice of damping weighs (:func:`accountants.fourier_inversion._log_headroom`)
            self.relative_error = _RUN_RELATIVE_ERROR * sum(n for m, n in others if not m.log_mgf_is_closed_form)
        if bodies:
            #: mass of the law left out by the cut laws ("Cut laws", :mod:`accountants.fourier_inversion`)
            self.left_out = accountant._left_out(bodies)
            if all(m in bodies for m, _ in others):
                #: cut laws cost the same at any tilt: the saddle point of a narrow loss is reachable
                self.max_damping = CUT_MAX_DAMPING
        if (direction is Direction.ADD and others and accountant.certified
                and all(m.tilt_free_damping(direction) for m, _ in others)):
            self.max_damping = CUT_MAX_DAMPING
        self._key = (direction, None if not bodies else tuple(sorted(b.cut for b in bodies.values())))

    def __call__(self, s):
        s = np.asarray(s, dtype=np.complex128)
        if s.size and not s.imag.any():  # real tilts (Chernoff bounds, dampings): proven upper bounds suffice
            # the same grids of tilts recur across plans, directions' retries and queries: kept per ledger state
            cache = self._accountant._derived.setdefault("real_upper", {})
            key = (self._key, s.real.tobytes())
            if key not in cache:
                if len(cache) >= 256:
                    cache.clear()
                cache[key] = self._accountant._log_mgf_upper(s.real, self._direction, self._bodies).astype(
                    np.complex128)
                cache[key].setflags(write=False)
            return cache[key].reshape(s.shape).copy()
        return self._accountant._log_mgf(s, self._direction, self._bodies)


def _real_array(values, name, owner):
    """``values`` as a float64 array; TypeError naming the parameter if they are not real numbers."""
    try:
        arr = np.asarray(values)
        if arr.dtype.kind not in "iuf":
            raise TypeError
        return arr.astype(np.float64)
    except (TypeError, ValueError):
        raise TypeError(f"`{name}` of {owner} must be real numbers; got {values!r}.") from None

