"""One shard of a sharded Ind-KNN (predict.sharded_ind_knn): its records, their budgets, durable files.

A :class:`ShardState` is a plain Python object that :class:`~predict.sharded_ind_knn.ShardedCluster` runs as a Ray
actor. It owns its records' individual filter (every charge is made here, through the filter's admission step),
computes the per-record steps of each query (:mod:`predict.ind_knn_steps`) and keeps its budgets durable: a
snapshot plus a write-ahead log of each block's charges, ``fsync``-ed before the block's labels can be returned
(:mod:`predict.shard_log`).
"""

from __future__ import annotations

import glob
import os
from collections.abc import Callable
from typing import Any

import numpy as np
import torch
from numpy.typing import ArrayLike

from dpledger.accountants.individual_filter import IndividualRenyiFilter
from dpledger.predict._common import check_features, check_labels
from dpledger.predict.identity import fingerprints
from dpledger.predict.ind_knn_steps import count_step, vote_step
from dpledger.predict.lsh import LSHSearch
from dpledger.predict.neighbours import ExactSearch, prepare_points
from dpledger.predict.shard_log import (
    LOG_HEADER,
    LOG_ROW,
    BudgetLog,
    CorruptLogError,
    apply_records,
    fsync_directory,
    log_path,
    read_log,
    write_atomic,
)

__all__ = ["COMPACT_FACTOR", "ShardSource", "ShardState"]

#: Where one shard's records come from in :meth:`~predict.ind_knn.IndKNNClassifier.fit_shards`: a ``.npz`` file
#: with arrays ``X`` and ``y`` (read by the shard's actor), or a callable returning ``(X, y)`` (called there).
ShardSource = Callable[[], tuple[ArrayLike, ArrayLike]] | str | os.PathLike
_FILTER_KEYS = ("format", "version", "budget", "accounting", "rtol", "spent", "retired", "removed")


# -------------------------------------------------------------------------------------------------- files
#: A shard writes a full snapshot instead of a log record once its log would hold this many times the bytes of a
#: snapshot (about 10 bytes a record): the log then never costs more than one snapshot to replay, and a block that
#: touches most records costs one snapshot, as before the log.
COMPACT_FACTOR = 1.0


def _filter_arrays(filt):
    return {f"filter_{k}": np.asarray(v) for k, v in filt.state_dict().items()}


def _filter_state(arrays):
    return {k: arrays[f"filter_{k}"] for k in _FILTER_KEYS}


# ------------------------------------------------------------------------------------------------ a shard
class ShardState:
    """One shard: its records (a search), labels, global indices and individual filter; see the module docstring.

    A plain Python object (a Ray actor once wrapped by :class:`ShardedCluster`). Three ways to make one:

    * ``X`` given: built from ``X`` (raw rows, or rows as a search holds them with ``prepared=True``), ``y``,
      ``gids`` and ``filter_state`` (a :meth:`~accountants.individual_filter.IndividualRenyiFilter.state_dict`
      over these records); writes its records file;
    * ``load=True``: waits for :meth:`load` (it loads and validates its own records, :data:`ShardSource`) and
      :meth:`commit` (:meth:`ShardedCluster.from_sources`; nothing is written before the commit);
    * neither: restored from the files of shard ``shard`` under ``directory`` (snapshot, then its budget log:
      :mod:`predict.shard_log`); a damaged log raises :class:`~predict.shard_log.CorruptLogError`.
    """

    def __init__(self, config: dict, shard: int, directory: str, X: np.ndarray | None = None,
                 y: np.ndarray | None = None, gids: np.ndarray | None = None, filter_state: dict | None = None,
                 prepared: bool = False, load: bool = False):
        self._cfg = dict(config)
        self._shard, self._dir = int(shard), directory
        self._records_path = os.path.join(directory, f"shard-{shard}-records.npz")
        self._budgets_path = os.path.join(directory, f"shard-{shard}-budgets.npz")
        self._log = None
        self._discard()
        if load:
            self._loaded = None  # waits for load() and commit()
        elif X is None:
            self._restore()
        else:
            self._search = self._build(np.array(X, dtype=np.float32), prepared)
            self._y = np.array(y, dtype=np.int64)
            self._gids = np.array(gids, dtype=np.int64)
            self._filter = IndividualRenyiFilter.from_state_dict(dict(filter_state))
            self._generation = 0
            self._write_records()

    def _build(self, X, prepared):
        c = self._cfg
        if c["search"] == "lsh":
            return LSHSearch(X, kernel=c["kernel"], nu=c["nu"], block_size=c["block_size"], prepared=prepared,
                             tables=c["lsh_tables"], bits=c["lsh_bits"], hyperplanes=c["hyperplanes"])
        return ExactSearch(X, kernel=c["kernel"], nu=c["nu"], block_size=c["block_size"], prepared=prepared)

    def _discard(self):
        self._pairs, self._pending, self._t, self._entries, self._touched = None, None, 0, [], []

    # ------------------------------------------------------------------------------ loading its own records
    def load(self, source: Any) -> tuple[int, np.ndarray, np.ndarray]:
        """Load and validate this shard's records from ``source`` (:data:`ShardSource`); returns
        ``(columns, labels, fingerprints)`` (identities for the coordinator: no feature leaves the shard).
        Nothing is written before :meth:`commit`."""
        owner = f"IndKNNClassifier.fit_shards (shard {self._shard})"
        if callable(source):
            data = source()
        else:
            with np.load(os.fspath(source), allow_pickle=False) as f:
                data = (f["X"], f["y"])
        if not isinstance(data, tuple) or len(data) != 2:
            raise TypeError(f"the source of {owner} must give a pair (X, y); got {type(data).__name__}.")
        X = check_features(data[0], "X", owner, allow_empty=True)
        y, _ = check_labels(data[1], X.shape[0], owner, n_classes=self._cfg["n_classes"])
        X = prepare_points(X, self._cfg["kernel"], owner=owner)
        self._loaded = (X, y)
        return X.shape[1], y, fingerprints(X, y)

    def commit(self, config: dict, gids: np.ndarray, filter_state: dict) -> None:
        """After loading: take global indices ``gids`` and budgets ``filter_state``; build the search (with the
        final public ``config``) and write the records file (durable before it returns)."""
        X, y = self._loaded
        self._cfg = dict(config)
        self._search = self._build(X, True)
        self._y, self._gids = y, np.array(gids, dtype=np.int64)
        self._filter = IndividualRenyiFilter.from_state_dict(dict(filter_state))
        self._generation = 0
        del self._loaded
        self._write_records()

    # ----------------------------------------------------------------------------------------------- files
    # The records file (points, labels, indices, budgets) on creation, add and truncate; a budget snapshot when
    # the log has grown to a snapshot's size; in between, one log record per block, remove or recovery.
    def _write_records(self):
        self._generation += 1
        write_atomic(self._records_path, {"X": self._search.points, "y": self._y, "gids": self._gids,
                                          "generation": np.int64(self._generation), **_filter_arrays(self._filter)})
        self._new_log()

    def _compact(self):
        self._generation += 1
        write_atomic(self._budgets_path, {"n": np.int64(self._y.size), "generation": np.int64(self._generation),
                                          **_filter_arrays(self._filter)})
        self._new_log()

    def _new_log(self):
        """A new (empty) log on the snapshot just written; older logs are deleted (the snapshot holds them)."""
        if self._log is not None:
            self._log.close()
        self._log = BudgetLog(log_path(self._dir, self._shard, self._generation), self._generation)
        stale = [p for p in glob.glob(os.path.join(self._dir, f"shard-{self._shard}-log-*.wal"))
                 if p != self._log.path]
        for path in stale:
            os.remove(path)
        if stale:
            fsync_directory(self._dir)

    def _durable(self, local):
        """Make the budgets of records ``local`` durable before returning: one log record (``fsync``-ed), or, when
        the log would reach :data:`COMPACT_FACTOR` times a snapshot's size, a new snapshot instead (it holds
        these changes too, and costs no more than logging them and compacting after)."""
        local = np.unique(np.concatenate([np.zeros(0, dtype=np.intp), *local]) if isinstance(local, list) else local)
        if self._log.size + LOG_HEADER + LOG_ROW * local.size >= COMPACT_FACTOR * (10 * self._y.size + 256):
            self._compact()
        elif local.size:
            f = self._filter
            self._log.append(local, f.spent_at(local), f.retired[local], f.removed[local])

    def _restore(self):
        with np.load(self._records_path, allow_pickle=False) as rec:
            rec = dict(rec)
        state, generation = _filter_state(rec), int(rec["generation"])
        if os.path.exists(self._budgets_path):
            with np.load(self._budgets_path, allow_pickle=False) as bud:
                bud = dict(bud)
            if int(bud["generation"]) > generation:
                if int(bud["n"]) != rec["y"].size:
                    raise CorruptLogError(f"{self._budgets_path} does not match the records of its shard.")
                state, generation = _filter_state(bud), int(bud["generation"])
        path = log_path(self._dir, self._shard, generation)
        records, _, _ = read_log(path, generation, rec["y"].size)
        state = apply_records(state, records, path)
        try:
            filt = IndividualRenyiFilter.from_state_dict(state)
        except (TypeError, ValueError) as exc:
            raise CorruptLogError(f"the budgets of shard {self._shard} under {self._dir} are invalid: {exc}") from None
        self._search = self._build(rec["X"], True)
        self._y, self._gids, self._filter, self._generation = rec["y"], rec["gids"], filt, generation
        self._compact()  # one snapshot with the log folded in; a torn last record is gone with its log

    # ---------------------------------------------------------------------------------------------- queries
    def begin(self, tq: np.ndarray, tau: float) -> np.ndarray:
        """Kernel pairs of a block of prepared queries; the count step of its first query (digit sums)."""
        self._discard()
        self._pairs = self._search._pairs_prepared(torch.from_numpy(np.array(tq, dtype=np.float32)), tau)
        return self._count(0)

    def _count(self, t):
        idx, kap = self._pairs.query(t)
        self._pending, digits = count_step(self._filter, idx, kap, self._cfg["sigma_count"])
        self._touched.append(self._pending.idx)  # every record this query may charge (the active selected ones)
        self._t = t
        return digits

    def step(self, K: float) -> tuple[np.ndarray, np.ndarray | None, list | None]:
        """Vote step of the pending query with noisy count ``K``; then the count step of the next query, or, after
        the block's last query, a durable log record of the block's charges and the block's audit entries."""
        digits, (idx, old, new) = vote_step(self._filter, self._y, self._pending, K, self._cfg["sigma_vote"],
                                            self._cfg["n_classes"])
        self._entries.append((self._gids[idx], old, new))
        if self._t + 1 < self._pairs.n_queries:
            return digits, self._count(self._t + 1), None
        self._durable(self._touched)  # before any label of the block is returned
        entries = self._entries
        self._discard()
        return digits, None, entries

    # ------------------------------------------------------------------------------------------- data, state
    def add(self, X: np.ndarray, y: np.ndarray, gids: np.ndarray, prior: np.ndarray) -> None:
        """Append records (raw rows) with their prior spends; durable before it returns."""
        self._search.add(np.array(X, dtype=np.float32))
        self._filter.add(len(y), spent=np.asarray(prior, dtype=np.float64))
        self._y = np.concatenate([self._y, np.asarray(y, dtype=np.int64)])
        self._gids = np.concatenate([self._gids, np.asarray(gids, dtype=np.int64)])
        self._write_records()

    def truncate(self, n: int) -> None:
        """Drop records with global index ``>= n`` (an add the coordinator never completed; they were never
        charged); durable before it returns."""
        keep = self._gids < n
        if keep.all():
            return
        state = self._filter.state_dict()
        for key in ("spent", "retired", "removed"):
            state[key] = state[key][keep]
        self._search = self._build(self._search.points[keep], True)
        self._filter = IndividualRenyiFilter.from_state_dict(state)
        self._y, self._gids = self._y[keep], self._gids[keep]
        self._write_records()

    def remove(self, gids: np.ndarray) -> None:
        """Remove records by global index; durable before it returns."""
        local = np.searchsorted(self._gids, np.asarray(gids, dtype=np.int64))
        self._filter.remove(local)
        self._durable(local)

    def recover(self) -> None:
        """Drop an unfinished block (its charges stay) and make the budgets durable."""
        touched = self._touched
        self._discard()
        self._durable(touched)

    def budgets(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """``(global indices, spent, retired, removed)`` of this shard's records."""
        f = self._filter
        return self._gids, f.spent, f.retired, f.removed

    def records(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``(global indices, points as the search holds them, labels)``."""
        return self._gids, np.array(self._search.points), self._y

    def ping(self) -> bool:
        return True
