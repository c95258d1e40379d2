"""One run of a mechanism with an exact profile (the subsampled Gaussian): the Fourier accountant reports the
profile itself, with its rounding bounded, instead of inverting a characteristic function (issue 14 item 2: the
one-step cells of small sampling probability, whose characteristic functions barely decay)."""

import math

import mpmath as mp
from hypothesis import assume, example, given, settings
from hypothesis import strategies as st

from dpledger.accountants import FourierAccountant, fourier_accountant
from dpledger.accountants.report import BoundKind
from dpledger.mechanisms import GaussianMechanism, LaplaceMechanism, PoissonSubsampled, SampledWithoutReplacement
from dpledger.mechanisms.relations import Direction
from tests.oracles import privacy_profiles as pp

ORACLE = {Direction.REMOVE: "remove", Direction.ADD: "add"}


@settings(max_examples=40, deadline=None)
@given(st.floats(0.3, 30.0), st.floats(-7.0, 0.0).map(lambda e: 10.0**e), st.floats(-8.0, 1.3).map(lambda e: 10.0**e))
@example(1.0, 1.0, 0.5)  # no subsampling: the analytic Gaussian
@example(0.6, 1e-4, 1e-4)  # add direction just below its threshold -log(1 - q)
def test_one_run_bounds_contain_the_exact_profile(sigma, q, epsilon):
    m = PoissonSubsampled(GaussianMechanism(sigma=sigma), q)
    for direction in Direction:
        lower, upper = m.delta_bounds_one_run(epsilon, direction)
        exact = pp.subsampled_gaussian_delta_direction(epsilon, q, sigma, 1, ORACLE[direction], dps=40)
        tiny = mp.mpf(10) ** -35  # the oracle's precision
        assert mp.mpf(lower) <= exact + tiny and exact <= mp.mpf(upper) + tiny, (direction, lower, exact, upper)
        if upper > 1e-30:  # and tight (far in the tail, cancellation and log_ndtr's error allowance cost digits)
            assert upper - lower <= 1e-7 * upper


@settings(max_examples=15, deadline=None)
@given(st.floats(0.5, 20.0), st.floats(-6.0, 0.0).map(lambda e: 10.0**e), st.floats(-12.0, -2.0).map(lambda e: 10.0**e))
def test_one_run_epsilon_interval_straddles_delta(sigma, q, delta):
    fa = FourierAccountant().compose(PoissonSubsampled(GaussianMechanism(sigma=sigma), q))
    b = fa.epsilon_bounds(delta)
    assert fa.bound_kind is BoundKind.UPPER and b.lower <= b.upper and math.isfinite(b.upper)
    assert pp.subsampled_gaussian_profile(b.upper, q, sigma, 1) <= delta * (1 + 1e-12)
    if b.lower > 0:
        assert pp.subsampled_gaussian_profile(b.lower, q, sigma, 1) >= delta * (1 - 1e-12)


@settings(max_examples=60, deadline=None)
@given(st.floats(0.3, 30.0), st.sampled_from([0.0, 1.0, 1e-6, 1e-3, 0.3, 0.999]), st.floats(0.0, 20.0),
       st.sampled_from(["gaussian", "laplace", "batch"]))
@example(0.6, 1e-3, 1e-3 * (1 - 1e-12), "gaussian")  # add direction at its threshold -log(1 - q) ~ q
def test_each_end_of_one_run_alone_is_that_end_of_the_pair(scale, q, epsilon, base):
    """``delta_bound_one_run`` gives exactly the end of ``delta_bounds_one_run`` it is asked for (the one-run epsilon
    search takes each end alone), for every base that has an exact profile, sampled or not, in both directions."""
    if base == "batch":
        batch = max(int(q * 1000), 1) if q < 1 else 999
        m = SampledWithoutReplacement(GaussianMechanism(sigma=scale), batch_size=batch, dataset_size=1000)
    else:
        inner = GaussianMechanism(sigma=scale) if base == "gaussian" else LaplaceMechanism(scale=scale)
        m = PoissonSubsampled(inner, q)
    for direction in Direction:
        lower, upper = m.delta_bounds_one_run(epsilon, direction)
        assert m.delta_bound_one_run(epsilon, direction, upper=False) == lower
        assert m.delta_bound_one_run(epsilon, direction, upper=True) == upper
        assert 0.0 <= lower <= upper <= 1.0


def test_the_one_run_epsilon_search_asks_the_base_once_per_direction_and_point(monkeypatch):
    """Each point of the one-run epsilon search evaluates one end of the profile, so the base is asked at most once
    per direction there (asking for both ends took two calls a direction)."""
    calls = []
    profile = GaussianMechanism.delta_bounds_one_run

    def counted(self, epsilon, direction):
        calls.append(direction)
        return profile(self, epsilon, direction)

    monkeypatch.setattr(GaussianMechanism, "delta_bounds_one_run", counted)
    points = []
    crossing = fourier_accountant.bracket_crossing

    def traced(evaluate, delta, **kwargs):
        return crossing(lambda e: points.append(e) or evaluate(e), delta, **kwargs)

    monkeypatch.setattr(fourier_accountant, "bracket_crossing", traced)
    b = FourierAccountant().compose(PoissonSubsampled(GaussianMechanism(sigma=5.0), 1e-3)).epsilon_bounds(1e-5)
    assert b.lower <= b.upper and points
    # the remove direction asks at every point, the add direction where its profile is not 0 (below -log(1 - q))
    assert calls.count(Direction.REMOVE) == len(points) and calls.count(Direction.ADD) <= len(points)


def test_only_a_single_run_takes_the_exact_path():
    m = PoissonSubsampled(GaussianMechanism(sigma=2.0), 0.1)
    one = FourierAccountant().compose(m)
    assert "exact privacy profile of the single run" in one.epsilon_report(1e-5).method
    two = FourierAccountant().compose(m, count=2)
    assert "of the single run" not in two.epsilon_report(1e-5).method
    # the two paths agree where both apply: one run, by inversion through a Gaussian of negligible weight
    mixed = FourierAccountant().compose(m).compose(GaussianMechanism(sigma=1e6))
    assert abs(mixed.get_epsilon(1e-5) - one.get_epsilon(1e-5)) <= 1e-5 * one.get_epsilon(1e-5)


def _counted(f):
    calls = []

    def evaluate(x):
        calls.append(x)
        return f(x)

    return evaluate, calls


@settings(max_examples=60, deadline=None)
@given(st.floats(-9.0, 2.0).map(lambda e: 10.0**e), st.floats(-1.0, 4.0).map(lambda e: 10.0**e), st.integers(0, 8))
def test_bracket_crossing_brackets_a_quantised_curve_within_its_tolerance(root, rate, coarse):
    """``_bracket_crossing`` on ``delta(eps) = 1e-5 exp(-rate (eps - root))`` rounded to ``coarse`` bits of mantissa
    fewer than float64 (a profile evaluated with outward rounding is flat in steps near its crossing): the bracket
    holds ``f(lo) > delta >= f(hi)`` at evaluated points (``(0, 0)`` where ``f(0) <= delta``), is within ``1e-13
    hi``, and takes at most 60 evaluations."""
    from dpledger.accountants._roots import bracket_crossing as _bracket_crossing

    delta = 1e-5
    grain = 2.0**(-53 + coarse)

    def profile(eps):
        mantissa, exponent = math.frexp(delta * math.exp(-rate * (eps - root)))
        return math.ldexp(round(mantissa / grain) * grain, exponent)

    assume(rate * root <= 600.0)
    evaluate, calls = _counted(profile)
    lo, hi = _bracket_crossing(evaluate, delta)
    assert hi in calls and len(calls) <= 60, len(calls)
    if hi == 0.0:
        assert lo == 0.0 and profile(0.0) <= delta
        return
    assert lo in calls and profile(lo) > delta >= profile(hi)
    assert hi - lo <= 1e-13 * hi


def test_bracket_crossing_closes_at_an_evaluated_end_in_one_step():
    """One run of sigma 2, q 1e-4 at delta 1e-5: the secant lands on a point whose upper delta is exactly 1e-5, so
    every later secant proposes that point again. The search then tries just inside it, which closes the bracket:
    11 evaluations (23 when the search bisected up to that end; 15 instead of 27 for the whole epsilon interval)."""
    fa = FourierAccountant().compose(PoissonSubsampled(GaussianMechanism(sigma=2.0), 1e-4))
    core = fa._one_run()
    evaluate, calls = _counted(lambda e: fa._one_run_delta(core, e).upper)
    from dpledger.accountants._roots import bracket_crossing as _bracket_crossing

    lo, hi = _bracket_crossing(evaluate, 1e-5)
    assert fa._one_run_delta(core, lo).upper > 1e-5 >= fa._one_run_delta(core, hi).upper
    assert hi - lo <= 1e-13 * hi
    assert len(calls) <= 12, len(calls)


@settings(max_examples=60, deadline=None)
@given(st.floats(1e-3, 10.0), st.floats(0.0, 40.0), st.floats(0.0, 1.0))
def test_bracket_crossing_takes_no_end_from_a_nan(root, nan_from, nan_share):
    """A curve that returns NaN (none is known to) on part of its range: every end returned is an evaluated point
    whose value is not NaN and is on its side of delta (``lo`` may also be 0, and ``hi`` infinite where no finite
    point proved anything)."""
    from dpledger.accountants._roots import bracket_crossing as _bracket_crossing

    delta = 1e-5

    def profile(eps):
        if eps >= nan_from and (eps * 7.3) % 1.0 < nan_share:
            return math.nan
        return delta * math.exp(-(eps - root))

    evaluate, calls = _counted(profile)
    lo, hi = _bracket_crossing(evaluate, delta)
    if hi < math.inf and hi > 0.0:
        assert hi in calls and profile(hi) <= delta
    if lo > 0.0:
        assert lo in calls and profile(lo) > delta
