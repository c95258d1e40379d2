"""Certified searches of :class:`accountants.FourierAccountant`: delta at an epsilon, epsilon at a delta.

Per direction (remove and add; the accountant reports the larger, thesis Thm 3.3.5), ``delta(epsilon)`` is the
certified inversion of :mod:`accountants.fourier_inversion` on the contour ``Re s = kappa > 0`` at the
Chernoff-optimal (saddle-point) damping, capped at the accountant's ``max_damping``; where that damping is below
``COMPLEMENT_SWITCH`` (delta far below the mean loss, large delta), ``1 - delta`` is priced on a contour left of
the pole at 0 instead (:func:`accountants.fourier_inversion.complement_damping`). The tolerance is tightened
until the certified interval is within ``rtol`` of the estimate, else :class:`AccuracyError`.

``epsilon(delta)`` is found by root finding on the certified delta curves, with a tolerance relative to delta
and no cap on epsilon: the bracket is the Chernoff epsilon of the same characteristic functions,
``(log M(kappa) + log(kappa^kappa / (1 + kappa)^(1 + kappa)) - log delta) / kappa``, the improved RDP conversion
at order ``kappa + 1`` (Balle et al. 2020, Thm 21; Canonne, Kamath & Steinke 2020, Prop 12). The upper end is an
epsilon at which the certified upper delta is at most delta, the lower end one at which the certified lower
delta still exceeds it.

Laplace ledgers split by :func:`accountants._fourier_atoms.laplace_split` add the atoms' exact delta to the
inverted rest; both directions agree (symmetric pairs). Near the pure epsilon the pure epsilon itself is
returned once the lower delta just below it is certified.
"""

import numpy as np

from accountants.conversions import minimize_over_orders
from accountants.fourier_inversion import (
    Bounds,
    chernoff_log_delta,
    complement_damping,
    invert,
    log_chernoff_constant,
    make_plan,
)
from mechanisms.errors import DPLedgerError

__all__ = [
    "AccuracyError",
    "COMPLEMENT_SWITCH",
    "direction_delta_bounds",
    "direction_epsilon_bounds",
    "split_delta_bounds",
    "split_epsilon_bounds",
]

#: Below this Chernoff-optimal damping, delta(epsilon) is first priced through 1 - delta (negative damping).
COMPLEMENT_SWITCH = 0.05


class AccuracyError(DPLedgerError):
    """The requested accuracy could not be certified; the message says what was tried."""

    # Public home: accountants.fourier_accountant (and accountants), which re-export it; keeps its repr and
    # pickles as they were before the searches moved here.
    __module__ = "accountants.fourier_accountant"


def _brentq(*args, **kwargs):
    """``scipy.optimize.brentq``, imported on first use: scipy.optimize costs about 0.4 s to import, which
    every ``import accountants`` (and every ``dpledger`` command) would otherwise pay."""
    from scipy import optimize

    return optimize.brentq(*args, **kwargs)


def hint(errors):
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


def direction_delta_bounds(lm, sup, epsilon, direction, *, rtol, max_terms, max_damping):
    """``(Bounds, plan)`` of delta(epsilon) for one direction, whose log MGF is ``lm`` and its decay bound
    ``sup``; 1 - delta is priced instead where the Chernoff-optimal damping is below ``COMPLEMENT_SWITCH``."""
    log_chernoff, kappa = chernoff_log_delta(lambda k: lm(k.astype(np.complex128)), epsilon, max_damping)
    if log_chernoff < -700.0:
        return Bounds(0.0, 0.0, float(np.exp(log_chernoff))), None
    if kappa < COMPLEMENT_SWITCH:
        # Far below the mean of L the best damping is ~0 and delta is large: price 1 - delta on a contour
        # left of the pole at 0 instead (absolute errors, small against a large delta).
        negative = complement_damping(lm, epsilon)
        tolerance = rtol * 1e-3
        for _ in range(3):
            plan = make_plan(lm, sup, epsilon, tolerance, max_terms=max_terms, kappa=negative)
            bounds, errors = invert(plan, epsilon)
            if bounds.upper - bounds.lower <= rtol * bounds.estimate:
                return bounds, plan
            if bounds.estimate <= 0.0 or tolerance <= rtol * bounds.estimate / 16:
                break
            tolerance = rtol * bounds.estimate / 16
    tolerance = rtol * np.exp(log_chernoff) * 1e-3
    for _ in range(4):
        plan = make_plan(lm, sup, epsilon, tolerance, max_terms=max_terms, kappa=kappa, max_damping=max_damping)
        bounds, errors = invert(plan, epsilon)
        if bounds.upper - bounds.lower <= rtol * max(bounds.estimate, 1e-300) or bounds.upper == 0.0:
            return bounds, plan
        if bounds.estimate <= 0.0 or tolerance <= rtol * bounds.estimate / 16:
            break
        tolerance = rtol * bounds.estimate / 16
    raise AccuracyError(
        f"FourierAccountant could not certify delta({epsilon}) to rtol={rtol} ({direction.value}): "
        f"bounds {tuple(bounds)} with damping {plan.kappa:.4g}, period {plan.period:.4g}, "
        f"{errors['nodes']} nodes (max_terms={max_terms}); errors {errors}. {hint(errors)}"
    )


def direction_epsilon_bounds(lm, sup, log_delta, direction, *, rtol, max_terms, max_damping):
    """(lower, estimate, upper) of epsilon at ``delta = exp(log_delta)`` for one direction (log MGF ``lm``,
    decay bound ``sup``): root finding on the inverted delta, bracketed by the Chernoff epsilon of ``lm``."""
    delta = float(np.exp(log_delta))
    # Chernoff (improved RDP) epsilon of the same characteristic functions: a valid upper bracket.
    def objective(orders):
        kappa = np.asarray(orders) - 1.0
        log_m = np.real(lm(kappa.astype(np.complex128)))
        return (log_m + log_chernoff_constant(kappa) - log_delta) / kappa

    cap = max_damping
    grid = 1.0 + np.geomspace(1e-3, min(1e3, cap), 41)
    opt = minimize_over_orders(objective, grid, objective(grid), max_order=1.0 + cap)
    hi, kappa = max(opt.value, 0.0), opt.order - 1.0
    if kappa > cap:  # the Chernoff epsilon at the capped damping is a valid (larger) bracket
        kappa = cap
        hi = max(hi, float(objective(np.array([1.0 + kappa]))[0]))
    tolerance = rtol * delta / 16.0
    for _ in range(4):
        # Errors shrink as epsilon grows, so a plan made at a lower epsilon holds above it: plan at 0.8 x the
        # Chernoff bracket first (the answer usually lies above), but not more than 3 / kappa below it (the
        # errors grow like e^(kappa (hi - eps))); at the answer itself when re-planning.
        plan_eps = max(0.8 * hi, hi - 3.0 / kappa) if kappa is not None else hi
        plan = make_plan(lm, sup, plan_eps, tolerance, max_terms=max_terms, kappa=kappa, max_damping=cap)

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
                    f"(max_terms={max_terms}), rtol={rtol}."
                )
            upper = _brentq(lambda e: log_excess(e, "upper"), 0.0, top, xtol=1e-13, rtol=1e-12)
            step = max(abs(upper) * 1e-12, 1e-300)
            while log_excess(upper, "upper") > 0:  # brentq's root may sit just below: step up to `top`
                upper, step = min(upper + step, top), 2.0 * step
        at_upper, errors = invert(plan, upper)
        if at_upper.upper - at_upper.lower <= rtol * max(at_upper.estimate, 1e-300) or upper == 0.0:
            break
        # The plan was made for the Chernoff bracket; the errors grow below it. Plan again at the epsilon
        # found (same tolerance); only if that was already done, tighten the tolerance.
        if abs(hi - upper) <= 1e-3 * upper:
            tolerance = tolerance / 16.0
        hi, kappa = upper, None
    else:
        raise AccuracyError(
            f"FourierAccountant could not certify epsilon at delta={delta} to rtol={rtol} "
            f"({direction.value}): at epsilon {upper:.10g} delta is in [{at_upper.lower:.6g}, "
            f"{at_upper.upper:.6g}] with damping {plan.kappa:.4g}, period {plan.period:.4g}, "
            f"{errors['nodes']} nodes (max_terms={max_terms}); errors {errors}. {hint(errors)}"
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


def _split_plan(lm, epsilon, tolerance, split, kappa, *, max_terms, max_damping):
    """Inversion plan for the rest ``R`` of a split ledger: its nodes use ``split.node_log``, its truncation
    bound ``split.sup``."""
    return make_plan(lm, split.sup, epsilon, tolerance, max_terms=max_terms, kappa=kappa,
                     max_damping=max_damping, node_log_mgf=split.node_log)


def split_delta_bounds(lm, epsilon, split, *, rtol, max_terms, max_damping):
    """delta = (atoms, exact) + (rest, Fourier inversion of R); both directions agree (symmetric pairs).
    ``lm`` is the log MGF of the whole ledger (remove direction), ``split`` an
    :class:`accountants._fourier_atoms.LaplaceSplit`."""
    atoms = split.atoms
    log_chernoff, kappa = chernoff_log_delta(lambda k: lm(k.astype(np.complex128)), epsilon, max_damping)
    kappa = max(kappa, 0.25)  # any damping > 0 is valid; near 0 the period would explode
    exact = atoms.delta_bounds(epsilon)
    tolerance = rtol * max(exact.estimate, np.exp(log_chernoff) * 1e-3) / 16.0
    for _ in range(4):
        plan = _split_plan(lm, epsilon, tolerance, split, kappa, max_terms=max_terms, max_damping=max_damping)
        rest, errors = invert(plan, epsilon)
        b = Bounds(exact.lower + rest.lower, exact.estimate + rest.estimate, min(exact.upper + rest.upper, 1.0))
        if b.upper - b.lower <= rtol * b.estimate or b.upper == 0.0:
            return b
        tolerance = min(tolerance, rtol * b.estimate) / 16.0
    raise AccuracyError(
        f"FourierAccountant could not certify delta({epsilon}) to rtol={rtol} (Laplace ledger, atoms "
        f"enumerated exactly, the rest by Fourier inversion): bounds {tuple(b)} with damping {plan.kappa:.4g}, "
        f"period {plan.period:.4g}, {errors['nodes']} nodes (max_terms={max_terms}); errors {errors}. "
        f"{hint(errors)}"
    )


def split_epsilon_bounds(lm, delta, split, pure, *, rtol, max_terms, max_damping):
    """(lower, estimate, upper) of epsilon at ``delta`` for a split Laplace ledger (``split``, an
    :class:`accountants._fourier_atoms.LaplaceSplit`) whose pure epsilon is ``pure``: root finding on the atoms'
    exact delta plus the rest's inverted one, bracketed by the Chernoff epsilon of ``lm`` (the ledger's log MGF,
    remove direction) and by ``pure``."""
    atoms = split.atoms
    log_delta = np.log(delta)

    def objective(orders):
        kappa = np.asarray(orders) - 1.0
        return (np.real(lm(kappa.astype(np.complex128))) + log_chernoff_constant(kappa) - log_delta) / kappa

    cap = max_damping
    grid = 1.0 + np.geomspace(1e-3, min(1e3, cap), 41)
    opt = minimize_over_orders(objective, grid, objective(grid), max_order=1.0 + cap)
    hi = min(max(opt.value, 0.0), pure)  # delta(hi) <= delta: Chernoff, or zero at the pure epsilon
    kappa = max(min(opt.order - 1.0, cap), 0.25)
    tolerance, plan_eps = rtol * delta / 16.0, max(0.8 * hi, hi - 3.0 / kappa)  # as in direction_epsilon_bounds

    for _ in range(4):
        plan = _split_plan(lm, plan_eps, tolerance, split, kappa, max_terms=max_terms, max_damping=max_damping)

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
                    f"(max_terms={max_terms}), rtol={rtol}."
                )
            upper = top if excess(top, "upper") > 0 else _brentq(
                lambda e: excess(e, "upper"), 0.0, top, xtol=1e-13, rtol=1e-12)
            step = max(abs(upper) * 1e-12, 1e-300)
            while upper < top and excess(upper, "upper") > 0:
                upper, step = min(upper + step, top), 2.0 * step
        low, est, up = (excess(upper, f) + delta for f in ("lower", "estimate", "upper"))
        if up - low <= rtol * est or upper == 0.0:
            break
        # Near the pure epsilon (tiny delta) the pure epsilon itself may be within rtol: it is an upper bound
        # ((pure, 0)-DP), and if the certified lower delta still exceeds delta just below it, so is the rest.
        just_below = pure * (1.0 - rtol / 2.0)
        if excess(just_below, "lower") > 0:
            return Bounds(lower=just_below, estimate=pure, upper=pure)
        if abs(plan_eps - upper) <= 1e-3 * max(upper, 1e-300):
            tolerance /= 16.0
        plan_eps, kappa = upper, max(kappa, 0.25)
    else:
        raise AccuracyError(
            f"FourierAccountant could not certify epsilon at delta={delta} to rtol={rtol} (Laplace ledger, "
            f"atoms enumerated exactly): at epsilon {upper:.10g} delta is in [{low:.6g}, {up:.6g}] with damping "
            f"{plan.kappa:.4g}, {plan.terms + 1} nodes (max_terms={max_terms}); raise max_terms or rtol."
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
