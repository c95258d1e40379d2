"""The phase sums ``S(v_k) = sum_j c_j e^(i v_k r_j)`` of the subsampled Gaussian's enclosures
(:mod:`mechanisms.subsampled_gaussian_cf`), and the work they cost.

Frequencies are grouped (octaves of ``|v|``, long octaves in runs: :func:`_group_keys`); each group is summed by the
certified non-uniform FFT (:mod:`mechanisms._phase_fft`) where it is evenly spaced and long enough, else by one
matrix product per block of nodes. The caller bounds the products' rounding (dot products) and takes the FFT's own
bounds. :func:`_check_work` is the enclosures' work limit, on what the sums cost.
"""

from __future__ import annotations

import math

import numpy as np

from dpledger.mechanisms import _phase_fft
from dpledger.mechanisms.errors import NumericalError

_U = 2.0**-53
#: Columns (quadrature nodes) summed per matrix product: the rounding of a sum of N terms is bounded by
#: (_COLUMNS + N / _COLUMNS + 2) u instead of (N + 2) u.
_COLUMNS = 64
#: Largest matrix (entries) built at once by the frequency sums.
_BLOCK_ENTRIES = 1 << 21
#: Frequency-node pairs from which the certified non-uniform FFT replaces the matrix products.
_FFT_WORK = 1 << 20
#: Most frequencies one FFT-path group takes (its histograms hold ~24 x 2K complex numbers); a longer group is
#: summed in runs of this many (:func:`_group_keys`).
_FFT_MAX_FREQUENCIES = 1 << 17
#: Most work (in directly summed (frequency, node) pairs, :func:`_sum_work`) one enclosure call may do before it
#: gives up (NumericalError, like the quadrature's).
MAX_WORK = 1 << 30


#: Most frequencies the lowest octaves of a line give one shared layout (:func:`_group_keys`): on issue 14's grid
#: 256 made the sigma 0.6 cells 7-15% faster (64: 5% on some; 1024: twice as slow on others).
_MERGED = 256


def _group_keys(v, span=1):
    """One key per ``span`` octaves of ``|v|`` counted down from the largest, ``(V / 2^(s(j+1)), V / 2^(s j)]`` with
    ``V = max |v|`` and ``s = span`` (frequencies ``|v| <= 1`` together; the lowest groups together as long as they hold
    at most :data:`_MERGED` frequencies in all); a group of more than :data:`_FFT_MAX_FREQUENCIES` frequencies is split
    into consecutive runs of that many (each still evenly spaced where ``v`` is, so each can take the FFT).

    Each group costs quadrature nodes in proportion to its largest ``|v|`` (its panel layout), so octaves that end
    at ``V`` cost about ``2 J(V)`` in all; octaves ending at powers of two cost up to ``3 J(V)`` where ``V`` lies
    just above one (a contour of ``2^k`` nodes of step 1.04: a last group of 5,000 frequencies took a whole pass
    of 420,000 nodes)."""
    mag = np.abs(v)
    top = float(mag.max()) if mag.size else 1.0
    with np.errstate(divide="ignore"):
        down = np.floor(np.log2(top / np.maximum(mag, 1.0)) / span)
    octave = np.where(mag <= 1.0, -1, np.minimum(down, 2000.0)).astype(np.int64) + 1
    # the lowest octaves of a contour hold a few frequencies each (1, 2, 4, ...): together, up to _MERGED of them
    # take one layout, the highest one's (each layout costs more than these few frequencies' sums on it); the
    # octaves are small integers (0 to 2001), so counted by bincount, not sorted
    counts = np.bincount(octave) if octave.size else np.zeros(1, dtype=np.int64)
    total, into = 0, None
    for key in np.flatnonzero(counts[1:])[::-1] + 1:
        if total + counts[key] > _MERGED:
            break
        total, into = total + int(counts[key]), key
    if into is not None:
        octave = np.minimum(octave, into)
        counts = np.bincount(octave)
    run = np.zeros(v.size, dtype=np.int64)
    for key in np.flatnonzero(counts > _FFT_MAX_FREQUENCIES):
        sel = np.flatnonzero(octave == key)
        run[sel] = np.arange(sel.size) // _FFT_MAX_FREQUENCIES
    return octave * (v.size // _FFT_MAX_FREQUENCIES + 2) + run


def _products(left, right):
    """``left @ right.T`` (complex; each entry one dot product of at most :data:`_COLUMNS` terms) by numpy's own
    single-threaded loops (``einsum``, no BLAS). A multithreaded BLAS wakes its idle threads for every product:
    ~5-15 ms per call on a busy two-core machine, against ~0.1 ms for the product itself, and the enclosures ask
    for one product per column block. The rounding bound is the caller's dot-product bound, which holds for any
    order of summation (Higham, *Accuracy and Stability*, Lemma 3.5 and eq. 3.4)."""
    return np.einsum("ij,kj->ik", left, right)


def _uniform_line(v, nodes):
    """``(k_c, shift)`` where :func:`_phase_sums` sums ``v`` (increasing) by the non-uniform FFT: enough work
    (``K J >= _FFT_WORK``), ``256 <= K <= _FFT_MAX_FREQUENCIES`` and ``v`` within ``1e-9`` of the evenly spaced
    line centred at ``k_c = K // 2`` (``shift`` bounds the distance); None otherwise."""
    k = v.size
    if not (256 <= k <= _FFT_MAX_FREQUENCIES and k * nodes >= _FFT_WORK):
        return None
    d = (v[-1] - v[0]) / (k - 1)
    if not d > 0:
        return None
    k_c = k // 2
    centred = v[k_c] + (np.arange(k) - k_c) * d
    shift = float(np.max(np.abs(v - centred))) * (1.0 + 4.0 * _U) + 4.0 * _U * float(np.max(np.abs(v)))
    return (k_c, shift) if shift <= 1e-9 * max(float(np.max(np.abs(v))), 1.0) else None


#: Work of the non-uniform FFT, per node and per FFT element per level, in units of one direct (frequency, node)
#: pair (about 17 Taylor powers, each a product and a histogram entry per node and a radix-2 FFT level per element).
_FFT_NODE_COST, _FFT_LEVEL_COST = 48, 24


def _sum_work(v, nodes):
    """The phase sums' work in (frequency, node) pairs summed directly: ``K J``, or what the non-uniform FFT costs
    where :func:`_phase_sums` takes it (``J`` histogram entries and ``N log2 N`` FFT work per power, counted at the
    longer of the two lengths the FFT may take, ``N >= 2K``: a work limit, so an upper estimate)."""
    k = v.size
    line = v if k < 2 or v[-1] >= v[0] else -v
    if k < 64 or _uniform_line(line, nodes) is None:
        return k * nodes
    n = 1 << max(5, int(math.ceil(math.log2(k))) + 1)
    return _FFT_NODE_COST * nodes + _FFT_LEVEL_COST * n * int(math.log2(n))


def _phase_sums(v, r, c, taylor_target=_phase_fft._TAYLOR_TARGET):
    """``(sums, shift, phase_errors, sum_error)`` with ``sums[k] ~ sum_j c_j e^(i v_k r_j)`` (``taylor_target``: the
    non-uniform FFT's, :func:`mechanisms._phase_fft.phase_sums_uniform`).

    ``c`` is real, so a decreasing ``v`` (the add direction's nodes) is the conjugate of the sums at ``-v``
    (exact). On an evenly spaced ``v`` with many frequencies and nodes, the certified non-uniform FFT of
    :mod:`mechanisms._phase_fft` (``phase_errors`` per term, ``sum_error`` absolute); with fewer, each ``v_k`` is
    split as ``v_b + m d`` (``b`` a block start, ``0 <= m < B``, ``B ~ sqrt(K)``), ``e^(i v_k r) = e^(i v_b r)
    e^(i m d r)``, and the sums are one matrix product ``(c e^(i v_b r)) @ e^(i m d r)^T``: ``2 sqrt(K) J``
    complex exponentials instead of ``K J`` (``phase_errors = 0``, ``sum_error = None``: the caller bounds the
    dot products). ``shift`` bounds ``|v_k - (the split or centred value)|`` (0 for the direct path), whose phase
    error ``|e^(i shift r) - 1| <= shift |r|`` the caller adds to each term's relative error.
    """
    k = v.size
    if k >= 2 and v[-1] < v[0]:
        sums, shift, phase_errors, sum_error = _phase_sums(-v, r, c, taylor_target)
        return np.conj(sums), shift, phase_errors, sum_error
    if k >= 64:
        d = (v[-1] - v[0]) / (k - 1)
        uniform = _uniform_line(v, r.size)
        if uniform is not None:
            k_c, shift = uniform
            sums, phase_errors, sum_error = _phase_fft.phase_sums_uniform(float(v[k_c]), d, k_c, k, r, c,
                                                                          taylor_target)
            return sums, shift, phase_errors, sum_error
        size = int(np.ceil(np.sqrt(k)))
        m = np.arange(k) % size
        starts = v[np.arange(0, k, size)]
        split = starts[np.arange(k) // size] + m * d
        shift = float(np.max(np.abs(v - split))) * (1.0 + 4.0 * _U) + 4.0 * _U * float(np.max(np.abs(v)))
        if d > 0 and shift <= 1e-9 * max(float(np.max(np.abs(v))), 1.0):
            sums = np.zeros((starts.size, size), dtype=np.complex128)
            width = _COLUMNS
            for j in range(0, r.size, width):
                blocks = np.exp(1j * np.outer(starts, r[j:j + width])) * c[j:j + width]  # (K/B, J)
                steps = np.exp(1j * np.outer(np.arange(size) * d, r[j:j + width]))  # (B, J)
                sums += _products(blocks, steps)
            return sums.reshape(-1)[:k], shift, 0.0, None
    sums = np.zeros(k, dtype=np.complex128)
    rows = max(1, _BLOCK_ENTRIES // _COLUMNS)  # chunks of bounded size
    for start in range(0, k, rows):
        for j in range(0, r.size, _COLUMNS):
            phase = np.exp(1j * np.outer(v[start:start + rows], r[j:j + _COLUMNS]))
            sums[start:start + rows] += np.einsum("ij,j->i", phase, c[j:j + _COLUMNS])
    return sums, 0.0, 0.0, None


def _check_work(v, nodes, v_top, done=0, name="the subsampled Gaussian's characteristic function"):
    """The work limit, on what the phase sums cost (:func:`_sum_work`: ``K J`` pairs summed directly, far fewer
    where the non-uniform FFT sums them; the privacy buckets, the alternative, are both slower and looser on the
    narrow losses that need many nodes: sigma 0.6, q 1e-5, 100 steps took 23 s there for a 10% wide interval)."""
    frequencies = v.size
    work = done + _sum_work(v, nodes)
    if work > MAX_WORK:
        raise NumericalError(
            f"{name} at {frequencies} frequencies up to {v_top:.4g} "
            f"needs {nodes} quadrature nodes each (the integrand oscillates that fast where it is large), beyond "
            f"the work limit {MAX_WORK:.3g}; RDPAccountant answers such ledgers (looser)."
        )
    return work


def log_sum_enclosure(v, r, c, eps, peak, taylor_target, log_fixed, extra=None):
    """``(log S~, log E)``: the phase sums ``S(v_k) = e^peak sum_j c_j e^(i v_k r_j)`` of the subsampled enclosures'
    kept quadrature terms (``c`` their magnitudes over ``e^peak``, ``eps`` each term's relative error bound before the
    sums) and one bound ``E`` for every ``k``: the terms' own errors through the sums (:func:`_phase_sums`' phase
    errors and frequency split, ``|e^(i d r) - 1| <= |d r|``, and its one extra complex product), the sums' rounding
    (the FFT's bound, or dot products of at most :data:`_COLUMNS` terms and the partial sums in turn; ``sum_j c_j
    eps_j`` of non-negative terms in any order within ``gamma_(J+1)``), and the errors ``e^(log_fixed)`` the caller
    bounded
    (quadrature, tails, pruned terms, tiling), raised by ``1e-10``. The caller adds its own slack to ``log E``.

    ``extra``, if given, is ``(values, error)``: terms over ``e^peak`` added to the sums at each frequency (a jump
    term of :mod:`mechanisms.subsampled_gaussian_cf`), ``error`` a bound on their own error at every frequency; that
    error joins the others, and the addition's rounding (``u`` of the larger magnitude, at most ``sum c +
    max |values|``) the sums'."""
    sums, shift, phase_errors, sum_error = _phase_sums(v, r, c, taylor_target)
    eps = np.expm1(eps + phase_errors + shift * np.abs(r) * 1.01 + 8.0 * _U) * 1.01 + 8.0 * _U
    if sum_error is None:  # dot products: one product, then the partial sums in turn
        length = min(c.size, _COLUMNS) + -(-c.size // _COLUMNS) + 2
        sum_error = 2.0 * length * _U * float(np.sum(c)) * (1.0 + float(eps.max()))
    rounding = float(np.sum(c * eps)) * (1.0 + 2.0 * (c.size + 2) * _U) + sum_error * (1.0 + float(eps.max()))
    with np.errstate(over="ignore"):  # beyond float64 the bound is inf: the caller raises NumericalError
        fixed = np.exp(np.asarray(log_fixed, dtype=np.float64) - peak).sum()
    if extra is not None:
        values, error = extra
        sums = sums + values
        fixed = fixed + float(error) + 2.0 * _U * (float(np.sum(c)) * (1.0 + float(eps.max()))
                                                    + float(np.max(np.abs(values))))
    log_err = float(np.log((rounding + fixed) * (1.0 + 1e-10) + 1e-300)) + peak
    with np.errstate(divide="ignore"):
        return np.log(sums) + peak, log_err

