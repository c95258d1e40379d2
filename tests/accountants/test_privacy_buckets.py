"""The privacy-buckets accountant (accountants.privacy_buckets): its intervals contain exact values, its FFT
error bound holds, and the Fourier accountant uses it where inversion cannot answer."""

import functools
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dpledger.accountants import FourierAccountant, privacy_buckets
from dpledger.accountants._fourier_search import AccuracyError, max_epsilon_bounds
from dpledger.accountants.fourier_inversion import TwoPointLedger
from dpledger.accountants.report import BoundKind
from dpledger.mechanisms import GaussianMechanism, LaplaceMechanism, PoissonSubsampled, RandomizedResponse
from dpledger.mechanisms._fft_error import norm2_upper, shave_top
from dpledger.mechanisms.custom_pairs import DiscretePairMechanism
from dpledger.mechanisms.relations import Direction
from tests.oracles.analytic_gaussian import gaussian_delta_float


@settings(max_examples=20, deadline=None)
@given(st.integers(65, 3000), st.integers(65, 3000), st.integers(0, 2**32 - 1))
def test_fft_convolution_error_is_within_its_bound(n1, n2, seed):
    rng = np.random.default_rng(seed)
    a, b = rng.pareto(1.0, n1), rng.pareto(1.0, n2)  # heavy-tailed non-negative masses
    a, b = a / a.sum(), b / b.sum()
    n = 1 << (n1 + n2 - 2).bit_length()
    computed = np.fft.irfft(np.fft.rfft(a, n) * np.fft.rfft(b, n), n)[:n1 + n2 - 1]
    exact = np.convolve(a.astype(np.longdouble), b.astype(np.longdouble))
    error = float(np.sqrt(np.sum((computed.astype(np.longdouble) - exact) ** 2)))
    bound = privacy_buckets._fft_error(n, a, b)
    assert error <= bound
    assert bound < 1e-11  # and it is a usable bound


def _measure(values, start=0, upper=True):
    return privacy_buckets._Measure(start, np.array(values, dtype=np.float64), 0.0, upper)


def test_truncation_and_shaving_keep_the_tail_order():
    tiny = privacy_buckets.TAIL / 4
    m = privacy_buckets._truncate(_measure([tiny, tiny, 0.5, 0.5 - 4 * tiny, tiny, tiny], start=-2))
    assert m.start == 0 and m.values.size == 2 and m.infinite >= 2 * tiny  # top to +inf
    assert m.values[0] >= 0.5 + 2 * tiny  # bottom rounded up
    low = privacy_buckets._truncate(_measure([tiny, tiny, 0.5, 0.5 - 4 * tiny, tiny, tiny], start=-2, upper=False))
    assert low.infinite == 0.0 and low.values[-1] >= 0.5 - 2.0001 * tiny and low.values.sum() < 1.0 - tiny
    values = np.array([0.2, 0.3, 0.1, 0.05])
    values = shave_top(values, 0.12)
    assert values[3] == 0.0 and values[2] <= 0.1 - 0.07 and values[2] > 0.0299 and values[1:2].tolist() == [0.3]


@settings(max_examples=60, deadline=None)
@given(st.lists(st.floats(0.0, 1.0), min_size=3, max_size=40), st.floats(-20.0, -1.0).map(lambda e: 10.0**e),
       st.integers(-5, 5), st.booleans())
def test_truncation_by_any_tail_keeps_each_measures_order(values, tail, start, upper):
    """A convolution's tails may be as heavy as its error bound: any tail keeps the upper measure above (mass moved to
    +inf or to higher loss: every upper tail at least as heavy) and the lower one below (mass moved to lower loss or
    dropped: every upper tail at most as heavy), the orders the proofs need."""
    m = _measure(values, start=start, upper=upper)
    t = privacy_buckets._truncate(m, tail)
    before = np.concatenate([np.cumsum(m.values[::-1])[::-1], [0.0]])  # mass at losses >= (start + k) h
    losses = np.arange(m.start, m.start + m.values.size + 1)
    kept = np.zeros(losses.size)
    for i, loss in enumerate(losses):
        kept[i] = t.values[max(loss - t.start, 0):].sum() if loss - t.start < t.values.size else 0.0
    moved = m.values.sum() + m.infinite - t.values.sum() - t.infinite
    if upper:
        assert np.all(kept + t.infinite >= (before + m.infinite) * (1 - 1e-12) - 1e-300)
        assert t.infinite >= m.infinite
    else:
        assert np.all(kept <= before * (1 + 1e-12) + 1e-300) and t.infinite == m.infinite and moved >= -1e-15
    assert t.values.size >= 1


@pytest.mark.parametrize("sigma, count", [(1.0, 1), (2.0, 10), (0.7, 3)])
def test_gaussian_compositions_bracket_the_analytic_gaussian(sigma, count):
    ledger = privacy_buckets.BucketLedger([(GaussianMechanism(sigma=sigma), count)])
    mu = math.sqrt(count) / sigma
    for eps in (0.0, 0.3, 1.0, 3.0):
        lower, upper = ledger.delta_bounds(eps)
        exact = gaussian_delta_float(eps, mu)
        assert lower <= exact <= upper
        assert upper <= exact * (1 + 1e-3) + 1e-12  # connect-the-dots: second order in the grid step


def test_randomized_response_bracket_its_exact_enumeration():
    rr = RandomizedResponse(p=0.7)
    exact = TwoPointLedger(e_values=[math.log(0.7 / 0.3)], counts=[200])
    ledger = privacy_buckets.BucketLedger([(rr, 200)])
    for eps in (10.0, 60.0, 100.0, 120.0):
        e, (lower, upper) = exact.delta_bounds(eps), ledger.delta_bounds(eps)
        assert lower <= e.lower and e.upper <= upper
    lower, upper = ledger.epsilon_bounds(1e-6)
    e = exact.epsilon_bounds(1e-6, 200 * math.log(0.7 / 0.3))
    assert lower <= e.lower <= e.upper <= upper <= e.upper * (1 + 1e-4)


def _exact_discrete(pairs, direction):
    """Exact composed loss distribution of discrete pairs by enumeration (a dict loss -> mass, float)."""
    dist = {0.0: 1.0}
    for log_p, log_q, count in pairs:
        first, second = (log_p, log_q) if direction is Direction.REMOVE else (log_q, log_p)
        for _ in range(count):
            new = {}
            for loss, mass in dist.items():
                for a, b in zip(first, second):
                    key = round(loss + a - b, 9)
                    new[key] = new.get(key, 0.0) + mass * math.exp(a)
            dist = new
    return dist


def test_three_outcome_pairs_bracket_their_enumeration():
    pairs = [(np.log([0.5, 0.3, 0.2]), np.log([0.2, 0.3, 0.5]), 6),
             (np.log([0.6, 0.3, 0.1]), np.log([0.3, 0.3, 0.4]), 4)]
    ledger = privacy_buckets.BucketLedger([(DiscretePairMechanism(p, q), n) for p, q, n in pairs])
    for eps in (0.0, 1.0, 2.5, 4.0):
        exact = max(sum(m * max(0.0, 1.0 - math.exp(eps - loss)) for loss, m in _exact_discrete(pairs, d).items())
                    for d in Direction)
        lower, upper = ledger.delta_bounds(eps)
        assert lower <= exact * (1 + 1e-9) and exact <= upper * (1 + 1e-9)  # enumeration rounding (1e-9 losses)
        assert upper <= exact * 1.01 + 1e-9


def test_one_subsampled_step_brackets_its_exact_profile():
    m = PoissonSubsampled(GaussianMechanism(sigma=0.9), sampling_probability=0.003)
    ledger = privacy_buckets.BucketLedger([(m, 1)])
    for eps in (0.0, 0.005, 0.02, 0.1):
        exact = [m.delta_bounds_one_run(eps, d) for d in Direction]
        lower, upper = ledger.delta_bounds(eps)
        assert lower <= max(e[1] for e in exact) and max(e[0] for e in exact) <= upper


@pytest.mark.parametrize("q, sigma, count", [(1e-4, 0.6, 3)])
def test_narrow_ledgers_are_answered_with_proven_bounds(q, sigma, count):
    """Very few runs of a small sampling probability: Fourier inversion cannot reach them (the characteristic
    function barely decays); the accountant answers through the buckets, labelled an upper bound and saying how."""
    fa = FourierAccountant().compose(PoissonSubsampled(GaussianMechanism(sigma=sigma), sampling_probability=q), count)
    report = fa.epsilon_report(1e-5)
    assert report.bound is BoundKind.UPPER and "privacy buckets" in report.method
    bounds = fa.epsilon_bounds(1e-5)
    assert 0.0 < bounds.lower <= bounds.upper == report.epsilon
    # a delta query at the reported epsilon, by its own proofs (the buckets' and its own failed inversions, which
    # may be looser than the epsilon search's plan there), must not prove delta above 1e-5 there: its lower end
    assert fa.delta_bounds(report.epsilon).lower <= 1e-5 * (1 + 1e-9)
    # and the reported epsilon is an upper bound by an independent one: dp_accounting's pessimistic PLD (an upper
    # bound on delta) of this ledger at discretisation 2e-6 gives delta(0.0043083971) = 9.99997e-6 <= 1e-5
    # (at 1e-5: 9.99999669e-6); the buckets alone reported 0.0043089389
    assert report.epsilon <= 0.0043089389


@pytest.mark.parametrize("q, sigma, count", [(1e-3, 1.0, 10), (1e-3, 0.6, 10), (1e-4, 0.6, 100), (1e-4, 0.6, 10)])
def test_a_ledger_that_left_the_buckets_for_inversion_agrees_with_them(q, sigma, count):
    """Ledgers once answered by the buckets, until the inversion could certify them: q = 1e-3, sigma = 1, 10 runs
    ([0.023208, 0.023514]) by a shorter contour (smaller damping), and q = 1e-3, sigma = 0.6, 10 runs and q = 1e-4,
    sigma = 0.6, 100 runs by cutting the remove direction's upper tail (``Mechanism.remove_body``), and q = 1e-4,
    sigma = 0.6, 10 runs ([0.010075, 0.010392] from the buckets) once the enclosures' work limit counted what the
    non-uniform FFT costs. Both intervals are proven, so they must overlap, and the inversion's meets rtol. (The
    last is answered on the windowed path since it composes ten runs: switched off here, as this is about inversion.)"""
    m = PoissonSubsampled(GaussianMechanism(sigma=sigma), sampling_probability=q)
    fa = FourierAccountant().compose(m, count)
    fa._few_runs = lambda: None
    inverted = fa.epsilon_bounds(1e-5)
    assert "privacy buckets" not in fa.epsilon_report(1e-5).method
    lower, upper = privacy_buckets.BucketLedger([(m, count)]).epsilon_bounds(1e-5)
    assert inverted.lower <= upper and lower <= inverted.upper
    assert inverted.upper - inverted.lower <= 1e-6 * inverted.upper


def test_buckets_agree_with_fourier_inversion_where_both_answer():
    m = PoissonSubsampled(GaussianMechanism(sigma=1.1), sampling_probability=0.01)
    inverted = FourierAccountant().compose(m, 1000).epsilon_bounds(1e-5)
    lower, upper = privacy_buckets.BucketLedger([(m, 1000)]).epsilon_bounds(1e-5)
    assert lower <= inverted.upper and inverted.lower <= upper <= inverted.upper * (1 + 1e-3)


def test_losses_beyond_the_float_range_of_exp_give_bounds_not_nan():
    """Red-team findings: losses above ~709 made the bucket thresholds inf - inf = NaN (reported as an upper
    bound); a Laplace with t >= 37.5 at q = 1 divided by zero. Exact delta(1) of the first ledger is 0.5."""
    fa = FourierAccountant().compose(PoissonSubsampled(LaplaceMechanism(scale=1 / 800), sampling_probability=0.5))
    b = fa.delta_bounds(1.0)
    assert not any(map(math.isnan, b)) and b.lower <= 0.5 <= b.upper
    fa = FourierAccountant().compose(LaplaceMechanism(scale=1 / 38)).compose(
        PoissonSubsampled(LaplaceMechanism(scale=1.0), sampling_probability=0.1))
    b = fa.delta_bounds(1.0)
    assert not any(map(math.isnan, b)) and 0.0 <= b.lower <= b.upper <= 1.0
    lower, upper = privacy_buckets.BucketLedger([(GaussianMechanism(sigma=0.02), 1)]).delta_bounds(100.0)
    assert not math.isnan(lower + upper) and lower <= gaussian_delta_float(100.0, 50.0) <= upper


def test_a_nearly_equal_discrete_pair_is_pure_dp_at_its_pure_epsilon_for_the_exactly_normalised_pair():
    """Red-team finding: the renormalisation of the log-masses (not only the subtraction) must be covered."""
    import mpmath as mp

    log_p, log_q = [-0.2885159821291536, -1.3837967964188091], [-0.28851607831753134, -1.3837965088134796]
    eps = FourierAccountant().compose(DiscretePairMechanism(np.array(log_p), np.array(log_q))).pure_epsilon()
    with mp.workdps(60):
        p = [mp.exp(mp.mpf(v)) for v in log_p]
        q = [mp.exp(mp.mpf(v)) for v in log_q]
        p, q = [v / mp.fsum(p) for v in p], [v / mp.fsum(q) for v in q]
        for a, b in ((p, q), (q, p)):
            assert mp.fsum(max(x - mp.exp(mp.mpf(eps)) * y, 0) for x, y in zip(a, b)) == 0


def _with_cut(mechanism, cut):
    """``mechanism`` with :meth:`loss_cut` returning ``cut`` (a subclass: the cut is a capability of the class)."""
    cls = type(f"Cut{type(mechanism).__name__}", (type(mechanism),),
               {"__slots__": (), "loss_cut": lambda self, direction, tail: cut})
    return cls(**{f: getattr(mechanism, f) for f in mechanism.__dataclass_fields__})


@pytest.mark.parametrize("cut", [-50.0, 0.05, 1.0, 300.0])
def test_a_cut_anywhere_gives_proven_bounds(cut):
    """The cut only places the grid: mass above it goes to +inf (upper) or to the cut (lower). A cut far inside
    the loss's support (0.05, 1: most of the mass above it) must still give an interval around the exact delta;
    so must cuts below every loss (-50, raised to just above the floor) and far above them."""
    m = _with_cut(GaussianMechanism(sigma=1.0), cut)
    assert m.loss_cut(Direction.REMOVE, privacy_buckets.TAIL) == cut
    ledger = privacy_buckets.BucketLedger([(m, 4)])
    for eps in (0.0, 0.5, 1.5, 3.0):
        lower, upper = ledger.delta_bounds(eps)
        exact = gaussian_delta_float(eps, 2.0)
        assert lower <= exact <= upper, (eps, lower, exact, upper)
    if cut >= 300.0:  # a cut above the support costs points, not tightness
        assert ledger.delta_bounds(1.5)[1] <= gaussian_delta_float(1.5, 2.0) * (1 + 1e-3)


def test_the_default_cut_is_markov_on_the_rdp():
    g = GaussianMechanism(sigma=1.0)
    orders = np.geomspace(1.0 + 1.0 / 64, 4096.0, 16)
    expected = float(np.min(orders / 2.0 - math.log(privacy_buckets.TAIL) / (orders - 1.0)))
    assert g.loss_cut(Direction.ADD, privacy_buckets.TAIL) == pytest.approx(expected, rel=1e-12)
    # P(L >= cut) under N(1, 1), L = x - 1/2, is at most TAIL (Markov) but not far below it
    tail = 0.5 * math.erfc((expected + 0.5 - 1.0) / math.sqrt(2.0))
    assert 1e-30 < tail <= privacy_buckets.TAIL


def test_a_long_gaussian_ledger_brackets_the_analytic_gaussian(monkeypatch):
    """200,000 runs: a share or a mass rounded the wrong way in one run's buckets is compounded 200,000 times.
    The sum of the runs' ranges overstates the composed width a hundredfold, so the first coarse pass allows only a
    coarser step (2^-9); the pass repeated on a finer step allows 2^-13, and the grid is ``STEP_GOAL``."""
    m = GaussianMechanism(sigma=300.0)
    ledger = privacy_buckets.BucketLedger([(m, 200_000)])
    assert ledger.h == privacy_buckets.STEP_GOAL and ledger._finest <= 2.0**-12
    mu = math.sqrt(200_000) / 300.0
    for eps in (0.0, 1.0, 3.0, 5.0):
        lower, upper = ledger.delta_bounds(eps)
        exact = gaussian_delta_float(eps, mu)
        assert lower <= exact <= upper, (eps, lower, exact, upper)
        assert upper <= exact * (1 + 3e-3) + 1e-12  # 1.0016 at eps = 5
    monkeypatch.setattr(privacy_buckets, "_COARSE_ROUNDS", 1)  # the first pass alone: the coarse step it allows
    assert privacy_buckets.BucketLedger([(m, 200_000)]).h == 2.0**-9


def test_a_long_subsampled_ledger_on_the_repeated_pass_agrees_with_fourier_inversion():
    """100,000 runs at q = 1e-3, sigma 1: Fourier inversion certifies [1.637176, 1.637176]. The buckets on the
    first coarse pass's step (2^-8) gave 2.444 at the upper end; on the repeated pass's (2^-10) 1.7227. Both
    intervals are proven, so they must overlap."""
    m = PoissonSubsampled(GaussianMechanism(sigma=1.0), sampling_probability=1e-3)
    lower, upper = privacy_buckets.BucketLedger([(m, 100_000)]).epsilon_bounds(1e-5)
    exact = FourierAccountant().compose(m, count=100_000).epsilon_bounds(1e-5)
    assert lower <= exact.upper and exact.lower <= upper
    assert upper <= exact.upper * 1.06


def test_many_runs_of_a_narrow_loss_keep_the_support_the_step_was_chosen_for():
    """sigma 0.53, q 1.3e-5, 4,131 runs: the FFT's rounding floor covers each convolution's whole length, and tails of
    at most TAIL could not cut it, so each squaring doubled the support (31 million points). With tails as heavy as
    each convolution's error bound the composed measures stay within the MAX_POINTS the step was chosen for; the
    interval still meets the inversion's proven one (which misses rtol there by the enclosures' float error) and is
    no looser."""
    m = PoissonSubsampled(GaussianMechanism(sigma=0.53), sampling_probability=1.3e-5)
    ledger = privacy_buckets.BucketLedger([(m, 4131)])
    sizes = [part.values.size for grid in ledger._grids.values() for pair in grid.values() for part in pair]
    assert max(sizes) <= privacy_buckets.MAX_POINTS
    lower, upper = ledger.epsilon_bounds(1e-5)
    accountant = FourierAccountant().compose(m, count=4131)
    with pytest.raises(AccuracyError) as failure:
        accountant._inverted(functools.partial(max_epsilon_bounds, mirrored=True), math.log(1e-5), delta=1e-5)
    proven = failure.value.proven
    assert max(lower, proven.lower) <= min(upper, proven.upper)
    assert upper <= proven.upper * 1.01  # 0.037106 against 0.036772 (0.037120 with the support doubled)


def _exact_norm_squared(x):
    from fractions import Fraction

    return sum(Fraction(float(v)) ** 2 for v in x)


@settings(max_examples=40, deadline=None)
@given(st.lists(st.floats(0.0, 1e3), min_size=1, max_size=300), st.integers(0, 40))
def test_the_fft_error_norm_is_an_upper_bound_on_the_exact_norm(values, spread):
    """``norm2_upper`` (numpy's single-threaded sum of squares instead of BLAS's ``norm``; used by the privacy
    buckets' and the allocation grid's FFT error bounds) bounds the exact 2-norm,
    checked in exact rational arithmetic, and stays within 1e-12 of it; [1, 2^-27] is a case whose float sum of
    squares rounds below the exact one (1 + 2^-54 -> 1), so a bound without its rounding factors fails there, and
    entries near 1e-200 have squares that underflow unless scaled."""
    from fractions import Fraction

    x = np.array(values) * 2.0 ** -spread
    for case in (x, np.array([1.0, 2.0 ** -27]), np.array([1.0] + [2.0 ** -27] * 3), np.array([1e-200, 3e-201])):
        bound = norm2_upper(case)
        exact_sq = _exact_norm_squared(case)  # compared in exact rationals (floats would underflow at 1e-197)
        assert Fraction(bound) ** 2 >= exact_sq
        assert Fraction(bound) ** 2 <= exact_sq * Fraction(1 + 2e-12)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.floats(0.0, 1.0), min_size=1, max_size=200), st.floats(0.0, 2.0))
def test_shaving_removes_at_least_the_amount_from_the_top(values, fraction):
    """``shave_top`` (both FFT error corrections of lower measures: privacy buckets and the allocation grid): every
    entry only shrinks, and the mass kept at or above each index is at most the original's less ``amount`` (checked
    in exact rationals), so upper tails shrink by at least the error removed."""
    from fractions import Fraction

    x = np.array(values)
    amount = fraction * float(x.sum())
    out = shave_top(x, amount)
    assert np.all(out >= 0.0) and np.all(out <= x)
    exact_in = [Fraction(float(v)) for v in x]
    exact_out = [Fraction(float(v)) for v in out]
    for i in range(x.size):
        assert sum(exact_out[i:]) <= max(sum(exact_in[i:]) - Fraction(amount), Fraction(0))


def test_gaussian_losses_take_jensens_pairs_below_and_others_round_down():
    """The lower measure is of second order where the bucket masses are of the loss itself (the Poisson-subsampled
    Gaussian: sigma 0.5, q 3e-4, two runs, 7.4e-4 wide with every loss rounded down, 1.7e-4 with Jensen's pairs on
    the same grid) and meets the two-run path's independent proof; a Laplace ledger keeps rounding down."""
    from dpledger.accountants.two_runs import TwoRunLedger

    ledger = privacy_buckets.BucketLedger([(PoissonSubsampled(GaussianMechanism(sigma=0.5), 3e-4), 2)])
    lower, upper = ledger.epsilon_bounds(1e-5)
    exact_lower, exact_upper = TwoRunLedger((2.0, 3e-4), (2.0, 3e-4)).epsilon_bounds(1e-5, 1e-8)
    assert lower <= exact_upper and exact_lower <= upper
    assert upper - lower <= 3e-4 * upper
    laplace = LaplaceMechanism(1.0)
    assert not laplace.loss_buckets(np.array([0.0, 0.5]), Direction.REMOVE).of_loss
    assert GaussianMechanism(sigma=1.0).loss_buckets(np.array([0.0, 0.5]), Direction.REMOVE).of_loss
