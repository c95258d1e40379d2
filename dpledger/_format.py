"""Printing privacy numbers without understating them, and JSON without non-standard tokens.

An upper bound printed with fewer digits is rounded *up* (5.6318139 -> 5.63182), a lower bound *down*, so a
shortened number is still a valid bound; estimates are rounded to nearest.

Examples
--------
>>> upper(5.6318139), lower(5.6318139), upper(float("inf"))
('5.63182', '5.63181', 'inf')
>>> to_json({"order": float("inf"), "epsilon": 0.5})
'{\\n  "order": "inf",\\n  "epsilon": 0.5\\n}'
"""

import decimal
import json
import math

__all__ = ["upper", "lower", "nearest", "to_json", "jsonable"]

DIGITS = 6


def _round(x, digits, rounding):
    if not math.isfinite(x):
        return "inf" if x > 0 else ("-inf" if x < 0 else "nan")
    if x == 0.0:
        return "0"
    d = decimal.Decimal(x)  # exact binary value
    exponent = d.adjusted() - digits + 1
    q = d.quantize(decimal.Decimal(1).scaleb(exponent), rounding=rounding)
    return f"{float(q):.{digits}g}" if _exact(q, digits) else str(q.normalize())


def _exact(q, digits):
    return decimal.Decimal(f"{float(q):.{digits}g}") == q


def upper(x, digits=DIGITS):
    """``x`` with ``digits`` significant digits, rounded towards +inf (for upper bounds): the printed number,
    read back as a float, is never below ``x``."""
    x = float(x)
    text = _round(x, digits, decimal.ROUND_HALF_EVEN)
    return text if float(text) >= x else _round(x, digits, decimal.ROUND_CEILING)


def lower(x, digits=DIGITS):
    """``x`` with ``digits`` significant digits, rounded towards -inf (for lower bounds): the printed number,
    read back as a float, is never above ``x``."""
    x = float(x)
    text = _round(x, digits, decimal.ROUND_HALF_EVEN)
    return text if float(text) <= x else _round(x, digits, decimal.ROUND_FLOOR)


def nearest(x, digits=DIGITS):
    """``x`` with ``digits`` significant digits, rounded to nearest (for estimates and inputs)."""
    return _round(float(x), digits, decimal.ROUND_HALF_EVEN)


def jsonable(value):
    """Replace non-finite floats by the strings ``"inf"``, ``"-inf"``, ``"nan"`` (standard JSON has none)."""
    if isinstance(value, dict):
        return {k: jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [jsonable(v) for v in value]
    if isinstance(value, float) and not math.isfinite(value):
        return nearest(value)
    return value


def to_json(value):
    """Standard JSON (``allow_nan=False``), indented."""
    return json.dumps(jsonable(value), indent=2, allow_nan=False)
