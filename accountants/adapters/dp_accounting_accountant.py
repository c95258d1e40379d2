"""``DPAccountingAccountant``: Google dp_accounting's ``PrivacyAccountant`` interface backed by dpledger.

dp_accounting is imported when an accountant is constructed, never when this module is imported
(``pip install dp-accounting``).
"""

from __future__ import annotations

import copy
from typing import TYPE_CHECKING, Any

from dpledger.accountants.adapters import _common
from dpledger.accountants.adapters._peers import require
from dpledger.accountants.adapters.dp_events import NonPrivateMechanism, UnsupportedTranslationError, from_dp_event
from dpledger.accountants.fourier_accountant import FourierAccountant
from dpledger.accountants.rdp_accountant import RDPAccountant
from dpledger.accountants.report import PrivacyReport
from dpledger.mechanisms import _validate

if TYPE_CHECKING:
    import dp_accounting

__all__ = ["DPAccountingAccountant"]


class DPAccountingAccountant:
    """A ``dp_accounting.PrivacyAccountant`` whose numbers come from a dpledger accountant.

    Each composed ``DpEvent`` is translated by :func:`~accountants.adapters.from_dp_event` (sound translations
    only) and composed into an :class:`~accountants.RDPAccountant` (``method="rdp"``, proven upper bounds) or a
    :class:`~accountants.FourierAccountant` (``method="fourier"``; its values are certified upper bounds when
    every characteristic function is in closed form and estimates otherwise, e.g. for Poisson subsampling --
    :meth:`epsilon_report` says which, and ``get_epsilon`` warns once with a ``DPLedgerWarning``).
    The class is registered as a virtual subclass of ``dp_accounting.PrivacyAccountant``, so
    ``isinstance(acc, dp_accounting.PrivacyAccountant)`` holds.

    Parameters
    ----------
    method : {"rdp", "fourier"}
    neighboring_relation : dp_accounting.NeighboringRelation, optional
        Only ``ADD_OR_REMOVE_ONE`` (the default), the relation of every dpledger bound.
    **options
        Passed to the dpledger accountant (``orders=`` / ``conversion=`` for RDP, ``rtol=`` for Fourier).

    Raises
    ------
    MissingPeerError
        If dp_accounting is not installed.

    Examples
    --------
    >>> import dp_accounting  # doctest: +SKIP
    >>> event = dp_accounting.PoissonSampledDpEvent(0.01, dp_accounting.GaussianDpEvent(1.1))  # doctest: +SKIP
    >>> DPAccountingAccountant().compose(event, 10_000).get_epsilon(1e-5)  # doctest: +SKIP
    5.63...
    """

    def __init__(
        self, method: str = "rdp", neighboring_relation: dp_accounting.NeighboringRelation | None = None, **options: Any
    ):
        pa = require("dp_accounting.privacy_accountant", "DPAccountingAccountant")
        builder = require("dp_accounting.dp_event_builder", "DPAccountingAccountant")
        _register(pa)
        self._method = _common.check_method(method, "DPAccountingAccountant")
        relation = pa.NeighboringRelation.ADD_OR_REMOVE_ONE if neighboring_relation is None else neighboring_relation
        if relation is not pa.NeighboringRelation.ADD_OR_REMOVE_ONE:
            raise ValueError(
                "`neighboring_relation` of DPAccountingAccountant must be NeighboringRelation.ADD_OR_REMOVE_ONE "
                f"(dpledger's bounds are stated for add-or-remove-one); got {relation!r}."
            )
        self._neighboring_relation = relation
        self._accountant = _common.make_accountant(self._method, options)
        self._ledger = builder.DpEventBuilder()
        self._non_private = False
        self._warned = [False]
        self._pa = pa

    # ------------------------------------------------------------------ PrivacyAccountant interface
    @property
    def neighboring_relation(self) -> dp_accounting.NeighboringRelation:
        return self._neighboring_relation

    @property
    def method(self) -> str:
        return self._method

    @property
    def accountant(self) -> RDPAccountant | FourierAccountant:
        """The dpledger accountant holding the translated ledger (do not compose into it directly)."""
        return self._accountant

    @property
    def ledger(self) -> dp_accounting.DpEvent:
        """The composed ``DpEvent`` processed so far."""
        return self._ledger.build()

    def supports(self, event: dp_accounting.DpEvent) -> bool:
        """Dry run: whether ``compose(event)`` would succeed."""
        return self._maybe_compose(event, 1, False) is None

    def _translate(self, event):
        """(mechanism, error details or None) for ``event``."""
        details = self._pa.PrivacyAccountant.CompositionErrorDetails
        try:
            mechanism = from_dp_event(event)
        except (UnsupportedTranslationError, ValueError, TypeError) as exc:
            return None, details(invalid_event=event, error_message=str(exc))
        if self._method == "fourier" and not self._fourier_supports(mechanism):
            if _common.contains(mechanism, NonPrivateMechanism):
                return mechanism, None
            return None, details(
                invalid_event=event,
                error_message=f"{type(mechanism).__name__} has no characteristic function for the Fourier "
                "accountant; use method='rdp'.",
            )
        return mechanism, None

    def _fourier_supports(self, mechanism):
        """The Fourier accountant composes ``mechanism`` as it is, or its unfolded runs (:func:`_runs`)."""
        if self._accountant.supports(mechanism):
            return True
        return all(self._accountant.supports(m) for m, _ in _runs(mechanism, 1))

    def _maybe_compose(self, event, count, do_compose):
        """dp_accounting's hook: ``None`` if ``event`` is supported (composing it ``count`` times when
        ``do_compose``), otherwise ``CompositionErrorDetails``."""
        mechanism, error = self._translate(event)
        if error is not None:
            return error
        if do_compose:
            if self._method == "fourier" and _common.contains(mechanism, NonPrivateMechanism):
                self._non_private = True
            elif self._method == "fourier" and not self._accountant.supports(mechanism):
                for part, times in _runs(mechanism, count):
                    self._accountant.compose(part, count=times)
            else:
                self._accountant.compose(mechanism, count=count)
        return None

    def compose(self, event: dp_accounting.DpEvent, count: int = 1) -> DPAccountingAccountant:
        """Translate and compose ``event`` ``count`` times; returns ``self``. Transactional: an unsupported
        event raises ``dp_accounting.UnsupportedEventError`` and leaves the accountant unchanged."""
        dp_event = require("dp_accounting.dp_event", "DPAccountingAccountant")
        if not isinstance(event, dp_event.DpEvent):
            raise TypeError(f"`event` of DPAccountingAccountant.compose must be a DpEvent; got {type(event).__name__}.")
        count = _validate.positive_int(count, "count", "DPAccountingAccountant.compose")
        error = self._maybe_compose(event, count, False)
        if error is not None:
            raise self._pa.UnsupportedEventError(
                f"Unsupported event: {event}. Error: [{error.error_message}] caused by subevent "
                f"{error.invalid_event}."
            )
        saved = copy.deepcopy(self._ledger)
        self._ledger.compose(event, count)
        try:
            self._maybe_compose(event, count, True)
        except BaseException:
            self._ledger = saved
            raise
        return self

    def get_epsilon(self, target_delta: float) -> float:
        """Epsilon at ``target_delta`` (add-or-remove-one): an upper bound, or an estimate (warned) for Fourier
        on quadrature-based characteristic functions. ``target_delta == 0`` gives the pure-DP epsilon."""
        return self.epsilon_report(target_delta).epsilon

    def get_delta(self, target_epsilon: float) -> float:
        """Delta at ``target_epsilon`` (add-or-remove-one), labelled like :meth:`get_epsilon`."""
        return self.delta_report(target_epsilon).delta

    # ------------------------------------------------------------------ dpledger reports
    def epsilon_report(self, delta: float) -> PrivacyReport:
        """:class:`~accountants.report.PrivacyReport` at ``delta`` in [0, 1)."""
        delta = _validate.real(delta, "target_delta", "DPAccountingAccountant.get_epsilon")
        if not 0.0 <= delta < 1.0:
            raise ValueError(f"`target_delta` of DPAccountingAccountant.get_epsilon must be in [0, 1); got {delta}.")
        if self._non_private:
            return _non_private_report(self._accountant, float("inf"), delta)
        report = _common.epsilon_report(self._accountant, delta)
        _common.warn_if_estimate(report, "DPAccountingAccountant", self._warned)
        return report

    def delta_report(self, epsilon: float) -> PrivacyReport:
        """:class:`~accountants.report.PrivacyReport` at ``epsilon`` >= 0."""
        epsilon = _validate.nonnegative(epsilon, "target_epsilon", "DPAccountingAccountant.get_delta")
        if self._non_private:
            return _non_private_report(self._accountant, epsilon, 1.0)
        report = _common.delta_report(self._accountant, epsilon)
        _common.warn_if_estimate(report, "DPAccountingAccountant", self._warned)
        return report

    def __repr__(self):
        return f"DPAccountingAccountant(method={self._method!r}, ledger={self.ledger!r})"


def _non_private_report(accountant, epsilon, delta):
    from dpledger.accountants.report import PrivacyReport

    return PrivacyReport(
        epsilon=float(epsilon), delta=float(delta), bound="upper bound", relation=accountant.relation,
        accountant="Fourier", method="the ledger holds a non-private event: no guarantee",
    )


_REGISTERED = []


def _register(pa):
    if not _REGISTERED:
        pa.PrivacyAccountant.register(DPAccountingAccountant)
        _REGISTERED.append(True)


def _runs(mechanism, count):
    """``[(mechanism, count), ...]`` with ``SelfComposed`` and ``Composed`` unfolded: the same composition. Used
    only where the folded mechanism is refused: unfolded, a part described by loss buckets rather than a
    characteristic function (``SampledWithReplacement``'s or ``RandomAllocation``'s pairs) is accepted inside a
    ``SelfComposedDpEvent`` or ``ComposedDpEvent``."""
    from dpledger.mechanisms.composition import Composed, SelfComposed

    if isinstance(mechanism, SelfComposed):
        return _runs(mechanism.mechanism, count * mechanism.count)
    if isinstance(mechanism, Composed):
        return [run for part in mechanism.mechanisms for run in _runs(part, count)]
    return [(mechanism, count)]
