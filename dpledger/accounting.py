"""``dpledger epsilon``, ``dpledger delta`` and ``dpledger calibrate``: compute a result, then print it.

Each ``*_result`` function returns a plain dict (what ``--json`` prints); each ``format_*`` turns one into the
human report. Every number is labelled: a proven upper bound, or an estimate (Fourier accounting of mechanisms
whose characteristic functions come from quadrature). All numbers are for the add-or-remove-one relation.
"""

from __future__ import annotations

import dataclasses
import json
import warnings
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from dpledger import _format
from dpledger.accountants import FourierAccountant, RDPAccountant
from dpledger.accountants.calibration import (
    calibrate,
    calibrate_gaussian_sigma,
    calibrate_laplace_scale,
    calibrate_to_risk,
)
from dpledger.accountants.risk import risk_report
from dpledger.ledger_spec import Entry, SpecError, entries_from_json
from dpledger.mechanisms import Composed, SelfComposed
from dpledger.mechanisms.errors import DPLedgerError, EstimateWarning, MissingCapabilityError

__all__ = ["ACCOUNTANTS", "epsilon_result", "delta_result", "calibrate_result", "format_privacy", "format_calibration"]

ACCOUNTANTS = ("rdp", "fourier", "both")
FOURIER_METHOD = "Fourier inversion of the privacy-loss distribution (thesis Sec 3.4, Algorithm 1)"


def _rdp(entries):
    acc = RDPAccountant()
    for entry in entries:
        acc.compose(entry.build(), count=entry.count)
    return acc


def _fourier(entries, rtol):
    """The Fourier accountant of the entries, and whether any entered through its dominating mechanism
    (subsampled screening: the subsampled Gaussian with sensitivity 1 that it post-processes; the accountant
    composes it in its place, :meth:`mechanisms.base.Mechanism.dominating_mechanism`)."""
    acc = FourierAccountant(rtol=rtol)
    substituted = set()
    for entry in entries:
        mechanism = entry.build()
        if mechanism.dominating_mechanism() is not mechanism:
            substituted.add(type(mechanism).__name__)
        acc.compose(mechanism, count=entry.count)
    return acc, substituted


def _order(order):
    return None if order is None else float(order)


def _rdp_part(report):
    return {
        "accountant": "RDP",
        "epsilon": report.epsilon,
        "delta": report.delta,
        "bound": report.bound,
        "relation": report.relation.value,
        "conversion": report.method,
        "order": _order(report.order),
    }


def _checked_part(report):
    """A Fourier report in the shape of :func:`_rdp_part` (the calibration's check)."""
    return {
        "accountant": "Fourier",
        "epsilon": report.epsilon,
        "delta": report.delta,
        "bound": report.bound,
        "relation": report.relation.value,
        "conversion": report.method,
        "order": None,
    }


#: What the Fourier accountant composes in place of a mechanism that enters through its dominating mechanism.
_SUBSTITUTES = {
    "SubsampledScreening": "subsampled screening through its dominating pair, the subsampled Gaussian with "
    "sensitivity 1",
    "RandomAllocation": "random allocation through its dominating pair: for a Gaussian base with one selection the "
    "amplified pair's proven loss buckets (AllocationPair), otherwise the un-amplified pair (the base composed once "
    "per selection; the RDP accountant has the amplified bound)",
}


def _fourier_part(acc, bounds, quantity, epsilon, delta, rtol, substituted=()):
    certified = acc.certified
    how = "characteristic functions in closed form or proven enclosures: the interval is proven" if certified else (
        "characteristic functions partly by quadrature: the interval's error is estimated, not proven"
    )
    return {
        "accountant": "Fourier",
        "epsilon": bounds.upper if quantity == "epsilon" else epsilon,
        "delta": bounds.upper if quantity == "delta" else delta,
        "bound": "upper bound" if certified else "estimate",
        "relation": acc.relation.value,
        "method": f"{FOURIER_METHOD}, {how}" + "".join(
            "; " + _SUBSTITUTES.get(name, f"{name} through its dominating mechanism") for name in sorted(substituted)
        ),
        "lower": bounds.lower,
        "estimate": bounds.estimate,
        "upper": bounds.upper,
        "error_bound": bounds.upper - bounds.lower,
        "rtol": rtol,
    }


def _risk_part(acc, false_positive_rates):
    """The attack-risk bounds of ``acc`` (:func:`dpledger.accountants.risk.risk_report`) as plain types."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", EstimateWarning)  # the report's "bound" says it
        return risk_report(acc, false_positive_rates).to_dict()


def _privacy_result(command, entries, accountant, rtol, target, risk=None):
    quantity = "epsilon" if command == "epsilon" else "delta"
    results = []
    if accountant in ("rdp", "both"):
        acc = _rdp(entries)
        report = acc.epsilon_report(target) if quantity == "epsilon" else acc.delta_report(target)
        results.append(_rdp_part(report))
        if risk is not None:
            results[-1]["risk"] = _risk_part(acc, risk)
    if accountant in ("fourier", "both"):
        try:
            acc, substituted = _fourier(entries, rtol)
            if quantity == "epsilon":
                part = _fourier_part(acc, acc.epsilon_bounds(target), quantity, None, target, rtol, substituted)
            else:
                part = _fourier_part(acc, acc.delta_bounds(target), quantity, target, None, rtol, substituted)
            if risk is not None:
                part["risk"] = _risk_part(acc, risk)
        except (DPLedgerError, MissingCapabilityError) as err:
            if accountant == "fourier":
                raise
            part = {"accountant": "Fourier", "error": f"{type(err).__name__}: {err}"}
        results.append(part)
    proven = [r for r in results if r.get("bound") == "upper bound"]
    best = min(proven, key=lambda r: r[quantity]) if proven else None
    return {
        "command": command,
        "quantity": quantity,
        ("delta" if quantity == "epsilon" else "epsilon"): target,
        "relation": RDPAccountant.relation.value,
        "mechanisms": [e.to_json() for e in entries],
        "results": results,
        "best_upper_bound": None if best is None else {"accountant": best["accountant"], quantity: best[quantity]},
    }


def epsilon_result(
    entries: Sequence[Entry], *, delta: float, accountant: str = "rdp", rtol: float = 1e-6,
    risk: Sequence[float] | None = None,
) -> dict[str, Any]:
    """Smallest epsilon of the composition at ``delta`` from each requested accountant; with ``risk`` (a
    sequence of false-positive rates), each accountant's bounds on a membership attacker's true-positive rate
    there and its advantage (:mod:`dpledger.accountants.risk`), under ``"risk"``.

    Examples
    --------
    >>> from dpledger.ledger_spec import entries_from_items
    >>> entries = entries_from_items([("mechanism", "gaussian"), ("sigma", 1.1), ("sampling_probability", 0.01),
    ...                               ("count", 10_000)])
    >>> r = epsilon_result(entries, delta=1e-5)
    >>> round(r["results"][0]["epsilon"], 2), r["results"][0]["bound"]
    (5.63, 'upper bound')
    """
    return _privacy_result("epsilon", entries, accountant, rtol, delta, risk)


def delta_result(
    entries: Sequence[Entry], *, epsilon: float, accountant: str = "rdp", rtol: float = 1e-6,
    risk: Sequence[float] | None = None,
) -> dict[str, Any]:
    """Smallest delta of the composition at ``epsilon`` from each requested accountant (``risk`` as in
    :func:`epsilon_result`)."""
    return _privacy_result("delta", entries, accountant, rtol, epsilon, risk)


def calibrate_result(
    entries: Sequence[Entry], *, epsilon: float | None = None, delta: float | None = None, rtol: float = 1e-6,
    accountant: str = "rdp", risk: tuple[float, float] | None = None,
) -> dict[str, Any]:
    """The loosest noise parameter of the one entry that omits it, such that the whole composition is
    (epsilon, delta)-DP by ``accountant``: ``"rdp"`` (default) or ``"fourier"`` (the characteristic-function
    accountant at its default accuracy: tighter, so less noise; a proven upper bound on the ledgers it certifies,
    labelled an estimate on the others).

    A single Gaussian or Laplace entry uses :func:`calibrate_gaussian_sigma` / :func:`calibrate_laplace_scale`
    (RDP); anything else uses :func:`accountants.calibration.calibrate` on the composition with the other entries
    held fixed. The result is checked: the epsilon the same accountant reports at the returned value is at most the
    target.

    With ``risk = (fpr, tpr)`` instead of ``epsilon`` and ``delta``, the target is an attack risk: no membership
    attacker's true-positive rate at false-positive rate ``fpr`` above ``tpr``
    (:func:`~dpledger.accountants.calibration.calibrate_to_risk`), checked the same way.
    """
    if (risk is None) == (epsilon is None or delta is None):
        raise ValueError("calibrate_result needs one target: `epsilon` and `delta`, or `risk`.")
    if accountant not in ("rdp", "fourier"):
        raise ValueError(f"`accountant` of calibrate_result must be 'rdp' or 'fourier'; got {accountant!r}.")
    open_entries = [i for i, e in enumerate(entries) if e.kind.noise not in e.params]
    if len(open_entries) != 1:
        names = ", ".join(f"{e.kind.name} ({_flag(e.kind.noise)})" for e in entries)
        raise SpecError(
            "dpledger calibrate needs exactly one mechanism without its noise parameter (the one to calibrate); "
            f"got {len(open_entries)} of: {names}."
        )
    index = open_entries[0]
    entry = entries[index]
    kind = entry.kind
    sensitivity = entry.params.get("sensitivity", kind.optional.get("sensitivity", 1.0))
    q, count = entry.sampling_probability, entry.count
    if entry.sampler == "without-replacement":  # the same curves as Poisson at b / n (SampledWithoutReplacement)
        q = entry.batch_size / entry.dataset_size
    factory = RDPAccountant if accountant == "rdp" else FourierAccountant
    if risk is None and len(entries) == 1 and kind.name == "gaussian":
        value = calibrate_gaussian_sigma(
            epsilon, delta, sampling_probability=q, count=count, sensitivity=sensitivity, rtol=rtol,
            accountant=factory,
        )
    elif risk is None and len(entries) == 1 and kind.name == "laplace" and accountant == "rdp":
        value = calibrate_laplace_scale(
            epsilon, delta, sampling_probability=q, count=count, sensitivity=sensitivity, rtol=rtol
        )
    else:
        others = [SelfComposed(e.build(), count=e.count) for i, e in enumerate(entries) if i != index]

        def family(x):
            mine = entry.build(**{kind.noise: x})
            if not others:
                return mine
            return Composed([SelfComposed(mine, count=count)] + others)

        initial = tuple(v * sensitivity for v in kind.initial) if "sensitivity" in kind.optional else kind.initial
        search = dict(count=count if not others else 1, initial=initial, domain=kind.domain,
                      larger_is_more_private=kind.more_private, rtol=rtol, accountant=factory)
        if risk is None:
            value = calibrate(family, epsilon, delta, **search)
        else:
            value = calibrate_to_risk(family, false_positive_rate=risk[0], true_positive_rate=risk[1], **search)
    calibrated = [e if i != index else _with(e, kind.noise, value) for i, e in enumerate(entries)]
    if risk is not None:
        return _risk_calibration(entries, calibrated, index, value, risk, rtol, accountant)
    if accountant == "rdp":
        report = _rdp(calibrated).epsilon_report(delta)
    else:
        checker = FourierAccountant()
        for e in calibrated:
            checker.compose(e.build(), count=e.count)
        report = checker.epsilon_report(delta)
    if not report.epsilon <= epsilon:  # calibrate only returns values it found feasible; never print otherwise
        raise DPLedgerError(
            f"calibration returned {kind.noise} = {value!r}, at which epsilon = {report.epsilon!r} exceeds the "
            f"target {epsilon}."
        )
    achieved = _rdp_part(report) if accountant == "rdp" else _checked_part(report)
    return _calibration_dict(entries, calibrated, index, value, {"epsilon": epsilon, "delta": delta}, achieved,
                             rtol)


def _calibration_dict(entries, calibrated, index, value, target, achieved, rtol):
    """What :func:`calibrate_result` returns (and ``--json`` prints), for either kind of target."""
    kind = entries[index].kind
    return {
        "command": "calibrate",
        "parameter": kind.noise,
        "mechanism": kind.name,
        "entry": index + 1,
        "value": value,
        "direction": "smallest" if kind.more_private else "largest",
        "target": target,
        "relation": RDPAccountant.relation.value,
        "mechanisms": [e.to_json() for e in entries],
        "calibrated_mechanisms": [e.to_json() for e in calibrated],
        "achieved": achieved,
        "rtol": rtol,
    }


def _risk_calibration(entries, calibrated, index, value, risk, rtol, accountant):
    """The result of a calibration to an attack risk, checked: the bound at the returned value meets it."""
    fpr, tpr = risk
    checker = _rdp(calibrated) if accountant == "rdp" else _fourier(calibrated, 1e-6)[0]
    report = risk_report(checker, [fpr])
    achieved = report.true_positive_rates[0]
    kind = entries[index].kind
    if not achieved <= tpr:  # calibrate_to_risk only returns values it found feasible; never print otherwise
        raise DPLedgerError(
            f"calibration returned {kind.noise} = {value!r}, at which the attacker's TPR bound {achieved!r} exceeds "
            f"the target {tpr}."
        )
    achieved_part = {"accountant": "RDP" if accountant == "rdp" else "Fourier", "false_positive_rate": fpr,
                     "true_positive_rate": achieved, "advantage": report.advantage, "bound": report.bound.value,
                     "method": report.method}
    return _calibration_dict(entries, calibrated, index, value, {"false_positive_rate": fpr, "true_positive_rate": tpr},
                             achieved_part, rtol)


def _flag(param):
    return "--" + param.replace("_", "-")


def _with(entry, param, value):
    return dataclasses.replace(entry, params={**entry.params, param: value})


# ---------------------------------------------------------------------------------------------- text output
def format_privacy(result: Mapping[str, Any]) -> str:
    """The human report of :func:`epsilon_result` / :func:`delta_result`."""
    quantity = result["quantity"]
    given = "delta" if quantity == "epsilon" else "epsilon"
    n = len(result["mechanisms"])
    lines = [
        f"{quantity} of a composition of {n} mechanism{'s' if n != 1 else ''} at {given} = "
        f"{_format.nearest(result[given])}",
        f"neighbouring relation: {result['relation']}",
    ]
    for entry in entries_from_json(json.dumps({"mechanisms": result["mechanisms"]})):
        lines.append(f"  {entry.describe()}")
    for part in result["results"]:
        lines.append("")
        lines.append(f"{part['accountant']} accountant")
        if "error" in part:
            lines.append(f"  not available: {part['error']}")
            continue
        value, bound = part[quantity], part["bound"]
        label = "proven upper bound" if bound == "upper bound" else "estimate, not a proven bound"
        shown = f"{_format.upper(value)}  ({label}; printed rounded up)" if bound == "upper bound" else (
            f"{_format.nearest(value)}  ({label})"
        )
        lines.append(f"  {quantity:<11}{shown}")
        if part["accountant"] == "RDP":
            lines.append(f"  conversion {part['conversion']}")
            order = part["order"]
            if order is None:
                shown = "none (empty composition)"
            elif np.isinf(order):
                shown = "inf (pure DP)"
            else:
                shown = f"{_format.nearest(order)} (optimal Renyi order)"
            lines.append(f"  order      {shown}")
        else:
            lines.append(
                f"  interval   [{_format.lower(part['lower'], 10)}, {_format.upper(part['upper'], 10)}] "
                "(lower, upper); "
                f"error bound {_format.upper(part['error_bound'], 2)}; estimate {_format.nearest(part['estimate'], 10)}"
            )
            lines.append(f"  method     {part['method']}, rtol {part['rtol']:g}")
        if "risk" in part:
            lines.extend(_format_risk(part["risk"]))
    answered = [part for part in result["results"] if "error" not in part]
    if result["best_upper_bound"] is not None and len(answered) > 1:
        best = result["best_upper_bound"]
        lines.append("")
        lines.append(
            f"smallest proven upper bound: {quantity} <= {_format.upper(best[quantity])} "
            f"({best['accountant']} accountant)"
        )
    return "\n".join(lines)


def _format_risk(risk):
    proven = risk["bound"] == "upper bound"
    label = "proven upper bounds" if proven else "estimates, not proven bounds"
    show = _format.upper if proven else _format.nearest
    lines = [f"  membership attack ({label}; any attacker, from the privacy curve):"]
    for fpr, tpr in zip(risk["false_positive_rates"], risk["true_positive_rates"]):
        lines.append(f"    true-positive rate at false-positive rate {_format.nearest(fpr)}: <= {show(tpr)}")
    lines.append(f"    advantage (TPR - FPR, at best):  <= {show(risk['advantage'])}")
    return lines


def format_calibration(result: Mapping[str, Any]) -> str:
    """The human report of :func:`calibrate_result`."""
    rounding = _format.upper if result["direction"] == "smallest" else _format.lower
    target = result["target"]
    achieved = result["achieved"]
    if "epsilon" in target:
        goal = f"the composition is ({_format.nearest(target['epsilon'])}, {_format.nearest(target['delta'])})-DP"
    else:
        goal = (f"no membership attacker's true-positive rate at false-positive rate "
                f"{_format.nearest(target['false_positive_rate'])} exceeds "
                f"{_format.nearest(target['true_positive_rate'])}")
    lines = [
        f"{result['parameter']} = {rounding(result['value'])}  ({result['direction']} value for mechanism "
        f"#{result['entry']} ({result['mechanism']}) such that {goal}; printed rounded "
        f"{'up' if result['direction'] == 'smallest' else 'down'}, relative tolerance {result['rtol']:g})",
        f"neighbouring relation: {result['relation']}",
    ]
    for entry in entries_from_json(json.dumps({"mechanisms": result["mechanisms"]}), allow_missing_noise=True):
        lines.append(f"  {entry.describe()}")
    label = "proven upper bound" if achieved["bound"] == "upper bound" else "estimate, not a proven bound"
    if "true_positive_rate" in achieved:
        lines.append(
            f"check: true-positive rate <= {_format.upper(achieved['true_positive_rate'])} at false-positive rate "
            f"{_format.nearest(achieved['false_positive_rate'])}, advantage <= {_format.upper(achieved['advantage'])} "
            f"({achieved['accountant']} accountant, {label})")
        return "\n".join(lines)
    order = achieved["order"]
    lines.append(
        f"check: epsilon = {_format.upper(achieved['epsilon'])} at delta = {_format.nearest(achieved['delta'])} "
        f"({achieved['accountant']} accountant, {label}; {achieved['conversion']}"
        + ("" if order is None else f", order {_format.nearest(order)}") + ")"
    )
    return "\n".join(lines)
