"""The first-order part of split Laplace ledgers priced in closed form (accountants._laplace_first_order): one
continuous Laplace run's profile against mpmath quadrature, the second-order rest's decay bound against mpmath, and
whole ledgers against the earlier path (the whole rest inverted), which the new one must agree with."""

import math

import mpmath as mp
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dpledger.accountants import FourierAccountant, _fourier_atoms
from dpledger.accountants._fourier_atoms import _second_sup, laplace_split
from dpledger.accountants._laplace_first_order import continuous_profile
from dpledger.accountants.report import BoundKind
from dpledger.mechanisms import LaplaceMechanism, PoissonSubsampled, PureDPMechanism, RandomizedResponse
from tests.oracles import closed_form_mgf as oracle


def _profile_mpmath(c, t):
    """``int (1 - e^(c - L))_+ e^((L - t) / 2) / 4 dL`` over ``(-t, t)`` at 40 digits (the continuous part's density
    integrated directly)."""
    with mp.workdps(40):
        c, t = mp.mpf(c), mp.mpf(t)
        lo = max(c, -t)
        if lo >= t:
            return mp.mpf(0)
        return mp.quad(lambda x: (1 - mp.exp(c - x)) * mp.exp((x - t) / 2) / 4, [lo, t])


@settings(max_examples=60, deadline=None)
@given(st.floats(1e-3, 20.0), st.floats(-2.5, 1.2))
def test_continuous_profile_against_quadrature(t, where):
    c = where * t
    value, rel = continuous_profile(np.array([c]), t)
    exact = _profile_mpmath(c, t)
    assert abs(value[0] - exact) <= rel[0] * exact + 1e-300


def test_continuous_profile_is_the_laplace_mass_far_below():
    # far below -t every continuous outcome counts fully (1 - e^(c - L) -> 1): the part's mass (1 - e^-t) / 2
    value, _ = continuous_profile(np.array([-60.0]), 0.7)
    assert value[0] == pytest.approx(-math.expm1(-0.7) / 2.0, rel=1e-15)
    assert continuous_profile(np.array([0.7, 5.0]), 0.7)[0].tolist() == [0.0, 0.0]


@settings(max_examples=15, deadline=None)
@given(st.floats(0.2, 5.0), st.sampled_from([2, 5, 40]), st.sampled_from([0.25, 1.0, 3.0]),
       st.floats(1.0, 200.0))
def test_second_order_sup_bounds_the_rest(scale, n, kappa, u_min):
    splits = laplace_split(FourierAccountant().compose(LaplaceMechanism(scale=scale), n)._compile())
    ((_, split),) = splits
    assert split.sup.func is _second_sup
    bound = split.sup(kappa, u_min)
    t = LaplaceMechanism(scale=scale).laplace_loss_ratio()
    for u in (u_min, 1.5 * u_min, 4.0 * u_min):
        exact = oracle.log_laplace_second_order(oracle.mpc(kappa + 1j * u), [(t, n)])
        assert float(mp.re(exact)) <= bound


def _ledgers():
    return [
        [(LaplaceMechanism(scale=2.0), 2)],
        [(LaplaceMechanism(scale=5.0), 25)],
        [(LaplaceMechanism(scale=1.0), 5), (RandomizedResponse(p=0.7), 30)],
        [(LaplaceMechanism(scale=3.0), 3), (LaplaceMechanism(scale=0.8), 2), (PureDPMechanism(epsilon=0.2), 40)],
        [(LaplaceMechanism(scale=2.0), 4), (PoissonSubsampled(RandomizedResponse(p=0.8), 0.2), 50)],
        [(LaplaceMechanism(scale=4.0), 1), (PureDPMechanism(epsilon=0.6), 300)],
    ]


def _accountant(entries):
    acc = FourierAccountant()
    for m, n in entries:
        acc.compose(m, n)
    return acc


@pytest.mark.parametrize("entries", _ledgers(), ids=range(len(_ledgers())))
def test_ledgers_agree_with_the_whole_rest_inverted(monkeypatch, entries):
    new = _accountant(entries)
    assert all(split.atoms.__class__.__name__ == "ExactParts" for _, split in new._laplace_split())
    eps_new, epsilon = new.epsilon_bounds(1e-6), None
    epsilon = 0.5 * eps_new.upper
    delta_new = new.delta_bounds(epsilon)
    assert new.bound_kind is BoundKind.UPPER
    monkeypatch.setattr(_fourier_atoms, "FIRST_ORDER_MAX_OUTCOMES", 0)  # the whole rest inverted, as before
    monkeypatch.setattr(_fourier_atoms, "FIRST_ORDER_MAX_OUTCOMES_ALONE", 0)
    old = _accountant(entries)
    assert all(split.atoms.__class__.__name__ == "TwoPointLedger" for _, split in old._laplace_split())
    eps_old, delta_old = old.epsilon_bounds(1e-6), old.delta_bounds(epsilon)
    for a, b in ((eps_new, eps_old), (delta_new, delta_old)):
        assert a.lower <= b.upper and b.lower <= a.upper, (entries, a, b)
        assert a.upper - a.lower <= 1e-6 * a.upper


def test_the_split_with_a_tail_group_only_where_the_atoms_weigh():
    """Beyond MAX_ATOMS composed atoms (a tail group needed), the split is made only where the all-atom part's mass
    is above e^-40: Laplace x 9 + x 1,825 + pure DP x 1,259 (atom mass ~e^-650) is inverted whole, as before the
    tail group existed (8 ms; 50 ms split); two Laplace runs with 3,000 two-point runs (mass 0.49) are split."""
    heavy = _accountant([(LaplaceMechanism(scale=12.604651734550634), 9),
                         (LaplaceMechanism(scale=1.0906264905264118), 1825), (PureDPMechanism(epsilon=0.0858), 1259)])
    assert heavy._laplace_split() is None
    bounds = heavy.epsilon_bounds(1e-5)
    assert heavy.bound_kind is BoundKind.UPPER and bounds.upper - bounds.lower <= 1e-6 * bounds.upper
    light = _accountant([(LaplaceMechanism(scale=1.0), 2), (RandomizedResponse(p=0.7), 1500),
                         (PureDPMechanism(epsilon=0.05), 1500)])
    assert light._laplace_split() is not None
