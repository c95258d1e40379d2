"""Stateful accounting over mechanisms: RDP accountant, conversions, calibration."""

from accountants.conversions import Conversion
from accountants.fourier_accountant import AccuracyError, FourierAccountant
from accountants.fourier_inversion import Bounds
from accountants.rdp_accountant import DEFAULT_ORDERS, RDPAccountant
from accountants.report import BoundKind, PrivacyReport

__all__ = [
    "RDPAccountant",
    "FourierAccountant",
    "AccuracyError",
    "Bounds",
    "Conversion",
    "PrivacyReport",
    "BoundKind",
    "DEFAULT_ORDERS",
]
from accountants.calibration import calibrate, calibrate_gaussian_sigma, calibrate_laplace_scale

__all__ += ["calibrate", "calibrate_gaussian_sigma", "calibrate_laplace_scale"]
from accountants.individual_filter import IndividualRenyiFilter, budget_for

__all__ += ["IndividualRenyiFilter", "budget_for"]
