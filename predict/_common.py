"""Helpers shared by the private classifiers: the abstention label, input validation, blocked torch distances.

Everything here is data-independent plumbing; nothing in this module draws randomness or touches a budget.

* :data:`ABSTAIN` is the label ``predict`` returns for a query the classifier declines to answer.
* :func:`check_features`, :func:`check_labels`, :func:`check_fitted`, :func:`check_metric` validate at the
  boundary with the package's message shape ("`X` of PrivateKNNClassifier.fit must be finite; ...");
  :func:`check_rows` refuses rows a metric cannot handle (zero rows for cosine, float32 overflow for euclidean);
  call it on queries before drawing any noise.
* :class:`Reference` and :func:`pairwise_distances` compute query-to-record distances with one float32 matrix
  product per block of queries (torch, CPU); :func:`query_blocks` cuts the queries into blocks.

Examples
--------
>>> import numpy as np
>>> X = check_features([[3.0, 4.0], [0.0, 1.0]], "X", "Demo")
>>> ref = Reference.from_array(X, metric="euclidean")
>>> pairwise_distances(check_features([[0.0, 0.0]], "Q", "Demo"), ref).numpy().round(4).tolist()
[[5.0, 1.0]]
>>> [(b.start, b.stop) for b in query_blocks(5, 2)]
[(0, 2), (2, 4), (4, 5)]
"""

import dataclasses
import numbers

import numpy as np
import torch

from dpledger.mechanisms.errors import NumericalError
from dpledger.predict.neighbours import canonical_sq_norms, pair_dots

__all__ = [
    "ABSTAIN",
    "METRICS",
    "NotFittedError",
    "check_features",
    "check_labels",
    "check_fitted",
    "check_metric",
    "check_rows",
    "MAX_SQUARED_NORM",
    "Reference",
    "pairwise_distances",
    "query_blocks",
]

#: Label returned by ``predict`` where a classifier abstains (a screened-out or unanswerable query). Class labels
#: are non-negative integers, so it never collides with a class.
ABSTAIN = -1

#: Distances :func:`pairwise_distances` knows.
METRICS = ("cosine", "euclidean")

try:  # scikit-learn's class, so ``except NotFittedError`` written for scikit-learn estimators catches ours
    from sklearn.exceptions import NotFittedError
except ImportError:  # pragma: no cover - scikit-learn is a dependency; keep the same bases without it

    class NotFittedError(ValueError, AttributeError):
        """An estimator was used before ``fit``."""


def check_features(X, name, owner, *, n_features=None, allow_empty=False):
    """Validate a feature matrix and return it as a C-contiguous float32 array of shape (n, d).

    Parameters
    ----------
    X : array_like
        Real numbers (integers and floats; not booleans, complex, strings or objects), 2-D, every entry finite.
    name, owner : str
        For the message: "`{name}` of {owner} ...".
    n_features : int, optional
        Required number of columns (the one seen in ``fit``).
    allow_empty : bool, default False
        Whether zero rows are accepted (queries may be empty; training data may not).

    Raises
    ------
    TypeError
        For a non-numeric array.
    ValueError
        For a wrong number of dimensions or columns, no rows, or NaN / inf entries.
    """
    if isinstance(X, (str, bytes)) or X is None:
        raise TypeError(f"`{name}` of {owner} must be a 2-D array of real numbers; got {type(X).__name__}.")
    if torch.is_tensor(X):
        X = X.detach().cpu().numpy()
    try:
        arr = np.asarray(X)
    except ValueError:  # ragged nested sequences
        raise ValueError(f"`{name}` of {owner} must be a rectangular 2-D array; got ragged rows.") from None
    if arr.dtype.kind not in "iuf":
        raise TypeError(f"`{name}` of {owner} must hold real numbers; got dtype {arr.dtype}.")
    if arr.ndim != 2:
        raise ValueError(f"`{name}` of {owner} must be 2-D (samples x features); got shape {arr.shape}.")
    if arr.shape[1] == 0:
        raise ValueError(f"`{name}` of {owner} must have at least one feature; got shape {arr.shape}.")
    if arr.shape[0] == 0 and not allow_empty:
        raise ValueError(f"`{name}` of {owner} must have at least one row; got shape {arr.shape}.")
    if n_features is not None and arr.shape[1] != n_features:
        raise ValueError(
            f"`{name}` of {owner} must have {n_features} features (as in fit); got {arr.shape[1]}."
        )
    bad = ~np.isfinite(arr) | (np.abs(arr) > np.finfo(np.float32).max)
    if bad.any():
        row, col = np.argwhere(bad)[0]
        raise ValueError(
            f"`{name}` of {owner} must be finite (also after conversion to float32); got {arr[row, col]} at row "
            f"{row}, column {col}."
        )
    return np.ascontiguousarray(arr, dtype=np.float32)


def check_labels(y, n_samples, owner, *, num_classes=None):
    """Validate class labels: a 1-D array of ``n_samples`` integers in ``[0, num_classes)``.

    Returns ``(labels as int64, num_classes)``; ``num_classes`` defaults to ``max(y) + 1`` when not given.
    Floats are accepted only when every value is a whole number; booleans, strings and objects are refused.
    """
    if isinstance(y, (str, bytes)) or y is None:
        raise TypeError(f"`y` of {owner} must be a 1-D array of integer labels; got {type(y).__name__}.")
    if torch.is_tensor(y):
        y = y.detach().cpu().numpy()
    arr = np.asarray(y)
    if arr.dtype.kind not in "iuf":
        raise TypeError(f"`y` of {owner} must hold integer class labels; got dtype {arr.dtype}.")
    if arr.ndim != 1:
        raise ValueError(f"`y` of {owner} must be 1-D; got shape {arr.shape}.")
    if arr.shape[0] != n_samples:
        raise ValueError(f"`y` of {owner} must have one label per row of X ({n_samples}); got {arr.shape[0]}.")
    if arr.dtype.kind == "f":
        if not np.isfinite(arr).all() or (arr != np.round(arr)).any():
            bad = arr[~np.isfinite(arr) | (arr != np.round(arr))][0]
            raise ValueError(f"`y` of {owner} must hold whole-number labels; got {bad}.")
    labels = arr.astype(np.int64)
    if labels.size and labels.min() < 0:
        raise ValueError(f"`y` of {owner} must hold non-negative labels ({ABSTAIN} means abstain); got {labels.min()}.")
    if num_classes is None:
        num_classes = int(labels.max()) + 1 if labels.size else 1
    elif labels.size and labels.max() >= num_classes:
        raise ValueError(
            f"`y` of {owner} must hold labels in [0, num_classes={num_classes}); got {labels.max()}."
        )
    return np.ascontiguousarray(labels), int(num_classes)


def check_fitted(estimator, attributes):
    """Raise :class:`NotFittedError` unless every name in ``attributes`` is set on ``estimator``."""
    missing = [a for a in attributes if not hasattr(estimator, a)]
    if missing:
        raise NotFittedError(
            f"This {type(estimator).__name__} instance is not fitted yet; call `fit` before using it "
            f"(missing {', '.join(missing)})."
        )


def check_metric(metric, owner):
    """A metric name from :data:`METRICS`."""
    if not isinstance(metric, str):
        raise TypeError(f"`metric` of {owner} must be a string; got {type(metric).__name__} {metric!r}.")
    if metric not in METRICS:
        raise ValueError(f"`metric` of {owner} must be one of {list(METRICS)}; got {metric!r}.")
    return metric


@dataclasses.dataclass(frozen=True)
class Reference:
    """The private records prepared once for distance computations.

    Attributes
    ----------
    points : torch.Tensor, float32 (n, d)
        For ``metric="euclidean"`` it shares memory with the validated array; for ``metric="cosine"`` it is a
        copy with rows scaled to unit L2 norm in float64 (a per-record map, so no statistic of the data set
        enters; a zero row is refused).
    sq_norms : torch.Tensor, float32 (n,)
        Squared L2 norms of ``points``, each the canonical dot product of its row with itself
        (:func:`predict.neighbours.canonical_sq_norms`: a function of the record alone).
    metric : str
    """

    points: torch.Tensor
    sq_norms: torch.Tensor
    metric: str

    @classmethod
    def from_array(cls, X, *, metric, owner="Reference"):
        """Prepare a validated float32 array ``X`` (see :func:`check_features`) for ``metric``."""
        metric = check_metric(metric, owner)
        check_rows(X, metric, "X", owner)
        if metric == "cosine":
            points = _unit_rows(X)
        else:
            points = torch.from_numpy(np.ascontiguousarray(X, dtype=np.float32))
        return cls(points=points, sq_norms=canonical_sq_norms(points), metric=metric)

    @property
    def n(self):
        return int(self.points.shape[0])


#: Largest squared row norm accepted for ``metric="euclidean"``: keeps ``|q|^2 + |x|^2 - 2 q.x`` (at most
#: ``4e37``) inside float32's range (``3.4e38``), so no distance overflows to inf and turns into NaN.
MAX_SQUARED_NORM = 1e37


def check_rows(X, metric, name, owner):
    """Refuse rows a metric cannot handle, before any noise is drawn.

    ``"cosine"``: an all-zero row has no direction. ``"euclidean"``: a squared norm above
    :data:`MAX_SQUARED_NORM` would overflow float32 distances. Norms are taken in float64 (no underflow).
    """
    sq = np.einsum("ij,ij->i", np.asarray(X, dtype=np.float64), np.asarray(X, dtype=np.float64))
    if metric == "cosine" and (sq == 0).any():
        row = int(np.argmax(sq == 0))
        raise ValueError(f"`{name}` of {owner} must have no all-zero row for metric='cosine'; got one at row {row}.")
    if metric == "euclidean" and (sq > MAX_SQUARED_NORM).any():
        row = int(np.argmax(sq > MAX_SQUARED_NORM))
        raise ValueError(
            f"`{name}` of {owner} must have squared row norms at most {MAX_SQUARED_NORM:g} for float32 distances; "
            f"got {sq[row]:.3g} at row {row}."
        )
    return sq


def _unit_rows(X):
    """Rows scaled to unit L2 norm, computed in float64 (tiny rows do not underflow), returned as float32."""
    X = np.asarray(X, dtype=np.float64)
    return torch.from_numpy((X / np.linalg.norm(X, axis=1, keepdims=True)).astype(np.float32))


#: Largest number of (query, record) pairs computed in one call of the canonical product (memory: about 40
#: bytes per pair for the index arrays and values).
_PAIRS_PER_CALL = 4_000_000


def pairwise_distances(Q, reference, *, owner="pairwise_distances"):
    """Distances from each query row to every reference record: a (len(Q), n) float64 torch tensor, >= 0.

    * ``"euclidean"``: ``sqrt(max(|q|^2 + |x|^2 - 2 q.x, 0))``;
    * ``"cosine"``: ``max(1 - q.x / (|q| |x|), 0)``, in [0, 2].

    **Canonical values**: every dot product (and squared norm) is one float32 dot product of the two rows alone
    (:func:`predict.neighbours.pair_dots`, ``torch.sparse.sampled_addmm``), finished in float64, so each distance is
    a function of its query and its record only, bit for bit, whatever the other records, their number or the
    blocking. A blocked matrix product does not have this property (its summation order depends on the shapes),
    and with ties it let removing one far record change a neighbour set by two records (issue 13 item 6), beyond
    the sensitivity the aggregation is charged for. Rows are checked with :func:`check_rows`; a NaN result raises
    :class:`~mechanisms.errors.NumericalError` (it never reaches a ranking). Call it on blocks of queries
    (:func:`query_blocks`) to bound memory at ``block * n`` float64.

    Parameters
    ----------
    Q : numpy.ndarray, float32 (b, d)
        Validated queries (:func:`check_features`).
    reference : Reference
    """
    check_rows(Q, reference.metric, "Q", owner)
    q = _unit_rows(Q) if reference.metric == "cosine" else torch.from_numpy(np.ascontiguousarray(Q, dtype=np.float32))
    b, n = q.shape[0], reference.n
    out = torch.empty((b, n), dtype=torch.float64)
    step = max(1, _PAIRS_PER_CALL // max(n, 1))
    cols_row = np.arange(n, dtype=np.int64)
    for start in range(0, b, step):
        qs = q[start : start + step]
        m = qs.shape[0]
        rows, cols = np.repeat(np.arange(m, dtype=np.int64), n), np.tile(cols_row, m)
        dots = pair_dots(qs, reference.points, rows, cols).reshape(m, n).to(torch.float64)
        if reference.metric == "cosine":
            out[start : start + m] = (1.0 - dots).clamp_(min=0.0)
        else:
            sq_q = canonical_sq_norms(qs).to(torch.float64)
            d2 = sq_q[:, None] + reference.sq_norms.to(torch.float64)[None, :] - 2.0 * dots
            out[start : start + m] = d2.clamp_(min=0.0).sqrt_()
    if bool(torch.isnan(out).any()):  # cannot happen for validated input; never let NaN reach a ranking
        raise NumericalError(f"{owner}: a distance came out NaN.")
    return out


def query_blocks(n_queries, block_size):
    """Consecutive ``slice`` objects covering ``range(n_queries)`` in blocks of at most ``block_size``."""
    if isinstance(block_size, (bool, np.bool_)) or not isinstance(block_size, numbers.Integral) or block_size < 1:
        raise ValueError(f"`block_size` must be a positive integer; got {block_size!r}.")
    return [slice(s, min(s + block_size, n_queries)) for s in range(0, n_queries, int(block_size))]
