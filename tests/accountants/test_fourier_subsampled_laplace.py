"""The characteristic-function accountant on Poisson-subsampled Laplace ledgers (issue 14 item 1): proven, through
the enclosure of :mod:`mechanisms.subsampled_laplace_cf`, and the reported intervals contain mpmath's exact profiles
(:mod:`tests.oracles.subsampled_laplace`)."""

import numpy as np
import pytest

from dpledger.accountants import FourierAccountant
from dpledger.accountants import _fourier_search as search
from dpledger.accountants.fourier_inversion import make_plan
from dpledger.accountants.report import BoundKind
from dpledger.mechanisms import (
    GaussianMechanism,
    LaplaceMechanism,
    PoissonSubsampled,
    RandomizedResponse,
    subsampled_laplace_cf,
)
from tests.accountants._plan_spy import record_plan_terms
from tests.oracles import privacy_profiles as pp
from tests.oracles import subsampled_laplace as oracle

CASES = [  # (scale, q, count, epsilon)
    (5.0, 0.01, 1, 0.001),
    (1.0, 0.5, 1, 0.3),
    (0.5, 0.9, 1, 0.5),
    (2.0, 0.1, 2, 0.05),
    (1.0, 0.5, 2, 0.4),
    (0.25, 0.05, 2, 0.2),
]


@pytest.mark.parametrize("scale, q, count, epsilon", CASES)
def test_delta_interval_contains_the_exact_profile(scale, q, count, epsilon):
    m = PoissonSubsampled(LaplaceMechanism(scale), q)
    fa = FourierAccountant().compose(m, count)
    b = fa.delta_bounds(epsilon)
    exact = float(oracle.delta(epsilon, m.mechanism.laplace_loss_ratio(), q, count))
    assert fa.bound_kind is BoundKind.UPPER
    assert b.lower <= exact <= b.upper
    assert b.upper - b.lower <= 2e-6 * exact + 1e-15


@pytest.mark.parametrize("scale, q, count", [(1.0, 0.5, 2), (2.0, 0.1, 2), (0.5, 0.9, 1)])
def test_epsilon_interval_contains_the_exact_epsilon(scale, q, count):
    m = PoissonSubsampled(LaplaceMechanism(scale), q)
    t = m.mechanism.laplace_loss_ratio()
    delta = 1e-3
    exact = pp.epsilon_from_profile(lambda e: oracle.delta(e, t, q, count), delta, hi=2.0 * count / scale,
                                    rtol=1e-12)
    b = FourierAccountant().compose(m, count).epsilon_bounds(delta)
    assert b.lower <= exact <= b.upper * (1.0 + 1e-12)


def test_the_split_mixes_with_laplace_and_randomized_response():
    """A ledger of a subsampled Laplace, a Laplace and randomized response (one split per direction): the proven
    interval contains the sum of the exact one-run profiles' convolution, here checked through its monotone
    relation to each part: it lies above the subsampled Laplace's own delta and the report is an upper bound."""
    m = PoissonSubsampled(LaplaceMechanism(1.0), 0.3)
    fa = FourierAccountant().compose(m, 2).compose(LaplaceMechanism(4.0), 3).compose(RandomizedResponse(p=0.55), 4)
    b = fa.delta_bounds(0.5)
    alone = FourierAccountant().compose(m, 2).delta_bounds(0.5)
    assert fa.bound_kind is BoundKind.UPPER and "atoms of the composed privacy loss" in fa.delta_report(0.5).method
    assert b.upper - b.lower <= 2e-6 * b.upper and b.lower > alone.upper


def test_reports_are_upper_bounds_through_the_enclosure(monkeypatch):
    """The label follows the proof path: inflating the enclosure's error widens the interval; a Laplace whose
    enclosure is withdrawn goes back to the privacy buckets."""
    m = PoissonSubsampled(LaplaceMechanism(1.0), 0.5)
    fa = FourierAccountant().compose(m, 2)
    assert fa.bound_kind is BoundKind.UPPER
    tight = fa.delta_bounds(0.4)
    assert "proven enclosures" in fa.delta_report(0.4).method
    real = subsampled_laplace_cf.log_g_enclosure

    def inflated(a, v, g, t):
        value, log_err = real(a, v, g, t)
        return value, np.maximum(log_err, np.real(value) + np.log(1e-4))

    monkeypatch.setattr(subsampled_laplace_cf, "log_g_enclosure", inflated)
    loose = FourierAccountant(rtol=0.9).compose(m, 2).delta_bounds(0.4)
    assert loose.upper > tight.upper * (1 + 1e-5) and loose.lower < tight.lower
    monkeypatch.setattr(subsampled_laplace_cf, "log_g_enclosure", real)

    class Unenclosed(LaplaceMechanism):
        has_subsampled_enclosure = False

        def subsampled_loss_split(self, sampling_probability):
            return None

    bucketed = FourierAccountant().compose(PoissonSubsampled(Unenclosed(1.0), 0.5), 2)
    report = bucketed.delta_report(0.4)
    assert "privacy buckets" in report.method and report.delta >= tight.lower


def test_with_a_gaussian_the_whole_law_is_inverted_and_proven():
    m = PoissonSubsampled(LaplaceMechanism(2.0), 0.2)
    fa = FourierAccountant().compose(m, 5).compose(GaussianMechanism(3.0), 2)
    report = fa.epsilon_report(1e-6)
    assert fa.bound_kind is BoundKind.UPPER and "proven enclosures" in report.method
    b = fa.epsilon_bounds(1e-6)
    assert b.upper - b.lower <= 2e-6 * b.upper
    # more noise elsewhere can only lower epsilon; no Gaussian at all can only lower it too
    assert FourierAccountant().compose(m, 5).epsilon_bounds(1e-6).lower <= b.upper


def test_bad_cut_is_refused():
    with pytest.raises(ValueError, match="cut"):
        LaplaceMechanism(1.0).subsampled_log_f_enclosure(1.0, np.zeros(1), 0.5, cut=3.0)


@pytest.mark.parametrize("ledger", [
    [(PoissonSubsampled(LaplaceMechanism(1.0), 0.1), 10)],
    [(PoissonSubsampled(LaplaceMechanism(2.0), 0.3), 3), (LaplaceMechanism(3.0), 2)],
    [(PoissonSubsampled(LaplaceMechanism(0.7), 0.5), 1), (PoissonSubsampled(RandomizedResponse(p=0.6), 0.2), 5)],
])
def test_first_order_pricing_agrees_with_the_whole_rest_inverted(ledger, monkeypatch):
    """The products with one continuous run priced in closed form (the profile) and only the rest inverted, against
    the whole rest inverted (no first-order pricing): both proven, so their intervals must overlap."""
    from dpledger.accountants import _fourier_atoms

    def build():
        fa = FourierAccountant()
        for m, n in ledger:
            fa = fa.compose(m, n)
        return fa

    priced = build().delta_bounds(0.5)
    monkeypatch.setattr(_fourier_atoms, "FIRST_ORDER_MAX_OUTCOMES", 0)
    monkeypatch.setattr(_fourier_atoms, "FIRST_ORDER_MAX_OUTCOMES_ALONE", 0)
    whole = build().delta_bounds(0.5)
    assert priced.lower <= whole.upper and whole.lower <= priced.upper
    assert priced.upper - priced.lower <= 2e-6 * priced.upper


def test_light_atoms_try_the_whole_law_first_and_the_split_answers_where_it_fails(monkeypatch):
    """10,000 runs: the atoms weigh e^-1000, so the whole law is inverted first (the buckets gave [0.534, 0.703] here
    before); where that inversion fails, the split (the first-order ledgers too large to enumerate: the whole rest
    inverted) answers with a proven interval overlapping it."""
    from dpledger.accountants import fourier_accountant
    from dpledger.accountants.fourier_accountant import AccuracyError

    m = PoissonSubsampled(LaplaceMechanism(5.0), 0.01)
    fa = FourierAccountant().compose(m, 10_000)
    whole = fa.epsilon_bounds(1e-5)
    assert fa._laplace_split()[0][1].whole_first and fa._derived["split_used"] is False
    assert "atoms of the composed" not in fa.epsilon_report(1e-5).method
    assert 0.70 < whole.lower <= whole.upper < 0.71 and whole.upper - whole.lower <= 1e-6 * whole.upper

    def refuse(self, *args, **kwargs):
        raise AccuracyError("refused for the test")

    monkeypatch.setattr(fourier_accountant.FourierAccountant, "_inverted", refuse)
    fa = FourierAccountant().compose(m, 10_000)
    split = fa.epsilon_bounds(1e-5)
    assert fa._derived["split_used"] is True and "atoms of the composed" in fa.epsilon_report(1e-5).method
    assert split.lower <= whole.upper and whole.lower <= split.upper
    assert split.upper - split.lower <= 1e-6 * split.upper


def test_narrow_subsampled_laplace_takes_large_dampings():
    """The subsampled Laplace enclosure's range does not grow with the tilt, so its ledgers may use the dampings a
    narrow loss needs (capped at 64 before: x 100 at q 0.001, delta 1e-10, ended in the privacy buckets'
    [0.00165, 0.00495] after 8 s); the subsampled Gaussian's grows, and keeps the small cap."""
    from dpledger.accountants.fourier_inversion import MAX_DAMPING, MAX_DAMPING_CLOSED_FORM

    m = PoissonSubsampled(LaplaceMechanism(10.0), 0.001)
    assert m.log_mgf_allows_large_damping and LaplaceMechanism(1.0).log_mgf_allows_large_damping
    assert not PoissonSubsampled(GaussianMechanism(1.0), 0.001).log_mgf_allows_large_damping
    fa = FourierAccountant().compose(m, 100)
    assert fa._max_damping() == MAX_DAMPING_CLOSED_FORM
    b = fa.epsilon_bounds(1e-10)
    assert fa._derived["path"] == "inversion" and b.upper - b.lower <= 1e-6 * b.upper
    assert 0.00165 <= b.lower <= b.upper <= 0.00496
    mixed = FourierAccountant().compose(m, 100).compose(PoissonSubsampled(GaussianMechanism(2.0), 0.01), 10)
    assert mixed._max_damping() == MAX_DAMPING


def test_a_split_search_short_of_nodes_stops_after_one_round(monkeypatch):
    """Randomized response x 1000 with PS(Laplace(3.8), 0.0021) x 30 (a random sweep's ledger): every plan of the
    split search has the most nodes allowed and still misses its tolerance, so planning again (a nearby epsilon, a
    tighter tolerance) cannot help: one plan per direction, then the fallback answers (before: two rounds here,
    four of 2^20 nodes each at the default max_terms, 11 s)."""
    sizes = record_plan_terms(monkeypatch, search, "_split_plan")
    acc = FourierAccountant(max_terms=1 << 17)
    acc.compose(RandomizedResponse(p=0.69), 1000)
    acc.compose(PoissonSubsampled(LaplaceMechanism(scale=3.8), 0.0021), 30)
    bounds = acc.epsilon_bounds(1e-5)
    assert sizes == [1 << 17, 1 << 17]
    assert 0.0 < bounds.lower <= bounds.estimate <= bounds.upper


def test_short_of_nodes_asks_for_every_node_and_a_missed_tolerance():
    # sigma 0.6, q 1e-4, 10 steps at epsilon 0.66: 131,072 nodes meet 6.25e-13 (issue 14's grid)
    law = FourierAccountant().compose(PoissonSubsampled(GaussianMechanism(sigma=0.6), 1e-4), 10)._directions(1e-5)[0]
    lm, sup = law[1], law[2]
    long_plan = make_plan(lm, sup, 0.66, 6.25e-13, max_terms=1 << 20, kappa=5.0)
    assert long_plan.terms < 1 << 20 and not search._short_of_nodes(long_plan, 0.66, 6.25e-13, 1 << 20)
    capped = make_plan(lm, sup, 0.66, 6.25e-13, max_terms=1 << 16, kappa=5.0)
    assert capped.terms == 1 << 16  # short, but within the hopeless factor (TruncationLimit)
    assert search._short_of_nodes(capped, 0.66, 6.25e-13, 1 << 16)
    assert not search._short_of_nodes(capped, 0.66, 6.25e-13, 1 << 17)  # more nodes were allowed
