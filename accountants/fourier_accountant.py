"""``FourierAccountant``: composition by adding log characteristic functions, certified Fourier inversion.

The analytical Fourier accountant of thesis Sec 3.4 (Algorithm 1): each mechanism contributes the log moment
generating function of its dominating pair's privacy loss (thesis Def 3.3.7; ``Mechanism.log_mgf``), composition
adds them (thesis Prop 3.3.8, Thm 3.3.4), so ``count`` costs O(1). ``delta(epsilon)`` is priced per direction
(remove and add, thesis Thm 3.3.5) by :mod:`accountants.fourier_inversion` and the larger one is reported.
"""

import numpy as np
from scipy import optimize

from accountants.conversions import minimize_over_orders
from accountants.fourier_inversion import (
    MAX_DAMPING,
    Bounds,
    chernoff_log_delta,
    invert,
    log_chernoff_constant,
    make_plan,
)
from accountants.report import PrivacyReport
from mechanisms import _validate
from mechanisms.base import Mechanism
from mechanisms.errors import DPLedgerError, MissingCapabilityError
from mechanisms.gaussian import GaussianMechanism
from mechanisms.relations import Direction, NeighboringRelation

__all__ = ["FourierAccountant", "AccuracyError"]


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
    the truncation error rests on that quadrature; their reports say so.

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
        probe = np.array([0.5, 0.5 + 1.0j])
        for direction in Direction:
            mechanism.log_mgf(probe, direction)

    def compose(self, mechanism, count=1):
        """Add ``count`` runs of ``mechanism``; returns ``self``. Transactional (checks first)."""
        count = _validate.positive_int(count, "count", "FourierAccountant.compose")
        if mechanism not in self._entries:
            self._check(mechanism)
        self._entries[mechanism] = self._entries.get(mechanism, 0) + count
        return self

    def log_mgf(self, s, direction=Direction.REMOVE):
        """``log E_P[e^(sL)]`` of the composed privacy loss for one direction (zero for an empty ledger)."""
        s = np.asarray(s, dtype=np.complex128)
        total = np.zeros(s.shape, dtype=np.complex128)
        # Gaussian privacy losses compose in closed form: one Gaussian with the summed mu^2.
        mu2 = sum(n / m.noise_multiplier**2 for m, n in self._entries.items() if type(m) is GaussianMechanism)
        if mu2:
            total = total + GaussianMechanism(sigma=mu2**-0.5).log_mgf(s, direction)
        for mechanism, count in self._entries.items():
            if type(mechanism) is not GaussianMechanism:
                total = total + count * mechanism.log_mgf(s, direction)
        return total

    def _log_mgf_sup(self, direction):
        def sup(kappa, u_min):
            c = kappa if direction is Direction.REMOVE else -1.0 - kappa
            mu2 = sum(n / m.noise_multiplier**2 for m, n in self._entries.items() if type(m) is GaussianMechanism)
            total = GaussianMechanism(sigma=mu2**-0.5).log_mgf_sup(c, u_min) if mu2 else 0.0
            return float(total + sum(
                n * m.log_mgf_sup(c, u_min) for m, n in self._entries.items() if type(m) is not GaussianMechanism
            ))

        return sup

    def pure_epsilon(self):
        """Basic composition of the mechanisms' pure-DP epsilons (inf if any has none): delta is 0 above it."""
        return float(sum(n * float(m.rdp(np.inf)) for m, n in self._entries.items()))

    @property
    def certified(self):
        """Whether every characteristic function in the ledger is in closed form (so the error bounds are
        proofs, up to float64 rounding which is bounded too)."""
        return all(_closed_form(m) for m in self._entries)

    # ------------------------------------------------------------------ delta
    def _direction_bounds(self, direction, epsilon, plan=None):
        lm = lambda s: self.log_mgf(s, direction)  # noqa: E731
        sup = self._log_mgf_sup(direction)
        log_chernoff, kappa = chernoff_log_delta(lambda k: lm(k.astype(np.complex128)), epsilon)
        if log_chernoff < -700.0:
            return Bounds(0.0, 0.0, float(np.exp(log_chernoff))), None
        tolerance = self._rtol * np.exp(log_chernoff) * 1e-3
        for _ in range(4):
            plan = make_plan(lm, sup, epsilon, tolerance, max_terms=self._max_terms, kappa=kappa)
            bounds, errors = invert(plan, epsilon)
            if bounds.upper - bounds.lower <= self._rtol * max(bounds.estimate, 1e-300) or bounds.upper == 0.0:
                return bounds, plan
            if bounds.estimate <= 0.0 or tolerance <= self._rtol * bounds.estimate / 16:
                break
            tolerance = self._rtol * bounds.estimate / 16
        raise AccuracyError(
            f"FourierAccountant could not certify delta({epsilon}) to rtol={self._rtol} ({direction.value}): "
            f"bounds {tuple(bounds)} with damping {plan.kappa:.4g}, period {plan.period:.4g}, "
            f"{errors['nodes']} nodes (max_terms={self._max_terms}); errors {errors}."
        )

    def delta_bounds(self, epsilon):
        """(lower, estimate, upper) of the smallest delta for which the ledger is (epsilon, delta)-DP,
        add-or-remove-one: the larger of the remove and add directions (thesis Thm 3.3.5)."""
        epsilon = _validate.nonnegative(epsilon, "epsilon", "FourierAccountant.get_delta")
        if not self._entries or epsilon >= self.pure_epsilon():
            return Bounds(0.0, 0.0, 0.0)
        parts = [self._direction_bounds(d, epsilon)[0] for d in Direction]
        return Bounds(*(max(getattr(b, f) for b in parts) for f in ("lower", "estimate", "upper")))

    def get_delta(self, epsilon):
        """Certified upper bound on delta(epsilon) (add-or-remove-one)."""
        return self.delta_bounds(epsilon).upper

    def privacy_profile(self, epsilons):
        """``(lower, estimate, upper)`` arrays of delta over a grid of epsilons."""
        values = np.array([tuple(self.delta_bounds(e)) for e in np.asarray(epsilons, dtype=float).ravel()])
        return values[:, 0], values[:, 1], values[:, 2]

    def tradeoff_curve(self, alphas, epsilons=None):
        """Lower bound on the trade-off function (f-DP): ``beta(a) >= max_eps max(0, 1 - d(eps) - e^eps a,
        e^-eps (1 - d(eps) - a))`` over a grid of epsilons (thesis Lemma 3.1.4 (2)), with the upper delta."""
        alphas = np.asarray(alphas, dtype=float)
        if ((alphas < 0) | (alphas > 1) | np.isnan(alphas)).any():
            raise ValueError("`alphas` of FourierAccountant.tradeoff_curve must be in [0, 1].")
        eps = np.linspace(0.0, 20.0, 201) if epsilons is None else np.asarray(epsilons, dtype=float)
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
        if not self._entries:
            return Bounds(0.0, 0.0, 0.0)
        log_delta = np.log(delta)
        out = []
        for direction in Direction:
            out.append(self._direction_epsilon(direction, log_delta))
        pure = self.pure_epsilon()  # (pure, 0)-DP holds, so epsilon never exceeds it
        return Bounds(*(min(max(getattr(b, f) for b in out), pure) for f in ("lower", "estimate", "upper")))

    def _direction_epsilon(self, direction, log_delta):
        lm = lambda s: self.log_mgf(s, direction)  # noqa: E731
        sup = self._log_mgf_sup(direction)
        delta = float(np.exp(log_delta))
        # Chernoff (improved RDP) epsilon of the same characteristic functions: a valid upper bracket.
        def objective(orders):
            kappa = np.asarray(orders) - 1.0
            log_m = np.real(lm(kappa.astype(np.complex128)))
            return (log_m + log_chernoff_constant(kappa) - log_delta) / kappa

        grid = 1.0 + np.geomspace(1e-3, 1e3, 41)
        opt = minimize_over_orders(objective, grid, objective(grid), max_order=1e7)
        hi, kappa = max(opt.value, 0.0), opt.order - 1.0
        if kappa > MAX_DAMPING:  # the Chernoff epsilon at the capped damping is a valid (larger) bracket
            kappa = MAX_DAMPING
            hi = max(hi, float(objective(np.array([1.0 + kappa]))[0]))
        tolerance = self._rtol * delta / 16.0
        for _ in range(3):
            plan = make_plan(lm, sup, hi, tolerance, max_terms=self._max_terms, kappa=kappa)

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
                upper = optimize.brentq(lambda e: log_excess(e, "upper"), 0.0, top, xtol=1e-13, rtol=1e-12)
                while log_excess(upper, "upper") > 0:
                    upper = upper + max(abs(upper), 1e-12) * 1e-12
            at_upper, errors = invert(plan, upper)
            if at_upper.upper - at_upper.lower <= self._rtol * max(at_upper.estimate, 1e-300) or upper == 0.0:
                break
            hi, tolerance = upper, tolerance / 16.0
            kappa = None
        else:
            raise AccuracyError(
                f"FourierAccountant could not certify epsilon at delta={delta} to rtol={self._rtol} "
                f"({direction.value}): at epsilon {upper:.10g} delta is in [{at_upper.lower:.6g}, "
                f"{at_upper.upper:.6g}] with damping {plan.kappa:.4g}, period {plan.period:.4g}, "
                f"{errors['nodes']} nodes (max_terms={self._max_terms}); errors {errors}."
            )
        top = max(upper, 1e-12) * 1.01 + 1e-9
        estimate = 0.0
        if log_excess(0.0, "estimate") > 0:
            estimate = optimize.brentq(lambda e: log_excess(e, "estimate"), 0.0, top, xtol=1e-14)
        # Certified lower end: the largest epsilon below the estimate at which even the lower delta exceeds
        # delta (the lower curve is not monotone near 0, where the aliasing bound is large).
        lower, gap = 0.0, 1e-10
        while gap < 1.0 and estimate > 0:
            if log_excess(estimate * (1.0 - gap), "lower") > 0:
                lo_eps, hi_eps = estimate * (1.0 - gap), estimate * (1.0 - gap / 10.0)
                lower = optimize.brentq(lambda e: log_excess(e, "lower"), lo_eps, hi_eps, xtol=1e-14) if (
                    log_excess(hi_eps, "lower") < 0) else hi_eps
                break
            gap *= 10.0
        return Bounds(lower=min(lower, estimate, upper), estimate=min(estimate, upper), upper=upper)

    def get_epsilon(self, delta):
        """Certified upper bound on the smallest epsilon with an (epsilon, delta)-DP guarantee."""
        return self.epsilon_bounds(delta).upper

    # ------------------------------------------------------------------ reports
    def _method(self):
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
