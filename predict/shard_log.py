"""A shard's durable budgets: a full snapshot plus a write-ahead log of the charges since (predict.sharded_ind_knn).

Each shard of a sharded :class:`~predict.ind_knn.IndKNNClassifier` keeps its records' budgets durable so that a
restarted shard never gets fresher budgets than those behind any returned release (DESIGN.md rule 8). Rewriting
the whole budget array after every query block costs ``O(records)`` bytes per block; instead a block *appends*
the new state of the records it touched to a log and ``fsync``-s it before any label of the block is returned;
when the log would grow as large as a full snapshot, the shard writes a snapshot instead and starts a new log
(compaction; :data:`~predict.shard_state.COMPACT_FACTOR`).

Files of shard ``s`` (in the snapshot directory)
-----------------------------------------------
* ``shard-s-records.npz`` -- the records (points, labels, global indices) and their budgets; written at
  creation, add and truncate (:func:`write_atomic`: temporary file, ``fsync``, rename, ``fsync`` of the
  directory). Its ``generation`` numbers the snapshot.
* ``shard-s-budgets.npz`` -- a budget snapshot (compaction), ``generation`` likewise.
* ``shard-s-log-G.wal`` -- the log on top of the snapshot of generation ``G``; older logs are deleted after a
  newer snapshot is durable (and ignored if a crash left them).

A log is a sequence of records, each::

    header  <4s Q Q I I I>  magic b"DPWL", generation G, sequence number (0, 1, ...), payload bytes,
                            CRC-32 of the payload, CRC-32 of the 28 header bytes before it
    payload                 m local indices (int64), their spends (float64), flags (uint8: 1 retired, 2 removed)

The state of the touched records is written, not the charges: replay sets values, which makes it idempotent and
independent of the float order in which charges were added.

Recovery
--------
Snapshot of the highest generation ``G``, then the records of ``shard-s-log-G.wal`` in order. Only the last
record can be torn (a crash during its append; it was never acknowledged, so the release it belonged to was never
returned): a record that fails its checks and after which no valid record header follows is *not durable* and
is dropped, with everything after it. A record that fails its checks and is followed by a valid one, a valid
record with the wrong generation or sequence number, or one that would lower a spend or clear a retired or
removed flag is corruption: :class:`CorruptLogError`, and nothing is restored -- never fresher budgets.
"""

from __future__ import annotations

import os
import struct
import zlib

import numpy as np

from dpledger.mechanisms.errors import DPLedgerError

__all__ = ["LOG_HEADER", "LOG_ROW", "BudgetLog", "CorruptLogError", "LogRecord", "apply_records", "log_path",
           "read_log", "write_atomic"]

MAGIC = b"DPWL"
_HEADER = struct.Struct("<4sQQIII")  # magic, generation, sequence, payload bytes, payload CRC, header CRC
_ROW = 8 + 8 + 1  # int64 index, float64 spend, uint8 flags
#: Bytes of a record's header, and per record it holds.
LOG_HEADER, LOG_ROW = _HEADER.size, _ROW
RETIRED, REMOVED = 1, 2


class CorruptLogError(DPLedgerError, ValueError):
    """A shard's budget log (or snapshot) is damaged other than by a torn last append: nothing is restored."""


def write_atomic(path: str, arrays: dict[str, np.ndarray]) -> None:
    """Write ``arrays`` (``np.savez``) to ``path`` durably: temporary file, flush, fsync, rename, fsync directory."""
    tmp = f"{path}.tmp"
    with open(tmp, "wb") as fh:
        np.savez(fh, **arrays)
        fh.flush()
        os.fsync(fh.fileno())
    os.replace(tmp, path)
    fsync_directory(os.path.dirname(path))


def fsync_directory(directory: str) -> None:
    """Make the directory entries (a create, rename or unlink) durable."""
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def log_path(directory: str, shard: int, generation: int) -> str:
    """The log of shard ``shard`` on top of its snapshot of ``generation``."""
    return os.path.join(directory, f"shard-{shard}-log-{generation}.wal")


def encode(generation: int, sequence: int, idx: np.ndarray, spent: np.ndarray, flags: np.ndarray) -> bytes:
    """One log record (header and payload) as bytes."""
    payload = (np.ascontiguousarray(idx, dtype="<i8").tobytes() + np.ascontiguousarray(spent, dtype="<f8").tobytes()
               + np.ascontiguousarray(flags, dtype=np.uint8).tobytes())
    head = struct.pack("<4sQQII", MAGIC, generation, sequence, len(payload), zlib.crc32(payload))
    return head + struct.pack("<I", zlib.crc32(head)) + payload


class LogRecord:
    """A decoded log record: local indices, their spends and flags."""

    __slots__ = ("idx", "spent", "flags")

    def __init__(self, idx: np.ndarray, spent: np.ndarray, flags: np.ndarray):
        self.idx, self.spent, self.flags = idx, spent, flags


def _header_at(data, pos):
    """The header fields at ``pos`` if a complete header with a valid CRC is there, else None."""
    if len(data) - pos < _HEADER.size:
        return None
    magic, gen, seq, size, pcrc, hcrc = _HEADER.unpack_from(data, pos)
    if magic != MAGIC or zlib.crc32(data[pos:pos + _HEADER.size - 4]) != hcrc:
        return None
    return gen, seq, size, pcrc


def _valid_header_after(data, pos):
    """Whether a valid record header starts anywhere after ``pos`` (then a failed record is not the last)."""
    start = pos + 1
    while True:
        at = data.find(MAGIC, start)
        if at < 0:
            return False
        if _header_at(data, at) is not None:
            return True
        start = at + 1


def read_log(path: str, generation: int, n_records: int) -> tuple[list[LogRecord], int, bool]:
    """The durable records of the log at ``path`` (on a snapshot of ``generation`` with ``n_records`` records).

    Returns ``(records, durable_bytes, torn)``: the records in order, the length of the durable prefix of the
    file and whether a torn last record was dropped. A missing file is an empty log. Raises
    :class:`CorruptLogError` for anything but a torn last record (module docstring).
    """
    if not os.path.exists(path):
        return [], 0, False
    with open(path, "rb") as fh:
        data = fh.read()
    records, pos = [], 0
    while pos < len(data):
        head = _header_at(data, pos)
        ok = head is not None and pos + _HEADER.size + head[2] <= len(data)
        if ok:
            gen, seq, size, pcrc = head
            payload = data[pos + _HEADER.size:pos + _HEADER.size + size]
            ok = zlib.crc32(payload) == pcrc
        if not ok:
            if _valid_header_after(data, pos):
                raise CorruptLogError(f"budget log {path} is corrupt at byte {pos} (a damaged record followed by "
                                      "valid ones); refusing to restore this shard's budgets from it.")
            return records, pos, True  # a torn last append: never acknowledged, not durable
        if gen != generation or seq != len(records) or size % _ROW:
            raise CorruptLogError(f"budget log {path} has record {seq} of generation {gen} (size {size}) at byte "
                                  f"{pos}; expected record {len(records)} of generation {generation}.")
        m = size // _ROW
        idx = np.frombuffer(payload, dtype="<i8", count=m).astype(np.int64)
        spent = np.frombuffer(payload, dtype="<f8", count=m, offset=8 * m).astype(np.float64)
        flags = np.frombuffer(payload, dtype=np.uint8, count=m, offset=16 * m).copy()
        if ((idx < 0) | (idx >= n_records)).any() or (flags > (RETIRED | REMOVED)).any():
            raise CorruptLogError(f"budget log {path}: record {seq} names a record outside its shard or bad flags.")
        records.append(LogRecord(idx, spent, flags))
        pos += _HEADER.size + size
    return records, pos, False


def apply_records(state: dict, records: list[LogRecord], path: str) -> dict:
    """A filter ``state_dict`` with the log ``records`` replayed on it (a new dict; ``state`` is unchanged).

    Raises :class:`CorruptLogError` if a record would lower a spend or clear a retired or removed flag: the log
    only records charges and retirements, so that can only be damage, and applying it would refresh budgets.
    """
    state = dict(state)
    spent = np.array(state["spent"], dtype=np.float64)
    retired = np.array(state["retired"], dtype=bool)
    removed = np.array(state["removed"], dtype=bool)
    for k, rec in enumerate(records):
        new_ret, new_rem = (rec.flags & RETIRED) != 0, (rec.flags & REMOVED) != 0
        if (~(rec.spent >= spent[rec.idx])).any() or (retired[rec.idx] & ~new_ret).any() or \
                (removed[rec.idx] & ~new_rem).any():
            raise CorruptLogError(f"budget log {path}: record {k} would lower a spend or clear a flag; refusing to "
                                  "restore fresher budgets.")
        spent[rec.idx], retired[rec.idx], removed[rec.idx] = rec.spent, new_ret, new_rem
    state.update(spent=spent, retired=retired, removed=removed)
    return state


class BudgetLog:
    """The open log of one shard on top of its snapshot of ``generation``: :meth:`append` is durable on return."""

    def __init__(self, path: str, generation: int, sequence: int = 0, size: int = 0):
        self.path, self.generation, self.sequence, self.size = path, int(generation), int(sequence), int(size)
        self._fd = None

    def _open(self):
        created = not os.path.exists(self.path)
        self._fd = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
        if created:
            fsync_directory(os.path.dirname(self.path))

    def append(self, idx: np.ndarray, spent: np.ndarray, retired: np.ndarray, removed: np.ndarray) -> None:
        """Append the state of records ``idx`` and ``fsync``; returns once the record is durable."""
        flags = retired.astype(np.uint8) * RETIRED + removed.astype(np.uint8) * REMOVED
        data = encode(self.generation, self.sequence, idx, spent, flags)
        if self._fd is None:
            self._open()
        self._write(data)
        os.fsync(self._fd)
        self.sequence += 1
        self.size += len(data)

    def _write(self, data: bytes) -> None:
        view = memoryview(data)
        while view:
            view = view[os.write(self._fd, view):]

    def close(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None
