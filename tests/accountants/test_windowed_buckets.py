"""A few runs of Poisson-subsampled Gaussians on a window (accountants/windowed_buckets.py): the two measures' order
on random atoms (hypothesis), the count-2 mpmath oracle, the inversion's independent proven interval on three runs,
second order, routing, reports and the fallback."""

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dpledger.accountants import FourierAccountant
from dpledger.accountants import windowed_buckets as wb
from dpledger.accountants.privacy_buckets import _connect_the_dots, _jensen_pairs
from dpledger.accountants.report import BoundKind
from dpledger.accountants.two_runs import TwoRunLedger
from dpledger.mechanisms import GaussianMechanism, PoissonSubsampled
from dpledger.mechanisms.loss_buckets import LossBuckets
from tests.oracles.privacy_profiles import subsampled_gaussian_profile


def _ledger(sigma, q, count):
    acc = FourierAccountant()
    acc.compose(PoissonSubsampled(GaussianMechanism(sigma=sigma), q), count)
    return acc


def _inverted(sigma, q, count, monkeypatch):
    """The same ledger answered by the other paths (inversion, buckets): an independent proof."""
    acc = _ledger(sigma, q, count)
    monkeypatch.setattr(acc, "_few_runs", lambda: None)
    return acc


# ------------------------------------------------------------------ the two measures, on atoms known exactly
def _buckets_of_atoms(losses, masses, edges):
    """LossBuckets of a discrete law: each bucket's P-mass and Q-mass (sum of m e^-l), widened by 1e-12."""
    index = np.searchsorted(edges, losses, side="left")  # bucket i = (e_(i-1), e_i]
    p = np.bincount(index, weights=masses, minlength=edges.size + 1)
    r = np.bincount(index, weights=masses * np.exp(-losses), minlength=edges.size + 1)
    return LossBuckets(p * (1 + 1e-12), p * (1 - 1e-12), r * (1 + 1e-12), r * (1 - 1e-12), p * (1 - 1e-12))


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.floats(0.0005, 0.0395), st.floats(1e-3, 1.0)), min_size=1, max_size=40),
       st.floats(-0.01, 0.05), st.sampled_from([8, 9, 40]))
def test_the_lower_measure_is_below_and_the_upper_above_the_law_for_every_epsilon(atoms, epsilon, points):
    """Jensen's pairs (module docstring) lower and connect-the-dots raises ``E[(1 - e^(eps - L))_+]`` (every
    convex non-increasing function of ``e^-L`` of that family) on random discrete laws, odd and even bucket counts."""
    h = 0.04 / (points - 1)
    edges = np.arange(points, dtype=np.float64) * h
    losses = np.array([a for a, _ in atoms])
    losses = losses[(losses > edges[0]) & (losses <= edges[-1])]
    masses = np.array([m for a, m in atoms if edges[0] < a <= edges[-1]])
    b = _buckets_of_atoms(losses, masses, edges)
    low, up = _jensen_pairs(b, edges), _connect_the_dots(b, edges, h)

    def value(where, mass):
        return float(np.sum(mass * np.maximum(-np.expm1(epsilon - where), 0.0)))

    exact = value(losses, masses)
    assert value(edges, low) <= exact * (1 + 1e-9) + 1e-15
    assert value(edges, up) >= exact * (1 - 1e-9) - 1e-15
    assert float(np.sum(low)) <= float(np.sum(masses)) * (1 + 1e-9)  # no mass is made up below


def test_the_pairs_are_second_order_on_a_smooth_law():
    """A smooth law cut ever finer: the lower measure's error falls about sixteenfold per two halvings (the leftovers
    are of order h and move at most h; the pairs span two steps, so where the kink of ``(1 - e^(eps - l))_+`` falls
    among them makes single halvings uneven: 6.2x then 2.4x here), as the upper's does."""
    fine = np.linspace(0.0, 1.0, 200001)[1:]
    weights = np.exp(-8.0 * fine) * 1e-5
    exact = float(np.sum(weights * -np.expm1(0.3 - fine) * (fine > 0.3)))
    errors = {}
    for h in (2.0**-6, 2.0**-8, 2.0**-10):
        edges = np.arange(0.0, 1.0 + h / 2, h)
        b = _buckets_of_atoms(fine, weights, edges)
        f = np.maximum(-np.expm1(0.3 - edges), 0.0)
        errors[h] = (exact - float(np.sum(_jensen_pairs(b, edges) * f)),
                     float(np.sum(_connect_the_dots(b, edges, h) * f)) - exact)
    for coarse, finer in ((2.0**-6, 2.0**-8), (2.0**-8, 2.0**-10)):
        for side in (0, 1):
            assert errors[coarse][side] > 0.0 and 10.0 < errors[coarse][side] / errors[finer][side] < 25.0


@settings(max_examples=40, deadline=None)
@given(st.integers(65, 400), st.integers(65, 400), st.floats(0.0, 4000.0), st.integers(0, 2**32 - 1), st.booleans())
def test_each_convolved_entry_is_bounded_in_its_measures_direction(n_a, n_b, theta, seed, square):
    """Tilted FFT convolution: every entry of the upper result at or above the exact one and of the lower at or
    below, on vectors whose entries span 30 orders of magnitude (where the FFT's rounding, relative to the largest
    entries, swamps the small ones unless its bound is added); the reference is the direct sum of non-negative
    terms (within 1e-13 relative)."""
    rng = np.random.default_rng(seed)
    h = 2.0**-14
    a = rng.random(n_a) * 10.0 ** -rng.uniform(0.0, 30.0, n_a)
    b = a if square else rng.random(n_b) * 10.0 ** -rng.uniform(0.0, 30.0, n_b)  # a square takes one transform
    theta = min(theta, wb.MAX_TILT / ((n_a + b.size) * h))
    exact = np.convolve(a, b)
    up, low = wb._convolve(a, b, h, theta, True), wb._convolve(a, b, h, theta, False)
    assert np.all(up >= exact * (1 - 1e-13)) and np.all(low <= exact * (1 + 1e-13)) and np.all(low >= 0.0)


def _random_part(rng, size, start, lump_above):
    values = rng.random(size) * 10.0 ** -rng.uniform(0.0, 12.0, size)
    values *= rng.uniform(0.1, 0.9) / float(np.sum(values))  # a sub-probability (the upper delta is capped at 1)
    mass = float(rng.random()) * 1e-3
    return wb._Part(start, values, mass, mass * math.exp(-lump_above) * float(rng.random()), 0)


def _exact_delta(x, y, epsilon, h):
    """``sum_k c_k (1 - e^(eps - l_k))_+ + (M_x + V_x M_y) - e^eps (S_x + Vm_x S_y)`` in extended precision: the
    product's value for a ``phi`` affine above the window (every lump lies above epsilon)."""
    ld = np.longdouble
    c = np.convolve(x.values.astype(ld), y.values.astype(ld))
    losses = (x.start + y.start + np.arange(c.size)).astype(ld) * ld(h)
    value = np.sum(c * np.maximum(-np.expm1(ld(epsilon) - losses), ld(0)))
    weights_x = np.exp(-(x.start + np.arange(x.values.size)).astype(ld) * ld(h))
    mass = ld(x.lump_mass) + np.sum(x.values.astype(ld)) * ld(y.lump_mass)
    moment = ld(x.lump_moment) + np.sum(x.values.astype(ld) * weights_x) * ld(y.lump_moment)
    return value + mass - np.exp(ld(epsilon)) * moment


@settings(max_examples=60, deadline=None)
@given(st.integers(1, 300), st.integers(1, 300), st.integers(-20, 60), st.integers(0, 40), st.integers(0, 2**32 - 1))
def test_the_last_product_brackets_the_exact_composition(n_x, n_y, bottom, width, seed):
    """The last product (its window's entries computed directly, the atoms above the window lumped through tail
    sums) and the ordinary product (FFT, then cut) on random parts: the upper measure's delta at or above the
    exact value (extended precision), the lower's at or below, both within 1e-9 of it, at every epsilon of the
    window."""
    rng = np.random.default_rng(seed)
    h = 2.0**-10
    eps_lo, eps_hi = bottom * h + 0.3 * h, (bottom + width) * h + 0.7 * h
    lump_above = math.ceil(eps_hi / h) * h
    x = _random_part(rng, n_x, -int(rng.integers(0, 40)), lump_above)
    y = _random_part(rng, n_y, -int(rng.integers(0, 40)), lump_above)
    epsilons = np.linspace(eps_lo, eps_hi, 7)
    exact = [_exact_delta(x, y, e, h) for e in epsilons]
    for direct in (True, False):
        for upper in (True, False):
            grid = wb._Grid(True, eps_lo, eps_hi, h, 0.0, upper, 0)
            if direct:
                composed = grid.final(x, y)
            else:
                part = grid.product(x, y)
                composed = wb._Composed(part.start, part.values, part.lump_mass, part.lump_moment, h, upper)
            for e, value in zip(epsilons, exact):
                got = composed.delta(float(e))
                assert (got >= value) if upper else (got <= value)
                assert abs(got - float(value)) <= 1e-9 * float(value) + 1e-300


def test_the_add_direction_brackets_the_oracle_where_it_matters():
    """At epsilon below the sum of the runs' reaches the add direction's delta is not 0: its window (atoms whose
    loss cannot reach epsilon dropped) brackets the count-2 oracle's add direction."""
    from tests.oracles.privacy_profiles import subsampled_gaussian_delta_direction

    ledger = wb.WindowedLedger([(1.0, 0.01, 2)])
    epsilon = 0.004  # the reach is 2 x 0.01005
    exact = subsampled_gaussian_delta_direction(epsilon, 0.01, 1.0, 2, "add")
    h = 2.0**-18
    buckets = ledger._buckets(False, epsilon, epsilon, h)
    lower = ledger._compose(False, epsilon, epsilon, h, 0.0, False, buckets).delta(epsilon)
    upper = ledger._compose(False, epsilon, epsilon, h, 0.0, True, buckets).delta(epsilon)
    assert lower <= exact <= upper and upper - lower <= 1e-6 * upper


# ------------------------------------------------------------------ against the mpmath oracle and inversion
def test_two_runs_bracket_the_count_2_oracle():
    """Two runs (the window's lumps and drops, the convolution and both measures): epsilon within rtol, its ends on
    either side of the oracle's crossing; delta at epsilon 0 and at the answer meets the two-run path's proven
    interval (the second run exact, accountants.two_runs)."""
    ledger = wb.WindowedLedger([(1 / 0.6, 1e-4, 2)])
    lower, upper = ledger.epsilon_bounds(1e-5, 1e-6)
    assert upper - lower <= 1e-6 * upper
    assert subsampled_gaussian_profile(upper, 1e-4, 0.6, 2) <= 1e-5 < subsampled_gaussian_profile(lower, 1e-4, 0.6, 2)
    exact_second = TwoRunLedger((1 / 0.6, 1e-4), (1 / 0.6, 1e-4))
    for epsilon, width in ((0.0, 2e-6), (upper, 1e-6)):  # at 0 the masses' enclosures floor it at 1.03e-6
        d_lo, d_hi = ledger.delta_bounds(epsilon, 1e-6)
        o_lo, o_hi = exact_second.delta_bounds(epsilon, 1e-8)
        assert max(d_lo, o_lo) <= min(d_hi, o_hi) and d_hi - d_lo <= width * d_hi


@pytest.mark.parametrize("sigma, q", [(1.0, 1e-3), (0.6, 1e-3)])
def test_three_runs_agree_with_the_inversions_proven_interval(sigma, q, monkeypatch):
    """Three runs: the inversion's interval (1e-8 wide at sigma 1, q 1e-3) and the window's are two independent
    proofs of the same epsilon, so they must meet; the window's is within rtol. Sigma 0.6, q 1e-3 also makes the
    window grow (epsilon 0.186 against a first window of 0.048)."""
    got = wb.WindowedLedger([(1 / sigma, q, 3)]).epsilon_bounds(1e-5, 1e-6)
    other = _inverted(sigma, q, 3, monkeypatch).epsilon_bounds(1e-5)
    assert got[1] - got[0] <= 1e-6 * got[1]
    assert max(got[0], other.lower) <= min(got[1], other.upper)


@pytest.mark.parametrize("runs", [
    [(1 / 0.6, 1e-4, 10)],  # 8 x 2: three squarings and the last product
    [(1 / 0.6, 1e-4, 4)],  # 2 x 2: one squaring, the last one the last product
    [(1.0, 1e-3, 4), (1.0, 1e-3, 3)],  # one group of 7: 4 x 2 x 1
    [(1 / 0.6, 1e-4, 2), (1.0, 1e-3, 3), (1 / 0.6, 1e-4, 1)],  # three groups, one of them a power
])
def test_powers_and_products_of_groups_agree_with_the_inversion(runs, monkeypatch):
    """Groups raised to their counts by repeated squaring and multiplied in turn (module docstring, "Products"):
    within rtol, and meeting the inversion's independent proven interval."""
    got = wb.WindowedLedger(runs).epsilon_bounds(1e-5, 1e-6)
    acc = FourierAccountant()
    for mu, q, count in runs:
        acc.compose(PoissonSubsampled(GaussianMechanism(sigma=1 / mu), q), count)
    monkeypatch.setattr(acc, "_few_runs", lambda: None)
    other = acc.epsilon_bounds(1e-5)
    assert got[1] - got[0] <= 1e-6 * got[1]
    assert max(got[0], other.lower) <= min(got[1], other.upper)


def test_every_count_composes_each_run_once():
    """Epsilon grows strictly with the count (a factorisation that dropped or repeated a run would not: a first
    version of the power-of-two path composed three runs for four), and for 4, 7 and 8 runs one group and two groups
    of a mechanism a hair apart (other factorisations: no power-of-two path, other squarings) give intervals that
    meet."""
    mu, q = 1 / 0.6, 1e-4
    epsilons = [wb.WindowedLedger([(mu, q, n)]).epsilon_bounds(1e-5, 1e-6) for n in range(1, wb.MAX_RUNS + 1)]
    assert all(a[1] < b[0] for a, b in zip(epsilons, epsilons[1:]))
    for n in (4, 7, 8):
        split = wb.WindowedLedger([(mu, q, n - 1), (mu * (1 + 1e-12), q, 1)]).epsilon_bounds(1e-5, 1e-6)
        assert max(split[0], epsilons[n - 1][0]) <= min(split[1], epsilons[n - 1][1])


def test_the_delta_query_agrees_with_the_inversion(monkeypatch):
    d_lo, d_hi = wb.WindowedLedger([(1.0, 1e-3, 3)]).delta_bounds(0.0147, 1e-6)
    other = _inverted(1.0, 1e-3, 3, monkeypatch).delta_bounds(0.0147)
    assert d_hi - d_lo <= 1e-6 * d_hi
    assert max(d_lo, other.lower) <= min(d_hi, other.upper)


def test_runs_of_different_mechanisms_in_either_order_agree():
    first = wb.WindowedLedger([(1 / 0.6, 1e-4, 2), (1.0, 1e-3, 1)]).epsilon_bounds(1e-5, 1e-6)
    second = wb.WindowedLedger([(1.0, 1e-3, 1), (1 / 0.6, 1e-4, 2)]).epsilon_bounds(1e-5, 1e-6)
    assert max(first[0], second[0]) <= min(first[1], second[1])
    assert first[1] - first[0] <= 1e-6 * first[1]


def test_two_halvings_of_the_step_take_the_gap_to_a_sixteenth():
    """Second order end to end: the delta interval of one grid at a quarter of the step is about a sixteenth as
    wide, once the grid resolves the loss's lump (q 1e-4: four buckets at 2^-15, where the gap fell 490-fold to
    2^-17; 16-fold from 2^-17 to 2^-19, then the bucket masses' enclosures take over: 4-fold to 2^-21)."""
    ledger = wb.WindowedLedger([(1 / 0.6, 1e-4, 3)])
    gaps = []
    for h in (2.0**-17, 2.0**-19):
        lower, upper, _ = ledger._pass(0.0043, 0.0043, h, 0.0)
        gaps.append(upper(0.0043) - lower(0.0043))
    assert 10.0 < gaps[0] / gaps[1] < 25.0


# ------------------------------------------------------------------ the accountant
@pytest.mark.parametrize("sigma, q, count", [(0.6, 1e-4, 3), (0.6, 1e-4, 6), (0.6, 1e-3, 4), (0.6, 1e-4, 10),
                                             (0.6, 1e-3, 10), (0.6, 1e-4, 50)])
def test_the_few_run_corner_is_answered_on_the_window_within_rtol(sigma, q, count):
    """Three to fifty runs of sigma 0.6 (inversion took 4.3 s at q 1e-4 x 3 for an interval 3e-4 wide)."""
    acc = _ledger(sigma, q, count)
    assert isinstance(acc._few_runs(), wb.WindowedLedger)
    report = acc.epsilon_report(1e-5)
    b = acc.epsilon_bounds(1e-5)
    assert b.upper - b.lower <= 1e-6 * b.upper
    assert report.bound is BoundKind.UPPER and report.epsilon == b.upper
    assert "privacy buckets on a window around epsilon" in report.method and "interval" in report.method
    assert acc._derived.get("path") is None  # neither the inversion nor the whole-range buckets were run


def test_the_routing_follows_the_measured_cells():
    """Windowed where it was measured faster than inversion (accountants.windowed_buckets.faster_than_inversion),
    inversion where that was faster, or where the bucket masses' floor keeps the window wider than rtol."""
    faster_windowed = [(0.6, 1e-4, 3), (0.6, 1e-4, 10), (0.6, 1e-4, 50), (0.6, 3e-4, 50), (0.6, 1e-3, 10),
                       (0.6, 1e-3, 30), (1.0, 1e-3, 10), (0.6, 0.01, 10), (0.7, 1e-4, 10)]
    faster_inverted = [(0.6, 1e-4, 100), (0.6, 1e-3, 50), (1.0, 1e-3, 20), (0.6, 0.01, 20), (2.0, 1e-3, 3)]
    floored = [(1.0, 1e-4, 10)]
    assert all(wb.faster_than_inversion([(1 / s, q, n)], 1e-6) for s, q, n in faster_windowed)
    assert not any(wb.faster_than_inversion([(1 / s, q, n)], 1e-6) for s, q, n in faster_inverted + floored)
    assert wb.faster_than_inversion([(1.0, 1e-4, 10)], 1e-4)  # a looser rtol clears the floor
    assert wb.faster_than_inversion([(1 / 0.6, 1e-4, 2)], 1e-6)  # two runs: the window where it is faster
    assert not wb.faster_than_inversion([(1 / 0.5, 1e-5, 2)], 1e-6)  # too narrow for it: the two-run path
    assert _ledger(0.6, 1e-3, 50)._few_runs() is None
    assert isinstance(_ledger(0.6, 1e-3, 10)._few_runs(), wb.WindowedLedger)
    assert _ledger(2.0, 1e-3, 3)._few_runs() is None  # wide: inverted


def test_the_floored_cell_left_to_inversion_is_floored_on_the_window():
    """The reason for MIN_SPREAD: sigma 1, q 1e-4 x 10 stays wider than rtol on the window, and is inverted."""
    lower, upper = wb.WindowedLedger([(1.0, 1e-4, 10)]).epsilon_bounds(1e-5, 1e-6)
    assert upper - lower > 1e-6 * upper
    assert _ledger(1.0, 1e-4, 10)._few_runs() is None


def test_a_windowed_interval_wider_than_rtol_is_intersected_with_the_other_paths(monkeypatch):
    acc, reference = _ledger(1.0, 1e-3, 3), _inverted(1.0, 1e-3, 3, monkeypatch)
    monkeypatch.setattr(wb.WindowedLedger, "epsilon_bounds", lambda self, delta, rtol: (1e-3, 10.0))
    got, other = acc.epsilon_bounds(1e-5), reference.epsilon_bounds(1e-5)
    assert got.lower == max(1e-3, other.lower) and got.upper == other.upper < 10.0
    assert isinstance(acc._few_runs(), wb.WindowedLedger)  # kept for the next query
    assert "intersected with the proven interval of the other paths" in acc._method()


def test_a_nan_curve_proves_no_end(monkeypatch):
    """A delta curve that returned NaN (none is known to) must not become an end: the window grows past its largest
    and the upper end stays infinite; the bisection stops where it was."""
    original = wb._Composed.delta
    monkeypatch.setattr(wb._Composed, "delta", lambda self, e: math.nan if self.upper else original(self, e))
    lower, upper = wb.WindowedLedger([(1 / 0.6, 1e-4, 3)]).epsilon_bounds(1e-5, 1e-6)
    assert upper == math.inf and lower < 0.0043083833
    assert wb._crossing(lambda e: math.nan if e > 0.0 else 1.0, 0.1, 0.0, 1.0, 1e-9) == (0.0, 1.0)


def test_sampling_probabilities_near_one_do_not_overflow_the_first_window():
    """16 sum a passed 709 (twelve runs of q 0.9752): the first window is capped at MAX_EPSILON (found by a
    red-team helper; the answer meets the inversion's 8.19201008 just below that threshold)."""
    lower, upper = wb.WindowedLedger([(0.5, 0.9752, 12)]).epsilon_bounds(1e-5, 1e-6)
    assert 0.0 < lower <= upper < math.inf
    lower, upper = wb.WindowedLedger([(0.5, 0.975, 12)]).epsilon_bounds(1e-5, 1e-6)
    assert lower <= 8.19201008 <= upper


def test_huge_epsilons_leave_the_window_to_the_other_paths():
    """Beyond MAX_EPSILON the window would need exp(eps) past the float64 range: the trivial interval, which the
    accountant intersects with the other paths' (a tiny delta, no error)."""
    assert wb.WindowedLedger([(1 / 0.6, 1e-4, 3)]).delta_bounds(1000.0, 1e-6) == (0.0, 1.0)
    acc = _ledger(0.6, 1e-4, 3)
    d = acc.delta_bounds(1000.0)
    assert d.lower == 0.0 and d.upper < 1e-300 and "far beyond the corner" in acc._method()


@pytest.mark.parametrize("runs", [[(1.0, 0.0, 3)], [(1.0, 1.0, 3)], [(1.0, 0.1, 0)], [(0.0, 0.1, 3)],
                                  [(math.inf, 0.1, 3)], [(1.0, 0.1, wb.MAX_RUNS + 1)], []])
def test_bad_runs_are_refused(runs):
    with pytest.raises(ValueError):
        wb.WindowedLedger(runs)


@pytest.mark.parametrize("delta", [0.0, -0.1, 1.0, math.nan])
def test_bad_deltas_and_epsilons_are_refused(delta):
    ledger = wb.WindowedLedger([(1.0, 0.01, 3)])
    with pytest.raises(ValueError, match="delta"):
        ledger.epsilon_bounds(delta, 1e-6)
    with pytest.raises(ValueError, match="epsilon"):
        ledger.delta_bounds(-abs(delta) - 1.0 if not math.isnan(delta) else delta, 1e-6)


@settings(max_examples=80, deadline=None)
@given(st.lists(st.floats(0.0, 1.0), min_size=1, max_size=40), st.floats(1e-3, 1.0), st.floats(-14.0, -2.0),
       st.floats(0.0, 1.0), st.booleans())
def test_crossing_keeps_evaluated_ends_on_their_sides(spots, scale, log_delta, share, above_at_hi):
    """The crossing search on a grid measure's delta curve, ``sum_k m_k (1 - e^(eps - l_k))_+`` (kinks at every
    atom, flat beyond the last): each end returned was evaluated and lies on its side of delta, within the
    tolerance, in at most three evaluations per halving of the bracket (a bisection follows two slow secant steps;
    on the smooth curves of real ledgers it takes about a third of bisection's: sigma 0.6, q 1e-4 x 10, 64 delta
    evaluations a query instead of 203); where the curve is above delta at ``hi`` (a window carried over from a
    coarser grid), ``hi`` stays and only ``a`` moves."""
    losses = np.sort(np.array(spots)) * scale
    masses = np.full(losses.size, 1.0 / losses.size)
    delta = 10.0**log_delta

    def curve(eps):
        calls.append(eps)
        return float(np.sum(masses * np.maximum(-np.expm1(eps - losses), 0.0)))

    calls = []
    hi = float(losses[-1]) * (share if above_at_hi else 1.0)
    if curve(0.0) <= delta or hi <= 0.0:
        return
    calls.clear()
    lo, up = wb._crossing(curve, delta, 0.0, hi, 1e-9)
    searched = len(calls)
    assert 0.0 <= lo <= up <= hi
    if up < hi:
        assert up in calls and curve(up) <= delta
    if curve(hi) <= delta:
        assert up - lo <= 1e-9 * up or np.nextafter(lo, np.inf) >= up
    if lo > 0.0:
        assert lo in calls and curve(lo) > delta
    assert searched <= 3 * (math.log2(1e9) + 2), searched  # bisection from [0, hi] to 1e-9 takes 30


@pytest.mark.parametrize("sigma, q", [(0.6, 1e-4), (1.0, 1e-3)])
def test_two_narrow_runs_take_the_window_and_agree_with_the_exact_second_run(sigma, q, monkeypatch):
    """Two runs where the window is faster (benchmarks/RESULTS.md, "Fourier: few runs": 0.007 s at sigma 0.6, q 1e-4,
    where the two-run path took 0.06 s): the accountant answers on it,
    within rtol, its ends straddling the count-2 oracle and meeting the two-run path's interval; a loss too narrow
    for the window (sigma 0.5, q 1e-5) keeps the two-run path."""
    acc = _ledger(sigma, q, 2)
    assert isinstance(acc._few_runs(), wb.WindowedLedger)
    b = acc.epsilon_bounds(1e-5)
    assert b.upper - b.lower <= 1e-6 * b.upper and "privacy buckets on a window" in acc._method()
    assert subsampled_gaussian_profile(b.upper, q, sigma, 2) <= 1e-5 < subsampled_gaussian_profile(b.lower, q, sigma, 2)
    lower, upper = TwoRunLedger((1 / sigma, q), (1 / sigma, q)).epsilon_bounds(1e-5, 1e-6)
    assert max(lower, b.lower) <= min(upper, b.upper)
    assert isinstance(_ledger(0.5, 1e-5, 2)._few_runs(), TwoRunLedger)
