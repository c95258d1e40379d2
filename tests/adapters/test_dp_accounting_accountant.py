"""DPAccountingAccountant: dp_accounting's PrivacyAccountant interface with dpledger's numbers."""

import warnings

import numpy as np
import pytest
from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, rule

dpa = pytest.importorskip("dp_accounting")
from dp_accounting import dp_event as ev  # noqa: E402

from dpledger.accountants import FourierAccountant, RDPAccountant  # noqa: E402
from dpledger.accountants.adapters import DPAccountingAccountant, from_dp_event  # noqa: E402
from dpledger.mechanisms import GaussianMechanism, PoissonSubsampled  # noqa: E402
from dpledger.mechanisms.errors import DPLedgerWarning  # noqa: E402

SGD = ev.PoissonSampledDpEvent(0.01, ev.GaussianDpEvent(1.1))


def test_is_a_dp_accounting_privacy_accountant():
    acc = DPAccountingAccountant()
    assert isinstance(acc, dpa.PrivacyAccountant)
    assert acc.neighboring_relation is dpa.NeighboringRelation.ADD_OR_REMOVE_ONE
    assert acc.ledger == ev.NoOpDpEvent()
    assert acc.get_epsilon(1e-5) == 0.0


def test_same_numbers_as_the_direct_api():
    acc = DPAccountingAccountant().compose(SGD, 10_000).compose(ev.LaplaceDpEvent(20.0), 3)
    direct = RDPAccountant().compose(
        PoissonSubsampled(GaussianMechanism(sigma=1.1), sampling_probability=0.01), count=10_000
    ).compose(from_dp_event(ev.LaplaceDpEvent(20.0)), count=3)
    assert acc.get_epsilon(1e-5) == direct.get_epsilon(1e-5)
    assert acc.get_delta(4.0) == direct.get_delta(4.0)
    assert acc.epsilon_report(1e-5) == direct.epsilon_report(1e-5)
    assert acc.ledger == ev.ComposedDpEvent(
        [ev.SelfComposedDpEvent(SGD, 10_000), ev.SelfComposedDpEvent(ev.LaplaceDpEvent(20.0), 3)]
    )


def test_published_dp_sgd_value_and_dp_accounting_own_rdp_accountant():
    # The RDPAccountant docstring's published value (q = 0.01, sigma = 1.1, 10,000 steps, delta = 1e-5): 5.63.
    # dp_accounting's RdpAccountant uses the same conversion on a fixed order grid; ours optimises over real
    # orders with the exact fractional-order series, so it is never larger.
    ours = DPAccountingAccountant().compose(SGD, 10_000).get_epsilon(1e-5)
    theirs = dpa.rdp.RdpAccountant().compose(SGD, 10_000).get_epsilon(1e-5)
    assert round(ours, 2) == 5.63
    assert ours <= theirs


def test_fourier_method_gives_the_fourier_accountant_numbers():
    event = ev.SelfComposedDpEvent(ev.GaussianDpEvent(30.0), 240)
    acc = DPAccountingAccountant(method="fourier").compose(event)
    direct = FourierAccountant().compose(from_dp_event(event))
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # closed-form characteristic function: a proven bound, no warning
        assert acc.get_epsilon(1e-10) == direct.get_epsilon(1e-10)
    counted = FourierAccountant().compose(GaussianMechanism(sigma=30.0), count=240)
    # the same law; a composed mechanism's enclosure carries its own rounding bound, which moves the certified root a
    # little (3e-12 relative here)
    assert acc.get_epsilon(1e-10) == pytest.approx(counted.get_epsilon(1e-10), rel=1e-10)
    assert round(acc.get_epsilon(1e-10), 6) == 3.207781  # exact value of this composition (published check)
    assert acc.epsilon_report(1e-10).bound == "upper bound"


def test_fourier_estimates_are_labelled_and_warned_once(monkeypatch):
    # the subsampled Laplace's characteristic function is proven (issue 14); withdrawn with its loss buckets, it
    # comes from quadrature: an estimate
    from dpledger.mechanisms import LaplaceMechanism

    sampled_laplace = ev.PoissonSampledDpEvent(0.1, ev.LaplaceDpEvent(1.0))
    proven = DPAccountingAccountant(method="fourier").compose(sampled_laplace, 100)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert proven.epsilon_report(1e-5).bound == "upper bound"
        assert proven.get_epsilon(1e-5) <= DPAccountingAccountant().compose(sampled_laplace, 100).get_epsilon(1e-5)
    monkeypatch.setattr(LaplaceMechanism, "has_subsampled_loss_buckets", False)
    monkeypatch.setattr(LaplaceMechanism, "has_subsampled_enclosure", False)
    monkeypatch.setattr(LaplaceMechanism, "subsampled_loss_split", lambda self, q: None)
    acc = DPAccountingAccountant(method="fourier").compose(sampled_laplace, 100)
    with pytest.warns(DPLedgerWarning, match="estimate, not a proven upper bound"):
        eps = acc.get_epsilon(1e-5)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert acc.get_epsilon(1e-5) == eps
    assert acc.epsilon_report(1e-5).bound == "estimate"
    assert eps <= DPAccountingAccountant().compose(sampled_laplace, 100).get_epsilon(1e-5)


def test_fourier_on_dp_sgd_is_a_proven_upper_bound_without_warning():
    acc = DPAccountingAccountant(method="fourier").compose(SGD, 100)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        eps = acc.get_epsilon(1e-5)
    assert acc.epsilon_report(1e-5).bound == "upper bound"
    assert eps <= DPAccountingAccountant().compose(SGD, 100).get_epsilon(1e-5)


def test_non_private_events_give_no_guarantee_in_both_methods():
    for method in ("rdp", "fourier"):
        acc = DPAccountingAccountant(method=method).compose(ev.GaussianDpEvent(5.0)).compose(ev.NonPrivateDpEvent())
        assert acc.get_epsilon(1e-5) == np.inf
        assert acc.get_delta(10.0) == 1.0


def test_pure_epsilon_at_delta_zero():
    acc = DPAccountingAccountant().compose(ev.LaplaceDpEvent(2.0), 4)
    assert acc.get_epsilon(0.0) == pytest.approx(2.0, rel=1e-12)
    assert DPAccountingAccountant().compose(SGD).get_epsilon(0.0) == np.inf


def test_unsupported_event_raises_dp_accounting_error_and_leaves_state_unchanged():
    acc = DPAccountingAccountant().compose(SGD, 10)
    before = (acc.get_epsilon(1e-5), acc.ledger)
    fixed_size = ev.SampledWithReplacementDpEvent(10, 2, ev.ZCDpEvent(0.1))  # no group privacy known for zCDP
    bad = ev.ComposedDpEvent([ev.GaussianDpEvent(1.0), fixed_size])
    assert not acc.supports(bad)
    with pytest.raises(dpa.UnsupportedEventError, match=r"SampledWithReplacementDpEvent \(at root > ComposedDpEvent"):
        acc.compose(bad)
    assert (acc.get_epsilon(1e-5), acc.ledger) == before


def test_fourier_refuses_mechanisms_without_a_characteristic_function():
    acc = DPAccountingAccountant(method="fourier")
    assert not acc.supports(ev.ZCDpEvent(0.1))
    with pytest.raises(dpa.UnsupportedEventError, match="use method='rdp'"):
        acc.compose(ev.ZCDpEvent(0.1))
    assert DPAccountingAccountant().supports(ev.ZCDpEvent(0.1))


@pytest.mark.parametrize(
    "kwargs,error,match",
    [
        ({"method": "prv"}, ValueError, r"`method` of DPAccountingAccountant must be one of \['rdp', 'fourier'\]"),
        ({"neighboring_relation": dpa.NeighboringRelation.REPLACE_ONE}, ValueError, "ADD_OR_REMOVE_ONE"),
        ({"orders": [0.5]}, ValueError, "must be > 1"),
    ],
)
def test_invalid_construction(kwargs, error, match):
    with pytest.raises(error, match=match):
        DPAccountingAccountant(**kwargs)


def test_invalid_calls():
    acc = DPAccountingAccountant()
    with pytest.raises(TypeError, match="must be a DpEvent"):
        acc.compose(GaussianMechanism(sigma=1.0))
    with pytest.raises(ValueError, match="`count` of DPAccountingAccountant.compose must be at least 1"):
        acc.compose(SGD, 0)
    with pytest.raises(ValueError, match=r"`target_delta` .* must be in \[0, 1\)"):
        acc.get_epsilon(1.5)
    with pytest.raises(ValueError, match="`target_epsilon`.*non-negative"):
        acc.get_delta(-1.0)


# ----------------------------------------------------------------------------------------- stateful
EVENTS = [
    SGD,
    ev.GaussianDpEvent(4.0),
    ev.LaplaceDpEvent(10.0),
    ev.SelfComposedDpEvent(ev.GaussianDpEvent(8.0), 3),
    ev.NoOpDpEvent(),
    ev.SampledWithoutReplacementDpEvent(100, 10, ev.GaussianDpEvent(1.0)),
    ev.SingleEpochTreeAggregationDpEvent(1.0, 4),  # refused
    ev.UnsupportedDpEvent(),  # refused
]


class LedgerMachine(RuleBasedStateMachine):
    """The adapter equals a dpledger RDPAccountant fed the translated events, and dp_accounting's own builder
    ledger; refused events change nothing."""

    def __init__(self):
        super().__init__()
        self.acc = DPAccountingAccountant()
        self.model = RDPAccountant()
        self.builder = dpa.DpEventBuilder()

    @rule(event=st.sampled_from(EVENTS), count=st.integers(1, 500))
    def compose(self, event, count):
        if self.acc.supports(event):
            self.acc.compose(event, count)
            self.model.compose(from_dp_event(event), count=count)
            self.builder.compose(event, count)
        else:
            with pytest.raises(dpa.UnsupportedEventError):
                self.acc.compose(event, count)

    @invariant()
    def same_as_model(self):
        assert self.acc.ledger == self.builder.build()
        assert self.acc.get_epsilon(1e-6) == self.model.get_epsilon(1e-6)


LedgerMachine.TestCase.settings = settings(max_examples=15, stateful_step_count=6, deadline=None)
TestLedgerMachine = LedgerMachine.TestCase


def test_dp_accounting_noise_calibration_with_our_accountant():
    # dp_accounting's own calibration driver, with our accountant: the noise meets the target and is never more
    # than with dp_accounting's RdpAccountant (our RDP bound is at least as tight).
    def event(sigma):
        return ev.SelfComposedDpEvent(ev.PoissonSampledDpEvent(0.01, ev.GaussianDpEvent(sigma)), 1000)

    bracket = dpa.ExplicitBracketInterval(0.3, 10.0)
    ours = dpa.calibrate_dp_mechanism(DPAccountingAccountant, event, 1.0, 1e-5, bracket_interval=bracket, tol=1e-4)
    theirs = dpa.calibrate_dp_mechanism(dpa.rdp.RdpAccountant, event, 1.0, 1e-5, bracket_interval=bracket, tol=1e-4)
    assert DPAccountingAccountant().compose(event(ours)).get_epsilon(1e-5) <= 1.0
    assert ours <= theirs + 1e-4
