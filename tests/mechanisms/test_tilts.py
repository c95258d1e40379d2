"""The float tilt ``1 + s`` (mechanisms/_tilts.py): exact sums, exact dampings, and the bounds that close the gap
where ``1 + s`` or ``-1 - s`` is rounded, on their own (closed-form laws, exact rationals) and inside the
subsampled Gaussian's enclosures and the Fourier accountant's plans."""

import fractions
import math

import mpmath as mp
import numpy as np
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from dpledger.accountants import FourierAccountant
from dpledger.accountants.fourier_inversion import make_plan
from dpledger.mechanisms import Direction, GaussianMechanism, PoissonSubsampled, _tilts
from dpledger.mechanisms import subsampled_gaussian_cf as cf
from tests.oracles import privacy_profiles as pp

Fr = fractions.Fraction
finite = st.floats(-1e12, 1e12, allow_nan=False, allow_infinity=False)


@given(finite, finite)
def test_two_sum_is_exact(a, b):
    s, e = _tilts.two_sum(a, b)
    assert Fr(float(s)) + Fr(float(e)) == Fr(a) + Fr(b)
    assert float(s) == a + b


@given(st.floats(-0.5, 1e9, allow_nan=False))
@example(0.1)
@example(127.3)
@example(-0.3)
@example(1e-300)
def test_exact_tilt_makes_both_directions_exact_and_moves_little(kappa):
    k = float(_tilts.exact_tilt(kappa))
    if kappa == 0.0 or k == kappa and float(_tilts.two_sum(1.0, kappa)[1]) != 0.0:
        assert k == kappa  # left alone: only where 1 + kappa is below 1/2 or kappa vanishes against 1
        return
    assert Fr(1) + Fr(k) == Fr(1.0 + k)
    assert Fr(-1) - Fr(k) == Fr(-1.0 - k)
    assert Fr(1) + Fr(-1.0 - k) == -Fr(k) == Fr(1.0 + (-1.0 - k))
    assert abs(Fr(k) - Fr(kappa)) <= Fr(math.ulp(1.0 + kappa))


@given(finite, finite)
def test_convex_bracket_encloses_the_exact_argument(a, b):
    value, shift = _tilts.two_sum(a, b)
    where, other = _tilts.convex_bracket(np.array([value]), np.array([shift]))
    exact = Fr(a) + Fr(b)
    if float(shift) == 0.0:
        assert not where.any()
    else:
        ends = sorted([Fr(float(value)), Fr(float(other[0]))])
        assert ends[0] <= exact <= ends[1]


def _normal_log_g(z, mean, scale):
    """``log E[e^(zY)]``, ``Y ~ N(mean, scale^2)``: ``z mean + z^2 scale^2 / 2``."""
    return z * mean + z * z * scale * scale / 2


@settings(max_examples=60, deadline=None)
@given(st.floats(-5, 50), st.floats(1e-8, 0.3), st.booleans(), st.floats(0, 20), st.floats(-2, 2),
       st.floats(0.05, 4))
def test_shift_error_bounds_the_difference_of_a_closed_form_transform(t, shift, negative, v, mean, scale):
    """Large offsets (up to 0.3) so that a missing factor would show; the transform of a normal law in mpmath."""
    shift = -shift if negative else shift
    bound = float(_tilts.log_shift_error(lambda p: _normal_log_g(p, mean, scale), t, shift))
    with mp.workdps(40):
        exact = mp.exp(_normal_log_g(mp.mpc(mp.mpf(t) + mp.mpf(shift), v), mean, scale))
        at_float = mp.exp(_normal_log_g(mp.mpc(t, v), mean, scale))
        assert abs(exact - at_float) <= mp.exp(bound)
    # informative: within a few times the first-order size |shift| |G'| (<= |shift| E|Y| e^(tY)) where it is small
    log_first_order = math.log(abs(shift) * (abs(mean + t * scale * scale) + scale)) + _normal_log_g(t, mean, scale)
    if abs(shift) * (abs(mean) + abs(t) * scale * scale + 3 * scale) < 1e-3:
        assert bound <= math.log(100.0) + log_first_order


def test_shift_error_is_zero_without_a_shift_and_needs_no_evaluation():
    def boom(points):
        raise AssertionError("evaluated")

    assert _tilts.log_shift_error(boom, np.array([1.5, 3.0]), np.zeros(2)).tolist() == [-np.inf, -np.inf]


@pytest.mark.parametrize("s, g, sigma", [(127.3 + 0.7j, 0.1, 1.0), (255.9 + 3.0j, 0.01, 2.0), (127.3, 0.1, 1.0)])
def test_subsampled_enclosure_at_a_rounded_tilt_is_widened_and_holds_at_the_exact_one(s, g, sigma):
    """``1 + Re s`` is not a float here (checked); the enclosure carries the shift bound and contains the exact
    value at the exact ``1 + s`` (mpmath), both directions."""
    mechanism = PoissonSubsampled(GaussianMechanism(sigma=sigma), g)
    z, offset = _tilts.two_sum(1.0, s.real)
    assert float(offset) != 0.0

    def log_upper(points):
        values, errors = cf.log_f_real_enclosure(points, g, 1.0 / sigma)
        return np.logaddexp(values.real, errors)

    widen = float(_tilts.log_shift_error(log_upper, float(z), float(offset)))
    value, log_err = mechanism.log_mgf_enclosure(np.array([s]), Direction.REMOVE)
    assert float(log_err[0]) >= widen
    for direction in (Direction.REMOVE, Direction.ADD):
        value, log_err = mechanism.log_mgf_enclosure(np.array([s]), direction)
        with mp.workdps(30):
            exact = mp.exp(pp.subsampled_log_mgf(mp.mpc(s.real, s.imag), g, "gaussian", sigma,
                                                 "remove" if direction is Direction.REMOVE else "add", dps=30,
                                                 degree=4))
            assert abs(mp.exp(mp.mpc(complex(value[0]))) - exact) <= mp.exp(float(log_err[0]))
        upper = float(mechanism.log_mgf_upper(np.array([s.real]), direction)[0]) if s.imag == 0 else None
        if upper is not None:
            assert upper >= float(mp.re(mp.log(exact)))


def test_add_direction_enclosure_widens_for_its_rounded_argument():
    """``-1 - s`` is rounded at ``s = 127.3 + 0.5i``: the add direction's error carries the base class's bound
    (the remove direction's transform at the float and its own shift), and the same at an exact ``s`` does not."""
    mechanism = PoissonSubsampled(GaussianMechanism(sigma=1.0), 0.05)
    s = 127.3 + 0.5j
    assert float(_tilts.two_sum(-1.0, -s.real)[1]) != 0.0
    expected = mechanism._add_argument_error(np.array([s.real]))[0]
    assert np.isfinite(expected)
    assert float(mechanism.log_mgf_enclosure(np.array([s]), Direction.ADD)[1][0]) >= expected
    exact_s = float(_tilts.exact_tilt(s.real)) + 0.5j
    assert mechanism._add_argument_error(np.array([exact_s.real]))[0] == -np.inf


@settings(max_examples=20, deadline=None)
@given(st.sampled_from([1e-4, 1e-3, 0.01, 0.1]), st.sampled_from([0.8, 1.0, 2.0, 5.0]),
       st.sampled_from([1, 10, 1000]), st.floats(0.05, 3.0))
def test_the_fourier_accountant_never_pays_for_rounded_tilts(q, sigma, steps, epsilon):
    """The plans' dampings are exact tilts, so neither the enclosures' shift bound nor the convex bracket is ever
    needed (they would only cost time: the bounds hold either way)."""
    calls = []
    original_shift, original_bracket = _tilts.log_shift_error, _tilts.convex_bracket

    def shift(log_upper, t, offset):
        if np.any(np.asarray(offset) != 0.0):
            calls.append(("shift", t))
        return original_shift(log_upper, t, offset)

    def bracket(value, offset):
        if np.any(np.asarray(offset) != 0.0):
            calls.append(("bracket", value))
        return original_bracket(value, offset)

    _tilts.log_shift_error, _tilts.convex_bracket = shift, bracket
    try:
        acc = FourierAccountant().compose(PoissonSubsampled(GaussianMechanism(sigma=sigma), q), count=steps)
        acc.delta_bounds(epsilon)
        acc.epsilon_bounds(1e-5)
    finally:
        _tilts.log_shift_error, _tilts.convex_bracket = original_shift, original_bracket
    assert calls == []


def test_make_plan_chooses_an_exact_damping():
    acc = FourierAccountant().compose(PoissonSubsampled(GaussianMechanism(sigma=1.0), 0.01), count=100)
    (_, lm, sup), _ = acc._directions()
    for kappa in (0.1, 2.3, 5.1, 0.7013):
        plan = make_plan(lm, sup, 1.0, 1e-9, kappa=kappa)
        assert float(_tilts.two_sum(1.0, plan.kappa)[1]) == 0.0
        assert float(_tilts.two_sum(-1.0, -plan.kappa)[1]) == 0.0


@settings(max_examples=40, deadline=None)
@given(st.lists(st.tuples(st.integers(1, 1000), st.floats(-50, 50), st.floats(-60, 60)), min_size=1, max_size=3))
@example([(1, 28.0, 0.0)])  # the gap high - low cancels: 1 against e^28 (an underestimate by 0.4% before)
@example([(14, 0.0, 51.0)])  # a gap beyond 709 (expm1 overflowed to inf before)
def test_product_error_bounds_the_product_of_enclosures_and_does_not_overflow(parts):
    """``log_product_error`` against mpmath: ``prod (|M~| + E)^n - prod |M~|^n`` (the bound it states), including
    gaps beyond ~709 where expm1 overflowed to inf before (a valid but useless error)."""
    from dpledger.mechanisms._logmath import log_product_error

    arrays = [(n, np.array([m]), np.array([e])) for n, m, e in parts]
    with np.errstate(over="raise"):
        got = float(log_product_error(arrays)[0])
    with mp.workdps(60):
        exact = (mp.fprod((mp.exp(m) + mp.exp(e)) ** n for n, m, e in parts)
                 - mp.fprod(mp.exp(m) ** n for n, m, _ in parts))
        assert np.isfinite(got)
        assert mp.log(exact) <= got  # an upper bound, whatever cancels (e.g. n = 1, log M~ = 28, log E = 0)
        # and not loose beyond what float64 can resolve: |high - low| is only known to ~(k + 6) u S
        scale = sum(n * (abs(m) + abs(max(m, e)) + 1.0) for n, m, e in parts)
        high = sum(n * mp.log(mp.exp(m) + mp.exp(e)) for n, m, e in parts)
        resolvable = exact + mp.exp(high) * 4 * (len(parts) + 6) * mp.mpf(2) ** -53 * scale
        low = abs(sum(n * m for n, m, _ in parts))
        assert got <= mp.log(resolvable) + 64 * 2.0**-53 * (low + abs(got) + 1.0)
