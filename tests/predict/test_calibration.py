"""``predict.calibration.private_knn_noise``: the noise meets the target in the worst case and is nearly minimal.

The worst case is priced independently here (the RDP accountant on the same mechanisms, composed entry by entry),
and the classifier run with the calibrated noise must report a guarantee within the target.
"""

import numpy as np
import pytest

from dpledger.accountants import RDPAccountant
from dpledger.mechanisms import PoissonSubsampled
from dpledger.mechanisms.noisy_aggregation import NoisyArgmax
from dpledger.mechanisms.noisy_screening import NoisyScreening, subsampled_screening
from dpledger.predict.calibration import PRIVATE_KNN_RATIO, private_knn_noise
from dpledger.predict.private_knn import PrivateKNNClassifier


def worst_case(sigma, *, n_queries, k, p, threshold, n_classes, delta=1e-5):
    acc = RDPAccountant()
    if threshold is not None:
        screen = NoisyScreening(k=k, threshold=threshold, sigma=PRIVATE_KNN_RATIO * sigma, num_classes=n_classes)
        acc.compose(subsampled_screening(screen, p), count=n_queries)
    acc.compose(PoissonSubsampled(NoisyArgmax(sigma=sigma), sampling_probability=p), count=n_queries)
    return acc.get_epsilon(delta)


@pytest.mark.parametrize("threshold", [18.0, None])
def test_private_knn_noise_is_the_worst_case_and_nearly_minimal(threshold):
    kwargs = dict(n_queries=100, k=30, p=0.3, threshold=threshold, n_classes=10)
    sigma = private_knn_noise(epsilon=2.0, delta=1e-5, n_queries=100, k=30, sampling_probability=0.3,
                              threshold=threshold, n_classes=10)
    assert worst_case(sigma, **kwargs) <= 2.0 < worst_case(sigma * (1 - 1e-3), **kwargs)


def test_screening_costs_noise():
    common = dict(epsilon=2.0, delta=1e-5, n_queries=100, sampling_probability=0.3)
    assert private_knn_noise(threshold=18.0, k=30, n_classes=10, **common) > private_knn_noise(threshold=None,
                                                                                               **common)


def test_the_classifier_run_with_the_calibrated_noise_meets_the_target():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(200, 3))
    y = rng.integers(0, 4, 200)
    sigma = private_knn_noise(epsilon=3.0, delta=1e-5, n_queries=50, k=20, sampling_probability=0.4,
                              threshold=12.0, n_classes=4)
    clf = PrivateKNNClassifier(k=20, sampling_probability=0.4, threshold=12.0, sigma_vote=sigma,
                               sigma_screen=PRIVATE_KNN_RATIO * sigma, n_classes=4, random_state=0).fit(X, y)
    clf.predict(rng.normal(size=(50, 3)))
    report = clf.privacy_report(1e-5)
    assert report.bound == "upper bound" and report.epsilon <= 3.0
    assert report.epsilon == pytest.approx(3.0, rel=1e-3)  # every query charged: the worst case is what is charged


def test_ratio_and_search_options():
    common = dict(epsilon=1.0, delta=1e-5, n_queries=200, sampling_probability=0.2, threshold=None)
    coarse = private_knn_noise(rtol=1e-2, initial=(1.0, 100.0), **common)
    fine = private_knn_noise(**common)
    assert fine <= coarse <= fine * (1 + 2e-2)  # both feasible; the finer bracket is at most as loose


@pytest.mark.parametrize(
    "kwargs, error, match",
    [
        (dict(threshold=18.0, k=None, n_classes=10), ValueError, "`k` and `n_classes` of private_knn_noise are"),
        (dict(threshold=18.0, k=30, n_classes=None), ValueError, "are required with a screening `threshold`"),
        (dict(threshold=None, n_queries=0), ValueError, "`n_queries` of private_knn_noise must be at least 1"),
        (dict(threshold=None, n_queries=2.5), TypeError, "`n_queries` of private_knn_noise must be an integer"),
        (dict(threshold=None, ratio=0.0), ValueError, "`ratio` of private_knn_noise must be positive"),
    ],
)
def test_invalid_arguments(kwargs, error, match):
    arguments = {**dict(epsilon=1.0, delta=1e-5, n_queries=10, sampling_probability=0.2), **kwargs}
    with pytest.raises(error, match=match):
        private_knn_noise(**arguments)
