"""Red team of issue 14's mirror check and cut delta queries (commits 30ee133, b98de89, bb812db).

Oracles, each independent of the code under test:

* a mixed ledger (Gaussian + an asymmetric discrete pair) whose two directions' deltas are finite sums of analytic
  Gaussian profiles, evaluated in mpmath at any real epsilon: ``delta_d(eps) = sum_j w_j d_G(eps - l_j)`` over the
  pair's composed atoms ``(l_j, w_j)`` in direction ``d`` (losses ``log p/q`` with masses ``p``, or ``log q/p``
  with masses ``q``) and ``d_G(x) = Phi(mu/2 - x/mu) - e^x Phi(-mu/2 - x/mu)`` (Balle & Wang 2018, Thm 8; the
  derivation holds at negative ``x`` too), so both the direction that decides and the mirror bound are checked;
* for the Poisson-subsampled Gaussian, a proven LOWER bound on delta (no closed form for several runs):
  ``delta(eps) >= (1 - e^(eps - t)) P(L > t)`` for ``t > eps``, and ``P(L_1 + ... + L_n > t) >= P(L_1 > t - (n - 1)
  log(1 - q))`` because every run's loss ``log(1 - q + q e^(mu x - mu^2/2))`` exceeds ``log(1 - q)``; one run's tail
  is ``(1 - q) Phi(-x_t) + q Phi(mu - x_t)`` with ``x_t = (log((e^t - 1 + q) / q) + mu^2 / 2) / mu``
  (thesis Thm 3.3.5's remove pair, standardised as in :mod:`mechanisms.subsampled_body`). An upper bound reported
  below it is wrong.
"""

import math

import mpmath as mp
import numpy as np
import pytest

import dpledger.accountants._fourier_search as search
import dpledger.accountants.fourier_accountant as fourier_accountant
from dpledger.accountants import FourierAccountant
from dpledger.accountants.fourier_inversion import make_plan
from dpledger.mechanisms import DiscretePairMechanism, GaussianMechanism, PoissonSubsampled
from dpledger.mechanisms.relations import Direction


def _subsampled_delta_lower(q, sigma, runs, epsilon):
    """The proven lower bound of the module docstring on ``runs`` runs' remove delta at ``epsilon``, best over a
    few ``t``."""
    with mp.workdps(40):
        g, mu, e = mp.mpf(q), 1 / mp.mpf(sigma), mp.mpf(epsilon)
        best = mp.mpf(0)
        for step in (1e-3, 1e-2, 0.05, 0.2, 0.5, 1.0, 2.0):
            t = e + step
            one = t - (runs - 1) * mp.log1p(-g)
            x = (mp.log((mp.exp(one) - 1 + g) / g) + mu**2 / 2) / mu
            best = max(best, -mp.expm1(e - t) * ((1 - g) * mp.ncdf(-x) + g * mp.ncdf(mu - x)))
        return best


def _subsampled(q, sigma, runs):
    return FourierAccountant().compose(PoissonSubsampled(GaussianMechanism(sigma=sigma), q), runs)


# ---------------------------------------------------------------- cut delta queries (bb812db)


@pytest.mark.parametrize("q, sigma, runs, epsilon", [(1e-3, 2.0, 2, 1.0), (1e-3, 5.0, 2, 0.3)])
def test_a_cut_delta_query_beyond_the_bodys_largest_loss_stays_an_upper_bound(q, sigma, runs, epsilon):
    """q = 1e-3, sigma = 2, 2 runs, epsilon = 1: the first cut (sized for 1e-3 of the Chernoff bound at the
    capped damping, ~1e-27) leaves each run's losses below ~0.03, so the body's delta at 1 is 0 and its Chernoff
    bound at dampings up to 1e5 is below e^-700. The reported upper end must still be at least the true delta
    (>= 6.3e-54 by the oracle; the whole laws give 1.1e-26). As bb812db left it, _direction_delta_bounds took
    that Chernoff shortcut without the mass left out and reported 5e-324 (also q = 1e-4, sigma = 2, 10 runs,
    delta(0.1): 5e-324 against >= 4.6e-49)."""
    accountant = _subsampled(q, sigma, runs)
    bounds = accountant.delta_bounds(epsilon)
    lower = _subsampled_delta_lower(q, sigma, runs, epsilon)
    assert lower > 0
    assert bounds.upper >= lower, (bounds, mp.nstr(lower, 6), accountant._derived.get("cut"))


@pytest.mark.parametrize("q, sigma, runs, epsilon", [(1e-3, 0.3, 10_000, 0.0), (1e-3, 0.3, 10_000, 2.0)])
def test_a_cut_delta_query_of_a_large_delta_answers_as_the_whole_laws(monkeypatch, q, sigma, runs, epsilon):
    """delta(0) = 0.84 and delta(2) = 0.71 here: the whole laws answer on the complement contour; the cut laws
    must answer too (or give way to the whole laws), with an interval that meets the whole laws'. As bb812db left
    it, the cut remove law was asked for a complement plan, which make_plan refuses: ValueError."""
    bounds = _subsampled(q, sigma, runs).delta_bounds(epsilon)
    monkeypatch.setattr(fourier_accountant, "DELTA_CUT_GUESS", 0.0)  # whole laws only
    whole = _subsampled(q, sigma, runs).delta_bounds(epsilon)
    assert max(bounds.lower, whole.lower) <= min(bounds.upper, whole.upper)
    assert bounds.upper - bounds.lower <= 1e-6 * bounds.upper


@pytest.mark.parametrize("q, sigma, runs, epsilon", [(1e-3, 1.0, 10, 3.0), (1e-4, 2.0, 10, 2.3e-4),
                                                     (1e-3, 1.0, 100, 2.0), (2e-3, 1.0, 1000, 1.0),
                                                     (2e-3, 0.8, 10_000, 0.1)])
def test_cut_delta_queries_meet_the_oracle_and_the_whole_laws(monkeypatch, q, sigma, runs, epsilon):
    """Cut delta queries where the body does reach epsilon: above the oracle's lower bound, and overlapping the
    whole laws' interval (mirror check off there too)."""
    accountant = _subsampled(q, sigma, runs)
    bounds = accountant.delta_bounds(epsilon)
    assert accountant._derived.get("cut")  # the cut laws answered
    assert bounds.upper >= _subsampled_delta_lower(q, sigma, runs, epsilon)
    monkeypatch.setattr(fourier_accountant, "DELTA_CUT_GUESS", 0.0)
    monkeypatch.setattr(search, "mirror_delta_upper", lambda *a, **k: math.inf)
    whole = _subsampled(q, sigma, runs).delta_bounds(epsilon)
    assert max(bounds.lower, whole.lower) <= min(bounds.upper, whole.upper), (bounds, whole)


# ---------------------------------------------------------------- the mirror on an asymmetric pair


def _pair_deltas(p, q, count, sigma, epsilon):
    """``(delta_remove, delta_add)`` at any real ``epsilon`` of ``GaussianMechanism(sigma)`` composed with
    ``count`` runs of the two-outcome pair ``(p, q)`` (module docstring), in mpmath."""
    with mp.workdps(40):
        mu, e = 1 / mp.mpf(sigma), mp.mpf(epsilon)

        def gaussian(x):
            return mp.ncdf(mu / 2 - x / mu) - mp.exp(x) * mp.ncdf(-mu / 2 - x / mu)

        out = []
        for first, second in ((p, q), (q, p)):
            loss = [mp.log(mp.mpf(a) / mp.mpf(b)) for a, b in zip(first, second)]
            out.append(mp.fsum(mp.binomial(count, j) * mp.mpf(first[0]) ** j * mp.mpf(first[1]) ** (count - j)
                               * gaussian(e - j * loss[0] - (count - j) * loss[1]) for j in range(count + 1)))
        return out


#: (p, q): the add direction decides (its large loss log(0.4 / 0.1) has mass 0.4), then the same pair swapped.
PAIRS = [((0.9, 0.1), (0.6, 0.4)), ((0.6, 0.4), (0.9, 0.1))]


def _pair_ledger(p, q):
    pair = DiscretePairMechanism(np.log(p), np.log(q))
    return FourierAccountant().compose(GaussianMechanism(sigma=2.0), 1).compose(pair, 3)


@pytest.mark.parametrize("p, q", PAIRS)
def test_the_remove_plan_bounds_the_add_delta_of_an_asymmetric_pair(p, q):
    """The mirror bound from the remove direction's plan against the exact add delta, whichever direction is the
    larger, at epsilon 0 (where both are the total variation) up to 2."""
    accountant = _pair_ledger(p, q)
    (lm, sup), = [(law, s) for d, law, s in accountant._directions() if d is Direction.REMOVE]
    for epsilon in (0.0, 0.5, 1.5, 2.0):
        exact = _pair_deltas(p, q, 3, 2.0, epsilon)[1]
        upper = search.mirror_delta_upper(make_plan(lm, sup, max(epsilon, 0.1), 1e-12), epsilon)
        # the plan's errors, amplified by e^eps (mirror_delta_upper's docstring), are still far below 1e-7
        assert exact <= upper <= exact + 1e-7, (p, epsilon, mp.nstr(exact, 10), upper)


@pytest.mark.parametrize("p, q", PAIRS)
def test_the_accountant_on_an_asymmetric_pair_contains_the_exact_values(monkeypatch, p, q):
    """Delta and epsilon queries by Fourier inversion (the mirror check consulted) contain the exact values, and
    equal what the searches give with the mirror check off."""
    verdicts = []
    original = search._mirror_below
    monkeypatch.setattr(search, "_mirror_below", lambda *a: verdicts.append(original(*a)) or verdicts[-1])
    accountant = _pair_ledger(p, q)
    answers = {}
    for epsilon in (0.5, 2.0):
        b = answers[epsilon] = accountant.delta_bounds(epsilon)
        exact = max(_pair_deltas(p, q, 3, 2.0, epsilon))
        assert accountant._derived["path"] == "inversion"
        assert b.lower <= exact <= b.upper, (epsilon, b, mp.nstr(exact, 12))
    for delta in (1e-3, 1e-6):
        b = answers[delta] = accountant.epsilon_bounds(delta)
        assert max(_pair_deltas(p, q, 3, 2.0, b.upper)) <= delta <= max(_pair_deltas(p, q, 3, 2.0, b.lower)), b
    assert len(verdicts) == 2  # the mirror check was consulted by both epsilon queries
    if p[0] > q[0]:  # the add direction decides: it is never ruled out
        assert not any(verdicts)
    monkeypatch.setattr(search, "_mirror_below", lambda *a: False)
    monkeypatch.setattr(search, "mirror_delta_upper", lambda *a, **k: math.inf)
    reference = _pair_ledger(p, q)
    for key, b in answers.items():
        other = reference.delta_bounds(key) if key > 0.1 else reference.epsilon_bounds(key)
        assert max(b.lower, other.lower) <= min(b.upper, other.upper), (key, b, other)


# ---------------------------------------------------------------- mixed ledgers: mirror on against mirror off


def _mixed_ledgers():
    from dpledger.mechanisms import RandomizedResponse
    from dpledger.mechanisms.fixed_size_sampling import SampledWithoutReplacement

    subsampled = PoissonSubsampled(GaussianMechanism(sigma=1.0), 0.01)
    light = PoissonSubsampled(GaussianMechanism(sigma=2.0), 1e-3)  # cut laws (q <= CUT_MAX_SAMPLING)
    return {
        "gaussian + subsampled gaussian + rr": [(GaussianMechanism(sigma=3.0), 1), (subsampled, 100),
                                                (RandomizedResponse(p=0.6), 3)],
        "fixed-size sampling + cut subsampled gaussian": [
            (SampledWithoutReplacement(GaussianMechanism(sigma=1.5), batch_size=100, dataset_size=10_000), 300),
            (light, 30)],
        "subsampled gaussian + subsampled rr": [(subsampled, 50),
                                                (PoissonSubsampled(RandomizedResponse(p=0.9), 0.1), 20)],
        "cut subsampled gaussian + asymmetric pair": [(light, 100),
                                                      (DiscretePairMechanism(np.log([0.9, 0.1]),
                                                                             np.log([0.6, 0.4])), 1)],
    }


@pytest.mark.parametrize("name", sorted(_mixed_ledgers()))
def test_mixed_ledgers_answer_as_with_the_mirror_and_the_cut_delta_laws_off(monkeypatch, name):
    """Epsilon at 1e-5 and delta at 0.3 and 50 (where ``e^eps`` makes the mirror's identity cancel catastrophically)
    of mixed ledgers (Gaussian, Poisson- and fixed-size-subsampled Gaussians, subsampled randomized response, an
    asymmetric discrete pair), against the same queries with the mirror check off and whole laws: the intervals
    meet."""
    entries = _mixed_ledgers()[name]

    def ledger():
        accountant = FourierAccountant()
        for mechanism, count in entries:
            accountant.compose(mechanism, count)
        return accountant

    def answers():
        accountant = ledger()
        return [accountant.epsilon_bounds(1e-5), accountant.delta_bounds(0.3), accountant.delta_bounds(50.0)]

    verdicts = []
    original = search._mirror_below
    monkeypatch.setattr(search, "_mirror_below", lambda *a: verdicts.append(original(*a)) or verdicts[-1])
    first = answers()
    assert verdicts  # the mirror check was consulted
    monkeypatch.setattr(search, "_mirror_below", lambda *a: False)
    monkeypatch.setattr(search, "mirror_delta_upper", lambda *a, **k: math.inf)
    monkeypatch.setattr(fourier_accountant, "DELTA_CUT_GUESS", 0.0)
    for b, other in zip(first, answers()):
        assert max(b.lower, other.lower) <= min(b.upper, other.upper), (name, b, other)
