"""The body of the Poisson-subsampled Gaussian's remove-direction law (mechanisms/subsampled_body.py) and the cut
enclosures of mechanisms/subsampled_gaussian_cf.py.

The oracle is mpmath's own quadrature of ``F_b(z) = int_(-inf)^cut phi(x) B(x)^z dx`` (independent of the
library's Gauss-Legendre panels and bounds); the tail mass is checked against mpmath's normal distribution.
"""

import math

import mpmath as mp
import numpy as np
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from dpledger.mechanisms import GaussianMechanism, LaplaceMechanism, PoissonSubsampled
from dpledger.mechanisms import subsampled_body as body_module
from dpledger.mechanisms import subsampled_gaussian_cf as cf
from dpledger.mechanisms import subsampled_gaussian_decay as decay
from dpledger.mechanisms.relations import Direction
from dpledger.mechanisms.subsampled_body import RemoveBody

DPS = 20


def _log_abs_integrand(x, a, g, mu):
    return -0.5 * x * x + a * np.logaddexp(np.log1p(-g), np.log(g) + mu * x - 0.5 * mu * mu)


def _oracle(z, g, mu, cut):
    """``F_b(z)`` by mpmath's tanh-sinh quadrature of the integrand scaled to a largest modulus ~1, on the stretch
    where ``|f|`` is within ``e^-110`` of its largest value (found on a float grid, refined geometrically towards
    the top end where a large tilt piles the mass up), cut into pieces over which ``log |f|`` moves by at most ~2
    and the phase ``Im(z) r(x)`` by at most ~2 radians."""
    a, v = float(mp.re(z)), float(abs(mp.im(z)))
    top = cut if math.isfinite(cut) else max(a * mu, 0.0) + 40.0
    bottom = min(a * mu, 0.0, top) - 40.0
    grid = np.unique(np.concatenate([np.linspace(bottom, top, 20001), top - np.geomspace(1e-9, top - bottom, 4001)]))
    log_f = _log_abs_integrand(grid, a, g, mu)
    inside = np.flatnonzero(log_f >= log_f.max() - 110.0)
    grid, log_f = grid[max(inside[0] - 1, 0):inside[-1] + 2], log_f[max(inside[0] - 1, 0):inside[-1] + 2]
    r = np.logaddexp(np.log1p(-g), np.log(g) + mu * grid - 0.5 * mu * mu)
    moves = np.concatenate([[0.0], np.cumsum(np.abs(np.diff(log_f)) + v * np.abs(np.diff(r)))])
    steps = np.flatnonzero(np.diff(np.floor(moves / 2.0)) > 0) + 1
    points = np.unique(np.concatenate([[grid[0]], grid[steps], [grid[-1]]]))
    with mp.workdps(DPS):
        gm, mum = mp.mpf(g), mp.mpf(mu)
        shift = mp.mpf(float(log_f.max()))  # mpmath's quadrature stops at an absolute tolerance: integrate ~1

        def f(x):
            return mp.exp(z * mp.log(1 - gm + gm * mp.exp(mum * x - mum * mum / 2)) - x * x / 2 - shift)

        return mp.quad(f, [mp.mpf(float(p)) for p in points]) * mp.exp(shift) / mp.sqrt(2 * mp.pi)


def _tail(g, mu, cut):
    with mp.workdps(DPS):
        return (1 - mp.mpf(g)) * mp.ncdf(-mp.mpf(cut)) + mp.mpf(g) * mp.ncdf(mp.mpf(mu) - mp.mpf(cut))


def _gap(value, log_err, exact):
    with mp.workdps(DPS):
        return abs(mp.exp(mp.mpc(complex(value))) - exact), mp.exp(mp.mpf(float(log_err)))


def _v_within_reach(t, a, g, mu, cut):
    """A frequency ``t / (g mu)`` (where the body's transform of a narrow loss starts to turn), capped so that the
    oracle follows at most ~300 radians of phase."""
    top = cut if math.isfinite(cut) else max(a * mu, 0.0) + 14.0
    spread = float(np.logaddexp(np.log1p(-g), np.log(g) + mu * top - 0.5 * mu * mu) - np.log1p(-g))
    return min(t / (g * mu), 300.0 / max(spread, 1e-300))


@settings(max_examples=8, deadline=None)
@given(st.one_of(st.floats(-30.0, 40.0), st.floats(40.0, 1.0e4)), st.floats(0.0, 30.0),
       st.floats(-5.0, -0.3).map(lambda e: 10.0**e), st.floats(0.8, 4.0),
       st.one_of(st.floats(0.5, 12.0), st.floats(-20.0, 0.5)))
@example(1001.0, 3.0, 1e-4, 2.0, 7.6)  # the brief's case: far above the body's bulk, the tail cut away
@example(1.0 + 1e4, 0.5, 1e-3, 1.0, 8.0)
@example(-25.0, 2.0, 0.2, 1.5, 3.0)
@example(2.5, 1.0, 0.01, 1.1, math.inf)  # no cut: the full law
def test_body_enclosure_contains_the_mpmath_value(a, t, g, sigma, cut):
    mu = 1.0 / sigma
    v = _v_within_reach(t, a, g, mu, cut)
    value, log_err = cf.log_f_enclosure(a, np.array([v]), g, mu, cut=cut)
    exact = _oracle(mp.mpc(a, v), g, mu, cut)
    gap, bound = _gap(value[0], log_err[0], exact)
    assert gap <= bound, (a, v, g, sigma, cut, gap, bound)
    size, _ = cf.log_f_enclosure(a, np.zeros(1), g, mu, cut=cut)  # F_b(a): the size of the terms
    # and is useful: 1e-9 of F_b(a), or the relaxed target of a high frequency (the module docstring of
    # subsampled_gaussian_cf: the targets grow like (|v| / 32)^2; a = 0, t = 14, g = 1e-5, cut 0.5 reaches
    # v = 1.4e6 and 1.5e-9)
    useful = max(1e-9, 1e-16 * (v / cf._TARGET_FREQUENCY) ** 2)
    assert float(log_err[0]) <= float(size[0].real) + math.log(useful)


@settings(max_examples=5, deadline=None)
@given(st.lists(st.floats(-20.0, 2000.0), min_size=4, max_size=8), st.floats(-5.0, -0.5).map(lambda e: 10.0**e),
       st.floats(0.8, 4.0), st.floats(1.0, 10.0))
@example([-0.5, 0.001, 1.0, 2.5, 1000.0], 1e-4, 2.0, 7.6)
def test_the_shared_real_axis_layout_with_a_cut_contains_the_mpmath_values(tilts, g, sigma, cut):
    mu = 1.0 / sigma
    values, errors = cf.log_f_real_enclosure(np.array(tilts), g, mu, cut=cut)
    for a, value, log_err in zip(tilts, values, errors):
        gap, bound = _gap(value, log_err, _oracle(mp.mpf(a), g, mu, cut))
        assert gap <= bound, (a, g, sigma, cut)


def test_a_cut_beyond_the_integration_range_is_the_full_law_bit_for_bit():
    """Where the range ``[X_lo, X_hi]`` ends before the cut, the body keeps today's right-tail bound and every
    number is today's (and a cut inside the range changes them)."""
    g, mu, v = 0.01, 1.0 / 1.1, np.linspace(-40.0, 40.0, 9)
    for a in (-3.0, 0.5, 2.5, 30.0):
        full, body = cf.log_f_enclosure(a, v, g, mu), cf.log_f_enclosure(a, v, g, mu, cut=500.0)
        assert np.array_equal(full[0], body[0]) and np.array_equal(full[1], body[1])
        assert not np.array_equal(full[0], cf.log_f_enclosure(a, v, g, mu, cut=2.0)[0])
    tilts = np.array([-0.5, 0.001, 1.0, 2.5, 30.0])
    full, body = cf.log_f_real_enclosure(tilts, g, mu), cf.log_f_real_enclosure(tilts, g, mu, cut=500.0)
    assert np.array_equal(full[0], body[0]) and np.array_equal(full[1], body[1])
    assert cf.log_f_upper(2.5, g, mu) == cf.log_f_upper(2.5, g, mu, cut=500.0)


def test_the_cut_is_not_ignored_at_a_huge_tilt():
    """At ``a = 1 + 1000`` (sigma 2, q 1e-4) the full ``F`` is ~e^115905 (its tail at x ~ 500); the body cut at 7.6
    is ~e^0.0015: the cut enclosure must be of the body (mpmath), on a short range."""
    g, mu, cut, a = 1e-4, 0.5, 7.6, 1001.0
    full_value, full_err = cf.log_f_enclosure(a, np.zeros(1), g, mu)
    value, log_err = cf.log_f_enclosure(a, np.array([0.0, 2000.0]), g, mu, cut=cut)
    assert full_value[0].real - np.exp(full_err[0] - full_value[0].real) > 1e5
    assert float(value[0].real) < 0.01 and cf.log_f_upper(a, g, mu, cut=cut) < 0.01
    for k, v in enumerate((0.0, 2000.0)):
        gap, bound = _gap(value[k], log_err[k], _oracle(mp.mpc(a, v), g, mu, cut))
        assert gap <= bound <= 1e-12
    lo, hi, _ = cf._reference(a, g, mu, 14.0, cut)
    assert (lo, hi) == (-14.0, cut)


@settings(max_examples=25, deadline=None)
@given(st.floats(-8.0, -1e-3).map(lambda e: 10.0**e), st.floats(0.05, 3.0), st.floats(-5.0, 40.0))
@example(1e-4, 0.5, 7.6)
@example(0.999, 2.0, -3.0)
def test_log_tail_mass_is_a_tight_upper_bound(g, mu, cut):
    bound = body_module.log_tail_mass(g, mu, cut)
    with mp.workdps(DPS):
        exact = mp.log(_tail(g, mu, cut))
        assert bound >= exact
        assert bound - exact <= 1e-10 * (1.0 + abs(exact))  # the mass itself within a factor 1 + ~1e-10


@settings(max_examples=25, deadline=None)
@given(st.floats(-8.0, -1e-3).map(lambda e: 10.0**e), st.floats(0.05, 3.0), st.floats(-700.0, -0.01))
@example(1e-4, 0.5, math.log(1e-13 / 1000))
def test_cut_for_tail_mass_meets_its_target_and_no_more(g, mu, log_mass):
    cut = body_module.cut_for_tail_mass(g, mu, log_mass)
    assert body_module.log_tail_mass(g, mu, cut) <= log_mass
    with mp.workdps(DPS):
        assert mp.log(_tail(g, mu, cut)) >= log_mass - 1e-9 * (1.0 + abs(log_mass))  # not wastefully far out


def test_tail_mass_edges_and_bad_input():
    assert body_module.log_tail_mass(0.1, 1.0, math.inf) == -math.inf
    assert body_module.cut_for_tail_mass(0.1, 1.0, -math.inf) == math.inf
    assert body_module.log_tail_mass(0.1, 1.0, -40.0) == 0.0  # p = 1 to float precision: capped at log 1
    with pytest.raises(ValueError, match="`log_mass` of cut_for_tail_mass must be below 0"):
        body_module.cut_for_tail_mass(0.1, 1.0, 0.0)
    with pytest.raises(ValueError, match="`cut` .* must be a number; got nan"):
        body_module.log_tail_mass(0.1, 1.0, math.nan)
    with pytest.raises(ValueError, match="must be a real number or \\+inf; got -inf"):
        cf.log_f_enclosure(1.0, np.ones(1), 0.1, 1.0, cut=-math.inf)
    with pytest.raises(ValueError, match="`g` of log_tail_mass"):
        body_module.log_tail_mass(1.0, 1.0, 3.0)


def _oracle_log_abs(a, v, g, mu, cut):
    with mp.workdps(DPS):
        return mp.log(abs(_oracle(mp.mpc(a, v), g, mu, cut)))


@settings(max_examples=5, deadline=None)
@given(st.floats(-5.0, 3000.0), st.floats(0.2, 20.0), st.floats(-4.0, -0.3).map(lambda e: 10.0**e),
       st.floats(0.8, 4.0), st.floats(0.5, 10.0), st.floats(1.0, 4.0))
@example(1001.0, 3.0, 1e-4, 2.0, 7.6, 3.0)
def test_body_decay_bound_dominates_the_modulus_beyond_its_frequency(a, t, g, sigma, cut, factor):
    mu = 1.0 / sigma
    v_min = _v_within_reach(t, a, g, mu, cut) / factor
    log_sup = decay.log_f_sup(a, v_min, g, mu, cut=cut)
    for v in (v_min, v_min * factor):
        assert _oracle_log_abs(a, v, g, mu, cut) <= log_sup, (a, v, g, sigma, cut)


def test_the_vertical_side_at_the_cut_is_needed_and_counted(monkeypatch):
    """A cut close to the bulk and a large frequency: the body's density jumps at the cut, so ``|F_b|`` decays
    only like ``1/v`` while the shifted integral decays like ``e^(-v theta)``; the shifted part alone falls below
    ``|F_b|`` there (dropping the side would be wrong), the bound with the side stays above it, and not far."""
    g, mu, cut, a, v = 0.5, 1.0, 1.0, 1.0, 300.0
    exact = _oracle_log_abs(a, v, g, mu, cut)
    bound = decay.log_f_sup(a, v, g, mu, cut=cut)
    assert exact <= bound <= exact + 3.0
    monkeypatch.setattr(decay, "_log_side", lambda *args: -np.inf)
    assert decay.log_f_sup(a, v, g, mu, cut=cut) < exact - 1.0


def test_body_at_one_is_one_minus_the_tail_mass():
    for g, mu, cut in ((1e-4, 0.5, 7.6), (0.3, 1.0, 1.5), (0.05, 2.0, 3.0)):
        value, log_err = cf.log_f_enclosure(1.0, np.zeros(1), g, mu, cut=cut)
        gap, bound = _gap(value[0], log_err[0], 1 - _tail(g, mu, cut))
        assert gap <= bound <= 1e-13


def _body(sigma=2.0, q=1e-4, log_mass=-40.0):
    return PoissonSubsampled(GaussianMechanism(sigma=sigma), sampling_probability=q).remove_body(log_mass)


def test_remove_body_is_the_cut_law_of_its_mechanism():
    m = PoissonSubsampled(GaussianMechanism(sigma=2.0), sampling_probability=1e-4)
    body = m.remove_body(-40.0)
    assert body.mechanism is m and body.cut == body_module.cut_for_tail_mass(1e-4, 0.5, -40.0)
    assert body.log_tail_mass == body_module.log_tail_mass(1e-4, 0.5, body.cut) <= -40.0
    assert m.remove_body(-math.inf).cut == math.inf
    assert PoissonSubsampled(LaplaceMechanism(scale=1.0), sampling_probability=0.1).remove_body(-30.0) is None
    for q in (0.0, 1.0, 0.01):  # 0.01: above CUT_MAX_SAMPLING, where cutting does not pay
        assert PoissonSubsampled(GaussianMechanism(sigma=2.0), sampling_probability=q).remove_body(-30.0) is None
    with pytest.raises(ValueError, match="`log_mass` of PoissonSubsampled.remove_body must be below 0"):
        m.remove_body(0.5)
    with pytest.raises(TypeError, match="`mechanism` of RemoveBody must be a PoissonSubsampled"):
        RemoveBody(GaussianMechanism(sigma=2.0), 3.0)
    with pytest.raises(ValueError, match="`mechanism` of RemoveBody must subsample a Gaussian"):
        RemoveBody(PoissonSubsampled(LaplaceMechanism(scale=1.0), sampling_probability=0.1), 3.0)
    with pytest.raises(ValueError, match="`cut` of RemoveBody must be a number"):
        RemoveBody(m, math.nan)


def test_remove_body_transform_goes_through_the_cut_enclosures():
    body = _body()
    s = np.array([[0.5, 0.5 + 1.0j], [1000.0 + 3.0j, 2.0]])
    value, log_err = body.log_mgf_enclosure(s)
    assert value.shape == log_err.shape == (2, 2)
    for real_part in (0.5, 1000.0, 2.0):  # one enclosure per real part, as PoissonSubsampled groups M
        sel = s.real == real_part
        direct = cf.log_f_enclosure(1.0 + real_part, s.imag[sel], 1e-4, 0.5, cut=body.cut)
        assert np.array_equal(value[sel], direct[0]) and np.array_equal(log_err[sel], direct[1])
    real = np.array([0.25, 3.0, 1000.0, 0.25, 7.0])  # the batched real path (repeated tilts share a value)
    value, log_err = body.log_mgf_enclosure(real)
    assert value[0] == value[3]
    for z, val, err in zip(real, value, log_err):
        gap, bound = _gap(val, err, _oracle(mp.mpf(1.0 + z), 1e-4, 0.5, body.cut))
        assert gap <= bound
    assert body.log_mgf_sup(1000.0, 1e5) == decay.log_f_sup(1001.0, 1e5, 1e-4, 0.5, cut=body.cut)
    gm = GaussianMechanism(sigma=2.0)
    assert gm.subsampled_log_f_sup(1001.0, 1e5, 1e-4, cut=body.cut) == body.log_mgf_sup(1000.0, 1e5)


def test_body_transform_is_below_the_full_one_at_real_arguments():
    """``M_b(s) <= M(s)`` at real ``s`` (a positive integrand over less): the body's proven lower end never
    exceeds the full law's proven upper end, and the body's upper bound is far below the full law's lower one
    where the tail carries ``M`` (large ``s``)."""
    body = _body()
    m = body.mechanism
    s = np.array([-0.5, 0.1, 1.0, 5.0, 40.0, 1000.0])
    upper = body.log_mgf_upper(s)
    value, log_err = body.log_mgf_enclosure(s)
    full_value, full_err = m.log_mgf_enclosure(s, Direction.REMOVE)
    body_lower = value.real + np.log1p(-np.exp(log_err - value.real))  # every error far below its value
    full_lower = full_value.real + np.log1p(-np.exp(full_err - full_value.real))
    assert np.all(body_lower <= np.logaddexp(full_value.real, full_err))
    assert np.all(body_lower <= upper)
    with mp.workdps(DPS):
        for z, up in zip(s, upper):
            assert mp.log(_oracle(mp.mpf(1.0 + z), 1e-4, 0.5, body.cut)) <= up
    assert full_lower[-1] > 1e5 and upper[-1] < 0.01  # s = 1000: M ~ e^115905, M_b ~ e^0.0015
    assert body.log_mgf_upper(np.array([[0.1, 1000.0]])).shape == (1, 2)
    with pytest.raises(ValueError, match="must be finite"):
        body.log_mgf_upper(np.array([math.nan]))


@pytest.mark.parametrize("a, g, mu, cut", [(2.0, 0.3, 1.0, 0.5), (5.0, 0.1, 1.0, 0.0), (1.5, 0.01, 0.9, -1.0),
                                           (3.0, 0.5, 2.0, 0.3)])
def test_body_decay_bound_is_never_above_the_bound_at_zero_frequency(a, g, mu, cut):
    """``F_b(a)`` may be far below 1 (``F_b(1) = 1 - p``), so the full law's shortcut (a decay bound at most 0 needs
    no comparison with the bound at ``v = 0``) would return bounds above ``log F_b(a)``: the body's is the minimum
    of both at every frequency, and the two ends of the comparison are proven (mpmath)."""
    upper = cf.log_f_upper(a, g, mu, cut=cut)
    assert mp.log(_oracle(mp.mpf(a), g, mu, cut)) <= upper
    assert upper < -0.005  # the body's transform is below 1 here: log F(a) >= 0 would be false
    for v_min in (0.01, 0.3, 3.0):
        assert decay.log_f_sup(a, v_min, g, mu, cut=cut) <= upper
    floor = decay._log_lower_sum(a, g, mu, cut, 14.0, 256)  # the floor that replaces 0 (256 cells): proven, close
    assert upper - 0.5 <= floor <= mp.log(_oracle(mp.mpf(a), g, mu, cut))
