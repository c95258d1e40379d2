"""Proven bucket masses of privacy losses (mechanisms.loss_buckets) against mpmath and exact rationals."""

import fractions

import mpmath as mp
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import special

from dpledger.mechanisms import GaussianMechanism, PoissonSubsampled, RandomizedResponse, ZCDPMechanism
from dpledger.mechanisms.custom_pairs import DiscretePairMechanism
from dpledger.mechanisms.errors import MissingCapabilityError
from dpledger.mechanisms.laplace import LaplaceMechanism
from dpledger.mechanisms.loss_buckets import normal_cdf_bounds
from dpledger.mechanisms.relations import Direction

U = 2.0**-53


@settings(max_examples=200, deadline=None)
@given(st.floats(-37.0, 8.5))
def test_ndtr_is_within_half_the_assumed_margin(x):
    """The module assumes ndtr within 8u (8 + x^2) relative above 1e-300; it must hold with a factor 2 spare."""
    value = special.ndtr(x)
    if value < 1e-300:
        return
    with mp.workdps(40):
        exact = mp.ncdf(mp.mpf(x))
        assert abs(mp.mpf(float(value)) - exact) <= exact * 4 * U * (8 + x * x)
    lo, hi = normal_cdf_bounds(np.array([x]), np.array([x]))
    with mp.workdps(40):
        assert lo[0] <= exact <= hi[0]


def _interval(x1, x2, shift):
    """Phi(x2 - shift) - Phi(x1 - shift) in mpmath, computed on the side of 0 where it does not cancel."""
    x1, x2 = x1 - shift, x2 - shift
    if x1 >= 0:
        return mp.ncdf(-x1) - mp.ncdf(-x2)
    return mp.ncdf(x2) - mp.ncdf(x1)


def _exact_buckets(sigma, q, edges, direction):
    """(P-mass, Q-mass) of every interior bucket (e_(i-1), e_i] of the subsampled Gaussian's loss, mpmath."""
    mu, q = 1 / mp.mpf(sigma), mp.mpf(q)

    def x_of(loss):  # the output at which log(1 - q + q e^(mu x - mu^2/2)) = loss
        w = mp.expm1(loss) / q
        return -mp.inf if w <= -1 else (mp.log1p(w) + mu**2 / 2) / mu

    out = []
    for a, b in zip(edges[:-1], edges[1:]):
        a, b = mp.mpf(float(a)), mp.mpf(float(b))
        if direction is Direction.REMOVE:
            x1, x2 = x_of(a), x_of(b)
            out.append(((1 - q) * _interval(x1, x2, 0) + q * _interval(x1, x2, mu), _interval(x1, x2, 0)))
        else:
            x1, x2 = x_of(-b), x_of(-a)
            out.append((_interval(x1, x2, 0), (1 - q) * _interval(x1, x2, 0) + q * _interval(x1, x2, mu)))
    return out


@settings(max_examples=12, deadline=None)
@given(sigma=st.floats(0.3, 6.0), q=st.sampled_from([1e-4, 1e-3, 0.01, 0.2, 0.5, 1.0]),
       step=st.sampled_from([2.0**-3, 2.0**-6, 2.0**-9]), start=st.floats(-3.0, 1.0),
       direction=st.sampled_from(list(Direction)))
def test_subsampled_gaussian_buckets_enclose_mpmath(sigma, q, step, start, direction):
    m = PoissonSubsampled(GaussianMechanism(sigma=sigma), sampling_probability=q)
    edges = (np.floor(start / step) + np.arange(120)) * step
    b = m.loss_buckets(edges, direction)
    with mp.workdps(50):
        for i, (p, r) in enumerate(_exact_buckets(sigma, q, edges, direction), start=1):
            assert b.p_lower[i] <= p <= b.p_upper[i], (i, b.p_lower[i], p, b.p_upper[i])
            assert b.q_lower[i] <= r <= b.q_upper[i], (i, b.q_lower[i], r, b.q_upper[i])
            assert b.down[i] <= p
    # the end buckets hold the rest: each total is within a few ulps of 1
    assert b.p_upper.sum() >= 1.0 >= b.p_lower.sum() >= 1.0 - 1e-12
    assert b.p_upper.sum() <= 1.0 + 1e-12


def test_gaussian_buckets_are_the_normal_law_of_its_loss():
    # L ~ N(mu^2/2, mu^2) in both directions: every bucket mass is a normal interval
    mu = 0.5
    edges = np.arange(-40, 41) * 2.0**-3
    for direction in Direction:
        b = GaussianMechanism(sigma=2.0).loss_buckets(edges, direction)
        with mp.workdps(40):
            for i in range(1, edges.size):
                exact = _interval((mp.mpf(edges[i - 1]) - mu**2 / 2) / mu, (mp.mpf(edges[i]) - mu**2 / 2) / mu, 0)
                assert b.p_lower[i] <= exact <= b.p_upper[i]
                # Q(B) = E_P[e^-L; B] for L ~ N(m, s^2) is the normal law shifted by -s^2
                q_exact = _interval((mp.mpf(edges[i - 1]) + mu**2 / 2) / mu, (mp.mpf(edges[i]) + mu**2 / 2) / mu, 0)
                assert b.q_lower[i] <= q_exact <= b.q_upper[i]


def test_randomized_response_atoms_fall_in_the_bucket_above_their_rounding():
    p = fractions.Fraction(3, 4)
    loss = float(np.log(3.0))
    edges = np.array([-2.0, -1.0, 0.0, 1.0, 2.0])
    for direction in Direction:  # symmetric pair: the same atoms +-log 3 with masses 3/4, 1/4
        b = RandomizedResponse(p=0.75).loss_buckets(edges, direction)
        assert b.p_upper[4] >= float(p) >= b.p_lower[4] > float(p) * (1 - 1e-14)  # log 3 in (1, 2]
        assert b.p_upper[1] >= float(1 - p) >= b.p_lower[1]  # -log 3 in (-2, -1]
        assert b.q_upper[4] >= float(1 - p) >= b.q_lower[4]  # Q-mass of the atom at +log 3 is 1/4
        assert b.down[4] == b.p_lower[4] and b.down[1] == b.p_lower[1]
        assert b.p_upper[[0, 2, 3, 5]].sum() == 0.0
    assert abs(loss - 1.0986) < 1e-4


def test_an_atom_on_an_edge_is_raised_for_the_upper_and_lowered_for_the_down_masses():
    # the loss 0 outcome sits exactly on the edge 0: its upper masses go to (0, 1], its down mass to [-1, 0)
    m = DiscretePairMechanism(np.log([0.5, 0.3, 0.2]), np.log([0.2, 0.3, 0.5]))
    b = m.loss_buckets(np.array([-1.0, 0.0, 1.0]), Direction.REMOVE)
    assert b.p_upper[2] == pytest.approx(0.8) and b.p_upper[1] == pytest.approx(0.2)
    assert b.down[1] == pytest.approx(0.5) and b.down[2] == pytest.approx(0.5)
    b = m.loss_buckets(np.array([-1.0, 0.0, 1.0]), Direction.ADD)  # P and Q swap: masses 0.2, 0.3, 0.5 at -l
    assert b.p_upper[2] == pytest.approx(0.8) and b.q_upper[2] == pytest.approx(0.5)


def test_capabilities_are_declared():
    assert GaussianMechanism(sigma=1.0).has_loss_buckets and not GaussianMechanism(sigma=1.0).loss_is_discrete
    sub_laplace = PoissonSubsampled(LaplaceMechanism(scale=1.0), sampling_probability=0.1)
    assert sub_laplace.has_loss_buckets and not sub_laplace.loss_is_discrete
    zcdp = PoissonSubsampled(ZCDPMechanism(rho=0.5), sampling_probability=0.1)
    assert not zcdp.has_loss_buckets and not ZCDPMechanism(rho=0.5).has_loss_buckets
    with pytest.raises(MissingCapabilityError):
        zcdp.loss_buckets(np.array([0.0]), Direction.REMOVE)
    assert PoissonSubsampled(RandomizedResponse(p=0.6), sampling_probability=0.1).loss_is_discrete
    assert PoissonSubsampled(GaussianMechanism(sigma=1.0), sampling_probability=0.0).loss_is_discrete
    short = DiscretePairMechanism(np.log([0.6, 0.4 - 5e-10]), np.log([0.4, 0.6]))
    with pytest.raises(Exception, match="pair"):
        short.loss_buckets(np.array([0.0]), Direction.REMOVE)


def _laplace_cdf(x, centre):
    return mp.e ** (x - centre) / 2 if x <= centre else 1 - mp.e ** (centre - x) / 2


@settings(max_examples=10, deadline=None)
@given(scale=st.floats(0.2, 5.0), q=st.sampled_from([1e-3, 0.01, 0.2, 0.9, 1.0]),
       step=st.sampled_from([2.0**-4, 2.0**-7]), direction=st.sampled_from(list(Direction)))
def test_subsampled_laplace_buckets_enclose_mpmath(scale, q, step, direction):
    """Two atoms (outputs left of 0 and right of t) and a continuous part between, both directions; the edges
    avoid the atoms (an atom on an edge is counted in the bucket above, the documented rounding)."""
    m = PoissonSubsampled(LaplaceMechanism(scale=scale), sampling_probability=q)
    edges = (np.arange(-160, 160) + 0.37) * step
    b = m.loss_buckets(edges, direction)
    with mp.workdps(50):
        t, qm = 1 / mp.mpf(scale), mp.mpf(q)

        def x_of(loss):  # output in [0, t] at which log(1 - q + q e^(2x - t)) = loss, clipped
            w = mp.expm1(loss) / qm
            return mp.mpf(0) if w <= -1 else min(max((mp.log1p(w) + t) / 2, mp.mpf(0)), t)

        def mass(x1, x2, centre):
            return _laplace_cdf(x2, centre) - _laplace_cdf(x1, centre)

        low, high = mp.log(1 - qm + qm * mp.e ** -t), mp.log(1 - qm + qm * mp.e ** t)
        remove = direction is Direction.REMOVE
        atoms = ([(low, (1 - qm + qm * mp.e ** -t) / 2, mp.mpf(1) / 2),
                  (high, mp.e ** -t * (1 - qm + qm * mp.e ** t) / 2, mp.e ** -t / 2)] if remove else
                 [(-low, mp.mpf(1) / 2, (1 - qm + qm * mp.e ** -t) / 2),
                  (-high, mp.e ** -t / 2, ((1 - qm) * mp.e ** -t + qm) / 2)])
        for i in range(1, edges.size):
            a, c = mp.mpf(float(edges[i - 1])), mp.mpf(float(edges[i]))
            x1, x2 = (x_of(a), x_of(c)) if remove else (x_of(-c), x_of(-a))
            base, other = mass(x1, x2, 0), mass(x1, x2, t)
            p, r = ((1 - qm) * base + qm * other, base) if remove else (base, (1 - qm) * base + qm * other)
            for loss, pm, qq in atoms:
                if a < loss <= c:
                    p, r = p + pm, r + qq
            assert b.p_lower[i] <= p <= b.p_upper[i] and b.q_lower[i] <= r <= b.q_upper[i], i
            assert b.down[i] <= p


@settings(max_examples=30, deadline=None)
@given(st.integers(0, 2**32 - 1), st.integers(2, 6))
def test_a_discrete_pair_is_pure_dp_at_its_reported_pure_epsilon(seed, size):
    """Exactly, for the stored pair: delta(pure_epsilon) = sum (p - e^eps q)_+ = 0 in both directions (the largest
    |log p - log q| rounded up; found by red-teaming: rounded to nearest it left delta ~1e-16 > 0 there)."""
    rng = np.random.default_rng(seed)
    m = DiscretePairMechanism(np.log(rng.dirichlet(np.ones(size))), np.log(rng.dirichlet(np.ones(size))))
    eps = float(m.rdp(np.inf))
    with mp.workdps(60):
        for first, second in ((m.log_p, m.log_q), (m.log_q, m.log_p)):
            assert mp.fsum(max(mp.exp(mp.mpf(a)) - mp.exp(mp.mpf(eps) + mp.mpf(b)), 0)
                           for a, b in zip(first, second)) == 0
