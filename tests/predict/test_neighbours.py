"""Tests of predict.neighbours: exact and LSH kernel threshold search against straightforward float64 references.

Kinds: known values (hand-computed kernels), properties (hypothesis) against a dense float64 reference, the
LSH candidate rule checked against a per-table recomputation from the public hyperplanes, the independence of a
record's selection from the other records (Ind-KNN Thm 3.1 proof), validation messages.
"""

import math

import numpy as np
import pytest
import torch
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from dpledger.predict.lsh import LSHSearch
from dpledger.predict.neighbours import ExactSearch, block_pairs, kernel_matrix, prepare_points

# Float32 kernels and the float64 reference may disagree on pairs within this distance of tau; such draws are
# skipped (the rounding of a float32 matrix product is about 1e-7 here).
MARGIN = 1e-5


def reference_kernel(Q, X, kernel, nu=None):
    """Dense float64 kernel values, written from the definitions (Ind-KNN Sec 3)."""
    Q = np.asarray(Q, dtype=np.float64)
    X = np.asarray(X, dtype=np.float64)
    if kernel == "cosine":
        Qn = Q / np.linalg.norm(Q, axis=1, keepdims=True)
        Xn = X / np.linalg.norm(X, axis=1, keepdims=True)
        return np.clip(Qn @ Xn.T, 0.0, 1.0)
    d2 = ((Q[:, None, :] - X[None, :, :]) ** 2).sum(axis=2)
    return np.exp(-d2 / nu**2)


def reference_pairs(Q, X, tau, kernel, nu=None):
    K = reference_kernel(Q, X, kernel, nu)
    return [(np.flatnonzero(row >= tau), row[row >= tau]) for row in K], K


def draw(seed, n, m, d, scale=1.0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d)) * scale
    Q = rng.normal(size=(m, d)) * scale
    return X.astype(np.float32), Q.astype(np.float32)


def assert_same_on_kept_records(full, part, keep):
    """``part`` (a search over the records ``keep`` of ``full``'s) has exactly ``full``'s pairs on them, bit for bit."""
    for t in range(full.n_queries):
        idx, kap = full.query(t)
        mask = np.isin(idx, keep)
        pidx, pkap = part.query(t)
        np.testing.assert_array_equal(keep[pidx], idx[mask])
        np.testing.assert_array_equal(pkap, kap[mask])


cases = st.tuples(
    st.integers(0, 2**32 - 1),
    st.integers(1, 60),
    st.integers(1, 12),
    st.integers(1, 6),
    st.sampled_from(["cosine", "rbf"]),
    st.floats(0.05, 0.95),
    st.integers(1, 16),
)


@settings(max_examples=40, deadline=None)
@given(cases)
def test_exact_pairs_match_dense_reference(case):
    seed, n, m, d, kernel, tau, block = case
    X, Q = draw(seed, n, m, d)
    nu = 2.0 if kernel == "rbf" else None
    ref, K = reference_pairs(Q, X, tau, kernel, nu)
    assume(np.abs(K - tau).min() > MARGIN)
    p = ExactSearch(X, kernel=kernel, nu=nu, block_size=block).pairs(Q, tau)
    assert p.n_queries == m
    for t in range(m):
        idx, kap = p.query(t)
        np.testing.assert_array_equal(idx, ref[t][0])
        np.testing.assert_allclose(kap, ref[t][1], rtol=0, atol=1e-5)
        assert np.all(kap >= tau) and np.all(kap <= 1.0)


@settings(max_examples=20, deadline=None)
@given(st.integers(0, 2**32 - 1), st.sampled_from(["cosine", "rbf"]))
def test_block_size_does_not_change_pairs(seed, kernel):
    X, Q = draw(seed, 50, 9, 4)
    nu = 1.5 if kernel == "rbf" else None
    results = [ExactSearch(X, kernel=kernel, nu=nu, block_size=b).pairs(Q, 0.4) for b in (1, 4, 256)]
    for other in results[1:]:
        np.testing.assert_array_equal(other.indptr, results[0].indptr)
        np.testing.assert_array_equal(other.indices, results[0].indices)
        np.testing.assert_allclose(other.kappa, results[0].kappa, rtol=1e-6)


@settings(max_examples=25, deadline=None)
@given(st.integers(0, 2**32 - 1), st.integers(1, 40), st.sampled_from(["cosine", "rbf"]))
def test_selection_of_a_record_ignores_the_other_records(seed, n_extra, kernel):
    """A record is selected iff its own kernel value reaches tau: adding records elsewhere changes nothing for it."""
    X, Q = draw(seed, 30, 6, 3)
    extra, _ = draw(seed + 1, n_extra, 1, 3)
    nu = 1.5 if kernel == "rbf" else None
    base = ExactSearch(X, kernel=kernel, nu=nu).pairs(Q, 0.5)
    grown = ExactSearch(np.concatenate([extra, X]), kernel=kernel, nu=nu).pairs(Q, 0.5)
    for t in range(Q.shape[0]):
        i0, k0 = base.query(t)
        i1, k1 = grown.query(t)
        mine = i1 >= n_extra
        np.testing.assert_array_equal(i1[mine] - n_extra, i0)
        np.testing.assert_allclose(k1[mine], k0, rtol=1e-6)


def test_known_cosine_and_rbf_values():
    X = np.array([[1.0, 0.0], [0.0, 2.0], [3.0, 3.0]], dtype=np.float32)
    q = np.array([[2.0, 0.0]], dtype=np.float32)
    p = ExactSearch(X, kernel="cosine").pairs(q, 0.1)
    # cos(0) = 1, cos(90 deg) = 0 (not selected), cos(45 deg) = 1/sqrt(2)
    assert p.indices.tolist() == [0, 2]
    np.testing.assert_allclose(p.kappa, [1.0, 1 / math.sqrt(2)], rtol=1e-6)
    p = ExactSearch(X, kernel="rbf", nu=2.0).pairs(q, 0.01)
    # |x - q|^2 = 1, 8, 10: kappa = exp(-1/4), exp(-2), exp(-10/4)
    np.testing.assert_allclose(p.kappa, np.exp([-0.25, -2.0, -2.5]), rtol=1e-6)


def test_weights_slightly_above_one_are_clipped():
    rng = np.random.default_rng(3)
    X = rng.normal(size=(200, 64)).astype(np.float32)
    for kernel, nu in (("cosine", None), ("rbf", 3.0)):
        p = ExactSearch(X, kernel=kernel, nu=nu).pairs(X, 1.0)  # each record is its own query: kappa = 1
        assert np.all(p.kappa == 1.0)
        assert p.indices.size >= 1
        K = kernel_matrix(torch.from_numpy(prepare_points(X, kernel)), torch.from_numpy(prepare_points(X, kernel)),
                          kernel=kernel, nu=nu)
        assert float(K.max()) <= 1.0 and float(K.min()) >= 0.0


def reference_codes(points, planes, tables, bits):
    """Bucket codes written from supplement Algorithm 1: h_j(x) = 1[r_j . x >= 0], code = sum_j 2^j h_j."""
    proj = points.astype(np.float32) @ planes
    h = (proj >= 0).reshape(points.shape[0], tables, bits)
    return (h * (1 << np.arange(bits))).sum(axis=2)


@settings(max_examples=25, deadline=None)
@given(st.integers(0, 2**32 - 1), st.integers(1, 5), st.integers(1, 4), st.sampled_from(["cosine", "rbf"]),
       st.integers(1, 64))
def test_lsh_is_exact_search_on_the_union_of_buckets(seed, tables, bits, kernel, block):
    X, Q = draw(seed, 80, 10, 5)
    nu = 2.0 if kernel == "rbf" else None
    tau = 0.3
    lsh = LSHSearch(X, kernel=kernel, nu=nu, tables=tables, bits=bits, rng=np.random.default_rng(seed),
                    block_size=block)
    planes = lsh.hyperplanes
    assert planes.shape == (5, tables * bits)
    cx = reference_codes(prepare_points(X, kernel), planes, tables, bits)
    cq = reference_codes(prepare_points(Q, kernel), planes, tables, bits)
    ref, K = reference_pairs(Q, X, tau, kernel, nu)
    assume(np.abs(K - tau).min() > MARGIN)
    got = lsh.pairs(Q, tau)
    cands = lsh.candidates(Q)
    for t in range(Q.shape[0]):
        expected_cands = np.flatnonzero((cx == cq[t]).any(axis=1))
        np.testing.assert_array_equal(cands[t], expected_cands)
        keep = np.isin(ref[t][0], expected_cands)
        idx, kap = got.query(t)
        np.testing.assert_array_equal(idx, ref[t][0][keep])
        np.testing.assert_allclose(kap, ref[t][1][keep], atol=1e-5)


@settings(max_examples=15, deadline=None)
@given(st.integers(0, 2**32 - 1), st.sampled_from([17, 30]), st.sampled_from(["cosine", "rbf"]))
def test_long_codes_are_searched_not_looked_up_with_the_same_result(seed, bits, kernel):
    """Codes longer than LOOKUP_BITS (and than float32's 24 exact bits) take the searched path: same rule."""
    X, Q = draw(seed, 120, 6, 3)
    X = np.concatenate([X, np.repeat(X[:3], 4, axis=0)])  # repeated rows share every bucket
    nu = 2.0 if kernel == "rbf" else None
    lsh = LSHSearch(X, kernel=kernel, nu=nu, tables=3, bits=bits, rng=np.random.default_rng(seed))
    cx = reference_codes(prepare_points(X, kernel), lsh.hyperplanes, 3, bits)
    cq = reference_codes(prepare_points(Q, kernel), lsh.hyperplanes, 3, bits)
    np.testing.assert_array_equal(lsh.codes(torch.from_numpy(prepare_points(X, kernel))), cx)
    ref, K = reference_pairs(Q, X, 0.2, kernel, nu)
    assume(np.abs(K - 0.2).min() > MARGIN)
    got = lsh.pairs(Q, 0.2)
    for t in range(Q.shape[0]):
        cand = np.flatnonzero((cx == cq[t]).any(axis=1))
        keep = np.isin(ref[t][0], cand)
        np.testing.assert_array_equal(got.query(t)[0], ref[t][0][keep])


@settings(max_examples=15, deadline=None)
@given(st.integers(0, 2**32 - 1), st.integers(1, 400), st.integers(1, 7))
def test_lsh_pairs_do_not_depend_on_chunking_or_blocking(seed, chunk, block):
    """Splitting the records into chunks and the queries into blocks changes nothing, to the bit."""
    X, Q = draw(seed, 90, 9, 4)
    whole = LSHSearch(X, tables=6, bits=2, rng=np.random.default_rng(seed)).pairs(Q, 0.3)
    split = LSHSearch(X, tables=6, bits=2, rng=np.random.default_rng(seed), block_size=block)
    split.CHUNK_PAIRS = chunk
    got = split.pairs(Q, 0.3)
    np.testing.assert_array_equal(got.indptr, whole.indptr)
    np.testing.assert_array_equal(got.indices, whole.indices)
    np.testing.assert_array_equal(got.kappa, whole.kappa)


@settings(max_examples=15, deadline=None)
@given(st.integers(0, 2**32 - 1), st.sampled_from(["cosine", "rbf"]), st.data())
def test_lsh_kernel_values_do_not_depend_on_other_records(seed, kernel, data):
    """A record's pairs and kernel values, bit for bit, are the same with or without the other records."""
    X, Q = draw(seed, 70, 6, 5)
    keep = np.array(sorted(data.draw(st.sets(st.integers(0, 69), min_size=1, max_size=69))), dtype=np.int64)
    nu = 2.0 if kernel == "rbf" else None
    kw = dict(kernel=kernel, nu=nu, tables=5, bits=2)
    full = LSHSearch(X, rng=np.random.default_rng(seed), **kw).pairs(Q, 0.25)
    part = LSHSearch(X[keep], rng=np.random.default_rng(seed), **kw).pairs(Q, 0.25)
    assert_same_on_kept_records(full, part, keep)


@settings(max_examples=15, deadline=None)
@given(st.integers(0, 2**32 - 1), st.sampled_from(["cosine", "rbf"]), st.integers(1, 8), st.data())
def test_exact_kernel_values_do_not_depend_on_other_records(seed, kernel, block, data):
    """Exact search: a record's kernel values are bit for bit the same with or without the other records.

    The Ind-KNN guarantee needs a record's selection and vote to be functions of that record and the query
    (Thm 3.1 proof); a float32 matrix product whose rounding moved with a record's position would break that
    at the last bit. This holds for the CPU BLAS behind torch here; the test would catch a backend where not.
    """
    X, Q = draw(seed, 300, 9, 48)
    keep = np.array(sorted(data.draw(st.sets(st.integers(0, 299), min_size=1, max_size=299))), dtype=np.int64)
    nu = 6.0 if kernel == "rbf" else None
    full = ExactSearch(X, kernel=kernel, nu=nu, block_size=block).pairs(Q, 0.05)
    part = ExactSearch(X[keep], kernel=kernel, nu=nu).pairs(Q, 0.05)
    assert_same_on_kept_records(full, part, keep)


@settings(max_examples=15, deadline=None)
@given(st.integers(0, 2**32 - 1), st.integers(1, 40))
def test_lsh_codes_of_a_row_do_not_depend_on_the_batch(seed, extra):
    """Rows on (or next to) a hyperplane take the canonical path; every code is the same alone or in a batch."""
    rng = np.random.default_rng(seed)
    lsh = LSHSearch(rng.normal(size=(5, 24)).astype(np.float32), tables=3, bits=4, rng=np.random.default_rng(seed))
    r = lsh.hyperplanes[:, 0].astype(np.float64)
    X = rng.normal(size=(extra, 24))
    X[: extra // 2] -= np.outer(X[: extra // 2] @ r, r) / (r @ r)  # projections on r_0 within rounding of 0
    t = torch.from_numpy(prepare_points(X.astype(np.float32), "cosine"))
    together = lsh.codes(t)
    for i in range(extra):
        np.testing.assert_array_equal(lsh.codes(t[i:i + 1]), together[i:i + 1])


def test_lsh_from_given_hyperplanes_is_the_same_search():
    X, Q = draw(6, 40, 5, 6)
    a = LSHSearch(X, tables=3, bits=4, rng=np.random.default_rng(3))
    b = LSHSearch(X, tables=3, bits=4, hyperplanes=a.hyperplanes)
    np.testing.assert_array_equal(b.pairs(Q, 0.2).indices, a.pairs(Q, 0.2).indices)
    with pytest.raises(ValueError, match=r"`hyperplanes` of LSHSearch must be finite with shape \(6, 12\)"):
        LSHSearch(X, tables=3, bits=4, hyperplanes=a.hyperplanes[:, :11])
    with pytest.raises(TypeError, match="`rng` of LSHSearch must be a numpy.random.Generator"):
        LSHSearch(X, tables=3, bits=4)


def test_lsh_hyperplanes_are_public_randomness():
    """The hyperplanes depend on the generator only, never on the points."""
    X1, _ = draw(1, 40, 1, 6)
    X2, _ = draw(2, 90, 1, 6)
    a = LSHSearch(X1, tables=3, bits=4, rng=np.random.default_rng(7)).hyperplanes
    b = LSHSearch(X2, tables=3, bits=4, rng=np.random.default_rng(7)).hyperplanes
    np.testing.assert_array_equal(a, b)
    np.testing.assert_array_equal(a, np.random.default_rng(7).standard_normal((6, 12)).astype(np.float32))


def test_lsh_with_many_tables_recovers_exact_pairs():
    X, Q = draw(5, 300, 20, 8)
    exact = ExactSearch(X).pairs(Q, 0.6)
    lsh = LSHSearch(X, tables=60, bits=2, rng=np.random.default_rng(0)).pairs(Q, 0.6)
    np.testing.assert_array_equal(lsh.indices, exact.indices)
    np.testing.assert_array_equal(lsh.indptr, exact.indptr)


def test_add_appends_points():
    X, Q = draw(4, 20, 5, 3)
    s = ExactSearch(X[:12])
    assert s.add(X[12:]).tolist() == list(range(12, 20))
    full = ExactSearch(X).pairs(Q, 0.2)
    grown = s.pairs(Q, 0.2)
    np.testing.assert_array_equal(grown.indices, full.indices)
    lsh = LSHSearch(X[:12], tables=4, bits=2, rng=np.random.default_rng(1))
    lsh.add(X[12:])
    ref = LSHSearch(X, tables=4, bits=2, rng=np.random.default_rng(1))
    np.testing.assert_array_equal(lsh.pairs(Q, 0.2).indices, ref.pairs(Q, 0.2).indices)


@pytest.mark.parametrize("search", ["exact", "lsh"])
def test_tau_one_keeps_exact_duplicates_under_rbf(search):
    """kappa = exp(0) = 1 reaches tau = 1: the prefilter's threshold must not drop a duplicate of the query."""
    X, Q = draw(3, 30, 4, 6, scale=3.0)
    X[7] = Q[2]
    kw = dict(kernel="rbf", nu=0.5)
    if search == "exact":
        s = ExactSearch(X, **kw)
    else:
        s = LSHSearch(X, tables=2, bits=3, rng=np.random.default_rng(0), **kw)
    p = s.pairs(Q, 1.0)
    assert p.query(2)[0].tolist() == [7] and p.query(2)[1].tolist() == [1.0]
    assert p.indices.size == 1


def test_a_lower_matmul_precision_setting_is_overridden_and_restored():
    """bfloat16/TF32 products would break the prefilter's margin: exact search runs at "highest" precision."""
    X, Q = draw(8, 50, 5, 16)
    ref = ExactSearch(X).pairs(Q, 0.3)
    old = torch.get_float32_matmul_precision()
    torch.set_float32_matmul_precision("medium")
    try:
        got = ExactSearch(X).pairs(Q, 0.3)
        assert torch.get_float32_matmul_precision() == "medium"
    finally:
        torch.set_float32_matmul_precision(old)
    np.testing.assert_array_equal(got.indices, ref.indices)
    np.testing.assert_array_equal(got.kappa, ref.kappa)


def test_empty_queries_and_no_pairs():
    X, _ = draw(0, 10, 1, 3)
    p = ExactSearch(X).pairs(np.zeros((0, 3), dtype=np.float32), 0.5)
    assert p.indptr.tolist() == [0] and p.indices.size == 0
    r, c, v = block_pairs(torch.ones(2, 3), torch.from_numpy(prepare_points(X, "cosine")), 1.0, kernel="cosine")
    assert r.dtype == c.dtype == np.int64 and v.dtype == np.float64


@pytest.mark.parametrize(
    "kwargs, error, match",
    [
        ({"kernel": "linear"}, ValueError, "`kernel` of ExactSearch must be one of"),
        ({"kernel": 3}, TypeError, "`kernel` of ExactSearch must be a string"),
        ({"kernel": "rbf"}, TypeError, "`nu` of ExactSearch must be a positive real"),
        ({"kernel": "rbf", "nu": -1.0}, ValueError, "`nu` of ExactSearch must be positive"),
        ({"kernel": "rbf", "nu": float("nan")}, ValueError, "`nu` of ExactSearch must be positive"),
        ({"block_size": 0}, ValueError, "`block_size` of ExactSearch must be a positive integer"),
    ],
)
def test_constructor_validation(kwargs, error, match):
    with pytest.raises(error, match=match):
        ExactSearch(np.ones((3, 2), dtype=np.float32), **kwargs)


def test_input_validation():
    with pytest.raises(ValueError, match="no all-zero row for kernel='cosine'; got one at row 1"):
        ExactSearch(np.array([[1.0, 0.0], [0.0, 0.0]]))
    with pytest.raises(ValueError, match="must be finite"):
        ExactSearch(np.array([[1.0, np.nan]]))
    s = ExactSearch(np.ones((3, 2)))
    for tau in (0.0, 1.5, float("nan")):
        with pytest.raises(ValueError, match=r"`tau` of ExactSearch must be in \(0, 1\]"):
            s.pairs(np.ones((1, 2)), tau)
    with pytest.raises(ValueError, match="must have 2 features; got 3"):
        s.pairs(np.ones((1, 3)), 0.5)
    with pytest.raises(TypeError, match="`rng` of LSHSearch must be a numpy.random.Generator"):
        LSHSearch(np.ones((3, 2)), rng=0)
    with pytest.raises(ValueError, match=r"`bits` of LSHSearch must be an integer in \[1, 62\]"):
        LSHSearch(np.ones((3, 2)), bits=0, rng=np.random.default_rng(0))


# ------------------------------------------------------------------------------- the one row normaliser
def test_unit_rows_both_roundings_are_the_formulas_they_document():
    from dpledger.predict.neighbours import Reference, unit_rows

    rng = np.random.default_rng(5)
    X = rng.normal(size=(200, 7)) * np.exp(rng.uniform(-20, 20, (200, 1)))
    X[3] = 0.0
    wide = unit_rows(X)  # fl32(x / ||x||) in float64, rounded once
    expected = (X / np.where(np.linalg.norm(X, axis=1) > 0, np.linalg.norm(X, axis=1), 1.0)[:, None]).astype(np.float32)
    np.testing.assert_array_equal(wide, expected)
    x32 = X.astype(np.float32)
    narrow = unit_rows(X, divide_in="float32")  # float32 rows over float32 norms, summed in float64
    norms = np.sqrt((x32.astype(np.float64) ** 2).sum(axis=1))
    np.testing.assert_array_equal(narrow, x32 / np.where(norms > 0, norms, 1.0).astype(np.float32)[:, None])
    assert wide.dtype == narrow.dtype == np.float32 and wide.flags.c_contiguous and narrow.flags.c_contiguous
    assert not wide[3].any() and not narrow[3].any()  # zero rows stay zero
    np.testing.assert_allclose(np.linalg.norm(np.delete(wide, 3, 0), axis=1), 1.0, rtol=1e-6)
    # the classifiers' rows are these: Ind-KNN's searches hold the float32 rounding, Private-kNN the float64 one
    keep = np.delete(X, 3, 0)
    np.testing.assert_array_equal(prepare_points(keep, "cosine"), unit_rows(keep, divide_in="float32"))
    ref = Reference.from_array(keep.astype(np.float32), metric="cosine")
    np.testing.assert_array_equal(ref.points.numpy(), unit_rows(keep.astype(np.float32)))
    with pytest.raises(ValueError, match="`divide_in` of unit_rows"):
        unit_rows(X, divide_in="float16")
