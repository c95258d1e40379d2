"""mpmath oracles for the characteristic function of the Poisson-subsampled Laplace mechanism.

Independent of the library (mpmath only). With ``w(y) = 1 - g + g e^y`` and ``z = a + iv``::

    F(z) = (1/2) w(-t)^z + (e^-t / 2) w(t)^z + G(z),      G(z) = int_(-t)^t e^(-(t + y)/2) / 4 w(y)^z dy.

Two independent ways to ``G``:

* :func:`g_closed_form` -- substituting ``x = c e^y`` with ``c = g / (1 - g)`` turns ``G`` into
  ``(1 - g)^z c^(1/2) / 4 int x^(-3/2) (1 + x)^z dx`` over ``[c e^-t, c e^t]``, and ``d/dx [x^p 2F1(-z, p; p + 1;
  -x) / p] = x^(p - 1) (1 + x)^z`` (for ``p > 0`` Euler's integral, DLMF 15.6.1, with ``s = x u`` gives
  ``int_0^x s^(p-1) (1 + s)^z ds``; both sides are analytic in ``p`` away from ``0, -1, ...`` and in ``x > 0``, so
  the derivative identity holds at ``p = -1/2``), so with ``H(x) = 2F1(-z, -1/2; 1/2; -x)``::

      G(z) = ((1 - g)^z / 2) (H(c e^-t) - e^-t H(c e^t)).

  ``H`` comes from mpmath's ``hyp2f1``; the difference can cancel (``g`` near 1, ``t`` small), so the working
  precision is raised until the difference keeps ``dps`` digits.
* :func:`g_quadrature` -- Gauss-Legendre rules (24 nodes) on pieces of ``[-t, t]`` at most 1 long on which
  ``(|a| + |v| / 2) r`` changes by at most 1 (``r = log w``: the integrand's modulus and phase each move by at most
  a factor ``e`` or 2 radians per piece, and its singularities lie at ``Im y = +-pi``, so the rule is exact to far
  beyond 30 digits of the integrand's scale).

Every parameter is converted to ``mpf`` before any arithmetic (``1 - g`` in float64 would move the oracle by
``1e-17``).

>>> import mpmath as mp
>>> with mp.workdps(40):  # G(0) = (1 - e^-t) / 2 and F(1) = 1 (both directions are probability measures)
...     bool(abs(g_closed_form(0, 0, 0.3, 2.0) - (1 - mp.exp(-2)) / 2) < 1e-38)
True
>>> with mp.workdps(40):
...     bool(abs(f_value(1, 0, 0.3, 2.0) - 1) < 1e-38 and abs(g_quadrature(1.5, 7, 0.3, 2.0)
...                                                     - g_closed_form(1.5, 7, 0.3, 2.0)) < 1e-38)
True
"""

import functools

import mpmath as mp
from mpmath.calculus.quadrature import GaussLegendre

__all__ = ["f_value", "g_closed_form", "g_quadrature", "g_value"]


def _w_log(g, y):
    return mp.log(1 - g + g * mp.exp(y))


def g_closed_form(a, v, g, t, max_dps=3000):
    """``G(a + iv)`` from the hypergeometric closed form (module docstring), to the current ``mp.dps`` digits of
    its own value (the working precision is raised past any cancellation, up to ``max_dps``)."""
    dps = mp.mp.dps
    work = dps + 10
    while True:
        with mp.workdps(work):
            g_, t_, z = mp.mpf(g), mp.mpf(t), mp.mpc(a, v)
            c = g_ / (1 - g_)
            h0 = mp.hyp2f1(-z, -0.5, 0.5, -c * mp.exp(-t_), maxterms=10**6)
            h1 = mp.exp(-t_) * mp.hyp2f1(-z, -0.5, 0.5, -c * mp.exp(t_), maxterms=10**6)
            diff = h0 - h1
            size = max(abs(h0), abs(h1))
            lost = 0 if size == 0 else (None if diff == 0 else int(mp.ceil(mp.log10(size / abs(diff)))))
            if lost is not None and lost + dps + 5 <= work:
                value = mp.exp(z * mp.log1p(-g_)) / 2 * diff
                break
        if work >= max_dps:
            raise ArithmeticError(f"the closed form of G cancels beyond {max_dps} digits at {(a, v, g, t)}")
        work = min(max_dps, max(2 * work, (lost or work) + dps + 10))
    return +value


@functools.cache
def _nodes(prec):
    return GaussLegendre(mp.mp).calc_nodes(4, prec)


def g_quadrature(a, v, g, t):
    """``G(a + iv)`` by 24-node Gauss-Legendre rules on pieces (module docstring), at the current ``mp.dps``."""
    g_, t_, z = mp.mpf(g), mp.mpf(t), mp.mpc(a, v)
    speed = abs(mp.mpf(a)) + abs(mp.mpf(v)) / 2
    units = int(mp.ceil(2 * t_))
    grid = [-t_ + 2 * t_ * k / units for k in range(units)] + [t_]
    points = [grid[0]]
    for lo, hi in zip(grid[:-1], grid[1:]):
        pieces = int(mp.ceil(speed * (_w_log(g_, hi) - _w_log(g_, lo)))) + 1
        points += [lo + (hi - lo) * j / pieces for j in range(1, pieces)] + [hi]
    nodes = _nodes(mp.mp.prec)
    total = []
    for lo, hi in zip(points[:-1], points[1:]):
        half, mid = (hi - lo) / 2, (hi + lo) / 2
        total.append(half * mp.fsum(wt * mp.exp(-(t_ + y) / 2 + z * _w_log(g_, y))
                                    for y, wt in ((mid + half * x, wt) for x, wt in nodes)))
    return mp.fsum(total) / 4


def g_value(a, v, g, t):
    """``G(a + iv)``: the closed form, or the quadrature where mpmath's series do not converge."""
    try:
        return g_closed_form(a, v, g, t)
    except (mp.libmp.NoConvergence, ArithmeticError):
        with mp.workdps(mp.mp.dps + 10):
            value = g_quadrature(a, v, g, t)
        return +value


def f_value(a, v, g, t, g_part=None):
    """``F(a + iv)``: the two atoms in closed form plus ``g_part`` (:func:`g_value` when not given)."""
    if g_part is None:
        g_part = g_value(a, v, g, t)
    with mp.workdps(mp.mp.dps + 10):
        g_, t_, z = mp.mpf(g), mp.mpf(t), mp.mpc(a, v)
        atoms = (mp.exp(z * _w_log(g_, -t_)) + mp.exp(-t_ + z * _w_log(g_, t_))) / 2
        value = atoms + g_part
    return +value
