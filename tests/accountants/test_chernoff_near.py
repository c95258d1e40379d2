"""A Chernoff search started near a known damping (``fourier_inversion.chernoff_log_delta``'s ``near``), as the
mirror direction of a delta query starts from the first direction's damping (``max_delta_bounds``).

Oracle: the Gaussian mechanism's Chernoff objective ``mu^2 k (1 + k) / 2 - k eps + log c(k)`` minimised in mpmath;
the search started anywhere must reach it as the wide search does (every value it returns is a bound, so only its
tightness is at stake)."""

import math

import mpmath as mp
import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

import dpledger.accountants._fourier_search as search
from dpledger.accountants import FourierAccountant
from dpledger.accountants.fourier_inversion import chernoff_log_delta, log_chernoff_constant
from dpledger.mechanisms import GaussianMechanism, PoissonSubsampled


def _gaussian(mu):
    return lambda k: 0.5 * mu * mu * np.asarray(k, dtype=np.complex128) * (1.0 + np.asarray(k, dtype=np.complex128))


def _mp_best(mu, eps):
    def objective(k):
        return mu * mu * k * (1 + k) / 2 - k * eps - k * mp.log1p(1 / k) - mp.log1p(k)

    with mp.workdps(30):
        k0 = max((eps / (mu * mu) - 0.5), 1e-3)
        return float(objective(mp.findroot(lambda k: mp.diff(objective, k), k0)))


@settings(max_examples=60, deadline=None)
@given(mu=st.floats(0.05, 3.0), ratio=st.floats(1.0, 40.0), near=st.floats(1e-3, 1e4))
def test_a_search_started_anywhere_reaches_the_best_damping(mu, ratio, near):
    eps = ratio * mu * mu  # the best damping eps / mu^2 - 1/2 (about) lies in [0.5, 40)
    value, kappa = chernoff_log_delta(_gaussian(mu), eps, 1e6, near=near)
    wide, _ = chernoff_log_delta(_gaussian(mu), eps, 1e6)
    best = _mp_best(mu, eps)
    recomputed = 0.5 * mu * mu * kappa * (1 + kappa) - kappa * eps + float(log_chernoff_constant(np.array(kappa)))
    assert math.isclose(value, recomputed, rel_tol=1e-12, abs_tol=1e-12)
    assert value >= best - 1e-9 * (abs(best) + 1)
    assert value <= best + 1e-4 * (abs(best) + 1) and abs(value - wide) <= 1e-4 * (abs(best) + 1)


def test_near_outside_the_cap_falls_back_to_the_wide_search():
    lm = _gaussian(1.0)
    assert chernoff_log_delta(lm, 3.0, 100.0, near=500.0) == chernoff_log_delta(lm, 3.0, 100.0)
    assert chernoff_log_delta(lm, 3.0, 100.0, near=0.0) == chernoff_log_delta(lm, 3.0, 100.0)


def test_the_mirror_directions_search_starts_near_the_first_ones_damping(monkeypatch):
    """sigma 5, q 1e-3, 10^4 steps, delta at epsilon 0.0595: the remove direction's best damping is 158.9, the add
    direction's 162; started there, the add direction's search evaluates log M at 36 dampings instead of 88, and
    the answer is the same."""
    calls = []
    original = search.chernoff_log_delta

    def spy(log_mgf_real, epsilon, cap, near=None):
        counted = []
        result = original(lambda k: counted.append(np.size(k)) or log_mgf_real(k), epsilon, cap, near=near)
        calls.append((near, sum(counted), result))
        return result

    monkeypatch.setattr(search, "chernoff_log_delta", spy)
    accountant = FourierAccountant().compose(PoissonSubsampled(GaussianMechanism(5.0), 1e-3), 10_000)
    bounds = accountant.delta_bounds(0.0595)
    assert [near is None for near, _, _ in calls] == [True, False]
    (_, wide_count, (_, first_kappa)), (near, near_count, (value, _)) = calls
    assert near == first_kappa and near_count < wide_count / 2
    monkeypatch.setattr(search, "chernoff_log_delta", original)
    wide_value = original(lambda k: accountant._directions()[1][1](k.astype(np.complex128)), 0.0595, 1e5)[0]
    assert abs(value - wide_value) <= 1e-4
    assert bounds.upper - bounds.lower <= 1e-6 * bounds.upper and 9.9e-6 < bounds.lower < bounds.upper < 1e-5
