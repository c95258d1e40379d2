"""Contract tests over a table of every mechanism class: shapes, dtypes, signs, vectorisation, capabilities."""

import dataclasses
import inspect

import numpy as np
import pytest
from numpy.testing import assert_allclose, assert_array_equal

from dpledger import mechanisms
from dpledger.mechanisms import (
    CharacteristicFunctionMechanism,
    Composed,
    ContinuousPairMechanism,
    CustomRDPMechanism,
    DiscretePairMechanism,
    GaussianMechanism,
    KaryRandomizedResponse,
    LaplaceMechanism,
    Mechanism,
    MissingCapabilityError,
    NoisyArgmax,
    NoisyScreening,
    NonPrivateMechanism,
    PoissonSubsampled,
    PureDPMechanism,
    RandomAllocation,
    RandomizedResponse,
    SampledWithoutReplacement,
    SampledWithReplacement,
    SelfComposed,
    SparseVector,
    TauClippedVotes,
    ZCDPMechanism,
    from_rdp_curve,
    subsampled_screening,
)
from dpledger.mechanisms.relations import Direction

G = GaussianMechanism(sigma=1.3, sensitivity=0.7)
TABLE = {
    "gaussian": G,
    "laplace": LaplaceMechanism(scale=2.0),
    "rr": RandomizedResponse(p=0.8),
    "rr-fair": RandomizedResponse(p=0.5),
    "rr-revealing": RandomizedResponse(p=1.0),
    "pure": PureDPMechanism(epsilon=0.7),
    "zcdp": ZCDPMechanism(rho=0.05),
    "zcdp-zero": ZCDPMechanism(rho=0.0),
    "custom": CustomRDPMechanism(lambda a: np.where(np.isinf(a), np.inf, 0.1 * a), name="0.05-zCDP"),
    "discrete-pair": DiscretePairMechanism(np.log([0.5, 0.3, 0.2]), np.log([0.2, 0.3, 0.5])),
    "continuous-pair": ContinuousPairMechanism(
        lambda x: -0.5 * (x - 1.0) ** 2 - 0.5 * np.log(2 * np.pi),
        lambda x: -0.5 * x**2 - 0.5 * np.log(2 * np.pi),
        lower=-40.0,
        upper=41.0,
    ),
    "characteristic-function": CharacteristicFunctionMechanism(lambda s: 0.25 * s * (s + 1.0), name="mu^2 = 0.5"),
    "sub-discrete-pair": PoissonSubsampled(
        DiscretePairMechanism(np.log([0.6, 0.4]), np.log([0.4, 0.6])), sampling_probability=0.05
    ),
    "sub-gaussian": PoissonSubsampled(G, sampling_probability=0.01),
    "sub-gaussian-wide": PoissonSubsampled(GaussianMechanism(sigma=0.5), sampling_probability=0.5),
    "sub-laplace": PoissonSubsampled(LaplaceMechanism(scale=0.5), sampling_probability=0.2),
    "sub-rr": PoissonSubsampled(RandomizedResponse(p=0.9), sampling_probability=1e-3),
    "sub-custom": PoissonSubsampled(CustomRDPMechanism(lambda a: a / 20.0), sampling_probability=0.1),
    "sub-sub": PoissonSubsampled(PoissonSubsampled(G, sampling_probability=0.5), sampling_probability=0.1),
    "self-composed": SelfComposed(PoissonSubsampled(G, sampling_probability=0.01), count=1000),
    "composed": Composed([G, LaplaceMechanism(scale=1.0), PoissonSubsampled(PureDPMechanism(epsilon=1.0),
                                                                            sampling_probability=0.3)]),
    "noisy-screening": NoisyScreening(k=30, threshold=21.0, sigma=8.0, num_classes=10),
    "sub-screening": subsampled_screening(NoisyScreening(k=30, threshold=21.0, sigma=8.0, num_classes=10), 0.25),
    "noisy-argmax": NoisyArgmax(sigma=4.0),
    "sub-noisy-argmax": PoissonSubsampled(NoisyArgmax(sigma=4.0), sampling_probability=0.2),
    "tau-clipped-votes": TauClippedVotes(sigma=10.0, tau=2.0),
    "kary-rr": KaryRandomizedResponse(noise_parameter=0.5, num_buckets=4),
    "non-private": NonPrivateMechanism(),
    "wor-gaussian": SampledWithoutReplacement(G, batch_size=3, dataset_size=300),
    "wor-rr": SampledWithoutReplacement(RandomizedResponse(p=0.9), batch_size=2, dataset_size=7),
    "wr-gaussian": SampledWithReplacement(G, batch_size=4, dataset_size=200),
    "wr-rr": SampledWithReplacement(RandomizedResponse(p=0.9), batch_size=3, dataset_size=6),
    "allocation-gaussian": RandomAllocation(GaussianMechanism(sigma=2.0), steps=10),
    "allocation-laplace": RandomAllocation(LaplaceMechanism(scale=3.0), steps=5, selections=2),
    "svt-gaussian": SparseVector(threshold=GaussianMechanism(sigma=3.0), queries=GaussianMechanism(sigma=6.0),
                                 cutoff=2, max_length=50),
    "svt-laplace": SparseVector(threshold=LaplaceMechanism(scale=2.0), queries=LaplaceMechanism(scale=4.0)),
    "rdp-curve": from_rdp_curve([2.0, 4.0, 8.0, 16.0, 32.0, np.inf], [0.1, 0.2, 0.4, 0.8, 1.6, 5.0], name="a curve"),
}
# Orders stop at 1000: see the note on nested subsampling below.
ORDERS = np.array([[1.01, 1.5, 2.0, 2.5], [3.0, 12.75, 64.0, np.inf], [100.0, 255.5, 512.0, 1000.0]])
# Note: PoissonSubsampled of a non-Pearson-Vajda base evaluates the base at every integer order up to alpha, and
# the inner subsampled base costs O(l) each: "sub-sub" at order 4000 takes ~3 s and ~0.5 GB (quadratic).
params = pytest.mark.parametrize("m", list(TABLE.values()), ids=list(TABLE))


def test_the_table_covers_every_public_mechanism_class():
    public = {obj for name in mechanisms.__all__ if inspect.isclass(obj := getattr(mechanisms, name))
              and issubclass(obj, Mechanism) and not inspect.isabstract(obj)}
    assert public <= {type(m) for m in TABLE.values()}


@params
def test_scalar_orders_give_a_numpy_float64_scalar(m):
    for order in (2.0, 2, np.float32(2.5), np.int64(3), np.array(7.5), np.inf):
        value = m.rdp(order)
        assert type(value) is np.float64, (order, type(value))
        assert value == m.rdp([float(order)])[0]


@params
def test_array_orders_keep_their_shape_and_give_float64(m):
    for orders in (ORDERS, ORDERS[0], ORDERS[:, :1], ORDERS.reshape(2, 3, 2), ORDERS[:0], ORDERS[:, :0],
                   ORDERS[0].tolist(), tuple(ORDERS[1])):
        values = m.rdp(orders)
        assert isinstance(values, np.ndarray) and values.dtype == np.float64
        assert values.shape == np.shape(orders)


@params
def test_values_are_non_negative_and_never_nan(m):
    values = m.rdp(ORDERS)
    assert not np.isnan(values).any()
    assert np.all(values >= 0)
    if np.isfinite(m.rdp(2.0)):  # +inf at a finite order only for mechanisms with no RDP guarantee at all
        assert np.all(np.isfinite(values[np.isfinite(ORDERS)]))


@params
def test_vectorised_result_equals_element_wise_calls(m):
    # Formerly "sub-gaussian-wide" failed: the fractional Gaussian series summed as many terms as the largest
    # order in the batch needed (rdp(1.5) alone 1.49559093, with 250.5 in the same call 1.49559085). It is now
    # evaluated order by order.
    vectorised = m.rdp(ORDERS)
    element_wise = np.array([[float(m.rdp(a)) for a in row] for row in ORDERS])
    assert_allclose(vectorised, element_wise, rtol=1e-12)  # differences of ~7e-14 occur: float rounding only


@params
def test_rdp_leaves_its_input_alone_and_is_deterministic(m):
    orders = ORDERS.copy()
    first = m.rdp(orders)
    assert_array_equal(orders, ORDERS)
    assert_array_equal(m.rdp(orders), first)
    rebuilt = type(m)(**{f.name: getattr(m, f.name) for f in dataclasses.fields(m) if f.init})
    assert_array_equal(rebuilt.rdp(orders), first)


@params
def test_pure_epsilon_is_the_rdp_at_order_inf_or_a_named_error(m):
    at_inf = float(m.rdp(np.inf))
    if np.isfinite(at_inf):
        assert m.pure_epsilon() == at_inf
        assert np.all(m.rdp(ORDERS[:, :-1]) <= at_inf)
    else:
        with pytest.raises(MissingCapabilityError, match=type(m).__name__):
            m.pure_epsilon()


@params
def test_mechanisms_are_frozen_slotted_dataclasses(m):
    assert dataclasses.is_dataclass(m)
    assert type(m).__dataclass_params__.frozen
    assert "__slots__" in type(m).__dict__
    assert isinstance(repr(m), str) and type(m).__name__ in repr(m)


@params
def test_pearson_vajda_flag_is_set_only_where_a_proof_is_written(m):
    # The tight bound (thesis Thm 2.3.4) is sound only for bases meeting condition (2.2): thesis Prop 2.3.6 proves
    # it for the Gaussian and Laplace mechanisms; NoisyArgmax and TauClippedVotes are post-processings of a
    # Gaussian mechanism on a vote vector (their class docstrings), so they inherit its flag; randomized response
    # and pure DP (its dominating pair) have the proof in RandomizedResponse's docstring, checked below in mpmath.
    proven = (GaussianMechanism, NoisyArgmax, TauClippedVotes, LaplaceMechanism, RandomizedResponse, PureDPMechanism)
    assert m.satisfies_pearson_vajda == (type(m) in proven)


def test_randomized_response_odd_pearson_vajda_terms_are_non_negative():
    import mpmath as mp

    for p in ("0.5000001", "0.55", "0.8", "0.999999", "0.2"):
        with mp.workdps(60):
            p = mp.mpf(p)
            P, Q = (p, 1 - p), (1 - p, p)
            for first, second in ((P, Q), (Q, P)):
                for ell in range(3, 40, 2):
                    assert mp.fsum(b * (a / b - 1) ** ell for a, b in zip(first, second)) >= 0


EXACT_RDP = {"gaussian", "laplace", "rr", "pure"}  # rdp is the exact Renyi divergence of the dominating pair


@params
@pytest.mark.parametrize("direction", list(Direction), ids=lambda d: d.name)
def test_log_mgf_is_a_named_capability_and_never_exceeds_the_rdp_bound(m, direction):
    # On the real axis log M(alpha - 1) = (alpha - 1) D_alpha of one direction's pair: an RDP upper bound must
    # dominate it, and equal it where the RDP curve is exact (Gaussian, Laplace, randomized response).
    orders = np.array([1.5, 2.0, 3.0, 10.0])
    try:
        log_m = m.log_mgf(orders - 1.0, direction)
    except MissingCapabilityError:
        return
    assert isinstance(log_m, np.ndarray) and log_m.dtype == np.complex128 and log_m.shape == orders.shape
    assert_array_equal(np.imag(log_m), 0.0)
    bound = (orders - 1.0) * m.rdp(orders)
    # log_mgf on the real axis is the upper end of a proven enclosure where there is one (subsampled Gaussian):
    # the RDP bound dominates the exact value, so the enclosure's lower end, and the upper end up to its width
    width = 0.0
    if m.log_mgf_is_proven:
        value, log_err = m.log_mgf_enclosure(orders - 1.0, direction)
        width = np.exp(log_err - np.real(value))
        assert np.all(np.real(value) + np.log1p(-np.minimum(width, 0.5)) <= bound * (1 + 1e-9) + 1e-15)
        assert np.all(width <= 1e-8)  # and useful (a self-composed one adds its parts' widths)
    assert np.all(np.real(log_m) <= bound * (1 + 1e-9) + 2.0 * width + 1e-15)
    name = next(k for k, v in TABLE.items() if v is m)
    if name in EXACT_RDP:
        assert_allclose(np.real(log_m), bound, rtol=1e-10, atol=1e-15)


@params
@pytest.mark.parametrize("direction", list(Direction), ids=lambda d: d.name)
def test_loss_buckets_are_a_declared_capability_and_bracket_a_probability(m, direction):
    # has_loss_buckets says whether loss_buckets answers; where it does, the masses are ordered and each total
    # brackets 1 (a probability law, rounded outward), and the rounded-down masses never exceed the upper ones.
    edges = np.arange(-40, 41) * 2.0**-3
    if not m.has_loss_buckets:
        with pytest.raises(MissingCapabilityError):
            m.loss_buckets(edges, direction)
        return
    b = m.loss_buckets(edges, direction)
    for field in (b.p_upper, b.p_lower, b.q_upper, b.q_lower, b.down):
        assert field.shape == (edges.size + 1,) and not np.isnan(field).any() and np.all(field >= 0)
    assert isinstance(b.of_loss, bool)
    assert np.all(b.p_lower <= b.p_upper) and np.all(b.q_lower <= b.q_upper)
    assert b.p_lower.sum() <= 1.0 + 1e-12 <= b.p_upper.sum() + 2e-12 and b.p_upper.sum() <= 2.0
    assert b.down.sum() <= 1.0 + 1e-12 and b.q_lower.sum() <= 1.0 + 1e-12


def test_combinators_name_their_children():
    base = GaussianMechanism(sigma=2.0)
    screening = NoisyScreening(k=30, threshold=21.0, sigma=8.0, num_classes=10)
    assert PoissonSubsampled(base, sampling_probability=0.1).children == (base,)
    assert SelfComposed(base, count=3).children == (base,)
    assert Composed([base, LaplaceMechanism(scale=1.0)]).children == (base, LaplaceMechanism(scale=1.0))
    assert subsampled_screening(screening, 0.25).children == (screening,)
    assert base.children == () and NonPrivateMechanism().children == ()
