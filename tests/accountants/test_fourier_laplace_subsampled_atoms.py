"""Laplace ledgers with Poisson-subsampled two-point losses: the split path per direction (atoms enumerated, the
rest inverted), delta the larger of the two directions (thesis Thm 3.3.5).

Before: such ledgers had no split (a subsampled pair's atoms differ between the directions), their characteristic
function does not decay, and the privacy buckets answered in 10-17 s with intervals 1e-7 to 1e-4 wide (random
ledgers of the 2026-11-29 fuzz: Laplace x 8 + subsampled RR x 12 + pure DP x 52, 16.4 s; subsampled pure DP x 1 +
Laplace x 1, 10.2 s).

Oracle: with ``L = A + L_lap`` (``A`` the atoms' sum, independent of the Laplace loss), ``delta_d(eps) = sum_a P_d(a)
delta_lap(eps - a)``, ``delta_lap(x) = E[(1 - e^(x - L_lap))_+]`` of one Laplace run at any real ``x``: for the pair
(Lap(1, b), Lap(0, b)) the loss is ``-t`` below 0, ``(2o - 1) / b`` on (0, 1), ``t`` above 1, so ``delta_lap(x) =
int (p(o) - e^x q(o))_+ do`` in closed form per piece (mpmath, 50 digits).
"""

import itertools

import mpmath as mp
import pytest

from dpledger.accountants import FourierAccountant
from dpledger.mechanisms import LaplaceMechanism, PoissonSubsampled, RandomizedResponse

SCALE, RR, Q, RUNS = 2.0, 0.75, 0.3, 3


def _delta_laplace(x, b):
    """``int (p(o) - e^x q(o))_+ do`` for p = Lap(1, b), q = Lap(0, b) densities, by mpmath quadrature on the three
    pieces of the loss (its kinks at 0 and 1, and where p = e^x q inside (0, 1))."""
    b = mp.mpf(b)

    def p(o):
        return mp.exp(-abs(o - 1) / b) / (2 * b)

    def q(o):
        return mp.exp(-abs(o) / b) / (2 * b)

    def f(o):
        return max(p(o) - mp.exp(x) * q(o), 0)

    # inside (0, 1) the loss (2o - 1)/b equals x at o = (1 + b x) / 2
    cut = min(max((1 + b * x) / 2, 0), 1)
    return mp.quad(f, [-mp.inf, 0, cut, 1, mp.inf])


def _exact_delta(epsilon):
    mechanism = PoissonSubsampled(RandomizedResponse(p=RR), Q)
    atoms = mechanism.loss_atoms()
    best = mp.mpf(0)
    with mp.workdps(50):
        for key in ("remove", "add"):
            l1, l0, log_p1, log_p0 = (mp.mpf(v) for v in atoms[key])
            total = mp.mpf(0)
            for outcome in itertools.product((0, 1), repeat=RUNS):
                loss = sum(l1 if o else l0 for o in outcome)
                mass = mp.exp(sum(log_p1 if o else log_p0 for o in outcome))
                total += mass * _delta_laplace(mp.mpf(epsilon) - loss, SCALE)
            best = max(best, total)
    return best


def _accountant():
    return (FourierAccountant().compose(LaplaceMechanism(scale=SCALE), 1)
            .compose(PoissonSubsampled(RandomizedResponse(p=RR), Q), RUNS))


def test_the_ledger_takes_one_split_per_direction():
    splits = _accountant()._laplace_split()
    assert splits is not None and len(splits) == 2


@pytest.mark.parametrize("epsilon", [0.05, 0.4, 1.2])
def test_delta_contains_the_mpmath_value(epsilon):
    """At 1.2 the add direction's delta is far below the remove direction's lower end, so it is not asked for rtol
    (one Laplace run: its rest decays like 1/u, and that direction alone could not reach rtol; before its order by
    Chernoff bound, the ledger went to the privacy buckets)."""
    bounds = _accountant().delta_bounds(epsilon)
    exact = _exact_delta(epsilon)
    assert bounds.lower <= exact <= bounds.upper
    assert bounds.upper - bounds.lower <= 1e-6 * bounds.estimate


def test_one_laplace_run_is_priced_exactly():
    """One Laplace run: the rest is the first-order part alone, priced in closed form
    (accountants._laplace_first_order), so even rtol 1e-12 on 64 nodes is met without an inversion (before: the
    privacy buckets answered, wider)."""
    accountant = (FourierAccountant(rtol=1e-12, max_terms=64).compose(LaplaceMechanism(scale=SCALE), 1)
                  .compose(PoissonSubsampled(RandomizedResponse(p=RR), Q), RUNS))
    bounds = accountant.delta_bounds(0.4)
    assert bounds.lower <= _exact_delta(0.4) <= bounds.upper
    assert bounds.upper - bounds.lower <= 1e-12 * bounds.upper
    assert "privacy buckets" not in accountant.delta_report(0.4).method


def test_where_the_split_cannot_reach_rtol_the_privacy_buckets_answer():
    """Two Laplace runs leave a second-order rest to invert; rtol 1e-12 on 64 nodes cannot be met, so the privacy
    buckets answer (proven, wider), and the report says so; their interval overlaps the default accountant's."""
    def ledger(**settings):
        return (FourierAccountant(**settings).compose(LaplaceMechanism(scale=SCALE), 2)
                .compose(PoissonSubsampled(RandomizedResponse(p=RR), Q), RUNS))
    accountant = ledger(rtol=1e-12, max_terms=64)
    bounds, reference = accountant.delta_bounds(0.4), ledger().delta_bounds(0.4)
    assert bounds.lower <= reference.upper and reference.lower <= bounds.upper
    assert "privacy buckets" in accountant.delta_report(0.4).method


def test_epsilon_is_certified_and_its_delta_brackets_the_target():
    accountant = _accountant()
    bounds = accountant.epsilon_bounds(1e-3)
    assert bounds.upper - bounds.lower <= 1e-6 * bounds.upper
    assert _exact_delta(bounds.upper) <= 1e-3 <= _exact_delta(bounds.lower) * (1 + 1e-9)
