"""What the Opacus and dp_accounting adapters share: the dpledger accountant behind them and its reports."""

import warnings

import numpy as np

from dpledger.accountants.fourier_accountant import FourierAccountant
from dpledger.accountants.rdp_accountant import RDPAccountant
from dpledger.mechanisms.base import Mechanism
from dpledger.mechanisms.errors import DPLedgerWarning

__all__ = ["METHODS", "check_method", "make_accountant", "epsilon_report", "delta_report", "contains"]

METHODS = ("rdp", "fourier")


def check_method(method, owner):
    """``method`` as one of :data:`METHODS`."""
    if not isinstance(method, str):
        raise TypeError(f"`method` of {owner} must be a str; got {type(method).__name__}.")
    if method not in METHODS:
        raise ValueError(f"`method` of {owner} must be one of {list(METHODS)}; got {method!r}.")
    return method


def make_accountant(method, options):
    """A fresh dpledger accountant: :class:`RDPAccountant` or :class:`FourierAccountant` with ``options``."""
    return RDPAccountant(**options) if method == "rdp" else FourierAccountant(**options)


def contains(mechanism, cls):
    """Whether ``mechanism`` or any mechanism nested in it (:attr:`~mechanisms.base.Mechanism.children`) is a
    ``cls``."""
    if isinstance(mechanism, cls):
        return True
    return isinstance(mechanism, Mechanism) and any(contains(m, cls) for m in mechanism.children)


def epsilon_report(accountant, delta):
    """The accountant's :class:`~accountants.report.PrivacyReport` at ``delta``; ``delta == 0`` gives the
    pure-DP epsilon (basic composition of the RDP at order inf, an upper bound)."""
    if delta == 0.0:
        return _pure_report(accountant)
    return accountant.epsilon_report(delta)


def delta_report(accountant, epsilon):
    return accountant.delta_report(epsilon)


def _pure_report(accountant):
    from dpledger.accountants.report import PrivacyReport

    pure = float(sum(count * float(m.rdp(np.inf)) for m, count in accountant.ledger))
    return PrivacyReport(
        epsilon=pure,
        delta=0.0,
        bound="upper bound",
        relation=accountant.relation,
        accountant="RDP" if isinstance(accountant, RDPAccountant) else "Fourier",
        method="pure DP: basic composition of the pure epsilons (RDP at order inf)",
        order=float("inf"),
    )


def warn_if_estimate(report, owner, already):
    """Warn (once per accountant: ``already`` is a one-element list flag) when a number is only an estimate."""
    if report.bound != "upper bound" and not already[0]:
        already[0] = True
        warnings.warn(
            f"{owner}: the Fourier accountant's value for this ledger is an estimate, not a proven upper bound "
            f"({report.method}); use method='rdp' for a proven bound.",
            DPLedgerWarning,
            stacklevel=3,
        )
