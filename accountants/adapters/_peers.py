"""Optional peers (Opacus, dp_accounting, autodp) are imported only when an adapter needs them."""

import importlib

from dpledger.mechanisms.errors import DPLedgerError

__all__ = ["MissingPeerError", "require", "PIP_NAMES"]

#: import name -> the ``pip install`` argument that provides it.
PIP_NAMES = {
    "opacus": "opacus",
    "dp_accounting": "dp-accounting",
    "autodp": "autodp",
}


class MissingPeerError(DPLedgerError, ImportError):
    """An adapter's peer library is not installed; the message gives the pip command."""


def require(module, what):
    """Import ``module`` (a peer library) or raise :class:`MissingPeerError` naming ``what`` needs it.

    Examples
    --------
    >>> require("math", "this example").__name__
    'math'
    """
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        top = module.split(".")[0]
        pip = PIP_NAMES.get(top, top)
        raise MissingPeerError(
            f"{what} needs the optional package {top!r}, which is not installed ({exc}); install it with "
            f"`pip install {pip}` (or `pip install dpledger[interop]` for every peer)."
        ) from exc
