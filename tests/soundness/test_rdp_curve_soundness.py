"""Soundness harness, RDP curves (issue 12 item 5): every ``rdp(order)`` at or above the exact Renyi divergence
(mpmath), at orders near 1 and above 10^4, for the base mechanisms, their Poisson-subsampled versions (integer
orders, against the exact binomial sums) and noisy screening (against the brute force of Private-kNN Thm 9)."""

import fractions

import mpmath as mp
import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from dpledger.mechanisms import GaussianMechanism, LaplaceMechanism, NoisyScreening, PoissonSubsampled, ZCDPMechanism
from tests.oracles import mpmath_screening as screening_oracle
from tests.oracles import mpmath_subsampled as sub_oracle
from tests.soundness._cases import budget, record

orders = st.one_of(st.floats(-9, 0).map(lambda e: 1 + 10**e), st.floats(1.0, 1e5, exclude_min=True))
F = fractions.Fraction


@budget(50)
@given(st.floats(0.3, 100.0), st.floats(0.05, 50.0), st.floats(1e-6, 10.0), st.lists(orders, min_size=1, max_size=4))
def test_base_curves(sigma, scale, rho, order_list):
    a = np.array(order_list)
    for value, order in zip(GaussianMechanism(sigma=sigma).rdp(a), order_list):  # alpha / (2 sigma^2), exactly
        assert F(float(value)) >= F(order) / (2 * F(sigma) ** 2)
    for value, order in zip(ZCDPMechanism(rho=rho).rdp(a), order_list):
        assert F(float(value)) >= F(order) * F(rho)
    with mp.workdps(60):
        t = 1 / mp.mpf(scale)
        for value, order in zip(LaplaceMechanism(scale=scale).rdp(a), order_list):
            al = mp.mpf(order)
            inner = al / (2 * al - 1) * mp.exp((al - 1) * t) + (al - 1) / (2 * al - 1) * mp.exp(-al * t)
            exact = mp.log(inner) / (al - 1)
            assert mp.mpf(float(value)) >= exact, (scale, order)
    record("base RDP curves (Gaussian, zCDP, Laplace)")


@budget(20)
@given(st.sampled_from(["gaussian", "laplace"]), st.floats(0.3, 30.0), st.floats(-6, 0).map(lambda e: 10.0**e),
       st.lists(st.integers(2, 64), min_size=1, max_size=3))
def test_subsampled_integer_orders(kind, param, q, order_list):
    base = GaussianMechanism(sigma=param) if kind == "gaussian" else LaplaceMechanism(scale=param)
    log_moment = sub_oracle.gaussian_log_moment(param) if kind == "gaussian" else sub_oracle.laplace_log_moment(param)
    values = PoissonSubsampled(base, q).rdp(np.array(order_list, dtype=float))
    for value, order in zip(np.atleast_1d(values), order_list):
        exact = sub_oracle.tight_bound(order, q, log_moment, dps=40)  # exact for these bases (thesis Thm 2.3.4)
        assert mp.mpf(float(value)) >= exact * (1 - mp.mpf(10) ** -30), (kind, param, q, order)
    record("subsampled Gaussian / Laplace RDP (integer orders)")


@budget(10)
@given(st.integers(3, 30), st.floats(0.3, 5.0), st.floats(0.0, 1.0), st.lists(orders, min_size=1, max_size=3))
def test_noisy_screening(k, sigma, threshold_fraction, order_list):
    threshold = threshold_fraction * k
    m = NoisyScreening(k=k, threshold=threshold, sigma=sigma, num_classes=2)
    lo = -(-k // 2)
    values = m.rdp(np.array(order_list))
    for value, order in zip(np.atleast_1d(values), order_list):
        exact = screening_oracle.screening_rdp(float(order), k, threshold, sigma, lo)
        assert mp.mpf(float(value)) >= exact * (1 - mp.mpf(10) ** -25), (k, sigma, threshold, order)
    record("noisy screening RDP")
