"""Red team of "proven at the exact tilt" (d758f1c, issue 14): where ``1 + s`` or ``-1 - s`` IS rounded, the widened
bounds of mechanisms/_tilts.py still hold.

The accountant's plans never need the widening: their dampings come from Renyi orders (``kappa = alpha - 1`` is
exact for ``alpha`` in [1, 2], and ``1 + kappa`` is exact for most ``kappa >= 1``) and are moved by
``_tilts.exact_tilt``. Replacing ``exact_tilt`` by the identity therefore leaves the widening unused (checked: no
call of ``log_shift_error`` with a nonzero shift on the ledgers below). Here it is replaced by the opposite, a move
of at most a few ulps to a float at which both ``1 + kappa`` and ``-1 - kappa`` are rounded, so that the plans,
Chernoff searches and decay bounds run on rounded tilts; the intervals must still contain mpmath's exact values,
and the widening must have been computed. The enclosures themselves are checked at random complex ``s`` with
rounded ``1 + Re s`` against mpmath (tests/oracles/privacy_profiles.py), both directions, and the shift bound on the
subsampled Gaussian's own ``F`` at offsets large enough (up to 0.3) that a missing factor would show.
"""

import math

import mpmath as mp
import numpy as np
import pytest
from hypothesis import assume, example, given
from hypothesis import strategies as st

from dpledger.accountants import FourierAccountant, _fourier_search, fourier_inversion
from dpledger.mechanisms import Direction, GaussianMechanism, PoissonSubsampled, _tilts, subsampled
from dpledger.mechanisms import subsampled_gaussian_cf as cf
from dpledger.mechanisms.subsampled_body import RemoveBody
from tests.mechanisms.test_subsampled_body import _gap
from tests.mechanisms.test_subsampled_body import _oracle as body_oracle
from tests.oracles import privacy_profiles as pp
from tests.soundness._cases import budget, record


def _rounded(x):
    """True where neither ``1 + x`` nor ``-1 - x`` is exact in float64."""
    return float(_tilts.two_sum(1.0, x)[1]) != 0.0 and float(_tilts.two_sum(-1.0, -x)[1]) != 0.0


def _inexact_tilt(kappa):
    """The opposite of ``exact_tilt``: each damping moved up by at most 4 ulps to a float at which ``1 + k`` and
    ``-1 - k`` are both rounded (left alone where there is none so close: ``1 + k`` is exact for most ``k >= 2``)."""
    arr = np.array(kappa, dtype=np.float64, copy=True)
    flat = arr.reshape(-1)
    for i, x in enumerate(flat):
        y = x
        for _ in range(5):
            if np.isfinite(y) and y != 0.0 and _rounded(y):
                flat[i] = y
                break
            y = np.nextafter(y, np.inf)
    return arr[()]


@pytest.fixture
def rounded_dampings(monkeypatch):
    """Every damping the accountant chooses moved to a rounded tilt; returns the list of widenings computed (one
    entry per ``log_shift_error`` call with a nonzero shift) and of plan dampings."""
    seen = {"widenings": [], "dampings": []}
    shift_error, make_plan = _tilts.log_shift_error, fourier_inversion.make_plan

    def counted_shift_error(log_upper, t, shift):
        out = shift_error(log_upper, t, shift)
        if np.any(np.asarray(shift) != 0.0):
            seen["widenings"].append(float(np.max(out)))
        return out

    def counted_plan(*args, **kwargs):
        plan = make_plan(*args, **kwargs)
        seen["dampings"].append(plan.kappa)
        return plan

    # the cases are two runs: kept on the inversion they test (two subsampled Gaussians take accountants.two_runs)
    monkeypatch.setattr(FourierAccountant, "_few_runs", lambda self: None)
    monkeypatch.setattr(_tilts, "exact_tilt", _inexact_tilt)  # fourier_accountant.py calls _tilts.exact_tilt
    monkeypatch.setattr(_fourier_search, "exact_tilt", _inexact_tilt)
    monkeypatch.setattr(fourier_inversion, "exact_tilt", _inexact_tilt)
    monkeypatch.setattr(_tilts, "log_shift_error", counted_shift_error)
    monkeypatch.setattr(fourier_inversion, "make_plan", counted_plan)
    monkeypatch.setattr(_fourier_search, "make_plan", counted_plan)
    return seen


def test_inexact_tilt_rounds_both_directions_near_small_dampings():
    for kappa in (0.4488, 0.9685, 1.2545, 1.8655, 0.02, -0.3):
        k = float(_inexact_tilt(kappa))
        assert _rounded(k) and abs(k - kappa) <= 4 * math.ulp(kappa)


# (sigma, q, steps, epsilon): plans at dampings 0.7-1.9, where 1 + kappa rounds (found with the identity in place
# of exact_tilt: the dampings the plans chose were all exact already).
DELTA_CASES = [(1.0, 0.5, 2, 0.02), (0.7, 0.2, 2, 0.3), (0.8, 0.1, 2, 0.05)]


@pytest.mark.parametrize("sigma, q, steps, epsilon", DELTA_CASES)
def test_delta_interval_at_rounded_dampings_contains_the_exact_delta(rounded_dampings, sigma, q, steps, epsilon):
    acc = FourierAccountant().compose(PoissonSubsampled(GaussianMechanism(sigma=sigma), q), steps)
    b = acc.delta_bounds(epsilon)
    assert acc._derived.get("path") == "inversion"
    assert any(_rounded(k) for k in rounded_dampings["dampings"])  # the plan ran at a rounded tilt
    assert rounded_dampings["widenings"] and all(np.isfinite(rounded_dampings["widenings"]))
    exact = pp.subsampled_gaussian_profile(epsilon, q, sigma, steps, dps=20)  # ~15 digits
    assert mp.mpf(b.lower) <= exact <= mp.mpf(b.upper), (sigma, q, steps, epsilon, b, exact)
    # the widening costs nothing visible: the interval stays tight
    assert b.upper - b.lower <= 1e-6 * b.upper
    record("rounded tilts: delta interval")


def test_epsilon_interval_at_rounded_dampings_contains_the_exact_epsilon(rounded_dampings):
    sigma, q, steps, delta = 1.0, 0.5, 2, 0.2
    acc = FourierAccountant().compose(PoissonSubsampled(GaussianMechanism(sigma=sigma), q), steps)
    b = acc.epsilon_bounds(delta)
    assert acc._derived.get("path") == "inversion"
    assert any(_rounded(k) for k in rounded_dampings["dampings"])
    assert rounded_dampings["widenings"]
    profile = lambda e: pp.subsampled_gaussian_profile(e, q, sigma, steps, dps=20)  # noqa: E731
    assert b.lower > 0.0 and profile(b.lower) >= delta >= profile(b.upper), b
    record("rounded tilts: epsilon interval")


def _oracle(s, q, sigma, direction, dps=30):
    return pp.subsampled_log_mgf(mp.mpc(s.real, s.imag), q, "gaussian", sigma,
                                 "remove" if direction is Direction.REMOVE else "add", dps=dps, degree=4)


tilts = st.one_of(st.floats(-0.9, 1.0), st.floats(1.0, 30.0)).filter(_rounded)


@budget(4)
@given(st.sampled_from([1e-4, 1e-2, 0.2, 0.6]), st.sampled_from([0.6, 1.0, 2.5]), tilts,
       st.one_of(st.just(0.0), st.floats(0.01, 8.0)))
@example(0.2, 0.6, 0.1, 0.0)
@example(1e-2, 1.0, 7.3, 2.0)
def test_enclosure_at_rounded_tilt_holds_at_the_exact_argument_both_directions(q, sigma, re, im):
    mechanism = PoissonSubsampled(GaussianMechanism(sigma=sigma), q)
    s = complex(re, im)
    # the remove direction's F at fl(1 + s) is widened by at least the shift bound; the add direction's -1 - s too
    z, offset = _tilts.two_sum(1.0, re)

    def log_upper(points):
        values, errors = cf.log_f_real_enclosure(points, q, 1.0 / sigma)
        return np.logaddexp(values.real, errors)

    _, direct_error = subsampled.tilted_enclosure(mechanism.mechanism, q, np.array([s]))
    assert float(direct_error[0]) >= float(_tilts.log_shift_error(log_upper, float(z), float(offset)))
    assert float(mechanism._add_argument_error(np.array([re]))[0]) > -np.inf
    for direction in Direction:
        value, log_err = mechanism.log_mgf_enclosure(np.array([s]), direction)
        with mp.workdps(30):
            exact = mp.exp(_oracle(s, q, sigma, direction))
            assert abs(mp.exp(mp.mpc(complex(value[0]))) - exact) <= mp.exp(float(log_err[0])), (q, sigma, s,
                                                                                                   direction)
            if im == 0.0:
                upper = float(mechanism.log_mgf_upper(np.array([re]), direction)[0])
                assert upper >= mp.log(mp.re(exact)), (q, sigma, re, direction)
        record("rounded tilts: enclosure at rounded 1 + Re s")


@budget(5)
@given(st.sampled_from([1e-3, 0.05, 0.5]), st.sampled_from([0.6, 1.0, 3.0]), st.floats(-3.0, 12.0),
       st.floats(1e-6, 0.3), st.booleans(), st.floats(0.0, 6.0))
@example(0.5, 0.6, 8.0, 0.3, False, 0.0)
@example(0.05, 1.0, -2.5, 0.2, True, 3.0)
def test_shift_bound_covers_the_subsampled_gaussians_own_transform(q, sigma, t, shift, negative, v):
    """``|F(t + e + iv) - F(t + iv)| <= exp(log_shift_error)`` with ``F(z) = E_B[(1 - q + q A/B)^z]`` in mpmath
    (the law the enclosures widen), at offsets far larger than a rounding so that a missing factor would show."""
    shift = -shift if negative else shift
    assume(t != 0.0)

    def log_upper(points):
        values, errors = cf.log_f_real_enclosure(points, q, 1.0 / sigma)
        return np.logaddexp(values.real, errors)

    bound = float(_tilts.log_shift_error(log_upper, t, shift))
    with mp.workdps(20):
        def f(re):  # F(re + iv) = M_remove(re - 1 + iv), the argument exact in mpmath
            return mp.exp(pp.subsampled_log_mgf(mp.mpc(re - 1, v), q, "gaussian", sigma, "remove", dps=20))

        diff = abs(f(mp.mpf(t) + mp.mpf(shift)) - f(mp.mpf(t)))
        assert diff <= mp.exp(bound), (q, sigma, t, shift, v, diff, bound)
    record("rounded tilts: shift bound on F")


@budget(4)
@given(st.sampled_from([1e-4, 1e-3, 0.02]), st.sampled_from([0.7, 1.0, 2.0]), tilts, st.floats(0.0, 3.0),
       st.floats(1.0, 8.0))
@example(1e-4, 0.7, 0.3, 1.0, 2.5)
def test_cut_body_at_rounded_tilt_holds_at_the_exact_argument(q, sigma, re, im, cut):
    """``RemoveBody`` (the cut law of narrow ledgers) at ``s`` with rounded ``1 + Re s``: its enclosure contains
    ``F_b(1 + s)`` at the exact argument, its real upper bound and its decay bound (at ``u = Im s``) are above it;
    the oracle is tests/mechanisms/test_subsampled_body.py's mpmath quadrature of the cut integral."""
    body = RemoveBody(PoissonSubsampled(GaussianMechanism(sigma=sigma), q), cut)
    mu = 1.0 / sigma
    with mp.workdps(30):
        z = 1 + mp.mpf(re) + 1j * mp.mpf(im)  # the exact 1 + s
        exact = body_oracle(z, q, mu, cut)
        exact_real = body_oracle(mp.mpf(1) + mp.mpf(re), q, mu, cut)
    value, log_err = body.log_mgf_enclosure(np.array([complex(re, im)]))
    # the rounding of 1 + s moves F_b by ~1e-16 relative, below what the oracle resolves: that the widening is
    # there is checked directly (the shift bound with the body's own real-axis bounds)
    z, offset = _tilts.two_sum(1.0, re)

    def log_upper(points):
        values, errors = cf.log_f_real_enclosure(points, q, mu, cut=cut)
        return np.logaddexp(values.real, errors)

    assert float(log_err[0]) >= float(_tilts.log_shift_error(log_upper, float(z), float(offset))) > -np.inf
    gap, bound = _gap(value[0], log_err[0], exact)
    assert gap <= bound, (q, sigma, re, im, cut, gap, bound)
    assert float(body.log_mgf_upper(np.array([re]))[0]) >= mp.log(mp.re(exact_real)), (q, sigma, re, cut)
    assert body.log_mgf_sup(re, im) >= mp.log(abs(exact)), (q, sigma, re, im, cut)
    record("rounded tilts: cut body at rounded 1 + Re s")
