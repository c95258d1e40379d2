"""The certified non-uniform FFT of the subsampled characteristic functions (mechanisms/_phase_fft.py, issue 14).

Oracles: phase sums at 30 digits in mpmath, a DFT summed in extended precision for the FFT's rounding bound, and the
mpmath characteristic function of the subsampled Gaussian at frequencies that take the FFT path.
"""

import math

import mpmath as mp
import numpy as np
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from dpledger.mechanisms import _phase_fft
from dpledger.mechanisms import subsampled_gaussian_cf as cf
from tests.mechanisms.test_subsampled_gaussian_cf import DPS, _oracle_f

_U = 2.0**-53


def _fft_bound(n, x):
    levels = 2 * int(round(math.log2(n)))
    mu = 4.0 * _U
    eta = mu + 4 * _U / (1 - 4 * _U) * (math.sqrt(2.0) + mu)
    return math.expm1(levels * math.log1p(eta)) * float(np.sum(np.abs(x)))


@pytest.mark.parametrize("n", [16, 64, 256, 1024])
@pytest.mark.parametrize("kind", ["uniform", "spiky", "decaying"])
def test_numpy_fft_is_within_the_assumed_rounding_bound(n, kind):
    rng = np.random.default_rng(n)
    x = rng.normal(size=n) + 1j * rng.normal(size=n)
    if kind == "spiky":
        x = x * np.where(rng.random(n) < 0.05, 1e6, 1.0)
    elif kind == "decaying":
        x = x * np.exp(-np.arange(n) / 7.0)
    got = np.fft.ifft(x, norm="forward")
    k = np.arange(n)
    # extended precision: twiddles from the exact angle 2 pi (k b mod n) / n, summed in long double
    angles = (2.0 * np.longdouble(np.pi) * ((np.outer(k, k) % n).astype(np.longdouble))) / n
    twiddle = np.cos(angles) + 1j * np.sin(angles)
    exact = twiddle.astype(np.clongdouble) @ x.astype(np.clongdouble)
    err = float(np.max(np.abs(got.astype(np.clongdouble) - exact)))
    assert err <= _fft_bound(n, x)


def _exact_sum(v, r, c):
    with mp.workdps(DPS):
        return mp.fsum(mp.mpf(float(cj)) * mp.expj(mp.mpf(float(v)) * mp.mpf(float(rj))) for rj, cj in zip(r, c))


@settings(max_examples=15, deadline=None)
@given(st.integers(1, 200), st.sampled_from([1e-4, 1e-2, 1.0, 20.0]), st.floats(-3.0, 3.0),
       st.integers(256, 5000), st.floats(1e-3, 2.0), st.floats(0.0, 5000.0), st.integers(0, 2**32 - 1),
       st.sampled_from([_phase_fft._TAYLOR_TARGET, 1e-12, 1e-9]))
@example(150, 1e-4, 0.0, 4096, 0.19, 4900.0, 1, _phase_fft._TAYLOR_TARGET)
@example(40, 20.0, 2.0, 300, 1.7, 10.0, 2, _phase_fft._TAYLOR_TARGET)
@example(200, 1e-2, 0.5, 2000, 0.3, 100.0, 3, _phase_fft._TAYLOR_TARGET)
@example(200, 1.0, 0.5, 4000, 0.9, 3000.0, 4, 1e-9)
def test_phase_sums_contain_the_exact_sums(j, scale, shift, count, d, v_c, seed, target):
    """Both histogram paths: nodes sorted (the enclosures' case: runs of bins, add.reduceat) for even seeds,
    shuffled (bincount) for odd ones; the default Taylor target and the relaxed ones of high-frequency groups
    (:mod:`mechanisms.subsampled_gaussian_cf`), whose larger remainder the bound carries."""
    rng = np.random.default_rng(seed)
    r = shift + scale * rng.normal(size=j)
    if seed % 2 == 0:
        r = np.sort(r)
    c = np.exp(rng.normal(size=j) * 3.0)
    k_c = count // 2
    sums, phase_errors, sum_error = _phase_fft.phase_sums_uniform(v_c, d, k_c, count, r, c, target)
    assert sum_error <= 1e-8 * float(np.sum(c))  # informative
    slack = float(np.sum(c * (phase_errors + 2.0 * _U))) + sum_error
    for k in rng.choice(count, size=6, replace=False):
        v = v_c + (int(k) - k_c) * d
        exact = _exact_sum(v, r, c)
        assert abs(complex(exact) - sums[k]) <= slack, (k, abs(complex(exact) - sums[k]), slack)


def test_a_wrong_taylor_order_is_caught():
    """The oracle can fail: with one Taylor term fewer than the rule picks, the sums leave the bound."""
    rng = np.random.default_rng(3)
    r, c = rng.normal(size=100) * 1e-3, np.ones(100)
    sums, phase_errors, _ = _phase_fft.phase_sums_uniform(4000.0, 0.2, 1024, 2048, r, c, taylor_target=1e-3)
    _, _, honest_error = _phase_fft.phase_sums_uniform(4000.0, 0.2, 1024, 2048, r, c)
    worst = max(abs(complex(_exact_sum(4000.0 + (k - 1024) * 0.2, r, c)) - sums[k]) for k in (0, 2047))
    assert worst > honest_error + float(np.sum(c * (phase_errors + 2 * _U)))


@pytest.mark.parametrize("a, g, sigma, v0", [(1.3, 1e-3, 2.0, 3000.0), (-0.4, 1e-3, 2.0, 3000.0),
                                             pytest.param(2.0, 1e-4, 1.0, 5000.0, marks=pytest.mark.long_oracle)])
def test_enclosure_on_the_fft_path_contains_the_mpmath_value(a, g, sigma, v0, monkeypatch):
    """An evenly spaced block of frequencies large enough for the FFT path, both signs (the add direction's
    nodes decrease): the enclosure holds where mpmath checks it."""
    calls = []
    original = _phase_fft.phase_sums_uniform
    monkeypatch.setattr(_phase_fft, "phase_sums_uniform", lambda *args: calls.append(1) or original(*args))
    for sign in (1.0, -1.0):
        v = sign * (v0 + 0.19 * np.arange(4096))
        value, log_err = cf.log_f_enclosure(a, v, g, 1.0 / sigma)
        with mp.workdps(DPS):
            for k in (0, 4095):
                exact = _oracle_f(mp.mpc(a, float(v[k])), g, sigma)
                gap = abs(mp.exp(mp.mpc(complex(value[k]))) - exact)
                assert gap <= mp.exp(mp.mpf(float(log_err[k]))), (a, g, sigma, v[k])
    assert calls  # the FFT path was taken


@settings(max_examples=20, deadline=None)
@given(st.integers(1, 3000), st.sampled_from([1e-3, 0.1, 3.0]), st.integers(2, 40), st.integers(0, 2**32 - 1))
def test_the_two_histogram_paths_agree(j, scale, p_count, seed):
    """Sorted nodes (add.reduceat over runs, blocks of _BLOCK_NODES) and the same nodes shuffled (bincount per
    power) give the same histograms up to the rounding of sums in another order (gamma_m of the absolute values)."""
    rng = np.random.default_rng(seed)
    n = 1 << 12
    r = np.sort(scale * rng.normal(size=j))
    delta = 2.0 * np.pi / n / 0.7
    b = np.rint(r / delta)
    t = (r - b * delta) / (0.5 * delta)
    cw = np.exp(rng.normal(size=j)) * np.exp(1j * rng.uniform(0, 2 * np.pi, j))
    bins = b.astype(np.int64) % n
    saved, _phase_fft._BLOCK_NODES = _phase_fft._BLOCK_NODES, 64  # runs cut across blocks too
    try:
        fast = _phase_fft._histograms(b, bins, cw, t, p_count, n)
    finally:
        _phase_fft._BLOCK_NODES = saved
    order = rng.permutation(j)
    slow = _phase_fft._histograms(b[order], bins[order], cw[order], t[order], p_count, n)
    if j > 1 and not np.all(b[order][1:] >= b[order][:-1]):
        fill = int(np.bincount(bins).max())
        scale_abs = np.zeros((p_count, n))
        for p in range(p_count):
            np.add.at(scale_abs[p], bins, np.abs(cw) * np.abs(t) ** p)
        assert np.all(np.abs(fast - slow) <= 4.0 * (fill + p_count + 2) * _U * scale_abs + 1e-300)


@pytest.mark.parametrize("j, expected", [(60, 4096), (20_000, 8192)])
def test_each_fft_length_contains_the_exact_sums(j, expected):
    """The FFT length is the cheaper of ``N >= K`` (more Taylor powers) and ``N >= 2K`` (a longer FFT): few nodes
    take the first, many the second (the histograms then cost more than the FFT), and each contains the exact
    sums at 30 digits."""
    rng = np.random.default_rng(j)
    r = np.sort(0.3 + 0.05 * rng.normal(size=j))
    c = np.exp(rng.normal(size=j))
    count, d, v_c = 4000, 0.9, 3000.0
    k_c = count // 2
    n, *_ = _phase_fft._length(d, max(k_c, count - 1 - k_c), count, r, _phase_fft._TAYLOR_TARGET)
    assert n == expected
    sums, phase_errors, sum_error = _phase_fft.phase_sums_uniform(v_c, d, k_c, count, r, c)
    slack = float(np.sum(c * (phase_errors + 2.0 * _U))) + sum_error
    assert slack <= 1e-12 * float(np.sum(c))
    for k in rng.choice(count, size=4, replace=False):
        exact = _exact_sum(v_c + (int(k) - k_c) * d, r, c)
        assert abs(complex(exact) - sums[k]) <= slack
