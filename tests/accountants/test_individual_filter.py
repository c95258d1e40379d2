"""IndividualRenyiFilter and its conversions: known values, mpmath oracles, properties, validation.

Known values: a single Gaussian mechanism with noise sigma and sensitivity 1 is one Gaussian charge
``B = 1/(2 sigma^2)`` (Ind-KNN Lemma 2.5), so the RDP filter's guarantee must equal the RDP accountant's
epsilon for GaussianMechanism(sigma) and the GDP filter's guarantee the analytic Gaussian mechanism's exact
epsilon (Balle & Wang 2018, Thm 8; the mpmath oracle in tests/oracles/analytic_gaussian.py).
"""

import mpmath as mp
import numpy as np
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st
from scipy import integrate
from scipy.special import ndtr

from dpledger.accountants import RDPAccountant
from dpledger.accountants import individual_conversions as ic
from dpledger.accountants.individual_filter import RTOL, IndividualRenyiFilter, budget_for
from dpledger.mechanisms import GaussianMechanism
from tests.oracles.analytic_gaussian import gaussian_delta_float, gaussian_epsilon_float

DELTAS = [1e-3, 1e-5, 1e-10]
budgets = st.floats(1e-6, 50.0)
deltas = st.sampled_from([1e-2, 1e-5, 1e-9])
epsilons = st.floats(0.05, 20.0)
accountings = st.sampled_from(["rdp", "gdp"])


# ----------------------------------------------------------------------------- known values and oracles
@pytest.mark.parametrize("sigma", [0.5, 1.0, 2.0, 7.5, 40.0])
@pytest.mark.parametrize("delta", DELTAS)
def test_single_gaussian_rdp_matches_the_rdp_accountant(sigma, delta):
    report = IndividualRenyiFilter(1.0 / (2.0 * sigma**2)).guarantee(delta)
    expected = RDPAccountant().compose(GaussianMechanism(sigma=sigma)).epsilon_report(delta)
    # same bound (the closed-form optimum can only be tighter than the accountant's grid search)
    assert report.epsilon <= expected.epsilon * (1 + 1e-9)
    np.testing.assert_allclose(report.epsilon, expected.epsilon, rtol=1e-6)
    np.testing.assert_allclose(report.order, expected.order, rtol=1e-2)
    assert report.bound == "upper bound" and "Feldman & Zrnic" in report.method


@pytest.mark.parametrize("sigma", [0.5, 1.0, 2.0, 7.5, 40.0])
@pytest.mark.parametrize("delta", DELTAS)
def test_single_gaussian_gdp_matches_the_analytic_gaussian(sigma, delta):
    report = IndividualRenyiFilter(1.0 / (2.0 * sigma**2), accounting="gdp").guarantee(delta)
    exact = gaussian_epsilon_float(delta, 1.0 / sigma)
    assert report.epsilon >= exact * (1 - 1e-12)  # never below the exact value
    np.testing.assert_allclose(report.epsilon, exact, rtol=1e-9)
    assert "Smith & Thakurta" in report.method and report.order is None


def _mp_rdp_epsilon(rho, delta):
    """Optimal improved conversion of alpha*rho at 40 digits: root of rho x^2 + log1p(x) + log(delta)."""
    with mp.workdps(40):
        rho, ld = mp.mpf(rho), mp.log(mp.mpf(delta))
        x = mp.findroot(lambda x: rho * x**2 + mp.log1p(x) + ld, mp.sqrt(-ld / rho))
        a = 1 + x
        return float(a * rho + mp.log(1 - 1 / a) - (ld + mp.log(a)) / (a - 1))


@settings(max_examples=30)
@given(rho=st.floats(1e-4, 100.0), delta=deltas)
def test_rdp_epsilon_is_the_optimum_over_real_orders(rho, delta):
    eps, order = ic.rdp_epsilon(rho, delta)
    exact = _mp_rdp_epsilon(rho, delta)
    np.testing.assert_allclose(eps, max(exact, 0.0), rtol=1e-10, atol=1e-13)
    if np.isnan(order):  # total-variation bound: epsilon = 0
        assert eps == 0.0 and delta >= np.sqrt(-np.expm1(-rho))
        return
    # the value reported is the conversion at the reported order (a valid bound at that order)
    at_order = order * rho + np.log1p(-1 / order) - (np.log(delta) + np.log(order)) / (order - 1)
    np.testing.assert_allclose(eps, max(at_order, 0.0), rtol=1e-12)


@settings(max_examples=30)
@given(mu=st.floats(0.01, 20.0), epsilon=st.floats(0.0, 30.0))
def test_gdp_log_delta_matches_mpmath_and_never_understates(mu, epsilon):
    exact = gaussian_delta_float(epsilon, mu)
    got = np.exp(ic.gdp_log_delta(mu, epsilon))
    if exact > 1e-300:
        assert got >= exact * (1 - 1e-12)
        np.testing.assert_allclose(got, exact, rtol=1e-6)


def test_zero_budget_and_tiny_budgets():
    assert ic.rdp_epsilon(0.0, 1e-5)[0] == 0.0 and ic.gdp_epsilon(0.0, 1e-5) == 0.0
    # total variation bound: delta >= sqrt(1 - exp(-rho)) gives epsilon = 0
    assert ic.rdp_epsilon(1e-12, 1e-5)[0] == 0.0
    assert ic.gdp_epsilon(1e-12, 1e-5) == 0.0


# ----------------------------------------------------------------------------------------- properties
@settings(max_examples=40)
@given(rho=budgets, delta=deltas)
def test_gdp_epsilon_never_exceeds_rdp_epsilon(rho, delta):
    assert ic.gdp_epsilon(rho, delta) <= ic.rdp_epsilon(rho, delta)[0] * (1 + 1e-12) + 1e-15


@settings(max_examples=25)
@given(epsilon=epsilons, delta=deltas, accounting=accountings)
@example(epsilon=1.0, delta=1e-5, accounting="rdp")
@example(epsilon=1.0, delta=1e-5, accounting="gdp")
def test_budget_for_round_trip_never_overshoots_and_is_tight(epsilon, delta, accounting):
    b = budget_for(epsilon, delta, accounting=accounting)
    assert IndividualRenyiFilter(b, accounting=accounting).guarantee(delta).epsilon <= epsilon
    bigger = IndividualRenyiFilter(b * (1 + 1e-8), accounting=accounting).guarantee(delta).epsilon
    assert bigger > epsilon


def test_gdp_budget_is_larger_than_rdp_budget():
    for epsilon in [0.5, 1.0, 2.0]:
        assert budget_for(epsilon, 1e-5, accounting="gdp") > budget_for(epsilon, 1e-5)


@settings(max_examples=20)
@given(
    spends=st.lists(st.floats(0.0, 1.0), min_size=2, max_size=30),
    delta=deltas,
    accounting=accountings,
)
def test_individual_epsilons_monotone_and_equal_to_guarantee_at_full_spend(spends, delta, accounting):
    budget = 1.0
    f = IndividualRenyiFilter(budget, len(spends) + 1, accounting=accounting)
    admitted = f.admit(np.arange(len(spends) + 1), np.array(spends + [budget]))
    assert admitted.all()
    eps = f.individual_epsilons(delta)
    order = np.argsort(f.spent, kind="stable")
    assert np.all(np.diff(eps[order]) >= -1e-12 * np.maximum(eps[order][1:], 1.0))
    np.testing.assert_allclose(eps[-1], f.guarantee(delta).epsilon, rtol=1e-9)
    assert np.all(eps <= f.guarantee(delta).epsilon)
    assert np.all(eps[f.spent == 0.0] == 0.0)


@settings(max_examples=15)
@given(count=st.integers(1, 200), accounting=accountings)
def test_guarantee_does_not_depend_on_the_number_of_charges(count, accounting):
    one = IndividualRenyiFilter(0.3, 5, accounting=accounting)
    one.admit([0], 0.3)
    many = IndividualRenyiFilter(0.3, 5, accounting=accounting)
    for _ in range(count):
        many.admit(np.arange(5), 0.3 / count)
    assert many.spent.max() <= 0.3 * (1 + RTOL)
    fresh = IndividualRenyiFilter(0.3, accounting=accounting)
    assert one.guarantee(1e-5) == many.guarantee(1e-5) == fresh.guarantee(1e-5)


def test_vectorised_conversions_agree_with_scalar_calls():
    rho = np.array([0.0, 1e-5, 0.01, 0.3, 2.0, 40.0])
    for fn in (lambda r: ic.rdp_epsilon(r, 1e-6)[0], lambda r: ic.gdp_epsilon(r, 1e-6)):
        vec = fn(rho)
        assert vec.shape == rho.shape and vec.dtype == np.float64
        np.testing.assert_array_equal(vec, [float(fn(r)) for r in rho])


# ------------------------------------------------------------------ the GDP filter theorem, numerically
def _adaptive_two_step_delta(epsilon, mu1, cut, high, low, direction):
    """Exact hockey-stick divergence of a two-step adaptive Gaussian interaction (unit noise).

    Step 1 releases y1 ~ N(mu1, 1) (with the record) vs N(0, 1) (without); step 2 releases y2 ~ N(m, 1) vs
    N(0, 1) with m = high if y1 > cut else low, chosen from the first output. ``direction`` "remove"
    integrates (P - e^eps Q)_+, "add" integrates (Q - e^eps P)_+. The inner integral over y2 is closed
    form; the outer one is Simpson's rule on each side of the cut (error far below the 1e-9 tolerance).
    """

    def piece(y1, m):
        p1, q1 = np.exp(-0.5 * (y1 - mu1) ** 2), np.exp(-0.5 * y1**2)  # common factor 1/sqrt(2 pi) below
        a, b = (p1, np.exp(epsilon) * q1) if direction == "remove" else (q1, np.exp(epsilon) * p1)
        if m == 0.0:
            return np.maximum(a - b, 0.0)
        log_ratio = np.log(b) - np.log(a)
        if direction == "remove":  # a phi(y - m) > b phi(y) for y > t
            t = (log_ratio + 0.5 * m * m) / m
            return a * ndtr(m - t) - b * ndtr(-t)
        s = (0.5 * m * m - log_ratio) / m  # a phi(y) > b phi(y - m) for y < s
        return a * ndtr(s) - b * ndtr(s - m)

    lo, hi = -14.0, 14.0 + mu1
    total = 0.0
    for left, right, m in ((lo, cut, low), (cut, hi, high)):
        y = np.linspace(left, right, 20001)
        total += integrate.simpson(piece(y, m), x=y)
    return total / np.sqrt(2.0 * np.pi)


@settings(max_examples=25)
@example(share=0.5, cut=0.0, low_fraction=0.0, epsilon=0.5)
@given(
    share=st.floats(0.05, 0.95),
    cut=st.floats(-2.0, 3.0),
    low_fraction=st.one_of(st.just(0.0), st.floats(0.05, 1.0)),
    epsilon=st.floats(0.0, 3.0),
)
def test_gdp_filter_theorem_on_adaptive_two_step_gaussians(share, cut, low_fraction, epsilon):
    """Smith & Thakurta 2022: adaptively chosen mu_2 with mu_1^2 + mu_2^2 <= mu^2 stays mu-GDP."""
    mu = 1.3
    mu1 = mu * np.sqrt(share)
    rest = np.sqrt(mu * mu - mu1 * mu1)
    bound = gaussian_delta_float(epsilon, mu)
    for direction in ("remove", "add"):
        assert _adaptive_two_step_delta(epsilon, mu1, cut, rest, low_fraction * rest, direction) <= bound + 1e-9


def test_two_step_check_detects_an_overspent_filter():
    """The numerical check above has power: spending more than mu^2 in one branch breaks the bound."""
    mu, mu1 = 1.3, 0.9
    rest = np.sqrt(mu * mu - mu1 * mu1)
    excess = max(
        _adaptive_two_step_delta(e, mu1, 0.5, 1.6 * rest, rest, "remove") - gaussian_delta_float(e, mu)
        for e in (0.0, 0.5, 1.0)
    )
    assert excess > 1e-3


# -------------------------------------------------------------------------------- filter behaviour
def test_charge_equal_to_remaining_is_admitted_and_retires():
    f = IndividualRenyiFilter(0.7, 3)
    assert f.admit([0, 1], [0.1, 0.7 / 3]).all()
    rem = f.remaining
    assert f.admit([0, 1], rem[[0, 1]]).all()
    assert f.retired[[0, 1]].all() and not f.retired[2]
    assert f.remaining[0] == 0.0 and f.spent.max() <= 0.7 * (1 + RTOL)
    assert not f.admit([0, 1], 0.0).any()  # retired records are never admitted, not even for free


def test_charge_just_above_remaining_is_refused_and_changes_nothing():
    f = IndividualRenyiFilter(1.0, 2)
    f.admit([0], 0.4)
    before = f.state_dict()
    admitted = f.admit([0, 1], [0.6 + 1e-9, 0.2])
    assert admitted.tolist() == [False, True]
    assert f.spent[0] == before["spent"][0] and f.spent[1] == 0.2 and not f.retired[0]


def test_scalar_amount_broadcasts_and_empty_charge():
    f = IndividualRenyiFilter(1.0, 4)
    assert f.admit(np.array([3, 1], dtype=np.int32), 0.25).all()
    assert f.spent.tolist() == [0.0, 0.25, 0.0, 0.25]
    assert f.admit([], []).shape == (0,) and f.admit(np.array([], dtype=int), 0.3).shape == (0,)
    assert f.admit(2, 0.5).tolist() == [True]  # a single integer index


def test_add_remove_retire():
    f = IndividualRenyiFilter(1.0, 2)
    new = f.add(3)
    assert new.tolist() == [2, 3, 4] and f.n_records == 5 and f.add(0).size == 0
    f.admit([0, 4], 0.5)
    f.remove([0])
    f.retire([1])
    assert f.active.tolist() == [False, False, True, True, True]
    assert f.spent[0] == 0.5  # removal keeps the audit trail
    assert f.remaining.tolist() == [0.0, 0.0, 1.0, 1.0, 0.5]
    assert f.admit([1, 2], 0.1).tolist() == [False, True]
    with pytest.raises(ValueError, match="must not be removed"):
        f.admit([0], 0.1)


def test_state_dict_round_trip_keeps_everything():
    f = IndividualRenyiFilter(0.8, 6, accounting="gdp")
    f.admit([0, 1, 2], [0.8, 0.3, 0.1])
    f.remove([3])
    f.retire([4])
    state = f.state_dict()
    g = IndividualRenyiFilter.from_state_dict(state)
    for name in ("spent", "retired", "removed", "active", "remaining"):
        np.testing.assert_array_equal(getattr(g, name), getattr(f, name))
    assert g.budget == f.budget and g.accounting == "gdp" and g.guarantee(1e-5) == f.guarantee(1e-5)
    state["spent"][1] = 0.0  # the state is a copy: mutating it does not touch either filter
    assert f.spent[1] == g.spent[1] == 0.3
    assert all(isinstance(v, (np.ndarray, str, int, float)) for v in state.values())


# -------------------------------------------------------------------------------------- validation
@pytest.mark.parametrize(
    "budget, n, accounting, exc, match",
    [
        (0.0, 1, "rdp", ValueError, "`budget` of IndividualRenyiFilter must be positive; got 0.0."),
        (float("nan"), 1, "rdp", ValueError, "`budget` of IndividualRenyiFilter must be a number"),
        (float("inf"), 1, "rdp", ValueError, "must be finite"),
        ("1", 1, "rdp", TypeError, "`budget` of IndividualRenyiFilter must be a real number"),
        (1.0, -1, "rdp", ValueError, "`n_records` of IndividualRenyiFilter must be non-negative"),
        (1.0, 2.0, "rdp", TypeError, "`n_records` of IndividualRenyiFilter must be an integer"),
        (1.0, 1, "pld", ValueError, "`accounting` of IndividualRenyiFilter must be one of"),
        (1.0, 1, None, TypeError, "`accounting` of IndividualRenyiFilter must be a string"),
    ],
)
def test_constructor_validation(budget, n, accounting, exc, match):
    with pytest.raises(exc, match=match):
        IndividualRenyiFilter(budget, n, accounting=accounting)


@pytest.mark.parametrize(
    "indices, amounts, exc, match",
    [
        ([0.0], 0.1, TypeError, "`indices` of IndividualRenyiFilter.admit must be integers"),
        ([True], 0.1, TypeError, "`indices` of IndividualRenyiFilter.admit must be integers"),
        ([5], 0.1, ValueError, r"must be in \[0, 5\); got 5"),
        ([-1], 0.1, ValueError, r"must be in \[0, 5\); got -1"),
        ([[0, 1]], 0.1, ValueError, "must be one-dimensional"),
        ([1, 2, 1], 0.1, ValueError, "must be distinct"),
        ([0, 1], [0.1, float("nan")], ValueError, "must be finite and non-negative; got nan"),
        ([0, 1], [0.1, float("inf")], ValueError, "must be finite and non-negative; got inf"),
        ([0, 1], [0.1, -1e-300], ValueError, "must be finite and non-negative"),
        ([0, 1], [0.1], ValueError, r"must be a scalar or have shape \(2,\)"),
        ([0, 1], True, TypeError, "`amounts` of IndividualRenyiFilter.admit must be real numbers"),
        ([0, 1], ["a", "b"], TypeError, "`amounts` of IndividualRenyiFilter.admit must be real numbers"),
    ],
)
def test_bad_charges_raise_and_change_nothing(indices, amounts, exc, match):
    f = IndividualRenyiFilter(1.0, 5)
    f.admit([0, 2], 0.3)
    before = f.state_dict()
    with pytest.raises(exc, match=match):
        f.admit(indices, amounts)
    after = f.state_dict()
    for key in ("spent", "retired", "removed"):
        np.testing.assert_array_equal(after[key], before[key])


def _state():
    f = IndividualRenyiFilter(1.0, 3)
    f.admit([0, 1], [1.0, 0.5])
    return f.state_dict()


@pytest.mark.parametrize(
    "mutate, exc, match",
    [
        (lambda s: s.__setitem__("spent", np.array([1.0, 1.5, 0.0])), ValueError, r"must be in \[0, budget"),
        (lambda s: s.__setitem__("spent", np.array([1.0, -0.1, 0.0])), ValueError, r"must be in \[0, budget"),
        (lambda s: s.__setitem__("spent", np.array([1.0, np.nan, 0.0])), ValueError, r"must be in \[0, budget"),
        (lambda s: s.__setitem__("spent", np.array([1.0, 0.5])), ValueError, "of one length"),
        (lambda s: s.__setitem__("retired", np.array([0, 0, 0])), TypeError, "must be booleans"),
        (lambda s: s.__setitem__("retired", np.array([False, False, False])), ValueError, "unretired"),
        (lambda s: s.__setitem__("version", 99), ValueError, "version"),
        (lambda s: s.__setitem__("rtol", 1e-6), ValueError, "`rtol`"),
        (lambda s: s.pop("spent"), ValueError, "must have keys"),
        (lambda s: s.__setitem__("budget", -1.0), ValueError, "must be positive"),
    ],
)
def test_from_state_dict_validates(mutate, exc, match):
    state = _state()
    mutate(state)
    with pytest.raises(exc, match=match):
        IndividualRenyiFilter.from_state_dict(state)


def test_getters_validate_delta_and_budget_for_validates():
    f = IndividualRenyiFilter(1.0, 2)
    for bad in (0.0, 1.0, float("nan")):
        with pytest.raises(ValueError, match="`delta` of IndividualRenyiFilter"):
            f.guarantee(bad)
        with pytest.raises(ValueError, match="`delta` of IndividualRenyiFilter"):
            f.individual_epsilons(bad)
    with pytest.raises(ValueError, match="`epsilon` of budget_for must be positive"):
        budget_for(0.0, 1e-5)
    with pytest.raises(ValueError, match="`accounting` of budget_for"):
        budget_for(1.0, 1e-5, accounting="zcdp")


# ----------------------------------------------------------------------------- the public admission step
def test_admit_is_the_admission_step_and_charge_its_deprecated_name():
    f, g = IndividualRenyiFilter(0.5, 4), IndividualRenyiFilter(0.5, 4)
    assert f.admit([3, 0, 1], [0.5, 0.2, 0.6]).tolist() == [True, True, False]
    with pytest.warns(DeprecationWarning, match="use IndividualRenyiFilter.admit"):
        assert g.charge([3, 0, 1], [0.5, 0.2, 0.6]).tolist() == [True, True, False]
    assert f.state_dict()["spent"].tolist() == g.state_dict()["spent"].tolist() == [0.2, 0.0, 0.0, 0.5]
    assert f.retired.tolist() == [False, False, False, True]  # the whole budget spent: retired by the filter


def test_admit_retires_a_record_charged_exactly_what_is_left():
    """The clipped last charge of DESIGN.md rule 3 (amount = remaining) retires the record in the filter itself."""
    rng = np.random.default_rng(3)
    for budget in rng.uniform(1e-6, 10.0, 200):
        f = IndividualRenyiFilter(budget, 1)
        f.admit([0], rng.uniform(0.0, budget))
        left = f.remaining_at([0])
        assert f.admit([0], left).tolist() == [True]
        assert f.retired.tolist() == [True] and f.remaining_at([0]).tolist() == [0.0]
        assert f.spent[0] <= budget * (1 + RTOL)


@pytest.mark.parametrize("method", ["spent_at", "remaining_at"])
def test_reads_by_index_validate_like_admit(method):
    f = IndividualRenyiFilter(1.0, 3)
    f.admit([1], 0.25)
    assert getattr(f, method)([1, 2]).tolist() == ([0.25, 0.0] if method == "spent_at" else [0.75, 1.0])
    with pytest.raises(ValueError, match=rf"`indices` of IndividualRenyiFilter.{method} must be in \[0, 3\)"):
        getattr(f, method)([3])
    with pytest.raises(TypeError, match="must be integers"):
        getattr(f, method)([0.5])


# ----------------------------------------------------------------------------- conversion objects
@pytest.mark.parametrize("spelling, cls", [("rdp", ic.RDPFilterConversion), ("GDP", ic.GDPFilterConversion)])
def test_public_spellings_map_to_conversion_objects(spelling, cls):
    conversion = ic.filter_conversion(spelling, "Demo")
    assert type(conversion) is cls and conversion == cls() and str(conversion) == spelling.lower()
    by_name = IndividualRenyiFilter(0.3, accounting=spelling)
    by_object = IndividualRenyiFilter(0.3, accounting=cls())
    assert by_name.conversion == by_object.conversion == conversion
    assert by_name.accounting == by_object.accounting == spelling.lower()
    assert by_name.guarantee(1e-5) == by_object.guarantee(1e-5)
    assert budget_for(1.0, 1e-5, accounting=spelling) == budget_for(1.0, 1e-5, accounting=cls())
    eps, order = conversion.epsilon(np.array([0.5]), 1e-5)
    expected = ic.rdp_epsilon(0.5, 1e-5) if cls is ic.RDPFilterConversion else (ic.gdp_epsilon(0.5, 1e-5), np.nan)
    np.testing.assert_array_equal(eps, [expected[0]])
    np.testing.assert_array_equal(order, [expected[1]])


def test_unknown_conversions_are_refused_with_their_type():
    for value, exc, match in [("pld", ValueError, r"must be one of \['rdp', 'gdp'\]; got 'pld'"),
                              (1, TypeError, "must be a string or a FilterConversion; got int"),
                              (None, TypeError, "got NoneType")]:
        with pytest.raises(exc, match=match):
            IndividualRenyiFilter(0.3, accounting=value)
        with pytest.raises(exc, match=match):
            budget_for(1.0, 1e-5, accounting=value)
    with pytest.raises(TypeError):
        ic.FilterConversion()  # abstract: a conversion is one of the theorems
