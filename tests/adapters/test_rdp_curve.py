"""from_rdp_curve and from_autodp: sound interpolation, same numbers as the direct API, clear errors."""

import numpy as np
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from dpledger.accountants import RDPAccountant
from dpledger.accountants.adapters import MissingPeerError, RDPCurveMechanism, from_autodp, from_rdp_curve
from dpledger.mechanisms import GaussianMechanism, LaplaceMechanism, PoissonSubsampled, RandomizedResponse

GRID = np.array([1.25, 1.5, 1.75, 2.0, 2.5, 3.0, 4.0, 5.0, 6.0, 8.0, 10.0, 12.0, 16.0, 20.0, 24.0, 32.0, 48.0, 64.0])

exact_mechanisms = st.one_of(
    st.floats(0.3, 20.0).map(lambda s: GaussianMechanism(sigma=s)),
    st.floats(0.2, 20.0).map(lambda b: LaplaceMechanism(scale=b)),
    st.floats(0.5, 0.99).map(lambda p: RandomizedResponse(p=p)),
)


# ------------------------------------------------------------------------------------------ known values
def test_chord_and_monotone_bounds_by_hand():
    # points (1, 0), (2, 0.25 * 1), (4, 0.5 * 3): at 3 the chord of (a - 1) eps(a) gives (0.25 + 1.5) / 2 / 2.
    m = from_rdp_curve([4.0, 2.0], [0.5, 0.25])  # unsorted input is sorted
    assert m.orders == (2.0, 4.0)
    values = m.rdp([1.01, 1.5, 2.0, 3.0, 4.0, 4.5, np.inf])
    # below the smallest order the chord from (1, 0) is the constant 0.25 (monotonicity gives the same)
    np.testing.assert_allclose(values[:2], [0.25, 0.25], rtol=2e-12)
    assert values[2] == 0.25 and values[4] == 0.5  # given values returned unchanged
    assert values[3] == pytest.approx(0.4375, rel=1e-11) and values[3] >= 0.4375
    assert np.isinf(values[5]) and np.isinf(values[6])  # nothing is known above the largest order


def test_non_convex_input_is_tightened_by_the_envelope_and_monotonicity():
    # a loose value at order 3 (1.0) above the chord of its neighbours: the envelope uses the neighbours.
    m = from_rdp_curve([2.0, 3.0, 4.0], [0.25, 1.0, 0.5])
    assert float(m.rdp(3.0)) == pytest.approx(0.4375, rel=1e-11)
    # a non-monotone input: eps(2) <= eps(3) <= 0.1 although 0.3 was given at order 2
    m = from_rdp_curve([2.0, 3.0], [0.3, 0.1])
    assert float(m.rdp(2.0)) <= 0.1 + 1e-12


def test_order_inf_caps_every_order_and_extends_the_range():
    m = from_rdp_curve([2.0, np.inf], [0.5, 0.4])
    np.testing.assert_array_equal(m.rdp([2.0, 10.0, np.inf]), [0.4, 0.4, 0.4])


def test_infinite_values_are_allowed_and_bridged_by_larger_orders():
    m = from_rdp_curve([2.0, 3.0, 4.0], [np.inf, np.inf, 0.3])
    assert float(m.rdp(2.0)) <= 0.3 and np.isfinite(float(m.rdp(3.0)))


# ------------------------------------------------------------------------------------------ properties
@settings(max_examples=40)
@given(exact_mechanisms, st.floats(1.001, 64.0))
@example(GaussianMechanism(sigma=1.0), 1.001)
@example(LaplaceMechanism(scale=0.2), 63.999)
def test_interpolated_curve_never_undercuts_the_exact_curve(mechanism, order):
    curve = from_rdp_curve(GRID, mechanism.rdp(GRID))
    assert float(curve.rdp(order)) >= float(mechanism.rdp(order))


@settings(max_examples=25)
@given(exact_mechanisms)
def test_given_orders_are_reproduced_and_the_curve_is_non_decreasing(mechanism):
    values = mechanism.rdp(GRID)
    curve = from_rdp_curve(GRID, values)
    np.testing.assert_array_equal(curve.rdp(GRID), values)
    dense = curve.rdp(np.linspace(1.01, 64.0, 400))
    assert (np.diff(dense) >= -1e-12 * dense[1:]).all()


@settings(max_examples=15)
@given(st.floats(0.6, 5.0), st.floats(1e-3, 0.2), st.integers(1, 5000))
def test_accountant_on_a_curve_is_an_upper_bound_close_to_the_direct_api(sigma, q, count):
    mechanism = PoissonSubsampled(GaussianMechanism(sigma=sigma), sampling_probability=q)
    dense = np.unique(np.concatenate(([1.02, 1.05, 1.1, 1.15, 1.2], np.arange(1.25, 8.0, 0.25), np.arange(8.0, 257.0))))
    curve = from_rdp_curve(dense, mechanism.rdp(dense))
    direct = RDPAccountant().compose(mechanism, count=count).get_epsilon(1e-5)
    via_curve = RDPAccountant().compose(curve, count=count).get_epsilon(1e-5)
    assert direct <= via_curve * (1 + 1e-9) + 1e-12  # never tighter than the true curve allows (up to search)
    # only the order grid is lost: chords between grid orders cost a few percent at most
    assert via_curve <= direct * 1.05 + 1e-6


def test_curve_on_the_accountants_grid_gives_the_same_epsilon_as_the_direct_api():
    # Gaussian: (a - 1) eps(a) is a parabola, the envelope between grid orders is a chord above it.
    g = GaussianMechanism(sigma=3.0)
    acc = RDPAccountant()
    curve = from_rdp_curve(acc.orders, g.rdp(acc.orders))
    direct = RDPAccountant().compose(g, count=10).get_epsilon(1e-6)
    via_curve = RDPAccountant().compose(curve, count=10).get_epsilon(1e-6)
    # the curve is exact on the grid, a chord between grid orders: the optimum over grid orders (about 0.2%
    # above the optimum over real orders for this curvature) is all it can reach
    assert direct <= via_curve <= direct * 1.005


def test_mechanisms_are_values():
    a = from_rdp_curve([2.0, 3.0], [0.1, 0.2])
    b = from_rdp_curve(np.array([3.0, 2.0]), np.array([0.2, 0.1]))
    assert a == b and hash(a) == hash(b)
    assert RDPAccountant().compose(a).compose(b).ledger == ((a, 2),)


# ------------------------------------------------------------------------------------------ validation
@pytest.mark.parametrize(
    "orders,rdp,error,match",
    [
        ([2.0, 3.0], [0.1], ValueError, "one value per order"),
        ([2.0, 2.0], [0.1, 0.2], ValueError, "distinct"),
        ([1.0, 2.0], [0.1, 0.2], ValueError, r"`orders` of from_rdp_curve must be > 1"),
        ([2.0, 3.0], [0.1, np.nan], ValueError, "must be numbers; got nan"),
        ([2.0, 3.0], [0.1, -0.2], ValueError, "non-negative"),
        ([], [], ValueError, "must not be empty"),
        ("abc", [0.1], TypeError, "real numbers"),
    ],
)
def test_invalid_curves_are_refused(orders, rdp, error, match):
    with pytest.raises(error, match=match):
        from_rdp_curve(orders, rdp)


def test_direct_construction_requires_sorted_orders():
    with pytest.raises(ValueError, match="sorted increasingly"):
        RDPCurveMechanism((3.0, 2.0), (0.1, 0.2))


# ------------------------------------------------------------------------------------------ autodp
def test_autodp_gaussian_gives_the_same_numbers_as_the_direct_api():
    zoo = pytest.importorskip("autodp.mechanism_zoo")
    wrapped = from_autodp(zoo.ExactGaussianMechanism(sigma=2.0))
    direct = GaussianMechanism(sigma=2.0)
    orders = np.array([1.5, 2.0, 7.25, 64.0])
    np.testing.assert_allclose(wrapped.rdp(orders), direct.rdp(orders), rtol=1e-14)
    assert np.isinf(float(wrapped.rdp(np.inf)))
    eps_wrapped = RDPAccountant().compose(wrapped, count=50).get_epsilon(1e-5)
    eps_direct = RDPAccountant().compose(direct, count=50).get_epsilon(1e-5)
    assert eps_wrapped == pytest.approx(eps_direct, rel=1e-12)


def test_autodp_sampled_on_a_grid_is_an_upper_bound():
    zoo = pytest.importorskip("autodp.mechanism_zoo")
    sampled = from_autodp(zoo.LaplaceMechanism(b=1.5), orders=GRID)
    assert isinstance(sampled, RDPCurveMechanism)
    direct = LaplaceMechanism(scale=1.5)
    np.testing.assert_allclose(sampled.rdp(GRID), direct.rdp(GRID), rtol=1e-9)
    between = np.array([1.3, 2.2, 7.0, 40.0])
    assert (sampled.rdp(between) >= direct.rdp(between) * (1 - 1e-9)).all()


def test_autodp_one_sided_or_replace_one_mechanisms_are_refused():
    zoo = pytest.importorskip("autodp.mechanism_zoo")
    m = zoo.ExactGaussianMechanism(sigma=1.0)
    m.neighboring = "replace_one"
    with pytest.raises(ValueError, match="'add_remove'"):
        from_autodp(m)
    with pytest.raises(TypeError, match="must be an autodp Mechanism"):
        from_autodp(GaussianMechanism(sigma=1.0))


def test_missing_autodp_names_the_pip_command(monkeypatch):
    import sys

    for name in [n for n in sys.modules if n == "autodp" or n.startswith("autodp.")]:
        monkeypatch.delitem(sys.modules, name)
    monkeypatch.setitem(sys.modules, "autodp", None)
    with pytest.raises(MissingPeerError, match=r"`pip install autodp`"):
        from_autodp(object())
