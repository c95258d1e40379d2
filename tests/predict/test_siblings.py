"""The two classifiers are siblings (issue 15 item 3): one base, scikit-learn's protocol (get_params, set_params,
clone, repr), ``score``, the same names and the same exception types for the same mistakes, deprecated names that
still work for one release."""

import pickle
import warnings

import numpy as np
import pytest
from sklearn.base import BaseEstimator, clone

from dpledger.predict import ABSTAIN, IndKNNClassifier, PrivateKNNClassifier
from dpledger.predict._common import NotFittedError, PrivateClassifier

C = 3


def blobs(seed=0, n_per_class=40, m=30):
    rng = np.random.default_rng(seed)
    centres = np.array([[4.0, 0.0, 1.0], [0.0, 4.0, 1.0], [-3.0, -3.0, 1.0]])
    y = np.repeat(np.arange(C), n_per_class)
    X = centres[y] + rng.normal(0.0, 0.7, (y.size, 3))
    yq = rng.integers(0, C, m)
    Q = centres[yq] + rng.normal(0.0, 0.7, (m, 3))
    return X, y, Q, yq


def ind(**kw):
    return IndKNNClassifier(**{**dict(epsilon=8.0, tau=0.8, sigma_vote=1.0, n_queries=30, min_count=3, n_classes=C,
                                      random_state=0), **kw})


def pknn(**kw):
    return PrivateKNNClassifier(**{**dict(k=10, sampling_probability=0.6, threshold=5.0, sigma_screen=2.0,
                                          sigma_vote=1.0, n_classes=C, random_state=0), **kw})


FACTORIES = {"IndKNNClassifier": ind, "PrivateKNNClassifier": pknn}
both = pytest.mark.parametrize("make", list(FACTORIES.values()), ids=list(FACTORIES))


def charged(clf):
    """What a classifier has charged so far (the filter's spends, or the ledger), for comparing twins."""
    if isinstance(clf, IndKNNClassifier):
        return clf.filter_.spent.tolist()
    return clf.accountant_.ledger


# ------------------------------------------------------------------------------------------- one base
@both
def test_one_base_and_keyword_only_constructors(make):
    clf = make()
    assert isinstance(clf, PrivateClassifier) and isinstance(clf, BaseEstimator)
    from sklearn.base import is_classifier

    assert is_classifier(clf)
    with pytest.raises(TypeError, match="keyword arguments only"):
        type(clf)(1.0, 1e-5, 0.5)


@both
def test_clone_and_set_params(make):
    X, y, Q, _ = blobs()
    clf = make().fit(X, y)
    twin = clone(clf)
    assert twin.get_params() == clf.get_params()
    assert not hasattr(twin, "n_features_in_")  # an unfitted copy: nothing of the fitted state (nor budgets) copied
    np.testing.assert_array_equal(twin.fit(X, y).predict(Q), clf.predict(Q))  # same seed: the same answers
    other = make()
    assert other.set_params(sigma_vote=0.5) is other and other.sigma_vote == 0.5
    assert clone(other).get_params()["sigma_vote"] == 0.5
    with pytest.raises(ValueError, match="Invalid parameter"):
        other.set_params(sigma_two=1.0)


@both
def test_repr_shows_the_changed_parameters(make):
    clf = make()
    text = repr(clf)
    assert text.startswith(type(clf).__name__ + "(") and "n_classes=3" in text and "random_state=0" in text
    assert repr(type(clf)()) == type(clf).__name__ + "()"
    assert eval(text, {type(clf).__name__: type(clf)}).get_params() == clf.get_params()  # noqa: S307


# ------------------------------------------------------------------------------------------------ score
@both
def test_score_is_the_accuracy_of_predict_and_is_charged_like_it(make):
    X, y, Q, yq = blobs()
    a, b = make().fit(X, y), make().fit(X, y)
    score = a.score(Q, yq)
    pred = b.predict(Q)
    assert score == pytest.approx(float(np.mean(pred == yq)), abs=0) and 0.5 < score <= 1.0
    assert charged(a) == charged(b) and a.n_queries_ == b.n_queries_ == len(Q)  # the queries were paid for
    weights = np.arange(len(Q), dtype=float)
    c = make().fit(X, y)
    assert c.score(Q, yq, sample_weight=weights) == pytest.approx(np.average(pred == yq, weights=weights))


def test_score_counts_abstentions_as_errors():
    X, y, Q, yq = blobs()
    clf = pknn(threshold=9.5, sigma_screen=0.5).fit(X, y)  # a screen that few queries pass
    twin = pknn(threshold=9.5, sigma_screen=0.5).fit(X, y)
    pred = twin.predict(Q)
    assert (pred == ABSTAIN).any()
    assert clf.score(Q, yq) == float(np.mean(pred == yq))


@both
def test_score_validates_before_answering(make):
    X, y, Q, yq = blobs()
    clf = make().fit(X, y)
    before = charged(clf), clf.n_queries_
    for args, error, match in [((Q, yq[:-1]), ValueError, "one label per row"),
                               ((Q, yq + 5), ValueError, r"labels in \[0, n_classes=3\)"),
                               ((Q[:, :2], yq), ValueError, "must have 3 features"),
                               ((Q, yq.astype(str)), TypeError, "integer class labels")]:
        with pytest.raises(error, match=match):
            clf.score(*args)
    with pytest.raises(ValueError, match="sample_weight"):
        clf.score(Q, yq, sample_weight=-np.ones(len(Q)))
    assert (charged(clf), clf.n_queries_) == before
    with pytest.raises(NotFittedError):
        make().score(Q, yq)


# ------------------------------------------------------------------------------------- deprecated names
@pytest.mark.parametrize(
    "make, old, new",
    [
        (pknn, dict(num_classes=C), dict(n_classes=C)),
        (ind, dict(sigma2=1.0), dict(sigma_vote=1.0)),
        (ind, dict(sigma1=0.9), dict(sigma_count=0.9)),
    ],
)
def test_deprecated_keywords_warn_and_still_work(make, old, new):
    X, y, Q, _ = blobs()
    base = make().get_params()
    for key in new:
        base.pop(key)
    with pytest.warns(DeprecationWarning, match=f"`{next(iter(old))}` of .* is deprecated; use `{next(iter(new))}`"):
        legacy = type(make())(**base, **old)
    current = type(make())(**base, **new)
    assert legacy.get_params() == current.get_params()
    np.testing.assert_array_equal(legacy.fit(X, y).predict(Q), current.fit(X, y).predict(Q))
    assert charged(legacy) == charged(current)
    with pytest.warns(DeprecationWarning):
        legacy.set_params(**old)
    assert legacy.get_params() == current.get_params()
    with pytest.raises(TypeError, match="give only"):
        type(make())(**base, **old, **new)


def test_positional_epsilon_and_delta_of_ind_knn_warn_and_still_work():
    X, y, Q, _ = blobs()
    params = ind().get_params()
    del params["epsilon"], params["delta"]
    with pytest.warns(DeprecationWarning) as caught:
        legacy = IndKNNClassifier(8.0, 1e-5, **params)
    assert [str(w.message) for w in caught] == [
        "passing `epsilon` of IndKNNClassifier by position is deprecated; write epsilon=8.0.",
        "passing `delta` of IndKNNClassifier by position is deprecated; write delta=1e-05.",
    ]
    current = IndKNNClassifier(epsilon=8.0, delta=1e-5, **params)
    assert legacy.get_params() == current.get_params()
    np.testing.assert_array_equal(legacy.fit(X, y).predict(Q), current.fit(X, y).predict(Q))
    with pytest.raises(TypeError, match="multiple values for argument 'epsilon'"):
        IndKNNClassifier(2.0, epsilon=2.0)


def test_deprecated_fitted_attributes_warn_and_equal_the_new_ones():
    X, y, _, _ = blobs()
    p, i = pknn().fit(X, y), ind(sigma_count=0.7).fit(X, y)
    with pytest.warns(DeprecationWarning, match="use `n_classes_`"):
        assert p.num_classes_ == p.n_classes_ == C
    with pytest.warns(DeprecationWarning, match="use `sigma_count_`"):
        assert i.sigma1_ == i.sigma_count_ == 0.7


def test_a_state_saved_under_the_old_names_restores_exactly():
    """States written before the rename (keys ``sigma1``, params ``sigma1`` / ``sigma2``) keep their budgets."""
    X, y, Q, _ = blobs()
    clf = ind().fit(X, y)
    clf.predict(Q[:10])
    state = clf.state_dict()
    legacy = pickle.loads(pickle.dumps(state))
    legacy["sigma1"] = legacy.pop("sigma_count")
    old_names = {"sigma_count": "sigma1", "sigma_vote": "sigma2"}
    legacy["params"] = {old_names.get(k, k): v for k, v in legacy["params"].items()}
    a, b = IndKNNClassifier().load_state_dict(state), IndKNNClassifier().load_state_dict(legacy)
    assert a.get_params() == b.get_params()
    np.testing.assert_array_equal(a.filter_.spent, b.filter_.spent)
    np.testing.assert_array_equal(a.predict(Q[10:]), b.predict(Q[10:]))
    np.testing.assert_array_equal(a.filter_.spent, b.filter_.spent)


def test_current_names_raise_no_warning():
    X, y, Q, yq = blobs()
    with warnings.catch_warnings():
        warnings.simplefilter("error", DeprecationWarning)
        for make in FACTORIES.values():
            clf = clone(make()).set_params(n_classes=C).fit(X, y)
            clf.score(Q, yq)
            repr(clf)


# --------------------------------------------------------------------------- the same mistake, the same type
MISTAKES = [
    ("n_classes missing", dict(n_classes=None), ValueError, "`n_classes` of {} is required"),
    ("n_classes too small", dict(n_classes=1), ValueError, "`n_classes` of {} must be at least 2"),
    ("n_classes not an integer", dict(n_classes=2.5), TypeError, "`n_classes` of {} must be an integer"),
    ("random_state of a wrong type", dict(random_state="seed"), TypeError, "`random_state` of {} must be None"),
    ("negative random_state", dict(random_state=-1), ValueError, "`random_state` of {} must be non-negative"),
    ("negative vote noise", dict(sigma_vote=-1.0), ValueError, "`sigma_vote` of {}"),
    ("vote noise of a wrong type", dict(sigma_vote="1"), TypeError, "`sigma_vote` of {} must be a real number"),
    ("block_size zero", dict(block_size=0), ValueError, "`block_size` of {}"),
    ("block_size not an integer", dict(block_size=2.5), TypeError, "`block_size` of {}"),
]


@both
@pytest.mark.parametrize("name, params, error, match", MISTAKES, ids=[m[0] for m in MISTAKES])
def test_the_same_mistake_raises_the_same_type_in_both(make, name, params, error, match):
    X, y, _, _ = blobs()
    clf = make(**params)
    with pytest.raises(error, match=match.format(type(clf).__name__)):
        clf.fit(X, y)
    assert not hasattr(clf, "n_features_in_")  # a rejected fit changes nothing


@both
def test_the_same_data_mistakes_raise_the_same_type_in_both(make):
    X, y, Q, _ = blobs()
    name = type(make()).__name__
    for data, error, match in [((X, y + C), ValueError, r"labels in \[0, n_classes=3\)"),
                               ((X[:, :0], y), ValueError, "at least one feature"),
                               ((X, y.astype(str)), TypeError, "integer class labels"),
                               ((np.where(X > 100, X, np.nan), y), ValueError, "must be finite")]:
        with pytest.raises(error, match=match):
            make().fit(*data)
    with pytest.raises(NotFittedError, match=f"This {name} instance is not fitted yet"):
        make().predict(Q)
    clf = make().fit(X, y)
    with pytest.raises(ValueError, match=f"`Q` of {name}.predict must have 3 features"):
        clf.predict(Q[:, :2])
    with pytest.raises(TypeError, match=f"`Q` of {name}.predict must be a 2-D array"):
        clf.predict("queries")


@both
def test_cloning_a_classifier_that_has_spent_privacy_is_refused(make):
    """DESIGN.md privacy rule 8: a clone fitted on the same records would start from fresh budgets."""
    X, y, Q, _ = blobs()
    clf = make()
    clone(clf)  # unfitted: nothing spent, cloning is fine
    clf.fit(X, y)
    clone(clf)  # fitted, nothing answered yet: nothing to refresh
    clf.predict(Q[:3])
    with pytest.raises(ValueError, match="rule 8"):
        clone(clf)
    clf.fit(X, y)  # a refit keeps what was spent, so cloning stays refused
    with pytest.raises(ValueError, match="rule 8"):
        clone(clf)
