"""Private-kNN's neighbour sets depend on each record alone (issue 13 item 6).

Distances come from canonical dot products (``predict.neighbours.pairwise_distances``): each value is a function of its
query and its record, bit for bit, whatever the other records, their number, or the blocking of queries. With a
blocked matrix product instead, removing one far record changed a k = 6 neighbour set by two records (with ties),
so the vote histogram moved by L2 = 2 sqrt(2) against the sqrt(2) the aggregation is charged for.
"""

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from dpledger.predict._common import check_features
from dpledger.predict.neighbours import Reference, nearest_order, pairwise_distances


def _data(seed, n, d, ties):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d)).astype(np.float32)
    if ties:  # many exact duplicates: ties in distance everywhere
        X[n // 2 :] = X[: n - n // 2]
    Q = rng.normal(size=(9, d)).astype(np.float32)
    return check_features(X, "X", "t"), check_features(Q, "Q", "t")


@settings(max_examples=12, deadline=None)
@given(st.integers(0, 10**6), st.integers(20, 300), st.integers(1, 97), st.booleans(),
       st.sampled_from(["cosine", "euclidean"]))
def test_distances_are_bitwise_functions_of_query_and_record(seed, n, d, ties, metric):
    X, Q = _data(seed, n, d, ties)
    full = pairwise_distances(Q, Reference.from_array(X, metric=metric))
    drop = int(np.random.default_rng(seed).integers(n))
    keep = np.delete(np.arange(n), drop)
    fewer = pairwise_distances(Q, Reference.from_array(X[keep], metric=metric))
    assert torch.equal(full[:, keep], fewer)  # no other record's presence changes a value
    reference = Reference.from_array(X, metric=metric)
    singles = torch.cat([pairwise_distances(Q[i : i + 1], reference) for i in range(len(Q))])
    assert torch.equal(singles, full)  # nor does the blocking of queries
    permuted = np.random.default_rng(seed + 1).permutation(n)
    assert torch.equal(pairwise_distances(Q, Reference.from_array(X[permuted], metric=metric)), full[:, permuted])


@pytest.mark.parametrize("metric", ["cosine", "euclidean"])
def test_removing_a_far_record_changes_a_neighbour_set_by_at_most_that_record(metric):
    X, Q = _data(7, 400, 33, ties=True)
    k = 6
    full = nearest_order(pairwise_distances(Q, Reference.from_array(X, metric=metric)), k)
    dist = pairwise_distances(Q, Reference.from_array(X, metric=metric))
    for drop in torch.argsort(dist[0], descending=True)[:25].tolist() + [0, 1, 2]:
        keep = np.delete(np.arange(len(X)), drop)
        fewer = keep[nearest_order(pairwise_distances(Q, Reference.from_array(X[keep], metric=metric)), k)]
        for a, b in zip(full, fewer):
            a, b = set(a.tolist()), set(b.tolist())
            if drop in a:  # the removed neighbour is replaced by the next one: one record in, one out
                assert len(a - b) == 1 and len(b - a) == 1 and a - b == {drop}
            else:  # a record outside the neighbour set changes nothing
                assert a == b
