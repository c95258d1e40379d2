"""Stateful accounting over mechanisms: RDP accountant, conversions, calibration."""

from dpledger.accountants.calibration import (
    calibrate,
    calibrate_gaussian_sigma,
    calibrate_laplace_scale,
    calibrate_to_risk,
)
from dpledger.accountants.conversions import Conversion
from dpledger.accountants.fourier_accountant import AccuracyError, FourierAccountant
from dpledger.accountants.fourier_inversion import Bounds
from dpledger.accountants.individual_filter import IndividualRenyiFilter, budget_for
from dpledger.accountants.pate_ptr import PATEPTR
from dpledger.accountants.ptr import PTRGuarantee, generalized_ptr_guarantee, hyperparameter_selection_guarantee
from dpledger.accountants.rdp_accountant import DEFAULT_ORDERS, RDPAccountant
from dpledger.accountants.report import BoundKind, PrivacyReport
from dpledger.accountants.risk import RiskReport, membership_advantage, risk_report, true_positive_rate_bound
from dpledger.accountants.stagewise_svt import StagewiseGuarantee, stagewise_svt_epsilon

__all__ = [
    "RDPAccountant",
    "FourierAccountant",
    "AccuracyError",
    "Bounds",
    "Conversion",
    "PrivacyReport",
    "BoundKind",
    "DEFAULT_ORDERS",
    "calibrate",
    "calibrate_gaussian_sigma",
    "calibrate_laplace_scale",
    "calibrate_to_risk",
    "RiskReport",
    "risk_report",
    "true_positive_rate_bound",
    "membership_advantage",
    "IndividualRenyiFilter",
    "budget_for",
    "PTRGuarantee",
    "generalized_ptr_guarantee",
    "hyperparameter_selection_guarantee",
    "PATEPTR",
    "StagewiseGuarantee",
    "stagewise_svt_epsilon",
]
