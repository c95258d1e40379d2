"""Log moment generating functions of privacy losses (``Mechanism.log_mgf``): closed forms, quadrature, bounds.

Oracles: :mod:`tests.oracles.privacy_profiles` integrates ``E_P[(p/q)^s]`` over the output space with mpmath
(densities written out directly); the subsampled Gaussian's remove direction at integer orders is also an exact
binomial sum. ``log_mgf`` returns a principal-branch-free log (its imaginary part may exceed pi), so values are
compared as ``M = exp(log M)``, with errors measured against ``M(Re s) = E_P[e^(Re(s) L)] >= |M(s)|``, the scale
on which Fourier inversion uses them.
"""

import mpmath as mp
import numpy as np
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from dpledger.mechanisms import (
    Composed,
    CustomRDPMechanism,
    GaussianMechanism,
    LaplaceMechanism,
    PoissonSubsampled,
    PureDPMechanism,
    RandomizedResponse,
    SelfComposed,
    ZCDPMechanism,
)
from dpledger.mechanisms.errors import MissingCapabilityError
from dpledger.mechanisms.relations import Direction
from tests.mechanisms._shared import gaussians, laplaces, pure_dps, randomized_responses
from tests.oracles import privacy_profiles as pp

REMOVE, ADD = Direction.REMOVE, Direction.ADD
ORACLE_DIRECTION = {REMOVE: "remove", ADD: "add"}


def assert_mgf_close(lib, ref, log_scale, atol):
    """``|exp(lib) - exp(ref)| <= atol * exp(log_scale)`` (branch-free comparison of two logs)."""
    lib, ref = complex(lib), complex(ref)
    diff = abs(np.exp(lib - log_scale) - np.exp(ref - log_scale))
    assert diff <= atol, f"log M: library {lib}, reference {ref}; |dM| / M(Re s) = {diff:.3e} > {atol:.1e}"


def two_point_log_mgf(s, pairs):
    """``log sum_o P(o)^(1+s) Q(o)^(-s)`` for a discrete pair ((P(o), Q(o)), ...) at 50 digits."""
    with mp.workdps(50):
        s = mp.mpc(s)
        return complex(mp.log(mp.fsum(mp.mpf(a) * mp.power(mp.mpf(a) / mp.mpf(b), s) for a, b in pairs)))


# --------------------------------------------------------------------------- closed forms
COMPLEX_S = [0.5, 0.5 + 1.0j, 2.0 + 3.0j, -0.3 + 5.0j, 0.3 + 40.0j, 1.5 - 2.0j, 3.0, -2.5 + 0.7j, -0.5, -0.5 + 1e-10j]


@pytest.mark.parametrize("s", COMPLEX_S + [40.0 + 2.0j, -41.0 - 2.0j])
@pytest.mark.parametrize("direction", [REMOVE, ADD])
def test_gaussian_closed_form(s, direction):
    # L ~ N(mu^2/2, mu^2) under P (and the mirror image under Q): log M = mu^2 s (s + 1) / 2 in both directions
    m = GaussianMechanism(sigma=2.0, sensitivity=1.5)
    mu2 = (1.5 / 2.0) ** 2
    assert complex(m.log_mgf(s, direction)) == pytest.approx(0.5 * mu2 * s * (s + 1), rel=1e-14, abs=1e-15)


@pytest.mark.parametrize("s", [0.5 + 1.0j, -2.5 + 0.7j])
@pytest.mark.parametrize("direction", [REMOVE, ADD])
def test_gaussian_closed_form_matches_output_space_integral(s, direction):
    # The formula above against a direct mpmath integral of the densities (a few points: mpmath is slow).
    m = GaussianMechanism(sigma=2.0, sensitivity=1.5)
    ref = pp.gaussian_log_mgf(s, 1.5, 2.0, ORACLE_DIRECTION[direction])
    assert_mgf_close(m.log_mgf(s, direction), ref, float(np.real(m.log_mgf(np.real(s), direction))), 1e-13)


LAPLACE_S = [0.5 + 1.0j, -0.3 + 5.0j, 0.3 + 40.0j, -2.5 + 0.7j, -0.5, 40.0 + 2.0j, -41.0 - 2.0j]


@pytest.mark.parametrize("direction", [REMOVE, ADD])
@pytest.mark.parametrize("sensitivity,scale,s", [(1.0, 2.0, v) for v in LAPLACE_S] + [
    (2.0, 0.5, 0.3 + 40.0j), (2.0, 0.5, -2.5 + 0.7j), (1.0, 1e3, 2.0 + 3.0j), (1.0, 1e3, -0.5 + 1e-10j)])
def test_laplace_closed_form_matches_output_space_integral(s, direction, sensitivity, scale):
    # Thesis Table 3.2's Laplace line is garbled; the library's derived formula is checked against a direct
    # integral of Laplace(D, b) densities times (p/q)^s (and (q/p)^s under Q for the add direction).
    m = LaplaceMechanism(scale=scale, sensitivity=sensitivity)
    ref = pp.laplace_log_mgf(s, sensitivity, scale, ORACLE_DIRECTION[direction], dps=20)
    scale_log = float(np.real(m.log_mgf(np.real(s), direction)))
    assert_mgf_close(m.log_mgf(s, direction), ref, scale_log, 1e-12)


def test_laplace_is_continuous_through_its_removable_singularity():
    # (e^(st) - e^(-t(1+s))) / (1 + 2s) is 0/0 at s = -1/2: the value there is the limit from either side.
    m = LaplaceMechanism(scale=0.7)
    s = -0.5 + np.array([-1e-6, -1e-9, 0.0, 1e-9, 1e-6, 1e-9j, -1e-7 + 1e-7j])
    values = m.log_mgf(s)
    ref = complex(pp.laplace_log_mgf(-0.5, 1.0, 0.7))
    np.testing.assert_allclose(values, ref, rtol=0, atol=2e-6)
    assert np.all(np.isfinite(values))


@pytest.mark.parametrize("mechanism,pairs", [
    (RandomizedResponse(p=0.75), ((0.75, 0.25), (0.25, 0.75))),
    (RandomizedResponse(p=0.25), ((0.75, 0.25), (0.25, 0.75))),  # reporting the flipped bit is the same pair
    (RandomizedResponse(p=0.5), ((0.5, 0.5), (0.5, 0.5))),
    (PureDPMechanism(epsilon=1.0), ((np.e / (1 + np.e), 1 / (1 + np.e)), (1 / (1 + np.e), np.e / (1 + np.e)))),
    (PureDPMechanism(epsilon=0.0), ((0.5, 0.5), (0.5, 0.5))),
])
@pytest.mark.parametrize("s", COMPLEX_S + [300.0 + 1.0j, -301.0 + 1.0j])
def test_two_point_closed_forms_match_exact_sums(mechanism, pairs, s):
    for direction in (REMOVE, ADD):
        swapped = pairs if direction is REMOVE else tuple((b, a) for a, b in pairs)
        ref = two_point_log_mgf(s, swapped)
        scale_log = float(np.real(mechanism.log_mgf(np.real(s), direction)))
        assert_mgf_close(mechanism.log_mgf(s, direction), ref, scale_log, 1e-13)


@pytest.mark.parametrize("mechanism", [
    GaussianMechanism(sigma=0.3), LaplaceMechanism(scale=0.05), RandomizedResponse(p=0.999),
    PureDPMechanism(epsilon=30.0),
])
def test_large_real_arguments_do_not_overflow(mechanism):
    # Both directions at large orders (ADD evaluates the remove M at -1 - s): finite, and equal to the RDP curve.
    orders = np.array([50.0, 500.0])
    for direction in (REMOVE, ADD):
        values = mechanism.log_mgf(orders - 1.0, direction)
        assert np.all(np.isfinite(values))
        np.testing.assert_allclose(values.real / (orders - 1.0), mechanism.rdp(orders), rtol=1e-10)


# --------------------------------------------------------------------------- structural identities
closed_form_mechanisms = st.one_of(gaussians, laplaces, randomized_responses.filter(lambda m: 0 < m.p < 1), pure_dps)
tilts = st.floats(-4.0, 3.0)
frequencies = st.floats(-200.0, 200.0)


@settings(max_examples=40)
@given(mechanism=closed_form_mechanisms, c=tilts, u=frequencies)
@example(mechanism=LaplaceMechanism(scale=0.1, sensitivity=2.0), c=3.0, u=150.0)
@example(mechanism=RandomizedResponse(p=0.01), c=-4.0, u=1.0)
def test_identities_of_the_log_mgf(mechanism, c, u):
    s = complex(c, u)
    rem, add = mechanism.log_mgf(s, REMOVE), mechanism.log_mgf(s, ADD)
    # ADD is the mirror image: E_Q[(q/p)^s] = E_P[(p/q)^(-1-s)].
    assert_mgf_close(add, mechanism.log_mgf(-1.0 - s, REMOVE), float(np.real(add)), 1e-12)
    # Hermitian symmetry of a characteristic function: M(conj s) = conj M(s).
    assert_mgf_close(mechanism.log_mgf(s.conjugate(), REMOVE), np.conj(rem), float(np.real(rem)), 1e-12)
    # |E[e^((c + iu) L)]| <= E[e^(c L)], and the mechanism's decay bound holds beyond |u|.
    real_part = float(np.real(mechanism.log_mgf(c, REMOVE)))
    assert float(np.real(rem)) <= real_part + 1e-12 * max(1.0, abs(real_part))
    bound = mechanism.log_mgf_sup(c, abs(u))
    assert float(np.real(rem)) <= bound + 1e-12 * max(1.0, abs(bound))


@pytest.mark.parametrize("mechanism", [
    GaussianMechanism(sigma=0.7),
    LaplaceMechanism(scale=1.3, sensitivity=2.0),
    RandomizedResponse(p=0.9),
    PureDPMechanism(epsilon=2.0),
    PoissonSubsampled(GaussianMechanism(sigma=1.0), sampling_probability=0.1),
    PoissonSubsampled(LaplaceMechanism(scale=0.5), sampling_probability=0.3),
    PoissonSubsampled(RandomizedResponse(p=0.8), sampling_probability=0.5),
])
def test_normalisation_at_zero_and_minus_one(mechanism):
    # M(0) = E_P[1] = 1 and M(-1) = E_P[q/p] = 1 (the pairs are mutually absolutely continuous), both directions.
    for direction in (REMOVE, ADD):
        np.testing.assert_allclose(mechanism.log_mgf(np.array([0.0, -1.0]), direction), 0.0, atol=1e-12)


@pytest.mark.parametrize("mechanism", [
    GaussianMechanism(sigma=0.8),
    LaplaceMechanism(scale=0.6),
    RandomizedResponse(p=0.7),
    PureDPMechanism(epsilon=0.4),
])
def test_real_axis_gives_the_renyi_divergence_in_both_directions(mechanism):
    # log M(alpha - 1) = (alpha - 1) D_alpha(P || Q); the pairs are symmetric so both directions equal the
    # mechanism's (exact) RDP curve.
    orders = np.array([1.001, 1.5, 2.0, 3.7, 10.0, 64.0])
    for direction in (REMOVE, ADD):
        np.testing.assert_allclose(mechanism.log_mgf(orders - 1.0, direction).real / (orders - 1.0),
                                   mechanism.rdp(orders), rtol=1e-9)


def test_vectorised_shapes_and_scalars():
    for m in (GaussianMechanism(sigma=1.0), LaplaceMechanism(scale=1.0), RandomizedResponse(p=0.6),
              PoissonSubsampled(GaussianMechanism(sigma=1.0), sampling_probability=0.2)):
        grid = np.array([[0.5, 0.5 + 1j, 2.0], [1.0 - 3j, 0.0, -1.0]])
        out = m.log_mgf(grid)
        assert out.shape == (2, 3) and out.dtype == np.complex128
        flat = [complex(m.log_mgf(v)) for v in grid.ravel()]
        np.testing.assert_allclose(out.ravel(), flat, rtol=1e-12, atol=1e-14)
        scalar = m.log_mgf(0.5 + 1j)
        assert np.ndim(scalar) == 0 and isinstance(scalar, np.complex128)


@pytest.mark.parametrize("mechanism", [
    PoissonSubsampled(GaussianMechanism(sigma=0.9), sampling_probability=0.05),
    PoissonSubsampled(LaplaceMechanism(scale=0.8), sampling_probability=0.3),
])
def test_subsampled_line_evaluation_equals_pointwise(mechanism):
    # Fourier inversion asks for an equally spaced line kappa + i k du; the library evaluates it by a recurrence
    # (restarted every 32 steps), which must agree with evaluating each point on its own.
    for direction in (REMOVE, ADD):
        line = 1.3 + 1j * 0.37 * np.arange(100)
        together = mechanism.log_mgf(line, direction)
        apart = np.array([complex(mechanism.log_mgf(v, direction)) for v in line])
        scale_log = float(np.real(mechanism.log_mgf(1.3, direction)))
        np.testing.assert_allclose(np.exp(together - scale_log), np.exp(apart - scale_log), rtol=0, atol=1e-12)


@pytest.mark.parametrize("mechanism, tilt", [
    (PoissonSubsampled(GaussianMechanism(sigma=1.98), sampling_probability=0.0046), 1.0),
    (PoissonSubsampled(GaussianMechanism(sigma=0.7), sampling_probability=0.02), 4.0),
])
def test_subsampled_line_leaves_out_only_negligible_nodes(mechanism, tilt):
    # On a line, nodes whose terms are below e^-LINE_DROP of the largest are left out (and frequencies come in
    # blocks of 32); the same points in shuffled order take the general path, which sums every node.
    rng = np.random.default_rng(0)
    for direction in (REMOVE, ADD):
        line = tilt + 1j * 2.5 * np.arange(77)
        perm = rng.permutation(line.size)
        together = mechanism.log_mgf(line, direction)
        shuffled = np.empty_like(together)
        shuffled[perm] = mechanism.log_mgf(line[perm], direction)
        scale_log = float(np.real(mechanism.log_mgf(tilt, direction)))
        np.testing.assert_allclose(np.exp(together - scale_log), np.exp(shuffled - scale_log), rtol=0, atol=1e-12)


def test_combinators_add_log_mgfs():
    g, lap, rr = GaussianMechanism(sigma=1.5), LaplaceMechanism(scale=2.0), RandomizedResponse(p=0.6)
    s = np.array([0.5, 1.0 + 2.0j, -2.0 + 0.5j])
    for direction in (REMOVE, ADD):
        np.testing.assert_allclose(SelfComposed(lap, count=7).log_mgf(s, direction), 7 * lap.log_mgf(s, direction))
        both = Composed([g, lap, rr]).log_mgf(s, direction)
        parts = g.log_mgf(s, direction) + lap.log_mgf(s, direction) + rr.log_mgf(s, direction)
        np.testing.assert_allclose(np.exp(both), np.exp(parts), rtol=1e-12)


@pytest.mark.parametrize("base", [GaussianMechanism(sigma=1.0), LaplaceMechanism(scale=0.5), RandomizedResponse(p=0.7)])
def test_subsampling_extremes(base):
    s = np.array([0.5, 2.0 + 7.0j, -1.5 - 3.0j])
    for direction in (REMOVE, ADD):
        np.testing.assert_array_equal(PoissonSubsampled(base, sampling_probability=0.0).log_mgf(s, direction), 0.0)
        np.testing.assert_allclose(PoissonSubsampled(base, sampling_probability=1.0).log_mgf(s, direction),
                                   base.log_mgf(s, direction), rtol=1e-14)


# --------------------------------------------------------------------------- Poisson subsampling vs mpmath
SUBSAMPLED_CASES = [
    # (base, parameter, q, s) -- small and large |Im s|, q from 1e-4 to 0.5 (mpmath is slow: few cases)
    ("gaussian", 1.0, 1e-4, 2.0 + 10.0j),
    ("gaussian", 1.0, 0.5, 0.5 + 1.0j),
    ("gaussian", 3.0, 0.5, 1.0 + 100.0j),
    ("laplace", 1.0, 1e-4, 0.5 + 300.0j),
    ("laplace", 0.3, 0.5, 1.0 + 100.0j),
    ("laplace", 1.0, 0.5, 3.0 + 1.0j),
]


@pytest.mark.parametrize("direction", [REMOVE, ADD])
@pytest.mark.parametrize("base,parameter,q,s", SUBSAMPLED_CASES)
def test_subsampled_log_mgf_matches_mpmath(base, parameter, q, s, direction):
    make = GaussianMechanism if base == "gaussian" else LaplaceMechanism
    m = PoissonSubsampled(make(parameter), sampling_probability=q)
    ref = pp.subsampled_log_mgf(s, q, base, parameter, ORACLE_DIRECTION[direction])
    scale_log = float(np.real(m.log_mgf(s.real, direction)))
    assert_mgf_close(m.log_mgf(s, direction), ref, scale_log, 1e-10)


@pytest.mark.parametrize("p,q", [(0.8, 0.5), (0.99, 1e-3), (0.6, 0.2)])
@pytest.mark.parametrize("s", [0.5 + 1.0j, 3.0 + 40.0j, -2.0 + 300.0j, 10.0])
def test_subsampled_randomized_response_matches_exact_sums(p, q, s):
    m = PoissonSubsampled(RandomizedResponse(p=p), sampling_probability=q)
    remove, add = pp.subsampled_rr_pairs(p, q)
    for direction, pairs in ((REMOVE, remove), (ADD, add)):
        scale_log = float(np.real(m.log_mgf(np.real(s), direction)))
        assert_mgf_close(m.log_mgf(s, direction), two_point_log_mgf(s, pairs), scale_log, 1e-12)


def binomial_remove_rdp(alpha, q, sigma):
    """Remove direction at an integer order: ``E_B[(1 - q + q a/b)^alpha] = sum_k C(alpha, k) (1-q)^(alpha-k) q^k
    E_B[(a/b)^k]`` with ``E_B[(a/b)^k] = exp(k (k - 1) / (2 sigma^2))`` (exact, 50 digits), divided by alpha - 1."""
    with mp.workdps(50):
        q, s2 = mp.mpf(q), mp.mpf(sigma) ** 2
        total = mp.fsum(mp.binomial(alpha, k) * (1 - q) ** (alpha - k) * q**k * mp.exp(k * (k - 1) / (2 * s2))
                        for k in range(alpha + 1))
        return float(mp.log(total) / (alpha - 1))


@pytest.mark.parametrize("q,sigma,alpha", [(0.1, 0.8, 8.0), (0.5, 2.0, 3.5)])
def test_subsampled_gaussian_real_axis_is_the_renyi_divergence_per_direction(q, sigma, alpha):
    # remove: (alpha - 1) D_alpha((1-q) N0 + q N1 || N0); add: (alpha - 1) D_alpha(N0 || (1-q) N0 + q N1)
    # (mpmath quadrature over the output, and the exact binomial sum at integer orders).
    m = PoissonSubsampled(GaussianMechanism(sigma=sigma), sampling_probability=q)
    remove = float(pp.subsampled_log_mgf(alpha - 1.0, q, "gaussian", sigma, "remove", dps=30, degree=4).real)
    add = float(pp.subsampled_log_mgf(alpha - 1.0, q, "gaussian", sigma, "add", dps=30, degree=4).real)
    got_remove = float(np.real(m.log_mgf(alpha - 1.0, REMOVE)))
    got_add = float(np.real(m.log_mgf(alpha - 1.0, ADD)))
    assert got_remove == pytest.approx(remove, rel=1e-9, abs=1e-15)
    assert got_add == pytest.approx(add, rel=1e-9, abs=1e-15)
    if alpha == int(alpha):
        assert got_remove / (alpha - 1) == pytest.approx(binomial_remove_rdp(int(alpha), q, sigma), rel=1e-9)
    # The mechanism's RDP curve is an upper bound on both directions (exact at integer orders, Thm 2.3.4).
    assert float(m.rdp(alpha)) >= max(remove, add) / (alpha - 1) * (1 - 1e-9)


@pytest.mark.parametrize("q,b,alpha", [(0.05, 1.0, 4.0)])
def test_subsampled_laplace_real_axis_is_the_renyi_divergence_per_direction(q, b, alpha):
    m = PoissonSubsampled(LaplaceMechanism(scale=b), sampling_probability=q)
    remove = float(pp.subsampled_log_mgf(alpha - 1.0, q, "laplace", b, "remove", dps=30, degree=4).real)
    add = float(pp.subsampled_log_mgf(alpha - 1.0, q, "laplace", b, "add", dps=30, degree=4).real)
    assert float(np.real(m.log_mgf(alpha - 1.0, REMOVE))) == pytest.approx(remove, rel=1e-9)
    assert float(np.real(m.log_mgf(alpha - 1.0, ADD))) == pytest.approx(add, rel=1e-9)
    assert float(m.rdp(alpha)) >= max(remove, add) / (alpha - 1) * (1 - 1e-9)


@pytest.mark.parametrize("mechanism", [
    PoissonSubsampled(GaussianMechanism(sigma=1.0), sampling_probability=0.05),
    PoissonSubsampled(GaussianMechanism(sigma=0.5), sampling_probability=0.5),
    PoissonSubsampled(LaplaceMechanism(scale=0.3), sampling_probability=0.05),
    PoissonSubsampled(RandomizedResponse(p=0.8), sampling_probability=0.5),
])
@pytest.mark.parametrize("c,u_min", [(0.3, 0.5), (2.0, 5.0), (-1.3, 0.5), (-3.0, 5.0), (1.0, 20.0)])
def test_subsampled_decay_bound_holds_on_a_grid(mechanism, c, u_min):
    # log_mgf_sup(c, u_min) bounds sup_{|u| >= u_min} Re log M(c + iu); the Fourier accountant's truncation error
    # rests on it (c < -1 is what the add direction asks for).
    bound = mechanism.log_mgf_sup(c, u_min)
    u = np.linspace(u_min, 8.0 * u_min, 120)
    assert np.real(mechanism.log_mgf(c + 1j * u)).max() <= bound + 1e-9
    assert np.real(mechanism.log_mgf(c - 1j * u[::3])).max() <= bound + 1e-9


# --------------------------------------------------------------------------- errors
@pytest.mark.parametrize("mechanism", [
    ZCDPMechanism(rho=0.1),
    CustomRDPMechanism(lambda a: a / 8.0),
    RandomizedResponse(p=1.0),
    RandomizedResponse(p=0.0),
    PoissonSubsampled(ZCDPMechanism(rho=0.1), sampling_probability=0.5),
    PoissonSubsampled(CustomRDPMechanism(lambda a: a / 8.0), sampling_probability=0.01),
    Composed([GaussianMechanism(sigma=1.0), ZCDPMechanism(rho=0.1)]),
    SelfComposed(ZCDPMechanism(rho=0.1), count=3),
])
def test_mechanisms_without_a_dominating_pair_refuse(mechanism):
    for direction in (REMOVE, ADD):
        with pytest.raises(MissingCapabilityError):
            mechanism.log_mgf(np.array([0.5, 0.5 + 1j]), direction)


@pytest.mark.parametrize("direction", ["add", "remove", None, 1])
def test_direction_must_be_a_direction(direction):
    with pytest.raises(TypeError, match="`direction`"):
        GaussianMechanism(sigma=1.0).log_mgf(0.5, direction)


@pytest.mark.parametrize("s", ["abc", {"s": 1}, object()])
def test_non_numeric_s_is_a_type_error(s):
    with pytest.raises(TypeError, match="`s`"):
        LaplaceMechanism(scale=1.0).log_mgf(s)


def test_none_s_is_a_type_error():
    with pytest.raises(TypeError, match="`s`"):
        LaplaceMechanism(scale=1.0).log_mgf(None)


@pytest.mark.parametrize("s", [float("nan"), complex(0.5, float("nan")), [0.5, float("nan")]])
def test_nan_s_is_refused(s):
    with pytest.raises(ValueError, match="`s`"):
        PoissonSubsampled(GaussianMechanism(sigma=1.0), sampling_probability=0.1).log_mgf(s)
