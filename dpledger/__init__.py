"""dpledger: differential-privacy accounting you can trust, and private prediction with a privacy audit.

The main names, from the three layers (``dpledger.mechanisms`` -> ``dpledger.accountants`` ->
``dpledger.predict``; the ``dpledger`` command sits on top)::

    from dpledger import GaussianMechanism, PoissonSubsampled, RDPAccountant, FourierAccountant

The predictors (``IndKNNClassifier``, ``PrivateKNNClassifier``) need the ``predict`` extra (torch and
scikit-learn); they load on first use, so ``import dpledger`` and the accountants never import torch.
"""

from importlib import metadata as _metadata

from dpledger.accountants import (
    AccuracyError,
    BoundKind,
    Bounds,
    FourierAccountant,
    IndividualRenyiFilter,
    PrivacyReport,
    RDPAccountant,
    calibrate,
    calibrate_gaussian_sigma,
)
from dpledger.mechanisms import (
    Composed,
    DiscretePairMechanism,
    GaussianMechanism,
    LaplaceMechanism,
    Mechanism,
    PoissonSubsampled,
    PureDPMechanism,
    RandomizedResponse,
    SelfComposed,
    ZCDPMechanism,
)

try:
    __version__ = _metadata.version("dpledger")
except _metadata.PackageNotFoundError:  # running from a source tree that is not installed
    __version__ = "unknown"

_PREDICTORS = ("IndKNNClassifier", "PrivateKNNClassifier")

__all__ = [
    "AccuracyError",
    "BoundKind",
    "Bounds",
    "Composed",
    "DiscretePairMechanism",
    "FourierAccountant",
    "GaussianMechanism",
    "IndividualRenyiFilter",
    "LaplaceMechanism",
    "Mechanism",
    "PoissonSubsampled",
    "PrivacyReport",
    "PureDPMechanism",
    "RDPAccountant",
    "RandomizedResponse",
    "SelfComposed",
    "ZCDPMechanism",
    "calibrate",
    "calibrate_gaussian_sigma",
    "__version__",
    *_PREDICTORS,
]


def __getattr__(name):
    """The predictors, imported on first use (they need torch: the ``predict`` extra)."""
    if name in _PREDICTORS:
        from dpledger import predict

        return getattr(predict, name)
    raise AttributeError(f"module 'dpledger' has no attribute {name!r}")
