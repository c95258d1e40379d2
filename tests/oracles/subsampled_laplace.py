"""mpmath oracle: the privacy profile of the Poisson-subsampled Laplace mechanism, one and two runs, both directions.

With ``B = Laplace(0, 1)``, ``A = Laplace(t, 1)``, ``w(y) = 1 - g + g e^y`` and ``phi(y) = e^(-(t + y)/2) / 4`` on
``(-t, t)`` (``y = 2x - t``), the remove pair ``((1 - g) B + g A, B)`` has loss ``l0 = log w(-t)`` with mass ``w(-t) /
2``, ``l1 = log w(t)`` with mass ``e^-t w(t) / 2`` and ``r(y) = log w(y)`` with density ``phi(y) w(y)``; the add pair
``(B, (1 - g) B + g A)`` has losses ``-l0`` (mass 1/2), ``-l1`` (mass ``e^-t / 2``) and ``-r(y)`` (density
``phi``). One run's ``delta(c) = E[(1 - e^(c - L))_+]`` is in closed form (the continuous part integrates ``phi`` and
``phi e^y`` over the region where the loss exceeds ``c``); two runs condition on the first run's loss:
``delta_2(eps) = E[delta_1(eps - L_1)]``, the continuous part by mpmath quadrature split where the integrand has a
kink (``eps - r(y)`` at an atom of the second run).
"""

import mpmath as mp

DPS = 30


def _parts(t, g):
    t, g = mp.mpf(t), mp.mpf(g)
    w0, w1 = 1 - g + g * mp.exp(-t), 1 - g + g * mp.exp(t)
    return t, g, w0, w1


def _one_run(c, t, g, direction):
    """``delta_1(c)`` for one run (any real ``c``)."""
    t, g, w0, w1 = _parts(t, g)
    c = mp.mpf(c)
    ec = mp.exp(c)
    if direction == "remove":
        atoms = [(mp.log(w0), w0 / 2), (mp.log(w1), mp.exp(-t) * w1 / 2)]
        # the loss r(y) exceeds c where y > y_c
        inner = (ec - 1 + g) / g
        y_c = -t if inner <= 0 else min(max(mp.log(inner), -t), t)
        cont = (1 - g - ec) / 2 * (mp.exp(-(t + y_c) / 2) - mp.exp(-t)) + g / 2 * (1 - mp.exp((y_c - t) / 2))
    else:
        atoms = [(-mp.log(w0), mp.mpf(1) / 2), (-mp.log(w1), mp.exp(-t) / 2)]
        # the loss -r(y) exceeds c where w(y) < e^-c, y < y_d
        inner = (mp.exp(-c) - 1 + g) / g
        if inner <= 0:
            cont = mp.mpf(0)
        else:
            y_d = min(max(mp.log(inner), -t), t)
            cont = ((1 - ec * (1 - g)) / 2 * (1 - mp.exp(-(t + y_d) / 2))
                    - ec * g / 2 * (mp.exp((y_d - t) / 2) - mp.exp(-t)))
    total = sum(m * max(1 - mp.exp(c - loss), 0) for loss, m in atoms)
    return total + max(cont, 0)


def delta_direction(epsilon, t, g, count, direction, dps=DPS):
    """``delta(epsilon)`` of ``count`` (1 or 2) runs in one direction (``"remove"`` or ``"add"``)."""
    if count not in (1, 2):
        raise ValueError("the oracle composes one or two runs")
    with mp.workdps(dps):
        eps = mp.mpf(epsilon)
        if count == 1:
            return _one_run(eps, t, g, direction)
        tt, gg, w0, w1 = _parts(t, g)
        sign = 1 if direction == "remove" else -1
        if direction == "remove":
            atoms = [(mp.log(w0), w0 / 2), (mp.log(w1), mp.exp(-tt) * w1 / 2)]

            def density(y):
                return mp.exp(-(tt + y) / 2) / 4 * (1 - gg + gg * mp.exp(y))
        else:
            atoms = [(-mp.log(w0), mp.mpf(1) / 2), (-mp.log(w1), mp.exp(-tt) / 2)]

            def density(y):
                return mp.exp(-(tt + y) / 2) / 4
        total = sum(m * _one_run(eps - loss, t, g, direction) for loss, m in atoms)
        # kinks: eps - sign r(y) at the second run's atoms, i.e. r(y) = sign (eps - l)
        points = [-tt]
        for loss, _ in atoms:
            inner = (mp.exp(sign * (eps - loss)) - 1 + gg) / gg
            if inner > 0 and -tt < mp.log(inner) < tt:
                points.append(mp.log(inner))
        points = sorted(points) + [tt]
        total += mp.quad(lambda y: density(y) * _one_run(eps - sign * mp.log(1 - gg + gg * mp.exp(y)), t, g,
                                                         direction), points)
        return total


def delta(epsilon, t, g, count, dps=DPS):
    """The larger of the two directions' deltas (thesis Thm 3.3.5)."""
    return max(delta_direction(epsilon, t, g, count, d, dps) for d in ("remove", "add"))
