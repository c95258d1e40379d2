"""Red team of the newly inverted narrow ledgers (7309c0e, issue 14): few runs of a subsampled Gaussian with little
noise and a small sampling probability, once answered loosely by the privacy buckets, now inverted.

What is proven about the references, and so what is checked:

* the privacy buckets (accountants.privacy_buckets.BucketLedger) give a proven interval: dpledger's must overlap it;
* dp_accounting's pessimistic PLD (connect-the-dots, ``pessimistic_estimate=True``) is an upper bound on the exact
  delta(eps) and on the exact epsilon(delta) (its rounding and truncation go to the pessimistic side), so dpledger's
  LOWER end must be at most it;
* its optimistic PLD (``pessimistic_estimate=False``: dp_accounting then rounds losses down with the privacy-buckets
  construction and drops the truncated tails) is a lower bound on the exact epsilon up to the float rounding of its
  FFT composition (relative 1e-15 of the mass), so dpledger's UPPER end must be at least it (minus 1e-12 relative).
  At ``value_discretization_interval`` 1e-5 it lies up to ~steps x 1e-5 below the truth: a weak check on its own; the
  buckets' proven lower end and the exact oracles below are the sharp ones;
* for one and two runs, tests/oracles/privacy_profiles.py gives the exact delta (mpmath, ~15 digits): dpledger's
  delta interval must contain it, and its epsilon interval's ends must straddle the exact profile.

The default suite checks the flagship cell (sigma 0.6, q 1e-4, 10 steps) and one two-run cell; ``--soundness-long``
runs the whole grid sigma in {0.5, 0.6, 0.7} x q in {1e-5, 3e-5, 1e-4, 3e-4} x steps in {3, 10, 30, 100} (epsilon
at delta 1e-5, and delta at half, once and twice the pessimistic PLD epsilon), and one- and two-run cells of every
(sigma, q) against the exact oracle (72 tests; 12 of them took 16 minutes on the shared 2-core machine at load
average ~5).
"""

import functools
import itertools
import logging
import warnings

import mpmath as mp
import pytest

from dpledger.accountants import FourierAccountant
from dpledger.accountants.privacy_buckets import BucketLedger
from dpledger.mechanisms import GaussianMechanism, PoissonSubsampled
from tests.oracles import privacy_profiles as pp
from tests.soundness import _cases
from tests.soundness._cases import record

pld = pytest.importorskip("dp_accounting.pld.privacy_loss_distribution")

DELTA = 1e-5
SIGMAS, QS, STEPS = (0.5, 0.6, 0.7), (1e-5, 3e-5, 1e-4, 3e-4), (3, 10, 30, 100)
#: PLD's value discretisation (the brief's fine setting).
PLD_STEP = 1e-5
#: Float rounding of PLD's FFT composition, relative (see the module docstring).
PLD_ROUNDING = 1e-12


def _long_only():
    if not _cases.LONG:
        pytest.skip("the narrow-ledger grid runs with --soundness-long")


def _mechanism(sigma, q):
    return PoissonSubsampled(GaussianMechanism(sigma=sigma), sampling_probability=q)


@functools.lru_cache(maxsize=4)
def _pld(sigma, q, steps, pessimistic):
    logger = logging.getLogger()
    level = logger.level
    logger.setLevel(logging.ERROR)  # "Connect-the-Dots does not support pessimistic_estimate=False": as intended
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            one = pld.from_gaussian_mechanism(sigma, pessimistic_estimate=pessimistic,
                                              value_discretization_interval=PLD_STEP, sampling_prob=q,
                                              use_connect_dots=pessimistic)
            return one.self_compose(steps)
    finally:
        logger.setLevel(level)


def check_epsilon(sigma, q, steps, *, optimistic=True):
    """dpledger's epsilon interval at DELTA against the buckets and PLD (module docstring); returns the path."""
    m = _mechanism(sigma, q)
    acc = FourierAccountant().compose(m, steps)
    b = acc.epsilon_bounds(DELTA)
    path = acc._derived.get("path")
    assert 0.0 <= b.lower <= b.estimate <= b.upper
    bucket_lower, bucket_upper = BucketLedger([(m, steps)]).epsilon_bounds(DELTA)
    assert b.lower <= bucket_upper and bucket_lower <= b.upper, (sigma, q, steps, b, bucket_lower, bucket_upper)
    pessimistic = _pld(sigma, q, steps, True).get_epsilon_for_delta(DELTA)
    assert b.lower <= pessimistic * (1.0 + PLD_ROUNDING), (sigma, q, steps, b, pessimistic)
    if optimistic:
        low = _pld(sigma, q, steps, False).get_epsilon_for_delta(DELTA)
        assert b.upper >= low * (1.0 - PLD_ROUNDING), (sigma, q, steps, b, low)
    record(f"narrow ledgers: epsilon ({path})")
    return path, b, pessimistic


def check_delta(sigma, q, steps, epsilon):
    """dpledger's delta interval at ``epsilon`` overlaps the buckets' and its lower end is below PLD's pessimistic
    delta."""
    m = _mechanism(sigma, q)
    acc = FourierAccountant().compose(m, steps)
    b = acc.delta_bounds(epsilon)
    lower, upper = BucketLedger([(m, steps)]).delta_bounds(epsilon)
    assert b.lower <= upper and lower <= b.upper, (sigma, q, steps, epsilon, b, lower, upper)
    pessimistic = _pld(sigma, q, steps, True).get_delta_for_epsilon(epsilon)
    assert b.lower <= pessimistic * (1.0 + PLD_ROUNDING), (sigma, q, steps, epsilon, b, pessimistic)
    record(f"narrow ledgers: delta ({acc._derived.get('path')})")


def check_exact(sigma, q, steps, factors=(0.5, 1.0, 2.0)):
    """One or two runs: the epsilon interval's ends straddle the exact profile, and the delta interval at a few
    epsilons (``factors`` times the upper epsilon) contains the exact delta."""
    m = _mechanism(sigma, q)
    acc = FourierAccountant().compose(m, steps)
    b = acc.epsilon_bounds(DELTA)

    def profile(e):
        return pp.subsampled_gaussian_profile(e, q, sigma, steps, dps=20)

    assert profile(b.upper) <= mp.mpf(DELTA) * (1 + mp.mpf(10) ** -12), (sigma, q, steps, b)
    if b.lower > 0.0:
        assert profile(b.lower) >= mp.mpf(DELTA) * (1 - mp.mpf(10) ** -12), (sigma, q, steps, b)
    record("narrow ledgers: epsilon vs exact")
    for epsilon in sorted({f * b.upper for f in factors}):
        d = FourierAccountant().compose(m, steps).delta_bounds(epsilon)
        exact = profile(epsilon)
        tol = mp.mpf(10) ** -12 * exact  # the oracle's ~15 digits
        assert mp.mpf(d.lower) - tol <= exact <= mp.mpf(d.upper) + tol, (sigma, q, steps, epsilon, d, exact)
        record("narrow ledgers: delta vs exact")


# ---------------------------------------------------------------------------------------------- default suite
def test_flagship_cell_inverts_inside_the_references():
    """sigma 0.6, q 1e-4, 10 steps: the commit's own example, [0.0103907685, 0.0103907747] by inversion; since ten
    runs of it go to the windowed path (accountants.windowed_buckets), which reports no inversion path, that one."""
    path, b, pessimistic = check_epsilon(0.6, 1e-4, 10, optimistic=False)
    assert path is None
    assert b.upper - b.lower <= 1e-6 * b.upper
    # the pessimistic PLD at 1e-5 is within its discretisation of the truth: dpledger's answer is just below it
    assert pessimistic - b.upper <= 10 * PLD_STEP


def test_two_run_narrow_cell_against_the_exact_profile():
    check_exact(0.5, 3e-4, 2, factors=(1.0,))


# ---------------------------------------------------------------------------------------------- long grid
@pytest.mark.parametrize("sigma, q, steps", list(itertools.product(SIGMAS, QS, STEPS)))
def test_grid_epsilon_and_delta(sigma, q, steps):
    _long_only()
    _, _, pessimistic = check_epsilon(sigma, q, steps)
    for factor in (0.5, 1.0, 2.0):
        check_delta(sigma, q, steps, factor * pessimistic)


@pytest.mark.parametrize("sigma, q, steps", list(itertools.product(SIGMAS, QS, (1, 2))))
def test_grid_one_and_two_runs_against_the_exact_profile(sigma, q, steps):
    _long_only()
    check_exact(sigma, q, steps)
