"""The neighbouring relation every privacy number refers to."""

import enum

__all__ = ["NeighboringRelation"]


class NeighboringRelation(enum.Enum):
    """Which pairs of data sets count as neighbours.

    dpledger's RDP curves, subsampling bounds and accountants are stated for ``ADD_OR_REMOVE_ONE`` (the
    relation that goes with Poisson subsampling, thesis Sec 2.2); reports name it explicitly.
    """

    ADD_OR_REMOVE_ONE = "add or remove one record"
