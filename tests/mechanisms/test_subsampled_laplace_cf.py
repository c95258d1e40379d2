"""The proven enclosure of the Poisson-subsampled Laplace mechanism's characteristic function.

Every value is compared with mpmath (:mod:`tests.oracles.subsampled_laplace_cf`: a hypergeometric closed form and a
direct quadrature, checked against each other here): ``|F(z) - exp(log F~)| <= exp(log E)`` must hold at random and
at hard points, on a whole evenly spaced line of frequencies (the non-uniform FFT's path) and on unsorted arrays of
mixed signs; the decay bounds must dominate ``|G|`` and ``|F|`` beyond their frequency and fall like ``1 / |v|``.
"""

import math

import mpmath as mp
import numpy as np
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from dpledger.mechanisms import _phase_fft
from dpledger.mechanisms import subsampled_laplace_cf as cf
from tests.oracles import subsampled_laplace_cf as oracle

#: Oracle digits: the enclosures' errors are at least ~1e-17 of ``G(a)``, the oracle's ~1e-30 of ``|G(z)|``.
DPS = 30

#: Sampling probabilities log-uniform in [1e-6, 0.999] and ratios ``t`` log-uniform in [1e-3, 30] (the brief's box).
PROBABILITIES = st.floats(math.log(1e-6), math.log(0.999)).map(math.exp)
RATIOS = st.floats(math.log(1e-3), math.log(30.0)).map(math.exp)
#: Wider boxes for checks that need no integral: g in [1e-12, 1 - 1e-9] (near 0 and near 1), t in [1e-9, 300].
WIDE_PROBABILITIES = st.one_of(st.floats(math.log(1e-12), math.log(0.5)).map(math.exp),
                               st.floats(math.log(1e-9), math.log(0.5)).map(lambda e: 1.0 - math.exp(e)))
WIDE_RATIOS = st.floats(math.log(1e-9), math.log(300.0)).map(math.exp)


def _gap_and_bound(log_value, log_err, exact):
    """``(|exp(log_value) - exact|, exp(log_err))`` in mpmath (no float rounding on the way)."""
    gap = abs(mp.exp(mp.mpc(complex(log_value))) - exact)
    return gap, mp.exp(mp.mpf(float(log_err)))


def _check_g_and_f(a, v, g, t):
    """Both enclosures at ``a + iv`` contain the oracle's values, and are useful: their errors are below ``1e-9``
    of ``G(a)`` and ``F(a)`` (the scale of the terms; ``|G(z)|`` itself can be far smaller)."""
    g_value, g_err = cf.log_g_enclosure(a, np.array([v]), g, t)
    f_value, f_err = cf.log_f_enclosure(a, np.array([v]), g, t)
    assert np.isfinite(g_err[0]) and np.isfinite(f_err[0])
    with mp.workdps(DPS):
        exact_g = oracle.g_value(a, v, g, t)
        exact_f = oracle.f_value(a, v, g, t, g_part=exact_g)
        gap, bound = _gap_and_bound(g_value[0], g_err[0], exact_g)
        assert gap <= bound, ("G", a, v, g, t, gap, bound)
        scale_g = abs(oracle.g_value(a, 0.0, g, t)) if v else abs(exact_g)
        assert bound <= 1e-9 * scale_g, ("G loose", a, v, g, t, bound / scale_g)
        gap, bound = _gap_and_bound(f_value[0], f_err[0], exact_f)
        assert gap <= bound, ("F", a, v, g, t, gap, bound)
        scale_f = abs(oracle.f_value(a, 0.0, g, t)) if v else abs(exact_f)
        assert bound <= 1e-9 * scale_f, ("F loose", a, v, g, t, bound / scale_f)


# --------------------------------------------------------------------------------------------------------- oracle
@pytest.mark.parametrize("a, v, g, t", [(1.5, 7.0, 0.3, 2.0), (-4.0, 180.0, 0.999, 0.05), (7.0, 40.0, 1e-5, 12.0),
                                        (-30.0, 0.0, 0.9999, 0.004), (3.0, 2e4, 2e-3, 1.0)])
def test_the_two_oracles_agree(a, v, g, t):
    """The closed form and the quadrature are independent computations of ``G``: they must agree to ``1e-25``
    relative (``g`` near 1 with a negative tilt makes the closed form cancel: 17 and 61 digits in the second and
    fourth cases, which its raised working precision must absorb)."""
    with mp.workdps(DPS):
        closed = oracle.g_closed_form(a, v, g, t)
        quad = oracle.g_quadrature(a, v, g, t)
        assert abs(closed - quad) <= 1e-25 * abs(quad)


# ---------------------------------------------------------------------------------------------------------- atoms
@settings(max_examples=30, deadline=None)
@given(WIDE_PROBABILITIES, WIDE_RATIOS)
@example(0.5, 1.0)
@example(1e-12, 1e-9)
@example(1.0 - 1e-9, 300.0)
@example(0.999, 1e-3)
def test_atoms_are_the_exact_values_rounded_to_nearest(g, t):
    """Each of the eight numbers within half an ulp of its value at 60 digits (from the exact floats ``g``,
    ``t``), and the add direction is the remove direction's losses negated with masses ``e^-t / 2``, ``1/2``."""
    got = cf.atoms(g, t)
    with mp.workdps(60):
        g_, t_ = mp.mpf(g), mp.mpf(t)
        l1, l0 = mp.log(1 - g_ + g_ * mp.exp(t_)), mp.log(1 - g_ + g_ * mp.exp(-t_))
        log2 = mp.log(2)
        want = {"remove": (l1, l0, l1 - t_ - log2, l0 - log2), "add": (-l1, -l0, -t_ - log2, -log2)}
        for direction in ("remove", "add"):
            assert len(got[direction]) == 4
            for value, exact in zip(got[direction], want[direction]):
                assert isinstance(value, float)
                assert abs(mp.mpf(value) - exact) <= mp.mpf(math.ulp(value)) / 2 + abs(exact) * mp.mpf(10) ** -55, (
                    direction, value, exact)
    assert got["add"][:2] == (-got["remove"][0], -got["remove"][1])


@settings(max_examples=30, deadline=None)
@given(WIDE_PROBABILITIES, WIDE_RATIOS)
@example(0.5, 1.0)
@example(1e-12, 1e-9)
@example(1.0 - 1e-9, 300.0)
@example(1.0 - 1e-9, 1e-9)
@example(0.08298740225108363, 4.627693361157796e-07)  # F(1) comes out 2 ulps from 1: a quarter of the bound
def test_f_is_one_at_zero_and_one_within_the_enclosure(g, t):
    """``F(0) = E_B[1] = 1`` and ``F(1) = E_B[C / B] = 1``: both directions of the pair are probability measures;
    ``G(0) = (1 - e^-t) / 2`` is the continuous part's mass."""
    for a in (0.0, 1.0):
        value, log_err = cf.log_f_enclosure(a, np.zeros(1), g, t)
        with mp.workdps(DPS):
            gap, bound = _gap_and_bound(value[0], log_err[0], mp.mpf(1))
            assert gap <= bound <= 1e-11, (a, g, t, gap, bound)
    value, log_err = cf.log_g_enclosure(0.0, np.zeros(1), g, t)
    with mp.workdps(DPS):
        exact = -mp.expm1(-mp.mpf(t)) / 2
        gap, bound = _gap_and_bound(value[0], log_err[0], exact)
        assert gap <= bound <= 1e-11 * exact, (g, t, gap, bound)


# ------------------------------------------------------------------------------------------- enclosures of G and F
@settings(max_examples=40, deadline=None)
@given(st.floats(-5.0, 8.0), st.one_of(st.just(0.0), st.floats(0.0, 2000.0)), PROBABILITIES, RATIOS)
@example(1.5, 0.0, 0.5, 1.0)
@example(-5.0, 2000.0, 0.999, 30.0)
@example(8.0, 2000.0, 1e-6, 30.0)
@example(-3.0, 37.0, 0.999, 1e-3)
@example(8.0, 0.0, 0.999, 30.0)  # F(a) ~ e^240: the largest terms of the box
def test_enclosures_contain_the_mpmath_values(a, v, g, t):
    _check_g_and_f(a, v, g, t)


@pytest.mark.parametrize("a, v, g, t", [
    (-2.0, 50.0, 1.0 - 1e-9, 0.5),          # g at 1 - 1e-9: w(-t) ~ e^-t, the closed form cancels
    (-45.0, 0.0, 0.9999999975, 4.6e-7),     # t tiny, g near 1, a far below 0: terms of e^-45 relative size
    (1.0, 3.0, 0.02, 1e-9),                 # t at 1e-9: G(z) ~ t
    (0.5, 10.0, 0.3, 250.0),                # t large: 250 zones, w(t) ~ e^249
    (4.572312287647529, 92239.62201570564, 0.00010861291060475672, 6.046700552203301),  # |v| ~ 1e5: without
    # the quadrature's error term this point falls outside (by hand: ratio 1.25)
    (7.962818066882402, 356.18875779311657, 0.21003163204266892, 8.005437676116841),  # F's atoms dominate: without
    # their rounding error F's enclosure misses (by hand: ratio 1.16)
    (2.0, 1e5, 1e-4, 1.0),
    (-3.0, 3e4, 1e-3, 2.0),
    (30.0, 0.0, 1e-3, 20.0),
    (59.16699918299219, 0.0, 0.9999999321034413, 36.0087825758936),  # log F ~ 2100: F's value is 0.54 of its
    # bound away from the truth, so an error bound half as large misses (by hand)
])
def test_enclosures_contain_the_mpmath_values_at_hard_points(a, v, g, t):
    _check_g_and_f(a, v, g, t)


def test_a_uniform_line_of_frequencies_is_enclosed_everywhere(monkeypatch):
    """5,000 frequencies ``v_k = 0.37 k`` take the certified non-uniform FFT (its octaves of 2,500, 1,250, ...
    frequencies) in both directions of the line; ten entries (the ends, octave edges and points between) are
    compared with mpmath, and the decreasing line must give the conjugates' enclosures."""
    sizes = []
    original = _phase_fft.phase_sums_uniform
    monkeypatch.setattr(_phase_fft, "phase_sums_uniform", lambda *args: sizes.append(args[3]) or original(*args))
    a, g, t = -1.0, 0.3, 4.0
    v = 0.37 * np.arange(5000)
    g_value, g_err = cf.log_g_enclosure(a, v, g, t)
    assert 2500 in sizes
    sizes.clear()
    f_value, f_err = cf.log_f_enclosure(a, -v, g, t)
    assert 2500 in sizes
    picks = [0, 1, 17, 624, 625, 1249, 1250, 2499, 2500, 4999]
    with mp.workdps(DPS):
        for k in picks:
            exact_g = oracle.g_value(a, float(v[k]), g, t)
            gap, bound = _gap_and_bound(g_value[k], g_err[k], exact_g)
            assert gap <= bound, (k, gap, bound)
            exact_f = oracle.f_value(a, -float(v[k]), g, t, g_part=mp.conj(exact_g))
            gap, bound = _gap_and_bound(f_value[k], f_err[k], exact_f)
            assert gap <= bound, (k, gap, bound)
    # every entry useful: the whole line within 1e-9 of G(a)
    assert np.exp(g_err - g_value[0].real).max() <= 1e-9


def test_unsorted_frequencies_of_both_signs_are_enclosed_entry_by_entry():
    """An unsorted array with repeats, signs mixed and a zero (shaped 2-d) gives each entry its own enclosure; an
    entry and its negative are conjugate, and each value matches the one computed alone within both errors."""
    rng = np.random.default_rng(3)
    v = np.concatenate([rng.uniform(-900.0, 900.0, 297), [0.0, 411.0, -411.0]])
    rng.shuffle(v)
    v = v.reshape(20, 15)
    a, g, t = 2.5, 0.05, 3.0
    value, log_err = cf.log_f_enclosure(a, v, g, t)
    assert value.shape == v.shape == log_err.shape
    flat_v, flat_value, flat_err = v.ravel(), value.ravel(), log_err.ravel()
    with mp.workdps(DPS):
        for k in [int(np.flatnonzero(flat_v == x)[0]) for x in (0.0, 411.0, -411.0)] + [0, 7, 123, 299]:
            gap, bound = _gap_and_bound(flat_value[k], flat_err[k], oracle.f_value(a, float(flat_v[k]), g, t))
            assert gap <= bound, (flat_v[k], gap, bound)
    for k in range(0, 300, 37):
        alone, alone_err = cf.log_f_enclosure(a, flat_v[k:k + 1], g, t)
        assert abs(np.exp(alone[0]) - np.exp(flat_value[k])) <= np.exp(alone_err[0]) + np.exp(flat_err[k])


def test_real_enclosures_at_many_tilts_are_the_pointwise_ones():
    a = np.array([-4.0, -0.5, 0.0, 1.0, 2.75, 9.0])
    g, t = 0.02, 2.5
    values, errors = cf.log_f_real_enclosure(a, g, t)
    assert values.shape == errors.shape == a.shape
    with mp.workdps(DPS):
        for x, value, log_err in zip(a, values, errors):
            one, one_err = cf.log_f_enclosure(float(x), np.zeros(1), g, t)
            assert value == one[0] and log_err == one_err[0]
            gap, bound = _gap_and_bound(value, log_err, oracle.f_value(float(x), 0.0, g, t))
            assert gap <= bound <= 1e-13 * abs(oracle.f_value(float(x), 0.0, g, t))


# --------------------------------------------------------------------------------------------------- decay bounds
@settings(max_examples=25, deadline=None)
@given(st.floats(-5.0, 8.0), st.floats(0.5, 2000.0), PROBABILITIES, RATIOS, st.floats(1.0, 4.0))
@example(1.0, 50.0, 0.5, 1.0, 1.0)
@example(-5.0, 2000.0, 0.999, 30.0, 1.3)
@example(8.0, 1.0, 1e-6, 0.001, 3.0)
# low frequencies, where |G| exceeds the boundary terms alone by e^0.21 and e^0.19 (the variation term is needed)
@example(5.078277565002491, 1.4482051355316408, 0.3912875099838979, 1.487698334766297, 1.3)
@example(2.5068287995332934, 0.7674246620124142, 0.2565020802659978, 17.9627546447572, 1.3)
def test_sup_bounds_dominate_the_modulus_beyond_their_frequency(a, v_min, g, t, factor):
    log_g_sup = cf.log_g_sup(a, v_min, g, t)
    log_f_sup = cf.log_f_sup(a, v_min, g, t)
    assert log_g_sup <= log_f_sup
    with mp.workdps(DPS):
        for v in (v_min, -v_min * factor, v_min * factor ** 2):
            exact_g = oracle.g_value(a, v, g, t)
            assert mp.log(abs(exact_g)) <= log_g_sup, (a, v, g, t)
            assert mp.log(abs(oracle.f_value(a, v, g, t, g_part=exact_g))) <= log_f_sup, (a, v, g, t)


@pytest.mark.parametrize("a, g, t, low, slack", [
    (1.5, 0.05, 1.0, 200.0, 1.5),  # e^0.86 and e^0.72 above the samples when written
    (-2.0, 0.5, 3.0, 200.0, 1.5),  # e^0.72, e^0.69
    # a > 0: the variation term takes psi's whole variation (near -t, where w^a is smallest) times max(w0, w1)^a:
    # e^2.27, e^2.22 here (and e^4.7 at a = 6, g = 0.2, t = 2, v = 2000)
    (6.0, 0.3, 1.0, 200.0, 3.0),
])
def test_sup_bound_decays_like_one_over_the_frequency_and_is_near_the_modulus(a, g, t, low, slack):
    """Beyond the frequency where it falls below ``G(a)``, ``log_g_sup`` falls by ``log |z|``'s increase; it stays
    above ``|G|`` sampled on a window after each ``v_min`` and within ``e^slack`` of the largest sample."""
    whole = cf.log_g_sup(a, 0.0, g, t)
    high = 10.0 * low
    sup_low, sup_high = cf.log_g_sup(a, low, g, t), cf.log_g_sup(a, high, g, t)
    assert sup_high < sup_low < whole
    assert sup_high - sup_low == pytest.approx(-math.log(math.hypot(a, high) / math.hypot(a, low)), abs=1e-9)
    with mp.workdps(DPS):
        for v_min, sup in ((low, sup_low), (high, sup_high)):
            samples = [float(mp.log(abs(oracle.g_value(a, v, g, t)))) for v in np.linspace(v_min, 1.5 * v_min, 25)]
            assert max(samples) <= sup <= max(samples) + slack, (v_min, max(samples), sup)


# ------------------------------------------------------------------------------------------------------ bad input
@pytest.mark.parametrize("g, t, match", [
    (0.0, 1.0, "sampling probability"), (1.0, 1.0, "sampling probability"), (-0.1, 1.0, "sampling probability"),
    (1.5, 1.0, "sampling probability"), (math.nan, 1.0, "sampling probability"),
    (0.5, 0.0, "loss ratio"), (0.5, -1.0, "loss ratio"), (0.5, math.inf, "loss ratio"),
    (0.5, math.nan, "loss ratio"),
])
def test_bad_probability_or_ratio_raises_a_value_error(g, t, match):
    calls = [lambda: cf.atoms(g, t), lambda: cf.log_g_enclosure(1.0, [0.0, 2.0], g, t),
             lambda: cf.log_f_enclosure(1.0, [2.0], g, t), lambda: cf.log_f_real_enclosure([1.0, 2.0], g, t),
             lambda: cf.log_g_sup(1.0, 5.0, g, t), lambda: cf.log_f_sup(1.0, 5.0, g, t)]
    for call in calls:
        with pytest.raises(ValueError, match=match):
            call()


def test_red_team_findings_negative_v_min_and_the_panel_limit():
    """A negative ``v_min`` asks for every frequency, v = 0 included: the bound must reach ``log G(a)`` (it gave
    -1.986 against log G(1.5) = -1.151 before); NaN is refused; a frequency beyond the panel limit says so."""
    from dpledger.mechanisms.errors import NumericalError

    value, err = cf.log_g_enclosure(1.5, np.zeros(1), 0.05, 1.0)
    assert cf.log_g_sup(1.5, -200.0, 0.05, 1.0) >= float(np.logaddexp(value[0].real, err[0]))
    assert cf.log_f_sup(1.5, -200.0, 0.05, 1.0) >= float(cf.log_f_enclosure(1.5, np.zeros(1), 0.05, 1.0)[0][0].real)
    with pytest.raises(ValueError, match="v_min"):
        cf.log_g_sup(1.5, float("nan"), 0.05, 1.0)
    with pytest.raises(ValueError, match="finite"):
        cf.log_g_enclosure(float("nan"), np.ones(1), 0.05, 1.0)
    with pytest.raises(ValueError, match="finite"):
        cf.log_f_enclosure(1.0, np.array([1.0, np.inf]), 0.05, 1.0)
    with pytest.raises(NumericalError, match="quadrature panels"):
        cf.log_g_enclosure(1.9246598529481185, np.array([327280.6411658631]), 1.7261441971237977e-07,
                            34.21443889947499)
