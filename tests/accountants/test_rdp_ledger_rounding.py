"""The RDP ledger's sums are rounded up (issue 12 item 2: every upper bound rounded up after all float error).

``RDPAccountant`` adds ``count * rdp`` over the ledger; each product and each partial sum of float64 values can
round down by half an ulp. The exact value of that sum (the composed RDP bound, Mironov 2017 Prop 1, taken from the
mechanisms' own float curves) is computed here in rational arithmetic, and the accountant's total must be at or
above it, within a few ulps.
"""

import fractions

import mpmath as mp
import numpy as np
from hypothesis import example, given, settings
from hypothesis import strategies as st

from dpledger.accountants import RDPAccountant
from dpledger.mechanisms import DiscretePairMechanism, GaussianMechanism, LaplaceMechanism, RandomizedResponse
from dpledger.mechanisms._logmath import add_up
from dpledger.mechanisms.composition import composed_delta

F = fractions.Fraction
ORDERS = np.array([1.5, 2.0, 3.0, 7.5, 32.0, 300.0])


def _exact_total(ledger, orders):
    return [sum((F(count) * F(float(m.rdp(a))) for m, count in ledger), F(0)) for a in orders]


def _check(ledger):
    acc = RDPAccountant(orders=ORDERS)
    for m, count in ledger:
        acc.compose(m, count)
    total = np.atleast_1d(acc.rdp(ORDERS))
    for got, exact in zip(total, _exact_total(ledger, ORDERS)):
        assert F(float(got)) >= exact
        assert float(got) <= float(exact) * (1 + 16 * len(ledger) * np.finfo(float).eps) + 1e-300
    grid, pure = acc._grid_total()
    for got, exact in zip(grid, _exact_total(ledger, ORDERS)):
        assert F(float(got)) >= exact
    pures = [float(m.rdp(np.inf)) for m, _ in ledger]
    if all(np.isfinite(pures)):
        assert F(pure) >= sum((F(count) * F(e) for e, (_, count) in zip(pures, ledger)), F(0))
    else:
        assert pure == np.inf


def test_known_ledger_whose_nearest_sum_is_below_the_exact_one():
    # Summed to nearest (as the accountant did), the total at order 2 is below the exact sum of the three curves
    # (checked on the plain float sum, so this test fails if the accountant rounds to nearest).
    ledger = [(GaussianMechanism(sigma=2.8), 16), (GaussianMechanism(sigma=4.78), 19),
              (LaplaceMechanism(scale=1.15), 5)]
    naive = 0.0
    for m, count in ledger:
        naive = naive + count * float(m.rdp(2.0))
    exact = sum((F(count) * F(float(m.rdp(2.0))) for m, count in ledger), F(0))
    assert F(naive) < exact  # the defect the accountant must not have
    _check(ledger)


mechanism = st.one_of(
    st.floats(0.3, 100.0).map(lambda s: GaussianMechanism(sigma=s)),
    st.floats(0.05, 50.0).map(lambda b: LaplaceMechanism(scale=b)),
    st.floats(0.5001, 0.999).map(lambda p: RandomizedResponse(p=p)),
)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(mechanism, st.integers(1, 10**6)), min_size=1, max_size=6, unique_by=lambda t: t[0]))
@example([(GaussianMechanism(sigma=2.8), 16), (GaussianMechanism(sigma=4.78), 19), (LaplaceMechanism(scale=1.15), 5)])
def test_ledger_total_at_or_above_the_exact_sum(ledger):
    _check(ledger)


def test_charged_delta_at_or_above_the_exact_product():
    # 1 - prod (1 - delta_m)^count for two approximate pairs composed many times, against mpmath at 60 digits.
    mp.mp.dps = 60
    pairs = [
        (DiscretePairMechanism(np.log([0.6, 0.4 - 3e-10]), np.log([0.4, 0.6])), 977),
        (DiscretePairMechanism(np.log([0.5, 0.5 - 7e-13]), np.log([0.5, 0.5])), 123457),
    ]
    acc = RDPAccountant()
    exact_keep = mp.mpf(1)
    for m, count in pairs:
        acc.compose(m, count)
        exact_keep *= (1 - mp.mpf(m.approximate()[1])) ** count
    assert mp.mpf(acc.charged_delta) >= 1 - exact_keep
    assert acc.charged_delta <= float(1 - exact_keep) * (1 + 1e-13)


def test_add_up_is_the_smallest_float_at_or_above_the_sum():
    rng = np.random.default_rng(12345)
    a = rng.standard_normal(2000) * 10.0 ** rng.integers(-30, 30, 2000)
    b = rng.standard_normal(2000) * 10.0 ** rng.integers(-30, 30, 2000)
    for x, y, s in zip(a, b, add_up(a, b)):
        exact = F(float(x)) + F(float(y))
        assert F(float(s)) >= exact
        assert F(float(np.nextafter(s, -np.inf))) < exact or F(float(s)) == exact
    assert add_up(np.inf, 1.0) == np.inf and add_up(-1e308, -1e308) == -np.finfo(float).max
    assert add_up(0.5, 0.25) == 0.75


def test_composed_delta_at_or_above_the_exact_product():
    mp.mp.dps = 60
    cases = [[(3e-10, 977), (7e-13, 123457)], [(0.3, 5)], [(1e-300, 10**6)], [(0.0, 4), (2.5e-5, 1)]]
    for pairs in cases:
        exact = -mp.expm1(mp.fsum(c * mp.log1p(-mp.mpf(d)) for d, c in pairs))
        got = composed_delta(pairs)
        assert mp.mpf(got) >= exact and got <= float(exact) * (1 + 1e-13) + 1e-320
    assert composed_delta([(0.0, 3)]) == 0.0 and composed_delta([(1.0, 1), (0.1, 2)]) == 1.0
