"""Validation at the boundary: one message shape for every parameter.

Messages read: "`sampling_probability` of PoissonSubsampled must be in [0, 1]; got 1.5." NaN fails every
check, booleans are not numbers, and nothing is validated with ``assert``.
"""

import numbers
import operator

import numpy as np

__all__ = [
    "real",
    "positive",
    "nonnegative",
    "probability",
    "positive_int",
    "orders_array",
    "open_unit_interval",
]


def real(value, name, owner, *, allow_inf=False):
    """Return ``value`` as a float after checking it is a real number (finite unless ``allow_inf``)."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Real):
        raise TypeError(f"`{name}` of {owner} must be a real number; got {type(value).__name__} {value!r}.")
    x = float(value)
    if np.isnan(x):
        raise ValueError(f"`{name}` of {owner} must be a number; got nan.")
    if np.isinf(x) and not allow_inf:
        raise ValueError(f"`{name}` of {owner} must be finite; got {x}.")
    return x


def positive(value, name, owner, *, allow_inf=False):
    """A real number > 0."""
    x = real(value, name, owner, allow_inf=allow_inf)
    if not x > 0:
        raise ValueError(f"`{name}` of {owner} must be positive; got {x}.")
    return x


def nonnegative(value, name, owner, *, allow_inf=False):
    """A real number >= 0."""
    x = real(value, name, owner, allow_inf=allow_inf)
    if not x >= 0:
        raise ValueError(f"`{name}` of {owner} must be non-negative; got {x}.")
    return x


def probability(value, name, owner):
    """A real number in the closed interval [0, 1]."""
    x = real(value, name, owner)
    if not 0.0 <= x <= 1.0:
        raise ValueError(f"`{name}` of {owner} must be in [0, 1]; got {x}.")
    return x


def open_unit_interval(value, name, owner):
    """A real number in the open interval (0, 1), as ``delta`` must be."""
    x = real(value, name, owner)
    if not 0.0 < x < 1.0:
        raise ValueError(f"`{name}` of {owner} must be in (0, 1); got {x}.")
    return x


def integer(value, name, owner, *, minimum):
    """An integer >= ``minimum`` (numpy integers accepted, floats and booleans refused)."""
    if isinstance(value, (bool, np.bool_)):
        raise TypeError(f"`{name}` of {owner} must be an integer; got bool {value!r}.")
    try:
        n = operator.index(value)
    except TypeError:
        raise TypeError(f"`{name}` of {owner} must be an integer; got {type(value).__name__} {value!r}.") from None
    if n < minimum:
        bound = "non-negative" if minimum == 0 else f"at least {minimum}"
        raise ValueError(f"`{name}` of {owner} must be {bound}; got {n}.")
    return n


def positive_int(value, name, owner):
    """An integer >= 1 (numpy integers accepted, floats and booleans refused)."""
    return integer(value, name, owner, minimum=1)


def with_replacement_fields(mechanism, owner):
    """Validate and normalise, in place, the ``batch_size`` (>= 0), ``dataset_size`` (>= 1) and ``max_repeats``
    (None, or >= 1, capped at ``max(batch_size, 1)``) fields of a frozen dataclass for sampling with
    replacement."""
    n = integer(mechanism.dataset_size, "dataset_size", owner, minimum=1)
    b = integer(mechanism.batch_size, "batch_size", owner, minimum=0)
    object.__setattr__(mechanism, "dataset_size", n)
    object.__setattr__(mechanism, "batch_size", b)
    if mechanism.max_repeats is not None:
        r = integer(mechanism.max_repeats, "max_repeats", owner, minimum=1)
        object.__setattr__(mechanism, "max_repeats", min(r, max(b, 1)))


def orders_array(orders, owner):
    """Orders as a float64 array of any shape, every entry a real number in (1, inf]."""
    if isinstance(orders, (bool, np.bool_, str, bytes)):
        raise TypeError(f"`orders` of {owner} must be real numbers; got {type(orders).__name__} {orders!r}.")
    raw = np.asarray(orders) if not isinstance(orders, np.ndarray) else orders
    if raw.dtype.kind == "b":
        raise TypeError(f"`orders` of {owner} must be real numbers; got booleans.")
    if raw.dtype.kind not in "iuf":
        raise TypeError(f"`orders` of {owner} must be real numbers; got {raw.dtype} values {orders!r}.")
    try:
        arr = np.asarray(orders, dtype=np.float64)
    except (TypeError, ValueError):
        raise TypeError(f"`orders` of {owner} must be real numbers; got {orders!r}.") from None
    if np.asarray(orders).dtype == np.bool_:
        raise TypeError(f"`orders` of {owner} must be real numbers; got booleans.")
    if np.isnan(arr).any():
        raise ValueError(f"`orders` of {owner} must be numbers; got nan.")
    if (arr <= 1.0).any():
        bad = arr[arr <= 1.0].flat[0]
        raise ValueError(f"`orders` of {owner} must be > 1 (or inf); got {bad}.")
    return arr
