"""The neighbouring relation every privacy number refers to."""

import enum

__all__ = ["NeighboringRelation", "Direction"]


class NeighboringRelation(enum.Enum):
    """Which pairs of data sets count as neighbours.

    dpledger's RDP curves, subsampling bounds and accountants are stated for ``ADD_OR_REMOVE_ONE`` (the
    relation that goes with Poisson subsampling, thesis Sec 2.2); reports name it explicitly.
    """

    ADD_OR_REMOVE_ONE = "add or remove one record"


class Direction(enum.Enum):
    """One half of the add-or-remove-one relation, each with its own dominating pair (thesis Thm 3.3.5).

    A privacy profile under add-or-remove-one is the larger of the two directions' profiles.
    """

    REMOVE = "remove one record"
    ADD = "add one record"
