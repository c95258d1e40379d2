"""FourierAccountant.epsilon_floor: a cheap proven lower bound on the reported epsilon (one run's exact profile), which
calibration asks first so that probes of little noise are ruled out at once (red5 finding 6: a sigma 0.1 probe of
q 0.01 x 100 took 8.45 s)."""

from hypothesis import given, settings
from hypothesis import strategies as st

from dpledger.accountants import FourierAccountant
from dpledger.accountants.calibration import calibrate
from dpledger.mechanisms import GaussianMechanism, LaplaceMechanism, PoissonSubsampled, RandomizedResponse


@settings(max_examples=12, deadline=None)
@given(st.floats(0.5, 5.0), st.floats(1e-3, 0.5), st.sampled_from([1, 3, 30]), st.sampled_from([1e-3, 1e-6]))
def test_the_floor_lies_below_the_reported_interval(sigma, q, count, delta):
    acc = FourierAccountant().compose(PoissonSubsampled(GaussianMechanism(sigma=sigma), q), count)
    floor = acc.epsilon_floor(delta)
    bounds = acc.epsilon_bounds(delta)
    assert 0.0 <= floor <= bounds.upper
    if count == 1:  # one run: the floor is the one-run interval's own lower end
        assert floor == bounds.lower


def test_a_ledger_with_another_mechanism_keeps_the_largest_one_run_floor():
    acc = FourierAccountant().compose(GaussianMechanism(sigma=3.0), 2).compose(RandomizedResponse(p=0.6), 5)
    one = FourierAccountant().compose(GaussianMechanism(sigma=3.0), 1).epsilon_bounds(1e-5)
    assert acc.epsilon_floor(1e-5) == one.lower <= acc.epsilon_bounds(1e-5).upper
    laplace = FourierAccountant().compose(LaplaceMechanism(scale=1.0), 3)  # Laplace: an exact one-run profile too
    one = FourierAccountant().compose(LaplaceMechanism(scale=1.0), 1).epsilon_bounds(1e-5)
    assert laplace.epsilon_floor(1e-5) == one.lower <= laplace.epsilon_bounds(1e-5).upper
    assert FourierAccountant().compose(RandomizedResponse(p=0.6), 3).epsilon_floor(1e-5) == 0.0  # no exact profile


def test_calibration_rules_out_little_noise_by_the_floor():
    acc = FourierAccountant().compose(PoissonSubsampled(GaussianMechanism(sigma=0.1), 0.01), 100)
    assert acc.epsilon_floor(1e-5) > 8.0  # so calibrate never inverts this probe
    sigma = calibrate(lambda s: PoissonSubsampled(GaussianMechanism(sigma=s), 0.01), 3.0, 1e-5, count=100,
                      accountant=FourierAccountant)
    report = FourierAccountant().compose(PoissonSubsampled(GaussianMechanism(sigma=sigma), 0.01), 100).epsilon_report(
        1e-5)
    assert report.epsilon <= 3.0 and report.proven
