"""``FourierAccountant``: composition by adding log characteristic functions, certified Fourier inversion.

The analytical Fourier accountant of thesis Sec 3.4 (Algorithm 1): each mechanism contributes the log moment
generating function of its dominating pair's privacy loss (thesis Def 3.3.7; ``Mechanism.log_mgf``), composition
adds them (thesis Prop 3.3.8, Thm 3.3.4), so ``count`` costs O(1). ``delta(epsilon)`` is priced per direction
(remove and add, thesis Thm 3.3.5) by :mod:`accountants.fourier_inversion` and the larger one is reported.

Paths, by ledger:

* Gaussian entries merge into one Gaussian (summed ``mu^2``) and two-point entries (randomized response, pure
  DP) are evaluated together as arrays, so a ledger of m distinct mechanisms costs O(m) vectorised work;
* only two-point entries (at most ``MAX_ATOMS`` composed outcomes): exact enumeration with bounded rounding
  (their characteristic functions do not decay, so Fourier inversion would need ~1/rtol nodes);
* delta far below the mean loss (large delta): ``1 - delta`` is priced on a contour left of the pole at 0
  (:func:`accountants.fourier_inversion.invert`);
* the contour ``Re s = kappa > 0`` at the Chernoff-optimal (saddle-point) damping, capped at
  ``MAX_DAMPING_CLOSED_FORM`` for closed forms and ``MAX_DAMPING`` where a quadrature's range grows with it;

* Laplace and two-point entries only (no Gaussian; at most ``MAX_ATOMS`` composed atoms): the all-atom part
  of the law is enumerated exactly and only the rest, whose transform decays like 1/u, is Fourier-inverted
  (:meth:`FourierAccountant._make_laplace_split`); near the pure epsilon the pure epsilon itself is returned once the
  lower delta just below it is certified;
* otherwise Fourier inversion of the whole law.

Limit: other ledgers whose losses all have atoms (more than ``MAX_ATOMS`` Laplace atoms, custom discrete pairs,
no Gaussian) have non-decaying characteristic functions; the truncation error falls like 1/nodes and
``max_terms = 2**20`` certifies about rtol 1e-5 at best. Such requests raise :class:`AccuracyError` saying what
was tried; pass a larger ``rtol`` (or ``max_terms``).
"""

import numpy as np

from accountants.conversions import minimize_over_orders
from accountants.fourier_inversion import (
    MAX_DAMPING,
    MAX_ATOMS,
    MAX_DAMPING_CLOSED_FORM,
    Bounds,
    TwoPointLedger,
    chernoff_log_delta,
    complement_damping,
    invert,
    log_chernoff_constant,
    make_plan,
)
from accountants.report import PrivacyReport
from mechanisms import _validate, privacy_loss
from mechanisms.base import Mechanism
from mechanisms.errors import DPLedgerError, MissingCapabilityError
from mechanisms.gaussian import GaussianMechanism
from mechanisms.laplace import LaplaceMechanism
from mechanisms.randomized_response import PureDPMechanism, RandomizedResponse
from mechanisms.relations import Direction, NeighboringRelation

__all__ = ["FourierAccountant", "AccuracyError"]


def _brentq(*args, **kwargs):
    """``scipy.optimize.brentq``, imported on first use: scipy.optimize costs about 0.4 s to import, which
    every ``import accountants`` (and every ``dpledger`` command) would otherwise pay."""
    from scipy import optimize

    return optimize.brentq(*args, **kwargs)


#: Below this Chernoff-optimal damping, delta(epsilon) is first priced through 1 - delta (negative damping).
COMPLEMENT_SWITCH = 0.05


class AccuracyError(DPLedgerError):
    """The requested accuracy could not be certified; the message says what was tried."""


class FourierAccountant:
    """Exact (epsilon, delta) accounting from characteristic functions, with certified error bounds.

    Parameters
    ----------
    rtol : float, default 1e-6
        Target relative width of the (lower, upper) interval of delta; epsilon inherits it.
    max_terms : int, default 2**20
        Largest number of Fourier nodes per inversion before giving up (:class:`AccuracyError`).

    Getters ``get_delta`` / ``get_epsilon`` return the upper end of a certified interval
    (``delta_bounds`` / ``epsilon_bounds`` return all three of lower, estimate and upper). For mechanisms whose
    characteristic function comes from numerical quadrature (Poisson-subsampled ones) the decay bound used for
    the truncation error rests on that quadrature; their reports say so. Randomized response and pure DP alone
    are enumerated exactly; Laplace ledgers without a Gaussian have their atoms enumerated exactly (see the
    module docstring for the paths and the remaining limit).

    Examples
    --------
    >>> from mechanisms import GaussianMechanism
    >>> fa = FourierAccountant().compose(GaussianMechanism(sigma=30.0), count=240)
    >>> round(fa.get_epsilon(1e-10), 6)
    3.207781
    """

    relation = NeighboringRelation.ADD_OR_REMOVE_ONE

    def __init__(self, *, rtol=1e-6, max_terms=1 << 20):
        self._rtol = _validate.positive(rtol, "rtol", "FourierAccountant")
        self._max_terms = _validate.positive_int(max_terms, "max_terms", "FourierAccountant")
        self._entries = {}
        self._compiled = self._closed = None
        self._derived = {}  # per-ledger caches (exact enumerations), cleared by compose

    # ------------------------------------------------------------------ state
    @property
    def ledger(self):
        """``((mechanism, count), ...)`` in the order mechanisms were first composed."""
        return tuple(self._entries.items())

    def supports(self, mechanism):
        """Dry run: whether ``compose(mechanism)`` would succeed (the mechanism has a dominating pair)."""
        try:
            self._check(mechanism)
        except (MissingCapabilityError, TypeError):
            return False
        return True

    @staticmethod
    def _check(mechanism):
        if not isinstance(mechanism, Mechanism):
            raise TypeError(
                f"`mechanism` of FourierAccountant.compose must be a Mechanism; got {type(mechanism).__name__}."
            )
        if type(mechanism) is GaussianMechanism or _two_point_loss(mechanism) is not None:
            return  # closed forms that always exist
        probe = np.array([0.5, 0.5 + 1.0j])
        for direction in Direction:
            mechanism.log_mgf(probe, direction)

    def compose(self, mechanism, count=1):
        """Add ``count`` runs of ``mechanism``; returns ``self``. Transactional (checks first)."""
        count = _validate.positive_int(count, "count", "FourierAccountant.compose")
        if not isinstance(mechanism, Mechanism) or mechanism not in self._entries:
            self._check(mechanism)
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
            for m, n in self._entries.items():
                e = _two_point_loss(m)
                if type(m) is GaussianMechanism:
                    mu2 += n / m.noise_multiplier**2
                elif e is not None:
                    two_point[e] = two_point.get(e, 0) + n
                else:
                    others.append((m, n))
            e_values = np.array(sorted(two_point), dtype=np.float64)
            counts = np.array([two_point[e] for e in e_values], dtype=np.float64)
            self._compiled = (mu2, e_values, counts, tuple(others))
        return self._compiled

    def log_mgf(self, s, direction=Direction.REMOVE):
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

    def _log_mgf(self, s, direction):
        s = np.asarray(s, dtype=np.complex128)
        mu2, e_values, counts, others = self._compile()
        # Gaussian and two-point pairs are symmetric: both directions share one M.
        total = privacy_loss.gaussian_log_mgf(s, 1.0) * mu2 if mu2 else np.zeros(s.shape, dtype=np.complex128)
        if e_values.size:
            total = total + _two_point_log_mgf(s, e_values, counts)
        for mechanism, count in others:
            total = total + count * mechanism.log_mgf(s, direction)
        return total

    def _log_mgf_sup(self, direction):
        mu2, e_values, counts, others = self._compile()

        def sup(kappa, u_min):
            c = kappa if direction is Direction.REMOVE else -1.0 - kappa
            total = 0.5 * mu2 * (c * (c + 1.0) - u_min * u_min)  # Gaussian: exact, decreasing in |u|
            if e_values.size:  # two-point losses do not decay: |M(c + iu)| <= M(c)
                total += float(np.real(_two_point_log_mgf(np.array([complex(c)]), e_values, counts)[0]))
            return float(total + sum(n * m.log_mgf_sup(c, u_min) for m, n in others))

        return sup

    def _two_point_lattice(self):
        if "lattice" not in self._derived:
            self._derived["lattice"] = self._make_two_point_lattice()
        return self._derived["lattice"]

    def _laplace_split(self):
        if "split" not in self._derived:
            self._derived["split"] = self._make_laplace_split()
        return self._derived["split"]

    def _make_two_point_lattice(self):
        """Exact enumeration (:class:`TwoPointLedger`) when the ledger has only two-point losses (randomized
        response, pure DP) with at most ``MAX_ATOMS`` composed outcomes; None otherwise. Their characteristic
        functions do not decay, so Fourier inversion would need ~1/rtol nodes."""
        mu2, e_values, counts, others = self._compile()
        if mu2 or others or not e_values.size:
            return None
        keep = e_values > 0.0
        if float(np.prod(counts[keep] + 1.0)) > MAX_ATOMS:
            return None
        return TwoPointLedger(e_values[keep], counts[keep])

    def _make_laplace_split(self):
        """For ledgers of Laplace and two-point losses only (no Gaussian): ``(atoms, node_log, sup)``, where
        ``atoms`` enumerates the all-atom part ``D = prod B_j^n_j prod A_i^n_i`` exactly (``A_i`` the Laplace
        atoms, :func:`mechanisms.privacy_loss.laplace_split_log_mgf`), and ``node_log`` / ``sup`` give the log
        transform of the rest, ``R = M - D = D (prod (1 + C_i/A_i)^n_i - 1)``, and a bound on ``|R|`` beyond a
        frequency. ``R`` is a non-negative measure whose every term has a continuous factor, so ``|R| <=
        D(c) ((1 + 1/|1 + 2s|)^N - 1) ~ N D(c) / |u|`` decays and the truncation error falls like 1/U^2, where
        the whole characteristic function (atoms included) does not decay at all. None if not applicable or if
        the atoms exceed ``MAX_ATOMS``."""
        mu2, e_values, counts, others = self._compile()
        if mu2 or not others or any(type(m) is not LaplaceMechanism for m, _ in others):
            return None
        ts = np.array([m.sensitivity / m.scale for m, _ in others], dtype=np.float64)
        ns = np.array([n for _, n in others], dtype=np.float64)
        keep = e_values > 0.0
        if float(np.prod(counts[keep] + 1.0) * np.prod(ns + 1.0)) > MAX_ATOMS:
            return None
        log_pos = -np.log1p(np.exp(-e_values[keep]))
        atoms = TwoPointLedger(
            np.concatenate((e_values[keep], ts)),
            np.concatenate((counts[keep], ns)),
            log_masses=list(zip(log_pos, log_pos - e_values[keep])) + [(-np.log(2.0), -t - np.log(2.0)) for t in ts],
        )
        two_e, two_n = e_values[keep], counts[keep]

        def log_d_and_z(s):
            s = np.asarray(s, dtype=np.complex128)
            s = np.where(s.real < -0.5, -1.0 - s, s)  # every pair here is symmetric: M(s) = M(-1 - s)
            log_d = _two_point_log_mgf(s, two_e, two_n) if two_e.size else np.zeros(s.shape, dtype=np.complex128)
            z = np.zeros(s.shape, dtype=np.complex128)
            with np.errstate(divide="ignore"):
                for t, n in zip(ts, ns):
                    log_a, ratio = privacy_loss.laplace_split_log_mgf(s, t)
                    log_d = log_d + n * log_a
                    z = z + n * np.log1p(ratio)
            return log_d, z

        def node_log(s):
            log_d, z = log_d_and_z(s)
            with np.errstate(divide="ignore"):
                return log_d + np.log(np.expm1(z))

        total_n = float(ns.sum())

        def sup(kappa, u_min):
            log_d = float(np.real(log_d_and_z(np.array([complex(kappa)]))[0][0]))
            c = kappa if kappa >= -0.5 else -1.0 - kappa
            return log_d + float(np.log(np.expm1(total_n * np.log1p(1.0 / np.hypot(1.0 + 2.0 * c, 2.0 * u_min)))))

        return atoms, node_log, sup

    def _split_plan(self, epsilon, tolerance, split, kappa):
        atoms, node_log, sup = split
        lm = lambda s: self._log_mgf(s, Direction.REMOVE)  # noqa: E731
        return make_plan(lm, sup, epsilon, tolerance, max_terms=self._max_terms, kappa=kappa,
                         max_damping=self._max_damping(), node_log_mgf=node_log)

    def _split_delta_bounds(self, epsilon, split):
        """delta = (atoms, exact) + (rest, Fourier inversion of R); both directions agree (symmetric pairs)."""
        atoms = split[0]
        lm = lambda s: self._log_mgf(s, Direction.REMOVE)  # noqa: E731
        log_chernoff, kappa = chernoff_log_delta(lambda k: lm(k.astype(np.complex128)), epsilon, self._max_damping())
        kappa = max(kappa, 0.25)  # any damping > 0 is valid; near 0 the period would explode
        exact = atoms.delta_bounds(epsilon)
        tolerance = self._rtol * max(exact.estimate, np.exp(log_chernoff) * 1e-3) / 16.0
        for _ in range(4):
            plan = self._split_plan(epsilon, tolerance, split, kappa)
            rest, errors = invert(plan, epsilon)
            b = Bounds(exact.lower + rest.lower, exact.estimate + rest.estimate, min(exact.upper + rest.upper, 1.0))
            if b.upper - b.lower <= self._rtol * b.estimate or b.upper == 0.0:
                return b
            tolerance = min(tolerance, self._rtol * b.estimate) / 16.0
        raise AccuracyError(
            f"FourierAccountant could not certify delta({epsilon}) to rtol={self._rtol} (Laplace ledger, atoms "
            f"enumerated exactly, the rest by Fourier inversion): bounds {tuple(b)} with damping {plan.kappa:.4g}, "
            f"period {plan.period:.4g}, {errors['nodes']} nodes (max_terms={self._max_terms}); errors {errors}. "
            f"{_hint(errors)}"
        )

    def _split_epsilon_bounds(self, delta, split):
        atoms = split[0]
        pure = self.pure_epsilon()
        lm = lambda s: self._log_mgf(s, Direction.REMOVE)  # noqa: E731
        log_delta = np.log(delta)

        def objective(orders):
            kappa = np.asarray(orders) - 1.0
            return (np.real(lm(kappa.astype(np.complex128))) + log_chernoff_constant(kappa) - log_delta) / kappa

        cap = self._max_damping()
        grid = 1.0 + np.geomspace(1e-3, min(1e3, cap), 41)
        opt = minimize_over_orders(objective, grid, objective(grid), max_order=1.0 + cap)
        hi = min(max(opt.value, 0.0), pure)  # delta(hi) <= delta: Chernoff, or zero at the pure epsilon
        kappa = max(min(opt.order - 1.0, cap), 0.25)
        tolerance, plan_eps = self._rtol * delta / 16.0, max(0.8 * hi, hi - 3.0 / kappa)  # as in _direction_epsilon

        for _ in range(4):
            plan = self._split_plan(plan_eps, tolerance, split, kappa)

            def excess(eps, field):
                return getattr(atoms.delta_bounds(eps), field) + getattr(invert(plan, eps)[0], field) - delta

            if excess(0.0, "upper") <= 0:
                upper = 0.0
            else:
                top = hi
                for _ in range(100):
                    if top >= pure or excess(top, "upper") <= 0:
                        break
                    top = top * 1.001 + 1e-9
                top = min(top, pure)
                if excess(top, "upper") > 0 and top < pure:
                    raise AccuracyError(
                        f"FourierAccountant: the certified delta stays above {delta} up to epsilon {top:.6g} "
                        f"(Laplace ledger); damping {plan.kappa:.4g}, {plan.terms + 1} nodes "
                        f"(max_terms={self._max_terms}), rtol={self._rtol}."
                    )
                upper = top if excess(top, "upper") > 0 else _brentq(
                    lambda e: excess(e, "upper"), 0.0, top, xtol=1e-13, rtol=1e-12)
                step = max(abs(upper) * 1e-12, 1e-300)
                while upper < top and excess(upper, "upper") > 0:
                    upper, step = min(upper + step, top), 2.0 * step
            low, est, up = (excess(upper, f) + delta for f in ("lower", "estimate", "upper"))
            if up - low <= self._rtol * est or upper == 0.0:
                break
            # Near the pure epsilon (tiny delta) the pure epsilon itself may be within rtol: it is an upper bound
            # ((pure, 0)-DP), and if the certified lower delta still exceeds delta just below it, so is the rest.
            just_below = pure * (1.0 - self._rtol / 2.0)
            if excess(just_below, "lower") > 0:
                return Bounds(lower=just_below, estimate=pure, upper=pure)
            if abs(plan_eps - upper) <= 1e-3 * max(upper, 1e-300):
                tolerance /= 16.0
            plan_eps, kappa = upper, max(kappa, 0.25)
        else:
            raise AccuracyError(
                f"FourierAccountant could not certify epsilon at delta={delta} to rtol={self._rtol} (Laplace ledger, "
                f"atoms enumerated exactly): at epsilon {upper:.10g} delta is in [{low:.6g}, {up:.6g}] with damping "
                f"{plan.kappa:.4g}, {plan.terms + 1} nodes (max_terms={self._max_terms}); raise max_terms or rtol."
            )
        estimate = 0.0
        if upper > 0 and excess(0.0, "estimate") > 0:
            estimate = upper if excess(upper, "estimate") > 0 else _brentq(
                lambda e: excess(e, "estimate"), 0.0, upper, xtol=1e-14)
        lower, gap = 0.0, 1e-10
        while gap < 1.0 and estimate > 0:
            if excess(estimate * (1.0 - gap), "lower") > 0:
                lower = estimate * (1.0 - gap)
                break
            gap *= 10.0
        return Bounds(lower=min(lower, estimate, upper), estimate=min(estimate, upper), upper=upper)

    def _max_damping(self):
        """Damping cap: large for closed-form ledgers (cost independent of the tilt), small where a quadrature's
        range grows with the tilt (Poisson-subsampled mechanisms)."""
        return MAX_DAMPING_CLOSED_FORM if self.certified else MAX_DAMPING

    def pure_epsilon(self):
        """Basic composition of the mechanisms' pure-DP epsilons (inf if any has none): delta is 0 above it."""
        mu2, e_values, counts, others = self._compile()
        if mu2:
            return float("inf")
        return float(np.dot(counts, e_values) + sum(n * float(m.rdp(np.inf)) for m, n in others))

    @property
    def certified(self):
        """Whether every characteristic function in the ledger is in closed form (so the error bounds are
        proofs, up to float64 rounding which is bounded too)."""
        if self._closed is None:
            self._closed = all(_closed_form(m) for m in self._entries)
        return self._closed

    # ------------------------------------------------------------------ delta
    def _direction_bounds(self, direction, epsilon, plan=None):
        lm = lambda s: self._log_mgf(s, direction)  # noqa: E731
        sup = self._log_mgf_sup(direction)
        log_chernoff, kappa = chernoff_log_delta(lambda k: lm(k.astype(np.complex128)), epsilon,
                                                 self._max_damping())
        if log_chernoff < -700.0:
            return Bounds(0.0, 0.0, float(np.exp(log_chernoff))), None
        if kappa < COMPLEMENT_SWITCH:
            # Far below the mean of L the best damping is ~0 and delta is large: price 1 - delta on a contour
            # left of the pole at 0 instead (absolute errors, small against a large delta).
            negative = complement_damping(lm, epsilon)
            tolerance = self._rtol * 1e-3
            for _ in range(3):
                plan = make_plan(lm, sup, epsilon, tolerance, max_terms=self._max_terms, kappa=negative)
                bounds, errors = invert(plan, epsilon)
                if bounds.upper - bounds.lower <= self._rtol * bounds.estimate:
                    return bounds, plan
                if bounds.estimate <= 0.0 or tolerance <= self._rtol * bounds.estimate / 16:
                    break
                tolerance = self._rtol * bounds.estimate / 16
        tolerance = self._rtol * np.exp(log_chernoff) * 1e-3
        for _ in range(4):
            plan = make_plan(lm, sup, epsilon, tolerance, max_terms=self._max_terms, kappa=kappa,
                             max_damping=self._max_damping())
            bounds, errors = invert(plan, epsilon)
            if bounds.upper - bounds.lower <= self._rtol * max(bounds.estimate, 1e-300) or bounds.upper == 0.0:
                return bounds, plan
            if bounds.estimate <= 0.0 or tolerance <= self._rtol * bounds.estimate / 16:
                break
            tolerance = self._rtol * bounds.estimate / 16
        raise AccuracyError(
            f"FourierAccountant could not certify delta({epsilon}) to rtol={self._rtol} ({direction.value}): "
            f"bounds {tuple(bounds)} with damping {plan.kappa:.4g}, period {plan.period:.4g}, "
            f"{errors['nodes']} nodes (max_terms={self._max_terms}); errors {errors}. {_hint(errors)}"
        )

    def delta_bounds(self, epsilon):
        """(lower, estimate, upper) of the smallest delta for which the ledger is (epsilon, delta)-DP,
        add-or-remove-one: the larger of the remove and add directions (thesis Thm 3.3.5)."""
        epsilon = _validate.nonnegative(epsilon, "epsilon", "FourierAccountant.get_delta")
        if not self._entries or epsilon >= self.pure_epsilon():
            return Bounds(0.0, 0.0, 0.0)
        lattice = self._two_point_lattice()
        if lattice is not None:
            return lattice.delta_bounds(epsilon)
        split = self._laplace_split()
        if split is not None:
            return self._split_delta_bounds(epsilon, split)
        parts = [self._direction_bounds(d, epsilon)[0] for d in Direction]
        return Bounds(*(max(getattr(b, f) for b in parts) for f in ("lower", "estimate", "upper")))

    def get_delta(self, epsilon):
        """Certified upper bound on delta(epsilon) (add-or-remove-one)."""
        return self.delta_bounds(epsilon).upper

    def privacy_profile(self, epsilons):
        """``(lower, estimate, upper)`` arrays of delta over a grid of epsilons (1-D, in the order given)."""
        grid = _real_array(epsilons, "epsilons", "FourierAccountant.privacy_profile").ravel()
        values = np.array([tuple(self.delta_bounds(float(e))) for e in grid]).reshape(grid.size, 3)
        return values[:, 0], values[:, 1], values[:, 2]

    def tradeoff_curve(self, alphas, epsilons=None):
        """Lower bound on the trade-off function (f-DP): ``beta(a) >= max_eps max(0, 1 - d(eps) - e^eps a,
        e^-eps (1 - d(eps) - a))`` over a grid of epsilons (thesis Lemma 3.1.4 (2)), with the upper delta."""
        alphas = _real_array(alphas, "alphas", "FourierAccountant.tradeoff_curve")
        if ((alphas < 0) | (alphas > 1) | np.isnan(alphas)).any():
            raise ValueError("`alphas` of FourierAccountant.tradeoff_curve must be in [0, 1].")
        eps = np.linspace(0.0, 20.0, 201) if epsilons is None else (
            _real_array(epsilons, "epsilons", "FourierAccountant.tradeoff_curve").ravel())
        deltas = self.privacy_profile(eps)[2]
        e = eps[:, None]
        d = deltas[:, None]
        beta = np.maximum(np.maximum(0.0, 1.0 - d - np.exp(e) * alphas), np.exp(-e) * (1.0 - d - alphas))
        return beta.max(axis=0)

    # ------------------------------------------------------------------ epsilon
    def epsilon_bounds(self, delta):
        """(lower, estimate, upper) of the smallest epsilon with an (epsilon, delta)-DP guarantee.

        ``upper`` is an epsilon at which the certified upper delta is at most ``delta``; ``lower`` one at which
        the certified lower delta still exceeds ``delta``. Root finding has a tolerance relative to delta and
        no cap on epsilon (the bracket comes from the Chernoff bound of the same characteristic functions).
        """
        delta = _validate.open_unit_interval(delta, "delta", "FourierAccountant.get_epsilon")
        if not self._entries or self.pure_epsilon() == 0.0:
            return Bounds(0.0, 0.0, 0.0)
        lattice = self._two_point_lattice()
        if lattice is not None:
            return lattice.epsilon_bounds(delta, self.pure_epsilon())
        split = self._laplace_split()
        if split is not None:
            return self._split_epsilon_bounds(delta, split)
        log_delta = np.log(delta)
        out = []
        for direction in Direction:
            out.append(self._direction_epsilon(direction, log_delta))
        pure = self.pure_epsilon()  # (pure, 0)-DP holds, so epsilon never exceeds it
        return Bounds(*(min(max(getattr(b, f) for b in out), pure) for f in ("lower", "estimate", "upper")))

    def _direction_epsilon(self, direction, log_delta):
        lm = lambda s: self._log_mgf(s, direction)  # noqa: E731
        sup = self._log_mgf_sup(direction)
        delta = float(np.exp(log_delta))
        # Chernoff (improved RDP) epsilon of the same characteristic functions: a valid upper bracket.
        def objective(orders):
            kappa = np.asarray(orders) - 1.0
            log_m = np.real(lm(kappa.astype(np.complex128)))
            return (log_m + log_chernoff_constant(kappa) - log_delta) / kappa

        cap = self._max_damping()
        grid = 1.0 + np.geomspace(1e-3, min(1e3, cap), 41)
        opt = minimize_over_orders(objective, grid, objective(grid), max_order=1.0 + cap)
        hi, kappa = max(opt.value, 0.0), opt.order - 1.0
        if kappa > cap:  # the Chernoff epsilon at the capped damping is a valid (larger) bracket
            kappa = cap
            hi = max(hi, float(objective(np.array([1.0 + kappa]))[0]))
        tolerance = self._rtol * delta / 16.0
        for _ in range(4):
            # Errors shrink as epsilon grows, so a plan made at a lower epsilon holds above it: plan at 0.8 x the
            # Chernoff bracket first (the answer usually lies above), but not more than 3 / kappa below it (the
            # errors grow like e^(kappa (hi - eps))); at the answer itself when re-planning.
            plan_eps = max(0.8 * hi, hi - 3.0 / kappa) if kappa is not None else hi
            plan = make_plan(lm, sup, plan_eps, tolerance, max_terms=self._max_terms, kappa=kappa, max_damping=cap)

            def log_excess(eps, field):
                return np.log(max(getattr(invert(plan, eps)[0], field), 1e-320)) - log_delta

            if log_excess(0.0, "upper") <= 0:
                upper = 0.0
            else:
                top = hi
                for _ in range(100):  # the Chernoff bracket can only be off by rounding
                    if log_excess(top, "upper") <= 0:
                        break
                    top = top * 1.001 + 1e-9
                else:
                    raise AccuracyError(
                        f"FourierAccountant: the certified delta stays above {delta} up to epsilon {top:.6g} "
                        f"({direction.value}); damping {plan.kappa:.4g}, {plan.terms + 1} nodes "
                        f"(max_terms={self._max_terms}), rtol={self._rtol}."
                    )
                upper = _brentq(lambda e: log_excess(e, "upper"), 0.0, top, xtol=1e-13, rtol=1e-12)
                step = max(abs(upper) * 1e-12, 1e-300)
                while log_excess(upper, "upper") > 0:  # brentq's root may sit just below: step up to `top`
                    upper, step = min(upper + step, top), 2.0 * step
            at_upper, errors = invert(plan, upper)
            if at_upper.upper - at_upper.lower <= self._rtol * max(at_upper.estimate, 1e-300) or upper == 0.0:
                break
            # The plan was made for the Chernoff bracket; the errors grow below it. Plan again at the epsilon
            # found (same tolerance); only if that was already done, tighten the tolerance.
            if abs(hi - upper) <= 1e-3 * upper:
                tolerance = tolerance / 16.0
            hi, kappa = upper, None
        else:
            raise AccuracyError(
                f"FourierAccountant could not certify epsilon at delta={delta} to rtol={self._rtol} "
                f"({direction.value}): at epsilon {upper:.10g} delta is in [{at_upper.lower:.6g}, "
                f"{at_upper.upper:.6g}] with damping {plan.kappa:.4g}, period {plan.period:.4g}, "
                f"{errors['nodes']} nodes (max_terms={self._max_terms}); errors {errors}. {_hint(errors)}"
            )
        top = max(upper, 1e-12) * 1.01 + 1e-9
        estimate = 0.0
        if log_excess(0.0, "estimate") > 0:
            estimate = _brentq(lambda e: log_excess(e, "estimate"), 0.0, top, xtol=1e-14)
        # Certified lower end: the largest epsilon below the estimate at which even the lower delta exceeds
        # delta (the lower curve is not monotone near 0, where the aliasing bound is large).
        lower, gap = 0.0, 1e-10
        while gap < 1.0 and estimate > 0:
            if log_excess(estimate * (1.0 - gap), "lower") > 0:
                lo_eps, hi_eps = estimate * (1.0 - gap), estimate * (1.0 - gap / 10.0)
                lower = _brentq(lambda e: log_excess(e, "lower"), lo_eps, hi_eps, xtol=1e-14) if (
                    log_excess(hi_eps, "lower") < 0) else hi_eps
                break
            gap *= 10.0
        return Bounds(lower=min(lower, estimate, upper), estimate=min(estimate, upper), upper=upper)

    def get_epsilon(self, delta):
        """Certified upper bound on the smallest epsilon with an (epsilon, delta)-DP guarantee."""
        return self.epsilon_bounds(delta).upper

    # ------------------------------------------------------------------ reports
    def _method(self):
        if self._two_point_lattice() is not None:
            return ("exact enumeration of the composed two-point privacy losses (randomized response, pure DP; "
                    "Kairouz et al. 2015), float64 rounding bounded")
        if self._laplace_split() is not None:
            return ("atoms of the composed privacy loss enumerated exactly, the rest by Fourier inversion "
                    f"(thesis Sec 3.4), characteristic functions in closed form, rtol {self._rtol:g}")
        how = "characteristic functions in closed form" if self.certified else (
            "characteristic functions partly by quadrature (its error estimated, not proven)"
        )
        return f"Fourier inversion of the privacy-loss distribution (thesis Sec 3.4), {how}, rtol {self._rtol:g}"

    def epsilon_report(self, delta):
        b = self.epsilon_bounds(delta)
        return PrivacyReport(
            epsilon=b.upper,
            delta=float(delta),
            bound="upper bound" if self.certified else "estimate",
            relation=self.relation,
            accountant="Fourier",
            method=self._method() + f"; interval [{b.lower:.8g}, {b.upper:.8g}]",
        )

    def delta_report(self, epsilon):
        b = self.delta_bounds(epsilon)
        return PrivacyReport(
            epsilon=float(epsilon),
            delta=b.upper,
            bound="upper bound" if self.certified else "estimate",
            relation=self.relation,
            accountant="Fourier",
            method=self._method() + f"; interval [{b.lower:.8g}, {b.upper:.8g}]",
        )


def _closed_form(mechanism):
    from mechanisms.composition import Composed, SelfComposed
    from mechanisms.custom_pairs import ContinuousPairMechanism
    from mechanisms.subsampled import PoissonSubsampled

    if isinstance(mechanism, SelfComposed):
        return _closed_form(mechanism.mechanism)
    if isinstance(mechanism, Composed):
        return all(_closed_form(m) for m in mechanism.mechanisms)
    if isinstance(mechanism, PoissonSubsampled):
        return mechanism.sampling_probability in (0.0, 1.0) and _closed_form(mechanism.mechanism)
    return not isinstance(mechanism, ContinuousPairMechanism)


def _two_point_loss(mechanism):
    """``E`` if the mechanism's dominating pair is (Bernoulli(p*), Bernoulli(1 - p*)) with loss ``+-E`` (randomized
    response with 0 < p < 1, pure DP), else None."""
    if type(mechanism) is RandomizedResponse and 0.0 < mechanism.p < 1.0:
        return abs(float(np.log(mechanism.p) - np.log1p(-mechanism.p)))
    if type(mechanism) is PureDPMechanism:
        return float(mechanism.epsilon)
    return None


def _two_point_log_mgf(s, e_values, counts, block=1 << 20):
    """``sum_j n_j log(p*_j e^(s E_j) + (1 - p*_j) e^(-s E_j))`` (``privacy_loss.bernoulli_log_mgf`` for many
    ``E_j`` at once, in blocks of at most ``block`` matrix entries)."""
    s = np.asarray(s, dtype=np.complex128)
    flat = s.reshape(-1)
    flat = np.where(flat.real < -0.5, -1.0 - flat, flat)  # symmetric pair: M(s) = M(-1 - s)
    log_p = -np.log1p(np.exp(-e_values))
    out = np.empty(flat.shape, dtype=np.complex128)
    rows = max(1, block // max(e_values.size, 1))
    for start in range(0, flat.size, rows):
        z = flat[start : start + rows, None]
        terms = log_p + z * e_values + np.log1p(np.exp(-e_values - 2.0 * z * e_values))
        out[start : start + rows] = terms @ counts
    return out.reshape(s.shape)


def _real_array(values, name, owner):
    """``values`` as a float64 array; TypeError naming the parameter if they are not real numbers."""
    try:
        arr = np.asarray(values)
        if arr.dtype.kind not in "iuf":
            raise TypeError
        return arr.astype(np.float64)
    except (TypeError, ValueError):
        raise TypeError(f"`{name}` of {owner} must be real numbers; got {values!r}.") from None


def _hint(errors):
    """What limited the accuracy, and what to change, for an AccuracyError message."""
    parts = {k: float(errors[k]) for k in ("aliasing", "truncation", "rounding")}
    worst = max(parts, key=parts.get)
    if worst == "truncation":
        return (
            "The truncation error dominates: the characteristic function does not decay (losses with atoms: "
            "Laplace, randomized response, pure DP, mixed with no Gaussian) or decays slowly, so this error "
            "falls only like 1/nodes; raise max_terms or rtol."
        )
    if worst == "rounding":
        return "Float64 rounding of the terms dominates; raise rtol."
    return "The aliasing error dominates; raise rtol."
