"""dp_accounting's fixed-size sampling events: SampledWithoutReplacementDpEvent (thesis Thm 3.3.5(2),
add-or-remove-one) and SampledWithReplacementDpEvent (a dominating pair for a Gaussian base, RDP only otherwise)
are accepted."""

import numpy as np
import pytest

dpa = pytest.importorskip("dp_accounting")
from dp_accounting import dp_event as ev  # noqa: E402
from dp_accounting.rdp import rdp_privacy_accountant as dpa_rdp  # noqa: E402

from dpledger.accountants import RDPAccountant  # noqa: E402
from dpledger.accountants.adapters import (  # noqa: E402
    DPAccountingAccountant,
    UnsupportedTranslationError,
    from_dp_event,
    to_dp_event,
)
from dpledger.mechanisms import (  # noqa: E402
    GaussianMechanism,
    PoissonSubsampled,
    SampledWithoutReplacement,
    SampledWithReplacement,
)


def test_without_replacement_event_translates_to_the_combinator_and_back():
    event = ev.SampledWithoutReplacementDpEvent(60_000, 256, ev.GaussianDpEvent(1.1))
    m = from_dp_event(event)
    assert m == SampledWithoutReplacement(GaussianMechanism(sigma=1.1), batch_size=256, dataset_size=60_000)
    assert to_dp_event(m) == event
    # a tree of Gaussians is merged, as under Poisson sampling
    tree = ev.SampledWithoutReplacementDpEvent(
        100, 10, ev.ComposedDpEvent([ev.GaussianDpEvent(2.0), ev.GaussianDpEvent(2.0)]))
    assert from_dp_event(tree).mechanism.sigma == pytest.approx(2.0 ** 0.5, rel=1e-15)
    assert from_dp_event(ev.SampledWithoutReplacementDpEvent(100, 0, ev.GaussianDpEvent(1.0))).rdp(2.0) == 0.0


@pytest.mark.parametrize("bad", [(10, 11), (0, 0), (10, 10)])
def test_without_replacement_event_with_impossible_sizes_is_refused(bad):
    n, m = bad
    with pytest.raises(ValueError, match="sample_size"):
        from_dp_event(ev.SampledWithoutReplacementDpEvent(n, m, ev.GaussianDpEvent(1.0)))


def test_the_accountant_composes_it_under_add_or_remove_and_it_is_the_poisson_pair_at_b_over_n():
    event = ev.SampledWithoutReplacementDpEvent(10_000, 100, ev.GaussianDpEvent(1.1))
    acc = DPAccountingAccountant().compose(event, 1000)
    poisson = RDPAccountant().compose(PoissonSubsampled(GaussianMechanism(sigma=1.1), sampling_probability=0.01),
                                      count=1000)
    assert acc.get_epsilon(1e-5) == poisson.get_epsilon(1e-5)


def test_replace_one_curve_is_never_below_dp_accountings_for_the_same_event_where_uncapped():
    """dp_accounting composes this event only under REPLACE_ONE (WBK19 Thm 27 for the Gaussian); dpledger's
    replace-one curve is WBK19 Thm 9 (any base), capped by the unsampled curve."""
    orders = np.array([2.0, 3.0, 5.0, 10.0, 20.0])
    for sigma, n, m in [(1.1, 10_000, 100), (0.8, 1000, 100), (4.0, 64, 32)]:
        event = ev.SampledWithoutReplacementDpEvent(n, m, ev.GaussianDpEvent(sigma))
        theirs = dpa_rdp._compute_rdp_sample_wor_gaussian(m / n, sigma, orders)
        ours = from_dp_event(event).replace_one_rdp(orders)
        floor = np.minimum(theirs, GaussianMechanism(sigma=sigma).rdp(orders))
        assert np.all(ours >= floor * (1 - 1e-12))


def test_with_replacement_event_translates_and_a_base_without_group_privacy_is_refused():
    event = ev.SampledWithReplacementDpEvent(100, 10, ev.GaussianDpEvent(1.0))
    m = from_dp_event(event)
    assert m == SampledWithReplacement(GaussianMechanism(sigma=1.0), batch_size=10, dataset_size=100)
    assert to_dp_event(m) == event
    assert DPAccountingAccountant().supports(event)
    bad = ev.SampledWithReplacementDpEvent(100, 10, ev.ZCDpEvent(0.1))
    with pytest.raises(UnsupportedTranslationError, match=r"SampledWithReplacementDpEvent \(at root\).*group"):
        from_dp_event(bad)


def test_the_fourier_method_composes_with_replacement_inside_self_composed_events():
    """DP-SGD's usual event, SelfComposed(SampledWithReplacement(Gaussian)): the Fourier method unfolds the
    composition and composes the proven pair (its loss buckets), exactly as the Fourier accountant does."""
    from dpledger.accountants import FourierAccountant

    event = ev.SelfComposedDpEvent(ev.SampledWithReplacementDpEvent(1000, 10, ev.GaussianDpEvent(2.0)), 50)
    acc = DPAccountingAccountant(method="fourier")
    assert acc.supports(event)
    acc.compose(ev.ComposedDpEvent([event, ev.GaussianDpEvent(20.0)]), count=2)
    m = SampledWithReplacement(GaussianMechanism(sigma=2.0), batch_size=10, dataset_size=1000)
    direct = FourierAccountant().compose(m, count=100).compose(GaussianMechanism(sigma=20.0), count=2)
    assert acc.get_epsilon(1e-5) == pytest.approx(direct.get_epsilon(1e-5), rel=1e-12)
