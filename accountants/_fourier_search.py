"""Certified searches of :class:`accountants.FourierAccountant`: delta at an epsilon, epsilon at a delta.

Per direction (remove and add; the accountant reports the larger, thesis Thm 3.3.5), ``delta(epsilon)`` is the
certified inversion of :mod:`accountants.fourier_inversion` on the contour ``Re s = kappa > 0`` at the
Chernoff-optimal (saddle-point) damping, capped at the accountant's ``max_damping``; where that damping is below
``COMPLEMENT_SWITCH`` (delta far below the mean loss, large delta), ``1 - delta`` is priced on a contour left of
the pole at 0 instead (:func:`accountants.fourier_inversion.complement_damping`). The tolerance is tightened
until the certified interval is within ``rtol`` of the estimate; a direction that does not get there reports
why, and :class:`AccuracyError` is raised only if it could decide the add-or-remove maximum (below).

``epsilon(delta)`` is found by root finding on the certified delta curves, with a tolerance relative to delta
and no cap on epsilon: the bracket is the Chernoff epsilon of the same characteristic functions,
``(log M(kappa) + log(kappa^kappa / (1 + kappa)^(1 + kappa)) - log delta) / kappa``, the improved RDP conversion
at order ``kappa + 1`` (Balle et al. 2020, Thm 21; Canonne, Kamath & Steinke 2020, Prop 12). The upper end is an
epsilon at which the certified upper delta is at most delta, the lower end one at which the certified lower
delta still exceeds it.

Add-or-remove-one (thesis Thm 3.3.5): ``delta(eps) = max(delta_R(eps), delta_A(eps))`` and, as each
``delta_d`` is continuous and non-increasing, ``epsilon(delta) = max(epsilon_R(delta), epsilon_A(delta))``.
:func:`max_delta_bounds` and :func:`max_epsilon_bounds` combine the directions so that a direction which cannot
decide the maximum needs no accuracy (proofs in their docstrings): a typical DP-SGD ledger has an add-direction
delta of ~1e-37 (float64 rounding dominates it, so it cannot meet any rtol relative to its own size) next to a
remove-direction delta of ~1e-6.

Laplace ledgers split by :func:`accountants._fourier_atoms.laplace_split` add the atoms' exact delta to the
inverted rest; both directions agree (symmetric pairs). Near the pure epsilon the pure epsilon itself is
returned once the lower delta just below it is certified.
"""

import functools
import math

import numpy as np

from dpledger.accountants._roots import brentq as _brentq
from dpledger.accountants.conversions import minimize_over_orders
from dpledger.accountants.fourier_inversion import (
    Bounds,
    TruncationLimit,
    _enclosure_error,
    chernoff_log_delta,
    complement_damping,
    invert,
    log_chernoff_constant,
    make_plan,
    with_left_out,
    with_more_tails,
)
from dpledger.mechanisms._tilts import exact_tilt
from dpledger.mechanisms.errors import DPLedgerError, NumericalError

__all__ = [
    "AccuracyError",
    "COMPLEMENT_SWITCH",
    "chernoff_epsilon",
    "coarse_chernoff_epsilon",
    "damping_cap",
    "direction_delta_bounds",
    "direction_epsilon_bounds",
    "bounds_in_bracket",
    "max_delta_bounds",
    "max_epsilon_bounds",
    "mirror_delta_upper",
    "split_delta_bounds",
    "split_epsilon_bounds",
]

_U = 2.0**-53
#: Below this Chernoff-optimal damping, delta(epsilon) is first priced through 1 - delta (negative damping).
COMPLEMENT_SWITCH = 0.05
#: Relative slack added to a Chernoff bound computed in float64 before it is reported as an upper bound (its
#: terms are logs of magnitude <= ~1e3, each rounded to ~1e-16 relative).
_CHERNOFF_SLACK = 1e-9


def _chernoff_delta_upper(log_chernoff, left_out=0.0):
    """A Chernoff bound on delta, ``exp(log_chernoff)``, made an upper bound: its rounding slack, kept within
    ``[5e-324, 1]`` (never 0: the bound is positive), plus the mass ``left_out`` of a cut law (its Chernoff bound is
    its body's, "Cut laws" in :mod:`accountants.fourier_inversion`)."""
    upper = min(max(float(np.exp(log_chernoff)) * (1.0 + _CHERNOFF_SLACK), 5e-324), 1.0)
    return with_left_out(upper, left_out)


def _chernoff_epsilon_upper(epsilon):
    """A Chernoff epsilon (coarse or full) made an upper bound: its rounding slack, relative and absolute."""
    return epsilon * (1.0 + _CHERNOFF_SLACK) + 1e-12


class AccuracyError(DPLedgerError):
    """The requested accuracy could not be certified; the message says what was tried.

    ``proven``: the :class:`~accountants.report.Bounds` ``(lower, estimate, upper)`` certified nonetheless (each
    end a proven bound, only wider than ``rtol`` asks), or ``None`` where the search found none. The searches
    :func:`max_epsilon_bounds` and :func:`max_delta_bounds` attach them; ``FourierAccountant`` intersects them with
    the privacy buckets' proven interval where it has one."""

    def __init__(self, message: str = "", proven: Bounds | None = None) -> None:
        super().__init__(message)
        self.proven = proven
        #: True where every direction that decided the failure was short of nodes at a damping below its cap
        #: (:class:`ShortOfNodes`): a search at a larger damping cap would make the same plans and fail the same way.
        self.short_of_nodes = False
        #: True where every direction that decided the failure made all its plans below its damping cap
        #: (:class:`BelowCap`, of which :class:`ShortOfNodes` is one kind): a larger cap would repeat them.
        self.below_cap = False

    # Public home: accountants.fourier_accountant (and accountants), which re-export it; keeps its repr and
    # pickles as they were before the searches moved here.
    __module__ = "dpledger.accountants.fourier_accountant"


class BelowCap(str):
    """The failure message of a direction's search whose plans all took dampings below the search's damping cap (its
    Chernoff-optimal damping lies below the cap, so a search at a larger cap chooses the same dampings and makes the
    same plans): :class:`AccuracyError` says so (``below_cap``) and the accountant does not search again at a larger
    cap. Many runs of a very narrow loss (sigma 0.52, q 1.8e-6, 40,668 runs: damping 14 against a cap of 64), whose
    searches miss ``rtol`` by the enclosures' float error, repeated five plans of 2^18 nodes per direction at the
    larger cap (1.2 s of a 4.7 s query, a one-off timing) for the same failure."""


class ShortOfNodes(BelowCap):
    """The failure message of a direction's epsilon or delta search that ended short of nodes at a damping below
    the search's cap: its last plan had all the nodes it may have (``max_terms``) with its truncation bound still
    above the tolerance (:func:`_short_of_nodes`; for an epsilon search, at its certified upper epsilon, and it
    stops there), or a plan hit its truncation limit (:class:`TruncationLimit`). No other plan of that search could
    meet ``rtol``: more nodes are not allowed, and a tighter tolerance or a larger damping cap only lengthens the
    period or repeats the plan, so :class:`AccuracyError` says so (``short_of_nodes``) and the accountant does not
    search again at a larger cap. Few runs of little noise and a small sampling probability (sigma 0.6, q 1e-4, 2
    runs), whose characteristic function barely decays, took four plans of 2^20 nodes per direction, all repeated at
    the larger cap: 18 s before the privacy buckets answered the epsilon query."""


#: Tries of :func:`_bracket_below` (each step four times the last).
_BRACKET_TRIES = 4


def _bracket_below(f, x0, f0, rate):
    """A point ``a`` in ``[0, x0)`` with ``f(a) > 0``, for a decreasing-ish ``f`` with ``f(x0) = f0 <= 0``, and
    ``f(a)``; None where none is found. ``f`` is ``log delta(eps) - log delta*`` (a field of an inversion), whose
    slope near the answer is about ``-rate`` (the plan's damping: at the saddle point ``d log delta / d eps`` is
    minus the Chernoff-optimal damping), so the root lies about ``-f0 / rate`` below ``x0``: steps of twice that,
    then four times each, at most :data:`_BRACKET_TRIES`, the last at 0. Only the work depends on it: the callers
    search the bracket by Brent's method and check what they return."""
    if not (rate and rate > 0.0 and math.isfinite(f0) and math.isfinite(rate)):
        return None
    step = 2.0 * max(-f0, 1e-9) / rate
    for i in range(_BRACKET_TRIES):
        a = max(x0 - step, 0.0) if i < _BRACKET_TRIES - 1 else 0.0
        fa = f(a)
        if fa > 0:
            return a, fa
        if a == 0.0:
            return None
        step *= 4.0
    return None


def certified_upper_root(excess, top, cap=math.inf, rate=None):
    """``(upper, found)``: the smallest epsilon found with ``excess(epsilon, "upper") <= 0`` (the certified
    delta at most the target there), searched from the bracket ``top`` (grown by 0.1% at most 100 times, never
    past ``cap``, where delta is 0 by the pure epsilon) and refined by Brent's method; brentq's root may sit
    just below the crossing, so it is stepped up until the evaluated excess is not positive. ``found`` is False
    (and ``upper`` the last bracket tried) when no such epsilon was found below ``cap``. ``rate`` (the plan's
    damping), if given, first looks for the bracket's lower end near ``top`` (:func:`_bracket_below`; a Chernoff
    bracket a few percent above the answer then takes about 4 inversions instead of 10); 0 otherwise."""
    for _ in range(100):
        if top >= cap or excess(top, "upper") <= 0:
            break
        top = top * 1.001 + 1e-9
    top = min(top, cap)
    if excess(top, "upper") > 0:
        if excess(0.0, "upper") <= 0:
            return 0.0, True
        return top, top >= cap  # at the cap: the pure epsilon, where delta is 0
    near = _bracket_below(lambda e: excess(e, "upper"), top, excess(top, "upper"), rate)
    if near is None:
        if excess(0.0, "upper") <= 0:
            return 0.0, True
        near = (0.0, None)
    upper = _brentq(lambda e: excess(e, "upper"), near[0], top, xtol=1e-13, rtol=1e-12)
    step = max(abs(upper) * 1e-12, 1e-300)
    while upper < top and excess(upper, "upper") > 0:
        upper, step = min(upper + step, top), 2.0 * step
    return upper, True


#: Relative tolerance of the estimate's and the lower end's root searches (Brent's method): the lower end is proven
#: by the check that follows each search whatever the tolerance, so only its tightness depends on it, by at most
#: this much; 1e-12 instead of the method's default 9e-16 saves the last steps, each one inversion (sigma 0.6, q
#: 1e-3, 10 steps: five evaluations of the estimate within 1e-12 of each other).
_ROOT_RTOL = 1e-12


def estimate_root(excess, upper, rate=None):
    """The epsilon where the ``"estimate"`` delta crosses the target (0 where it is below it at 0): below the
    certified ``upper`` (the estimate never exceeds the upper delta), bracketed near it by :func:`_bracket_below`
    where ``rate`` is given, else in ``[0, 1.01 upper]``; only an estimate (no proof rests on it)."""
    f = lambda e: excess(e, "estimate")  # noqa: E731
    at_upper = f(upper)
    if at_upper > 0:
        return upper
    near = _bracket_below(f, upper, at_upper, rate)
    if near is not None:
        return _brentq(f, near[0], upper, xtol=1e-14, rtol=_ROOT_RTOL)
    if f(0.0) <= 0:
        return 0.0
    return _brentq(f, 0.0, upper, xtol=1e-14, rtol=_ROOT_RTOL)


def certified_lower_root(excess, estimate, *, refine, rate=None):
    """The largest epsilon below ``estimate`` found at which even the certified lower delta exceeds the target
    (``excess(epsilon, "lower") > 0``; 0 if none): with ``rate`` (the plan's damping), first near ``estimate``
    (:func:`_bracket_below`, then Brent's method between that point and ``estimate``, its root stepped down until
    the evaluated excess is positive); else, or where that finds none, tried at ``estimate (1 - 10^-k)``, k = 10, 9,
    ... (the lower curve is not monotone near 0, where the aliasing bound is large), then, with ``refine``, moved up
    by Brent's method towards the next trial point (stepped down the same way)."""
    if estimate > 0 and rate is not None:
        at = excess(estimate, "lower")
        if at > 0:
            return estimate
        near = _bracket_below(lambda e: excess(e, "lower"), estimate, at, rate)
        if near is not None:
            lo_eps = near[0]
            if not refine:
                return lo_eps
            root = _brentq(lambda e: excess(e, "lower"), lo_eps, estimate, xtol=1e-14, rtol=_ROOT_RTOL)
            step = max(abs(root) * 1e-12, 1e-300)
            while root > lo_eps and not excess(root, "lower") > 0:
                root, step = max(root - step, lo_eps), 2.0 * step
            return root
    gap = 1e-10
    while gap < 1.0 and estimate > 0:
        if excess(estimate * (1.0 - gap), "lower") > 0:
            lo_eps, hi_eps = estimate * (1.0 - gap), estimate * (1.0 - gap / 10.0)
            if not refine:
                return lo_eps
            if excess(hi_eps, "lower") < 0:
                root = _brentq(lambda e: excess(e, "lower"), lo_eps, hi_eps, xtol=1e-14, rtol=_ROOT_RTOL)
                # brentq's root may sit just above the crossing: step down until the excess is positive
                step = max(abs(root) * 1e-12, 1e-300)
                while root > lo_eps and not excess(root, "lower") > 0:
                    root, step = max(root - step, lo_eps), 2.0 * step
                return root
            return hi_eps
        gap *= 10.0
    return 0.0


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


def direction_delta_bounds(lm, sup, epsilon, direction, *, rtol, max_terms, max_damping, floor=0.0,
                           chernoff=None, on_plan=None):
    """See :func:`_direction_delta_bounds`; a plan that cannot bound its truncation (:class:`TruncationLimit`)
    fails at once, with the Chernoff bound as its certified upper end. ``on_plan``, if given, is called with each
    plan made (:func:`max_delta_bounds` keeps the last for the mirror direction)."""
    if chernoff is None:
        chernoff = chernoff_log_delta(lambda k: lm(k.astype(np.complex128)), epsilon, max_damping)
    try:
        return _direction_delta_bounds(lm, sup, epsilon, direction, rtol=rtol, max_terms=max_terms,
                                       max_damping=max_damping, floor=floor, chernoff=chernoff, on_plan=on_plan)
    except TruncationLimit as exc:
        upper = _chernoff_delta_upper(chernoff[0], _left_out(lm))
        message = (f"FourierAccountant could not certify delta({epsilon}) to rtol={rtol} ({direction.value}): {exc}; "
                   "RDPAccountant answers such ledgers (looser).")
        # below the damping cap, a larger cap would make the same plan (ShortOfNodes)
        return Bounds(0.0, upper, upper), ShortOfNodes(message) if chernoff[1] < max_damping * (1.0 - 1e-9) else message


def _direction_delta_bounds(lm, sup, epsilon, direction, *, rtol, max_terms, max_damping, floor=0.0,
                            chernoff=None, on_plan=None):
    """``(Bounds, failure)`` of delta(epsilon) for one direction, whose log MGF is ``lm`` and its decay bound
    ``sup``; 1 - delta is priced instead where the Chernoff-optimal damping is below ``COMPLEMENT_SWITCH``.

    The bounds are certified whatever ``failure`` says. ``failure`` is ``None`` when they are within ``rtol`` of
    the estimate, or when ``upper <= floor``: ``floor`` is a certified lower bound on the other direction's delta,
    so this direction cannot decide the maximum (see :func:`max_delta_bounds`) and the search stops there, first
    trying the Chernoff bound ``M(kappa) e^(-kappa eps) kappa^kappa / (1 + kappa)^(1 + kappa)`` alone. Otherwise
    ``failure`` is the :class:`AccuracyError` message saying what was tried. ``chernoff`` is
    ``chernoff_log_delta`` of ``lm`` at ``epsilon`` (computed when not given). The first plan may take a smaller
    damping for a shorter period (make_plan's ``shorten``, as the epsilon search's first plan): sigma 0.6, q 1e-4,
    10 steps went from 262,144 + 524,288 nodes (1.3 s) to 131,072 (0.32 s).

    A cut law (``lm.left_out > 0``, "Cut laws" in :mod:`accountants.fourier_inversion`): its Chernoff bound is its
    body's, so the mass left out joins every upper end taken from it (beyond the body's largest loss the body's
    delta is 0 and its Chernoff bound below e^-700, while the whole law's delta is not: q = 1e-3, sigma = 2, 2
    runs, delta(1) >= 6.3e-54 was reported as 5e-324); and it has no complement contour (``make_plan`` refuses
    one): where that would be taken it fails at once, with its Chernoff bound, so the caller inverts the whole
    laws."""
    if chernoff is None:
        chernoff = chernoff_log_delta(lambda k: lm(k.astype(np.complex128)), epsilon, max_damping)
    log_chernoff, kappa = chernoff
    left_out = _left_out(lm)
    if log_chernoff < -700.0:
        # delta is negligible: report the Chernoff bound itself, with its slack, and never 0 (an exact 0 it is not:
        # the bound is positive; below the float range the smallest positive float is above it)
        upper = _chernoff_delta_upper(log_chernoff, left_out)
        if not left_out:
            return Bounds(0.0, 0.0, upper), None
        return Bounds(0.0, upper, upper), (
            f"FourierAccountant could not certify delta({epsilon}) to rtol={rtol} ({direction.value}) on the cut "
            f"law: its body's delta is negligible, the mass left out ({left_out:.3g}) is not.")
    chernoff_upper = _chernoff_delta_upper(log_chernoff, left_out)
    if chernoff_upper <= floor:
        return Bounds(0.0, 0.0, chernoff_upper), None
    if kappa < COMPLEMENT_SWITCH and left_out:
        return Bounds(0.0, chernoff_upper, chernoff_upper), (
            f"FourierAccountant could not certify delta({epsilon}) to rtol={rtol} ({direction.value}) on the cut "
            "law: its delta is large (Chernoff damping below COMPLEMENT_SWITCH) and a cut law has no complement "
            "contour.")
    hopeless = _hopeless_at_the_cap(lm, epsilon, chernoff, max_damping, left_out)
    if hopeless is not None:
        return Bounds(0.0, 0.0, hopeless), (
            f"FourierAccountant could not certify delta({epsilon}) to rtol={rtol} ({direction.value}): its Chernoff "
            f"bound beyond the damping cap {max_damping:g} ({hopeless:.3g}) is below e^-{_HOPELESS_LOG_GAP:g} of the "
            "one at the cap, where a plan's float rounding alone would exceed it; reported is that bound.")
    if kappa < COMPLEMENT_SWITCH:
        # Far below the mean of L the best damping is ~0 and delta is large: price 1 - delta on a contour
        # left of the pole at 0 instead (absolute errors, small against a large delta).
        negative = complement_damping(lm, epsilon)
        tolerance = rtol * 1e-3
        for _ in range(3):
            plan = make_plan(lm, sup, epsilon, tolerance, max_terms=max_terms, kappa=negative)
            if on_plan is not None:
                on_plan(plan)
            bounds, errors = invert(plan, epsilon)
            if bounds.upper - bounds.lower <= rtol * bounds.estimate or bounds.upper <= floor:
                return bounds, None
            if bounds.estimate <= 0.0 or tolerance <= rtol * bounds.estimate / 16:
                break
            tolerance = rtol * bounds.estimate / 16
    tolerance = rtol * np.exp(log_chernoff) * 1e-3
    for attempt in range(4):
        plan = make_plan(lm, sup, epsilon, tolerance, max_terms=max_terms, kappa=kappa, max_damping=max_damping,
                         shorten=attempt == 0)
        if on_plan is not None:
            on_plan(plan)
        bounds, errors = invert(plan, epsilon)
        if _within(bounds, rtol) or bounds.upper == 0.0 or bounds.upper <= floor:
            return bounds, None
        if bounds.estimate <= 0.0 or tolerance <= rtol * bounds.estimate / 16:
            break
        if _short_of_nodes(plan, epsilon, tolerance, max_terms):
            break  # every node allowed and short of this tolerance: a tighter one cannot add nodes
        tolerance = rtol * bounds.estimate / 16
    message = (
        f"FourierAccountant could not certify delta({epsilon}) to rtol={rtol} ({direction.value}): "
        f"bounds {tuple(bounds)} with damping {plan.kappa:.4g}, period {plan.period:.4g}, "
        f"{errors['nodes']} nodes (max_terms={max_terms}); errors {errors}. {hint(errors)}"
    )
    if _short_of_nodes(plan, epsilon, tolerance, max_terms) and plan.kappa < max_damping * (1.0 - 1e-9):
        return bounds, ShortOfNodes(message)  # a larger damping cap would make the same plans
    return bounds, message


#: A plan at the damping cap is not tried where a Chernoff bound beyond the cap is below ``e^-60`` of the one at the
#: cap (:func:`_hopeless_at_the_cap`).
_HOPELESS_LOG_GAP = 60.0
#: How far beyond the cap that Chernoff bound is searched.
_BEYOND_CAP_DAMPING = 1e5


def _hopeless_at_the_cap(lm, epsilon, chernoff, max_damping, left_out):
    """A proven upper bound on delta (a Chernoff bound at dampings up to :data:`_BEYOND_CAP_DAMPING`, plus what a
    cut law leaves out) where the plan at the damping cap cannot reach any useful accuracy, else None.

    Why it cannot: the plan's first term alone is about its Chernoff bound at the cap, ``e^(log M(k) - k eps)`` over
    ``k (1 + k)``, so its float rounding is at least ``eps_mach`` times that (times ``8 + |log M|`` over 2); if delta
    is below ``e^-60`` of it (the bound beyond the cap says so), the rounding exceeds delta ``e^60 eps_mach > 10^10``
    times over, for any ``rtol`` above ``1e-10``. Subsampled Gaussians of two runs at q = 1e-4, sigma 3, epsilon 1:
    the cap's bound 3e-42, beyond it 3.5e-75; five plans of up to 524,289 nodes failed in 0.7 s before."""
    log_chernoff, kappa = chernoff
    # only where even the cap's bound is below e^-60: ordinary deltas keep their plans without the extra search (a
    # few ms per direction: sigma 5, q 0.01, 10 steps at epsilon 0.018 went from 8.9 to 12.5 ms when it ran always)
    if not (kappa >= max_damping * (1.0 - 1e-9) and log_chernoff < -_HOPELESS_LOG_GAP
            and max_damping < _BEYOND_CAP_DAMPING):
        return None
    try:
        beyond = chernoff_log_delta(lambda k: lm(k.astype(np.complex128)), epsilon, _BEYOND_CAP_DAMPING,
                                    near=max_damping)[0]
    except NumericalError:
        return None
    if not beyond < log_chernoff - _HOPELESS_LOG_GAP:
        return None
    return _chernoff_delta_upper(beyond, left_out)


def _left_out(lm):
    """The mass a cut law leaves out of its transform (``lm.left_out``; 0 for a whole law)."""
    return float(getattr(lm, "left_out", 0.0))


def _bound_upper(bound, i, left_out=0.0):
    """Direction ``i``'s Chernoff bound on delta made an upper bound (:func:`_chernoff_delta_upper`); 1 where even
    that cannot be computed (a direction not searched after another's NumericalError)."""
    try:
        return _chernoff_delta_upper(bound(i)[0], left_out)
    except NumericalError:
        return 1.0


def max_delta_bounds(directions, epsilon, *, rtol, max_terms, max_damping, mirrored=False):
    """(lower, estimate, upper) of ``delta(eps) = max_d delta_d(eps)`` over ``directions``, a sequence of
    ``(direction, log MGF, decay bound)`` (thesis Thm 3.3.5: add-or-remove-one is the larger of the remove and
    add deltas); :class:`AccuracyError` only if the reported interval is wider than ``rtol`` of its estimate.

    Bracketing: if ``l_d <= delta_d <= u_d`` for every direction, then ``max_d l_d <= max_d delta_d <=
    max_d u_d``, since the maximum is non-decreasing in each argument. These are the reported lower and upper
    bounds, so they are proven whatever the accuracy of each direction.

    Accuracy: the reported width is ``max_d u_d - max_d l_d <= u_k - l_k`` for a direction ``k`` attaining
    ``max_d u_d`` (as ``l_k <= max_d l_d``). So a direction that cannot attain the maximum upper bound needs no
    accuracy. In particular if ``u_A <= l_R`` then ``l_A <= u_A <= l_R <= u_R``, so ``max l = l_R`` and
    ``max u = u_R``: the interval is exactly the remove direction's, and the add direction's interval may be as
    wide as ``[0, u_A]``. The directions are therefore searched in decreasing order of their Chernoff bounds
    (cheap, and usually the order of the deltas), each later search stopping as soon as its certified upper
    bound is at most the largest certified lower bound found so far (``floor`` of
    :func:`direction_delta_bounds`), and the check is on the reported interval: when every direction meets
    ``rtol`` or stops at the floor it passes (``u_k - l_k <= rtol e_k <= rtol max_d e_d`` for a direction ``k``
    that met ``rtol``; a stopped one attains ``max u`` only together with the earlier one that set its floor),
    so it fails only when a direction that can decide the maximum could not be certified. Its
    :class:`AccuracyError` then carries the reported (proven) bounds as ``proven``; a :class:`NumericalError` of a
    direction's search carries the same over the directions done, each one not done counted as ``[0, its Chernoff
    bound]``.

    ``mirrored`` (the two directions are one ledger's remove and add laws, as in :func:`max_epsilon_bounds`): the
    directions are taken in the given order, each one's Chernoff bound computed when its search starts, and a later
    direction is first bounded by the earlier one's last plan (:func:`mirror_delta_upper` at ``epsilon``); where
    that bound is at most the floor it cannot decide the maximum and is ``[0, that bound]``.
    """
    chernoff = [None] * len(directions)
    mirrored = mirrored and len(directions) == 2

    def bound(i):
        if chernoff[i] is None:
            lm = directions[i][1]
            # the mirror direction's search starts near the first one's damping (only the work changes)
            near = chernoff[1 - i][1] if mirrored and chernoff[1 - i] is not None else None
            chernoff[i] = chernoff_log_delta(lambda k: lm(k.astype(np.complex128)), epsilon,
                                             damping_cap(lm, max_damping), near=near)
        return chernoff[i]

    order = list(range(len(directions))) if mirrored else sorted(range(len(directions)), key=lambda i: -bound(i)[0])
    floor, parts, failures, plans = 0.0, [], [], []
    for n, i in enumerate(order):
        direction, lm, sup = directions[i]
        if mirrored and plans and floor > 0.0:
            mirror = mirror_delta_upper(plans[-1], epsilon)
            if mirror <= floor:
                parts.append(Bounds(0.0, 0.0, mirror))
                continue
        try:
            bounds, failure = direction_delta_bounds(lm, sup, epsilon, direction, rtol=rtol, max_terms=max_terms,
                                                     max_damping=damping_cap(lm, max_damping), floor=floor,
                                                     chernoff=bound(i), on_plan=plans.append)
        except NumericalError as exc:  # the directions not searched keep their Chernoff bounds
            rest = [_bound_upper(bound, j, _left_out(directions[j][1])) for j in order[n:]]
            raise _with_proven(exc, parts + [Bounds(0.0, u, u) for u in rest], "delta") from None
        parts.append(bounds)
        if failure is not None:
            failures.append(failure)
        floor = max(floor, bounds.lower)
    result = Bounds(*(max(getattr(b, f) for b in parts) for f in ("lower", "estimate", "upper")))
    if not _within(result, rtol) and result.upper > 0.0:
        error = AccuracyError(" ".join(failures) or (
            f"FourierAccountant could not certify delta({epsilon}) to rtol={rtol}: bounds {tuple(result)}."))
        error.short_of_nodes = bool(failures) and all(isinstance(failure, ShortOfNodes) for failure in failures)
        error.below_cap = bool(failures) and all(isinstance(failure, BelowCap) for failure in failures)
        raise _with_proven(error, parts, "delta")
    return result


def _chernoff_grid(cap):
    """The dampings first evaluated by :func:`chernoff_epsilon` (41, geometric from 1e-3 to ``min(1e3, cap)``)."""
    return np.geomspace(1e-3, min(1e3, cap), 41)


def _chernoff_target(lm, log_delta):
    """``log delta`` for a Chernoff epsilon of ``lm`` that must bound the whole law's epsilon: for a cut law
    (``lm.left_out > 0``, "Cut laws" in :mod:`accountants.fourier_inversion`) ``log(delta - left_out)``, rounded
    down (the transform's delta at most ``delta - left_out`` puts the whole law's at most ``delta``); ``-inf`` (no
    finite Chernoff epsilon) when nothing is left."""
    left_out = float(getattr(lm, "left_out", 0.0))
    if not left_out:
        return log_delta
    rest = _delta_below(log_delta) - left_out
    return math.log(rest * (1.0 - 1e-15)) if rest > 0.0 else -math.inf


def _log_slack(log_delta):
    """A bound on how far ``exp(log_delta)`` (``log_delta`` the float64 log of the caller's delta) may lie from that
    delta, relative: the log's rounding (``u |log delta|``, amplified by ``exp``) and the exponential's own, made
    larger."""
    return 4.0 * _U * (abs(log_delta) + 2.0)


def _delta_below(log_delta):
    """A float at most the caller's delta, from its float64 log: what an upper delta is compared with (a delta
    certified at most this is at most the caller's)."""
    return math.exp(log_delta) * (1.0 - _log_slack(log_delta))


def _delta_above(log_delta):
    """A float at least the caller's delta: what a lower delta is compared with (:func:`_delta_below`'s mirror)."""
    return math.exp(log_delta) * (1.0 + _log_slack(log_delta))


def damping_cap(lm, max_damping):
    """The damping cap of a direction: the search's, or the law's own where it is larger (a cut law's transform
    costs the same at any tilt, :meth:`mechanisms.subsampled.PoissonSubsampled.remove_body`)."""
    return max(float(getattr(lm, "max_damping", 0.0)), max_damping)


def _chernoff_objective(lm, log_delta, kappa):
    """``(log M(kappa) + log(kappa^kappa / (1 + kappa)^(1 + kappa)) - log delta) / kappa`` at each damping, moved
    first to a float at which ``1 + kappa`` is exact (:func:`mechanisms._tilts.exact_tilt`: the Chernoff bound holds
    at every damping, and the enclosures then need no allowance for rounding the tilt)."""
    kappa = exact_tilt(kappa)
    log_m = np.real(lm(kappa.astype(np.complex128)))
    return (log_m + log_chernoff_constant(kappa) - log_delta) / kappa


class CoarseChernoff(tuple):
    """``(epsilon, values)`` of :func:`coarse_chernoff_epsilon` (it unpacks as that pair), with ``kappa``: the
    damping at which ``epsilon`` was attained, and ``dampings``/``objective``: every damping evaluated (the nine and
    any beyond them, increasing) and the objective there."""

    kappa: float
    dampings: np.ndarray
    objective: np.ndarray


def coarse_chernoff_epsilon(lm, log_delta, cap):
    """The Chernoff epsilon of :func:`chernoff_epsilon` minimised over every fifth damping of its first grid only
    (nine dampings, no refinement): an upper bound on epsilon as well, up to float64 rounding (the Chernoff bound
    holds at every damping ``kappa > 0``, Balle et al. 2020, Thm 21), at about a seventh of the evaluations.

    Returns ``(epsilon, values)``, ``values`` the objective at the nine dampings. :func:`max_epsilon_bounds` orders
    the directions by it and passes it to :func:`direction_epsilon_bounds`, so that a direction it already shows
    unable to decide the maximum (a DP-SGD ledger's add direction) costs no full Chernoff search (whose log MGF
    evaluations at real tilts are the enclosures of the subsampled Gaussian), and the full search of the others
    starts from these values (:func:`chernoff_epsilon`).

    Where the best of the nine is the largest and the cap lies beyond the grid (cut laws, the add direction of
    subsampled Gaussians: their saddle points sit at dampings in the thousands), the same spacing continues towards
    the cap, one damping at a time until the objective stops falling; its values only lower ``epsilon``.
    """
    target = _chernoff_target(lm, log_delta)
    kappa = _chernoff_grid(cap)[::5]
    values = _chernoff_objective(lm, target, kappa)
    clean = np.where(np.isnan(values), np.inf, values)
    best, at = float(np.min(clean)), float(kappa[int(np.argmin(clean))])
    dampings, objective = kappa, clean
    if np.isfinite(best) and values[-1] == best and cap > kappa[-1]:
        ratio = kappa[-1] / kappa[-2]
        more = np.unique(np.minimum(
            kappa[-1] * ratio ** np.arange(1, 1 + int(np.ceil(np.log(cap / kappa[-1]) / np.log(ratio)))), cap))
        # one damping at a time, while the objective still falls: past its minimum it rises (in practice; were it
        # not, the best value found is still a bound), and the large tilts cost most (a subsampled Gaussian's
        # remove direction beyond the RDP series' orders: q 1e-4, sigma 2, 10^4 steps, 0.64 ms for all three, a
        # one-off timing)
        extra = []
        for k in more:
            value = float(_chernoff_objective(lm, target, np.array([k]))[0])
            extra.append(np.inf if math.isnan(value) else value)
            if not extra[-1] < best:
                break
            best, at = extra[-1], float(k)
        more = more[:len(extra)]
        dampings, objective = np.concatenate([kappa, more]), np.concatenate([clean, extra])
    out = CoarseChernoff((max(best, 0.0), values))
    out.kappa, out.dampings, out.objective = at, dampings, objective
    return out


def chernoff_epsilon(lm, log_delta, cap, coarse_values=None):
    """``(epsilon, kappa)``: the Chernoff epsilon ``min_kappa (log M(kappa) + log(kappa^kappa / (1 + kappa)^(1 +
    kappa)) - log delta) / kappa`` of log MGF ``lm`` over ``0 < kappa <= cap`` (the improved RDP conversion at
    order ``kappa + 1``, Balle et al. 2020, Thm 21) and the damping attaining it. At this epsilon the Chernoff
    bound on delta is at most ``delta``, so it is an upper bound on epsilon (up to float64 rounding).

    The search starts from a geometric grid of 41 dampings (:func:`_chernoff_grid`). Given ``coarse_values``, the
    objective at every fifth of them (:func:`coarse_chernoff_epsilon`), only the grid between the coarse best's
    two neighbours is evaluated (eight dampings instead of 41: the objective is unimodal in practice, and were
    it not, every value evaluated is still a valid bound, so only the tightness of the bracket would suffer)."""

    log_delta = _chernoff_target(lm, log_delta)

    def objective(orders):
        return _chernoff_objective(lm, log_delta, np.asarray(orders) - 1.0)

    kappa = _chernoff_grid(cap)
    if coarse_values is None:
        grid = 1.0 + kappa
        values = objective(grid)
    else:
        best = int(np.argmin(np.where(np.isnan(coarse_values), np.inf, coarse_values)))
        sel = np.arange(max(5 * (best - 1), 0), min(5 * (best + 1), kappa.size - 1) + 1)
        known = sel % 5 == 0
        grid = 1.0 + kappa[sel]
        values = np.empty(sel.size)
        values[known] = np.asarray(coarse_values)[sel[known] // 5]
        values[~known] = objective(grid[~known])
    # two zoom rounds, not three: the bracket only starts the certified search (a bracket a little high costs a step
    # of certified_upper_root, never a wrong answer), and each round is one more batch of real-tilt enclosures; one
    # round left the plan's damping far enough off to double its nodes on 200 distinct mechanisms (0.44 -> 0.55 s)
    opt = minimize_over_orders(objective, grid, values, max_order=1.0 + cap, rounds=2)
    hi, kappa = max(opt.value, 0.0), opt.order - 1.0
    if kappa > cap:  # the Chernoff epsilon at the capped damping is a valid (larger) bracket
        kappa = cap
        hi = max(hi, float(objective(np.array([1.0 + kappa]))[0]))
    return hi, kappa


def direction_epsilon_bounds(lm, sup, log_delta, direction, *, rtol, max_terms, max_damping, floor=0.0,
                             bracket=None, coarse=None, on_plan=None):
    """See :func:`_direction_epsilon_bounds`; a plan that cannot bound its truncation (:class:`TruncationLimit`)
    fails at once, with the Chernoff epsilon as its certified upper end.

    ``coarse``, if given, is :func:`coarse_chernoff_epsilon` of ``lm``, whose epsilon is an upper bound on this
    direction's (after the same rounding slack as the Chernoff bracket's); where it is at most ``floor`` the
    direction cannot decide the maximum (:func:`max_epsilon_bounds`) and returns ``(0, 0, that bound)`` before any
    other work, as :func:`_direction_epsilon_bounds` does with the full Chernoff bracket; otherwise its nine values
    start the full Chernoff search (:func:`chernoff_epsilon`). Before that search, with a floor, one cheap
    inversion at the floor (:func:`_below_at`, proven at any damping) is tried where the search would cost most
    or could not reach the floor anyway: at the coarse damping where it lies beyond the first grid, at the coarse
    values' parabola vertex (:func:`_coarse_vertex`) where the coarse epsilon exceeds ``_FLOOR_FIRST_GAP`` times
    the floor. Either only changes the work done: ``(0, 0, floor)`` is returned only when the inverted upper delta
    at the floor is at most delta. ``on_plan``, if given, is called with each plan the search to ``rtol`` makes
    (:func:`max_epsilon_bounds` keeps the last for the mirror direction, :func:`_mirror_below`)."""
    if coarse is not None and bracket is None:
        coarse_upper = _chernoff_epsilon_upper(coarse[0])
        if coarse_upper <= floor:
            return Bounds(0.0, 0.0, coarse_upper), None
        kappa = getattr(coarse, "kappa", None)
        if floor > 0.0 and kappa is not None and kappa > _chernoff_grid(max_damping)[-1]:
            # the coarse best lies beyond the first grid (a saddle point at dampings in the thousands: cut laws,
            # the add direction of few runs of a small sampling probability), where the full Chernoff search would
            # extend the grid again: the cheap inversion at the floor comes first, at the coarse damping (any
            # damping gives proven bounds), and a direction it rules out needs no full search
            if _below_at(lm, sup, floor, float(np.exp(log_delta)), kappa, max_terms=max_terms,
                         max_damping=max_damping):
                return Bounds(0.0, 0.0, floor), None
        elif floor > 0.0 and kappa is not None and coarse_upper > _FLOOR_FIRST_GAP * floor:
            # within the first grid, but too far above the floor for the full Chernoff search to reach it (it
            # improves on the coarse epsilon by about a tenth at most): the same cheap inversion first, at the
            # coarse damping refined by a parabola through the coarse values (a plan at the coarse damping itself
            # can need 16 times the nodes: q 1e-4, sigma 2, 10^4 steps, add direction at 1000 instead of 611)
            at = _coarse_vertex(coarse.objective, coarse.dampings) if hasattr(coarse, "objective") else None
            if at is not None and _below_at(lm, sup, floor, float(np.exp(log_delta)), at, max_terms=max_terms,
                                            max_damping=max_damping):
                return Bounds(0.0, 0.0, floor), None
    if bracket is None:
        bracket = chernoff_epsilon(lm, log_delta, max_damping, None if coarse is None else coarse[1])
    try:
        return _direction_epsilon_bounds(lm, sup, log_delta, direction, rtol=rtol, max_terms=max_terms,
                                         max_damping=max_damping, floor=floor, bracket=bracket, on_plan=on_plan)
    except TruncationLimit as exc:
        upper = _chernoff_epsilon_upper(bracket[0])
        message = (f"FourierAccountant could not certify epsilon at delta={float(np.exp(log_delta))} to rtol={rtol} "
                   f"({direction.value}): {exc}; RDPAccountant answers such ledgers (looser).")
        # below the damping cap, a larger cap would make the same plan (ShortOfNodes)
        return Bounds(0.0, upper, upper), ShortOfNodes(message) if bracket[1] < max_damping * (1.0 - 1e-9) else message


#: A later direction whose coarse Chernoff epsilon exceeds the floor by more than this factor (its best within the
#: first grid) is tried at the floor before its full Chernoff search (:func:`direction_epsilon_bounds`): a work
#: choice only (the full search improved on the coarse epsilon by 0-12% on issue 14's grid).
_FLOOR_FIRST_GAP = 1.1


def _coarse_vertex(values, kappa):
    """The damping at the vertex of the parabola (in ``log kappa``) through the coarse Chernoff ``values`` at the
    best (the first smallest) of the increasing dampings ``kappa`` and its two neighbours, kept between those
    neighbours (the parabola opens upwards: the left neighbour's value is larger, the right one's not smaller); None
    where the best is at either end or a value there is not finite. Only where a plan is made: any damping gives
    proven bounds."""
    clean = np.where(np.isfinite(values), values, np.inf)
    i = int(np.argmin(clean))
    if not (0 < i < clean.size - 1 and np.isfinite(clean[i - 1:i + 2]).all()):
        return None
    x = np.log(kappa[i - 1:i + 2])
    y = clean[i - 1:i + 2]
    d1, d2 = (y[1] - y[0]) / (x[1] - x[0]), (y[2] - y[1]) / (x[2] - x[1])
    curvature = (d2 - d1) / (x[2] - x[0])
    vertex = 0.5 * (x[0] + x[1]) - d1 / (2.0 * curvature)
    return float(np.exp(min(max(vertex, x[0]), x[2])))


#: Absolute tolerance, relative to delta, of the cheap plan of :func:`_below_at`.
_FLOOR_CHECK_TOLERANCE = 0.25
#: Smallest estimated room below delta (relative) for which :func:`_below_at` tries a second, tighter plan.
_FLOOR_RETRY_ROOM = 1e-3


def _below_at(lm, sup, epsilon, delta, kappa, *, max_terms, max_damping):
    """Whether one cheap inversion certifies ``delta_d(epsilon) <= delta`` for this direction: a plan at
    ``epsilon`` with the loose absolute tolerance ``delta / 4`` (few nodes), its certified upper delta compared
    with ``delta``. If so, ``epsilon_d(delta) <= epsilon`` (``delta_d`` is non-increasing), a proven upper bound
    whatever the accuracy. :func:`_direction_epsilon_bounds` asks it at the floor (a certified lower bound on an
    earlier direction's epsilon), where a direction whose Chernoff bound is too loose to show it (few runs of a
    small sampling probability: Chernoff epsilon 0.099 against a floor of 0.00023 at q = 1e-4, sigma = 2, 10
    steps) would otherwise be searched to ``rtol`` (8,192 nodes instead of 1,024 there)."""
    limit = delta * (1.0 - _log_slack(math.log(delta)))  # delta is exp(log delta): at most the caller's below it
    try:
        plan = make_plan(lm, sup, epsilon, _FLOOR_CHECK_TOLERANCE * delta, max_terms=max_terms, kappa=kappa,
                         max_damping=max_damping)
        bounds = invert(plan, epsilon)[0]
        if bounds.upper <= limit:
            return True
        # the two directions' epsilons close together (within a percent: q = 1e-4, sigma = 5, 10^4 steps): one
        # more plan, at a quarter of the estimated room below delta, before the full search (~rtol) decides
        room = delta - bounds.estimate
        if not room >= _FLOOR_RETRY_ROOM * delta:
            return False
        plan = make_plan(lm, sup, epsilon, room / 4.0, max_terms=max_terms, kappa=kappa, max_damping=max_damping)
        return invert(plan, epsilon)[0].upper <= limit
    except (TruncationLimit, NumericalError):  # not shown cheaply: the full search decides, as it did before
        return False


def _direction_epsilon_bounds(lm, sup, log_delta, direction, *, rtol, max_terms, max_damping, floor=0.0,
                              bracket=None, on_plan=None):
    """``(Bounds, failure)`` of epsilon at ``delta = exp(log_delta)`` for one direction (log MGF ``lm``, decay
    bound ``sup``): root finding on the inverted delta, bracketed by the Chernoff epsilon of ``lm``
    (``bracket``, :func:`chernoff_epsilon`, computed when not given).

    The bounds are certified whatever ``failure`` says. ``failure`` is ``None`` when the certified delta at the
    upper epsilon is within ``rtol``, or when the upper epsilon is at most ``floor`` (a certified lower bound on
    the other direction's epsilon: this direction cannot decide the maximum, see :func:`max_epsilon_bounds`;
    the Chernoff epsilon is tried first, then one cheap inversion at ``floor``, :func:`_below_at`). Otherwise it
    is the :class:`AccuracyError` message, and the bounds are ``(0, upper, upper)`` with the best certified upper
    epsilon found."""
    delta = float(np.exp(log_delta))
    cap = max_damping
    hi, kappa = chernoff_epsilon(lm, log_delta, cap) if bracket is None else bracket
    chernoff_upper = _chernoff_epsilon_upper(hi)
    if chernoff_upper <= floor:
        return Bounds(0.0, 0.0, chernoff_upper), None
    if floor > 0.0 and _below_at(lm, sup, floor, delta, kappa, max_terms=max_terms, max_damping=cap):
        return Bounds(0.0, 0.0, floor), None
    tolerance = rtol * delta / 16.0
    # The first plan may take a smaller damping for a shorter period (make_plan's ``shorten``, halvings); if it
    # misses the accuracy, the search plans again at the certified upper epsilon it found, shortened in finer steps
    # (_REPLAN_SHORTEN), and then, if that misses too, without shortening.
    shorten, capped, met = True, False, False
    for _ in range(5):
        # Errors shrink as epsilon grows, so a plan made at a lower epsilon holds above it: plan at 0.8 x the
        # Chernoff bracket first (the answer usually lies above), but not more than 3 / kappa below it (the
        # errors grow like e^(kappa (hi - eps))); at the answer itself when re-planning.
        plan_eps = max(0.8 * hi, hi - 3.0 / kappa) if kappa is not None else hi
        plan = make_plan(lm, sup, plan_eps, tolerance, max_terms=max_terms, kappa=kappa, max_damping=cap,
                         shorten=shorten)
        capped = capped or plan.kappa >= cap * (1.0 - 1e-9)
        if on_plan is not None:
            on_plan(plan)
        # the root searches below ask for some epsilons more than once (each field of one epsilon, a root's check)
        at = functools.lru_cache(maxsize=None)(functools.partial(invert, plan))

        def log_excess(eps, field):
            """``log delta_field(eps) - log delta``, moved by its own float error away from the decision a proof
            rests on: up for the upper delta (``<= 0`` then proves ``delta(eps) <= delta``), down for the lower."""
            log_value = float(np.log(max(getattr(at(eps)[0], field), 1e-320)))
            margin = 4.0 * _U * (abs(log_value) + abs(log_delta) + 2.0)
            return log_value - log_delta + {"upper": margin, "lower": -margin}.get(field, 0.0)

        # the Chernoff bracket can only be off by rounding
        upper, found = certified_upper_root(log_excess, hi, rate=plan.kappa)
        if not found:
            return Bounds(0.0, chernoff_upper, chernoff_upper), (
                f"FourierAccountant: the certified delta stays above {delta} up to epsilon {upper:.6g} "
                f"({direction.value}); damping {plan.kappa:.4g}, {plan.terms + 1} nodes "
                f"(max_terms={max_terms}), rtol={rtol}."
            )
        if upper <= floor:
            return Bounds(0.0, 0.0, upper), None
        at_upper, errors = at(upper)
        if not _within(at_upper, rtol) and upper > 0.0 and _aliasing_spoils(errors):
            # below the epsilon the plan was made for, the aliasing bound's best Chernoff exponent moves: more
            # of them (only the lower end can change, so the upper root stands)
            plan = with_more_tails(plan, lm)
            if on_plan is not None:
                on_plan(plan)
            at = functools.lru_cache(maxsize=None)(functools.partial(invert, plan))
            at_upper, errors = at(upper)
        if _within(at_upper, rtol) or upper == 0.0:
            met = True
            break
        if shorten is not True and _short_of_nodes(plan, upper, tolerance, max_terms):
            # a plan at the answer's own damping (not the first, shortened one) with every node allowed, still
            # short at the certified upper epsilon: neither a tighter tolerance nor an unshortened damping adds
            # nodes (ShortOfNodes)
            lower = _failed_lower(log_excess, upper, at_upper, delta, plan.kappa)
            return Bounds(lower, upper, upper), ShortOfNodes(
                f"FourierAccountant could not certify epsilon at delta={delta} to rtol={rtol} "
                f"({direction.value}): at epsilon {upper:.10g} delta is in [{at_upper.lower:.6g}, "
                f"{at_upper.upper:.6g}] with damping {plan.kappa:.4g}, period {plan.period:.4g}, {errors['nodes']} "
                f"nodes, the most allowed (max_terms={max_terms}), and its truncation bound alone above the "
                f"tolerance {tolerance:.3g}: the characteristic function decays too slowly (few runs of a small "
                f"sampling probability). Proven for this direction: epsilon in [{lower:.10g}, {upper:.10g}]."
            ) if plan.kappa < cap * (1.0 - 1e-9) else (
                f"FourierAccountant could not certify epsilon at delta={delta} to rtol={rtol} "
                f"({direction.value}): {errors['nodes']} nodes at the damping cap {cap:g} fall short "
                f"(max_terms={max_terms}). Proven for this direction: epsilon in [{lower:.10g}, {upper:.10g}].")
        if shorten:
            # the shortened plan missed rtol but its certified upper epsilon stands: plan again there (where the
            # Chernoff bracket is far above the answer, as for few runs of little noise, a plan at the bracket would
            # be long and would still miss the answer's accuracy), first in finer steps of damping, where the
            # halvings jump from a long period to too much rounding (q 1e-4, sigma 0.6, 100 steps: damping 8 takes
            # 65,536 nodes, 4 too much rounding, 5.66 16,384 nodes), then unshortened
            hi, kappa, shorten = upper, None, _REPLAN_SHORTEN if shorten is True else False
            continue
        # The plan was made for the Chernoff bracket; the errors grow below it. Plan again at the epsilon
        # found (same tolerance); only if that was already done, tighten the tolerance, unless the nodes'
        # enclosure errors alone (twice: they widen both ends) already spread the interval beyond rtol: a tighter
        # tolerance does not shrink them (many runs of a very narrow loss, sigma 0.52, q 1.8e-6, 40,668 runs: two
        # more plans of 2^18 nodes for the same failure)
        if abs(hi - upper) <= 1e-3 * upper:
            if 2.0 * _enclosure_error(plan, upper) > rtol * max(at_upper.estimate, 1e-300):
                break
            tolerance = tolerance / 16.0
        hi, kappa = upper, None
    if not met:
        lower = _failed_lower(log_excess, upper, at_upper, delta, plan.kappa)
        message = (
            f"FourierAccountant could not certify epsilon at delta={delta} to rtol={rtol} "
            f"({direction.value}): at epsilon {upper:.10g} delta is in [{at_upper.lower:.6g}, "
            f"{at_upper.upper:.6g}] with damping {plan.kappa:.4g}, period {plan.period:.4g}, "
            f"{errors['nodes']} nodes (max_terms={max_terms}); errors {errors}. {hint(errors)} "
            f"Proven for this direction: epsilon in [{lower:.10g}, {upper:.10g}]."
        )
        return Bounds(lower, upper, upper), message if capped else BelowCap(message)
    estimate = estimate_root(log_excess, upper, rate=plan.kappa) if upper > 0.0 else 0.0
    lower = certified_lower_root(log_excess, estimate, refine=True, rate=plan.kappa)
    return Bounds(lower=min(lower, estimate, upper), estimate=min(estimate, upper), upper=upper), None


def _within(bounds, rtol):
    """Whether a delta interval meets ``rtol`` relative to its estimate."""
    return bounds.upper - bounds.lower <= rtol * max(bounds.estimate, 1e-300)


def _aliasing_spoils(errors):
    """Whether the aliasing bound is the largest part of an inversion's error (:func:`with_more_tails` may then
    lower it)."""
    return errors["aliasing"] > errors["truncation"] + errors["rounding"]


#: Ratio between the candidate dampings of an epsilon search's second plan (make_plan's ``shorten``).
_REPLAN_SHORTEN = 2.0**-0.5

#: Trials of :func:`_failed_lower`: the step below the upper epsilon is doubled this many times at most.
_FAILED_LOWER_TRIES = 8


def _failed_lower(log_excess, upper, at_upper, delta, kappa):
    """A proven lower bound on a direction's epsilon whose search missed ``rtol`` (0 if none is found cheaply):
    an epsilon below ``upper`` at which the certified LOWER delta of the same plan still exceeds ``delta``
    (``log_excess(eps, "lower") > 0``); ``delta_d`` is non-increasing, so ``epsilon_d`` lies above it.

    Near the answer ``log delta_d`` falls with slope about ``-kappa`` (the damping, near the saddle point), so the
    certified interval ``at_upper`` at ``upper``, of relative width ``w``, is left after a step of about
    ``w / kappa`` (twice that first: the errors grow below the plan's epsilon); the step is doubled at most
    ``_FAILED_LOWER_TRIES`` times. A rounding-dominated failure (interval within ~1e-6 of delta) thus gets a lower
    bound a few ``w / kappa`` below ``upper``, at the cost of a few evaluations of the plan already made."""
    width = (at_upper.upper - at_upper.lower) / delta
    if not (math.isfinite(width) and kappa > 0.0):
        return 0.0
    step = 2.0 * max(width, 1e-12) / kappa
    for _ in range(_FAILED_LOWER_TRIES):
        eps = upper - step
        if eps <= 0.0:
            break
        if log_excess(eps, "lower") > 0:
            return eps
        step *= 2.0
    return 0.0


def mirror_delta_upper(plan, epsilon):
    """A proven upper bound on the MIRROR direction's delta at ``epsilon >= 0`` from a plan of this direction: the
    same ledger's other direction (:meth:`mechanisms.base.Mechanism.log_mgf`: ``M_add(s) = M_remove(-1 - s)``, the
    pair ``(P, Q)`` swapped), at the cost of one inversion of a plan already made; ``inf`` beyond ``epsilon = 700``.

    Proof: for probability measures ``P, Q`` and ``g > 0``, pointwise ``(q - g p)_+ = (q - g p) + (g p - q)_+``, so
    ``H_g(Q || P) = 1 - g + g H_(1/g)(P || Q)``; with ``g = e^eps``, ``delta_m(eps) = 1 - e^eps + e^eps d(-eps)``
    where ``d(-eps) = E_P[(1 - e^(-eps - L))_+]`` is this direction's delta at ``-eps``, which :func:`invert`
    bounds from above at any epsilon (a cut law's upper end includes the mass it left out, "Cut laws" in
    :mod:`accountants.fourier_inversion`, which only raises it). ``-expm1(eps)`` is within 2u of its exact value
    (1 ulp), ``exp(eps) d`` within 3u (1 ulp of ``exp``, then the product's rounding), their sum within a further
    ``u (|expm1(eps)| + exp(eps) d)`` and the addition of the slack within u of the result (at most that sum plus the
    slack): with ``S = |expm1(eps)| + exp(eps) d``, at most ``5u S`` to first order, so the value plus ``8u S`` bounds
    ``delta_m(eps)`` (the ``4u S`` taken before fell short by up to ``u exp(eps) d`` where ``exp(eps) d`` exceeds
    twice ``expm1(eps)``: small epsilons). The plan's errors grow like ``e^(kappa (eps_plan + eps))`` below the
    epsilon it was made for and the identity multiplies them by ``e^eps``: far from the plan's epsilon the bound is
    only loose."""
    if not 0.0 <= epsilon <= 700.0:  # beyond, e^eps overflows (and its rounding alone exceeds any delta)
        return math.inf
    upper = invert(plan, -epsilon)[0].upper
    first, second = -math.expm1(epsilon), math.exp(epsilon) * upper
    return first + second + 8.0 * _U * (abs(first) + second)


def _mirror_below(plan, epsilon, log_delta):
    """Whether :func:`mirror_delta_upper` certifies ``delta_m(epsilon) <= delta`` (compared with
    :func:`_delta_below`, a float at most the caller's delta); then ``epsilon_m(delta) <= epsilon`` (``delta_m`` is
    non-increasing)."""
    return mirror_delta_upper(plan, epsilon) <= _delta_below(log_delta)


def _probe_upper(probe, i):
    """The coarse Chernoff epsilon of direction ``i`` made an upper bound (its rounding slack), inf where even the
    probe cannot be computed (a direction not searched after another's NumericalError)."""
    try:
        return _chernoff_epsilon_upper(probe(i)[0])
    except NumericalError:
        return math.inf


def max_epsilon_bounds(directions, log_delta, *, rtol, max_terms, max_damping, mirrored=False):
    """(lower, estimate, upper) of ``epsilon(delta) = max_d epsilon_d(delta)`` over ``directions``, a sequence
    of ``(direction, log MGF, decay bound)``; :class:`AccuracyError` only if a direction that could decide the
    maximum could not be certified.

    Why the maximum: each ``delta_d`` is continuous and non-increasing in epsilon, so ``{eps : max_d
    delta_d(eps) <= delta} = intersection_d [epsilon_d, inf) = [max_d epsilon_d, inf)`` (thesis Thm 3.3.5 for
    the maximum of the deltas). Bracketing: ``L_d <= epsilon_d <= U_d`` for every direction gives ``max_d L_d
    <= epsilon <= max_d U_d``; these are reported, so they are proven whatever each direction's accuracy.

    Accuracy: if a direction ``s`` met ``rtol`` (its certified delta at ``U_s`` is within ``rtol``) and
    attains ``max_d U_d``, the reported interval is ``[max_d L_d, U_s]``, inside ``s``'s own interval
    ``[L_s, U_s]``, so it is as accurate; a direction ``f`` that failed is then irrelevant as long as ``U_f <=
    U_s`` (its lower bound, 0 or proven by :func:`_failed_lower`, can only raise ``max L`` within ``[L_s, U_s]``:
    ``L_f <= epsilon_f <= U_f <= U_s``). Hence :class:`AccuracyError` is raised exactly
    when a failed direction's upper bound exceeds the upper bounds of all directions that did not fail. The
    directions are searched in decreasing order of their coarse Chernoff epsilons (:func:`coarse_chernoff_epsilon`;
    the order only affects the work done), a later search stopping once an upper bound it has (the coarse
    Chernoff epsilon first, then the full Chernoff bracket and an inverted one, in the order
    :func:`direction_epsilon_bounds` expects to cost least) is at most the largest lower bound found so far
    (``floor``): such a direction ``d`` has ``U_d <= L_j <= U_j`` for an earlier ``j``, so it
    attains ``max U`` only if ``j`` does, with ``L_j = U_j`` when ``j`` failed (a reported interval of zero width).

    On failure the proven bounds are not lost: the :class:`AccuracyError` carries ``(max_d L_d, max_d E_d, max_d
    U_d)`` as ``proven`` (bracketing above); a :class:`NumericalError` of a direction's search (work limit) carries
    the same over the directions done, each direction not done counted as ``[0, its coarse Chernoff epsilon]``
    (an upper bound, :func:`direction_epsilon_bounds`).

    ``mirrored``: the two directions are one ledger's remove and add laws (``M_add(s) = M_remove(-1 - s)``, as the
    accountant's always are). Then before a later direction is searched, the last plan of the earlier one is
    inverted at ``-floor``, which bounds the later direction's delta at the floor (:func:`_mirror_below`); where
    that is at most delta the later direction is ``[0, floor]`` at the cost of one inversion, as with the cheap
    inversion of :func:`_below_at` but without new transforms (q = 1e-4, sigma = 2, 10 steps: the add direction's
    check took 5.8 of 14 ms). The directions are then taken in the given order (the accountant's lists the remove
    direction first, which decides every subsampled Gaussian of issue 14's grid) and each one's coarse probe is made
    only when its search starts, so a direction the mirror rules out costs that one inversion alone.
    """
    coarse = [None] * len(directions)

    def probe(i):
        if coarse[i] is None:
            lm = directions[i][1]
            coarse[i] = coarse_chernoff_epsilon(lm, log_delta, damping_cap(lm, max_damping))
        return coarse[i]

    mirrored = mirrored and len(directions) == 2
    order = list(range(len(directions))) if mirrored else sorted(range(len(directions)), key=lambda i: -probe(i)[0])
    floor, parts, plans = 0.0, [], []
    for n, i in enumerate(order):
        direction, lm, sup = directions[i]
        if mirrored and plans and floor > 0.0 and _mirror_below(plans[-1], floor, log_delta):
            parts.append((Bounds(0.0, 0.0, floor), None))
            continue
        try:
            bounds, failure = direction_epsilon_bounds(lm, sup, log_delta, direction, rtol=rtol,
                                                       max_terms=max_terms, max_damping=damping_cap(lm, max_damping),
                                                       floor=floor, coarse=probe(i), on_plan=plans.append)
        except NumericalError as exc:  # the directions not searched keep their coarse Chernoff epsilons
            rest = [_probe_upper(probe, j) for j in order[n:]]
            raise _with_proven(exc, [b for b, _ in parts] + [Bounds(0.0, u, u) for u in rest], "epsilon") from None
        parts.append((bounds, failure))
        floor = max(floor, bounds.lower)
    result = Bounds(*(max(getattr(b, f) for b, _ in parts) for f in ("lower", "estimate", "upper")))
    decided = max((b.upper for b, failure in parts if failure is None), default=-np.inf)
    failures = [failure for b, failure in parts if failure is not None and b.upper > decided]
    if failures:
        error = AccuracyError(" ".join(failures))
        error.short_of_nodes = all(isinstance(failure, ShortOfNodes) for failure in failures)
        error.below_cap = all(isinstance(failure, BelowCap) for failure in failures)
        raise _with_proven(error, [b for b, _ in parts], "epsilon")
    return result


def bounds_in_bracket(directions, log_delta, lo, hi, *, max_terms, max_damping):
    """Proven ``(lower, upper)`` of ``epsilon(delta) = max_d epsilon_d(delta)`` inside ``[lo, hi]``, a proven but
    wide interval the caller already has (the privacy buckets) where the full search failed; ``(lo, hi)`` where
    nothing better is found (no accuracy is promised, so it takes no ``rtol``).

    Per direction, one loose plan made at ``lo`` (its errors shrink as epsilon grows, so it serves all of ``[lo,
    hi]``) with the absolute tolerance ``delta min(0.1, kappa (hi - lo) / 4)`` (``delta_d`` moves by about that
    fraction across the interval: ``d log delta_d / d eps ~ -kappa`` near the saddle point), then bisection on
    its certified curves, every accepted point evaluated; repeated (``_BRACKET_ROUNDS`` at most) on the narrower
    interval left, whose smaller width asks a smaller tolerance, while each round at least halves the interval and
    its plans' node enclosure errors leave the next tolerance room (only the work depends on when it stops):

    * ``lower_d``: the largest epsilon found where the certified LOWER delta exceeds ``delta``; ``delta_d`` is
      non-increasing, so ``epsilon_d > lower_d``, and ``epsilon >= epsilon_d`` (thesis Thm 3.3.5: the maximum
      over directions). So ``max_d lower_d`` (and ``lo``) is a proven lower bound.
    * ``upper_d``: the smallest epsilon found where the certified UPPER delta is at most ``delta``, so
      ``epsilon_d <= upper_d``; ``epsilon = max_d epsilon_d <= max_d upper_d``, proven only if every direction has
      one: a direction whose plan cannot be made (work or truncation limit) leaves the upper end at ``hi`` and
      ends the round (the directions are taken in decreasing order of their Chernoff deltas at ``hi``, so the one
      likeliest to decide comes first and a failure there costs no further work).
    """
    for _ in range(_BRACKET_ROUNDS):
        lower, upper, floors = _bounds_in_bracket(directions, log_delta, lo, hi, max_terms=max_terms,
                                                  max_damping=max_damping)
        if (lower, upper) == (lo, hi):
            break
        narrowed = upper - lower < 0.5 * (hi - lo)
        lo, hi = lower, upper
        if not narrowed:  # a round that did not halve the interval: the next would gain less still
            break
        # a round whose plans' node enclosures alone (both ends: twice) exceed the tolerance the next round would ask
        # is not followed by one: a tighter tolerance does not shrink them (many runs of a very narrow loss: the
        # second round of sigma 0.52, q 1.8e-6, 40,668 runs took 0.9 s, a one-off timing, and moved nothing). Only the
        # work depends on it.
        delta = float(np.exp(log_delta))
        if floors and all(2.0 * error > delta * min(0.1, max(kappa, 1e-6) * (hi - lo) / 4.0)
                          for error, kappa in floors):
            break
    return lo, hi


#: Rounds of :func:`bounds_in_bracket`, each planned again for the interval the previous one left (tighter).
_BRACKET_ROUNDS = 3


def _bounds_in_bracket(directions, log_delta, lo, hi, *, max_terms, max_damping):
    """One round of :func:`bounds_in_bracket`: ``(lower, upper, floors)``, ``floors`` the ``(enclosure error at lo,
    damping)`` of each direction's plan (what the nodes' enclosures add to its delta: :func:`bounds_in_bracket`
    stops where a tighter tolerance could not shrink it)."""
    delta = float(np.exp(log_delta))
    if not (0.0 <= lo < hi < math.inf):
        return lo, hi, []
    lower, uppers, floors = lo, [], []
    try:
        chernoff = [chernoff_log_delta(lambda k, lm=lm: lm(k.astype(np.complex128)), hi, max_damping)
                    for _, lm, _ in directions]
    except NumericalError:  # beyond float64
        return lo, hi, []
    for i in sorted(range(len(directions)), key=lambda j: -chernoff[j][0]):  # the likeliest to decide first
        _, lm, sup = directions[i]
        kappa = chernoff[i][1]
        tolerance = delta * min(0.1, max(kappa, 1e-6) * (hi - lo) / 4.0)
        try:
            plan = make_plan(lm, sup, lo, tolerance, max_terms=max_terms, kappa=kappa, max_damping=max_damping)
        except (TruncationLimit, NumericalError):  # work or truncation limit: no upper end below hi
            return lower, hi, []
        floors.append((_enclosure_error(plan, lo), plan.kappa))

        def above(eps, field, plan=plan):
            # a lower delta above delta proves epsilon beyond eps; an upper one not above it proves epsilon below:
            # each compared with a float on the safe side of the caller's delta
            limit = _delta_above(log_delta) if field == "lower" else _delta_below(log_delta)
            return getattr(invert(plan, eps)[0], field) > limit

        low, top = lower, hi  # lower-delta crossing: above(low, "lower") holds or low is a proven bound already
        high, bottom = hi, lower  # upper-delta crossing: not above(high, "upper") holds or high is hi
        for _ in range(40):
            mid = 0.5 * (low + top)
            if low < mid < top:
                low, top = (mid, top) if above(mid, "lower") else (low, mid)
            mid = 0.5 * (bottom + high)
            if bottom < mid < high:
                bottom, high = (mid, high) if above(mid, "upper") else (bottom, mid)
            if top - low <= 1e-9 * top and high - bottom <= 1e-9 * high:
                break
        lower = max(lower, low)
        uppers.append(high)
    return lower, min(hi, max(uppers, default=hi)), floors


def _with_proven(error, parts, what):
    """``error`` with ``error.proven`` the maximum over directions of their proven ``parts`` (thesis Thm 3.3.5;
    the maximum is non-decreasing in each argument, so it brackets the add-or-remove value), stated in a note."""
    error.proven = Bounds(*(max(getattr(b, f) for b in parts) for f in ("lower", "estimate", "upper")))
    error.add_note(f"Proven nonetheless: {what} in [{error.proven.lower:.10g}, {error.proven.upper:.10g}].")
    return error


def _split_plan(lm, epsilon, tolerance, split, kappa, *, max_terms, max_damping, exact_lower=False):
    """Inversion plan for the rest ``R`` of a split ledger: its nodes use ``split.node_enclosure``, its truncation
    bound ``split.sup`` (``exact_lower``: :func:`accountants.fourier_inversion.make_plan`'s, for a delta query)."""
    try:
        return make_plan(lm, split.sup, epsilon, tolerance, max_terms=max_terms, kappa=kappa,
                         max_damping=max_damping, node_enclosure=split.node_enclosure, exact_lower=exact_lower)
    except TruncationLimit as exc:
        raise AccuracyError(f"FourierAccountant (Laplace ledger, atoms enumerated exactly): {exc}.") from None


def split_delta_bounds(pairs, epsilon, *, rtol, max_terms, max_damping):
    """delta of a split Laplace ledger: ``pairs`` holds ``(lm, split)`` per direction (the log MGF of the whole
    ledger in that direction and its :class:`accountants._fourier_atoms.LaplaceSplit`; one pair where every loss is
    symmetric), and delta is the largest of theirs (thesis Thm 3.3.5), each bracketed to ``rtol``
    (:func:`_split_direction_delta`): the maximum of the lower ends, of the upper ends, is a proven bracket, no wider
    than that of the direction attaining the largest upper end. The directions go in decreasing order of their
    Chernoff bounds, and one whose bound is at most the largest lower end found cannot decide the maximum: it is
    ``[0, that bound]`` (as in :func:`max_delta_bounds`), with no accuracy asked of it."""
    chernoff = [chernoff_log_delta(lambda k, lm=lm: lm(k.astype(np.complex128)), epsilon, max_damping)
                for lm, _ in pairs]
    parts, floor = [], 0.0
    for i in sorted(range(len(pairs)), key=lambda j: -chernoff[j][0]):
        bound = _chernoff_delta_upper(chernoff[i][0])
        if parts and bound <= floor:
            parts.append(Bounds(0.0, 0.0, bound))
            continue
        lm, split = pairs[i]
        parts.append(_split_direction_delta(lm, epsilon, split, chernoff[i], rtol=rtol, max_terms=max_terms,
                                            max_damping=max_damping))
        floor = max(floor, parts[-1].lower)
    return Bounds(*(max(getattr(b, f) for b in parts) for f in ("lower", "estimate", "upper")))


def _split_direction_delta(lm, epsilon, split, chernoff, *, rtol, max_terms, max_damping):
    """delta = (atoms, exact) + (rest, Fourier inversion of R) for one direction: ``lm`` the log MGF of the whole
    ledger, ``split`` its :class:`accountants._fourier_atoms.LaplaceSplit`, ``chernoff`` the Chernoff search's
    ``(log bound, damping)`` at ``epsilon``."""
    atoms = split.atoms
    log_chernoff, kappa = chernoff
    if kappa < COMPLEMENT_SWITCH:
        # delta near 1 (epsilon far below the mean loss): the terms at a damping >= split.min_damping would be far
        # above it
        near_one = complement_chernoff_bounds(lm, epsilon, rtol)
        if near_one is not None:
            return near_one
    kappa = max(kappa, split.min_damping)
    exact = atoms.delta_bounds(epsilon)
    if split.node_enclosure is None:  # nothing left to invert: the exact parts are the whole delta
        return exact
    tolerance = rtol * max(exact.estimate, np.exp(log_chernoff) * 1e-3) / 16.0
    for _ in range(4):
        plan = _split_plan(lm, epsilon, tolerance, split, kappa, max_terms=max_terms, max_damping=max_damping,
                           exact_lower=True)
        rest, errors = invert(plan, epsilon)
        b = Bounds(exact.lower + rest.lower, exact.estimate + rest.estimate, min(exact.upper + rest.upper, 1.0))
        if b.upper - b.lower <= rtol * b.estimate or b.upper == 0.0:
            return b
        if _short_of_nodes(plan, epsilon, tolerance, max_terms):
            break  # a tighter tolerance cannot add nodes: it would only lengthen the period
        tolerance = min(tolerance, rtol * b.estimate) / 16.0
    raise AccuracyError(
        f"FourierAccountant could not certify delta({epsilon}) to rtol={rtol} (Laplace ledger, atoms "
        f"enumerated exactly, the rest by Fourier inversion): bounds {tuple(b)} with damping {plan.kappa:.4g}, "
        f"period {plan.period:.4g}, {errors['nodes']} nodes (max_terms={max_terms}); errors {errors}. "
        f"{hint(errors)}"
    )


def _short_of_nodes(plan, epsilon, tolerance, max_terms):
    """Whether ``plan`` has the most nodes a plan may have (``max_terms``) and its truncation bound at ``epsilon``
    still exceeds ``tolerance``: planning again cannot help then (at another epsilon nearby or with a tighter
    tolerance the plan is as long, or its period longer and its truncation worse). The split searches then stop at
    once instead of making up to three more such plans (randomized response x 1000 with PS(Laplace(3.8), 0.0021) x
    30: eight plans of 2^20 nodes, 11 s, before the privacy buckets answered)."""
    if plan is None or plan.terms < max_terms or plan.kappa <= 0.0:
        return False
    log_trunc = plan.log_sup - plan.kappa * epsilon - math.log(math.pi * plan.terms * plan.step)
    return log_trunc > math.log(tolerance)


def complement_chernoff_bounds(lm, epsilon, rtol):
    """``Bounds`` ``[1 - u, 1]`` of ``delta(epsilon)`` where ``u``, a Chernoff bound on ``1 - delta``, is within
    ``rtol`` of the interval's estimate (its middle); else None.

    ``1 - delta(eps) = E_P[min(1, e^(eps - L))] <= e^(a eps) M(-a)`` for every ``a`` in ``[0, 1]``, since ``min(1,
    e^x) <= e^(a x)`` for all ``x`` there (``e^(a x) >= 1`` for ``x >= 0``, ``>= e^x`` for ``x < 0``). ``u`` is the
    smallest over a grid of ``a`` (``lm`` gives proven upper bounds on ``log M`` at real tilts, the closed forms'
    rounding included: :mod:`mechanisms.closed_form_enclosures`), raised by the rounding of ``a eps + log M`` and
    of the exponential; ``1 - u`` is rounded down. Laplace x 1000 (scale 2) at epsilon 1: ``u = 3.6e-12``, where the
    inversion at damping 0.25 had a rounding error above 1."""
    a = np.linspace(0.01, 0.99, 99)
    log_m = np.real(lm((-a).astype(np.complex128)))
    values = a * epsilon + log_m
    values = values + 8.0 * _U * (np.abs(a * epsilon) + np.abs(log_m) + 1.0)
    log_u = float(np.min(np.where(np.isfinite(values), values, np.inf)))
    if not log_u < 0.0:
        return None
    u = math.exp(log_u) * (1.0 + 4.0 * _U)
    lower = max(math.nextafter(1.0 - u, 0.0), 0.0)
    estimate = 0.5 * (lower + 1.0)
    if 1.0 - lower > rtol * estimate:
        return None
    return Bounds(lower=lower, estimate=estimate, upper=1.0)


def split_epsilon_bounds(pairs, delta, pure, *, rtol, max_terms, max_damping):
    """(lower, estimate, upper) of epsilon at ``delta`` for a split Laplace ledger whose pure epsilon is ``pure``:
    ``pairs`` holds ``(lm, split)`` per direction (:func:`split_delta_bounds`). Root finding on the largest over the
    directions of the atoms' exact delta plus the rest's inverted one (each end of the maximum a proven bound on
    the maximum's), bracketed by a Chernoff epsilon at which every direction's bound is at most ``delta`` (one
    damping for all: the smallest over orders of the largest of their objectives) and by ``pure``."""
    log_delta = np.log(delta)
    min_damping = max(split.min_damping for _, split in pairs)

    def objective(orders):
        kappa = np.asarray(orders) - 1.0
        values = [(np.real(lm(kappa.astype(np.complex128))) + log_chernoff_constant(kappa) - log_delta) / kappa
                  for lm, _ in pairs]
        return np.max(values, axis=0)

    cap = max_damping
    grid = 1.0 + np.geomspace(1e-3, min(1e3, cap), 41)
    opt = minimize_over_orders(objective, grid, objective(grid), max_order=1.0 + cap)
    hi = min(max(opt.value, 0.0), pure)  # delta(hi) <= delta: Chernoff, or zero at the pure epsilon
    kappa = max(min(opt.order - 1.0, cap), min_damping)
    tolerance, plan_eps = rtol * delta / 16.0, max(0.8 * hi, hi - 3.0 / kappa)  # as in direction_epsilon_bounds

    failed = False
    for _ in range(4):
        # a direction with nothing left to invert (a single Laplace run, its first order priced exactly) has no plan
        plans = [(split.atoms, None if split.node_enclosure is None else _split_plan(
            lm, plan_eps, tolerance, split, kappa, max_terms=max_terms, max_damping=max_damping))
            for lm, split in pairs]
        plan = next((rest for _, rest in plans if rest is not None), None)
        rate = kappa if plan is None else plan.kappa

        @functools.cache
        def totals(eps, plans=plans):
            """The three fields of the maximum over the directions at ``eps`` (each searched field asks for them
            all: one enumeration and one inversion per direction and epsilon)."""
            parts = [(atoms.delta_bounds(eps), _NOTHING if rest is None else invert(rest, eps)[0])
                     for atoms, rest in plans]
            return {f: max(getattr(a, f) + getattr(r, f) for a, r in parts) for f in ("lower", "estimate", "upper")}

        def excess(eps, field):
            return totals(float(eps))[field] - delta

        def log_excess(eps, field):
            """``log`` of the field over ``delta`` (as :func:`_direction_epsilon_bounds`' ``log_excess``), moved by
            its own float error away from the decision a proof rests on: up for the upper delta, down for the
            lower; a field at most 1e-320 is taken at 1e-320."""
            log_value = math.log(max(totals(float(eps))[field], 1e-320))
            margin = 4.0 * _U * (abs(log_value) + abs(log_delta) + 2.0)
            return log_value - log_delta + {"upper": margin, "lower": -margin}.get(field, 0.0)

        upper, found = certified_upper_root(log_excess, hi, cap=pure, rate=rate)
        if not found:
            how = "" if plan is None else f"; damping {plan.kappa:.4g}, {plan.terms + 1} nodes (max_terms={max_terms})"
            raise AccuracyError(
                f"FourierAccountant: the certified delta stays above {delta} up to epsilon {upper:.6g} "
                f"(Laplace ledger){how}, rtol={rtol}."
            )
        low, est, up = (excess(upper, f) + delta for f in ("lower", "estimate", "upper"))
        if up - low <= rtol * est or upper == 0.0 or plan is None:  # no plan: exact parts, nothing to refine
            break
        # Near the pure epsilon (tiny delta) the pure epsilon itself may be within rtol: it is an upper bound
        # ((pure, 0)-DP), and if the certified lower delta still exceeds delta just below it, so is the rest.
        just_below = pure * (1.0 - rtol / 2.0)
        if excess(just_below, "lower") > 0:
            return Bounds(lower=just_below, estimate=pure, upper=pure)
        if all(_short_of_nodes(rest, plan_eps, tolerance, max_terms) for _, rest in plans if rest is not None):
            failed = True  # every plan had all the nodes it may have and still fell short of its tolerance
            break
        if abs(plan_eps - upper) <= 1e-3 * max(upper, 1e-300):
            tolerance /= 16.0
        plan_eps, kappa = upper, max(kappa, min_damping)
    else:
        failed = True
    if failed:
        raise AccuracyError(
            f"FourierAccountant could not certify epsilon at delta={delta} to rtol={rtol} (Laplace ledger, "
            f"atoms enumerated exactly): at epsilon {upper:.10g} delta is in [{low:.6g}, {up:.6g}] with damping "
            f"{plan.kappa:.4g}, {plan.terms + 1} nodes (max_terms={max_terms}); raise max_terms or rtol."
        )
    estimate = estimate_root(log_excess, upper, rate=rate) if upper > 0 else 0.0
    lower = certified_lower_root(log_excess, estimate, refine=False, rate=rate)
    return Bounds(lower=min(lower, estimate, upper), estimate=min(estimate, upper), upper=upper)


#: The rest's delta where nothing is left to invert.
_NOTHING = Bounds(0.0, 0.0, 0.0)
