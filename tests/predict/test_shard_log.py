"""A shard's durable budgets (predict.shard_log, predict.shard_state): the write-ahead log of charges, torn and
damaged logs, compaction, and a shard restored from its files. No Ray: the shard is a plain object here."""

import os
import shutil
import struct
import zlib

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dpledger.accountants.individual_filter import IndividualRenyiFilter
from dpledger.predict import shard_state
from dpledger.predict.ind_knn_steps import exact_totals
from dpledger.predict.neighbours import ExactSearch
from dpledger.predict.shard_log import (
    BudgetLog,
    CorruptLogError,
    LogRecord,
    apply_records,
    encode,
    log_path,
    read_log,
)
from dpledger.predict.shard_state import ShardState

BUDGET = 1.0  # records retire within a few blocks, so flags change too


# ------------------------------------------------------------------------------------------ the log format
def _records(rng, n_records=50, count=4):
    out = []
    spent = np.zeros(n_records)
    for _ in range(count):
        idx = np.sort(rng.choice(n_records, size=int(rng.integers(1, 8)), replace=False))
        spent[idx] += rng.uniform(0, 0.01, idx.size)
        out.append((idx, spent[idx].copy(), rng.integers(0, 2, idx.size).astype(bool)))
    return out


def _write_log(path, generation, recs):
    log = BudgetLog(path, generation)
    starts = []
    for idx, spent, ret in recs:
        starts.append(log.size)
        log.append(idx, spent, ret, np.zeros(idx.size, dtype=bool))
    log.close()
    return starts


def _same(got, recs):
    assert len(got) == len(recs)
    for g, (idx, spent, ret) in zip(got, recs, strict=True):
        assert np.array_equal(g.idx, idx) and np.array_equal(g.spent, spent)
        assert np.array_equal(g.flags, ret.astype(np.uint8))


def test_log_round_trip(tmp_path):
    recs = _records(np.random.default_rng(0))
    path = str(tmp_path / "x.wal")
    _write_log(path, 3, recs)
    got, size, torn = read_log(path, 3, 50)
    _same(got, recs)
    assert size == os.path.getsize(path) and not torn
    assert read_log(str(tmp_path / "absent.wal"), 3, 50) == ([], 0, False)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(seed=st.integers(0, 2**32 - 1), data=st.data())
def test_torn_last_record_is_dropped_not_an_error(tmp_path, seed, data):
    """Any cut inside the last record (a crash during its append), or its tail zero-filled or overwritten: the
    records before it are returned and the cut one is reported torn, never an error and never partly applied."""
    recs = _records(np.random.default_rng(seed))
    path = str(tmp_path / "torn.wal")
    if os.path.exists(path):
        os.remove(path)
    starts = _write_log(path, 1, recs)
    raw = open(path, "rb").read()
    cut = data.draw(st.integers(starts[-1] + 1, len(raw) - 1), label="cut")
    how = data.draw(st.sampled_from(["truncate", "zeros", "garbage"]), label="how")
    tail = {"truncate": b"", "zeros": bytes(len(raw) - cut),
            "garbage": np.random.default_rng(seed).integers(0, 256, len(raw) - cut, dtype=np.uint8).tobytes()}[how]
    with open(path, "wb") as fh:
        fh.write(raw[:cut] + tail)
    got, size, torn = read_log(path, 1, 50)
    _same(got, recs[:-1])
    assert torn and size == starts[-1]


@pytest.mark.parametrize("where", ["payload", "header", "crc"])
def test_damaged_middle_record_is_an_error(tmp_path, where):
    """A record that fails its checks and is followed by a valid one is not a torn append: CorruptLogError."""
    recs = _records(np.random.default_rng(1))
    path = str(tmp_path / "x.wal")
    starts = _write_log(path, 1, recs)
    raw = bytearray(open(path, "rb").read())
    offset = {"payload": starts[1] + 40, "header": starts[1] + 8, "crc": starts[1] + 24}[where]
    raw[offset] ^= 0x01
    open(path, "wb").write(bytes(raw))
    with pytest.raises(CorruptLogError, match="corrupt at byte"):
        read_log(path, 1, 50)


def test_valid_records_out_of_place_are_errors(tmp_path):
    """Checksums right but the wrong generation, a missing sequence number or an index outside the shard."""
    idx, spent, flags = np.array([1, 2]), np.array([0.1, 0.2]), np.zeros(2, dtype=np.uint8)
    cases = {
        "generation": encode(1, 0, idx, spent, flags) + encode(2, 1, idx, spent, flags),
        "sequence": encode(1, 0, idx, spent, flags) + encode(1, 2, idx, spent, flags),
        "index": encode(1, 0, np.array([1, 60]), spent, flags),
    }
    for name, raw in cases.items():
        path = str(tmp_path / f"{name}.wal")
        open(path, "wb").write(raw)
        with pytest.raises(CorruptLogError):
            read_log(path, 1, 50)


def test_replay_never_lowers_a_spend_nor_clears_a_flag():
    state = IndividualRenyiFilter(1.0, 4).state_dict()
    state["spent"] = np.array([0.5, 0.2, 0.0, 1.0])
    state["retired"] = np.array([False, False, False, True])
    up = LogRecord(np.array([1]), np.array([0.3]), np.array([0], dtype=np.uint8))
    assert apply_records(state, [up], "x")["spent"][1] == 0.3
    assert state["spent"][1] == 0.2  # the input is not changed
    lower = LogRecord(np.array([0]), np.array([0.4]), np.array([0], dtype=np.uint8))
    unretire = LogRecord(np.array([3]), np.array([1.0]), np.array([0], dtype=np.uint8))
    for bad in (lower, unretire):
        with pytest.raises(CorruptLogError, match="lower a spend or clear a flag"):
            apply_records(state, [up, bad], "x")


def test_header_layout():
    """The header is what the module docstring says: 4 + 8 + 8 + 4 + 4 + 4 bytes, its CRC over the first 28."""
    raw = encode(7, 5, np.array([3]), np.array([0.25]), np.array([1], dtype=np.uint8))
    magic, gen, seq, size, pcrc, hcrc = struct.unpack_from("<4sQQIII", raw)
    assert (magic, gen, seq, size) == (b"DPWL", 7, 5, 17)
    assert pcrc == zlib.crc32(raw[32:]) and hcrc == zlib.crc32(raw[:28])


# --------------------------------------------------------------------------------------- a shard restored
def _config():
    return {"kernel": "cosine", "nu": None, "search": "exact", "block_size": 4, "lsh_tables": 3, "lsh_bits": 2,
            "hyperplanes": None, "sigma_count": 2.0, "sigma_vote": 1.0, "n_classes": 3, "budget": BUDGET,
            "accounting": "rdp"}


def _shard(directory, n=30, seed=0):
    rng = np.random.default_rng(seed)
    X, y = rng.normal(size=(n, 3)), rng.integers(0, 3, n)
    filt = IndividualRenyiFilter(BUDGET, n)
    return ShardState(_config(), 0, str(directory), X, y, np.arange(n) * 2, filt.state_dict())


def _block(shard, rng, m=4):
    """One query block on the shard alone (K from its own count; the coordinator's noise is irrelevant here)."""
    Q = ExactSearch(np.zeros((0, 3)), kernel="cosine", nu=None, block_size=4).prepare_queries(
        rng.normal(size=(m, 3)))
    digits = shard.begin(Q.numpy(), 0.2)
    for _ in range(m):
        K = max(float(exact_totals(digits)[0]), 3.0)
        _, digits, entries = shard.step(K)
    return entries


def _budgets(shard):
    _, spent, retired, removed = shard.budgets()
    return spent, retired, removed


def _restored_copy(directory, k):
    """A shard restored from a copy of the files (restoring compacts, and the live shard keeps its own)."""
    copy = directory.parent / f"{directory.name}-copy-{k}"
    shutil.copytree(directory, copy)
    return ShardState(_config(), 0, str(copy))


def _assert_budgets(a, b):
    for u, v in zip(a, b, strict=True):
        assert np.array_equal(u, v)


def test_restored_shard_has_exactly_the_live_budgets(tmp_path, monkeypatch):
    """Blocks, a remove and compactions: a shard restored from its files (snapshot + log) has the live budgets
    bit for bit, after every step; compaction happened (a budgets file, one log left)."""
    shard = _shard(tmp_path)
    rng = np.random.default_rng(1)
    for k in range(8):
        _block(shard, rng)
        if k == 3:
            shard.remove(np.array([4, 10]))  # global indices (2 x local)
        _assert_budgets(_budgets(_restored_copy(tmp_path, k)), _budgets(shard))
    spent, retired, removed = _budgets(shard)
    assert (spent > 0).any() and retired.any() and removed[[2, 5]].all()
    assert os.path.exists(tmp_path / "shard-0-budgets.npz")
    assert len([p for p in os.listdir(tmp_path) if p.endswith(".wal")]) == 1


def test_crash_during_append_drops_the_block_and_returns_nothing(tmp_path, monkeypatch):
    """The append of a block's log record is cut half-way by a crash: the step raises (its labels cannot be
    returned), and the shard restored from its files has the budgets of the block before -- the torn record is
    not durable -- never fresher ones than any acknowledged block."""
    monkeypatch.setattr(shard_state, "COMPACT_FACTOR", 1e9)  # one log, no compaction in between
    shard = _shard(tmp_path)
    rng = np.random.default_rng(2)
    _block(shard, rng)
    _block(shard, rng)
    acknowledged = _budgets(shard)

    def crash(self, data):
        os.write(self._fd, data[:len(data) // 2])
        raise SystemExit("power cut")

    monkeypatch.setattr(BudgetLog, "_write", crash)
    with pytest.raises(SystemExit):
        _block(shard, rng)
    monkeypatch.undo()
    live = _budgets(shard)
    assert (live[0] >= acknowledged[0]).all() and (live[0] > acknowledged[0]).any()  # the block charged in memory
    restored = ShardState(_config(), 0, str(tmp_path))
    _assert_budgets(_budgets(restored), acknowledged)
    _block(restored, rng)  # and it continues: the torn log was folded into a new snapshot
    _assert_budgets(_budgets(_restored_copy(tmp_path, 0)), _budgets(restored))


def test_damaged_log_refuses_to_restore(tmp_path, monkeypatch):
    """A damaged record in the middle of the log: CorruptLogError, no shard -- never budgets without the
    record's charges."""
    monkeypatch.setattr(shard_state, "COMPACT_FACTOR", 1e9)
    shard = _shard(tmp_path)
    rng = np.random.default_rng(3)
    for _ in range(3):
        _block(shard, rng)
    path = log_path(str(tmp_path), 0, 1)
    records, _, _ = read_log(path, 1, 30)
    assert len(records) == 3
    raw = bytearray(open(path, "rb").read())
    raw[40] ^= 0xFF  # inside the first record's payload
    open(path, "wb").write(bytes(raw))
    with pytest.raises(CorruptLogError, match="corrupt"):
        ShardState(_config(), 0, str(tmp_path))
    assert open(path, "rb").read() == bytes(raw)  # nothing was rewritten


def test_a_block_writes_a_log_record_not_the_budgets(tmp_path, monkeypatch):
    """The cost the log removes: a block appends one record of the records it touched (17 bytes each plus a
    32-byte header) and leaves the snapshot files alone."""
    monkeypatch.setattr(shard_state, "COMPACT_FACTOR", 1e9)
    shard = _shard(tmp_path, n=200)
    files = {p: os.path.getmtime(tmp_path / p) for p in os.listdir(tmp_path) if p.endswith(".npz")}
    entries = _block(shard, np.random.default_rng(4))
    touched = np.unique(np.concatenate([e[0] for e in entries]))
    assert os.path.getsize(log_path(str(tmp_path), 0, 1)) == 32 + 17 * touched.size
    assert {p: os.path.getmtime(tmp_path / p) for p in files} == files
