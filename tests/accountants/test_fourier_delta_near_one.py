"""delta near 1 (epsilon far below the mean loss) on Laplace ledgers, whose atoms are enumerated and whose rest is
inverted at a damping of at least 0.25: there the terms' rounding exceeded delta itself and the query raised
AccuracyError. ``_fourier_search.complement_chernoff_bounds`` answers ``[1 - u, 1]`` with ``u`` a Chernoff bound on
``1 - delta``.

Oracles: the Gaussian mechanism's exact profile (mpmath Phi) for the bound itself, and the privacy buckets' proven
interval (an independent method) for the Laplace ledgers."""

import mpmath as mp
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dpledger.accountants import FourierAccountant
from dpledger.accountants._fourier_search import complement_chernoff_bounds
from dpledger.mechanisms import LaplaceMechanism


def _gaussian(mu):
    return lambda s: 0.5 * mu * mu * np.asarray(s, dtype=np.complex128) * (1.0 + np.asarray(s, dtype=np.complex128))


def _exact_delta(mu, eps):
    with mp.workdps(40):
        mu, eps = mp.mpf(mu), mp.mpf(eps)
        return mp.ncdf(-eps / mu + mu / 2) - mp.exp(eps) * mp.ncdf(-eps / mu - mu / 2)


@settings(max_examples=80, deadline=None)
@given(mu=st.floats(0.5, 60.0), fraction=st.floats(0.0, 0.4), log_rtol=st.floats(-12, -2))
def test_the_complement_bound_contains_the_exact_delta(mu, fraction, log_rtol):
    eps = fraction * mu * mu / 2.0  # below the mean loss mu^2 / 2
    bounds = complement_chernoff_bounds(_gaussian(mu), eps, 10.0**log_rtol)
    exact = _exact_delta(mu, eps)
    if bounds is None:  # the Chernoff bound on 1 - delta is not within rtol: the search inverts instead
        return
    assert bounds.lower <= exact <= bounds.upper == 1.0
    assert bounds.lower <= bounds.estimate <= bounds.upper
    assert 1.0 - bounds.lower <= 10.0**log_rtol * bounds.estimate


def test_the_complement_bound_answers_where_one_minus_delta_is_tiny_and_declines_near_the_mean():
    lm = _gaussian(20.0)  # mean loss 200
    bounds = complement_chernoff_bounds(lm, 50.0, 1e-6)
    assert bounds is not None and bounds.lower <= _exact_delta(20.0, 50.0) and 1.0 - bounds.lower < 1e-6
    assert complement_chernoff_bounds(lm, 190.0, 1e-6) is None  # delta(190) is far from 1


@pytest.mark.parametrize("epsilon", [1.0, 3.0, 10.0])
def test_laplace_ledger_far_below_its_mean_loss_answers_within_rtol(epsilon):
    accountant = FourierAccountant().compose(LaplaceMechanism(scale=2.0), 1000)
    bounds = accountant.delta_bounds(epsilon)
    assert bounds.upper - bounds.lower <= 1e-6 * bounds.estimate and bounds.upper == 1.0
    buckets_lower, buckets_upper = accountant._buckets().delta_bounds(epsilon)
    assert max(bounds.lower, buckets_lower) <= min(bounds.upper, buckets_upper)
    assert accountant.bound_kind.value == "upper bound"


def test_laplace_ledger_near_its_mean_loss_still_inverts():
    """100 runs at epsilon 1: delta 0.967, the inversion path (the complement bound is not within rtol there)."""
    accountant = FourierAccountant().compose(LaplaceMechanism(scale=2.0), 100)
    bounds = accountant.delta_bounds(1.0)
    assert bounds.upper < 1.0 and bounds.upper - bounds.lower <= 1e-6 * bounds.estimate
    assert 0.967 < bounds.lower < bounds.upper < 0.9671


def test_the_complement_bound_uses_upper_bounds_on_log_m_that_cover_the_closed_forms_rounding():
    """The complement Chernoff bound takes ``log M(-a)`` from the ledger's real-axis upper bounds, which include the
    closed forms' rounding (mechanisms.closed_form_enclosures): Laplace scale 2 (loss 1/2) x 1000 and randomized
    response p = 0.75 x 50 against mpmath at 50 digits, above the exact value by at most a few hundred ulps per run."""
    import mpmath

    from dpledger.mechanisms import Direction, RandomizedResponse

    accountant = FourierAccountant().compose(LaplaceMechanism(scale=2.0), 1000).compose(RandomizedResponse(p=0.75), 50)
    a = np.array([0.01, 0.3, 0.49, 0.77, 0.99])
    upper = np.real(accountant._direction_log_mgf(Direction.REMOVE)((-a).astype(np.complex128)))
    e = float(RandomizedResponse(p=0.75).two_point_loss())
    with mpmath.workdps(50):
        t = mpmath.mpf(0.5)
        p = 1 / (1 + mpmath.exp(-mpmath.mpf(e)))
        for s_, bound in zip(-a, upper):
            s = mpmath.mpf(s_)
            low, high = mpmath.exp(-t * (1 + s)), mpmath.exp(s * t)
            lap = (low + high) / 2 + (high - low) / (2 * (1 + 2 * s))
            rr = p * mpmath.exp(s * e) + (1 - p) * mpmath.exp(-s * e)
            exact = float(1000 * mpmath.log(lap) + 50 * mpmath.log(rr))
            assert exact <= bound <= exact + 1050 * 1e-13


def test_a_plan_at_the_damping_cap_is_not_tried_where_delta_is_far_below_its_bound(monkeypatch):
    """Two runs of q = 1e-4, sigma 3 at epsilon 1: the Chernoff bound at the damping cap (64) is 3e-42 and beyond it
    3.4e-75, so a plan at the cap would carry a float rounding of about 1e-58 at least, 10^16 times delta: it is not
    made (before, plans of up to 524,289 nodes failed on rounding), and the bound beyond the cap is reported."""
    from dpledger.accountants import _fourier_search
    from dpledger.mechanisms import Direction, GaussianMechanism, PoissonSubsampled

    monkeypatch.setattr(FourierAccountant, "_few_runs", lambda self: None)  # the inversion's path
    accountant = FourierAccountant().compose(PoissonSubsampled(GaussianMechanism(sigma=3.0), 1e-4), 2)
    (_, lm, _), = [d for d in accountant._directions() if d[0] is Direction.REMOVE]
    chernoff = _fourier_search.chernoff_log_delta(lambda k: lm(k.astype(np.complex128)), 1.0, 64.0)
    assert chernoff[1] == pytest.approx(64.0)
    hopeless = _fourier_search._hopeless_at_the_cap(lm, 1.0, chernoff, 64.0, 0.0)
    assert hopeless is not None and hopeless < np.exp(chernoff[0] - 60.0)
    bounds = accountant.delta_bounds(1.0)
    assert bounds.lower == 0.0 and bounds.upper <= hopeless
    # below the cap (the usual case) there is nothing to skip
    wide = FourierAccountant().compose(PoissonSubsampled(GaussianMechanism(sigma=1.0), 0.01), 100)
    (_, lm, _), = [d for d in wide._directions() if d[0] is Direction.REMOVE]
    chernoff = _fourier_search.chernoff_log_delta(lambda k: lm(k.astype(np.complex128)), 1.0, 64.0)
    assert _fourier_search._hopeless_at_the_cap(lm, 1.0, chernoff, 64.0, 0.0) is None
