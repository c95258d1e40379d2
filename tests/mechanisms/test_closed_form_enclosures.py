"""mechanisms.closed_form_enclosures: the closed forms' float rounding, bounded (many runs multiply it)."""

import mpmath
import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from dpledger.accountants import FourierAccountant
from dpledger.accountants._fourier_atoms import two_point_log_mgf, two_point_log_mgf_enclosure
from dpledger.mechanisms import (
    DiscretePairMechanism,
    GaussianMechanism,
    LaplaceMechanism,
    PoissonSubsampled,
    PureDPMechanism,
    RandomizedResponse,
    _logmath,
    closed_form_enclosures,
    privacy_loss,
)
from dpledger.mechanisms.relations import Direction


def _laplace_m(z, t):
    """Exact ``M(z)`` of the Laplace pair with loss ratio ``t`` (mechanisms.privacy_loss's module docstring)."""
    low, high = mpmath.exp(-t * (1 + z)), mpmath.exp(z * t)
    return (low + high) / 2 + (high - low) / (2 * (1 + 2 * z))


def _contains(exact, value, log_err):
    """|exact - e^value| <= e^log_err, in mpmath."""
    return abs(exact - mpmath.exp(mpmath.mpc(complex(value)))) <= mpmath.exp(mpmath.mpf(float(log_err)))


def test_the_values_are_the_plain_closed_forms_bit_for_bit():
    """Each enclosure bounds the error of the value the plain closed form computes (the same float operations)."""
    rng = np.random.default_rng(3)
    s = rng.uniform(-3, 3, 200) + 1j * rng.uniform(-50, 50, 200)
    s[:20] = s[:20].real  # real tilts too
    for e in (1e-3, 0.4, 3.0):
        np.testing.assert_array_equal(closed_form_enclosures.bernoulli_log_mgf_enclosure(s, e)[0],
                                      privacy_loss.bernoulli_log_mgf(s, e))
    for t in (1e-9, 0.1, 2.0):
        np.testing.assert_array_equal(closed_form_enclosures.laplace_log_mgf_enclosure(s, t)[0],
                                      privacy_loss.laplace_log_mgf(s, t))
    e_values, counts = np.array([0.1, 0.7, 2.0]), np.array([3.0, 1000.0, 7.0])
    np.testing.assert_array_equal(two_point_log_mgf_enclosure(s, e_values, counts)[0],
                                  two_point_log_mgf(s, e_values, counts))
    np.testing.assert_array_equal(closed_form_enclosures.gaussian_log_mgf_enclosure(s, 0.37)[0],
                                  privacy_loss.gaussian_log_mgf(s, 1.0) * 0.37)


def test_numpys_complex_log1p_loses_what_the_bound_allows_for():
    """numpy's complex log1p is log(hypot(1 + x, y)): 8e-9 relative at 1e-10 on this platform. The per-run bound is
    absolute (a few ulps, not a few ulps of the result), so it covers that."""
    tiny = 1e-10 + 0j
    lost = abs(np.log1p(tiny) - np.log1p(1e-10))
    assert lost > 1e-18
    assert float(closed_form_enclosures.log_rounding_at(np.log1p(tiny))) >= lost


@pytest.mark.parametrize("runs", [1, 1000, 10**6])
def test_randomized_response_with_a_small_loss_many_runs_against_mpmath(runs):
    """PureDP(0.01) x n at s = 0.25 + iv: the per-run log is ~1e-3 and its absolute rounding a few ulps, so the
    composed error grows like n u |M|; the product of the enclosures (log_product_error) contains mpmath's value."""
    e = 0.01
    s = 0.25 + 1j * np.array([0.0, 0.3, 7.0, 150.0, 3e4])
    value, log_err = PureDPMechanism(epsilon=e).log_mgf_enclosure(s, Direction.REMOVE)
    composed = _logmath.log_product_error([(runs, value, log_err)])
    with mpmath.workdps(60):
        for si, vi, ei in zip(s, value, composed):
            exact = _bernoulli_m(mpmath.mpc(si.real, si.imag), mpmath.mpf(e)) ** runs
            assert _contains(exact, runs * vi, ei)


_TILTS = st.sampled_from([0.02, 0.25, 1.0, 4.0, -0.25, -0.75, -1.5])


def _bernoulli_m(z, e):
    p = 1 / (1 + mpmath.exp(-e))
    return p * mpmath.exp(z * e) + (1 - p) * mpmath.exp(-z * e)


#: name -> (enclosure, exact M at mpmath arguments, the parameter's range)
_FORMS = {
    "laplace": (closed_form_enclosures.laplace_log_mgf_enclosure, _laplace_m, (1e-3, 5.0)),
    "bernoulli": (closed_form_enclosures.bernoulli_log_mgf_enclosure, _bernoulli_m, (1e-6, 8.0)),
    "gaussian": (closed_form_enclosures.gaussian_log_mgf_enclosure,
                 lambda z, mu2: mpmath.exp(mu2 * z * (z + 1) / 2), (1e-4, 1e4)),
}


@pytest.mark.parametrize("form", sorted(_FORMS))
@given(kappa=_TILTS, v=st.floats(0.0, 1e4), fraction=st.floats(0.0, 1.0))
def test_enclosure_contains_mpmath(form, kappa, v, fraction):
    enclosure, exact_m, (low, high) = _FORMS[form]
    parameter = float(low * (high / low) ** fraction)  # log-uniform over the range
    value, log_err = enclosure(np.array([complex(kappa, v)]), parameter)
    with mpmath.workdps(50):
        z = mpmath.mpc(kappa, v)
        if form == "laplace" and abs(1 + 2 * z) == 0:
            return  # a removable singularity of the formula (its limit is finite)
        exact = exact_m(z, mpmath.mpf(parameter))
        if abs(exact) < mpmath.mpf(10) ** -300:
            return  # below the float range: the value underflows and the bound says nothing finer
        assert _contains(exact, value[0], log_err[0])


def test_discrete_pair_enclosure_contains_mpmath_near_a_zero_of_m():
    """A three-point pair at high frequency, where the terms' phases nearly cancel: the bound is absolute."""
    m = DiscretePairMechanism(np.log([0.5, 0.3, 0.2]), np.log([0.2, 0.3, 0.5]))
    s = 0.5 + 1j * np.linspace(0.0, 400.0, 97)
    value, log_err = m.log_mgf_enclosure(s, Direction.REMOVE)
    with mpmath.workdps(50):  # the stored (renormalised) log-masses taken as the pair: the bound allows for more
        for si, vi, ei in zip(s, value, log_err):
            z = mpmath.mpc(si.real, si.imag)
            exact = sum(mpmath.exp(a + z * (mpmath.mpf(a) - b)) for a, b in zip(m.log_p, m.log_q))
            assert _contains(exact, vi, ei)


def test_reflection_is_exact_below_minus_a_half_and_bounded_where_it_rounds():
    """``-1 - s`` is exact for ``-2^53 < Re s < -1/2``; beyond, a real ``s`` pays ``slope`` times the offset and a
    complex one gets no bound (inf)."""
    s = np.array([-0.75 + 3j, -2.3 + 0j, -123456.789 + 5j, 0.3 + 1j, -1e17 + 0j, -1e17 + 1j])
    z, d = closed_form_enclosures.reflect(s, slope=2.0)
    np.testing.assert_array_equal(z[:3], -1.0 - s[:3])
    assert z[3] == s[3]
    np.testing.assert_array_equal(d[:4], 0.0)
    assert 2.0 <= d[4] < 2.0 * (1 + 1e-12)  # 1e17 - 1 rounds to 1e17: offset 1
    assert d[5] == np.inf


def test_log_expm1_enclosure_does_not_overflow_and_contains_mpmath():
    """``n log(1 + r)`` of 10^4 Laplace runs passes 709: the large branch ``z + log1p(-e^-z)``."""
    z = np.array([1e-9 + 1e-9j, 0.3 - 2.0j, 1.5 + 40.0j, 800.0 + 3.0j, 3e4 - 1e3j])
    dz = np.full(z.shape, 1e-13)
    value, log_err = closed_form_enclosures.log_expm1_enclosure(z, dz)
    assert np.isfinite(value).all() and np.isfinite(log_err).all()
    with mpmath.workdps(60):
        for zi, vi, ei in zip(z, value, log_err):
            exact = mpmath.expm1(mpmath.mpc(zi.real, zi.imag))
            # any z' within dz of z: the bound covers the worst of the two ends
            for shift in (0, 1e-13, -1e-13j):
                assert _contains(mpmath.expm1(mpmath.mpc(zi.real, zi.imag) + shift), vi, ei)
            assert _contains(exact, vi, ei)


def test_accountant_node_enclosure_of_gaussians_and_randomized_response_contains_mpmath():
    """Gaussian x 10 plus randomized response x 10^5: 4.3 times the inversion's allowance before the fix."""
    accountant = FourierAccountant().compose(GaussianMechanism(sigma=3.0), 10).compose(RandomizedResponse(p=0.6), 10**5)
    e = float(RandomizedResponse(p=0.6).two_point_loss())
    s = 2.0 + 1j * np.linspace(0.0, 40.0, 41)
    value, log_err = accountant._log_mgf_enclosure(s, Direction.REMOVE)
    with mpmath.workdps(60):
        mu2 = 10 / mpmath.mpf(9)
        for si, vi, ei in zip(s, value, log_err):
            z = mpmath.mpc(si.real, si.imag)
            exact = mpmath.exp(mu2 * z * (z + 1) / 2) * _bernoulli_m(z, mpmath.mpf(e)) ** 10**5
            assert _contains(exact, vi, ei)


def test_real_axis_upper_bounds_are_above_mpmath():
    """log_mgf_upper of the closed forms and of subsampled two-point pairs: above the exact value, by little."""
    cases = [
        (LaplaceMechanism(scale=2.0), lambda s: _laplace_m(s, mpmath.mpf(0.5))),
        (PoissonSubsampled(RandomizedResponse(p=0.75), 0.1), None),
    ]
    s = np.array([-0.8, -0.3, 0.2, 1.7, 6.0])
    with mpmath.workdps(50):
        for mechanism, exact in cases:
            upper = mechanism.log_mgf_upper(s, Direction.REMOVE)
            for si, ui in zip(s, upper):
                x = mpmath.mpf(si)
                if exact is None:
                    q, loss = mpmath.mpf(0.1), mpmath.mpf(float(mechanism.mechanism.two_point_loss()))
                    p = 1 / (1 + mpmath.exp(-loss))
                    value = sum(b * (1 - q + q * mpmath.exp(lj)) ** (1 + x) for b, lj in ((1 - p, loss), (p, -loss)))
                else:
                    value = exact(x)
                truth = float(mpmath.log(value))
                assert truth <= ui <= truth + 1e-13 * (1 + abs(truth))
