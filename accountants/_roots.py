"""Root finding for the certified searches, without scipy.optimize (0.1-0.4 s to import on first use)."""

import math

__all__ = ["bracket_crossing", "brentq", "narrow_crossing"]


def brentq(f, a, b, *, xtol=2e-12, rtol=8.881784197001252e-16, maxiter=200):
    """A root of ``f`` in ``[a, b]`` (``f(a)``, ``f(b)`` of opposite signs, or one of them 0) by Brent's method
    (Brent 1973, ch. 4: inverse quadratic interpolation or secant steps, bisection whenever they would not shrink
    the bracket fast enough), to within ``xtol + rtol |x|``. Written here so that the Fourier searches do not
    import scipy.optimize (0.1-0.4 s on first use). Only where a root lies matters for tightness: every
    returned epsilon is checked by the callers against the certified delta."""
    fa, fb = f(a), f(b)
    if fa == 0.0:
        return a
    if fb == 0.0:
        return b
    if (fa > 0) == (fb > 0):
        raise ValueError("f(a) and f(b) must have different signs")
    c, fc, d, e = a, fa, b - a, b - a
    for _ in range(maxiter):
        if (fb > 0) == (fc > 0):  # keep the root between b and c
            c, fc, d, e = a, fa, b - a, b - a
        if abs(fc) < abs(fb):  # b is the best estimate
            a, b, c = b, c, b
            fa, fb, fc = fb, fc, fb
        tol = 0.5 * (xtol + rtol * abs(b))
        m = 0.5 * (c - b)
        if abs(m) <= tol or fb == 0.0:
            return b
        if abs(e) >= tol and abs(fa) > abs(fb):
            s = fb / fa
            if a == c:  # secant
                p, q = 2.0 * m * s, 1.0 - s
            else:  # inverse quadratic interpolation
                q, r = fa / fc, fb / fc
                p = s * (2.0 * m * q * (q - r) - (b - a) * (r - 1.0))
                q = (q - 1.0) * (r - 1.0) * (s - 1.0)
            if p > 0:
                q = -q
            p = abs(p)
            if 2.0 * p < min(3.0 * m * q - abs(tol * q), abs(e * q)):
                e, d = d, p / q
            else:
                d = e = m
        else:
            d = e = m
        a, fa = b, fb
        b += d if abs(d) > tol else (tol if m > 0 else -tol)
        fb = f(b)
    return b


def bracket_crossing(evaluate, delta, start=1.0, below=None, tolerance=1e-13):
    """``(lo, hi)`` with ``evaluate(lo) > delta >= evaluate(hi)`` (``lo = hi = 0`` if ``evaluate(0) <= delta``;
    ``hi = inf`` if no finite point meets it), ``hi - lo <= tolerance * hi``, for a non-increasing ``evaluate``.

    The bracket is grown from ``[0, start]`` and then narrowed by :func:`narrow_crossing`. ``below``, a point under
    ``start`` where the crossing probably lies between them (the lower curve's, just under the upper curve's
    crossing): tried first, as the bracket's lower end when ``evaluate`` exceeds ``delta`` there (a few evaluations
    instead of a dozen)."""
    lo = None
    if below is not None and 0.0 < below < start:
        f_below = evaluate(below)
        if f_below > delta:
            lo, f_lo, hi = below, f_below, float(start)
            f_hi = evaluate(hi)
    if lo is None:
        f0 = evaluate(0.0)
        if f0 <= delta:
            return 0.0, 0.0
        lo, f_lo = 0.0, f0
        hi = float(start)
        f_hi = evaluate(hi)
    while not f_hi <= delta:  # a NaN proves nothing: keep growing, and only a value above delta moves lo
        if not math.isnan(f_hi):
            lo, f_lo = hi, f_hi
        hi = hi * 2.0
        if hi > 1e300:
            return lo, math.inf
        f_hi = evaluate(hi)
    return narrow_crossing(evaluate, delta, lo, f_lo, hi, f_hi, tolerance)


def narrow_crossing(evaluate, delta, lo, f_lo, hi, f_hi, tolerance):
    """``(lo, hi)`` narrowed to ``hi - lo <= tolerance * hi`` (or as far as the floats go), keeping ``evaluate(lo) >
    delta >= evaluate(hi)`` for a non-increasing ``evaluate``: every end it moves is one it evaluated on that side.
    Given ``f_lo``, ``f_hi``, the values at the ends (``f_hi`` above ``delta`` is allowed: the upper end then only
    moves to a point found at most ``delta``, and stays where it is if none is).

    Secant steps on ``log evaluate - log delta`` (nearly linear near the crossing), overshooting after two
    steps on one side, a bisection after two steps that each shrank the bracket by less than half, and every
    secant landing on an end moved just inside it (twice at most): a dozen evaluations where bisection from ``[0,
    1]`` took about fifty. A NaN value proves nothing and ends the search with the ends found so far."""
    log_delta = math.log(delta)

    def gap(value):
        return math.log(max(value, 1e-300)) - log_delta

    g_lo, g_hi, kept, slow, nudges = gap(f_lo), gap(f_hi), 0, 0, 2
    while hi - lo > tolerance * hi:
        width = hi - lo
        x = hi - g_hi * width / (g_hi - g_lo) if g_hi != g_lo and math.isfinite(g_hi - g_lo) else 0.5 * (lo + hi)
        # after two steps on one side, overshoot by the last correction so that the next lands on the other side
        if kept == -1:
            x = min(lo + 2.0 * (x - lo), 0.5 * (x + hi))
        elif kept == 1:
            x = max(hi - 2.0 * (hi - x), 0.5 * (lo + x))
        # where the secant lands on an end or within the tolerance of it (there the evaluated curve crosses delta
        # within its rounding), a step just inside that end closes the bracket instead of a run of bisections
        # creeping up to it (one run of sigma 2, q 1e-4: 23 evaluations -> 11); at most twice, since on a curve
        # the secant models badly (nearly flat) such steps would only nibble at the bracket
        margin = 0.4 * tolerance * hi
        if nudges and math.isfinite(x) and not lo + margin <= x <= hi - margin:
            x, nudges = min(max(x, lo + margin), hi - margin), nudges - 1
        if slow >= 2 or not lo < x < hi:
            x, slow = 0.5 * (lo + hi), 0
        if x in (lo, hi):
            break
        value = evaluate(x)
        if math.isnan(value):
            break  # a NaN proves nothing: the ends found so far stand
        if value <= delta:
            hi, g_hi, kept = x, gap(value), (1 if kept >= 0 else 0)
        else:
            lo, g_lo, kept = x, gap(value), (-1 if kept <= 0 else 0)
        slow = slow + 1 if hi - lo > 0.5 * width else 0
    return lo, hi
