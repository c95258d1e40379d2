"""The truncation bound of a Fourier inversion spread over octaves of frequency (fourier_inversion._banded_sup):
``(step / pi) sum_(k > K) |M(s_k)| / |s_k (1 + s_k)| <= S / (pi V)``, ``V = K step``.

Checked against the tail sums themselves, summed (math.fsum) beyond every band, for laws whose
``sup_(|v| >= u) |M(kappa + iv)|`` is known exactly: a constant (atoms: nothing decays, the banded bound must equal
the single supremum) and the Gaussian loss (``|M| = e^(mu^2 (kappa (1 + kappa) - v^2) / 2)``, which decays).
"""

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dpledger.accountants import fourier_inversion as fi


def _tail_sum(log_modulus, kappa, step, first, stop):
    """``(step / pi) sum_(k = first)^(stop) |M(s_k)| / |s_k (1 + s_k)|`` (float64, ``math.fsum``), plus the rest
    beyond ``stop`` bounded by the modulus at ``stop`` (where the sums are stopped, beyond every band: the modulus
    decays or stays constant, and ``sum_(k > stop) 1 / (k step)^2 <= 1 / (stop step^2)``)."""
    k = np.arange(first, stop + 1, dtype=np.float64)
    s = kappa + 1j * k * step
    total = math.fsum(np.exp(log_modulus(k * step)) / np.abs(s * (1.0 + s)))
    rest = math.exp(log_modulus(stop * step)) / (stop * step * step)
    return (total + rest) * step / math.pi


@pytest.mark.parametrize("kappa, step, terms", [(2.0, 0.5, 64), (5.0, 1.0, 256), (0.3, 0.05, 128)])
def test_atoms_the_banded_bound_is_the_single_supremum_and_holds(kappa, step, terms):
    log_c = -3.0
    banded = fi._banded_sup(lambda a, v: log_c, kappa, terms * step)
    assert banded(0) == pytest.approx(log_c, abs=1e-9)
    assert banded(0) >= log_c  # the octaves' weights sum to one: never below a single supremum
    tail = _tail_sum(lambda v: log_c + 0.0 * v, kappa, step, terms + 1, terms * 2**12)
    assert tail <= math.exp(banded(0)) / (math.pi * terms * step)


@settings(max_examples=25, deadline=None)
@given(st.floats(0.05, 3.0), st.floats(0.1, 20.0), st.floats(0.05, 2.0), st.integers(6, 9))
def test_gaussian_the_banded_bound_holds_and_is_tighter(mu, kappa, step, log_terms):
    terms = 2**log_terms

    def log_modulus(v):
        return 0.5 * mu * mu * (kappa * (1.0 + kappa) - v * v)

    def log_sup(a, u):  # |M(a + iv)| falls with |v|: its value at u is the supremum beyond
        return log_modulus(u)

    v = terms * step
    banded = fi._banded_sup(log_sup, kappa, terms * step)(0)
    if log_sup(kappa, v) < -600.0:  # nothing left to bound in float64
        return
    stop = terms * 2 ** (fi._TRUNCATION_BANDS + 2)  # beyond every band
    tail = _tail_sum(log_modulus, kappa, step, terms + 1, stop)
    assert tail <= math.exp(banded) / (math.pi * v) * (1.0 + 1e-9)
    assert banded <= log_sup(kappa, v) + 1e-9


def test_the_bands_reuse_each_supremum():
    calls = []

    def log_sup(a, u):
        calls.append(u)
        return -u

    banded = fi._banded_sup(log_sup, 1.0, 1.0)
    for m in range(5):
        banded(m)
    assert len(calls) == len(set(calls)) == 5 + fi._TRUNCATION_BANDS
    assert math.isfinite(banded(0))
