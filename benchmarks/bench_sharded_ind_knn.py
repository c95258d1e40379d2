"""Sharded Ind-KNN over Ray (issue 20 item 4): queries per second against shards, and the coordination overhead.

Setting: ``--n`` private records (default 20,000) of ``--d`` float32 features (default 256), synthetic unit
vectors around 100 centres (label = centre mod 10), ``--queries`` queries (default 1,024) in blocks of 256, tau
chosen so that about ``--pairs`` records per query are selected (default 100); epsilon 1, sigma_vote 0.5. A local
Ray (``ray.init(num_cpus=2)``) on this shared 2-core machine.

For shards = 1 (the single process, no Ray) and each ``--shards`` value (default 2, 4): a fresh classifier per run
(fresh budgets), one warm-up call, then ``--repeat`` timed ``predict`` calls over all queries, keeping the best;
the labels and every spend are checked equal to the single process's. Reported: queries per second, time per
block of 256 queries, the overhead per block against the single process, and, measured on the sharded runs,
round-trips per block and the median bytes a shard returns per round-trip (pickled replies: what Ray ships; the
block's last step also carries the block's audit entries, 24 bytes per charged record and query). A bare
Ray round-trip to the same actors (``ping`` on every shard) gives the latency floor of one query.

Durability (the shards' write-ahead logs, :mod:`predict.shard_log`): on the sharded runs, the bytes each shard
appends to its log per block and the time of its appends (``fsync`` included) and compactions, measured inside
the actors; and, without Ray, the cost per block of a log append of the records a block touches against the
full budget snapshot the shards wrote after every block before the log, for shards of ``--snapshot-sizes``
records (default 10^5, 10^6, 10^7).

Run from the repository root: ``python -m benchmarks.bench_sharded_ind_knn`` (``--quick`` for a smoke run).
Writes ``benchmarks/results/sharded_ind_knn.md``.
"""

import argparse
import os
import pathlib
import pickle
import sys
import tempfile
import time

import numpy as np
import torch

from benchmarks._common import load_average, markdown_table
from dpledger.accountants.individual_filter import IndividualRenyiFilter
from dpledger.predict.ind_knn import IndKNNClassifier
from dpledger.predict.shard_log import BudgetLog, write_atomic

RESULTS = pathlib.Path(__file__).resolve().parent / "results" / "sharded_ind_knn.md"


def clustered(n, d, rng, centres, spread):
    labels = rng.integers(0, centres.shape[0], n)
    X = centres[labels] + spread * rng.standard_normal((n, d), dtype=np.float32)
    X /= np.linalg.norm(X, axis=1, keepdims=True)
    return np.ascontiguousarray(X, dtype=np.float32), labels % 10


def pick_tau(X, Q, pairs):
    s = torch.from_numpy(Q[:32]) @ torch.from_numpy(X).T
    return float(np.quantile(s.numpy().ravel(), 1.0 - pairs / X.shape[0]))


class Meter:
    """Counts the round-trips of a cluster and the pickled size of the shards' replies."""

    def __init__(self, cluster):
        self.calls, self.sizes, self._orig = {}, {}, cluster._all

        def all_(name, *args, **kw):
            out = self._orig(name, *args, **kw)
            self.calls[name] = self.calls.get(name, 0) + 1
            last = name == "step" and out[0][2] is not None  # the block's last query: with its audit entries
            key = "last" if last else name
            self.sizes.setdefault(key, []).append(sum(len(pickle.dumps(r)) for r in out) / len(out))
            return out

        cluster._all = all_


def _instrument(shard):
    """Run in a shard's actor (``__ray_call__``): count the bytes and time of its log appends and compactions."""
    from dpledger.predict import shard_log

    stats = {"bytes": 0, "appends": 0, "append_s": 0.0, "compactions": 0, "compact_s": 0.0}
    shard._bench_stats = stats
    append, compact = shard_log.BudgetLog.append, type(shard)._compact

    def timed_append(self, *a):
        t0, before = time.perf_counter(), self.size
        append(self, *a)
        stats["append_s"] += time.perf_counter() - t0
        stats["bytes"] += self.size - before
        stats["appends"] += 1

    def timed_compact(self):
        t0 = time.perf_counter()
        compact(self)
        stats["compact_s"] += time.perf_counter() - t0
        stats["compactions"] += 1

    shard_log.BudgetLog.append = timed_append
    type(shard)._compact = timed_compact  # (Ray's actor class copies the methods of ShardState)


def _stats(shard):
    return shard._bench_stats


def durability_table(sizes, touched, tmp):
    """Per block, without Ray: a log append of ``touched`` records against a full budget snapshot."""
    rows = []
    rng = np.random.default_rng(1)
    for n in sizes:
        filt = IndividualRenyiFilter(1.0, n)
        state = {f"filter_{k}": np.asarray(v) for k, v in filt.state_dict().items()}
        path = os.path.join(tmp, f"snap-{n}.npz")
        snaps = []
        for _ in range(5):
            t0 = time.perf_counter()
            write_atomic(path, state)
            snaps.append(time.perf_counter() - t0)
        snap_s = float(np.median(snaps))
        idx = np.sort(rng.choice(n, size=min(touched, n), replace=False))
        log = BudgetLog(os.path.join(tmp, f"log-{n}.wal"), 1)
        appends = []
        for _ in range(25):
            t0 = time.perf_counter()
            log.append(idx, np.full(idx.size, 0.5), np.zeros(idx.size, bool), np.zeros(idx.size, bool))
            appends.append(time.perf_counter() - t0)
        log_s = float(np.median(appends))
        log.close()
        rows.append((f"{n:,}", f"{os.path.getsize(path):,}", f"{1e3 * snap_s:.1f}", f"{log.size // 25:,}",
                     f"{1e3 * log_s:.2f}", f"{snap_s / log_s:.0f}x"))
    return markdown_table(["records on the shard", "full snapshot, bytes", "full snapshot, ms (fsync; median of 5)",
                           f"log record of {touched:,} touched records, bytes", "log append, ms (fsync; median of 25)",
                           "snapshot / log time"], rows)


def run(args):
    import ray

    rng = np.random.default_rng(0)
    centres = rng.standard_normal((100, args.d), dtype=np.float32)
    centres /= np.linalg.norm(centres, axis=1, keepdims=True)
    X, y = clustered(args.n, args.d, rng, centres, 0.6)
    Q, _ = clustered(args.queries + 64, args.d, rng, centres, 0.6)
    warm, Q = Q[:64], Q[64:]
    tau = pick_tau(X, Q, args.pairs)
    params = dict(epsilon=1.0, delta=1e-5, tau=tau, sigma_vote=0.5, n_queries=args.queries, n_classes=10,
                  random_state=0, block_size=256)
    blocks = -(-args.queries // 256)

    def timed(make):
        best = None
        for _ in range(args.repeat):
            clf = make()
            clf.predict(warm)
            t0 = time.perf_counter()
            labels = clf.predict(Q)
            wall = time.perf_counter() - t0
            if best is None or wall < best[0]:
                if best is not None:
                    best[1]._stop_cluster()
                best = (wall, clf, labels)
            else:
                clf._stop_cluster()
        return best

    wall1, one, labels1 = timed(lambda: IndKNNClassifier(**params).fit(X, y))
    selected = one.filter_.spent > 0
    rows = [("1 (one process)", f"{args.queries / wall1:,.0f}", f"{1e3 * wall1 / blocks:.1f}", "-", "-", "-", "-",
             "-")]
    notes, durable = [], []
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, configure_logging=False)
    try:
        with tempfile.TemporaryDirectory() as tmp:
            for k in args.shards:
                wall, clf, labels = timed(lambda k=k: IndKNNClassifier(**params, shards=k, backend="ray",
                                                                       snapshot_dir=tmp).fit(X, y))
                same = np.array_equal(labels, labels1) and np.array_equal(clf.filter_.spent, one.filter_.spent)
                # round-trips and bytes of one more call (fresh budgets, same queries)
                probe = IndKNNClassifier(**params, shards=k, backend="ray", snapshot_dir=tmp).fit(X, y)
                probe.predict(warm)
                meter = Meter(probe._cluster)
                ray.get([a.__ray_call__.remote(_instrument) for a in probe._cluster._actors])
                probe.predict(Q)
                dur = ray.get([a.__ray_call__.remote(_stats) for a in probe._cluster._actors])
                n_compact = sum(d["compactions"] for d in dur)
                snap = os.path.join(probe._cluster.directory, "shard-0-budgets.npz")
                durable.append((str(k), f"{np.mean([d['bytes'] for d in dur]) / blocks:,.0f}",
                                f"{1e3 * np.mean([d['append_s'] for d in dur]) / blocks:.2f}", f"{n_compact}",
                                f"{1e3 * sum(d['compact_s'] for d in dur) / max(1, n_compact):.1f}",
                                f"{os.path.getsize(snap):,}" if os.path.exists(snap) else "-"))
                trips = sum(meter.calls.values()) / blocks
                sizes = {key: float(np.median(v)) for key, v in meter.sizes.items()}
                actors = probe._cluster._actors
                for _ in range(20):
                    ray.get([a.ping.remote() for a in actors])
                t0 = time.perf_counter()
                for _ in range(200):
                    ray.get([a.ping.remote() for a in actors])
                ping = (time.perf_counter() - t0) / 200
                probe._stop_cluster()
                clf._stop_cluster()
                overhead = (wall - wall1) / blocks
                rows.append((str(k), f"{args.queries / wall:,.0f}", f"{1e3 * wall / blocks:.1f}",
                             f"{1e3 * overhead:.1f} ({1e3 * overhead / 256:.2f} per query)", f"{trips:.0f}",
                             f"{sizes['begin']:.0f} / {sizes['step']:.0f} / {sizes['last']:,.0f}", f"{1e3 * ping:.2f}",
                             "yes" if same else "NO"))
    finally:
        ray.shutdown()
    avg_pairs = float(np.mean([len(one.search_.pairs(Q[:64], tau).indices) / 64]))
    notes.append(f"n = {args.n:,}, d = {args.d}, {args.queries:,} queries in blocks of 256, tau = {tau:.4f} "
                 f"(about {avg_pairs:.0f} selected records per query), {int(selected.sum()):,} records charged; "
                 f"best of {args.repeat}; load average {load_average()}.")
    table = markdown_table(["shards", "queries/s", "ms per block", "overhead per block vs one process, ms",
                            "round-trips per block", "reply bytes per shard (begin / step / last step with audit)",
                            "bare round-trip to all shards, ms", "labels and spends identical"], rows)
    durable_table = markdown_table(["shards", "log bytes per block per shard", "log append ms per block per shard",
                                    "compactions (all shards, whole call)", "ms per compaction",
                                    "shard 0 snapshot bytes"], durable)
    with tempfile.TemporaryDirectory() as tmp:
        micro = durability_table(args.snapshot_sizes, int(round(256 * args.pairs)), tmp)
    return table, notes, durable_table, micro


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--n", type=int, default=20_000)
    p.add_argument("--d", type=int, default=256)
    p.add_argument("--queries", type=int, default=1024)
    p.add_argument("--pairs", type=float, default=100)
    p.add_argument("--shards", type=int, nargs="+", default=[2, 4])
    p.add_argument("--repeat", type=int, default=2)
    p.add_argument("--snapshot-sizes", type=int, nargs="+", default=[10**5, 10**6, 10**7])
    p.add_argument("--quick", action="store_true")
    args = p.parse_args(argv)
    if args.quick:
        args.n, args.queries, args.repeat, args.snapshot_sizes = 2_000, 256, 1, [10**4, 10**5]
    table, notes, durable, micro = run(args)
    text = "\n".join(["## Sharded Ind-KNN over Ray (issue 20)", "",
                      "Command: `python -m benchmarks.bench_sharded_ind_knn" + (" --quick" if args.quick else "") + "`",
                      "", table, "", *notes, "", "Durability on the sharded runs (write-ahead log):", "", durable,
                      "", "Durability per block without Ray (one shard's files, this machine's disk):", "", micro,
                      ""])
    print(text)
    if not args.quick:
        RESULTS.write_text(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
