"""The subsampled Laplace continuous part's profile (:func:`mechanisms.subsampled_laplace_cf.continuous_profile`)
against mpmath quadrature of its definition, at random points and at the branch ends."""

import math

import mpmath as mp
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dpledger.mechanisms import subsampled_laplace_cf as slc


def exact_profile(c, g, t, direction, dps=40):
    """``int (1 - e^(c - L))_+ dC(L)`` by quadrature over ``y`` (module docstring of the oracle's subject)."""
    with mp.workdps(dps):
        g, t, c = mp.mpf(g), mp.mpf(t), mp.mpf(c)

        def phi(y):
            return mp.exp(-(t + y) / 2) / 4

        def w(y):
            return 1 - g + g * mp.exp(y)

        if direction == "remove":
            inner = (mp.exp(c) - 1 + g) / g
            cut = mp.log(inner) if inner > 0 else -t

            def f(y):
                return phi(y) * max(w(y) - mp.exp(c), 0)
        else:
            inner = (mp.exp(-c) - 1 + g) / g
            cut = mp.log(inner) if inner > 0 else -t

            def f(y):
                return phi(y) * max(1 - mp.exp(c) * w(y), 0)
        points = sorted({-t, t} | ({cut} if -t < cut < t else set()))
        return mp.quad(f, points)


def _contains(c, g, t, direction):
    value, rel = slc.continuous_profile(np.array([c]), g, t, direction)
    exact = exact_profile(c, g, t, direction)
    assert float(value[0]) * (1 - float(rel[0])) <= exact <= float(value[0]) * (1 + float(rel[0])), (
        c, g, t, direction, value, rel, exact)
    return float(rel[0])


@settings(max_examples=60, deadline=None)
@given(log_g=st.floats(-6.0, -0.001), log_t=st.floats(-2.0, 1.5), where=st.floats(-0.5, 1.2),
       direction=st.sampled_from(["remove", "add"]))
def test_profile_contains_the_quadrature(log_g, log_t, where, direction):
    g, t = 10.0 ** log_g, 10.0 ** log_t
    l1, l0 = slc.atoms(g, t)["remove"][:2]
    lo, hi = (l0, l1) if direction == "remove" else (-l1, -l0)
    c = lo + where * (hi - lo)
    rel = _contains(c, g, t, direction)
    if 0.01 < where < 0.99:  # inside the branch: a few hundred ulps at most
        assert rel < 1e-11


@pytest.mark.parametrize("g, t", [(1e-4, 0.05), (0.3, 1.0), (0.999, 8.0), (0.02, 12.0)])
@pytest.mark.parametrize("direction", ["remove", "add"])
def test_profile_at_and_around_the_branch_ends(g, t, direction):
    l1, l0 = slc.atoms(g, t)["remove"][:2]
    ends = (l0, l1) if direction == "remove" else (-l1, -l0)
    for end in ends:
        for c in (float(np.nextafter(end, -math.inf)), end, float(np.nextafter(end, math.inf)),
                  end - 1e-9 * (abs(end) + 1e-3), end + 1e-9 * (abs(end) + 1e-3)):
            _contains(c, g, t, direction)
    # non-increasing, 0 at the top, the whole continuous mass times (1 - e^c) below the bottom
    grid = np.linspace(ends[0] - 1.0, ends[1] + 0.1, 401)
    values, _ = slc.continuous_profile(grid, g, t, direction)
    assert np.all(np.diff(values) <= 1e-15 * values[:-1]) and values[-1] == 0.0
    assert values[0] == pytest.approx(0.5 * -math.expm1(-t) * -math.expm1(grid[0]), rel=1e-14)


def test_profile_refuses_an_unknown_direction():
    with pytest.raises(ValueError, match="direction"):
        slc.continuous_profile(np.zeros(1), 0.1, 1.0, "both")
