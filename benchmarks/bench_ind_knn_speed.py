"""Speed of IndKNNClassifier (issue 5, "Speed"): exact Ind-KNN against the bare block product and a per-query loop.

Setting (issue 5): n = 50,000 private records, d = 768 float32 features, T = 2,000 queries, on this shared
2-core machine. Data are synthetic unit vectors around 100 random centres (label = centre mod 10), so that each
query has a dense neighbourhood; tau is set from a sample of kernel values so that about ``--pairs`` records per
query are selected (the papers' tuned settings select tens to hundreds).

Measured in one run (after a warm-up on 64 other queries), the floor, the search and Ind-KNN each ``--repeat``
times over all T queries, keeping the best (the load of the shared machine changes during a run):

* **floor**: the bare block matrix product plus threshold -- ``torch.matmul`` of 256 queries against the
  records, ``>= tau``, ``torch.nonzero`` -- with nothing else;
* **search**: :class:`predict.neighbours.ExactSearch` alone (the floor plus the sparse pair extraction);
* **Ind-KNN exact**: ``IndKNNClassifier(search="exact").predict`` (search + the sequential budget loop with
  the individual filter);
* **published style**: :func:`published_style_ind_knn.published_style_predict` (one query at a time, float64,
  full-length arrays) on the first ``--baseline-queries`` queries, extrapolated linearly to T (the per-query
  cost does not depend on the query's position);
* **LSH vs exact** at n = ``--lsh-n`` (default 200,000), ``--lsh-queries`` queries: ``predict`` time of both,
  the LSH index build time, the recall of selected pairs (pairs LSH finds / pairs exact search finds), and how
  often the two classifiers' answers and the true cluster labels agree.

Run from the repository root: ``python -m benchmarks.bench_ind_knn_speed`` (``--quick`` for a small smoke run).
Writes its section of ``benchmarks/results/ind_knn.md``.
"""

import argparse
import pathlib
import sys
import time

import numpy as np
import torch

from benchmarks._common import load_average, markdown_table
from benchmarks.published_style_ind_knn import published_style_predict
from dpledger.predict.ind_knn import IndKNNClassifier
from dpledger.predict.neighbours import ExactSearch

RESULTS = pathlib.Path(__file__).resolve().parent / "results" / "ind_knn.md"


def clustered(n, d, rng, centres, spread):
    labels = rng.integers(0, centres.shape[0], n)
    X = centres[labels] + spread * rng.standard_normal((n, d), dtype=np.float32)
    X /= np.linalg.norm(X, axis=1, keepdims=True)
    return np.ascontiguousarray(X, dtype=np.float32), labels % 10


def pick_tau(X, Q, kernel, nu, pairs):
    """Kernel value whose upper tail holds ``pairs`` records per query on average (a sample of 32 queries)."""
    s = torch.from_numpy(Q[:32]) @ torch.from_numpy(X).T
    k = s if kernel == "cosine" else torch.exp(-(2.0 - 2.0 * s).clamp(min=0) / nu**2)
    q = 1.0 - pairs / X.shape[0]
    return float(np.quantile(k.numpy().ravel(), q))


def timed(fn, repeat=1):
    """(result, best wall, CPU of that run) over ``repeat`` calls (best of: the load changes during a run)."""
    best = None
    for _ in range(repeat):
        c0, t0 = time.process_time(), time.perf_counter()
        out = fn()
        run = (out, time.perf_counter() - t0, time.process_time() - c0)
        if best is None or run[1] < best[1]:
            best = run
    return best


def bare_floor(X, Q, tau, block=256):
    tX = torch.from_numpy(X)
    tQ = torch.from_numpy(Q)
    total = 0
    for s in range(0, Q.shape[0], block):
        total += torch.nonzero(torch.matmul(tQ[s:s + block], tX.T) >= tau).shape[0]
    return total


def ms(seconds, count):
    return f"{1e3 * seconds / count:.3g}"


def speed_section(args, rng):
    n, d, T = args.n, args.d, args.queries
    centres = rng.standard_normal((100, d), dtype=np.float32)
    centres /= np.linalg.norm(centres, axis=1, keepdims=True)
    X, y = clustered(n, d, rng, centres, args.spread)
    Q, yq = clustered(T + 64, d, rng, centres, args.spread)
    warm, Q, yq = Q[:64], Q[64:], yq[64:]
    rows, goals, notes = [], [], []
    for kernel, nu in (("cosine", None), ("rbf", 1.0)):
        tau = pick_tau(X, Q, kernel, nu, args.pairs)
        params = dict(epsilon=1.0, delta=1e-5, kernel=kernel, nu=nu, tau=tau, sigma_vote=0.5, n_queries=T,
                      n_classes=10, random_state=0)
        if kernel == "cosine":
            bare_floor(X, warm, tau)
            n_pairs, floor_wall, floor_cpu = timed(lambda: bare_floor(X, Q, tau), args.repeat)
        else:
            floor_wall = floor_cpu = None
        search = ExactSearch(X, kernel=kernel, nu=nu)
        search.pairs(warm, tau)
        pairs, search_wall, search_cpu = timed(lambda: search.pairs(Q, tau), args.repeat)
        clf = IndKNNClassifier(**params).fit(X, y)
        clf.predict(warm)

        def fresh_run():  # every timed run starts from fresh budgets
            fresh = IndKNNClassifier(**params).fit(X, y)
            t0, c0 = time.perf_counter(), time.process_time()
            labels = fresh.predict(Q)
            return fresh, labels, time.perf_counter() - t0, time.process_time() - c0

        runs = [fresh_run() for _ in range(args.repeat)]
        clf, out, ind_wall, ind_cpu = min(runs, key=lambda r: r[2])
        acc = float(np.mean(out == yq))
        m = args.baseline_queries
        (base_out, _), base_wall, base_cpu = timed(lambda: published_style_predict(
            X, y, Q[:m], kernel=kernel, nu=nu, tau=tau, sigma1=clf.sigma_count_, sigma2=0.5, budget=clf.budget_,
            min_count=30, n_classes=10, rng=np.random.default_rng(0)))
        base_per_query = base_wall / m
        avg_pairs = len(pairs.indices) / T
        rows.append([
            kernel, f"{tau:.4f}", f"{avg_pairs:.0f}",
            "-" if floor_wall is None else ms(floor_wall, T), ms(search_wall, T), ms(ind_wall, T),
            f"{1e3 * base_per_query:.4g} (on {m})",
            f"{base_per_query * T / ind_wall:.0f}x wall / {base_cpu / m * T / max(ind_cpu, 1e-9):.0f}x CPU",
            "-" if floor_wall is None else f"{ind_wall / floor_wall:.2f}x", f"{ind_wall / search_wall:.2f}x",
            f"{100 * acc:.1f}%", clf.n_retired_,
        ])
        if kernel == "cosine":
            goals += [
                ("exact Ind-KNN, ms per query amortised (wall)", "<= 2 ms", f"{1e3 * ind_wall / T:.3g} ms",
                 ind_wall / T <= 2e-3),
                ("exact Ind-KNN, CPU ms per query / 2 cores (what an idle 2-core machine would take at best)",
                 "<= 2 ms", f"{1e3 * ind_cpu / T / 2:.3g} ms", ind_cpu / T / 2 <= 2e-3),
                ("Ind-KNN / (bare matmul + threshold), wall", "<= 1.5x", f"{ind_wall / floor_wall:.2f}x",
                 ind_wall / floor_wall <= 1.5),
                ("Ind-KNN / (bare matmul + threshold), CPU time", "<= 1.5x", f"{ind_cpu / floor_cpu:.2f}x",
                 ind_cpu / floor_cpu <= 1.5),
            ]
        goals.append((f"published-style loop / Ind-KNN ({kernel}), wall", ">= 100x",
                      f"{base_per_query * T / ind_wall:.0f}x", base_per_query * T / ind_wall >= 100))
        goals.append((f"published-style loop / Ind-KNN ({kernel}), CPU time", ">= 100x",
                      f"{base_cpu / m * T / ind_cpu:.0f}x", base_cpu / m * T / ind_cpu >= 100))
        floor_text = floor_cpu if floor_cpu is None else round(floor_cpu, 1)
        notes.append(f"{kernel}: CPU seconds (both cores) floor {floor_text}, "
                     f"search {search_cpu:.1f}, Ind-KNN {ind_cpu:.1f}, published style {base_cpu:.1f} on {m} queries.")
        print(rows[-1], file=sys.stderr)
    headers = ["kernel", "tau", "pairs / query", "floor ms/q", "search ms/q", "Ind-KNN ms/q",
               "published style ms/q", "speed-up vs published (wall / CPU time)", "Ind-KNN / floor", "Ind-KNN / search",
               "accuracy (cluster label)", "retired after T"]
    return rows, headers, goals, notes


def lsh_section(args, rng):
    n, d, T = args.lsh_n, args.d, args.lsh_queries
    centres = rng.standard_normal((100, d), dtype=np.float32)
    centres /= np.linalg.norm(centres, axis=1, keepdims=True)
    X, y = clustered(n, d, rng, centres, args.spread)
    Q, yq = clustered(T + 64, d, rng, centres, args.spread)
    warm, Q, yq = Q[:64], Q[64:], yq[64:]
    tau = pick_tau(X, Q, "cosine", None, args.pairs * n / args.n)
    params = dict(epsilon=1.0, delta=1e-5, tau=tau, sigma_vote=0.5, n_queries=T, n_classes=10, random_state=0)
    results = {}
    for search in ("exact", "lsh"):
        kw = dict(search=search, lsh_tables=30, lsh_bits=8)
        clf, build_wall, _ = timed(lambda: IndKNNClassifier(**params, **kw).fit(X, y))
        clf.predict(warm)
        clf = IndKNNClassifier(**params, **kw).fit(X, y)
        out, wall, cpu = timed(lambda: clf.predict(Q))
        pairs = clf.search_.pairs(Q[:200], tau)
        results[search] = dict(out=out, wall=wall, cpu=cpu, build=build_wall, pairs=pairs,
                               acc=float(np.mean(out == yq)))
        print(search, wall, file=sys.stderr)
    ex, ls = results["exact"], results["lsh"]
    recall = len(ls["pairs"].indices) / max(len(ex["pairs"].indices), 1)
    rows = [[s, f"{r['build']:.1f} s", ms(r["wall"], T), f"{r['cpu']:.1f} s", f"{len(r['pairs'].indices) / 200:.0f}",
             f"{100 * r['acc']:.1f}%"] for s, r in results.items()]
    agree = float(np.mean(ex["out"] == ls["out"]))
    headers = ["search", "fit (incl. index)", "predict ms/q", "predict CPU", "pairs / query (first 200)",
               "accuracy (cluster label)"]
    goal = [(f"LSH (30 tables, 8 bits) faster than exact at n = {n}, wall", "LSH < exact",
             f"{ls['wall'] / ex['wall']:.2f}x of exact", ls["wall"] < ex["wall"]),
            (f"LSH (30 tables, 8 bits) faster than exact at n = {n}, CPU time", "LSH < exact",
             f"{ls['cpu'] / ex['cpu']:.2f}x of exact", ls["cpu"] < ex["cpu"])]
    text = (f"n = {n}, d = {d}, T = {T}, tau = {tau:.4f} (cosine). Pair recall of LSH (first 200 queries): "
            f"**{100 * recall:.1f}%**; LSH and exact answers agree on {100 * agree:.1f}% of queries.")
    return rows, headers, goal, text


def write_section(marker, text):
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    doc = RESULTS.read_text() if RESULTS.exists() else "# Ind-KNN benchmarks\n"
    start, end = f"<!-- {marker}:start -->", f"<!-- {marker}:end -->"
    block = f"{start}\n{text.strip()}\n{end}"
    if start in doc and end in doc:
        doc = doc[: doc.index(start)] + block + doc[doc.index(end) + len(end):]
    else:
        doc = doc.rstrip() + "\n\n" + block + "\n"
    RESULTS.write_text(doc)


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--n", type=int, default=50_000)
    p.add_argument("--d", type=int, default=768)
    p.add_argument("--queries", type=int, default=2_000)
    p.add_argument("--pairs", type=float, default=150.0, help="target mean selected records per query")
    p.add_argument("--spread", type=float, default=0.045, help="noise per coordinate around the centres")
    p.add_argument("--baseline-queries", type=int, default=10)
    p.add_argument("--lsh-n", type=int, default=200_000)
    p.add_argument("--lsh-queries", type=int, default=1_000)
    p.add_argument("--repeat", type=int, default=3, help="timed runs of floor, search and Ind-KNN (best kept)")
    p.add_argument("--quick", action="store_true", help="small sizes (a smoke run, not for the record)")
    p.add_argument("--no-write", action="store_true")
    args = p.parse_args(argv)
    if args.quick:
        args.n, args.queries, args.lsh_n, args.lsh_queries, args.baseline_queries = 5_000, 200, 20_000, 100, 3
    load_start = load_average()
    t0 = time.perf_counter()
    rng = np.random.default_rng(12345)
    rows, headers, goals, notes = speed_section(args, rng)
    lrows, lheaders, lgoal, ltext = lsh_section(args, rng)
    goals.extend(lgoal)
    given = argv or sys.argv[1:]
    command = "python -m benchmarks.bench_ind_knn_speed" + ("" if not given else " " + " ".join(given))
    text = "\n".join([
        "## Speed (exact Ind-KNN, the floor, a published-style loop; LSH vs exact)",
        "",
        f"Command: `{command}` (from the repository root); torch threads: {torch.get_num_threads()}. "
        f"Load average (1, 5, 15 min) at start: {load_start}; at end: {load_average()} -- this machine is shared "
        f"by several agents, so wall times are inflated and noisy. Whole run {time.perf_counter() - t0:.0f} s.",
        "",
        f"n = {args.n}, d = {args.d} float32, T = {args.queries} queries; synthetic unit vectors around 100 centres "
        f"(spread {args.spread}), tau set so that about {args.pairs:g} records per query are selected; "
        "epsilon = 1, delta = 1e-5, sigma2 = 0.5, sigma1 = sqrt(T / (6B)), min_count = 30. "
        f"Times are wall-clock milliseconds per query, amortised over one predict of all T queries (block 256), "
        f"the best of {args.repeat} runs for the floor, the search and Ind-KNN (each Ind-KNN run from fresh budgets). "
        "The published-style loop is timed on its first queries and extrapolated linearly to T.",
        "",
        markdown_table(headers, rows),
        "",
        *[f"- {n_}" for n_ in notes],
        "",
        "### LSH (30 tables, 8 bits) against exact search",
        "",
        ltext,
        "",
        markdown_table(lheaders, lrows),
        "",
        "How to read this: exact search computes every (query, record) kernel value, one compute-bound float32 "
        "matrix product per block of 256 queries. LSH computes only the candidate pairs (a record and a query "
        "sharing a bucket in at least one table), about 30 / 256 of them for evenly filled buckets, as a "
        "sampled dense-dense product (`torch.sparse.sampled_addmm`): records are read once per block of 2048 "
        "queries in storage order and each candidate pair costs one dot product; it runs at a lower rate per "
        "kernel value than the blocked matrix product, so the time saved is smaller than the work saved. Pair "
        "recall is the fraction of exact pairs (kappa >= tau) that share a bucket with the query in at least "
        "one table: it is the accuracy cost of LSH, together with the change in answers and accuracy above.",
        "",
        markdown_table(["goal", "target", "measured", "status"],
                       [(g[0], g[1], g[2], "met" if g[3] else "NOT MET") for g in goals], ["l", "l", "r", "l"]),
    ])
    print(text)
    if not args.no_write and not args.quick:
        write_section("speed", text)


if __name__ == "__main__":
    main()
