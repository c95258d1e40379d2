"""Ind-KNN budgets kept between runs of ``dpledger predict --state FILE`` (DESIGN.md rule 8: restarting a
predictor must not refresh anyone's budget), in an SQLite database (Python's standard library).

Durable and transactional: a run opens the file with ``BEGIN IMMEDIATE``, so a second run on the same file waits
until the first has committed (runs are serialised: two concurrent runs on a read-modify-write file lost one run's
spending); everything the run charged is committed, together with one row appended to the charge log, before its
releases are printed. Table ``meta`` holds the state (a JSON tree whose arrays are stored as ``.npy`` blobs, read
with ``allow_pickle=False``) and a SHA-256 fingerprint of the private records and labels the budgets belong to;
table ``charges`` is append-only (one row per run: queries answered and the total spend added), and on every load
the sum of the log must equal the sum of the stored spends. The private records themselves are stored only when
asked (``keep_records``); otherwise the caller supplies them again and the classifier checks them against the
stored identities. Every malformed, truncated, empty or edited file is a one-line ``ValueError`` with nothing
changed (the transaction is rolled back).
"""

from __future__ import annotations

import hashlib
import io
import json
import math
import os
import pathlib
import secrets
import sqlite3
from typing import Any

import numpy as np
from numpy.typing import ArrayLike

__all__ = ["StateStore", "fingerprint", "FORMAT"]

FORMAT = "dpledger.cli.ind-knn-state/2"
#: The tables of a state file (``sqlite_sequence`` is SQLite's own, made with the AUTOINCREMENT column).
_TABLES = {"meta", "charges", "sqlite_sequence"}
#: Relative agreement required between the charge log and the stored spends (float sums in different orders).
LOG_RTOL = 1e-9


def fingerprint(X: ArrayLike, y: ArrayLike) -> str:
    """SHA-256 of the private records (float32, C order) and labels (int64), with their shapes."""
    h = hashlib.sha256()
    X = np.ascontiguousarray(X, dtype=np.float32)
    y = np.ascontiguousarray(y, dtype=np.int64)
    h.update(repr((X.shape, y.shape)).encode())
    h.update(X.tobytes())
    h.update(y.tobytes())
    return h.hexdigest()


def _split(value, prefix, arrays):
    if isinstance(value, dict):
        return {"dict": {k: _split(v, f"{prefix}/{k}", arrays) for k, v in value.items()}}
    if isinstance(value, np.ndarray):
        arrays[prefix] = value
        return {"array": prefix}
    if isinstance(value, (np.integer, np.floating, np.bool_)):
        value = value.item()
    if value is None or isinstance(value, (bool, int, float, str)):
        return {"value": value}
    raise TypeError(f"state of type {type(value).__name__} at {prefix!r} cannot be saved.")


def _join(node, arrays):
    if not isinstance(node, dict) or len(node) != 1:
        raise ValueError("malformed state tree")
    (kind, body), = node.items()
    if kind == "dict":
        return {k: _join(v, arrays) for k, v in body.items()}
    if kind == "array":
        return arrays[body]
    if kind == "value":
        return body
    raise ValueError("malformed state tree")


def _npy(array):
    buffer = io.BytesIO()
    np.save(buffer, array, allow_pickle=False)
    return buffer.getvalue()


class StateStore:
    """One run's transaction on a state file: ``with StateStore(path) as store: state = store.load(fp); ...;
    store.save(...)``. Commits on a normal exit, rolls back on an exception (nothing changed)."""

    def __init__(self, path: str | os.PathLike):
        self.path = pathlib.Path(path)
        self._conn = None

    def __enter__(self):
        try:
            self._create_if_absent()
            self._conn = sqlite3.connect(self.path, timeout=600.0, isolation_level=None)
            self._conn.execute("BEGIN IMMEDIATE")  # the write lock: concurrent runs wait here
            tables = {row[0] for row in self._conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
            counts = None
            if tables == _TABLES:
                counts = [self._conn.execute(f"SELECT COUNT(*) FROM {t}").fetchone()[0] for t in ("meta", "charges")]
                # AUTOINCREMENT keeps the largest id ever used: a charge log emptied by hand still shows here
                counts.append(self._conn.execute(
                    "SELECT COUNT(*) FROM sqlite_sequence WHERE name = 'charges'").fetchone()[0])
        except sqlite3.DatabaseError as err:
            self._close()
            raise ValueError(f"--state {self.path} is not a dpledger state file ({err}).") from None
        if counts is None:
            self._rollback()
            raise ValueError(f"--state {self.path} exists but holds no dpledger state (empty, truncated or another "
                             "file); budgets are never started afresh over it: use a new path for a new state.")
        if counts[0] == 0 and (counts[1] or counts[2]):
            self._rollback()
            raise ValueError(f"--state {self.path}: its state is gone but runs were charged to it: the file was "
                             "edited; refusing to continue.")
        # Decided under the write lock: the first run to commit a state makes every later run a continuation.
        self.new = counts[0] == 0
        return self

    def _create_if_absent(self):
        """Create the file with its (empty) tables atomically where it does not exist: built under a temporary name
        beside it and hard-linked into place, which fails if another run got there first (its file then serves).
        So no run ever sees the path without its tables: creating it by opening it (``sqlite3.connect``) left an
        empty file that a concurrent run, taking the write lock first, could not tell from a truncated state."""
        if self.path.exists():
            return
        tmp = self.path.with_name(f".{self.path.name}.{os.getpid()}.{secrets.token_hex(8)}.new")
        try:
            conn = sqlite3.connect(tmp, isolation_level=None)
            try:
                conn.execute("CREATE TABLE meta (key TEXT PRIMARY KEY, value BLOB NOT NULL)")
                conn.execute("CREATE TABLE charges (id INTEGER PRIMARY KEY AUTOINCREMENT, queries INTEGER NOT NULL, "
                             "spend REAL NOT NULL)")
            finally:
                conn.close()
            try:
                os.link(tmp, self.path)
            except FileExistsError:
                pass
        finally:
            tmp.unlink(missing_ok=True)

    def __exit__(self, kind, value, traceback):
        if kind is None:
            try:
                self._conn.execute("COMMIT")
            finally:
                self._close()
        else:
            self._rollback()
        return False

    def _rollback(self):
        # A failed first run leaves the file with its empty tables (a new state for the next run): removing it could
        # pull it from under a concurrent run waiting for the lock, whose budgets would then go to a deleted file.
        if self._conn is not None:
            try:
                self._conn.execute("ROLLBACK")
            except sqlite3.Error:
                pass
            self._close()

    def _close(self):
        if self._conn is not None:
            self._conn.close()
            self._conn = None

    def load(self, fingerprint: str) -> dict[str, Any] | None:
        """The stored state (its ``X``/``y`` are ``None`` unless records were kept), or ``None`` for a new file.
        Checks the format, the data fingerprint and the charge log against the stored spends."""
        rows = dict(self._conn.execute("SELECT key, value FROM meta"))
        if self.new:
            return None
        try:
            meta = json.loads(rows.pop("__meta__"))
            arrays = {k: np.load(io.BytesIO(v), allow_pickle=False) for k, v in rows.items()}
            if meta.get("format") != FORMAT:
                raise ValueError(f"format {meta.get('format')!r}")
            state = _join(meta["tree"], arrays)
            spent = np.asarray(state["filter"]["spent"], dtype=np.float64)
        except (KeyError, TypeError, ValueError, json.JSONDecodeError, OSError) as err:
            raise ValueError(f"--state {self.path} is not a valid dpledger Ind-KNN state ({err}).") from None
        if meta.get("fingerprint") != fingerprint:
            raise ValueError(f"--state {self.path} holds the budgets of other private records; use a new file for new "
                             "data (budgets are never moved between data sets).")
        logged = float(self._conn.execute("SELECT COALESCE(SUM(spend), 0) FROM charges").fetchone()[0])
        total = float(math.fsum(spent))
        if not math.isclose(logged, total, rel_tol=LOG_RTOL, abs_tol=1e-12):
            raise ValueError(f"--state {self.path}: the stored spends ({total!r}) do not match the charge log "
                             f"({logged!r}): the file was edited; refusing to continue.")
        return state

    def save(self, state: dict[str, Any], fingerprint: str, *, queries: int, spend: float, keep_records: bool) -> None:
        """Replace the stored state and append ``(queries, spend)`` to the charge log (committed on exit)."""
        state = dict(state)
        if not keep_records:
            state["X"], state["y"] = None, None
        arrays = {}
        tree = _split(state, "s", arrays)
        meta = json.dumps({"format": FORMAT, "fingerprint": fingerprint, "records_kept": bool(keep_records),
                           "tree": tree})
        self._conn.execute("DELETE FROM meta")
        self._conn.execute("INSERT INTO meta VALUES ('__meta__', ?)", (meta,))
        self._conn.executemany("INSERT INTO meta VALUES (?, ?)", [(k, _npy(v)) for k, v in arrays.items()])
        self._conn.execute("INSERT INTO charges (queries, spend) VALUES (?, ?)", (int(queries), float(spend)))
