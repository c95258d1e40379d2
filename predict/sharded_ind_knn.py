"""Sharded Ind-KNN: the private records and their budgets split over Ray actors, the same answers bit for bit.

Selected by ``IndKNNClassifier(..., shards=k, backend="ray")`` with ``k > 1`` (:mod:`predict.ind_knn`); with
``shards=1`` or ``backend=None`` the classifier is the single process, unchanged. Ray (the ``ray`` extra) is
imported only here, and this module only when a sharded classifier is fitted or restored.

Design
------
*Ownership.* Record ``g`` (its global index, in the order of fit and add) lives on shard ``g mod k``. A shard is
a Ray actor (:class:`ShardState`) holding its records as a search (:class:`~predict.neighbours.ExactSearch` or
:class:`~predict.lsh.LSHSearch` with the classifier's public hyperplanes), their labels, their global indices and
**their own** :class:`~accountants.individual_filter.IndividualRenyiFilter`: the filter is per record, so budgets
shard without communication, and every charge is made by the shard's filter through its admission step
(``admit``), the only owner of those budgets. Add and remove requests go to the owning shards. The coordinator
(the classifier object) keeps the public side: hyper-parameters, the generator, record identities (fingerprints
and labels, for refits and re-additions), released predictions, and the audit; it holds no budget and no feature
vector.

*One query block* (the classifier's ``block_size`` queries; the same blocks as the single process):

1. the coordinator prepares the queries (public), puts them once in Ray's object store and draws the block's
   noise from its generator exactly as the single process does (``standard_normal((rows, 1 + c))``);
2. ``begin``: every shard computes the kernel values of the block against its records (one matrix product,
   sparse pairs above ``tau``: :mod:`predict.neighbours`) and the count step of the first query
   (:func:`~predict.ind_knn_steps.count_step`), and returns its partial count;
3. for each query ``t``: the coordinator adds the partial counts in shard order, the public count and the count
   noise, ``K_t = max(count, min_count)``; ``step(K_t)``: every shard makes the vote step of ``t``
   (:func:`~predict.ind_knn_steps.vote_step`) and the count step of ``t + 1`` and returns its partial votes and
   count; the coordinator adds the partial votes in shard order, the public votes and the vote noise and takes
   the argmax. ``K_t`` is a sum over all records and every record's vote charge depends on it, and query
   ``t + 1``'s selection depends on the budgets that charge leaves, so one round-trip per query is inherent to
   Algorithm 3; pipelining the vote of ``t`` with the count of ``t + 1`` makes it one, not two;
4. on the last query of the block every shard appends the new budgets of the records the block touched to its
   write-ahead log, ``fsync``-s it and returns the block's audit entries; labels are returned only after every
   shard has acknowledged its log record (:mod:`predict.shard_log`).

Each charge is made once, by the owning shard; the coordinator charges nothing.

*Same answers.* Every per-record quantity (selection, kernel value, contribution, clipping, charge, admission) is
computed element by element from the record's own data, its own budget and ``K_t``, by the same functions as
the single process (:mod:`predict.ind_knn_steps`); the only cross-record operations are the sums, and those are
exact (integer digit sums, correctly rounded at the end), so any grouping into shards gives the same floats.
The noise comes from the same generator in the same order. Hence labels, every record's spend, retirements and
the privacy report (which depends on the budget alone) equal the single process's for the same
``random_state``, for any number of shards (tested exactly).

*Faults.* Budgets are state that must not be lost (DESIGN.md rule 8). Each shard keeps its files under
``snapshot_dir`` (a fresh sub-directory per fit; a temporary directory, removed with the classifier, by
default; :mod:`predict.shard_log`): its records and budgets (written at creation, add and truncate), and then a
write-ahead log of budget changes -- one record per query block, remove or recovery, holding the new spends and
flags of the records it touched, appended and ``fsync``-ed before the call returns -- folded into a full budget
snapshot (compaction) whenever the log has grown to a snapshot's size. Snapshots are written to a temporary file,
``fsync``-ed and atomically renamed. A release is returned only after the log records of all its charges are
durable. When a call finds a shard dead (``RayActorError``), the coordinator kills it for good (and waits until
Ray reports it dead: ``ray.kill`` is asynchronous), recreates it from its snapshot and log -- never with fresh
budgets; a torn last log record, the block being appended when the shard died, was never acknowledged and is
dropped; any other damage raises :class:`~predict.shard_log.CorruptLogError` -- has every live shard drop the
unfinished block and log its budgets (keeping the charges it made, which only lowers budgets), forgets
everything of the call that was not returned (audit entries, released-prediction reuse, counters; the
generator is not rewound), and raises :class:`ShardFailureError`: the call released nothing, and may be
repeated. A shard's restored budgets include every charge behind every returned release.

*Per-shard loading.* :meth:`~predict.ind_knn.IndKNNClassifier.fit_shards` has each actor load its own records
(:data:`~predict.shard_state.ShardSource`: a file or a callable run in the actor); only labels and record
identities (24 bytes a record) reach the coordinator (:meth:`ShardedCluster.from_sources`).

*Pickling.* A sharded classifier cannot be pickled or deep-copied (``TypeError``): its budgets live in the
actors, and a copy that re-attached to them, or recreated them from the files, would charge the same budgets
independently of the original, i.e. refresh them. :meth:`~predict.ind_knn.IndKNNClassifier.state_dict` and
``load_state_dict`` are the way to save and restore one.

Examples
--------
Not run here (it starts Ray)::

    ray.init(num_cpus=2)
    clf = IndKNNClassifier(epsilon=1.0, n_classes=2, shards=4, backend="ray", random_state=0).fit(X, y)
    clf.predict(Q)  # equal to IndKNNClassifier(epsilon=1.0, n_classes=2, random_state=0).fit(X, y).predict(Q)
"""

from __future__ import annotations

import functools
import os
import shutil
import tempfile
import time
import weakref
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
from numpy.typing import ArrayLike

from dpledger.accountants.individual_filter import IndividualRenyiFilter
from dpledger.mechanisms.errors import DPLedgerError
from dpledger.predict.ind_knn_steps import add_digits, exact_totals
from dpledger.predict.shard_log import CorruptLogError
from dpledger.predict.shard_state import ShardSource, ShardState

__all__ = ["CorruptLogError", "ShardFailureError", "ShardSource", "ShardState", "ShardedBudgets",
           "ShardedCluster", "import_ray"]

#: Seconds a new shard may take to start (a Ray worker importing numpy and torch) before the fit gives up.
_START_TIMEOUT = 600.0


class ShardFailureError(DPLedgerError, RuntimeError):
    """A shard died during a call; it was restored from its last durable snapshot and the call released nothing."""


def import_ray() -> Any:
    """The ``ray`` module, or ``ImportError`` saying how to install the extra."""
    try:
        import ray
    except ImportError:  # pragma: no cover - depends on the environment
        raise ImportError("IndKNNClassifier(backend='ray') needs Ray: pip install -e '.[ray]'") from None
    return ray


# ------------------------------------------------------------------------------------------ the coordinator
@functools.lru_cache(maxsize=1)
def _actor_class():
    # max_restarts=0: Ray must never restart a shard itself -- it would rerun the constructor with its original
    # arguments, i.e. the budgets of the fit (fresh ones); the coordinator recreates a dead shard from its files.
    return import_ray().remote(max_restarts=0)(ShardState)


class _Failure(Exception):
    """A shard died inside :meth:`ShardedCluster._all` (turned into :class:`ShardFailureError` after recovery)."""


def _rows_of(state, rows):
    """A filter state restricted to ``rows`` (indices or a slice)."""
    sub = dict(state)
    for key in ("spent", "retired", "removed"):
        sub[key] = state[key][rows]
    return sub


def _kill_and_wait(ray, actor, timeout=60.0):
    """Kill ``actor`` and wait until Ray reports it dead (``ray.kill`` is asynchronous)."""
    ray.kill(actor, no_restart=True)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            ray.get(actor.ping.remote(), timeout=timeout)
        except ray.exceptions.ActorDiedError:
            return
        except (ray.exceptions.RayActorError, ray.exceptions.GetTimeoutError):  # unavailable, not yet dead
            pass
        time.sleep(0.05)
    raise ShardFailureError(f"a shard actor still answered {timeout} s after it was killed.")


def _shutdown(actors, tempdir):
    try:
        ray = import_ray()
        if ray.is_initialized():
            for a in actors:
                ray.kill(a)
    except Exception:  # noqa: BLE001 - best effort at interpreter exit or after ray.shutdown()
        pass
    if tempdir is not None:
        shutil.rmtree(tempdir, ignore_errors=True)


class ShardedCluster:
    """The coordinator's handle on ``k`` shard actors (used by :class:`~predict.ind_knn.IndKNNClassifier`).

    Record ``g`` of ``X`` goes to shard ``g mod k``. :meth:`from_sources` makes a cluster whose shards load their
    own records instead (records ``offsets[s] .. offsets[s + 1] - 1`` on shard ``s``); records added later go to
    shard ``g mod k`` in both cases. Not picklable (:meth:`__reduce_ex__`).

    Parameters
    ----------
    config : dict
        Public parameters every shard needs (kernel, nu, search, block_size, lsh_tables, lsh_bits, hyperplanes,
        sigma_count, sigma_vote, n_classes, budget, accounting).
    k : int
        Number of shards, ``>= 2``.
    directory : str or None
        Where the snapshots go (a fresh sub-directory is made); ``None``: a temporary directory removed with
        this object.
    X : array (n, d)
        Records, raw or (``prepared=True``) as a search holds them.
    y : int64 array (n,)
    filt : IndividualRenyiFilter
        The budgets of the ``n`` records (global order), already validated.
    """

    def __init__(self, config: dict, k: int, directory: str | os.PathLike | None, X: np.ndarray, y: np.ndarray,
                 filt: IndividualRenyiFilter, *, prepared: bool = False):
        self._setup(config, k, directory)
        n = int(y.shape[0])
        gids = np.arange(n, dtype=np.int64)
        state = filt.state_dict()
        try:
            for s in range(self.k):
                rows = gids[gids % self.k == s]
                self._actors.append(self._new_actor(s, X[rows], y[rows], rows, _rows_of(state, rows), prepared))
            self._ray.get([a.ping.remote() for a in self._actors], timeout=_START_TIMEOUT)
        except Exception:
            self.close()
            raise
        self.n_records, self._offsets = n, None

    def _setup(self, config, k, directory):
        ray = import_ray()
        if not ray.is_initialized():
            ray.init()
        self._ray = ray
        self.k = int(k)
        self.config = dict(config)
        self._tempdir = tempfile.mkdtemp(prefix="dpledger-shards-") if directory is None else None
        self.directory = self._tempdir or tempfile.mkdtemp(prefix="ind-knn-shards-", dir=os.fspath(directory))
        # No CPU reservation (a reservation of a core each made a second classifier wait forever for cores the
        # first one held: they are idle between calls); SPREAD places the shards on different nodes of a cluster.
        self._options = {"num_cpus": 0, "scheduling_strategy": "SPREAD"}
        self._actors = []
        self._finalizer = weakref.finalize(self, _shutdown, self._actors, self._tempdir)

    def _new_actor(self, s, *args, **kw):
        return _actor_class().options(**self._options).remote(self.config, s, self.directory, *args, **kw)

    @classmethod
    def from_sources(cls, config: dict, directory: str | os.PathLike | None, sources: Sequence[ShardSource],
                     finish: Callable[[int, np.ndarray, np.ndarray], tuple[dict, IndividualRenyiFilter]]
                     ) -> tuple[ShardedCluster, np.ndarray, np.ndarray]:
        """A cluster whose shard ``s`` loads its own records from ``sources[s]`` (per-shard loading: no feature
        vector passes through the coordinator).

        Phase one: each actor loads and validates its records and returns their labels and fingerprints
        (identities, 16 bytes a record); records are numbered shard after shard (as one process fitted on the
        concatenation ``sources[0], sources[1], ...``). ``finish(columns, labels, fingerprints)`` (the
        classifier) validates them, and returns the final public ``config`` and the budgets of all records
        (global order), or raises. Phase two: each actor takes its budgets and writes its records file. Any
        error closes the actors. Returns ``(cluster, labels, fingerprints)``.
        """
        self = cls.__new__(cls)
        self._setup(config, len(sources), directory)
        ray = self._ray
        try:
            self._actors.extend(self._new_actor(s, load=True) for s in range(self.k))
            loaded = ray.get([a.load.remote(src) for a, src in zip(self._actors, sources, strict=True)])
            dims = {d for d, _, _ in loaded}
            if len(dims) != 1:
                raise ValueError(f"the shards of IndKNNClassifier.fit_shards loaded records with different numbers "
                                 f"of columns: {[d for d, _, _ in loaded]}.")
            y = np.concatenate([lab for _, lab, _ in loaded])
            fps = np.concatenate([fp for _, _, fp in loaded])
            offsets = np.cumsum([0] + [lab.shape[0] for _, lab, _ in loaded])
            self.config, filt = finish(dims.pop(), y, fps)
            state = filt.state_dict()
            ray.get([a.commit.remote(self.config, np.arange(offsets[s], offsets[s + 1]),
                                     _rows_of(state, slice(offsets[s], offsets[s + 1])))
                     for s, a in enumerate(self._actors)])
        except Exception:
            self.close()
            raise
        self.n_records, self._offsets = int(y.shape[0]), offsets
        return self, y, fps

    def close(self) -> None:
        """Kill the actors (and remove a temporary snapshot directory)."""
        self._finalizer()

    def __reduce_ex__(self, protocol):
        raise TypeError("a sharded IndKNNClassifier cannot be pickled or copied: its budgets live in its shard "
                        "actors, and a copy charging them on its own would refresh them; save it with "
                        "state_dict() (it gathers the records and budgets) and restore it with load_state_dict().")

    def _owner(self, gids):
        """The shard of each global index (by range for records of :meth:`from_sources`, else ``g mod k``)."""
        owner = gids % self.k
        if self._offsets is not None:
            fitted = gids < self._offsets[-1]
            owner[fitted] = np.searchsorted(self._offsets, gids[fitted], side="right") - 1
        return owner

    # ------------------------------------------------------------------------------------------- calls
    def _all(self, name, *args, shards=None):
        ray = self._ray
        shards = range(self.k) if shards is None else shards
        refs = [getattr(self._actors[s], name).remote(*args) for s in shards]
        try:
            return ray.get(refs)
        except ray.exceptions.RayActorError as exc:
            raise _Failure(str(exc)) from exc

    def _recover(self):
        """Recreate dead shards from their files; live ones drop the unfinished block and make it durable.

        An actor that does not answer is killed (and waited for) before its shard is recreated, so two processes
        never own one shard's files. A shard whose files are damaged raises
        :class:`~predict.shard_log.CorruptLogError` (and is not recreated)."""
        ray = self._ray
        for s, actor in enumerate(self._actors):
            try:
                ray.get(actor.recover.remote())
            except ray.exceptions.RayActorError:
                _kill_and_wait(ray, actor)
                new = self._new_actor(s)
                try:
                    ray.get(new.ping.remote(), timeout=_START_TIMEOUT)
                except ray.exceptions.RayActorError as exc:
                    raise CorruptLogError(f"shard {s} could not be restored from {self.directory}: {exc}") from None
                self._actors[s] = new
        self._all("truncate", self.n_records)  # an add that did not complete everywhere

    # ------------------------------------------------------------------------------------------- reads
    def gathered_filter(self) -> IndividualRenyiFilter:
        """A copy of all budgets in global order, as one :class:`IndividualRenyiFilter` (read it, don't charge it)."""
        parts = self._guard(lambda: self._all("budgets"))
        n = self.n_records
        spent, retired, removed = np.zeros(n), np.zeros(n, dtype=bool), np.zeros(n, dtype=bool)
        for gids, sp, ret, rem in parts:
            spent[gids], retired[gids], removed[gids] = sp, ret, rem
        state = IndividualRenyiFilter(self.config["budget"], 0, accounting=self.config["accounting"]).state_dict()
        state.update(spent=spent, retired=retired, removed=removed)
        return IndividualRenyiFilter.from_state_dict(state)

    def records(self) -> tuple[np.ndarray, np.ndarray]:
        """``(points as the searches hold them, labels)`` in global order."""
        parts = self._guard(lambda: self._all("records"))
        d = parts[0][1].shape[1]
        X, y = np.zeros((self.n_records, d), dtype=np.float32), np.zeros(self.n_records, dtype=np.int64)
        for gids, pts, lab in parts:
            X[gids], y[gids] = pts, lab
        return X, y

    def _guard(self, fn):
        try:
            return fn()
        except _Failure as exc:
            self._recover()
            raise ShardFailureError(f"a shard died ({exc}); it was restored from its last snapshot and nothing of "
                                    "this call was released; repeat the call.") from None

    # ------------------------------------------------------------------------------------------ writes
    def add(self, X: np.ndarray, y: np.ndarray, prior: np.ndarray) -> np.ndarray:
        """Route new records (raw rows) with their prior spends to their shards; returns their global indices."""
        n0, m = self.n_records, int(y.shape[0])
        gids = np.arange(n0, n0 + m, dtype=np.int64)
        owner = self._owner(gids)

        def run():
            refs = [self._actors[s].add.remote(X[owner == s], y[owner == s], gids[owner == s], prior[owner == s])
                    for s in range(self.k) if (owner == s).any()]
            try:
                self._ray.get(refs)
            except self._ray.exceptions.RayActorError as exc:
                raise _Failure(str(exc)) from exc

        self._guard(run)
        self.n_records = n0 + m
        return gids

    def remove(self, gids: np.ndarray) -> None:
        """Route validated global indices to their shards (durable before it returns)."""
        gids = np.unique(np.asarray(gids, dtype=np.int64))
        owner = self._owner(gids)
        shards = [s for s in range(self.k) if (owner == s).any()]

        def run():
            refs = [self._actors[s].remove.remote(gids[owner == s]) for s in shards]
            try:
                self._ray.get(refs)
            except self._ray.exceptions.RayActorError as exc:
                raise _Failure(str(exc)) from exc

        self._guard(run)

    # ----------------------------------------------------------------------------------------- predict
    def predict(self, clf: Any, Q: np.ndarray) -> np.ndarray:
        """Labels for validated queries ``Q``, answered by the shards; see the module docstring (one block)."""
        ray = self._ray
        n, c = Q.shape[0], clf.n_classes_
        out = np.empty(n, dtype=np.int64)
        tq_all = clf.search_.prepare_queries(Q)
        bs = clf.search_.block_size
        tau = float(clf.tau)
        mark = (clf.n_queries_, clf.n_answered_, len(clf._log), clf._public_X, clf._public_y)
        try:
            for s in range(0, n, bs):
                tq = tq_all[s:s + bs]
                m = int(tq.shape[0])
                pub = clf._public_pairs(tq) if clf.reuse_predictions else None
                noise = clf._rng.standard_normal((m, 1 + c))
                counts = self._all("begin", ray.put(tq.numpy()), tau)
                for t in range(m):
                    pub_count, pub_votes = 0, None
                    if pub is not None:
                        pub_count, pub_votes = clf._public_votes(pub, t, out[s:s + t])
                    count = float(exact_totals(add_digits(counts))[0]) + pub_count + clf.sigma_count_ * noise[t, 0]
                    K = max(count, float(clf.min_count))
                    replies = self._all("step", K)
                    votes = exact_totals(add_digits([r[0] for r in replies]))
                    counts = [r[1] for r in replies]
                    out[s + t] = clf._release(votes, pub_votes, K, noise[t], None)
                entries = [r[2] for r in replies]  # per shard, per query of the block
                for t in range(m):
                    clf._log.append(tuple(np.concatenate([e[t][j] for e in entries]) for j in range(3)))
                if clf.reuse_predictions:
                    clf._public_X = np.concatenate([clf._public_X, tq.numpy()])
                    clf._public_y = np.concatenate([clf._public_y, out[s:s + m]])
        except _Failure as exc:
            clf.n_queries_, clf.n_answered_ = mark[0], mark[1]  # first: _recover may raise CorruptLogError
            del clf._log[mark[2]:]
            clf._public_X, clf._public_y = mark[3], mark[4]
            self._recover()
            clf._resync_audit()
            raise ShardFailureError(f"a shard died during predict ({exc}); it was restored from its last snapshot "
                                    f"and none of the {n} queries of this call was released; repeat the call."
                                    ) from None
        return out


class ShardedBudgets:
    """``filter_`` of a sharded classifier: reads gather every shard's budgets into one
    :class:`IndividualRenyiFilter` copy (global order); ``remove`` is validated on it, then routed to the owners.
    Charges are made by the shards only: ``admit``, ``charge``, ``retire`` and ``add`` are not offered here."""

    _NOT_HERE = ("admit", "charge", "retire", "add")

    def __init__(self, cluster: ShardedCluster):
        self._cluster = cluster

    def __getattr__(self, name):
        if name.startswith("_") or name in self._NOT_HERE:
            raise AttributeError(f"ShardedBudgets has no attribute {name!r} (the shards' filters make every charge).")
        return getattr(self._cluster.gathered_filter(), name)

    def remove(self, indices: ArrayLike) -> None:
        copy = self._cluster.gathered_filter()
        copy.remove(indices)  # validates the indices exactly as the single process does
        self._cluster.remove(np.flatnonzero(copy.removed))

    def __reduce_ex__(self, protocol):
        return self._cluster.__reduce_ex__(protocol)

    def __repr__(self):
        return f"ShardedBudgets(shards={self._cluster.k}, n_records={self._cluster.n_records})"
