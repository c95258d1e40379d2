"""Translation between Google dp_accounting's ``DpEvent`` trees and dpledger mechanisms.

``from_dp_event(event)`` returns a mechanism whose RDP curve (and characteristic function, where the event has
one) is a proven upper bound for the event under add-or-remove-one; events without a sound translation are
refused with :class:`UnsupportedTranslationError` naming the event and where it sits in the tree.
``to_dp_event(mechanism)`` goes back where dp_accounting has an event for the mechanism.

dp_accounting is imported only when these functions run (``pip install dp-accounting``).
"""

from __future__ import annotations

import functools
import math
from typing import TYPE_CHECKING

import numpy as np

from dpledger.accountants.adapters._peers import require
from dpledger.mechanisms import _validate
from dpledger.mechanisms.base import Mechanism
from dpledger.mechanisms.composition import Composed, SelfComposed
from dpledger.mechanisms.errors import DPLedgerError
from dpledger.mechanisms.fixed_size_sampling import SampledWithoutReplacement
from dpledger.mechanisms.gaussian import GaussianMechanism
from dpledger.mechanisms.laplace import LaplaceMechanism
from dpledger.mechanisms.non_private import NonPrivateMechanism
from dpledger.mechanisms.randomized_response import KaryRandomizedResponse, PureDPMechanism, RandomizedResponse
from dpledger.mechanisms.subsampled import PoissonSubsampled
from dpledger.mechanisms.with_replacement import SampledWithReplacement
from dpledger.mechanisms.zcdp import ApproximateZCDPCurve, CustomRDPMechanism, ZCDPMechanism

if TYPE_CHECKING:
    import dp_accounting

__all__ = [
    "from_dp_event",
    "to_dp_event",
    "UnsupportedTranslationError",
    "NonPrivateMechanism",
    "KaryRandomizedResponse",
    "ApproximateZCDPCurve",
]


class UnsupportedTranslationError(DPLedgerError):
    """A DpEvent (or mechanism) has no sound translation to the other library; the message says why."""


_NO_LOSS = PureDPMechanism(epsilon=0.0)


# ---------------------------------------------------------------------------------------------- from_dp_event
def from_dp_event(event: dp_accounting.DpEvent) -> Mechanism:
    """A dpledger mechanism for a dp_accounting ``DpEvent`` (the privacy curves are upper bounds for the event).

    ==================================  ===============================================================
    event                               mechanism
    ==================================  ===============================================================
    NoOpDpEvent                         ``PureDPMechanism(epsilon=0)`` (no privacy loss)
    NonPrivateDpEvent                   :class:`NonPrivateMechanism` (RDP inf)
    GaussianDpEvent(s)                  ``GaussianMechanism(sigma=s)`` (exact); s = 0: non-private
    LaplaceDpEvent(s)                   ``LaplaceMechanism(scale=s)`` (exact); s = 0: non-private
    DiscreteLaplaceDpEvent(a, C)        ``PureDPMechanism(epsilon=a*C)`` (an upper bound: the pmf ratio is at
                                        most ``e^(a C)``; not tight)
    RandomizedResponseDpEvent(p, k)     k = 2: ``RandomizedResponse(p=1 - p/2)``; k > 2:
                                        :class:`KaryRandomizedResponse` (exact replace-one pair)
    ZCDpEvent(rho, xi)                  ``ZCDPMechanism(rho)``; xi > 0: RDP ``xi + rho alpha`` exactly
    PoissonSampledDpEvent(q, e)         ``PoissonSubsampled(from_dp_event(e), q)``; a tree of Gaussians is
                                        first merged into one Gaussian with ``s = (sum_i 1/s_i^2)^(-1/2)``
                                        (exact: composed Gaussian pairs are a rotated single Gaussian pair)
    SampledWithoutReplacement-          ``SampledWithoutReplacement(from_dp_event(e), batch_size=m,
    DpEvent(n, m, e)                    dataset_size=n)`` (add-or-remove-one, thesis Thm 3.3.5(2)); ``e`` is
                                        read as dp_accounting reads it for this event, under replace-one of
                                        a batch record (a GaussianDpEvent's noise multiplier is relative to the
                                        replace-one sensitivity); Gaussian trees merged as for Poisson
    SampledWithReplacement-             ``SampledWithReplacement(from_dp_event(e), batch_size=m,
    DpEvent(n, m, e)                    dataset_size=n)`` (``e`` read as above; a Gaussian base has a
                                        proven dominating pair, other bases RDP only; a base without
                                        known group privacy is refused)
    SelfComposedDpEvent(e, n)           ``SelfComposed(from_dp_event(e), count=n)``
    ComposedDpEvent(es)                 ``Composed([...])``
    ==================================  ===============================================================

    Refused (:class:`UnsupportedTranslationError`): tree aggregation,
    repeat-and-select, mixtures of Gaussians, truncated Poisson sampling, ``UnsupportedDpEvent``, and an
    (epsilon, delta) event with delta > 0 (no Renyi-DP bound at any order follows from (epsilon, delta)-DP:
    the delta mass may carry an unbounded privacy loss, so neither accountant can compose it soundly).

    Raises
    ------
    TypeError
        If ``event`` is not a ``DpEvent``.
    UnsupportedTranslationError
        Naming the event class and its position in the tree.
    MissingPeerError
        If dp_accounting is not installed.
    """
    dp_event = require("dp_accounting.dp_event", "from_dp_event")
    if not isinstance(event, dp_event.DpEvent):
        raise TypeError(f"`event` of from_dp_event must be a dp_accounting DpEvent; got {type(event).__name__}.")
    return _translate(event, "root")


@functools.cache
def _handlers():
    e = require("dp_accounting.dp_event", "from_dp_event")
    table = {
        e.NoOpDpEvent: lambda ev, path: _NO_LOSS,
        e.NonPrivateDpEvent: lambda ev, path: NonPrivateMechanism(),
        e.GaussianDpEvent: _from_gaussian,
        e.LaplaceDpEvent: _from_laplace,
        e.DiscreteLaplaceDpEvent: _from_discrete_laplace,
        e.RandomizedResponseDpEvent: _from_randomized_response,
        e.ZCDpEvent: _from_zcdp,
        e.PoissonSampledDpEvent: _from_poisson,
        e.SampledWithoutReplacementDpEvent: _from_without_replacement,
        e.SampledWithReplacementDpEvent: _from_with_replacement,
        e.SelfComposedDpEvent: _from_self_composed,
        e.ComposedDpEvent: _from_composed,
    }
    refusals = {
        "UnsupportedDpEvent": "it marks an operation with no DP description",
    }
    return table, refusals


def _translate(event, path):
    table, refusals = _handlers()
    for cls in type(event).__mro__:
        if cls in table:
            return table[cls](event, path)
    name = type(event).__name__
    if name == "EpsilonDeltaDpEvent":  # not in dp_accounting 0.6; handled if a version or user defines it
        return _from_epsilon_delta(event, path)
    why = refusals.get(name, "dpledger has no proven RDP or characteristic-function bound for it")
    raise UnsupportedTranslationError(f"{name} (at {path}) has no sound dpledger translation: {why}.")


def _number(event, field, path, *, integer=False):
    value = getattr(event, field)
    owner = f"{type(event).__name__} (at {path})"
    if integer:
        if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)):
            raise TypeError(f"`{field}` of {owner} must be an integer; got {type(value).__name__} {value!r}.")
        if value < 0:
            raise ValueError(f"`{field}` of {owner} must be non-negative; got {value}.")
        return int(value)
    return _validate.nonnegative(value, field, owner)


def _from_gaussian(event, path):
    s = _number(event, "noise_multiplier", path)
    return NonPrivateMechanism() if s == 0.0 else GaussianMechanism(sigma=s)


def _from_laplace(event, path):
    s = _number(event, "noise_multiplier", path)
    return NonPrivateMechanism() if s == 0.0 else LaplaceMechanism(scale=s)


def _from_discrete_laplace(event, path):
    a = _number(event, "noise_parameter", path)
    c = _number(event, "sensitivity", path, integer=True)
    if a == 0.0 and c > 0:
        return NonPrivateMechanism()
    return PureDPMechanism(epsilon=a * c)


def _from_randomized_response(event, path):
    p = _number(event, "noise_parameter", path)
    k = _number(event, "num_buckets", path, integer=True)
    owner = f"RandomizedResponseDpEvent (at {path})"
    if p > 1.0:
        raise ValueError(f"`noise_parameter` of {owner} must be in [0, 1]; got {p}.")
    if k < 1:
        raise ValueError(f"`num_buckets` of {owner} must be at least 1; got {k}.")
    if k == 1 or p == 1.0:
        return _NO_LOSS
    if p == 0.0:
        return NonPrivateMechanism()
    if k == 2:
        return RandomizedResponse(p=1.0 - p / 2.0)
    return KaryRandomizedResponse(noise_parameter=p, num_buckets=k)


def _from_zcdp(event, path):
    rho = _number(event, "rho", path)
    xi = _number(event, "xi", path)
    if xi == 0.0:
        return ZCDPMechanism(rho=rho)
    return CustomRDPMechanism(ApproximateZCDPCurve(rho=rho, xi=xi), name=f"({xi}, {rho})-zCDP")


def _from_epsilon_delta(event, path):
    epsilon = _validate.nonnegative(event.epsilon, "epsilon", f"EpsilonDeltaDpEvent (at {path})")
    delta = _validate.probability(event.delta, "delta", f"EpsilonDeltaDpEvent (at {path})")
    if delta > 0.0:
        raise UnsupportedTranslationError(
            f"EpsilonDeltaDpEvent (at {path}) has no sound dpledger translation: an (epsilon, delta)-DP guarantee "
            f"with delta = {delta} > 0 implies no finite Renyi-DP bound at any order and no dominating pair "
            "(the delta mass may carry an unbounded privacy loss); describe the mechanism itself instead."
        )
    return PureDPMechanism(epsilon=epsilon)


def _gaussian_tree_precision(event, dp_event):
    """``sum_i count_i / s_i^2`` if ``event`` is a tree of Gaussians (possibly self-composed / composed)."""
    if isinstance(event, dp_event.GaussianDpEvent):
        s = event.noise_multiplier
        if isinstance(s, (bool, np.bool_)) or not isinstance(s, (int, float, np.integer, np.floating)) or s <= 0:
            return None  # not a valid positive noise multiplier: let the general path validate it
        return 1.0 / float(s) ** 2
    if isinstance(event, dp_event.SelfComposedDpEvent):
        inner = _gaussian_tree_precision(event.event, dp_event)
        ok = isinstance(event.count, (int, np.integer)) and not isinstance(event.count, bool) and event.count >= 1
        return None if inner is None or not ok else event.count * inner
    if isinstance(event, dp_event.ComposedDpEvent):
        parts = [_gaussian_tree_precision(e, dp_event) for e in event.events]
        return None if not parts or any(p is None for p in parts) else float(sum(parts))
    return None


def _from_poisson(event, path):
    dp_event = require("dp_accounting.dp_event", "from_dp_event")
    q = _number(event, "sampling_probability", path)
    if q > 1.0:
        raise ValueError(f"`sampling_probability` of PoissonSampledDpEvent (at {path}) must be in [0, 1]; got {q}.")
    precision = _gaussian_tree_precision(event.event, dp_event)
    if precision is not None and not isinstance(event.event, dp_event.GaussianDpEvent):
        inner = GaussianMechanism(sigma=precision**-0.5)
    else:
        inner = _translate(event.event, f"{path} > PoissonSampledDpEvent.event")
    if q == 0.0:
        return _NO_LOSS
    return PoissonSubsampled(inner, sampling_probability=q)


def _from_with_replacement(event, path):
    return _from_fixed_size(event, path, "SampledWithReplacementDpEvent")


def _from_without_replacement(event, path):
    return _from_fixed_size(event, path, "SampledWithoutReplacementDpEvent")


def _from_fixed_size(event, path, name):
    dp_event = require("dp_accounting.dp_event", "from_dp_event")
    owner = f"{name} (at {path})"
    n = _number(event, "source_dataset_size", path, integer=True)
    m = _number(event, "sample_size", path, integer=True)
    if n < 1 or m > n or (m == n and name == "SampledWithoutReplacementDpEvent"):
        raise ValueError(f"`sample_size` of {owner} must be in [0, source_dataset_size] (below it without "
                         f"replacement) with source_dataset_size >= 1; got sample_size {m}, source_dataset_size {n}.")
    precision = _gaussian_tree_precision(event.event, dp_event)
    if precision is not None and not isinstance(event.event, dp_event.GaussianDpEvent):
        inner = GaussianMechanism(sigma=precision**-0.5)
    else:
        inner = _translate(event.event, f"{path} > {name}.event")
    if m == 0:
        return _NO_LOSS
    if name == "SampledWithoutReplacementDpEvent":
        return SampledWithoutReplacement(inner, batch_size=m, dataset_size=n)
    try:
        return SampledWithReplacement(inner, batch_size=m, dataset_size=n)
    except TypeError as err:
        raise UnsupportedTranslationError(f"{owner} has no sound dpledger translation: {err}") from None


def _from_self_composed(event, path):
    count = _number(event, "count", path, integer=True)
    inner = _translate(event.event, f"{path} > SelfComposedDpEvent.event")
    if count == 0:
        return _NO_LOSS
    return inner if count == 1 else SelfComposed(inner, count=count)


def _from_composed(event, path):
    events = list(event.events)
    parts = [_translate(e, f"{path} > ComposedDpEvent.events[{i}]") for i, e in enumerate(events)]
    if not parts:
        return _NO_LOSS
    return parts[0] if len(parts) == 1 else Composed(tuple(parts))


# ------------------------------------------------------------------------------------------------ to_dp_event
@functools.singledispatch
def to_dp_event(mechanism: Mechanism) -> dp_accounting.DpEvent:
    """The dp_accounting ``DpEvent`` describing a dpledger mechanism (inverse of :func:`from_dp_event`).

    Gaussian and Laplace mechanisms map to their events with ``noise_multiplier = sigma / sensitivity`` (or
    ``scale / sensitivity``); ``RandomizedResponse(p)`` to ``RandomizedResponseDpEvent(2 (1 - max(p, 1-p)), 2)``
    (relabelling the output does not change privacy); ``PureDPMechanism(eps)`` to the binary randomized response
    that dominates it (``noise_parameter = 2 / (1 + e^eps)``; ``NoOpDpEvent`` for eps = 0); zCDP, Poisson
    subsampling, self-composition and composition to their events. Note that dp_accounting accounts randomized
    response only under its replace relations.

    Raises
    ------
    UnsupportedTranslationError
        For mechanisms dp_accounting cannot describe (RDP curves, custom pairs, characteristic functions, ...).
    """
    raise UnsupportedTranslationError(
        f"to_dp_event: dp_accounting has no DpEvent for {type(mechanism).__name__}; account for it with a "
        "dpledger accountant (RDPAccountant or FourierAccountant) instead."
    )


def _events():
    return require("dp_accounting.dp_event", "to_dp_event")


@to_dp_event.register
def _(mechanism: GaussianMechanism):
    return _events().GaussianDpEvent(noise_multiplier=mechanism.noise_multiplier)


@to_dp_event.register
def _(mechanism: LaplaceMechanism):
    return _events().LaplaceDpEvent(noise_multiplier=mechanism.scale / mechanism.sensitivity)


@to_dp_event.register
def _(mechanism: RandomizedResponse):
    e = _events()
    p = max(mechanism.p, 1.0 - mechanism.p)
    if p == 1.0:
        return e.NonPrivateDpEvent()
    return e.RandomizedResponseDpEvent(noise_parameter=2.0 * (1.0 - p), num_buckets=2)


@to_dp_event.register
def _(mechanism: PureDPMechanism):
    e = _events()
    if mechanism.epsilon == 0.0:
        return e.NoOpDpEvent()
    # rounded down (less noise is the pessimistic side): the event's epsilon is never below the mechanism's
    noise = 2.0 / (1.0 + math.exp(mechanism.epsilon)) * (1.0 - 1e-15)
    return e.RandomizedResponseDpEvent(noise_parameter=noise, num_buckets=2)


@to_dp_event.register
def _(mechanism: KaryRandomizedResponse):
    return _events().RandomizedResponseDpEvent(
        noise_parameter=mechanism.noise_parameter, num_buckets=mechanism.num_buckets
    )


@to_dp_event.register
def _(mechanism: ZCDPMechanism):
    return _events().ZCDpEvent(rho=mechanism.rho)


@to_dp_event.register
def _(mechanism: CustomRDPMechanism):
    curve = mechanism.rdp_function
    if isinstance(curve, ApproximateZCDPCurve):
        return _events().ZCDpEvent(rho=curve.rho, xi=curve.xi)
    return to_dp_event.dispatch(object)(mechanism)


@to_dp_event.register
def _(mechanism: NonPrivateMechanism):
    return _events().NonPrivateDpEvent()


@to_dp_event.register
def _(mechanism: PoissonSubsampled):
    return _events().PoissonSampledDpEvent(
        sampling_probability=mechanism.sampling_probability, event=to_dp_event(mechanism.mechanism)
    )


@to_dp_event.register
def _(mechanism: SampledWithoutReplacement):
    return _events().SampledWithoutReplacementDpEvent(
        source_dataset_size=mechanism.dataset_size, sample_size=mechanism.batch_size,
        event=to_dp_event(mechanism.mechanism),
    )


@to_dp_event.register
def _(mechanism: SampledWithReplacement):
    return _events().SampledWithReplacementDpEvent(
        source_dataset_size=mechanism.dataset_size, sample_size=mechanism.batch_size,
        event=to_dp_event(mechanism.mechanism),
    )


@to_dp_event.register
def _(mechanism: SelfComposed):
    return _events().SelfComposedDpEvent(event=to_dp_event(mechanism.mechanism), count=mechanism.count)


@to_dp_event.register
def _(mechanism: Composed):
    return _events().ComposedDpEvent(events=[to_dp_event(m) for m in mechanism.mechanisms])
