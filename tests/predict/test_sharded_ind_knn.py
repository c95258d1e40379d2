"""Sharded Ind-KNN over Ray (predict.sharded_ind_knn): the same outputs as one process, bit for bit, and budgets
that survive a killed shard.

Needs the ``ray`` extra; starts a local Ray with two CPUs for the module and shuts it down after. Small data:
starting an actor (a Python process importing torch) costs about a second here, so examples are few.
"""

import copy
import os
import pickle
import time
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

ray = pytest.importorskip("ray", reason="the sharded Ind-KNN tests need Ray: pip install -e '.[ray]'")

from dpledger.predict import IndKNNClassifier  # noqa: E402
from dpledger.predict.sharded_ind_knn import CorruptLogError, ShardFailureError  # noqa: E402


def _kill_and_wait(actor, attempts=200):
    """``ray.kill`` and wait until the actor is dead: the kill is asynchronous, and a call issued right after it
    can still be served (CI once saw a ping answered after the kill), which made the fault land later than the
    test meant."""
    ray.kill(actor)
    for _ in range(attempts):
        try:
            ray.get(actor.ping.remote(), timeout=60)
        except ray.exceptions.ActorDiedError:
            return
        except ray.exceptions.RayActorError:  # unavailable (being killed), not yet reported dead
            pass
        time.sleep(0.05)
    pytest.fail(f"the actor still answered {attempts} pings after ray.kill")


@pytest.fixture(scope="module", autouse=True)
def ray_session():
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, configure_logging=False)
    yield
    ray.shutdown()


def _pair(tmp_path, shards, **kw):
    params = {**dict(epsilon=1.0, delta=1e-5, tau=0.4, sigma_vote=0.4, n_queries=40, min_count=3, block_size=8,
                     random_state=7), **kw}
    one = IndKNNClassifier(**params)
    many = IndKNNClassifier(**params, shards=shards, backend="ray", snapshot_dir=tmp_path)
    return one, many


def _assert_same(one, many):
    f1, f2 = one.filter_, many.filter_
    assert np.array_equal(f1.spent, f2.spent)  # exact, not allclose
    assert np.array_equal(f1.retired, f2.retired)
    assert np.array_equal(f1.removed, f2.removed)
    assert one.privacy_report(1e-5) == many.privacy_report(1e-5)
    assert (one.n_queries_, one.n_answered_) == (many.n_queries_, many.n_answered_)


operations = st.lists(
    st.one_of(
        st.tuples(st.just("predict"), st.integers(0, 20)),
        st.tuples(st.just("add"), st.integers(1, 6)),
        st.tuples(st.just("remove"), st.integers(1, 4)),
    ),
    min_size=1,
    max_size=5,
)


@settings(max_examples=4, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture,
                                                                 HealthCheck.too_slow])
@given(seed=st.integers(0, 2**32 - 1), shards=st.integers(2, 4), n=st.integers(4, 40),
       kernel=st.sampled_from(["cosine", "rbf"]), search=st.sampled_from(["exact", "lsh"]),
       reuse=st.booleans(), ops=operations)
def test_sharded_equals_single_process(tmp_path, seed, shards, n, kernel, search, reuse, ops):
    """Labels, spends, retired and removed records, report and audit equal the single process's exactly."""
    rng = np.random.default_rng(seed)
    c = 3
    X, y = rng.normal(size=(n, 3)), rng.integers(0, c, n)
    extra = dict(n_classes=c, kernel=kernel, nu=1.5 if kernel == "rbf" else None, search=search, lsh_tables=3,
                 lsh_bits=2, reuse_predictions=reuse, epsilon=float(rng.uniform(0.3, 3.0)),
                 sigma_vote=float(rng.uniform(0.3, 4.0)))  # from every record clipped at once to several queries
    one, many = _pair(tmp_path, shards, **extra)
    one.fit(X, y)
    many.fit(X, y)
    _assert_same(one, many)
    for op, size in ops:
        if op == "predict":
            Q = rng.normal(size=(size, 3))
            assert np.array_equal(one.predict(Q), many.predict(Q))
        elif op == "add":
            Xa = np.vstack([rng.normal(size=(size - 1, 3)), X[:1]])  # the last one re-adds a known record
            ya = np.concatenate([rng.integers(0, c, size - 1), y[:1]])
            if not one.filter_.removed[0]:  # removed, then added back: it keeps its spend
                one.remove([0])
                many.remove([0])
            assert np.array_equal(one.add(Xa, ya), many.add(Xa, ya))
        else:
            idx = rng.choice(one.filter_.n_records, size=min(size, one.filter_.n_records), replace=False)
            one.remove(idx)
            many.remove(idx)
        _assert_same(one, many)
    assert np.array_equal(one.median_epsilon_history(1e-5), many.median_epsilon_history(1e-5))
    a, b = one.state_dict(), many.state_dict()
    for key in ("X", "y", "fingerprints", "median_spend", "public_X", "public_y"):
        assert np.array_equal(a[key], b[key])
    many._stop_cluster()


def _data(seed=0, n=60, c=3):
    rng = np.random.default_rng(seed)
    return rng.normal(size=(n, 4)), rng.integers(0, c, n), rng.normal(size=(200, 4))


def test_killed_shard_between_calls_restarts_from_its_snapshot(tmp_path):
    """A shard killed between calls: the next call fails and releases nothing; the shard comes back with exactly
    the budgets of the last returned release (never fresh ones); the stream continues, still equal to one
    process once it is given the same charges."""
    X, y, Q = _data()
    one, many = _pair(tmp_path, 3, n_classes=3, epsilon=20.0)  # budgets that last beyond the first blocks
    one.fit(X, y)
    many.fit(X, y)
    assert np.array_equal(one.predict(Q[:40]), many.predict(Q[:40]))
    before = many.filter_.remaining
    spent_before = many.filter_.spent
    assert (spent_before > 0).any()
    victim = 1
    _kill_and_wait(many._cluster._actors[victim])
    with pytest.raises(ShardFailureError, match="restored from its last snapshot"):
        many.predict(Q[40:80])
    after = many.filter_.remaining
    assert (after <= before).all()  # no budget grew back
    on_victim = np.arange(X.shape[0]) % 3 == victim
    assert np.array_equal(many.filter_.spent[on_victim], spent_before[on_victim])  # the snapshot, not zeros
    assert many.n_queries_ == 40
    labels = many.predict(Q[80:120])  # the stream continues
    assert labels.shape == (40,) and set(labels.tolist()) <= {0, 1, 2}
    assert (many.filter_.spent >= spent_before).all()
    assert many.n_queries_ == 80
    many._stop_cluster()


def test_killed_shard_mid_call_loses_no_durable_charge(tmp_path, monkeypatch):
    """A shard killed in the middle of a call (third block): nothing of the call is returned; the restored
    shard's spends are exactly those of the blocks that completed (as one process charges the same queries),
    nobody's remaining budget grew, and the stream continues."""
    X, y, Q = _data(1)
    one, many = _pair(tmp_path, 2, n_classes=3, reuse_predictions=True, epsilon=20.0)
    one.fit(X, y)
    many.fit(X, y)
    assert np.array_equal(one.predict(Q[:16]), many.predict(Q[:16]))
    before = many.filter_.remaining
    public = many._public_y.copy()
    cluster = many._cluster
    original, steps = cluster._all, [0]

    def killing(name, *args, **kw):
        if name == "step":
            steps[0] += 1
            if steps[0] == 20:  # query 20 of the call: block 3 of 8 queries
                actor = cluster._actors[1]
                _kill_and_wait(actor)
        return original(name, *args, **kw)

    monkeypatch.setattr(cluster, "_all", killing)
    with pytest.raises(ShardFailureError, match="none of the 40 queries"):
        many.predict(Q[16:56])
    monkeypatch.undo()
    assert many.n_queries_ == 16 and np.array_equal(many._public_y, public)  # nothing of the call released
    assert (many.filter_.remaining <= before).all()
    one.predict(Q[16:32])  # the two blocks the shards completed (and snapshotted) before the kill
    on_victim = np.arange(X.shape[0]) % 2 == 1
    assert np.array_equal(many.filter_.spent[on_victim], one.filter_.spent[on_victim])
    assert (many.filter_.spent[~on_victim] >= one.filter_.spent[~on_victim]).all()
    assert many.predict(Q[56:72]).shape == (16,)  # the stream continues
    assert many.n_queries_ == 32
    assert many.median_epsilon_history(1e-5).shape == (32,)  # the audit has the answered queries only
    many._stop_cluster()


def _arm_crash_during_append(shard):
    """Run in the shard's actor process (``__ray_call__``): its next log append writes half a record, makes it
    durable and kills the process -- a crash in the middle of the append."""
    from dpledger.predict import shard_log

    def crash(self, data):
        os.write(self._fd, data[:len(data) // 2])
        os.fsync(self._fd)
        os._exit(1)

    shard_log.BudgetLog._write = crash


def _no_compaction(shard):
    """Run in the shard's actor process: log every block (no snapshot in between), so the test can tear or damage
    a log record."""
    from dpledger.predict import shard_state

    shard_state.COMPACT_FACTOR = 1e9


def test_torn_log_is_not_durable_and_damaged_log_is_refused(tmp_path):
    """A shard dies half-way through appending a block's log record: the call releases nothing, and the shard
    comes back with the budgets of the blocks it acknowledged (the torn record dropped), exactly one process's
    spends for the queries returned before; the stream continues. Then its log is damaged in the middle while it
    is down: the next call raises CorruptLogError and nothing restores fresher budgets."""
    X, y, Q = _data(2)
    one, many = _pair(tmp_path, 2, n_classes=3, epsilon=20.0)
    one.fit(X, y)
    many.fit(X, y)
    assert np.array_equal(one.predict(Q[:16]), many.predict(Q[:16]))
    acknowledged = many.filter_.spent
    cluster = many._cluster
    ray.get(cluster._actors[1].__ray_call__.remote(_no_compaction))  # its next block is a log append
    ray.get(cluster._actors[1].__ray_call__.remote(_arm_crash_during_append))
    with pytest.raises(ShardFailureError, match="none of the 16 queries"):
        many.predict(Q[16:32])
    on_victim = np.arange(X.shape[0]) % 2 == 1
    assert np.array_equal(many.filter_.spent[on_victim], acknowledged[on_victim])  # not the torn block's
    assert np.array_equal(many.filter_.spent[on_victim], one.filter_.spent[on_victim])
    assert (many.filter_.spent >= acknowledged).all()
    assert (many.filter_.spent[~on_victim] > acknowledged[~on_victim]).any()  # the live shard kept its charges
    ray.get(cluster._actors[1].__ray_call__.remote(_no_compaction))
    assert many.predict(Q[32:48]).shape == (16,)  # the stream continues: two more log records on shard 1
    spent = many.filter_.spent
    _kill_and_wait(cluster._actors[1])
    (log,) = [p for p in os.listdir(cluster.directory) if p.startswith("shard-1-log-")]
    raw = bytearray((Path(cluster.directory) / log).read_bytes())
    assert len(raw) > 2 * 32 + 17
    raw[40] ^= 0xFF  # the first record's payload
    (Path(cluster.directory) / log).write_bytes(bytes(raw))
    with pytest.raises(CorruptLogError, match="could not be restored"):
        many.predict(Q[48:56])
    assert many.n_queries_ == 32
    with pytest.raises(CorruptLogError):
        _ = many.filter_.spent  # no budgets are read from a shard that cannot be restored
    assert (spent[on_victim] > 0).any()
    many._stop_cluster()


def test_fit_shards_loads_in_the_actors_and_equals_one_process(tmp_path):
    """Each shard loads its own records (an .npz file, or a callable run in the actor): labels, spends, the report,
    add/remove routing and state_dict equal one process fitted on the concatenation; a bad shard is refused
    with that shard's error and the classifier is unchanged. Pickling a sharded classifier is refused."""
    rng = np.random.default_rng(5)
    parts = [(rng.normal(size=(n, 4)), rng.integers(0, 3, n)) for n in (13, 0, 21)]
    np.savez(tmp_path / "a.npz", X=parts[0][0], y=parts[0][1])
    np.savez(tmp_path / "c.npz", X=parts[2][0], y=parts[2][1])
    empty = parts[1]
    sources = [str(tmp_path / "a.npz"), lambda: empty, tmp_path / "c.npz"]
    one, many = _pair(tmp_path, 3, n_classes=3, search="lsh", lsh_tables=4, lsh_bits=2, tau=0.3)
    one.fit(np.vstack([p[0] for p in parts]), np.concatenate([p[1] for p in parts]))
    assert many.fit_shards(sources) is many
    _assert_same(one, many)
    Q = rng.normal(size=(24, 4))
    assert np.array_equal(one.predict(Q), many.predict(Q))
    Xa, ya = rng.normal(size=(2, 4)), rng.integers(0, 3, 2)
    for clf in (one, many):
        clf.remove([0, 14, 30])  # shard 0, shard 2, shard 2 (by range)
        assert np.array_equal(clf.add(Xa, ya), [34, 35])  # shards 1 and 2 (index mod 3)
    _assert_same(one, many)
    assert np.array_equal(one.predict(Q), many.predict(Q))
    a, b = one.state_dict(), many.state_dict()
    for key in ("X", "y", "fingerprints", "median_spend"):
        assert np.array_equal(a[key], b[key])
    with pytest.raises(TypeError, match="state_dict"):
        pickle.dumps(many)
    with pytest.raises(TypeError, match="state_dict"):
        copy.deepcopy(many.filter_)
    spent = many.filter_.spent
    bad = [str(tmp_path / "a.npz"), lambda: (np.zeros((2, 4)), np.array([0, 5])), str(tmp_path / "c.npz")]
    with pytest.raises(ValueError, match="shard 1"):
        many.fit_shards(bad)
    assert np.array_equal(many.filter_.spent, spent)  # unchanged, and still answering
    assert many.predict(Q[:4]).shape == (4,)
    with pytest.raises(ValueError, match="one source per shard"):
        many.fit_shards(sources[:2])
    many._stop_cluster()
