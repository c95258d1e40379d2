"""Exceptions and warnings shared by every dpledger package.

``mechanisms`` is the bottom layer, so the package-wide error classes live here and ``accountants`` and
``predict`` re-use them.
"""

__all__ = [
    "DPLedgerError",
    "MissingCapabilityError",
    "NumericalError",
    "SearchRangeError",
    "DPLedgerWarning",
    "EstimateWarning",
]


class DPLedgerError(Exception):
    """Base class of every error dpledger raises on purpose (besides ``ValueError`` / ``TypeError``)."""


class MissingCapabilityError(DPLedgerError):
    """A mechanism was asked for a representation it does not have (for example pure DP of a Gaussian)."""


class NumericalError(DPLedgerError):
    """A computation produced NaN or could not reach its stated accuracy; the message says what was tried.

    ``proven``: bounds ``(lower, estimate, upper)`` certified before the failure, where the raiser had some (the
    Fourier searches attach them: ``accountants._fourier_search.max_epsilon_bounds``), else ``None``."""

    proven = None


class SearchRangeError(DPLedgerError, ValueError):
    """A search (calibration, order optimisation) found no answer inside the range it was allowed to search."""


class DPLedgerWarning(UserWarning):
    """Warnings emitted by dpledger."""


class EstimateWarning(DPLedgerWarning):
    """A getter that returns a bare number returned an estimate, not a proven bound (its report says which part
    is estimated)."""
