"""Red-team regressions from red5 (issue 14's claims re-checked on 9b49405).

Float overflow inside the proven-bound code leaked as numpy's ``RuntimeWarning: overflow encountered in exp``: in
subsampled_gaussian_cf's remainder sum before its NumericalError, and in fourier_inversion._enclosure_error. The
bounds stayed sound (the overflowed term is an error bound that becomes +inf, which the callers treat as "not
certified here"), but where warnings are errors (this project's own pytest configuration, ``python -W error``,
``np.seterr(over="raise")``) the warning was raised from inside the library in place of its documented errors or
answer. Found through calibration, whose bracket walks through tiny noise multipliers: DP-SGD at q = 256/60000 with
sigma 0.04 (10 steps) or sigma 0.03 (1,000 steps) raised it from ``FourierAccountant.epsilon_bounds``. Both
overflows are now the intended infinite bounds, without a warning."""

import math
import warnings
from math import erfc, exp, sqrt

import numpy as np
import pytest

from dpledger.accountants import fourier_inversion as fi
from dpledger.mechanisms import subsampled_gaussian_cf
from dpledger.mechanisms.errors import NumericalError
from dpledger.mechanisms.subsampled_gaussian_cf import log_f_enclosure


def test_enclosure_beyond_float64_raises_its_own_error_without_overflow_warning(monkeypatch):
    # The tilt and frequency FourierAccountant asked for on PoissonSubsampled(GaussianMechanism(0.04), 256/60000) x 10
    # (g = q, mu = 1 / sigma = 25): the whole quadrature is beyond float64 there, which it reports as NumericalError;
    # the soft split (subsampled_gaussian_cf, "Soft split") answers with a valid bound no better than |F| <= F(a).
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        value, log_err = log_f_enclosure(-1e5, np.array([2e10]), 256 / 60000, 25.0)
        real, real_err = log_f_enclosure(-1e5, np.array([0.0]), 256 / 60000, 25.0)
        assert log_err[0] >= np.logaddexp(real[0].real, real_err[0])  # covers every |F| <= F(a)
        monkeypatch.setattr(subsampled_gaussian_cf, "_SOFT_MIN_FREQUENCY", math.inf)
        with pytest.raises(NumericalError, match="beyond float64"):
            log_f_enclosure(-1e5, np.array([2e10]), 256 / 60000, 25.0)


class _GaussianLawWithLooseEnclosure:
    """The Gaussian loss ``N(mu^2 / 2, mu^2)`` (log MGF ``mu^2 s (1 + s) / 2``) whose node enclosure claims an error
    of ``e^log_err`` at every node: a valid, if useless, enclosure, as the subsampled Gaussian's becomes at tiny
    noise multipliers (its node errors then exceed ``e^(kappa epsilon + 709)``)."""

    def __init__(self, mu, log_err):
        self.mu, self.log_err = mu, log_err

    def __call__(self, s):
        s = np.asarray(s, dtype=np.complex128)
        return 0.5 * self.mu * self.mu * s * (1.0 + s)

    def sup(self, a, u):
        return 0.5 * self.mu * self.mu * (a * (1.0 + a) - u * u)

    def enclosure(self, nodes):
        return self(nodes), np.full(np.shape(nodes), self.log_err)


def _exact_gaussian_delta(mu, eps):
    def phi(x):
        return 0.5 * erfc(-x / sqrt(2.0))

    return phi(-eps / mu + mu / 2.0) - exp(eps) * phi(-eps / mu - mu / 2.0)


def test_invert_with_enclosure_errors_beyond_float64_warns_nothing_and_stays_sound():
    """The enclosure's infinite error leaves the Chernoff bound as the upper end (sound), without a warning."""
    law = _GaussianLawWithLooseEnclosure(1.0, 800.0)
    plan = fi.make_plan(law, law.sup, 1.0, 1e-12, node_enclosure=law.enclosure)
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        bounds, errors = fi.invert(plan, 1.0)
    assert errors["rounding"] == np.inf
    assert bounds.lower <= _exact_gaussian_delta(1.0, 1.0) <= bounds.upper < 1.0
