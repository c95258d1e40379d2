"""Random allocation's linear-grid loss buckets (mechanisms/allocation_pld.py, "Linear grid"): the FFT power
against direct convolution, the measures against the exact distribution of a sum of two lognormals (mpmath), the
wrap-around term against an inflated-N run, one epoch of three steps against an independent fine convolution, and
the log-grid fallback."""

import math

import mpmath
import numpy as np
import pytest

from dpledger.accountants import FourierAccountant
from dpledger.mechanisms import GaussianMechanism, RandomAllocation
from dpledger.mechanisms.allocation_pld import (
    TRIM,
    _cached_cells,
    _wrap_bound,
    allocation_buckets,
    linear_atoms,
    linear_losses,
    linear_step,
)


def _direct(mu, d, steps, last):
    """The index-sum pmf by direct convolution of the upper cell masses (numpy.convolve, no FFT)."""
    k_x, x, _, _ = _cached_cells(mu, d, False)
    k_l, y, _, _ = _cached_cells(mu, d, last)
    out = np.asarray(y, dtype=np.float64)
    for _ in range(steps - 1):
        out = np.convolve(out, x)
    return (steps - 1) * k_x + k_l, out


@pytest.mark.parametrize("name", ["P", "Q"])
def test_fft_power_matches_direct_convolution_within_its_bound(name):
    """t = 3, sigma 2, a coarse grid (d = 2^-5, N = 2^13: no wrap-around to speak of): the clipped FFT result,
    trimmed, is within its error bound (plus the trimmed mass) of the direct convolution in 1-norm; the bound is
    small (the test would fail if the FFT were off by more than 1e-11)."""
    mu, d, size, t = 0.5, 2.0**-5, 1 << 13, 3
    start, masses, below, above, _, _, error = linear_atoms(mu, t, d, size)[name]
    k0, direct = _direct(mu, d, t, name == "P")
    assert error < 1e-11
    lo = start - k0
    window = direct[lo:lo + masses.size]
    assert window.size == masses.size
    outside = direct.sum() - window.sum()
    assert outside <= below + above + 1e-15 and below <= TRIM * 1.01 and above <= TRIM * 1.01
    assert float(np.abs(masses - window).sum()) <= error + 1e-15
    assert masses.sum() == pytest.approx(1.0, abs=1e-8)


def test_wrap_around_is_covered_by_its_chernoff_term_and_needs_it():
    """A deliberately short FFT (N = 2^8: sums above 8 wrap around) against an inflated one (N = 2^13): the short
    run's upper measure dominates and its lower measure is dominated, at every loss; without the wrap-around term
    the upper measure would not dominate (so dropping that term fails this test)."""
    mu, d, t = 0.5, 2.0**-5, 3
    short = linear_losses(mu, t, True, d, 1 << 8)
    long = linear_losses(mu, t, True, d, 1 << 13)
    hi_s, m_s, _, inf_s, lo_s, low_s = short
    hi_l, m_l, _, inf_l, lo_l, low_l = long
    levels = np.linspace(-1.5, 2.0, 71)

    def tail(loss, mass, level):
        return float(mass[loss >= level].sum())

    k_x, x, _, _ = _cached_cells(mu, d, False)
    _, xp, _, _ = _cached_cells(mu, d, True)
    wrap = _wrap_bound(1 << 8, x, t - 1, xp)
    assert 1e-4 < wrap < 0.5
    missing = []
    for level in levels:
        upper_short = tail(hi_s, m_s, level) + inf_s
        exact_ish = tail(hi_l, m_l, level) - 1e-9  # the long run's finite atoms, less its own (tiny) error
        assert upper_short >= exact_ish, level
        assert tail(lo_s, low_s, level) <= tail(lo_l, low_l, level) + 1e-9 + inf_l, level
        missing.append(exact_ish - (upper_short - wrap))
    assert max(missing) > 0.0  # the wrap-around term is needed somewhere


def _sum_tail(mu, s, remove, dps=20):
    """Exact ``P(S >= s)`` (removal, ``S = X' + X``) or ``P(S <= s)`` (addition, ``S = X_1 + X_2``) by mpmath
    quadrature: ``X = exp(mu Z - mu^2/2)``, ``X' = exp(mu Z + mu^2/2)``."""
    with mpmath.workdps(dps):
        mu, s = mpmath.mpf(mu), mpmath.mpf(s)
        half = mu * mu / 2
        shift = half if remove else -half

        def z_of(y):  # X <= y iff Z <= z_of(y)
            return (mpmath.log(y) + half) / mu

        def integrand(z):
            first = mpmath.e ** (mu * z + shift)
            rest = s - first
            if remove:
                return mpmath.npdf(z) * (1 if rest <= 0 else mpmath.ncdf(-z_of(rest)))
            return mpmath.npdf(z) * (0 if rest <= 0 else mpmath.ncdf(z_of(rest)))

        z_s = (mpmath.log(s) - shift) / mu  # where the first summand alone reaches s
        return mpmath.quad(integrand, [-mpmath.inf, z_s - 3, z_s, z_s + 3, mpmath.inf])


@pytest.mark.parametrize("remove", [True, False])
def test_measures_bracket_the_exact_law_of_a_sum_of_two_lognormals(remove):
    """t = 2, sigma 1.1, the default grid: at every ``s`` the upper measure's tail (in loss) is at least the exact
    one (mpmath) and the lower measure's at most, and both are close (the grid's rounding)."""
    mu, t = 1.0 / 1.1, 2
    d, size = linear_step(mu, t)
    hi, m_hi, _, infinite, lo, lower = linear_losses(mu, t, remove, d, size)
    for s in (0.3, 1.0, 2.0, 4.0, 15.0, 60.0):
        level = math.log(s / t) if remove else math.log(t / s)  # loss >= level iff S >= s (S <= s for addition)
        exact = float(_sum_tail(mu, s, remove))
        up = float(m_hi[hi >= level].sum()) + infinite
        down = float(lower[lo >= level].sum())
        assert down <= exact <= up, (s, down, exact, up)
        assert up - down <= 0.03 * exact + 1e-9, (s, down, exact, up)


@pytest.mark.parametrize("remove", [True, False])
def test_loss_buckets_bracket_the_exact_tails(remove):
    """The LossBuckets the privacy buckets read (allocation_buckets, t = 2, sigma 1.1): above each edge the upper
    P-masses hold at least the exact tail ``P(L > e)`` (mpmath) and the rounded-down ones at most."""
    mu, t = 1.0 / 1.1, 2
    edges = np.arange(-3.0, 3.5, 0.5)
    b = allocation_buckets(mu, t, edges, remove)
    for idx in (2, 5, 7, 9, 11):
        level = float(edges[idx])
        s = t * math.exp(level) if remove else t * math.exp(-level)  # L > level iff S > s (S < s for addition)
        exact = float(_sum_tail(mu, s, remove))
        upper = float(b.p_upper[idx + 1:].sum())  # buckets (e_(i-1), e_i] above e_idx, and (e_last, +inf]
        lower = float(b.down[idx + 1:].sum())  # rounded-down losses in [e_idx, ...)
        assert lower <= exact <= upper, (level, lower, exact, upper)
        assert upper - lower <= 0.1 * exact + 1e-9  # the rounding of S: relatively coarse where S is small


def _fine_delta(mu, t, eps, remove, d=2.0**-10):
    """An independent estimate (not a bound) of one epoch's delta: each summand's mass on ``[k d, (k+1) d)`` put at
    the midpoint, the sum by numpy's FFT convolution, ``delta = E[(1 - e^eps t / S)_+]`` (removal) or
    ``E[(1 - e^eps S / t)_+]`` (addition)."""
    from scipy import special

    def pmf(shift):
        edges = np.arange(0, math.exp(mu * 9.0 + shift) / d + 2) * d
        with np.errstate(divide="ignore"):
            z = (np.log(edges) - shift) / mu
        return np.diff(special.ndtr(z))

    x, xp = pmf(-mu * mu / 2), pmf(mu * mu / 2)
    first = xp if remove else x
    size = 1 << int(math.ceil(math.log2(first.size + (t - 1) * x.size)))
    spec = np.fft.rfft(first, size) * np.fft.rfft(x, size) ** (t - 1)
    law = np.maximum(np.fft.irfft(spec, size), 0.0)
    s = (np.arange(size) + t * 0.5) * d
    gain = np.exp(eps) * (t / s if remove else s / t)
    return float(np.sum(law * np.maximum(1.0 - gain, 0.0)))


def test_one_epoch_of_three_steps_contains_a_fine_independent_estimate():
    """sigma 2, one of three steps, one epoch: the Fourier accountant's interval (privacy buckets of the linear
    grid) contains a fine midpoint convolution on another grid (d = 2^-10 against the buckets' 2^-11), and is
    narrow."""
    mu, t = 0.5, 3
    acc = FourierAccountant().compose(RandomAllocation(GaussianMechanism(sigma=2.0), steps=t), count=1)
    for eps in (0.05, 0.2, 0.5):
        est = max(_fine_delta(mu, t, eps, True), _fine_delta(mu, t, eps, False))
        b = acc.delta_bounds(eps)
        assert b.lower <= est <= b.upper, (eps, b, est)
        assert b.upper - b.lower <= 0.02 * est, (eps, b, est)


def test_log_grid_fallback_where_the_linear_grid_is_too_long():
    """sigma 0.3 (mu 3.3): the largest kept summand is about e^25, beyond any linear grid: the log grid answers,
    its masses are consistent."""
    assert linear_step(1.0 / 0.3, 10) is None
    assert linear_step(1.0 / 1.1, 10) is not None
    edges = np.linspace(-4.0, 12.0, 200)
    b = allocation_buckets(1.0 / 0.3, 10, edges, True)
    assert 1.0 - 1e-6 <= b.p_upper.sum() <= 1.0 + 1e-6
    assert np.all(b.p_lower <= b.p_upper) and b.down[1:].sum() <= 1.0
