"""The proven enclosure of the subsampled Gaussian's characteristic function (issue 14 item 1).

Every check compares with mpmath (tests/oracles/privacy_profiles.py, independent of the library): the enclosure
``|F(z) - F~| <= E`` must hold at random points of the contour, the decay bound must dominate ``|F|`` beyond its
frequency, and the Gauss-Legendre rule's nodes and weights must be as accurate as the proof assumes.
"""

import math

import mpmath as mp
import numpy as np
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from dpledger.accountants import FourierAccountant
from dpledger.accountants.report import BoundKind
from dpledger.mechanisms import GaussianMechanism, PoissonSubsampled, RandomizedResponse
from dpledger.mechanisms import _phase_sums as phase_sums
from dpledger.mechanisms import subsampled_gaussian_cf as cf
from dpledger.mechanisms import subsampled_gaussian_decay as decay
from tests.oracles import privacy_profiles as pp
from tests.soundness._cases import budget

#: Oracle precision: Gauss-Legendre of degree 4 at 30 digits agrees with degree 5 far below the enclosures' 1e-13.
DPS, DEGREE = 30, 4


def _oracle_f(z, g, sigma, dps=DPS, degree=DEGREE):
    """``F(z) = E[(1 - g + g e^(X/sigma - 1/(2 sigma^2)))^z]`` through the remove direction ``M(s) = F(1 + s)``."""
    return mp.exp(pp.subsampled_log_mgf(z - 1, g, "gaussian", sigma, "remove", dps=dps, degree=degree))


def _contains(a, v, g, sigma):
    value, log_err = cf.log_f_enclosure(a, np.array([v]), g, 1.0 / sigma)
    with mp.workdps(DPS):
        exact = _oracle_f(mp.mpc(a, v), g, sigma)
        gap = abs(mp.exp(mp.mpc(complex(value[0]))) - exact)
        bound = mp.exp(mp.mpf(float(log_err[0])))
        # the enclosure must be informative too: its error small next to F(a), the size of the terms
        size = abs(_oracle_f(mp.mpf(a), g, sigma))
    return gap, bound, size


def test_legendre_nodes_and_weights_are_within_the_assumed_errors():
    nodes, weights = cf._rule()
    n = cf._N_NODES
    with mp.workdps(50):
        # the roots of P_n from mpmath's own root finder (independent of the rule's Newton iteration)
        for x, w in zip(nodes, weights):
            r = mp.findroot(lambda t: mp.legendre(n, t), mp.mpf(float(x)))
            dp = mp.diff(lambda t: mp.legendre(n, t), r)
            exact_w = 2 / ((1 - r * r) * dp * dp)
            assert abs(r - mp.mpf(float(x))) <= cf.NODE_ERROR
            assert abs(exact_w - mp.mpf(float(w))) <= cf.WEIGHT_ERROR * exact_w
        assert abs(mp.fsum(mp.mpf(float(w)) for w in weights) - 2) <= 1e-15  # a rule, not a table of noise


@budget(10)  # 250 with --soundness-long (20 took 12 s here)
@given(st.floats(-20.0, 40.0), st.floats(0.0, 400.0), st.floats(-6.0, -0.01).map(lambda e: 10.0**e),
       st.floats(0.5, 8.0))
@example(1.5, 3.0, 0.01, 1.1)
@example(-0.5, 300.0, 0.5, 0.8)
@example(30.0, 50.0, 1e-4, 2.0)
@example(-20.0, 1.0, 0.2, 5.0)
def test_enclosure_contains_the_mpmath_value(a, v, g, sigma):
    gap, bound, size = _contains(a, v, g, sigma)
    assert gap <= bound, (a, v, g, sigma, gap, bound)
    assert bound <= 1e-9 * size  # and is useful


@pytest.mark.parametrize("a, v, g, sigma", [(-623.6, 0.0, 1e-4, 2.0), (-623.6, 40.0, 1e-4, 2.0),
                                             (-80.0, 5.0, 0.3, 1.0), (-3000.0, 0.0, 1e-3, 0.8), (-1.5, 2.0, 0.5, 0.6)])
def test_an_add_direction_tilt_starts_its_range_at_the_left_reach_and_still_holds(a, v, g, sigma):
    """For ``a < 0`` the range starts at ``a mu - width`` or the left reach, whichever is larger (the reach carries
    its own ``e^-60``): the left tail bound charged there stays below ``e^-60`` of ``F(a) >= 1``, and the enclosures
    (one tilt, and the shared real-axis layout) contain mpmath's value and stay informative."""
    mu, width = 1.0 / sigma, 14.0
    lo, hi = cf._range(a, g, mu, width, math.inf)
    assert lo == max(a * mu - width, float(cf._left_reach(a, g)))
    assert cf._log_tails(a, g, mu, lo, hi)[0] <= -60.0
    gap, bound, size = _contains(a, v, g, sigma)
    assert gap <= bound and bound <= 1e-9 * size, (gap, bound, size)
    if v == 0.0:
        value, log_err = cf.log_f_real_enclosure(np.array([a, a / 2, a / 3, a / 4]), g, mu)
        with mp.workdps(DPS):
            assert abs(mp.exp(mp.mpf(float(value[0].real))) - _oracle_f(mp.mpf(a), g, sigma)) <= mp.exp(
                mp.mpf(float(log_err[0])))


@pytest.mark.parametrize("a, g, sigma, v_top",
                         [(2.0, 0.05, 1.0, 1600.0), (6.0, 1e-4, 0.6, 3e4), (-3.0, 0.3, 1.5, 500.0)])
def test_a_layout_search_started_anywhere_ends_where_one_from_zero_does(a, g, sigma, v_top):
    """Each zone's level is the smallest whose bound meets the target, whether the search starts at 0, above (it
    goes down while the level below still meets it) or below; the panels come out in order of ``x``."""
    mu = 1.0 / sigma
    base = cf._layout(a, v_top, g, mu, 14.0)
    assert np.all(np.diff(base[1]) > 0)
    for shift in (-3, 2, 5):
        other = cf._layout(a, v_top, g, mu, 14.0, start=base[4] + shift)
        assert np.array_equal(other[4], base[4]) and np.array_equal(other[1], base[1]) and other[2] == base[2]


def test_high_frequency_groups_aim_at_a_target_raised_by_the_square_of_their_frequency(monkeypatch):
    """A group of frequencies whose smallest ``|v|`` exceeds V0 aims at ``(v_low / V0)^2`` times 1e-17 of ``F(a)``
    (the inversion weighs it by ``1 / v^2``): fewer panels, a larger but still met bound; at or below V0 nothing
    changes. Their phase sums' Taylor target is raised alike. The bound actually returned still contains mpmath's
    value on such a line."""
    a, g, mu, width = 2.0, 0.05, 1.0, 14.0
    log_ref = cf._reference(a, g, mu, width)[2]
    base = cf._layout(a, 1600.0, g, mu, width)
    same = cf._layout(a, 1600.0, g, mu, width, v_low=cf._TARGET_FREQUENCY)
    raised = cf._layout(a, 1600.0, g, mu, width, v_low=1000.0)
    assert np.array_equal(base[1], same[1]) and base[2] == same[2]
    assert raised[1].size < 0.8 * base[1].size
    assert base[2] <= log_ref + cf._LOG_TARGET + 1e-9
    assert base[2] < raised[2] <= log_ref + cf._LOG_TARGET + 2.0 * np.log(1000.0 / cf._TARGET_FREQUENCY) + 1e-9
    v = np.linspace(300.0, 480.0, cf._SHORT_LINE + 44)  # a long line: one octave, relaxed ~88 times
    targets = []
    original = phase_sums._phase_sums
    monkeypatch.setattr(phase_sums, "_phase_sums", lambda *args: targets.append(args[3]) or original(*args))
    value, log_err = cf.log_f_enclosure(a, v, g, mu)
    assert targets == [pytest.approx(1e-16 * (300.0 / cf._TARGET_FREQUENCY) ** 2)]  # and its Taylor remainder
    with mp.workdps(DPS):
        exact = _oracle_f(mp.mpc(a, v[0]), g, 1.0 / mu)
        assert abs(mp.exp(mp.mpc(complex(value[0]))) - exact) <= mp.exp(mp.mpf(float(log_err[0])))
    assert np.exp(log_err).max() <= 1e-9 * np.exp(cf.log_f_upper(a, g, mu))


def _check_decay_bound(a, v_min, g, sigma, factor):
    log_sup = decay.log_f_sup(a, v_min, g, 1.0 / sigma)
    # the oracle sums terms as large as F(a): its digits must reach below the bound (and its rule with them)
    extra = max(0, math.ceil((cf.log_f_upper(a, g, 1.0 / sigma) - log_sup) / math.log(10.0)))
    dps, degree = DPS + extra, DEGREE + (2 if extra > 10 else 0)
    with mp.workdps(dps):
        for v in (v_min, v_min * factor):
            value = _oracle_f(mp.mpc(a, v), g, sigma, dps=dps, degree=degree)
            assert mp.log(abs(value)) <= log_sup * (1 + 1e-12) + 1e-12, (a, v, g, sigma)


@pytest.mark.parametrize("a, v_min, g, sigma, factor", [
    (11.0, 24.0, 0.1, 0.75, 1.0),  # |F| ~ e^-1.6 under F(a) ~ e^72: 32 digits cancel (the oracle needs ~50)
    (-5.0, 1.0, 0.9, 5.0, 1.0),
    (8.0, 100.0, 1e-3, 1.5, 2.0),
    (3.0, 40.0, 3e-3, 0.8, 3.0),
])
def test_decay_bound_dominates_the_modulus_beyond_its_frequency(a, v_min, g, sigma, factor):
    _check_decay_bound(a, v_min, g, sigma, factor)


@pytest.mark.long_oracle  # a draw can need 180 digits and four minutes (a = 20, g = 1e-4): 31 s for these 8
@settings(max_examples=8, deadline=None)
@given(st.floats(-5.0, 20.0), st.floats(1.0, 300.0), st.floats(-4.0, -0.05).map(lambda e: 10.0**e),
       st.floats(0.6, 5.0), st.floats(1.0, 4.0))
def test_decay_bound_dominates_the_modulus_at_random_points(a, v_min, g, sigma, factor):
    _check_decay_bound(a, v_min, g, sigma, factor)


def test_decay_bound_is_tight():
    """Useful, not only valid: within e^0.5 of ``|F|`` at its frequency, and far below ``F(a)`` there (the true
    decay is slow for small sampling probabilities: the loss piles up near its infimum ``log(1 - g)``)."""
    mu = 1.0 / 1.1
    for g, v, drop in ((0.5, 200.0, 12.0), (0.01, 2000.0, 3.5)):
        value, _ = cf.log_f_enclosure(2.0, np.array([v]), g, mu)
        log_sup = decay.log_f_sup(2.0, v, g, mu)
        assert value[0].real <= log_sup <= value[0].real + 0.5
        assert log_sup < cf.log_f_upper(2.0, g, mu) - drop


def test_mechanism_methods_are_the_module_functions():
    m = GaussianMechanism(sigma=2.0, sensitivity=2.0)  # noise multiplier 1
    v = np.array([0.0, 5.0])
    got = m.subsampled_log_f_enclosure(1.5, v, 0.1)
    want = cf.log_f_enclosure(1.5, v, 0.1, 1.0)
    np.testing.assert_array_equal(got[0], want[0])
    assert m.subsampled_log_f_sup(1.5, 10.0, 0.1) == decay.log_f_sup(1.5, 10.0, 0.1, 1.0)
    with pytest.raises(Exception, match="RandomizedResponse"):
        RandomizedResponse(p=0.7).subsampled_log_f_enclosure(1.5, v, 0.1)


def test_subsampled_gaussian_reports_are_upper_bounds_through_the_enclosure(monkeypatch):
    """The label follows the proof path: inflating the enclosure's error must widen the reported interval, and a
    Gaussian whose enclosure is withdrawn is labelled an estimate again."""
    m = PoissonSubsampled(GaussianMechanism(sigma=1.5), sampling_probability=0.05)
    fa = FourierAccountant().compose(m, count=20)
    assert fa.bound_kind is BoundKind.UPPER
    tight = fa.delta_bounds(1.0)
    real = cf.log_f_enclosure

    def inflated(a, v, g, mu, width=14.0, *, cut=math.inf):
        value, log_err = real(a, v, g, mu, width, cut=cut)
        return value, np.maximum(log_err, np.real(value) + np.log(1e-3))

    monkeypatch.setattr(cf, "log_f_enclosure", inflated)
    loose = FourierAccountant(rtol=0.9).compose(m, count=20).delta_bounds(1.0)
    assert loose.upper > tight.upper * (1 + 1e-6) and loose.lower < tight.lower
    monkeypatch.setattr(cf, "log_f_enclosure", real)

    class Unenclosed(GaussianMechanism):
        has_subsampled_enclosure = False

    # without the enclosure the proven path is the privacy buckets, not the estimated characteristic function
    bucketed = FourierAccountant().compose(PoissonSubsampled(Unenclosed(sigma=1.5), 0.05), count=20)
    report = bucketed.epsilon_report(1e-5)
    assert bucketed.bound_kind is BoundKind.UPPER and "privacy buckets" in report.method
    assert report.epsilon >= FourierAccountant().compose(m, count=20).epsilon_bounds(1e-5).lower

    class Uncertified(Unenclosed):
        has_subsampled_loss_buckets = False

    plain = FourierAccountant().compose(PoissonSubsampled(Uncertified(sigma=1.5), 0.05), count=20)
    assert plain.bound_kind is BoundKind.ESTIMATE
    assert "estimated part: PoissonSubsampled" in plain.epsilon_report(1e-5).method


def test_the_embedded_gauss_legendre_rule_is_the_exact_rule_correctly_rounded():
    """Newton on P_20 at 40 digits from numpy's nodes; every embedded node and weight must be the nearest float."""
    import mpmath

    n = 20
    nodes, weights = cf._rule()
    start, _ = np.polynomial.legendre.leggauss(n)
    with mpmath.workdps(40):
        for i, x0 in enumerate(start):
            x = mpmath.mpf(float(x0))
            for _ in range(8):
                p, p_prev = mpmath.legendre(n, x), mpmath.legendre(n - 1, x)
                x -= p / (n * (x * p - p_prev) / (x * x - 1))
            p, p_prev = mpmath.legendre(n, x), mpmath.legendre(n - 1, x)
            dp = n * (x * p - p_prev) / (x * x - 1)
            assert nodes[i] == float(x) and weights[i] == float(2 / ((1 - x * x) * dp * dp))
    assert not nodes.flags.writeable and not weights.flags.writeable


@settings(max_examples=6, deadline=None)
@given(st.lists(st.floats(-0.99, 40.0), min_size=4, max_size=12), st.floats(-5.0, -0.05).map(lambda e: 10.0**e),
       st.floats(0.6, 6.0))
@example([-0.5, 0.001, 1.0, 2.5, 30.0], 0.01, 0.8)
def test_the_shared_real_axis_layout_contains_the_mpmath_values(tilts, g, sigma):
    """Chernoff searches ask for many real tilts at once (one layout for all): each enclosure holds, is as
    informative as the one-tilt path, and agrees with it."""
    a = np.array(tilts)
    value, log_err = cf.log_f_real_enclosure(a, g, 1.0 / sigma)
    for i, tilt in enumerate(a):
        one, one_err = cf.log_f_enclosure(tilt, np.zeros(1), g, 1.0 / sigma)
        assert abs(value[i].real - one[0].real) <= 1e-10
        assert log_err[i] <= value[i].real + np.log(1e-11)  # informative (these feed Chernoff bounds)
        with mp.workdps(DPS):
            exact = _oracle_f(mp.mpf(float(tilt)), g, sigma)
            assert abs(mp.exp(mp.mpf(float(value[i].real))) - exact) <= mp.exp(mp.mpf(float(log_err[i]))), tilt


@settings(max_examples=10, deadline=None)
@given(st.integers(1, 300), st.sampled_from([3, 40, 64, 150, 700]), st.floats(1e-3, 3.0), st.floats(-4000.0, 4000.0),
       st.sampled_from([1e-4, 1e-2, 0.5]), st.booleans(), st.integers(0, 2**32 - 1))
@example(193, 700, 13.3 / 200.0, 3000.0, 1e-4, False, 5)  # the split path of a narrow ledger's octave
@example(130, 40, 0.7, -2000.0, 0.5, True, 6)  # the direct path, two column blocks, the add direction's order
def test_dot_product_phase_sums_contain_the_mpmath_sums(j, count, d, v0, scale, decreasing, seed):
    """``_phase_sums`` below the FFT's size: the frequency split (one product ``blocks . steps^T`` per column block,
    ``count >= 64``) and the direct sums (``count < 64``), both by numpy's single-threaded loops, are within the
    bound ``_log_f_enclosure`` charges them: per term the rounding of ``v r``, the split's phase shift and the
    exponential's and products' roundings, and the dot products' ``2 (min(J, 64) + ceil(J / 64) + 2) u sum c``.
    A transposed or conjugated product, a wrong block start or a dropped column block leaves the bound."""
    rng = np.random.default_rng(seed)
    r = scale * rng.normal(size=j)
    c = np.exp(2.0 * rng.normal(size=j))
    v = v0 + d * np.arange(count)
    if decreasing:
        v = v[::-1].copy()
    assert count * j < phase_sums._FFT_WORK  # the dot-product paths
    sums, shift, phase_errors, sum_error = phase_sums._phase_sums(v, r, c)
    assert sum_error is None and phase_errors == 0.0
    assert shift <= 1e-9 * max(float(np.max(np.abs(v))), 1.0)
    length = min(j, phase_sums._COLUMNS) + -(-j // phase_sums._COLUMNS) + 2
    # per term (as _term_errors and _log_f_enclosure charge it): the rounding of v r and the exponential, the split's
    # shift, the extra complex product
    v_top = float(np.max(np.abs(v)))
    eps = np.expm1(2.0 * cf._U * v_top * np.abs(r) + shift * np.abs(r) * 1.01 + 12.0 * cf._U) * 1.01
    bound = float(np.sum(c * eps)) + 2.0 * length * cf._U * float(np.sum(c)) * 1.01
    with mp.workdps(DPS):
        rs, cs = [mp.mpf(float(x)) for x in r], [mp.mpf(float(x)) for x in c]
        for k in rng.choice(count, size=min(count, 5), replace=False):
            exact = mp.fsum(cj * mp.expj(mp.mpf(float(v[k])) * rj) for rj, cj in zip(rs, cs))
            assert abs(complex(exact) - sums[k]) <= bound, (k, abs(complex(exact) - sums[k]), bound)


def test_long_lines_are_split_into_evenly_spaced_runs_the_fft_can_take():
    """An octave of more than _FFT_MAX_FREQUENCIES frequencies is summed in consecutive runs of at most that many,
    each evenly spaced (so each takes the non-uniform FFT), and the work limit counts what that costs. Octaves are
    counted down from the largest frequency, (V / 2^(j+1), V / 2^j]."""
    step = 0.25
    v = 1.0 + step * np.arange(3 * phase_sums._FFT_MAX_FREQUENCIES + 17)
    keys = phase_sums._group_keys(v)
    octaves = np.floor(np.log2(v.max() / v))
    for key in np.unique(keys):
        sel = np.flatnonzero(keys == key)
        assert sel.size <= phase_sums._FFT_MAX_FREQUENCIES and np.all(np.diff(sel) == 1)
        if key == keys[1]:  # the lowest octaves above |v| = 1 (v[0] = 1 is a group of its own), merged
            assert sel.size <= phase_sums._MERGED
        else:
            assert np.unique(octaves[sel]).size == 1
        if sel.size >= 256:
            assert phase_sums._uniform_line(v[sel], 10**5) is not None
            assert phase_sums._sum_work(v[sel], 10**5) < sel.size * 10**5
    assert phase_sums._sum_work(v[:100], 10**5) == 100 * 10**5  # too short for the FFT: summed directly
    # a line just above a power of two: its top group reaches down to half its largest frequency, not to 2^k
    line = 1.04 * np.arange(1, 4097)
    top = np.flatnonzero(phase_sums._group_keys(line) == phase_sums._group_keys(line)[-1])
    assert line[top].min() > line.max() / 2.0 and line[top[0] - 1] <= line.max() / 2.0
    small = phase_sums._group_keys(np.array([0.0, 0.5, 1.0, 3.0, 8.0]))
    assert small[0] == small[1] == small[2] != small[3] and small[3] == small[4]  # the lowest octaves merge
    # ... up to _MERGED frequencies in all: a contour's octaves of 1, 2, 4, ... frequencies share one layout
    contour = 1.04 * np.arange(1, 4097)
    keys = phase_sums._group_keys(contour)
    merged = keys == keys[0]
    assert 0 < merged.sum() <= phase_sums._MERGED and contour[merged].max() < contour.max() / 4.0
    assert np.unique(keys[~merged]).size == np.unique(np.floor(np.log2(contour.max() / contour[~merged]))).size
    uneven = np.sort(np.random.default_rng(1).uniform(1.0, 2.0, 1000))
    assert phase_sums._uniform_line(uneven, 10**5) is None and phase_sums._sum_work(uneven, 10**5) == 1000 * 10**5


def test_long_lines_on_two_threads_give_the_serial_bits(monkeypatch):
    """Each frequency group of a long line writes its own entries, so the threaded evaluation is the serial one bit
    for bit (sigma 0.6, q 1e-4: the 10-step grid cell's line of 2^17 nodes)."""
    v = 0.9 * np.arange(1 << 15)
    threaded = cf.log_f_enclosure(6.0, v, 1e-4, 1.0 / 0.6)
    monkeypatch.setattr(cf, "_THREADED_LINE", 1 << 62)
    serial = cf.log_f_enclosure(6.0, v, 1e-4, 1.0 / 0.6)
    np.testing.assert_array_equal(threaded[0], serial[0])
    np.testing.assert_array_equal(threaded[1], serial[1])


def _threaded_line_in_child(queue):
    value, error = cf.log_f_enclosure(6.0, 0.9 * np.arange(1 << 15), 1e-4, 1.0 / 0.6)
    queue.put(float(error.max()))


def test_a_forked_child_after_the_parent_used_the_threads_still_answers():
    """A forked child inherits the parent's pool object but not its threads: without the reset at fork, its first
    long line waited forever for workers that do not exist."""
    import multiprocessing

    cf.log_f_enclosure(6.0, 0.9 * np.arange(1 << 15), 1e-4, 1.0 / 0.6)  # the parent's pool now has idle threads
    context = multiprocessing.get_context("fork")
    queue = context.Queue()
    child = context.Process(target=_threaded_line_in_child, args=(queue,))
    child.start()
    child.join(timeout=60)
    alive = child.is_alive()
    if alive:
        child.kill()
    assert not alive and child.exitcode == 0 and np.isfinite(queue.get(timeout=5))
