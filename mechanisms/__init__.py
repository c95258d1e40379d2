"""Immutable mechanism descriptions and combinators, each able to report its privacy curves.

Every mechanism has ``rdp(orders)``: a float64 Renyi-DP upper bound under the add-or-remove-one relation,
vectorised over real orders in (1, inf] (inf meaning pure DP), ``+inf`` where no bound exists.
"""

from mechanisms import subsampled_rdp
from mechanisms.base import Mechanism
from mechanisms.composition import Composed, SelfComposed
from mechanisms.custom_pairs import CharacteristicFunctionMechanism, ContinuousPairMechanism, DiscretePairMechanism
from mechanisms.errors import (
    DPLedgerError,
    DPLedgerWarning,
    EstimateWarning,
    MissingCapabilityError,
    NumericalError,
    SearchRangeError,
)
from mechanisms.gaussian import GaussianMechanism
from mechanisms.laplace import LaplaceMechanism
from mechanisms.noisy_aggregation import NoisyArgmax, TauClippedVotes, tau_clip
from mechanisms.noisy_screening import (
    DataDependentScreening,
    NoisyScreening,
    SubsampledScreening,
    subsampled_screening,
)
from mechanisms.non_private import NonPrivateMechanism
from mechanisms.randomized_response import KaryRandomizedResponse, PureDPMechanism, RandomizedResponse
from mechanisms.rdp_curve import RDPCurveMechanism, from_rdp_curve
from mechanisms.relations import Direction, NeighboringRelation
from mechanisms.subsampled import PoissonSubsampled
from mechanisms.zcdp import ApproximateZCDPCurve, CustomRDPMechanism, ZCDPMechanism

__all__ = [
    "Mechanism",
    "NeighboringRelation",
    "Direction",
    "GaussianMechanism",
    "LaplaceMechanism",
    "RandomizedResponse",
    "PureDPMechanism",
    "ZCDPMechanism",
    "CustomRDPMechanism",
    "DiscretePairMechanism",
    "ContinuousPairMechanism",
    "CharacteristicFunctionMechanism",
    "KaryRandomizedResponse",
    "NonPrivateMechanism",
    "RDPCurveMechanism",
    "from_rdp_curve",
    "ApproximateZCDPCurve",
    "PoissonSubsampled",
    "SelfComposed",
    "Composed",
    "NoisyScreening",
    "DataDependentScreening",
    "SubsampledScreening",
    "subsampled_screening",
    "NoisyArgmax",
    "TauClippedVotes",
    "tau_clip",
    "subsampled_rdp",
    "DPLedgerError",
    "DPLedgerWarning",
    "EstimateWarning",
    "MissingCapabilityError",
    "NumericalError",
    "SearchRangeError",
]
