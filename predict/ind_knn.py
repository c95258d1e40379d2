"""Ind-KNN: kernelized nearest neighbours with an individual Renyi filter (Ind-KNN Algorithm 3, Sec 3.1).

Every private record ``i`` has a budget ``B`` (``budget_for(epsilon, delta)``: the largest ``B`` such that
``(alpha, alpha * B)``-RDP at every order converts to (epsilon, delta)-DP) and a remaining budget ``z_i``. Queries
are answered in order; for query ``q_t`` (Algorithm 3; the clipping as intended, papers/README.md):

1. *select* the active records (neither retired nor removed) with ``kappa(x_i, q_t) >= tau``; the decision
   depends on record ``i``, the query and ``i``'s own budget only (Thm 3.1 proof);
2. *noisy count*: each selected record contributes ``c_i = min(1, sigma_count * sqrt(2 z_i))`` to
   ``sum_i c_i + N(0, sigma_count^2)``, an individual Gaussian charge ``c_i^2 / (2 sigma_count^2)`` (Lemma 2.5),
   at most ``z_i``: a record whose budget cannot pay the full ``1 / (2 sigma_count^2)`` pays exactly what is left,
   contributes the clipped ``c_i`` and is retired (DESIGN.md rule 3); ``K_t = max(noisy count, min_count)``
   (supplement Sec 3: the floor at 30);
3. *kernel-weighted vote*: ``f_i = min(kappa_i, sigma_vote * sqrt(2 K_t z_i))`` on the one-hot label, an
   individual charge ``f_i^2 / (2 sigma_vote^2 K_t) <= z_i`` (Lemma 3.1); a clipped record pays what is left and
   is retired;
4. release ``argmax_j (sum_i f_i e_{y_i} + N(0, sigma_vote^2 K_t I_c))_j``.

(The paper's ``sigma_1`` and ``sigma_2`` are ``sigma_count`` and ``sigma_vote`` here, the names Private-kNN's
classifier uses for its noise: ``sigma_screen``, ``sigma_vote``.)

Charges are made in the filter before the release (rule 3). A query with no selected record still releases the
argmax of pure noise (rule 1): every query draws the same ``1 + c`` standard normals whatever the data. By fully
adaptive composition (Feldman & Zrnic 2021, Cor 3.3; Ind-KNN Thm 2.6 and Thm 3.2) the whole interaction is
``(alpha, alpha * B)``-RDP for every record and every order, however many queries are answered
(:meth:`IndKNNClassifier.privacy_report`). Unselected records are charged exactly zero.

*Prediction reuse* (Sec 3.1): released (query, label) pairs are public; with ``reuse_predictions=True`` each later
query adds ``kappa(q_s, q_t) e_{a_s}`` for previous queries with ``kappa >= tau`` to its votes and their number to
its count, never charged (post-processing of releases). *LSH* (supplement Algorithm 1): candidates are the union
of the query's buckets in ``lsh_tables`` tables of ``lsh_bits`` random hyperplanes drawn from the classifier's
generator (public randomness; :class:`predict.lsh.LSHSearch`).

Kernel values of a block of queries come from one float32 matrix product, reduced to sparse pairs above ``tau``
(:mod:`predict.neighbours`); the sequential budget loop runs over those pairs only. The noise of query ``t`` is
the ``t``-th group of ``1 + c`` draws of one generator, so blocking does not change any output.

The count and the votes are exact sums, correctly rounded (:mod:`predict.ind_knn_steps`), so they do not depend on
how the records are grouped: with ``shards=k, backend="ray"`` the records and their budgets are split over Ray
actors (:mod:`predict.sharded_ind_knn`) and every output equals the single process's bit for bit.

The generator is numpy's PCG64 seeded from ``random_state``: it is **not cryptographically secure**; a
deployment facing an adversary who could predict the noise needs a secure source (DESIGN.md rule 9).

Examples
--------
>>> import numpy as np
>>> rng = np.random.default_rng(0)
>>> X = np.vstack([rng.normal([3, 0], 0.3, (100, 2)), rng.normal([0, 3], 0.3, (100, 2))])
>>> y = np.repeat([0, 1], 100)
>>> clf = IndKNNClassifier(epsilon=1.0, delta=1e-5, tau=0.9, sigma_vote=0.2, n_queries=10, n_classes=2,
...                        random_state=0)
>>> clf.fit(X, y).predict([[1.0, 0.05], [0.05, 1.0]]).tolist()
[0, 1]
>>> round(clf.privacy_report(1e-5).epsilon, 6) <= 1.0
True
>>> clf
IndKNNClassifier(n_classes=2, n_queries=10, random_state=0, sigma_vote=0.2,
                 tau=0.9)
"""

from __future__ import annotations

import functools
import math
import numbers
import os
import warnings
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
import torch
from numpy.typing import ArrayLike

from dpledger.accountants import individual_conversions as _conv
from dpledger.accountants.individual_filter import RTOL, IndividualRenyiFilter, budget_for
from dpledger.accountants.report import PrivacyReport
from dpledger.predict._common import (
    PrivateClassifier,
    check_features,
    check_fitted,
    check_labels,
    check_n_classes,
    check_random_state,
    deprecated_arguments,
    seed_sequence,
)
from dpledger.predict.identity import SpendHistory, fingerprints
from dpledger.predict.ind_knn_steps import MAX_TERMS, count_step, exact_totals, vote_step
from dpledger.predict.lsh import LSHSearch
from dpledger.predict.neighbours import ExactSearch, _check_kernel, _check_tau, kernel_matrix, prepare_points

if TYPE_CHECKING:  # (Ray is imported only for a sharded classifier)
    from dpledger.predict.shard_state import ShardSource

__all__ = ["IndKNNClassifier"]

_OWNER = "IndKNNClassifier"
_STATE_FORMAT = "dpledger.IndKNNClassifier"
#: Largest noise scale accepted: with it every count and vote stays far inside float64 (checked before charging).
_MAX_SIGMA = 1e100
#: Deprecated keyword names (one release) and the current ones: the paper's sigma_1, sigma_2.
_RENAMED = {"sigma1": "sigma_count", "sigma2": "sigma_vote"}


@functools.lru_cache(maxsize=256)
def _budget(epsilon, delta, conversion):
    """``budget_for`` (a pure function of its arguments, costly to evaluate) cached by value."""
    return budget_for(epsilon, delta, accounting=conversion)


def _real(value, name, *, lo=0.0, lo_open=True, hi=math.inf):
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Real):
        raise TypeError(f"`{name}` of {_OWNER} must be a real number; got {type(value).__name__} {value!r}.")
    v = float(value)
    ok = (v > lo if lo_open else v >= lo) and v < hi and math.isfinite(v)
    if not ok:
        interval = f"{'(' if lo_open else '['}{lo}, {hi})"
        raise ValueError(f"`{name}` of {_OWNER} must be in {interval}; got {value}.")
    return v


def _int(value, name, lo=1):
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Integral):
        raise TypeError(f"`{name}` of {_OWNER} must be an integer >= {lo}; got {type(value).__name__} {value!r}.")
    if value < lo:
        raise ValueError(f"`{name}` of {_OWNER} must be an integer >= {lo}; got {value!r}.")
    return int(value)


class IndKNNClassifier(PrivateClassifier):
    """Ind-KNN (Ind-KNN Algorithm 3) with prediction reuse and LSH search; see the module docstring.

    Parameters
    ----------
    epsilon, delta : float
        Target guarantee; every record gets the budget ``B = budget_for(epsilon, delta)``.
    kernel : {"cosine", "rbf"}, default "cosine"
    nu : float, optional
        RBF bandwidth (``kappa = exp(-|x - q|^2 / nu^2)``); the paper uses ``e^1.5``.
    tau : float in (0, 1], default 0.5
        Selection threshold on the kernel value.
    sigma_vote : float, default 1.0
        Vote noise scale (the paper's ``sigma_2``): the vote noise has variance ``sigma_vote^2 K_t``.
    sigma_count : float, optional
        Count noise standard deviation (the paper's ``sigma_1``); default ``sqrt(n_queries / (6 B))`` (supplement
        Sec 3).
    n_queries : int, default 1000
        Planned number of queries, used only for the default ``sigma_count``; it does not limit anything and the
        guarantee does not depend on it.
    min_count : float, default 30
        Floor of ``K_t`` (supplement Sec 3).
    reuse_predictions : bool, default False
        Let released (query, label) pairs vote in later queries (Sec 3.1), uncharged.
    search : {"exact", "lsh"}, default "exact"
    lsh_tables, lsh_bits : int, default 30, 8
        Ind-KNN-Hash tables and hyperplanes per table.
    block_size : int, optional
        Queries per matrix product (default 256 exact, 2048 LSH). Does not change any output.
    accounting : {"rdp", "gdp"} or FilterConversion, default "rdp"
        The filter's theorem (:class:`accountants.individual_filter.IndividualRenyiFilter`), as a
        :class:`~accountants.individual_conversions.FilterConversion` or its public spelling.
    n_classes : int
        Number of classes ``>= 2`` (labels are ``0..n_classes-1``): **required**, public input, never read off the
        private labels (a canary with a label nobody else has made that label appear in 6,558 of 10,000 outputs
        when it was); labels outside it are refused.
    shards : int, default 1
        With ``backend="ray"`` and ``shards > 1``, the private records and their budgets are split over that many
        Ray actors (:mod:`predict.sharded_ind_knn`): the same labels, spends and report as the single process,
        bit for bit. ``shards=1`` or ``backend=None``: the single process.
    backend : {None, "ray"}, default None
        The engine of the shards (Ray, the ``ray`` extra; imported only for a sharded classifier).
    snapshot_dir : str or path, optional
        Where a sharded classifier's shards keep their records, budget snapshots and write-ahead logs (a fresh
        sub-directory per fit); default: a temporary directory removed with the classifier. A sharded classifier
        cannot be pickled (``TypeError``): save it with :meth:`state_dict`. :meth:`fit_shards` lets each shard
        load its own records.
    random_state : None, int, SeedSequence or Generator
        ``None`` (default): fresh entropy from the operating system, so no two classifiers share noise, and a
        classifier restored by :meth:`load_state_dict` draws fresh noise too. A seed is for reproducing
        experiments only (a restored seeded classifier continues its stream exactly, so two restores of one state
        draw the same noise). Not cryptographically secure.

    Notes
    -----
    **Budgets are never refreshed.** Records are tracked by identity (:mod:`predict.identity`: a fingerprint of
    the record as the search holds it, rows scaled to unit norm for the cosine kernel, and its label) across
    their whole history: fitting again keeps what every record already spent (and
    the generator, so a seeded refit does not replay its noise), and a record removed and added back, or seen in
    an earlier fit, starts from its spend, never from zero. Records with the same content share the larger spend.
    :meth:`fit`, :meth:`add` and :meth:`load_state_dict` validate everything before changing anything. A new
    object (including ``sklearn.base.clone``) has no history: give it only private data that no earlier object
    answered queries about, or continue the old one (refit it, or restore its :meth:`state_dict`).

    :meth:`score` answers its queries like :meth:`predict` and charges them. Deprecated (removed in the next
    release): ``epsilon`` and ``delta`` by position, ``sigma1`` / ``sigma2`` (now ``sigma_count`` /
    ``sigma_vote``) and the fitted ``sigma1_`` (now ``sigma_count_``).
    """

    @deprecated_arguments(positional=("epsilon", "delta"), renamed=_RENAMED)
    def __init__(
        self,
        *,
        epsilon: float = 1.0,
        delta: float = 1e-5,
        kernel: str = "cosine",
        nu: float | None = None,
        tau: float = 0.5,
        sigma_vote: float = 1.0,
        sigma_count: float | None = None,
        n_queries: int = 1000,
        min_count: int = 30,
        reuse_predictions: bool = False,
        search: str = "exact",
        lsh_tables: int = 30,
        lsh_bits: int = 8,
        block_size: int | None = None,
        accounting: str | _conv.FilterConversion = "rdp",
        n_classes: int | None = None,
        random_state: int | np.random.SeedSequence | np.random.Generator | None = None,
        shards: int = 1,
        backend: str | None = None,
        snapshot_dir: str | os.PathLike | None = None,
    ):
        self.epsilon = epsilon
        self.delta = delta
        self.kernel = kernel
        self.nu = nu
        self.tau = tau
        self.sigma_vote = sigma_vote
        self.sigma_count = sigma_count
        self.n_queries = n_queries
        self.min_count = min_count
        self.reuse_predictions = reuse_predictions
        self.search = search
        self.lsh_tables = lsh_tables
        self.lsh_bits = lsh_bits
        self.block_size = block_size
        self.accounting = accounting
        self.n_classes = n_classes
        self.random_state = random_state
        self.shards = shards
        self.backend = backend
        self.snapshot_dir = snapshot_dir

    @property
    def sigma1_(self) -> float:
        """Deprecated name of :attr:`sigma_count_` (removed in the next release)."""
        warnings.warn("`sigma1_` of IndKNNClassifier is deprecated; use `sigma_count_`.", DeprecationWarning,
                      stacklevel=2)
        return self.sigma_count_

    # -------------------------------------------------------------------------------------------------- fit
    def _validate_params(self, params=None):
        p = self.get_params() if params is None else params
        _real(p["epsilon"], "epsilon")
        _real(p["delta"], "delta", hi=1.0)
        _check_kernel(p["kernel"], p["nu"], _OWNER)
        _check_tau(p["tau"], _OWNER)
        # noise scales are bounded so that every vote and count stays finite (validated before any charge):
        # a larger one overflowed the votes after the budgets were charged
        _real(p["sigma_vote"], "sigma_vote", hi=_MAX_SIGMA)
        if p["sigma_count"] is not None:
            _real(p["sigma_count"], "sigma_count", hi=_MAX_SIGMA)
        _int(p["n_queries"], "n_queries")
        _real(p["min_count"], "min_count")
        if not isinstance(p["reuse_predictions"], (bool, np.bool_)):
            raise TypeError(f"`reuse_predictions` of {_OWNER} must be a bool; got {p['reuse_predictions']!r}.")
        if p["search"] not in ("exact", "lsh"):
            raise ValueError(f"`search` of {_OWNER} must be one of ['exact', 'lsh']; got {p['search']!r}.")
        _int(p["lsh_tables"], "lsh_tables")
        _int(p["lsh_bits"], "lsh_bits")
        if p["block_size"] is not None:
            _int(p["block_size"], "block_size")
        check_n_classes(p["n_classes"], _OWNER)
        check_random_state(p["random_state"], _OWNER)
        _conv.filter_conversion(p["accounting"], _OWNER)
        _int(p["shards"], "shards")
        if p["backend"] not in (None, "ray"):
            raise ValueError(f"`backend` of {_OWNER} must be None or 'ray'; got {p['backend']!r}.")
        if p["snapshot_dir"] is not None and not isinstance(p["snapshot_dir"], (str, os.PathLike)):
            raise TypeError(f"`snapshot_dir` of {_OWNER} must be a path or None; got {p['snapshot_dir']!r}.")

    @staticmethod
    def _sharded(params):
        """Shards over Ray are asked for (``shards > 1`` and ``backend="ray"``)."""
        return params["backend"] == "ray" and params["shards"] > 1
    def _has_spent(self):
        """Some record's individual filter has been charged (or a spend history was carried over)."""
        filt = getattr(self, "filter_", None)
        return filt is not None and bool(np.any(filt.spent > 0.0))

    def _new_search(self, rows, block, seed):
        """The configured kernel search over ``rows`` (LSH's hyperplanes drawn from ``seed``)."""
        if self.search == "lsh":
            return LSHSearch(rows, kernel=self.kernel, nu=self.nu, block_size=block, tables=self.lsh_tables,
                             bits=self.lsh_bits, rng=np.random.Generator(np.random.PCG64(seed)))
        return ExactSearch(rows, kernel=self.kernel, nu=self.nu, block_size=block)

    def _sigma_count(self, budget):
        """The count noise: as configured, else ``sqrt(n_queries / (6 B))``."""
        return float(self.sigma_count) if self.sigma_count is not None else math.sqrt(self.n_queries / (6 * budget))

    def fit(self, X: ArrayLike, y: ArrayLike) -> IndKNNClassifier:
        """Store the private records; returns self.

        A refit keeps everything already spent: each record starts from what its identity spent before (0 for a
        record never seen), the generator and the counts carry over (class Notes). Validated entirely before
        anything changes: a rejected fit leaves the classifier as it was.
        """
        self._validate_params()
        X = check_features(X, "X", f"{_OWNER}.fit")
        y, _ = check_labels(y, X.shape[0], f"{_OWNER}.fit", n_classes=self.n_classes)
        _check_size(X.shape[0], f"{_OWNER}.fit")
        # the search's own checks, before any change; identities are of the records as the search holds them
        fps = fingerprints(prepare_points(X, self.kernel, owner=f"{_OWNER}.fit"), y)
        conversion = _conv.filter_conversion(self.accounting, _OWNER)
        budget = _budget(float(self.epsilon), float(self.delta), conversion)
        refit = hasattr(self, "filter_")
        history = self._current_history() if refit else SpendHistory()
        filt = IndividualRenyiFilter(budget, 0, accounting=conversion)
        prior = history.prior(fps)
        filt.add(X.shape[0], spent=prior)  # refuses a record that already spent more than this budget
        seeds = seed_sequence(self.random_state, _OWNER).spawn(2)
        block = self.block_size or (2048 if self.search == "lsh" else 256)
        rng = self._rng if refit else np.random.Generator(np.random.PCG64(seeds[0]))
        sharded = self._sharded(self.get_params())
        rows = X[:0] if sharded else X  # sharded: the shards index the records; the search keeps the query side
        search = self._new_search(rows, block, seeds[1])  # (LSH's hyperplanes: the dimension and the seed only)
        sigma_count = self._sigma_count(budget)
        cluster = None
        if sharded:
            cluster = self._start_cluster(self.get_params(), X, y, filt, search, sigma_count, budget, prepared=False)
        return self._commit_fit(cluster, search, filt, rng, budget, sigma_count, y, fps, history, prior, refit)

    def _commit_fit(self, cluster, search, filt, rng, budget, sigma_count, y, fps, history, prior, refit):
        """Everything validated and built: commit a fit (:meth:`fit`, :meth:`fit_shards`); returns self."""
        self._stop_cluster()
        self._cluster = cluster
        if cluster is not None:
            filt = _sharded().ShardedBudgets(cluster)
        d = search.points.shape[1]
        self.budget_ = budget
        self.sigma_count_ = sigma_count
        self.n_classes_ = int(self.n_classes)
        self.n_features_in_ = d
        self.y_ = y.copy()
        self.search_, self.filter_, self._rng = search, filt, rng
        self._fps, self._history = fps, history
        self._public_X = np.zeros((0, d), dtype=np.float32)
        self._public_y = np.zeros(0, dtype=np.int64)
        if not refit:
            self._median_spend = np.zeros((0, 2))
            self.n_queries_ = 0
            self.n_answered_ = 0
        self._sorted_spend = np.sort(prior)
        self._log = []
        return self

    def fit_shards(self, sources: Sequence[ShardSource]) -> IndKNNClassifier:
        """Store private records that each shard loads itself; returns self. Needs ``backend="ray"`` and
        ``shards=k > 1``.

        ``sources[s]`` gives shard ``s``'s records, read *by the shard's actor*: a ``.npz`` file with arrays ``X``
        and ``y`` (a path the actor can read), or a callable returning ``(X, y)`` (pickled to the actor and
        called there). No feature vector passes through the coordinator: it receives each record's label and
        identity (:mod:`predict.identity`) only, so the records need not fit in its memory. The result is
        :meth:`fit` on the concatenation of the sources in order, bit for bit (same labels, spends and report
        for the same ``random_state``; records numbered shard after shard); records added later go to shard
        ``index mod k``. A refit keeps every record's spend (class Notes). Validated before anything changes: a
        rejected fit (a shard's bad data raises that shard's ``ValueError``/``TypeError``) leaves the classifier
        as it was.
        """
        self._validate_params()
        params = self.get_params()
        owner = f"{_OWNER}.fit_shards"
        if not self._sharded(params):
            raise ValueError(f"{owner} needs backend='ray' and shards > 1; got backend={params['backend']!r}, "
                             f"shards={params['shards']!r} (use fit).")
        if isinstance(sources, (str, bytes, os.PathLike)) or not isinstance(sources, Sequence):
            raise TypeError(f"`sources` of {owner} must be a sequence of one source per shard; got "
                            f"{type(sources).__name__}.")
        sources = list(sources)
        if len(sources) != params["shards"]:
            raise ValueError(f"`sources` of {owner} must have one source per shard ({params['shards']}); got "
                             f"{len(sources)}.")
        for src in sources:
            if not (callable(src) or isinstance(src, (str, os.PathLike))):
                raise TypeError(f"`sources` of {owner} must be paths or callables; got {type(src).__name__}.")
        conversion = _conv.filter_conversion(self.accounting, _OWNER)
        budget = _budget(float(self.epsilon), float(self.delta), conversion)
        refit = hasattr(self, "filter_")
        history = self._current_history() if refit else SpendHistory()
        seeds = seed_sequence(self.random_state, _OWNER).spawn(2)
        block = self.block_size or (2048 if self.search == "lsh" else 256)
        rng = self._rng if refit else np.random.Generator(np.random.PCG64(seeds[0]))
        built = {}

        def finish(d, y, fps):  # the coordinator's part, between the shards' loading and their commit
            if y.shape[0] == 0:
                raise ValueError(f"`sources` of {owner} must hold at least one record; got none.")
            _check_size(y.shape[0], owner)
            filt = IndividualRenyiFilter(budget, 0, accounting=conversion)
            prior = history.prior(fps)
            filt.add(y.shape[0], spent=prior)  # refuses a record that already spent more than this budget
            rows = np.zeros((0, d), dtype=np.float32)
            search = self._new_search(rows, block, seeds[1])
            sigma_count = self._sigma_count(budget)
            built.update(search=search, filt=filt, prior=prior, sigma_count=sigma_count)
            return self._shard_config(params, search, sigma_count, budget, filt.accounting), filt

        load_config = {"kernel": self.kernel, "n_classes": int(self.n_classes)}
        cluster, y, fps = _sharded().ShardedCluster.from_sources(load_config, params["snapshot_dir"], sources,
                                                                 finish)
        return self._commit_fit(cluster, built["search"], built["filt"], rng, budget, built["sigma_count"], y, fps,
                                history, built["prior"], refit)

    @staticmethod
    def _start_cluster(params, X, y, filt, search, sigma_count, budget, *, prepared):
        """Shard actors holding ``X``, ``y`` and the budgets ``filt`` (:mod:`predict.sharded_ind_knn`)."""
        config = IndKNNClassifier._shard_config(params, search, sigma_count, budget, filt.accounting)
        return _sharded().ShardedCluster(config, params["shards"], params["snapshot_dir"], X, y, filt,
                                         prepared=prepared)

    @staticmethod
    def _shard_config(params, search, sigma_count, budget, accounting):
        """The public parameters every shard needs."""
        return {"kernel": params["kernel"], "nu": search.nu, "search": params["search"],
                "block_size": search.block_size, "lsh_tables": params["lsh_tables"], "lsh_bits": params["lsh_bits"],
                "hyperplanes": search.hyperplanes.copy() if isinstance(search, LSHSearch) else None,
                "sigma_count": sigma_count, "sigma_vote": params["sigma_vote"],
                "n_classes": int(params["n_classes"]), "budget": budget, "accounting": accounting}

    def _stop_cluster(self):
        cluster = getattr(self, "_cluster", None)
        if cluster is not None:
            cluster.close()
        self._cluster = None

    def _resync_audit(self):
        """After a shard failure: replay the logged queries, then take the present spends as they are."""
        self._flush()
        f = self.filter_
        self._sorted_spend = np.sort(f.spent[~f.removed])

    def _current_history(self):
        """Every identity's largest spend so far: the stored history and the records held now (removed ones too)."""
        self._flush()
        history = self._history.copy()
        history.update(self._fps, self.filter_.spent)
        return history

    # ---------------------------------------------------------------------------------------------- predict
    def predict(self, Q: ArrayLike) -> np.ndarray:
        """Labels for the queries, answered in order (budgets evolve query by query); int64, never abstains."""
        check_fitted(self, ["filter_"])
        Q = check_features(Q, "Q", f"{_OWNER}.predict", n_features=self.n_features_in_, allow_empty=True)
        if getattr(self, "_cluster", None) is not None:
            return self._cluster.predict(self, Q)
        out = np.empty(Q.shape[0], dtype=np.int64)
        tq_all = self.search_.prepare_queries(Q)
        bs = self.search_.block_size
        for s in range(0, Q.shape[0], bs):
            tq = tq_all[s:s + bs]
            pairs = self.search_._pairs_prepared(tq, float(self.tau))
            pub = self._public_pairs(tq) if self.reuse_predictions else None
            noise = self._rng.standard_normal((tq.shape[0], 1 + self.n_classes_))
            for t in range(tq.shape[0]):
                idx, kap = pairs.query(t)
                pub_count, pub_votes = 0, None
                if pub is not None:
                    pub_count, pub_votes = self._public_votes(pub, t, out[s:s + t])
                out[s + t] = self._answer(idx, kap, noise[t], pub_count, pub_votes)
            if self.reuse_predictions:
                self._public_X = np.concatenate([self._public_X, tq.numpy()])
                self._public_y = np.concatenate([self._public_y, out[s:s + tq.shape[0]]])
        return out

    def _public_pairs(self, tq):
        """Kernel values of the block's queries to earlier public points and to earlier queries of the block."""
        P = torch.from_numpy(np.ascontiguousarray(np.concatenate([self._public_X, tq.numpy()])))
        K = kernel_matrix(tq, P, kernel=self.kernel, nu=self.nu).numpy().astype(np.float64)
        return K

    def _public_votes(self, K, t, block_labels):
        n_prev = self._public_y.shape[0]
        row = K[t, :n_prev + t]
        sel = row >= self.tau
        labels = np.concatenate([self._public_y, block_labels[:t]])[sel]
        votes = np.bincount(labels, weights=row[sel], minlength=self.n_classes_)
        return int(sel.sum()), votes

    def _answer(self, idx, kap, noise, pub_count, pub_votes):
        """One query of Algorithm 3 on its selected pairs; charges the filter, then releases the argmax.

        The filter owns every budget: remaining budgets are read from it and charges go through its admission
        step (:meth:`~accountants.individual_filter.IndividualRenyiFilter.admit`), which also retires a record
        whose last charge spent what was left.
        """
        f = self.filter_
        pending, count_digits = count_step(f, idx, kap, self.sigma_count_)
        count = float(exact_totals(count_digits)[0]) + pub_count + self.sigma_count_ * noise[0]
        K = max(count, float(self.min_count))
        vote_digits, entry = vote_step(f, self.y_, pending, K, self.sigma_vote, self.n_classes_)
        return self._release(exact_totals(vote_digits), pub_votes, K, noise, [entry])

    def _release(self, votes, pub_votes, K, noise, entries):
        """Step 4 from the exact vote sums (the same floats for one process and for shards): add the public
        votes and the noise, refuse non-finite votes, log the audit entries
        (``None``: logged by the caller), count the query, return the argmax."""
        if pub_votes is not None:
            votes = votes + pub_votes
        votes = votes + (self.sigma_vote * math.sqrt(K)) * noise[1:]
        if not np.isfinite(votes).all():  # rule 4: never reached for finite inputs; refuse rather than leak
            raise FloatingPointError("Ind-KNN votes are not finite; refusing to release an argmax.")
        if entries is not None:  # (the shards' entries arrive with the block's snapshot)
            self._log.extend(entries)
        self.n_queries_ += 1
        self.n_answered_ += 1
        return int(np.argmax(votes))

    # ------------------------------------------------------------------------------------------- the audit
    def _flush(self):
        """Replay the logged charges of the queries since the last flush into the median-spend history.

        The audit is computed on demand (and before any data change), not in the query loop: each logged query
        replaces its records' old spends by their new ones in the sorted spends of the present records, then
        records the two middle spends (lo, hi).
        """
        if not self._log:
            return
        s = self._sorted_spend
        mids = np.empty((len(self._log), 2))
        for k, (_idx, old, new) in enumerate(self._log):
            changed = new != old
            if changed.any():
                s = _replace_sorted(s, old[changed], new[changed])
            n = s.shape[0]
            mids[k] = (s[(n - 1) // 2], s[n // 2]) if n else (0.0, 0.0)
        self._sorted_spend = s
        self._median_spend = np.concatenate([self._median_spend, mids])
        self._log = []

    def median_epsilon_history(self, delta: float) -> np.ndarray:
        """Median individual epsilon (over present records) after each query so far (the paper's Figure 3b).

        An audit statistic computed from data-dependent spends (rule 7), not a guarantee; see
        :meth:`individual_epsilons`. Epsilon is monotone in the spend, so the median epsilon is the conversion
        of the middle spend (the mean of the two middle conversions for an even number of records).
        """
        check_fitted(self, ["filter_"])
        self._flush()
        m = self._median_spend
        if m.shape[0] == 0:
            return np.zeros(0)
        eps = self.filter_.conversion.epsilon(m.reshape(-1), delta)[0].reshape(m.shape)
        return eps.mean(axis=1)

    def individual_epsilons(self, delta: float) -> np.ndarray:
        """Each record's epsilon at ``delta`` from its spend so far (audit statistic; see the filter)."""
        check_fitted(self, ["filter_"])
        return self.filter_.individual_epsilons(delta)

    def privacy_report(self, delta: float) -> PrivacyReport:
        """The proven guarantee of every record from the budget ``B``; independent of the number of queries."""
        check_fitted(self, ["filter_"])
        return self.filter_.guarantee(delta)

    @property
    def n_retired_(self) -> int:
        """Records whose budget is exhausted."""
        check_fitted(self, ["filter_"])
        return int(self.filter_.retired.sum())

    # ------------------------------------------------------------------------------------------ data changes
    def add(self, X: ArrayLike, y: ArrayLike) -> np.ndarray:
        """Add private records and return their indices. A record seen before (the same content: removed and added
        back, or in an earlier fit) starts from what it spent, never from a fresh budget. Validated before any
        change."""
        check_fitted(self, ["filter_"])
        X = check_features(X, "X", f"{_OWNER}.add", n_features=self.n_features_in_, allow_empty=True)
        y, _ = check_labels(y, X.shape[0], f"{_OWNER}.add", n_classes=self.n_classes_)
        _check_size(self.y_.shape[0] + X.shape[0], f"{_OWNER}.add")
        fps = fingerprints(prepare_points(X, self.kernel, owner=f"{_OWNER}.add"), y)  # validates before any change
        prior = self._current_history().prior(fps)
        limit = self.budget_ * (1.0 + RTOL)
        if (prior > limit).any():
            raise ValueError(f"{_OWNER}.add: a record already spent {prior.max():.6g}, more than the budget "
                             f"{self.budget_:.6g}; it cannot be added back.")
        if getattr(self, "_cluster", None) is not None:
            new = self._cluster.add(X, y, prior)
        else:
            self.search_.add(X)
            new = self.filter_.add(X.shape[0], spent=prior)
        self.y_ = np.concatenate([self.y_, y])
        self._fps = np.concatenate([self._fps, fps])
        self._sorted_spend = np.sort(np.concatenate([prior, self._sorted_spend]))
        return new.astype(np.int64)

    def remove(self, indices: ArrayLike) -> None:
        """Remove records (a deletion request): they never contribute again; their spend is kept in the audit."""
        check_fitted(self, ["filter_"])
        self._flush()
        before = self.filter_.removed
        self.filter_.remove(indices)  # validates the indices
        gone = np.flatnonzero(self.filter_.removed & ~before)
        if gone.size:
            spent = self.filter_.spent[gone]
            self._sorted_spend = _replace_sorted(self._sorted_spend, spent, None)

    # ------------------------------------------------------------------------------------------ persistence
    def state_dict(self) -> dict[str, Any]:
        """Everything needed to continue exactly where this classifier is: data, budgets, identities and their
        history, generator, history of the audit. Plain numpy arrays and Python scalars (keys: ``format``,
        ``params``, ``X``, ``y``, ``n_classes``, ``budget``, ``sigma_count``, ``filter``, ``fingerprints``, ``history``,
        ``rng``, ``hyperplanes``, ``public_X``, ``public_y``, ``median_spend``, ``n_queries``, ``n_answered``)."""
        check_fitted(self, ["filter_"])
        self._flush()
        cluster = getattr(self, "_cluster", None)
        X = self.search_.points.copy() if cluster is None else cluster.records()[0]
        filt = self.filter_ if cluster is None else cluster.gathered_filter()
        return {
            "format": _STATE_FORMAT,
            "params": {**self.get_params(), "accounting": filt.accounting},  # the public spelling
            "X": X,
            "y": self.y_.copy(),
            "n_classes": self.n_classes_,
            "budget": self.budget_,
            "sigma_count": self.sigma_count_,
            "filter": filt.state_dict(),
            "fingerprints": self._fps.copy(),
            "history": self._current_history().state_dict(),  # every identity's spend, the present ones too
            "rng": self._rng.bit_generator.state,
            "hyperplanes": self.search_.hyperplanes.copy() if isinstance(self.search_, LSHSearch) else None,
            "public_X": self._public_X.copy(),
            "public_y": self._public_y.copy(),
            "median_spend": self._median_spend.copy(),
            "n_queries": self.n_queries_,
            "n_answered": self.n_answered_,
        }

    def load_state_dict(self, state: Mapping[str, Any]) -> IndKNNClassifier:
        """Restore :meth:`state_dict` (hyper-parameters included); no budget is refreshed. Returns self.

        Everything is validated before anything changes (a rejected state leaves the classifier as it was).
        An unseeded classifier (``random_state=None``) continues with fresh entropy, never the stored stream, so
        two classifiers restored from copies of one state do not share noise; a seeded one continues its stream.
        """
        owner = f"{_OWNER}.load_state_dict"
        if isinstance(state, dict) and "sigma1" in state and "sigma_count" not in state:
            state = _current_names(state)  # a state saved before the rename (sigma1 / sigma2)
        keys = {"format", "params", "X", "y", "n_classes", "budget", "sigma_count", "filter", "fingerprints", "history",
                "rng", "hyperplanes", "public_X", "public_y", "median_spend", "n_queries", "n_answered"}
        if not isinstance(state, dict) or state.get("format") != _STATE_FORMAT:
            raise ValueError(f"`state` of {owner} must come from state_dict(); got another object.")
        if set(state) != keys:
            raise ValueError(f"`state` of {owner} must have exactly the keys of state_dict(); missing "
                             f"{sorted(keys - set(state))}, unexpected {sorted(set(state) - keys)}.")
        params = state["params"]
        names = self._get_param_names()
        if isinstance(params, dict) and "shards" not in params:  # a state saved before sharding existed
            params = {**params, "shards": 1, "backend": None, "snapshot_dir": None}
        if not isinstance(params, dict) or set(params) != set(names):
            raise ValueError(f"`params` of {owner} must hold exactly {names}.")
        self._validate_params(params)
        filt = IndividualRenyiFilter.from_state_dict(state["filter"])
        X = check_features(state["X"], "X", owner, allow_empty=True)
        n = X.shape[0]
        y, _ = check_labels(state["y"], n, owner, n_classes=params["n_classes"])
        conversion = _conv.filter_conversion(params["accounting"], owner)
        budget = _budget(float(params["epsilon"]), float(params["delta"]), conversion)
        if filt.n_records != n or int(state["n_classes"]) != params["n_classes"]:
            raise ValueError(f"`state` of {owner} has records, labels, classes and budgets that do not agree.")
        if float(state["budget"]) != budget or filt.budget != budget or filt.conversion != conversion:
            raise ValueError(f"`budget` of {owner} must be the budget of the stored epsilon and delta ({budget!r}); "
                             f"got {state['budget']!r} (filter {filt.budget!r}).")
        fps = np.asarray(state["fingerprints"])
        if fps.dtype != np.uint8 or fps.shape != (n, fingerprints(X[:0], y[:0]).shape[1]) or not np.array_equal(
                fps, fingerprints(X, y)):
            raise ValueError(f"`fingerprints` of {owner} must be the identities of the stored records.")
        history = SpendHistory.from_state_dict(state["history"], owner)
        if (history.prior(fps) > filt.spent).any():
            raise ValueError(f"`state` of {owner} gives a record less spend than its history (a refreshed budget).")
        sigma_count = _real(state["sigma_count"], "sigma_count", hi=_MAX_SIGMA)
        if params["sigma_count"] is not None and sigma_count != float(params["sigma_count"]):
            raise ValueError(f"`sigma_count` of {owner} must equal the stored parameter; got {sigma_count!r}.")
        counts = [state["n_queries"], state["n_answered"]]
        if any(isinstance(c, bool) or not isinstance(c, numbers.Integral) or c < 0 for c in counts):
            raise ValueError(f"`n_queries`, `n_answered` of {owner} must be non-negative integers; got {counts}.")
        public_X = np.asarray(state["public_X"], dtype=np.float32)
        public_y = np.asarray(state["public_y"], dtype=np.int64)
        median = np.asarray(state["median_spend"], dtype=np.float64)
        if public_X.ndim != 2 or public_X.shape[1] != X.shape[1] or public_y.shape != (public_X.shape[0],) or \
                median.ndim != 2 or median.shape[1:] != (2,):
            raise ValueError(f"`public_X`, `public_y`, `median_spend` of {owner} have the wrong shapes.")
        block = params["block_size"] or (2048 if params["search"] == "lsh" else 256)
        if params["search"] == "lsh":
            search = LSHSearch(X, kernel=params["kernel"], nu=params["nu"], block_size=block, prepared=True,
                               tables=params["lsh_tables"], bits=params["lsh_bits"], hyperplanes=state["hyperplanes"])
        else:
            search = ExactSearch(X, kernel=params["kernel"], nu=params["nu"], block_size=block, prepared=True)
        cluster = None
        if self._sharded(params):
            cluster = self._start_cluster(params, X, y, filt, search, sigma_count, budget, prepared=True)
            search = _query_side(search)
        if params["random_state"] is None:
            rng = np.random.Generator(np.random.PCG64(np.random.SeedSequence()))  # fresh entropy (docstring)
        else:
            rng = np.random.Generator(np.random.PCG64())
            try:
                rng.bit_generator.state = state["rng"]
            except (TypeError, ValueError, KeyError) as exc:
                raise ValueError(f"`rng` of {owner} is not a PCG64 generator state: {exc}") from None
        # Everything validated and built: commit.
        for name, value in params.items():
            setattr(self, name, value)
        self._stop_cluster()
        self._cluster = cluster
        self.search_, self.filter_, self._rng = search, filt, rng
        if cluster is not None:
            self.filter_ = _sharded().ShardedBudgets(cluster)
        self.y_ = y.copy()
        self._fps, self._history = fps.copy(), history
        self.n_classes_ = int(params["n_classes"])
        self.n_features_in_ = X.shape[1]
        self.budget_ = budget
        self.sigma_count_ = sigma_count
        self._public_X, self._public_y, self._median_spend = public_X.copy(), public_y.copy(), median.copy()
        self._sorted_spend = np.sort(filt.spent[~filt.removed])
        self._log = []
        self.n_queries_, self.n_answered_ = int(counts[0]), int(counts[1])
        return self


def _sharded():
    """:mod:`predict.sharded_ind_knn`, imported on demand (it imports Ray only when a cluster starts)."""
    from dpledger.predict import sharded_ind_knn

    return sharded_ind_knn


def _query_side(search):
    """The search without its records: what the coordinator of a sharded classifier keeps to prepare queries."""
    if isinstance(search, LSHSearch):
        return LSHSearch(search.points[:0], kernel=search.kernel, nu=search.nu, block_size=search.block_size,
                         prepared=True, tables=search.tables, bits=search.bits, hyperplanes=search.hyperplanes)
    return ExactSearch(search.points[:0], kernel=search.kernel, nu=search.nu, block_size=search.block_size,
                       prepared=True)


def _check_size(n, owner):
    """At most :data:`~predict.ind_knn_steps.MAX_TERMS` records, so every query's sums are exact."""
    if n > MAX_TERMS:
        raise ValueError(f"{owner}: at most {MAX_TERMS} records are supported (exact sums); got {n}.")


def _current_names(state):
    """A :meth:`IndKNNClassifier.state_dict` saved before ``sigma1`` / ``sigma2`` were renamed, with the current
    names (nothing else changes: budgets, identities and the generator are restored as they were)."""
    state = dict(state)
    state["sigma_count"] = state.pop("sigma1")
    params = state.get("params")
    if isinstance(params, dict):
        state["params"] = {_RENAMED.get(name, name): value for name, value in params.items()}
    return state


def _replace_sorted(s, old, new):
    """Sorted multiset ``s`` with the values ``old`` (each present) replaced by ``new`` (or deleted if None)."""
    o = np.sort(old)
    first = np.searchsorted(o, o, side="left")
    pos = np.searchsorted(s, o, side="left") + (np.arange(o.size) - first)
    s = np.delete(s, pos)
    if new is None:
        return s
    n = np.sort(new)
    return np.insert(s, np.searchsorted(s, n, side="left"), n)
