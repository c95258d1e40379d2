"""Helpers shared by the mechanisms tests: mpmath references for the base curves, hypothesis strategies.

The mpmath references are independent of the library: they evaluate the closed forms of Mironov 2017 (Table II;
thesis Sec 2.4) at 50 significant digits.
"""

import contextlib
import functools
import warnings

import mpmath as mp
import numpy as np
from hypothesis import strategies as st

from dpledger.mechanisms import (
    GaussianMechanism,
    LaplaceMechanism,
    PoissonSubsampled,
    PureDPMechanism,
    RandomizedResponse,
    ZCDPMechanism,
)

DPS = 50
#: float64 unit roundoff.
EPS64 = float(np.finfo(np.float64).eps)
#: The library's documented rounding slack (mechanisms._logmath.ROUNDING), restated so a change shows up here.
ROUNDING = 64 * EPS64


def closed_form_atol(order):
    """Absolute float64 accuracy of a closed form ``log(...)/(alpha - 1)`` whose log argument is O(1)."""
    return 4 * EPS64 / (order - 1.0) if np.isfinite(order) else 0.0


@functools.cache
def laplace_rdp_mp(order, lam):
    """Mironov 2017 Prop 6 (``lam = scale / sensitivity``), real order > 1, at DPS digits."""
    with mp.workdps(DPS):
        a, b = mp.mpf(order), mp.mpf(lam)
        return mp.log(a / (2 * a - 1) * mp.exp((a - 1) / b) + (a - 1) / (2 * a - 1) * mp.exp(-a / b)) / (a - 1)


@functools.cache
def bernoulli_rdp_mp(order, log_p, log_1mp):
    """Mironov 2017 Prop 5: ``log(p^a (1-p)^(1-a) + (1-p)^a p^(1-a)) / (a - 1)`` from the two log-probabilities."""
    with mp.workdps(DPS):
        a, lp, lq = mp.mpf(order), mp.mpf(log_p), mp.mpf(log_1mp)
        return mp.log(mp.exp(a * lp + (1 - a) * lq) + mp.exp(a * lq + (1 - a) * lp)) / (a - 1)


def randomized_response_rdp_mp(order, p):
    with mp.workdps(DPS):
        pp = mp.mpf(p)
        return bernoulli_rdp_mp(order, mp.log(pp), mp.log1p(-pp))


def pure_dp_rdp_mp(order, epsilon):
    """RR with ``p = e^eps / (1 + e^eps)``; log p and log(1 - p) are formed without cancellation."""
    with mp.workdps(DPS):
        e = mp.mpf(epsilon)
        return bernoulli_rdp_mp(order, -mp.log1p(mp.exp(-e)), -mp.log1p(mp.exp(e)))


@contextlib.contextmanager
def no_warnings():
    """Turn every warning (not only RuntimeWarning, as setup.cfg does) into an error inside the block."""
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        yield


# --------------------------------------------------------------------------- hypothesis strategies
sigmas = st.floats(0.1, 100.0)
scales = st.floats(0.1, 100.0)
probabilities = st.floats(0.0, 1.0)
sampling_probabilities = st.one_of(st.sampled_from([0.0, 1e-9, 1e-4, 1.0]), st.floats(1e-9, 1.0))
integer_orders = st.integers(2, 512).map(float)
real_orders = st.one_of(integer_orders, st.floats(1.01, 300.0), st.just(np.inf))

gaussians = st.builds(GaussianMechanism, sigma=sigmas, sensitivity=st.floats(0.5, 2.0))
laplaces = st.builds(LaplaceMechanism, scale=scales, sensitivity=st.floats(0.5, 2.0))
randomized_responses = st.builds(RandomizedResponse, p=st.floats(0.01, 0.99))
pure_dps = st.builds(PureDPMechanism, epsilon=st.floats(0.0, 10.0))
zcdps = st.builds(ZCDPMechanism, rho=st.floats(0.0, 2.0))
base_mechanisms = st.one_of(gaussians, laplaces, randomized_responses, pure_dps, zcdps)
subsampled = st.builds(PoissonSubsampled, base_mechanisms, sampling_probability=sampling_probabilities)


class EstimatedLaplace(LaplaceMechanism):
    """A Laplace mechanism whose Poisson-subsampled pair has neither loss buckets nor a proven characteristic
    function: its Fourier reports rest on quadrature alone, an estimate (the label tests need one)."""

    has_subsampled_loss_buckets = False
    has_subsampled_enclosure = False

    def subsampled_loss_split(self, sampling_probability):
        return None
