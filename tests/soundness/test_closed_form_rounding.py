"""The closed-form log MGFs' float rounding, many runs composed, against mpmath (brief "oracle").

Contract (mechanisms/base.py): ``log_mgf_enclosure(s, direction) -> (log_m, log_err)`` with ``|M(s) - exp(log_m)| <=
exp(log_err)``. ``n`` runs of a closed form are computed as ``n`` times the per-run log, which carries an absolute
rounding of a few ulps even where it is small (cancellation, numpy's complex ``log1p`` and ``expm1``) and a phase
error of a few ulps of ``|Im s| |loss|`` at high frequencies, so ``|M^n - exp(log_m)|`` can reach ``n u |M^n|`` and
more. Checked here, with the exact ``M`` of the dominating pair each enclosure documents (its float parameters
exact; losses rounded up where the code rounds them up: :func:`tests.oracles.closed_form_mgf.one_run`):

* ``SelfComposed(m, n).log_mgf_enclosure(s, REMOVE)`` and ``Composed`` of several of them (and ADD for the
  subsampled pairs, which are not symmetric) for every closed form: Gaussian, Laplace, randomized response, pure
  DP, k-ary randomized response, discrete pairs, Poisson-subsampled randomized response and pure DP
  (Poisson-subsampled Laplace has no proven characteristic function: :func:`test_subsampled_laplace_has_no_enclosure`);
* ``FourierAccountant._log_mgf_enclosure`` of composed ledgers (Gaussians and two-point losses merged as the
  accountant compiles them), at random points and at the nodes its own plans evaluate;
* the Laplace split's rest ``R = M - D`` (:func:`accountants._fourier_atoms.laplace_split`): its ``node_enclosure``
  ``(log R~, log E)``.

Points ``s = kappa + iv``: the plans' exact dampings and complement dampings, the line ``Re s = -1/2`` (zeros of
the symmetric pairs' ``M``), tiny dampings (tiny per-run logs); ``v`` from 0 to where a Gaussian's ``|M|`` falls to
``1e-300`` of ``M(kappa)``, ``1e4 / loss`` for atoms; ``n`` from 1 to ``10^6``.

On the code where closed forms return ``log_err = -inf`` these checks fail at the first inexact point: the claimed
error is 0. tests/oracles/closed_form_mgf.py's ``compare`` also gives the ratio to the inversion's per-node allowance
``eps (8 + |log M~|) |M~|`` (what the report measured).
"""

import functools
import math

import mpmath as mp
import numpy as np
import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

from dpledger.accountants import FourierAccountant
from dpledger.accountants._fourier_atoms import _second_sup, laplace_split
from dpledger.mechanisms import (
    Composed,
    Direction,
    DiscretePairMechanism,
    GaussianMechanism,
    KaryRandomizedResponse,
    LaplaceMechanism,
    PoissonSubsampled,
    PureDPMechanism,
    RandomizedResponse,
    SelfComposed,
)
from tests.oracles import closed_form_mgf as oracle
from tests.soundness._cases import budget, record

#: Dampings the plans use (exact tilts: ``1 + kappa`` exact) and complement dampings in (-1, 0).
KAPPAS = (0.25, 0.5, 1.0, 2.0, 5.0, -0.25, -0.75)
#: The line of the symmetric pairs' zeros, tiny dampings (as ``exact_tilt`` moves them) where a run's log is tiny, and
#: dampings whose ``1 + kappa`` and ``-1 - kappa`` are rounded (the add direction's argument is then inexact).
ADVERSARIAL_KAPPAS = (-0.5, (1.0 + 1e-3) - 1.0, (1.0 + 1e-6) - 1.0, 1e-3, 0.1, -0.3)
RUNS = (1, 10, 100, 10**3, 10**4, 10**5, 10**6)
#: ``v`` where a Gaussian of ``mu2 = 1`` has ``|M(kappa + iv)| = 1e-300 M(kappa)``: ``sqrt(2 * 300 log 10)``.
GAUSSIAN_REACH = math.sqrt(600.0 * math.log(10.0))

kappas = st.sampled_from(KAPPAS + ADVERSARIAL_KAPPAS)
#: Fractions of the top frequency: uniform, and log-uniform down to 1e-12 (near 0, where the per-run log is tiny).
fractions = st.lists(st.one_of(st.floats(0.0, 1.0), st.floats(-12.0, 0.0).map(lambda x: 10.0**x)),
                     min_size=1, max_size=6)


def _describe(result):
    return ", ".join(f"{k} {v:.3g}" for k, v in result.items())


def _assert_within(exact, n, value, error, where):
    """``|M^n - exp(value)| <= exp(error)`` (``exact``: mpmath's log M of one run)."""
    result = oracle.compare(exact, n, value, error)
    assert result["contract"] <= 1.0, (
        f"{where}: |M^n - exp(log_m)| exceeds the claimed bound: log_m {complex(value)}, log_err {float(error)}; "
        f"error / bound etc.: {_describe(result)}")


def _top(mechanism, n):
    """The highest frequency checked for ``n`` runs of ``mechanism`` (module docstring)."""
    noise = mechanism.gaussian_loss_noise_multiplier()
    if noise is not None:
        return GAUSSIAN_REACH * noise / math.sqrt(n)
    return 1e4 / max(_loss_scale(mechanism), 1e-4)


def _loss_scale(mechanism):
    """The largest absolute privacy loss of a discrete or Laplace pair (of its remove direction's law)."""
    if isinstance(mechanism, LaplaceMechanism):
        return mechanism.laplace_loss_ratio()
    if isinstance(mechanism, (RandomizedResponse, PureDPMechanism)):
        return oracle.two_point_parameter(mechanism)
    if isinstance(mechanism, KaryRandomizedResponse):
        mechanism = mechanism._pair()
    if isinstance(mechanism, DiscretePairMechanism):
        return float(np.max(np.abs(mechanism.log_p - mechanism.log_q)))
    if isinstance(mechanism, PoissonSubsampled):
        e, q = oracle.two_point_parameter(mechanism.mechanism), mechanism.sampling_probability
        return max(math.log1p(q * math.expm1(e)), -math.log1p(q * math.expm1(-e)))
    raise TypeError(mechanism)


def _check_self_composed(mechanism, kappa, fracs, direction=Direction.REMOVE, runs=RUNS, pair=None):
    """``pair``: ``s -> log M(s)`` of one run where it is not :func:`oracle.one_run`'s (a discrete pair as given)."""
    one_run = pair or functools.partial(oracle.one_run, mechanism, remove=direction is Direction.REMOVE)
    exact = functools.lru_cache(maxsize=None)(lambda point: one_run(oracle.mpc(point)))
    for n in runs:
        s = kappa + 1j * _top(mechanism, n) * np.array(fracs)
        log_m, log_err = SelfComposed(mechanism, count=n).log_mgf_enclosure(s, direction)
        for point, value, error in zip(s, np.ravel(log_m), np.ravel(log_err)):
            _assert_within(exact(complex(point)), n, value, error, f"{mechanism!r} x {n} at s = {point} ({direction})")


# ---------------------------------------------------------------- mechanisms
gaussians = st.builds(lambda sigma, sens: GaussianMechanism(sigma=sigma, sensitivity=sens),
                      st.floats(0.2, 50.0), st.sampled_from([1.0, 0.5, 3.0]))
laplaces = st.builds(lambda scale, sens: LaplaceMechanism(scale=scale, sensitivity=sens),
                     st.floats(0.05, 20.0), st.sampled_from([1.0, 2.0]))
two_points = st.one_of(st.floats(0.001, 0.999).map(lambda p: RandomizedResponse(p=p)),
                       st.floats(1e-4, 10.0).map(lambda e: PureDPMechanism(epsilon=e)))


def _discrete(weights):
    """``(DiscretePairMechanism, its pair)``: the pair is the one given, normalised exactly (the mechanism stores it
    renormalised in float64, within a few ulps of that)."""
    a = np.array([w[0] for w in weights])
    b = np.array([w[1] for w in weights])
    log_p, log_q = np.log(a / a.sum()), np.log(b / b.sum())
    return DiscretePairMechanism(log_p, log_q), lambda s: oracle.log_discrete_normalised(s, log_p, log_q)


discretes = st.one_of(
    st.builds(lambda p, k: (KaryRandomizedResponse(noise_parameter=p, num_buckets=k), None),
              st.floats(0.01, 0.99), st.integers(2, 50)),
    st.lists(st.tuples(st.floats(0.01, 1.0), st.floats(0.01, 1.0)), min_size=2, max_size=5).map(_discrete),
)
subsampled = st.builds(lambda base, q: PoissonSubsampled(base, sampling_probability=q),
                       two_points, st.floats(1e-4, 0.99))


_CLOSED_FORMS = {"Gaussian": gaussians, "Laplace": laplaces, "two-point": two_points}


@pytest.mark.parametrize("form", sorted(_CLOSED_FORMS))
@budget(60)
@given(data=st.data(), kappa=kappas, fracs=fractions)
def test_self_composed_closed_form(form, data, kappa, fracs):
    record(f"closed-form rounding: {form}")
    _check_self_composed(data.draw(_CLOSED_FORMS[form]), kappa, fracs)


@budget(60)
@given(discretes, kappas, fractions)
def test_self_composed_discrete_pair(case, kappa, fracs):
    record("closed-form rounding: discrete pair")
    mechanism, pair = case
    _check_self_composed(mechanism, kappa, fracs, pair=pair)


@budget(60)
@given(subsampled, kappas, fractions, st.sampled_from(list(Direction)))
def test_self_composed_subsampled_two_point(mechanism, kappa, fracs, direction):
    record("closed-form rounding: subsampled two-point")
    _check_self_composed(mechanism, kappa, fracs, direction)


@budget(30)
@given(st.lists(st.tuples(st.one_of(gaussians, laplaces, two_points, subsampled), st.sampled_from(RUNS)),
                min_size=2, max_size=4), kappas, fractions)
def test_composed_self_composed_parts(parts, kappa, fracs):
    """``Composed`` of several ``SelfComposed`` closed forms: the parts' enclosures combined once more by
    ``log_product_error``."""
    record("closed-form rounding: Composed")
    mechanism = Composed([SelfComposed(m, count=n) for m, n in parts])
    s = kappa + 1j * min(_top(m, n) for m, n in parts) * np.array(fracs)
    log_m, log_err = mechanism.log_mgf_enclosure(s, Direction.REMOVE)
    for point, value, error in zip(s, np.ravel(log_m), np.ravel(log_err)):
        with mp.workdps(oracle.DPS):
            exact = mp.fsum(n * oracle.one_run(m, oracle.mpc(point)) for m, n in parts)
        _assert_within(exact, 1, value, error, f"{mechanism!r} at s = {point}")


#: Worst points of the scan (``python -m tests.oracles.closed_form_mgf``) on the code before per-run rounding bounds,
#: each far above the inversion's per-node allowance (ratio in the comment).
KNOWN_WORST = [
    (RandomizedResponse(p=0.6), 0.0009999999999998899 + 3.5042e-05j, 10**5),  # small per-run log
    (RandomizedResponse(p=0.5005), 0.5 + 0.167646j, 10**5),
    (PureDPMechanism(epsilon=1e-3), 0.5 + 1.36645j, 10**6),
    (LaplaceMechanism(scale=3.0), 0.0009999999999998899 + 0.000246817j, 10**6),
    (LaplaceMechanism(scale=3.0), -0.5 + 12699.8j, 1),  # near a zero of M
    (KaryRandomizedResponse(noise_parameter=0.5, num_buckets=4), 0.0009999999999998899 + 5887.18j, 10**5),
    (DiscretePairMechanism(np.log([0.75, 0.25]), np.log([0.25, 0.75])), -0.5 + 6833.02j, 10**5),  # phase
    (PoissonSubsampled(RandomizedResponse(p=0.6), sampling_probability=0.01), -0.75 + 1.21187e6j, 10**3),
    (PoissonSubsampled(PureDPMechanism(epsilon=1.0), sampling_probability=0.1), 1.0 + 59755.0j, 10**5),
    (GaussianMechanism(sigma=1.1), -0.5 + 2.27876e-07j, 10**4),
    # high-frequency phase: n Im log M ~ 8e9, so the float product n * (per-run log) alone is ~1e-6 off in phase
    (RandomizedResponse(p=0.6), 0.25 + 2.0e4j, 10**6),
    (PoissonSubsampled(RandomizedResponse(p=0.6), sampling_probability=0.01), 0.25 + 2.0e4j, 10**6),
]


@pytest.mark.parametrize("mechanism, point, n", KNOWN_WORST)
def test_known_worst_points(mechanism, point, n):
    log_m, log_err = SelfComposed(mechanism, count=n).log_mgf_enclosure(np.array([point]), Direction.REMOVE)
    exact = oracle.one_run(mechanism, oracle.mpc(point))
    _assert_within(exact, n, log_m[0], log_err[0], f"{mechanism!r} x {n} at s = {point}")


def _laplace_zero(t, k):
    """The ``k``-th zero ``v > 0`` of ``M(-1/2 + iv)`` of the Laplace pair (``e^(-itv) (2 cos(tv) + sin(tv) / v) / 2``
    times ``e^(-t/2)``: ``2 v cos(tv) + sin(tv) = 0``, one root in each ``(pi/2 + (k - 1) pi, pi/2 + k pi] / t``)."""
    with mp.workdps(30):
        lo, hi = (math.pi / 2 + (k - 1) * math.pi) / t, (math.pi / 2 + k * math.pi) / t
        return float(mp.findroot(lambda v: 2 * v * mp.cos(t * v) + mp.sin(t * v), (lo + 1e-12, hi), solver="anderson"))


@budget(60)
@given(st.one_of(two_points, laplaces), st.integers(1, 3000), st.one_of(st.just(0.0), st.floats(-1e-6, 1e-6)),
       st.sampled_from(RUNS))
def test_near_zeros(mechanism, k, offset, n):
    """Points at and near the zeros of the symmetric pairs' ``M`` on ``Re s = -1/2`` (relative error unbounded there):
    two-point ``v = pi (2k - 1) / (2E)``, Laplace the roots of ``2 v cos(tv) + sin(tv)``."""
    record("closed-form rounding: near zeros")
    if isinstance(mechanism, LaplaceMechanism):
        v = _laplace_zero(mechanism.laplace_loss_ratio(), k)
    else:
        e = oracle.two_point_parameter(mechanism)
        assume(e > 1e-6)  # RR(1/2) has E = 1e-323 (0 rounded up): its zeros lie beyond the float range
        v = math.pi * (2 * k - 1) / (2 * e)
    point = complex(-0.5, v * (1.0 + offset))
    log_m, log_err = SelfComposed(mechanism, count=n).log_mgf_enclosure(np.array([point]), Direction.REMOVE)
    _assert_within(oracle.one_run(mechanism, oracle.mpc(point)), n, log_m[0], log_err[0],
                   f"{mechanism!r} x {n} near a zero, s = {point}")


@pytest.mark.parametrize("direction", [Direction.REMOVE, Direction.ADD])
def test_subsampled_laplace_enclosure_over_many_runs(direction):
    """Poisson-subsampled Laplace has a proven enclosure (mechanisms/subsampled_laplace_cf.py): ten runs of it, in
    both directions, contain the mpmath value of ``M^10`` (the oracle: atoms plus the continuous part by quadrature,
    at 30 digits), and claim no more than a tiny relative error."""
    import mpmath as mp

    m = PoissonSubsampled(LaplaceMechanism(scale=1.0), sampling_probability=0.1)
    assert m.log_mgf_is_proven
    t, g = mp.mpf(m.mechanism.laplace_loss_ratio()), mp.mpf(0.1)
    s = np.array([0.5 + 1j, 1.5 + 40j, 0.25 + 300j])
    values, errors = SelfComposed(m, count=10).log_mgf_enclosure(s, direction)
    with mp.workdps(30):
        for point, value, log_err in zip(s, values, errors):
            z = mp.mpc(1 + point.real, point.imag) if direction is Direction.REMOVE else -mp.mpc(point.real,
                                                                                                 point.imag)
            w = lambda y: 1 - g + g * mp.exp(y)  # noqa: E731
            pieces = mp.linspace(-t, t, 40)
            f = (w(-t) ** z / 2 + mp.exp(-t) / 2 * w(t) ** z
                 + mp.quad(lambda y: mp.exp(-(t + y) / 2) / 4 * w(y) ** z, pieces))
            exact = f ** 10
            gap = abs(exact - mp.exp(mp.mpc(complex(value))))
            assert gap <= mp.exp(float(log_err)), (point, gap, log_err)
            assert mp.exp(float(log_err)) <= 1e-11 * abs(exact)


@pytest.mark.parametrize("mechanism", [
    GaussianMechanism(sigma=0.7, sensitivity=2.0), LaplaceMechanism(scale=3.0), RandomizedResponse(p=0.3),
    PureDPMechanism(epsilon=0.7), KaryRandomizedResponse(noise_parameter=0.3, num_buckets=7),
    DiscretePairMechanism(np.log([0.5, 0.3, 0.2]), np.log([0.2, 0.3, 0.5])),
    PoissonSubsampled(RandomizedResponse(p=0.8), sampling_probability=0.05),
])
def test_oracle_is_the_codes_pair(mechanism):
    """The oracle describes the pair the code computes: one run agrees with the float value to 1e-13 relative at
    moderate points (a different pair, e.g. an ``E`` rounded another way, would be off by far more)."""
    s = np.array([0.5 + 0.3j, -0.25 + 2.0j, 2.0 + 0.0j, 1.0 + 7.0j])
    values = mechanism.log_mgf(s, Direction.REMOVE)
    for point, value in zip(s, values):
        result = oracle.compare(oracle.one_run(mechanism, oracle.mpc(point)), 1, value, -math.inf)
        assert result["relative"] < 1e-13, (mechanism, point, result)


def test_oracles_known_values():
    """Identities of the exact transforms: ``M(0) = 1`` and ``M(-1) = E_Q[1] = 1`` for proper pairs, the Laplace
    transform against a direct quadrature of its loss's law, the split ``D + R = M``."""
    with mp.workdps(30):
        for s in (mp.mpc(0), mp.mpc(-1)):
            assert abs(oracle.log_gaussian(s, 1.3)) < mp.mpf(10) ** -25
            assert abs(oracle.log_two_point(s, 0.7)) < mp.mpf(10) ** -25
            assert abs(oracle.log_laplace(s, 0.7)) < mp.mpf(10) ** -25
            # float log-masses: exp of them sums to 1 within their rounding only
            assert abs(oracle.log_discrete(s, [math.log(0.5), math.log(0.5)], [math.log(0.25), math.log(0.75)])) < 1e-15
        assert abs(oracle.log_subsampled_two_point(mp.mpc(-1), 0.9, 0.3)) < mp.mpf(10) ** -25
        assert abs(oracle.log_subsampled_two_point(mp.mpc(0), 0.9, 0.3, remove=False)) < mp.mpf(10) ** -25
        # Laplace(t, 1) against Laplace(0, 1): loss -t (P-mass e^-t / 2), +t (1/2), 2x - t on (0, t), density e^(x-t)/2
        t, s = mp.mpf(0.7), mp.mpc(0.3, 2.5)
        direct = (mp.exp(-t) * mp.exp(-s * t) + mp.exp(s * t)) / 2 + mp.quad(
            lambda x: mp.exp(s * (2 * x - t)) * mp.exp(x - t) / 2, [0, t])
        assert abs(mp.exp(oracle.log_laplace(s, 0.7)) / direct - 1) < mp.mpf(10) ** -25
        rest = mp.exp(oracle.log_laplace_rest(s, [(0.7, 3)], [(0.4, 2)]))
        d = mp.exp(3 * mp.log(oracle.laplace_parts(s, 0.7)[0]) + 2 * oracle.log_two_point(s, 0.4))
        m = mp.exp(3 * oracle.log_laplace(s, 0.7) + 2 * oracle.log_two_point(s, 0.4))
        assert abs((d + rest) / m - 1) < mp.mpf(10) ** -25
    # and compare() measures: a float one ulp off in the phase at |Im| = 10^4 is ~1e-12 off
    exact = mp.mpc(-1, 10**4)
    off = complex(-1.0, float(np.nextafter(1e4, 2e4)))
    result = oracle.compare(exact, 1, off, -math.inf)
    assert 1e-12 < result["relative"] < 3e-12 and result["contract"] == math.inf


# ---------------------------------------------------------------- the accountant's ledgers
G = GaussianMechanism(sigma=1.1)
LEDGERS = {
    "Gaussian x 10 + RR(0.6) x n": lambda n: [(G, 10), (RandomizedResponse(p=0.6), n)],
    "Gaussian x n": lambda n: [(G, n)],
    "RR(0.6) x n + PureDP(0.5) x n": lambda n: [(RandomizedResponse(p=0.6), n), (PureDPMechanism(epsilon=0.5), n)],
    "Gaussian x 10 + Laplace(2) x n": lambda n: [(G, 10), (LaplaceMechanism(scale=2.0), n)],
    "Gaussian x 10 + PS(RR(0.6), 0.01) x n": lambda n: [
        (G, 10), (PoissonSubsampled(RandomizedResponse(p=0.6), sampling_probability=0.01), n)],
    "Gaussian x 10 + KaryRR(0.5, 4) x n": lambda n: [(G, 10), (KaryRandomizedResponse(noise_parameter=0.5,
                                                                                      num_buckets=4), n)],
    "Laplace(0.5) x n + PureDP(1e-3) x 7": lambda n: [(LaplaceMechanism(scale=0.5), n),
                                                      (PureDPMechanism(epsilon=1e-3), 7)],
}


def _accountant(entries):
    acct = FourierAccountant()
    for m, n in entries:
        acct.compose(m, n)
    return acct


def _ledger_top(entries):
    mu2 = sum(n / m.noise_multiplier**2 for m, n in entries if isinstance(m, GaussianMechanism))
    scales = [_loss_scale(m) for m, _ in entries if not isinstance(m, GaussianMechanism)]
    top = 1e4 / max(scales) if scales else math.inf
    return min(top, GAUSSIAN_REACH / math.sqrt(mu2)) if mu2 else top


def _ledger_exact(entries, point):
    with mp.workdps(oracle.DPS):
        s = oracle.mpc(point)
        return mp.fsum(n * oracle.one_run(m, s) for m, n in entries)


def _check_ledger(entries, points, name):
    log_m, log_err = _accountant(entries)._log_mgf_enclosure(points, Direction.REMOVE)
    for point, value, error in zip(points, log_m, log_err):
        _assert_within(_ledger_exact(entries, point), 1, value, error, f"{name} at s = {point}")


@budget(60)
@given(st.sampled_from(sorted(LEDGERS)), st.sampled_from(RUNS), kappas, fractions)
def test_accountant_ledgers(name, n, kappa, fracs):
    record("closed-form rounding: accountant ledger")
    entries = LEDGERS[name](n)
    _check_ledger(entries, kappa + 1j * _ledger_top(entries) * np.array(fracs), f"{name}, n = {n}")


@pytest.mark.parametrize("n", [10**3, 10**5])
def test_accountant_at_its_own_nodes(n):
    """The known failing case, Gaussian x 10 + RR(0.6) x n, at the nodes the accountant's plans evaluate for
    ``get_delta`` four standard deviations above the mean loss (up to 300 of them per plan, evenly spread)."""
    entries = LEDGERS["Gaussian x 10 + RR(0.6) x n"](n)
    acct = _accountant(entries)
    seen = []
    enclosure = acct._log_mgf_enclosure

    def spy(s, direction, bodies=None):
        out = enclosure(s, direction, bodies)
        if np.size(s) > 16 and np.any(np.imag(s) != 0):
            seen.append((np.array(s), out))  # either direction: this ledger's pairs are symmetric
        return out

    acct._log_mgf_enclosure = spy
    e, mu2 = math.log(1.5), 10 / 1.21
    mean, sd = mu2 / 2 + n * 0.2 * e, math.sqrt(mu2 + n * e * e * (1 - 0.2**2))  # of the composed loss
    acct.get_delta(epsilon=mean + 4 * sd)
    assert seen, "no plan evaluated the enclosure"
    for s, (log_m, log_err) in seen:
        pick = np.unique(np.linspace(0, s.size - 1, min(s.size, 300)).astype(int))
        for i in pick:
            _assert_within(_ledger_exact(entries, s[i]), 1, log_m[i], log_err[i],
                           f"Gaussian x 10 + RR(0.6) x {n}, plan node s = {s[i]}")


# ---------------------------------------------------------------- the Laplace split's rest
SPLIT_KAPPAS = (0.25, 0.5, 1.0, 2.0, 5.0, -0.25, -0.75)  # not -1/2: A has zeros there, C/A poles


def _split_values(split, s):
    """``(log R~, log E)`` from the split's ``node_enclosure``."""
    log_r, log_e = split.node_enclosure(s)
    return np.asarray(log_r), np.broadcast_to(np.asarray(log_e, dtype=np.float64), s.shape)


def _split_case(scale, n, p, m):
    entries = [(LaplaceMechanism(scale=scale), n)] + ([(RandomizedResponse(p=p), m)] if m else [])
    splits = laplace_split(_accountant(entries)._compile())
    split = None if splits is None else dict(splits)[Direction.REMOVE]  # symmetric losses: one direction
    laplace_runs = [(LaplaceMechanism(scale=scale).laplace_loss_ratio(), n)]
    two_point_runs = [(RandomizedResponse(p=p).two_point_loss(), m)] if m else []
    return split, laplace_runs, two_point_runs


@budget(60)
@given(st.floats(0.1, 10.0), st.sampled_from(RUNS), st.floats(0.51, 0.95), st.sampled_from([0, 10, 100]),
       st.sampled_from(SPLIT_KAPPAS), fractions)
def test_laplace_split_rest(scale, n, p, m, kappa, fracs):
    split, laplace_runs, two_point_runs = _split_case(scale, n, p, m)
    assume(split is not None)  # more atoms than MAX_ATOMS: no split
    assume(split.node_enclosure is not None)  # one Laplace run: priced exactly, nothing inverted
    record("closed-form rounding: Laplace split")
    s = kappa + 1j * (1e4 * scale) * np.array(fracs)
    log_r, log_e = _split_values(split, s)
    for point, value, error in zip(s, log_r, log_e):
        if not np.isfinite(value):  # no value at all: test_laplace_split_rest_is_finite
            continue
        # the whole rest R, or its second-order part where the first order is priced exactly
        rest = oracle.log_laplace_second_order if split.sup.func is _second_sup else oracle.log_laplace_rest
        exact = rest(oracle.mpc(point), laplace_runs, two_point_runs)
        _assert_within(exact, 1, value, error, f"Laplace({scale}) x {n} + RR({p}) x {m}: R at s = {point}")


@pytest.mark.parametrize("n", [10**4, 10**6])
def test_laplace_split_rest_is_finite(n):
    """``log R`` is an ordinary number (about -450 per 10^4 runs at ``s = 1/4``, ``R`` itself in the float range up to
    about 1.5 10^4 runs), so the split must give a finite value (its ``node_log`` overflowed in
    ``expm1(n log1p(C/A))``, and the accountant then refused: AccuracyError with every error infinite)."""
    split, laplace_runs, _ = _split_case(2.0, n, 0.6, 0)
    s = np.array([0.25, 0.25 + 0.5j, 1.0 + 3.0j])
    log_r, log_e = _split_values(split, s)
    rest = oracle.log_laplace_second_order if split.sup.func is _second_sup else oracle.log_laplace_rest
    for point, value, error in zip(s, log_r, log_e):
        exact = rest(oracle.mpc(point), laplace_runs)
        assert np.isfinite(value), f"Laplace(2) x {n}: R at s = {point} is {value} (exact log {complex(exact)})"
        _assert_within(exact, 1, value, error, f"Laplace(2) x {n}: R at s = {point}")
