"""Certified fast phase sums ``S(v_k) = sum_j c_j e^(i v_k r_j)`` on evenly spaced frequencies (issue 14).

The subsampled characteristic functions (:mod:`mechanisms.subsampled_gaussian_cf`) need these sums for ``K``
frequencies ``v_k = v_c + k' d`` (``k' = k - k_c``, ``|k'| <= k_h``) and ``J`` quadrature nodes ``r_j``; summed
directly they cost ``K J`` complex products, which is what made few-step ledgers of a small sampling probability
slow (a narrow loss needs ``K ~ 10^4`` frequencies and ``J ~ 4 x 10^4`` nodes). Here they cost
``O(J P + P N log N)`` with ``P ~ 17`` (a Taylor-binned non-uniform FFT):

**Identity.** Let ``N >= K`` be a power of two, ``Delta`` a float near ``2 pi / (N d)``, ``b_j = rint(r_j /
Delta)`` and ``delta_j = r_j - b_j Delta`` (exact reals). Then, exactly,
``v_k r_j = v_c r_j + 2 pi k' b_j / N + k' b_j (d Delta - 2 pi / N) + k' d delta_j`` and, writing
``omega_k = k' d Delta / 2`` and ``t_j = delta_j / (Delta / 2)`` (``|t_j| <= 1``)::

    S(v_k) = sum_j c_j e^(i v_c r_j) e^(2 pi i k' b_j / N) e^(i omega_k t_j) (1 + phase errors)
           = sum_(p < P) (i omega_k)^p / p! * G_p(k') + R,    G_p(k') = sum_(b mod N) H_p[b] e^(2 pi i k' b / N),

with ``H_p[b] = sum_(j: b_j = b mod N) c_j e^(i v_c r_j) t_j^p`` (a histogram per power) and ``G_p`` one inverse
FFT each (``e^(2 pi i k' b / N)`` has period ``N`` in ``b`` and in ``k'``, so folding the bins and the negative
``k'`` modulo ``N`` is exact, and the ``K <= N`` frequencies land on distinct indices). For real ``theta``
``|e^(i theta) - sum_(p < P) (i theta)^p / p!| <= |theta|^P / P!`` (Taylor's remainder in integral form), so
``|R| <= (omega t)^P / P! sum_j c_j`` with ``omega t >= max |omega_k t_j| ~ pi k_h / N``: ``pi / 4`` for ``N >= 2K``,
``pi / 2`` for ``N >= K``. Each group takes the one of those two lengths whose powers cost less (:func:`_length`:
``P (N log2 N + 64 J)``, the FFTs and the histograms): the longer FFT needs fewer powers (12 instead of 16 at
the relaxed targets of the top octaves), but 2^17 points cost twice 2^16 and more than the four extra powers
(sigma 0.6, q 1e-4, 10 runs: the phase sums of one contour took 42 ms on one thread at ``N >= 2K``, 31 ms so).

**Phase errors** (per term, returned so the caller adds them to each term's relative error; ``|e^(i phi) - 1| <=
|phi|``): the rounding of ``v_c r_j`` (``u |v_c r_j|``); ``|k' b_j| |d Delta - 2 pi / N|`` with
``|d Delta - 2 pi / N| <= 2.01 u 2 pi / N`` (``Delta`` is two roundings from ``2 pi / (N d)``); the rounding of
``delta_j`` (``u (|b_j Delta| + |delta_j|)`` times ``k_h d``); and that of ``omega_k`` and ``t_j`` (``3.1 u``
of ``|omega_k t_j|``). The complex exponential and the product with ``c_j`` are the caller's ``2u`` and a
further ``2u`` (returned with the phase errors).

**Rounding of the sums** (returned as one absolute bound for every ``k``, in the units of ``c``): the products ``c_j
e^(i v_c r_j)`` (``3u``), whose real and imaginary parts are multiplied by ``t_j`` once per power (``t^p`` in ``p``
roundings, ``p u`` relative); the histograms, each bin a float sum of at most ``m`` terms in some order (``gamma_m``
of the absolute values whatever the order, Higham Lemma 3.5 / eq. 3.4; ``m`` the fullest bin; real and imaginary
parts separately, so ``sqrt 2`` of it): by one ``numpy.add.reduceat`` over all powers where the nodes' bins are
already in order (consecutive runs), else by ``numpy.bincount`` per power and part; each FFT, elementwise: numpy's
pocketfft computes a power-of-two length by Cooley-Tukey passes of radix 4 and 2, i.e. ``G = A_m ... A_1 (permuted
H)`` with sparse stage matrices whose entries are twiddle factors of modulus 1, and ``|A_m| ... |A_1|`` is the
all-ones matrix (one path from each input to each output). Each computed stage is ``(A_j + dA_j) z`` with ``|dA_j|
<= eta |A_j|``, ``eta = mu + gamma_4 (sqrt 2 + mu)`` (Higham, *Accuracy and Stability of Numerical Algorithms*, 2nd
ed., proof of Thm 24.2: a twiddle within ``mu``, a complex product and a sum), so ``|G~ - G| <= ((1 + eta)^m - 1)
||H~||_1`` in every element, where ``||H~_p||_1 <= sum_j c_j |t_j|^p (1 + (J + p + 4) u) + `` the histograms' own
error (no FFT-sized sum of moduli is formed); we take ``m = 2 log2 N`` (a radix-4 pass is two radix-2 levels) and
``mu = 4u``. The Horner evaluation of ``sum_p (i omega)^p / p! G_p`` costs ``6.1 u`` per step of the running
magnitudes (``z / p``, a complex product, ``sqrt 2 gamma_2`` by Higham Lemma 3.5, and a complex sum). The test-suite
checks the FFT bound against a DFT summed in extended precision.
"""

from __future__ import annotations

import math

import numpy as np

__all__ = ["phase_sums_uniform"]

_U = 2.0**-53
#: Taylor terms are added until the remainder bound falls below this fraction of ``sum c``: far below the
#: histograms' and the FFT's rounding bounds, which are ``(m + 2 log2 N) u`` of it at least (``~3e-14``), so a
#: smaller target would only add powers (17 at ``x = pi / 4`` instead of 21 for ``1e-21``).
_TAYLOR_TARGET = 1e-16


def _gamma(n):
    return n * _U / (1.0 - n * _U)


#: Nodes per block of :func:`_histograms`' one-pass path: its (powers x nodes) matrices (~1 MB each) stay in the
#: cache between the products that fill them and the ``reduceat`` that reads them (blocks of 2^17 nodes, ~18 MB,
#: made the histograms of 420,000 nodes 25% slower, and a fresh process slower still).
_BLOCK_NODES = 1 << 13


def _histograms(b, bins, cw, t, p_count, n):
    """``H[p, b] = sum_(j: bins_j = b) cw_j t_j^p`` (``p < p_count``; real and imaginary parts separately, each
    ``t^p`` as ``p`` products in turn; ``bins = b mod n``). Where ``b`` does not decrease and spans fewer than ``n``
    values (the nodes are sorted, as the enclosures' are), each bin is one run of consecutive nodes, and distinct
    runs have distinct bins: every power's parts come row by row into a (powers x nodes) block, and every run's
    sums from one ``add.reduceat`` (blocks of :data:`_BLOCK_NODES` nodes, each bin's partial sums added in turn:
    still one float sum of the bin's terms in some order). Otherwise one ``bincount`` per power and part."""
    hist = np.zeros((p_count, n), dtype=np.complex128)
    part_re, part_im = np.ascontiguousarray(cw.real), np.ascontiguousarray(cw.imag)
    if b.size and np.all(b[1:] >= b[:-1]) and b[-1] - b[0] < n:
        for start in range(0, bins.size, _BLOCK_NODES):
            sl = slice(start, start + _BLOCK_NODES)
            block = bins[sl]
            runs = np.concatenate(([0], np.flatnonzero(block[1:] != block[:-1]) + 1))
            for part, out in ((part_re[sl], hist.real), (part_im[sl], hist.imag)):
                powers = np.empty((p_count, part.size))
                powers[0] = part
                for p in range(1, p_count):
                    np.multiply(powers[p - 1], t[sl], out=powers[p])
                out[:, block[runs]] += np.add.reduceat(powers, runs, axis=1)
        return hist
    for p in range(p_count):
        if p:
            np.multiply(part_re, t, out=part_re)
            np.multiply(part_im, t, out=part_im)
        hist[p].real = np.bincount(bins, weights=part_re, minlength=n)
        hist[p].imag = np.bincount(bins, weights=part_im, minlength=n)
    return hist


def _taylor_powers(x, taylor_target):
    """``(P, x^P / P! 1.01)``: the smallest ``P >= 1`` with ``x^P / P!`` below the target; at least one, as the sums
    are ``G_0`` and up (a relaxed target of 1 or more, :mod:`mechanisms.subsampled_gaussian_cf` beyond ``|v| ~
    3.2e9``, would otherwise leave no power)."""
    p_count, term = 0, 1.0
    while p_count == 0 or term > taylor_target:
        p_count += 1
        term *= x / p_count
    return p_count, term * 1.01


def _length(d, k_h, count, r, taylor_target):
    """``(N, Delta, b, t, t_max, w, x, P, remainder)`` at the FFT length ``N`` (``K <= N``, a power of two: the ``K``
    frequencies land on distinct indices) of the two, ``N >= K`` and ``N >= 2K``, whose work ``P (N log2 N + 64 J)``
    is smaller (module docstring); the bins, reduced offsets and Taylor terms are those of the length chosen."""
    best = None
    low = max(5, int(math.ceil(math.log2(count))))
    for n in (1 << low, 1 << (low + 1)):
        delta = (2.0 * np.pi / n) / d
        half = 0.5 * delta
        b = np.rint(r / delta)
        t = (r - b * delta) / half
        t_max = float(np.max(np.abs(t))) * (1.0 + 2.0 * _U) if t.size else 0.0
        w = d * half  # ~ pi / N
        x = k_h * w * (1.0 + 4.0 * _U) * max(t_max, 1.0)
        p_count, remainder = _taylor_powers(x, taylor_target)
        work = p_count * (n * math.log2(n) + 64.0 * r.size)
        if best is None or work < best[0]:
            best = (work, n, delta, b, t, t_max, w, x, p_count, remainder)
    return best[1:]


def phase_sums_uniform(
    v_c: float, d: float, k_c: int, count: int, r: np.ndarray, c: np.ndarray, taylor_target: float = _TAYLOR_TARGET
) -> tuple[np.ndarray, np.ndarray, float]:
    """``(sums, phase_errors, sum_error)`` for ``v_k = v_c + (k - k_c) d``, ``k = 0 .. count - 1``, ``d > 0``.

    ``|sum_j c_j e^(i v_k r_j) (1 + e_j) - sums[k]| <= sum_error`` where ``e_j`` are relative errors of the terms
    with ``|e_j| <= phase_errors[j]`` on top of the caller's own (module docstring: exact identity, Taylor remainder,
    every rounding). ``c`` must be non-negative. ``taylor_target``: the Taylor remainder aimed at, relative to
    ``sum c`` (only sets the number of powers; the remainder added to ``sum_error`` is the one reached).
    """
    r = np.asarray(r, dtype=np.float64)
    c = np.asarray(c, dtype=np.float64)
    k_h = max(k_c, count - 1 - k_c)
    n, delta, b, t, t_max, w, x, p_count, remainder = _length(d, k_h, count, r, taylor_target)

    phase = v_c * r
    cw = c * np.exp(1j * phase)
    bins = b.astype(np.int64) % n
    # the real and imaginary parts of c_j e^(i v_c r_j) t_j^p, each times t once per power (p u relative: p
    # roundings, as t^p times cw), summed per bin (any order: the bound of the module docstring)
    hist = _histograms(b, bins, cw, t, p_count, n)
    g = np.fft.ifft(hist, axis=1, norm="forward", out=hist)  # sum_b H[b] e^(+2 pi i k b / N), unscaled, in place
    k_prime = np.arange(count) - k_c
    cols = k_prime % n
    z = 1j * (k_prime * w)
    total = g[p_count - 1, cols]
    for p in range(p_count - 1, 0, -1):  # Horner: sum_p (i omega)^p / p! G_p (each row's K columns as needed)
        total = g[p - 1, cols] + total * (z / p)
    sums = total

    # ---- error bounds (module docstring) ----
    c_sum = float(np.sum(c)) * (1.0 + c.size * _U) * (1.0 + 3.0 * _U)
    abs_r = np.abs(r)
    phase_errors = (
        _U * np.abs(phase) * 1.01
        + k_h * (abs_r / delta + 0.5) * (2.01 * _U * 2.0 * np.pi / n) * 1.01
        + k_h * d * _U * (abs_r + 1.01 * delta) * 1.01
        + 3.1 * _U * x
        + 4.0 * _U
    )
    fill = int(np.bincount(bins, minlength=1).max()) if bins.size else 0
    levels = 2 * int(round(math.log2(n)))
    mu = 4.0 * _U
    eta = mu + _gamma(4) * (math.sqrt(2.0) + mu)
    c_fft = math.expm1(levels * math.log1p(eta)) * (1.0 + 1e-12)
    powers = x ** np.arange(p_count) / np.array([math.factorial(p) for p in range(p_count)], dtype=np.float64)
    t_pows = max(t_max, 1.0) ** np.arange(p_count)
    hist_err = (1.5 * _gamma(fill) + (np.arange(p_count) + 3.0) * _U) * t_pows * c_sum
    # ||H~_p||_1: the exact histograms' 1-norm is at most sum_j c_j |t_j|^p (|c_j e^(i v_c r_j)| = c_j within 3u),
    # formed in float (J + p roundings), plus the histograms' own error
    abs_t = np.abs(t)
    moments = np.empty(p_count)
    weighted = c.copy()
    for p in range(p_count):
        moments[p] = float(np.sum(weighted))
        weighted *= abs_t
    l1 = moments * (1.0 + (c.size + np.arange(p_count) + 4.0) * _U * 1.01) + hist_err
    fft_err = c_fft * l1 * (1.0 + 1e-10)
    coef = powers * (1.0 + 2.02 * np.arange(p_count) * _U + 1e-12)
    propagated = float(np.sum(coef * (hist_err + fft_err)))
    magnitude = float(np.sum(coef * (t_pows * c_sum + hist_err + fft_err)))
    # Horner's rounding: each step forms z / p (2u), one complex product (sqrt(2) gamma_2, Higham Lemma 3.5) and
    # one complex sum (u): at most 6.1u per step of the running magnitudes, so (P + 1) 6.1u of sum |coef| |G_p|
    steps = 6.1 * (p_count + 1) * _U
    combination = steps / (1.0 - steps) * magnitude * 1.01
    sum_error = (remainder * c_sum + propagated + combination) * (1.0 + 1e-9)
    return sums, phase_errors, float(sum_error)
