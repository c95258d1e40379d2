"""The soft split of the subsampled Gaussian's enclosure at high frequencies (mechanisms/subsampled_gaussian_cf.py,
"Soft split"; the upper part's bound and the jump at the cut in mechanisms/subsampled_gaussian_decay.py).

Oracles: mpmath's quadrature of the upper part ``W(z) = int_(-inf)^cut phi(x) Phi((x - c)/w) B(x)^z dx`` and of the
jump term ``f(cut) / D``; at frequencies beyond mpmath's reach, the whole quadrature of the same enclosure with the
split turned off (itself checked against mpmath by test_subsampled_gaussian_cf.py and test_subsampled_body.py):
the two enclosures must overlap.
"""

import math

import mpmath as mp
import numpy as np
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st
from scipy import special

from dpledger.mechanisms import subsampled_gaussian_cf as cf
from dpledger.mechanisms import subsampled_gaussian_decay as decay

U = 2.0**-53


def test_log_ndtr_is_within_the_error_the_weights_charge():
    """The weights' rounding (cf._log_weight_upper, cf._term_errors) charges 32u (1 + |log Phi|) for scipy's
    log_ndtr; it is within 8u of it on the arguments a split meets (and far beyond)."""
    rng = np.random.default_rng(7)
    t = np.concatenate([rng.uniform(-40.0, 80.0, 300), rng.uniform(-10.0, 10.0, 300), [-38.5, -9.0, 0.0, 9.0, 70.0]])
    with mp.workdps(40):
        for x in t:
            exact = mp.log(mp.ncdf(mp.mpf(float(x))))
            error = abs(mp.mpf(float(special.log_ndtr(x))) - exact)
            assert error <= 8.0 * U * (1 + abs(exact)), x


def test_the_upper_weight_bound_is_an_upper_bound():
    x = np.linspace(-20.0, 20.0, 401)
    bound = cf._log_weight_upper(x, 1.3, 0.25, 1.0)
    with mp.workdps(40):
        for xi, b in zip(x, bound):
            assert mp.log(mp.ncdf((mp.mpf(float(xi)) - mp.mpf(1.3)) / mp.mpf(0.25))) <= b


def _w_oracle(a, v, g, mu, centre, softness, cut):
    """``W(a + iv)`` by mpmath (tanh-sinh on pieces over which the phase ``v r`` moves by at most ~1.5 radians and
    the log modulus by at most ~2), at 20 digits."""
    top = cut if math.isfinite(cut) else max(a * mu, 0.0) + 30.0
    bottom = min(a * mu, 0.0) - 30.0
    grid = np.linspace(bottom, top, 40001)
    r = np.logaddexp(np.log1p(-g), np.log(g) + mu * grid - 0.5 * mu * mu)
    log_f = -0.5 * grid**2 + a * r + special.log_ndtr((grid - centre) / softness)
    inside = np.flatnonzero(log_f >= log_f.max() - 90.0)
    grid, r, log_f = (arr[max(inside[0] - 1, 0):inside[-1] + 2] for arr in (grid, r, log_f))
    moves = np.concatenate([[0.0], np.cumsum(np.abs(np.diff(log_f)) + abs(v) * np.abs(np.diff(r)))])
    points = np.unique(np.concatenate([[grid[0]], grid[np.flatnonzero(np.diff(np.floor(moves / 1.5)) > 0) + 1],
                                       [grid[-1]]]))
    with mp.workdps(20):
        gm, mum, z = mp.mpf(g), mp.mpf(mu), mp.mpc(a, v)
        shift = mp.mpf(float(log_f.max()))

        def f(x):
            return (mp.exp(z * mp.log(1 - gm + gm * mp.exp(mum * x - mum * mum / 2)) - x * x / 2 - shift)
                    * mp.ncdf((x - centre) / softness))

        return mp.quad(f, [mp.mpf(float(p)) for p in points]) * mp.exp(shift) / mp.sqrt(2 * mp.pi)


def _jump_oracle(a, v, g, mu, cut):
    with mp.workdps(30):
        gm, mum, c, z = mp.mpf(g), mp.mpf(mu), mp.mpf(cut), mp.mpc(a, v)
        b = 1 - gm + gm * mp.exp(mum * c - mum * mum / 2)
        slope = mum * gm * mp.exp(mum * c - mum * mum / 2) / b
        return mp.npdf(c) * mp.exp(z * mp.log(b)) / (-c + z * slope)


@pytest.mark.parametrize("a, v, g, sigma, centre, cut", [
    pytest.param(3.0, 80.0, 1e-3, 0.6, 2.0, math.inf, marks=pytest.mark.long_oracle),  # 19 s of mpmath
    (1.0, 40.0, 0.05, 1.0, 1.5, math.inf),
    pytest.param(-2.0, 60.0, 1e-2, 0.8, 2.5, math.inf, marks=pytest.mark.long_oracle),  # 8 s of mpmath
    (6.0, 300.0, 1e-4, 0.6, 3.0, 5.0),
    (3.5, 250.0, 1e-3, 0.6, 2.5, 4.5),
    (-1.5, 200.0, 1e-2, 1.0, 1.0, 3.5),
])
def test_the_upper_part_bound_holds(a, v, g, sigma, centre, cut):
    """``|W| <= exp(bound)`` (no cut, or the side bounded whole), and with the jump removed ``|W - J| <=
    exp(bound)`` up to ``v_max``; each at the frequency the bound is for and at a higher one."""
    mu, w = 1.0 / sigma, cf._SOFTNESS
    for frequency in (v, 1.7 * v):
        exact = _w_oracle(a, frequency, g, mu, centre, w, cut)
        bound = decay.log_soft_upper_sup(a, v, g, mu, centre, w, cut=cut)
        assert abs(exact) <= mp.exp(bound), (frequency, exact, bound)
        if math.isfinite(cut):
            jump = _jump_oracle(a, frequency, g, mu, cut)
            bound = decay.log_soft_upper_sup(a, v, g, mu, centre, w, cut=cut, v_max=2.0 * v)
            assert abs(exact - jump) <= mp.exp(bound), (frequency, exact, jump, bound)


def test_removing_the_jump_is_what_makes_the_bound_small():
    """The jump is most of the upper part at high frequencies: the bound without it is far below the one with it,
    and below |J| itself (so the enclosure cannot leave J out)."""
    a, g, mu, cut = 3.475, 1e-3, 1.0 / 0.6, 8.308
    whole = decay.log_soft_upper_sup(a, 8428.0, g, mu, 4.0, 0.25, cut=cut)
    rest = decay.log_soft_upper_sup(a, 8428.0, g, mu, 4.0, 0.25, cut=cut, v_max=16856.0)
    log_j, _ = cf._jump_term(a, np.array([8428.0, 16856.0]), g, mu, cut)
    assert rest < whole - 10.0
    assert rest < float(np.min(log_j.real)) - 5.0


@pytest.mark.parametrize("v", [250.0, -3000.0, 1.0e5])
def test_the_jump_term_and_its_error(v):
    a, g, mu, cut = 4.5, 1e-3, 1.0 / 0.6, 7.9
    log_j, log_e = cf._jump_term(a, np.array([v]), g, mu, cut)
    exact = _jump_oracle(a, v, g, mu, cut)
    with mp.workdps(30):
        gap = abs(mp.exp(mp.mpc(complex(log_j[0]))) - exact)
        assert gap <= mp.exp(mp.mpf(float(log_e[0])))
        assert gap <= 1e-9 * abs(exact)  # and useful (the phase v r alone rounds by u |v r|)


def _both(a, v, g, mu, cut):
    """The enclosure with the soft split, then without it (the whole quadrature); and the splits taken."""
    used = []
    real = cf._soft_split

    def spy(*args, **kwargs):
        split = real(*args, **kwargs)
        used.append(split)
        return split

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(cf, "_soft_split", spy)
        split = cf.log_f_enclosure(a, v, g, mu, cut=cut)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(cf, "_SOFT_MIN_FREQUENCY", math.inf)
        whole = cf.log_f_enclosure(a, v, g, mu, cut=cut)
    return split, whole, [s for s in used if s is not None]


def _assert_overlap(split, whole):
    (value_s, err_s), (value_w, err_w) = split, whole
    gap = np.abs(np.exp(value_s) - np.exp(value_w))
    room = np.exp(err_s) + np.exp(err_w)
    assert np.all(gap <= room * (1.0 + 1e-9)), float(np.max(gap / room))


@pytest.mark.parametrize("a, g, sigma, cut, period, count", [
    (4.999, 1e-4, 0.6, 7.75, 6.05, 1 << 17),  # sigma 0.6, q 1e-4, 10 steps: the grid's slowest cell
    (3.475, 1e-3, 0.6, 8.308, 12.22, 1 << 15),  # q 1e-3, 10 steps
    (5.491, 1e-4, 0.6, 8.312, 6.732, 1 << 13),  # q 1e-4, 100 steps
    (6.0, 1e-4, 0.6, math.inf, 6.05, 1 << 15),  # the whole law
    (-3.0, 1e-4, 0.6, math.inf, 6.0, 1 << 15),  # the add direction's tilt
])
def test_the_split_enclosure_overlaps_the_whole_quadrature_on_contours(a, g, sigma, cut, period, count):
    """On contours of the grid's slow cells (their plans' tilt, cut, period and node count), the split is taken
    and its enclosure overlaps the whole quadrature's at every node."""
    v = 2.0 * np.pi / period * np.arange(count + 1)
    split, whole, used = _both(a, v, g, 1.0 / sigma, cut)
    assert used, "the soft split was not taken"
    _assert_overlap(split, whole)
    # and it is as useful: its error stays within e^3 of the whole quadrature's at the high frequencies
    high = v >= 1024.0
    assert np.all(split[1][high] <= whole[1][high] + 3.0)


@settings(max_examples=12, deadline=None)
@given(st.floats(-8.0, 40.0), st.floats(-5.0, -1.5).map(lambda e: 10.0**e), st.floats(0.5, 2.5),
       st.one_of(st.just(math.inf), st.floats(3.0, 12.0)), st.floats(300.0, 3.0e4), st.integers(6, 11))
@example(1001.0, 1e-4, 2.0, 7.6, 6.0e4, 8)
@example(0.5, 1e-5, 1.0, math.inf, 2.0e4, 10)
def test_the_split_enclosure_overlaps_the_whole_quadrature(a, g, sigma, cut, v_top, log_count):
    """Random tilts, sampling probabilities, noise, cuts and lines of frequencies (both signs)."""
    count = 1 << log_count
    v = np.linspace(-v_top, v_top, count)
    split, whole, _ = _both(a, v, g, 1.0 / sigma, cut)
    _assert_overlap(split, whole)


@pytest.mark.parametrize("kwargs, message", [
    ({"v_min": 0.0}, "positive finite v_min"),
    ({"softness": 0.0}, "softness"),
    ({"centre": math.nan}, "finite centre"),
    ({"v_max": 10.0, "cut": 5.0}, "v_max >= v_min"),
    ({"v_max": math.inf, "cut": 5.0}, "finite v_max"),
])
def test_the_upper_part_bound_refuses_bad_input(kwargs, message):
    args = {"a": 2.0, "v_min": 100.0, "g": 1e-3, "mu": 1.0, "centre": 2.0, "softness": 0.25}
    args.update(kwargs)
    rest = {k: args.pop(k) for k in ("cut", "v_max") if k in args}
    with pytest.raises(ValueError, match=message):
        decay.log_soft_upper_sup(*args.values(), **rest)


@pytest.mark.parametrize("a, g, sigma, centre, cut", [
    (6.0, 1e-4, 0.6, 2.5, 7.75),
    (6.0, 1e-4, 0.6, 2.5, math.inf),
    (36.7, 0.01, 2.0, 1.0, math.inf),  # the tilted mass far above the split: the weight's decay must carry it
    (36.7, 0.01, 2.0, 1.0, 12.0),
    (71.0, 0.01, 2.0, 1.0, math.inf),  # a mu = 35.5 just below the weight's rate 9 / w = 36
    (-3.0, 1e-3, 0.8, 0.5, math.inf),
])
def test_the_lower_parts_tail_bound_holds(a, g, sigma, centre, cut):
    """``int_end^cut phi(x) Phi((c - x)/w) B(x)^a dx <= exp(cf._log_soft_tail)`` (mpmath, 30 digits), ``end = c + 9w``;
    and, at large tilts, far below the weight at ``end`` times ``int_end^inf phi B^a`` (the first, looser bound,
    e^66 above F(a) on a contour of sigma 2, q 0.01, where the mirror check then came out 60x too loose)."""
    mu, w = 1.0 / sigma, cf._SOFTNESS
    end = cf._soft_end((centre, w))
    top = cut if math.isfinite(cut) else max(end, a * mu) + 40.0
    with mp.workdps(30):
        gm, mum = mp.mpf(g), mp.mpf(mu)

        def f(x):
            return (mp.npdf(x) * mp.ncdf((centre - x) / w)
                    * mp.exp(a * mp.log(1 - gm + gm * mp.exp(mum * x - mum * mum / 2))))

        exact = mp.quad(f, mp.linspace(end, top, 80))
        bound = cf._log_soft_tail(a, g, mu, -14.0, (centre, w), cut)
        assert exact <= mp.exp(bound), (exact, bound)
        if a > 30:
            loose = cf._log_tails(a, g, mu, -14.0, end, math.inf)[1] + float(special.log_ndtr(-9.0))
            assert bound < loose - 20.0
