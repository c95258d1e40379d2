"""Red team of the certified Fourier accountant's speed changes of 744bf07..a76500c (issue 14): each claims to keep
every bound proven. Checked here against independent references:

* the inversion's per-plan moduli and sums (``InversionPlan.moduli`` / ``enclosure_parts``, one cosine per node):
  on Gaussian plans (closed form, exact delta from mpmath), positive and negative dampings, with artificial node
  enclosure errors and large ``kappa eps``, the interval contains the exact delta, the rounding term is at least the
  term-by-term one of 744bf07 (re-derived here in a few lines), and the enclosure-error term at least the exact
  (mpmath) value of the sum it bounds;
* the relaxed Taylor target of high-frequency groups: a target of 1 or more left no Taylor power at all, and
  ``log_f_enclosure`` on an evenly spaced line beyond ``|v| ~ 3.2e9`` raised IndexError (744bf07 returned an
  enclosure); the phase sums at such a target must contain mpmath's sums;
* the decay bound's per-tilt cache (``_decay_parts``, ``_side_parts``, ``_log_lower_sum``): keys that compare equal
  (numpy scalars, ``-0.0``, ``np.inf``) must give the value of a fresh computation, whatever was cached before;
* ``_logmath.widen_up_entries``: at or above the exact ``value + relative |value| + absolute`` (Fractions);
* the layout search started anywhere, with a raised target and a cut, ends where one from 0 does;
* the epsilon search's finer second plan (``shorten = 2^-1/2``): reached on the commit's own cell, interval within
  rtol and overlapping 744bf07's proven interval.
"""

import math
from fractions import Fraction

import mpmath as mp
import numpy as np
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from dpledger.accountants import FourierAccountant, fourier_inversion
from dpledger.accountants import _fourier_search as search
from dpledger.mechanisms import GaussianMechanism, PoissonSubsampled, _logmath, _phase_fft
from dpledger.mechanisms import subsampled_gaussian_cf as cf
from dpledger.mechanisms import subsampled_gaussian_decay as decay

_EPS = np.finfo(np.float64).eps


# ---------------------------------------------------------------- inversion: per-plan moduli and sums


def _gaussian_law(mu):
    def log_mgf(s):
        s = np.asarray(s, dtype=np.complex128)
        return 0.5 * mu * mu * s * (s + 1.0)

    return log_mgf


def _gaussian_sup(mu):
    return lambda kappa, u: 0.5 * mu * mu * (kappa * (kappa + 1.0) - u * u)


def _exact_delta(mu, eps):
    """delta(eps) of the Gaussian loss N(mu^2/2, mu^2) (privacy loss of a Gaussian mechanism of noise 1/mu)."""
    with mp.workdps(50):
        mu, eps = mp.mpf(mu), mp.mpf(eps)
        return mp.ncdf(-eps / mu + mu / 2) - mp.exp(eps) * mp.ncdf(-eps / mu - mu / 2)


def _term_by_term_rounding(plan, epsilon):
    """The rounding term of :func:`invert` as 744bf07 computed it: every term's exponent ``Re base - kappa eps``
    formed anew, its maximum subtracted, the magnitude weights summed with the frequency part at this epsilon."""
    s, _, weights, magnitude_weights, log_den = plan.contour
    t_re = plan.contour_parts[0] - plan.kappa * epsilon
    peak = float(np.max(t_re))
    modulus = np.exp(t_re - peak)
    magnitude = float(np.sum((magnitude_weights + abs(epsilon) * plan.frequency_weights) * modulus)) * np.exp(peak)
    rounding = magnitude * _EPS * plan.step / np.pi * (1.0 + np.log2(plan.terms + 1))
    if plan.kappa < 0:
        rounding += 2.0 * _EPS
    if plan.log_err_nodes is not None:
        log_terms = plan.log_err_nodes - plan.kappa * epsilon - log_den
        top = float(np.max(log_terms))
        rounding += float(np.sum(weights * np.exp(log_terms - top)) * np.exp(top) * plan.step / np.pi)
    return rounding


def _exact_enclosure_sum(plan, epsilon):
    """``(step / pi) sum_k w_k E_k |e^(-s_k eps)| / |s_k (1 + s_k)|`` in mpmath (from the plan's float inputs)."""
    s, _, weights = plan.contour[:3]
    with mp.workdps(25):
        total = mp.fsum(
            mp.mpf(float(w)) * mp.exp(mp.mpf(float(le)) - mp.mpf(plan.kappa) * mp.mpf(epsilon))
            / (abs(mp.mpc(complex(sk))) * abs(1 + mp.mpc(complex(sk))))
            for w, le, sk in zip(weights, plan.log_err_nodes, s))
        return total * (2 * mp.pi / mp.mpf(plan.period)) / mp.pi


@settings(max_examples=25, deadline=None)
@given(st.floats(-2.5, 1.3).map(lambda e: 10.0**e), st.floats(0.05, 2.0), st.floats(0.0, 2.0),
       st.floats(-8.0, -1.0), st.one_of(st.none(), st.floats(-0.95, -0.05)), st.integers(0, 2**32 - 1))
@example(0.05, 0.05, 0.0, -3.0, None, 1)  # damping ~ 10^3 at the plan (kappa eps large)
@example(20.0, 1.0, 2.0, -6.0, None, 2)  # large mu: large Re base at the peak
@example(1.0, 0.5, 0.5, -4.0, -0.5, 3)  # the negative-damping plan (_invert_negative)
def test_inversion_bounds_contain_the_exact_delta_and_charge_the_term_by_term_rounding(
        mu, a, b, log_rtol, kappa, seed):
    eps0 = a * mu * mu / 2.0 + b * mu
    exact0 = float(_exact_delta(mu, eps0))
    if exact0 < 1e-200:
        return
    try:
        plan = fourier_inversion.make_plan(_gaussian_law(mu), _gaussian_sup(mu), eps0, exact0 * 10.0**log_rtol,
                                           kappa=kappa)
    except fourier_inversion.TruncationLimit:  # eps0 below the loss's mean: a damping near 0, no plan to check
        return
    rng = np.random.default_rng(seed)
    # the same plan with node enclosure errors (as the certified laws' plans carry), some of them zero
    errs = plan.log_m_nodes.real + rng.uniform(-45.0, -25.0, plan.log_m_nodes.size)
    errs[rng.integers(0, errs.size, 2)] = -np.inf
    with_errors = fourier_inversion.InversionPlan(**{**{f: getattr(plan, f) for f in (
        "kappa", "kappa_tail", "period", "terms", "log_m_nodes", "log_m_kappa", "log_m_tail", "log_sup", "left_out")},
        "log_err_nodes": errs})
    for eps in eps0 * np.array([0.5, 1.0, 1.7, 6.0]):
        bounds, errors = fourier_inversion.invert(plan, eps)
        exact = _exact_delta(mu, eps)
        # (below the float range a bound of 0 is the float's underflow, as in 744bf07; the accountant floors its
        # reports at 1e-323)
        if math.isfinite(errors["rounding"]) and exact > 1e-300:
            assert bounds.lower <= exact * (1 + mp.mpf(1e-15)) and exact <= bounds.upper * (1 + 1e-15), (
                mu, eps0, eps, plan.kappa, bounds, exact)
            assert errors["rounding"] >= _term_by_term_rounding(plan, eps) * (1.0 - 1e-12)
        _, errors = fourier_inversion.invert(with_errors, eps)
        if math.isfinite(errors["rounding"]):
            assert errors["rounding"] >= _term_by_term_rounding(with_errors, eps) * (1.0 - 1e-12)
            if plan.terms <= 256:  # mpmath's sum costs ~0.1 ms a node
                exact_sum = _exact_enclosure_sum(with_errors, eps)
                if exact_sum > 1e-300:  # (below, the float's underflow to 0, as in 744bf07)
                    assert fourier_inversion._enclosure_error(with_errors, eps) >= exact_sum


# ---------------------------------------------------------------- relaxed Taylor targets


@pytest.mark.parametrize("target", [0.5, 1.0, 7.0])
def test_phase_sums_at_a_taylor_target_of_one_or_more_contain_the_mpmath_sums(target):
    """A raised Taylor target (the enclosure's, ``1e-16 (v_low / 32)^2``, reaches 1 at ``v_low ~ 3.2e9``) must
    still take one power at least: with none, the sums were an empty FFT (IndexError)."""
    rng = np.random.default_rng(5)
    r = np.sort(rng.uniform(-3.0, 3.0, 300))
    c = rng.uniform(0.0, 1.0, 300)
    v_c, d, k_c, count = 100.0, 0.37, 40, 80
    sums, phase_errors, sum_error = _phase_fft.phase_sums_uniform(v_c, d, k_c, count, r, c, taylor_target=target)
    slack = float(np.sum(c * phase_errors)) * (1.0 + 1e-12)
    with mp.workdps(30):
        for k in (0, 41, count - 1):
            v = mp.mpf(v_c) + (k - k_c) * mp.mpf(d)
            exact = mp.fsum(mp.mpf(float(cj)) * mp.expj(v * mp.mpf(float(rj))) for cj, rj in zip(c, r))
            assert abs(exact - mp.mpc(complex(sums[k]))) <= sum_error + slack


def test_an_evenly_spaced_line_beyond_the_taylor_limit_is_enclosed():
    """``log_f_enclosure`` on 300 evenly spaced frequencies from 4e9 (one group, Taylor target ~1.6): 744bf07
    returned an enclosure, ad342f9 raised IndexError. The enclosure must be finite and consistent with
    ``|F(a + iv)| <= F(a)``."""
    a, g, mu = 0.5, 1e-4, 0.2
    v = 4e9 + 1e3 * np.arange(300)
    value, log_err = cf.log_f_enclosure(a, v, g, mu)
    assert np.all(np.isfinite(log_err)) and np.all(np.isfinite(value.real))
    # |F~| - E <= |F| <= F(a): an enclosure that excluded every value of modulus at most F(a) would be wrong
    assert np.all(np.exp(value.real) - np.exp(log_err) <= np.exp(cf.log_f_upper(a, g, mu)))


# ---------------------------------------------------------------- decay bound: per-tilt cache


def _fresh(*args, **kwargs):
    for cached in (decay._decay_parts, decay._log_lower_sum):
        cached.cache_clear()
    return decay.log_f_sup(*args, **kwargs)


@pytest.mark.parametrize("a, g, sigma, cut", [(0.0, 0.01, 1.0, 3.0), (2.5, 1e-3, 0.8, math.inf), (-0.4, 0.2, 2.0, 1.5),
                                              (40.0, 1e-4, 0.6, 6.0)])
def test_the_decay_cache_returns_what_a_fresh_computation_does(a, g, sigma, cut):
    """Keys that compare equal (numpy scalars, ``-0.0``, ``np.inf``, an int width) share an entry: its value must
    be a fresh computation's at every ``v_min``, whichever equal key filled it, and a cut must never reuse the whole
    law's parts (or the reverse)."""
    mu = 1.0 / sigma
    keys = [dict(a=a, g=g, mu=mu, cut=cut), dict(a=np.float64(a), g=np.float64(g), mu=np.float64(mu), cut=cut),
            dict(a=-0.0 if a == 0.0 else a, g=g, mu=mu, cut=np.inf if math.isinf(cut) else np.float64(cut)),
            dict(a=a, g=g, mu=mu, cut=math.inf if math.isfinite(cut) else 4.0)]
    for v_min in (0.7, 25.0, 300.0):
        reference = {i: _fresh(k["a"], v_min, k["g"], k["mu"], cut=k["cut"]) for i, k in enumerate(keys)}
        for order in (range(4), reversed(range(4))):
            for cached in (decay._decay_parts, decay._log_lower_sum):
                cached.cache_clear()
            decay.log_f_sup(a, 2.0 * v_min, g, mu, width=14, cut=math.inf)  # another entry in between
            for i in order:
                k = keys[i]
                assert decay.log_f_sup(k["a"], v_min, k["g"], k["mu"], width=14, cut=k["cut"]) == reference[i]
    assert decay._decay_parts.cache_info().currsize >= 2  # the cut and the whole law kept apart


# ---------------------------------------------------------------- widen_up_entries


_finite = st.floats(allow_nan=False, allow_infinity=False)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(_finite, st.floats(0.0, 1e3), st.floats(0.0, 1e300)), min_size=1, max_size=8))
@example([(5e-324, 1e-16, 0.0), (-1.0, 2.0**-52, 0.0), (1.7976931348623157e308, 1e-16, 1e300), (0.0, 0.5, 0.0)])
@example([(1.7976931348623153e308, 0.0, 0.0)])  # the array path's bound three floats up overflows
@example([(-1.0, 1.0, 0.0)])  # exact cancellation: the array path gives 0, the scalar path one spacing of 1 above
def test_widen_up_entries_is_at_or_above_the_exact_value(entries):
    v, rel, ab = (np.array(column) for column in zip(*entries))
    out = _logmath.widen_up_entries(v, rel, ab)
    array_path = _logmath.widen_up(v, rel, ab)
    assert out.shape == v.shape
    for o, x, r, b, w in zip(out, v, rel, ab, array_path):
        if math.isinf(o):
            assert o > 0
            continue
        assert Fraction(float(o)) >= Fraction(float(x)) + Fraction(float(r)) * abs(Fraction(float(x))) + Fraction(
            float(b))
        # one spacing per operation, of the largest intermediate (cancellation: -1 + 1 * 1 gives 2.2e-16, not 0)
        largest = max(abs(float(x)), abs(float(r) * float(x)), float(b), abs(float(w)))
        assert o <= math.nextafter(math.nextafter(math.nextafter(float(w), math.inf), math.inf), math.inf) or (
            o <= float(w) + 3.0 * math.ulp(largest))


def test_widen_up_entries_keeps_infinities_and_broadcasts():
    out = _logmath.widen_up_entries(np.array([[-np.inf, 1.0], [np.inf, -2.0]]), 1e-3, np.array([[0.5], [0.0]]))
    assert out.shape == (2, 2) and out[0, 0] == -np.inf and out[1, 0] == np.inf
    assert out[0, 1] >= 1.501 and out[1, 1] >= -2.0 + 2e-3


# ---------------------------------------------------------------- layout search from any start


@pytest.mark.parametrize("a, g, sigma, v_top, v_low, cut", [(2.0, 0.05, 1.0, 1600.0, 900.0, math.inf),
                                                            (6.0, 1e-4, 0.6, 3e4, 2e4, 4.0)])
def test_a_relaxed_layout_search_started_anywhere_ends_where_one_from_zero_does(a, g, sigma, v_top, v_low, cut):
    mu = 1.0 / sigma
    base = cf._layout(a, v_top, g, mu, 14.0, cut, v_low)
    log_share = cf._reference(a, g, mu, 14.0, cut)[2] + cf._LOG_TARGET + cf._log_relaxation(v_low)
    assert base[2] <= log_share + 1e-9
    rng = np.random.default_rng(0)
    for start in (base[4] + 4, base[4] - 2, rng.integers(0, 12, base[4].size)):
        other = cf._layout(a, v_top, g, mu, 14.0, cut, v_low, start)
        assert np.array_equal(other[4], base[4]) and np.array_equal(other[1], base[1]) and other[2] == base[2]
        assert np.all(np.diff(other[1]) > 0)


# ---------------------------------------------------------------- the epsilon search's finer second plan


def test_the_finer_second_plan_is_reached_and_meets_rtol(monkeypatch):
    """q 1e-4, sigma 0.6, 100 steps (the cell of c083db5), its truncation bound a single supremum (with the banded
    one, fourier_inversion._banded_sup, the first plan meets rtol): the first plan misses rtol and the second takes
    steps of damping of 2^-1/2. 744bf07 certified epsilon in [0.0392170059145, 0.0392170069416] (rtol 1e-6) at
    delta 1e-5: the true epsilon lies there, so the new interval must meet it, and be within rtol."""
    monkeypatch.setattr(fourier_inversion, "_TRUNCATION_BANDS", 0)
    seen = []
    original = search.make_plan
    monkeypatch.setattr(search, "make_plan", lambda *args, **kw: seen.append(kw.get("shorten")) or original(
        *args, **kw))
    acc = FourierAccountant().compose(PoissonSubsampled(GaussianMechanism(sigma=0.6), 1e-4), count=100)
    bounds = acc.epsilon_bounds(1e-5)
    assert search._REPLAN_SHORTEN in seen
    assert bounds.lower <= 0.0392170069416 and 0.0392170059145 <= bounds.upper
    assert bounds.upper - bounds.lower <= 1e-6 * bounds.estimate


def test_with_the_banded_truncation_bound_the_same_cell_meets_the_same_interval():
    """The same cell with the banded truncation bound (one plan): the interval still meets 744bf07's."""
    acc = FourierAccountant().compose(PoissonSubsampled(GaussianMechanism(sigma=0.6), 1e-4), count=100)
    bounds = acc.epsilon_bounds(1e-5)
    assert bounds.lower <= 0.0392170069416 and 0.0392170059145 <= bounds.upper
    assert bounds.upper - bounds.lower <= 1e-6 * bounds.estimate


@pytest.mark.parametrize("shorten", [1.0, 1.5, 0.0, -0.5, float("nan")])
def test_a_shortening_ratio_outside_the_unit_interval_is_refused_clearly(shorten):
    """``make_plan(shorten=...)`` takes True, False or a ratio in (0, 1) (c083db5): 1.0 raised OverflowError, 1.5
    IndexError, -0.5 a NaN conversion error."""
    with pytest.raises(ValueError, match="shorten"):
        fourier_inversion.make_plan(_gaussian_law(1.0), _gaussian_sup(1.0), 2.0, 1e-8, shorten=shorten)
    plan = fourier_inversion.make_plan(_gaussian_law(1.0), _gaussian_sup(1.0), 2.0, 1e-8, shorten=0.5)
    assert plan.kappa > 0 and fourier_inversion.invert(plan, 2.0)[0].upper >= float(_exact_delta(1.0, 2.0))
