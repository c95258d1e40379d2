"""The ``Mechanism`` interface: an immutable description of what was run, able to report its privacy curves."""

import abc

import numpy as np

from mechanisms import _validate
from mechanisms.errors import MissingCapabilityError, NumericalError

__all__ = ["Mechanism"]


class Mechanism(abc.ABC):
    """An immutable description of a randomized algorithm, under the add-or-remove-one relation.

    Subclasses are frozen, slotted dataclasses; they implement ``_rdp`` on a validated 1-D float64 array of
    orders in (1, inf]. The public ``rdp`` validates, reshapes and checks the result for NaN.
    """

    __slots__ = ()

    #: Whether every pair of neighbouring outputs has non-negative Pearson-Vajda chi^l divergences at all odd
    #: l >= 3 (thesis condition (2.2)), so that the tight subsampling bound of thesis Thm 2.3.4 applies. Only
    #: set to True with a proof (thesis Prop 2.3.6 proves it for the Gaussian and Laplace mechanisms).
    satisfies_pearson_vajda = False

    def rdp(self, orders):
        """Renyi-DP upper bound ``epsilon(alpha)`` at each order, under add-or-remove-one.

        Parameters
        ----------
        orders : float or array_like of float
            Orders alpha in (1, inf]; ``inf`` means pure DP.

        Returns
        -------
        numpy.ndarray of float64
            Same shape as ``orders`` (a numpy scalar for a scalar input); ``+inf`` where no RDP bound exists.
        """
        arr = _validate.orders_array(orders, type(self).__name__)
        flat = arr.reshape(-1)
        out = np.asarray(self._rdp(flat), dtype=np.float64).reshape(flat.shape)
        if np.isnan(out).any():
            raise NumericalError(f"{self!r}.rdp produced NaN at orders {flat[np.isnan(out)][:5].tolist()}.")
        return out.reshape(arr.shape)[()]

    @abc.abstractmethod
    def _rdp(self, orders):
        """RDP at a validated 1-D float64 array of orders in (1, inf]."""

    def pure_epsilon(self):
        """The pure-DP epsilon (the RDP at order inf); raises if the mechanism is not pure DP."""
        eps = float(self._rdp(np.array([np.inf]))[0])
        if not np.isfinite(eps):
            raise MissingCapabilityError(f"{self!r} satisfies no pure (epsilon, 0)-DP guarantee.")
        return eps
