"""Calibration: the smallest noise (or, generally, the loosest parameter) that meets a target (epsilon, delta).

The search evaluates the accountant's report at each probe, so the returned parameter always meets the target
(it is one the search evaluated and found feasible). It is proven to when every report the search relied on was a
proven upper bound; otherwise (an accountant that can only estimate, such as the Fourier accountant on a
ledger of custom continuous pairs) :class:`~mechanisms.errors.EstimateWarning` says that the target is met only by an
estimate. A probe the accountant cannot answer (:class:`~mechanisms.errors.NumericalError`,
:class:`~accountants.fourier_accountant.AccuracyError`: typically too little noise for its numerics) counts as
infeasible, which keeps the result valid (it is still a probe found feasible); if no probe succeeds the
:class:`~mechanisms.errors.SearchRangeError` says what failed. The bracket is expanded geometrically when needed
and a range that does not contain an answer raises :class:`~mechanisms.errors.SearchRangeError` naming it.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable
from typing import Any

import numpy as np

from dpledger.accountants._fourier_search import AccuracyError
from dpledger.accountants.individual_conversions import gdp_budget, gdp_log_delta
from dpledger.accountants.rdp_accountant import RDPAccountant
from dpledger.accountants.report import BoundKind
from dpledger.mechanisms import _validate
from dpledger.mechanisms.base import Mechanism
from dpledger.mechanisms.errors import EstimateWarning, NumericalError, SearchRangeError
from dpledger.mechanisms.gaussian import GaussianMechanism
from dpledger.mechanisms.laplace import LaplaceMechanism
from dpledger.mechanisms.subsampled import PoissonSubsampled

__all__ = ["calibrate", "calibrate_to_risk", "calibrate_gaussian_sigma", "calibrate_laplace_scale"]

_MAX_EXPANSIONS = 200  # doublings or halvings of the bracket: a factor 2^200 either way


def calibrate(
    family: Callable[[float], Mechanism],
    epsilon: float,
    delta: float,
    *,
    count: int = 1,
    initial: tuple[float, float] = (0.1, 10.0),
    domain: tuple[float, float] = (0.0, math.inf),
    larger_is_more_private: bool = True,
    rtol: float = 1e-6,
    accountant: Callable[[], Any] = RDPAccountant,
) -> float:
    """Find the loosest parameter ``x`` of ``family(x)`` such that ``count`` runs are (epsilon, delta)-DP.

    Parameters
    ----------
    family : callable
        ``family(x) -> Mechanism``, with privacy monotone in ``x``.
    epsilon, delta : float
        The target; the result's epsilon (at this delta, from ``accountant``) is at most ``epsilon``.
    count : int
        Number of runs composed.
    initial : (float, float)
        Starting bracket; it is widened by factors of 2 (within ``domain``) until it contains the answer.
    domain : (float, float)
        Open interval of admissible parameters, never left.
    larger_is_more_private : bool
        True for noise parameters (return the smallest feasible ``x``), False for e.g. sampling probabilities
        (return the largest feasible ``x``).
    rtol : float
        Relative width of the final bracket.
    accountant : callable
        Factory of an accountant with ``compose`` and ``epsilon_report`` (or ``get_epsilon``; default
        :class:`RDPAccountant`).

    Returns
    -------
    float
        A parameter that meets the target; within ``rtol`` of the loosest one if epsilon is monotone in it.

    Warns
    -----
    EstimateWarning
        If a report the result rests on was an estimate rather than a proven upper bound.
    """
    epsilon = _validate.positive(epsilon, "epsilon", "calibrate")
    delta = _validate.open_unit_interval(delta, "delta", "calibrate")
    count = _validate.positive_int(count, "count", "calibrate")

    def meets(acc):
        # a cheap proven lower bound above the target rules the probe out at once (FourierAccountant.epsilon_floor)
        if hasattr(acc, "epsilon_floor") and acc.epsilon_floor(delta) > epsilon:
            return False, True
        if hasattr(acc, "epsilon_report"):
            report = acc.epsilon_report(delta)
            return report.epsilon <= epsilon, report.proven
        return acc.get_epsilon(delta) <= epsilon, True

    return _loosest(family, meets, f"epsilon <= {epsilon} at delta = {delta}", "calibrate", count=count,
                    initial=initial, domain=domain, larger_is_more_private=larger_is_more_private, rtol=rtol,
                    accountant=accountant)


def calibrate_to_risk(
    family: Callable[[float], Mechanism],
    *,
    false_positive_rate: float,
    true_positive_rate: float,
    count: int = 1,
    initial: tuple[float, float] = (0.1, 10.0),
    domain: tuple[float, float] = (0.0, math.inf),
    larger_is_more_private: bool = True,
    rtol: float = 1e-6,
    accountant: Callable[[], Any] = RDPAccountant,
) -> float:
    """Find the loosest parameter ``x`` of ``family(x)`` such that, after ``count`` runs, no membership attacker
    reaches more than ``true_positive_rate`` at ``false_positive_rate`` ("noise such that TPR at FPR 1% is at
    most 5%").

    The attacker's rate is bounded from the accountant's privacy curve (:mod:`~dpledger.accountants.risk`:
    Dong, Roth & Su 2019, Prop 2.12); the search, its bracket and its guarantees are those of :func:`calibrate`
    (the same keyword arguments). ``true_positive_rate`` must exceed ``false_positive_rate`` (a guess at random
    already reaches TPR = FPR). Each probe asks the accountant for about 50 deltas: milliseconds each for
    :class:`RDPAccountant` and closed-form Fourier ledgers, but tens of milliseconds for Poisson-subsampled
    ledgers through :class:`FourierAccountant` (a calibration then takes a minute or more).

    Examples
    --------
    >>> from dpledger.accountants import FourierAccountant
    >>> from dpledger.mechanisms import GaussianMechanism
    >>> sigma = calibrate_to_risk(lambda s: GaussianMechanism(sigma=s), false_positive_rate=0.01,
    ...                           true_positive_rate=0.05, accountant=FourierAccountant)
    >>> round(sigma, 4)   # the exact answer: Phi(Phi^-1(0.01) + 1/sigma) = 0.05
    1.4674
    """
    from dpledger.accountants import risk  # risk imports nothing from here; kept local for a light import

    fpr = _validate.probability(false_positive_rate, "false_positive_rate", "calibrate_to_risk")
    tpr = _validate.probability(true_positive_rate, "true_positive_rate", "calibrate_to_risk")
    if not tpr > fpr:
        raise ValueError(f"`true_positive_rate` of calibrate_to_risk must exceed `false_positive_rate` ({fpr}): "
                         f"a random guess reaches TPR = FPR; got {tpr}.")
    count = _validate.positive_int(count, "count", "calibrate_to_risk")

    def meets(acc):
        proven = BoundKind(getattr(acc, "bound_kind", BoundKind.UPPER)) is BoundKind.UPPER
        return risk.risk_is_within(acc, fpr, tpr), proven

    return _loosest(family, meets, f"a membership TPR <= {tpr} at FPR {fpr}", "calibrate_to_risk", count=count,
                    initial=initial, domain=domain, larger_is_more_private=larger_is_more_private, rtol=rtol,
                    accountant=accountant)


def _loosest(family, meets, target, caller, *, count, initial, domain, larger_is_more_private, rtol, accountant):
    """The search shared by :func:`calibrate` and :func:`calibrate_to_risk`: ``meets(accountant) -> (ok,
    proven)`` on ``accountant().compose(family(x), count)``; ``target`` words the messages."""
    rtol = _validate.positive(rtol, "rtol", caller)
    if not callable(family):
        raise TypeError(f"`family` of {caller} must be callable; got {type(family).__name__}.")
    lo_dom, hi_dom = (_validate.real(v, "domain", caller, allow_inf=True) for v in domain)
    lo, hi = (_validate.real(v, "initial", caller) for v in initial)
    if not lo_dom <= lo < hi <= hi_dom:
        raise ValueError(f"`initial` of {caller} must satisfy domain[0] <= lo < hi <= domain[1]; got {initial}.")

    failures, estimated = [], []

    def feasible(x):
        mechanism = family(x)
        if not isinstance(mechanism, Mechanism):
            raise TypeError(f"`family` of {caller} must return a Mechanism; got {type(mechanism).__name__}.")
        acc = accountant().compose(mechanism, count=count)
        try:
            ok, proven = meets(acc)
        except (NumericalError, AccuracyError) as exc:  # the accountant cannot answer here: not shown feasible
            failures.append(f"{x:.6g}: {type(exc).__name__}")
            return False
        if ok and not proven:
            estimated.append(x)
        return ok

    def widen(x, outward_up):
        if lo_dom > 0 or (outward_up and x > 0):
            y = x * 2.0 if outward_up else x / 2.0
        else:
            y = x + (abs(x) + 1.0) * (1.0 if outward_up else -1.0)
        y = min(y, hi_dom) if outward_up else max(y, lo_dom)
        if y == lo_dom or y == hi_dom:  # the domain is open: step halfway towards its end instead
            y = (x + y) / 2.0 if math.isfinite(y) else y
        return y

    # Orient: "good" is the feasible end, "bad" the infeasible one.
    good, bad = (hi, lo) if larger_is_more_private else (lo, hi)
    towards_good_up = larger_is_more_private
    searched = [lo, hi]
    for _ in range(_MAX_EXPANSIONS):
        if feasible(good):
            break
        bad, good = good, widen(good, towards_good_up)
        searched = [min(searched[0], good), max(searched[1], good)]
    else:
        failed = "" if not failures else f"; the accountant could not answer at {', '.join(failures[:3])}"
        raise SearchRangeError(
            f"{caller} found no parameter meeting {target} in "
            f"[{searched[0]:.6g}, {searched[1]:.6g}] (domain {domain}){failed}."
        )
    for _ in range(_MAX_EXPANSIONS):
        if not feasible(bad):
            break
        good, bad = bad, widen(bad, not towards_good_up)
        searched = [min(searched[0], bad), max(searched[1], bad)]
    else:
        raise SearchRangeError(
            f"{caller}: every parameter tried in [{searched[0]:.6g}, {searched[1]:.6g}] meets "
            f"{target}; the loosest one lies outside this range (domain {domain})."
        )
    geometric = good > 0 and bad > 0
    while abs(good - bad) > rtol * abs(good):
        mid = math.sqrt(good * bad) if geometric else (good + bad) / 2.0
        if mid in (good, bad):
            break
        if feasible(mid):
            good = mid
        else:
            bad = mid
    if good in estimated:
        warnings.warn(
            f"{caller}: the parameter {good:.6g} meets {target} only by an estimate "
            "of the accountant, not a proven upper bound; calibrate with RDPAccountant for a proven result.",
            EstimateWarning,
            stacklevel=3,
        )
    return float(good)


def calibrate_gaussian_sigma(
    epsilon: float,
    delta: float,
    *,
    sampling_probability: float = 1.0,
    count: int = 1,
    sensitivity: float = 1.0,
    rtol: float = 1e-6,
    accountant: Callable[[], Any] | None = None,
) -> float:
    """Smallest Gaussian ``sigma`` such that ``count`` runs of the (Poisson-subsampled) Gaussian mechanism are
    (epsilon, delta)-DP (upper bound, add-or-remove-one).

    Without subsampling the answer is exact: ``count`` runs of ``N(0, sigma^2)`` noise on a query of sensitivity
    ``Delta`` are ``mu``-GDP with ``mu = Delta sqrt(count) / sigma`` (Dong, Roth & Su 2019, Cor 3.3), whose exact
    profile is the analytic Gaussian ``delta(epsilon) = Phi(-epsilon/mu + mu/2) - e^epsilon Phi(-epsilon/mu - mu/2)``
    (Balle & Wang 2018, Thm 8), increasing in ``mu``; the largest ``mu`` meeting the target comes from
    :func:`~accountants.individual_conversions.gdp_budget`, and the returned ``sigma`` is checked against the
    upward-rounded profile :func:`~accountants.individual_conversions.gdp_log_delta` (raised until it meets the
    target as evaluated). The RDP calibration it replaces there gave up to 1.5x the needed sigma. With
    subsampling, or with ``accountant`` given (a factory as in :func:`calibrate`, e.g. :class:`RDPAccountant`
    for a sigma whose RDP epsilon meets the target), the search of :func:`calibrate` is used (``rtol`` is the
    relative width of its final bracket).

    Examples
    --------
    >>> sigma = calibrate_gaussian_sigma(1.0, 1e-5)
    >>> round(sigma, 4)
    3.7306
    >>> round(calibrate_gaussian_sigma(1.0, 1e-5, sampling_probability=0.01, count=1000), 3)
    1.513
    """
    epsilon = _validate.positive(epsilon, "epsilon", "calibrate_gaussian_sigma")
    delta = _validate.open_unit_interval(delta, "delta", "calibrate_gaussian_sigma")
    q = _validate.probability(sampling_probability, "sampling_probability", "calibrate_gaussian_sigma")
    count = _validate.positive_int(count, "count", "calibrate_gaussian_sigma")
    sensitivity = _validate.positive(sensitivity, "sensitivity", "calibrate_gaussian_sigma")
    rtol = _validate.positive(rtol, "rtol", "calibrate_gaussian_sigma")
    if q == 1.0 and accountant is None:
        return _analytic_gaussian_sigma(epsilon, delta, count, sensitivity)

    def family(sigma):
        base = GaussianMechanism(sigma=sigma, sensitivity=sensitivity)
        return base if q == 1.0 else PoissonSubsampled(base, sampling_probability=q)

    initial = (0.5 * sensitivity, 2.0 * sensitivity)
    if accountant not in (None, RDPAccountant):
        # A tighter accountant needs at most about the RDP sigma (a cheap, proven start; only a bracket: the
        # search widens it if the other accountant disagrees), and rarely less than 0.7 of it (DP-SGD: 0.93-0.97).
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", EstimateWarning)
            rdp_sigma = calibrate(family, epsilon, delta, count=count, initial=initial, rtol=1e-3)
        initial = (0.7 * rdp_sigma, rdp_sigma * (1.0 + 2e-3))
    return calibrate(
        family,
        epsilon,
        delta,
        count=count,
        initial=initial,
        rtol=rtol,
        accountant=RDPAccountant if accountant is None else accountant,
    )


def _analytic_gaussian_sigma(epsilon, delta, count, sensitivity):
    """Smallest ``sigma`` (from above, within a few ulps of the exact threshold) meeting the analytic-Gaussian
    profile of ``count`` runs; see :func:`calibrate_gaussian_sigma`."""
    mu = math.sqrt(2.0 * gdp_budget(epsilon, delta))
    scale = sensitivity * math.sqrt(count)
    sigma = scale / mu
    log_delta = math.log(delta)
    for _ in range(10_000):  # a handful of steps in practice: the budget is within about 1e-15 of the threshold
        if float(gdp_log_delta(scale / sigma, epsilon)) <= log_delta:
            return float(sigma)
        sigma = float(np.nextafter(sigma * (1.0 + 1e-15), np.inf))
    raise SearchRangeError(f"calibrate_gaussian_sigma: no sigma near {scale / mu:.6g} meets epsilon <= {epsilon} at "
                           f"delta = {delta} as evaluated.")


def calibrate_laplace_scale(
    epsilon: float,
    delta: float,
    *,
    sampling_probability: float = 1.0,
    count: int = 1,
    sensitivity: float = 1.0,
    rtol: float = 1e-6,
) -> float:
    """Smallest Laplace ``scale`` such that ``count`` runs of the (Poisson-subsampled) Laplace mechanism are
    (epsilon, delta)-DP by the RDP accountant (upper bound, add-or-remove-one)."""
    q = _validate.probability(sampling_probability, "sampling_probability", "calibrate_laplace_scale")
    sensitivity = _validate.positive(sensitivity, "sensitivity", "calibrate_laplace_scale")

    def family(scale):
        base = LaplaceMechanism(scale=scale, sensitivity=sensitivity)
        return base if q == 1.0 else PoissonSubsampled(base, sampling_probability=q)

    return calibrate(
        family, epsilon, delta, count=count, initial=(0.5 * sensitivity, 2.0 * sensitivity), rtol=rtol
    )
