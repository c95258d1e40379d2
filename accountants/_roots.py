"""Root finding for the certified searches, without scipy.optimize (0.1-0.4 s to import on first use)."""

__all__ = ["brentq"]


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
