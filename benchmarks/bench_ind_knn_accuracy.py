"""Accuracy of IndKNNClassifier on Fashion-MNIST against Private-kNN and non-private kNN (issue 5, "Accuracy").

Data: ``predict.datasets.load("fashion-mnist", features="pca")`` -- the 60,000 training images are private; the
10,000 test images are split once (fixed permutation) into 5,000 public and 5,000 query images. Features: pixels
/ 255, 64 principal components fitted on the public split only, each row scaled to unit norm (no statistic of
the private set enters). When Fashion-MNIST is not installed the script falls back to scikit-learn's digits
(say so in the output; install with ``apt-get install dataset-fashion-mnist``).

Protocol (Ind-KNN paper Sec 4 and supplement Sec 3):

* hyper-parameters are chosen on a *validation* set of T = 1,000 images from the public split (disjoint from
  the test queries). As in the paper, tuning runs the algorithms on the private training set with the validation
  queries; that selection is not accounted for (it is the paper's protocol, applied equally to all methods);
* Ind-KNN, cosine kernel: round 1 sweeps tau with a non-private kernel vote on the validation set (tau*), round 2
  searches (sigma2, tau) with sigma2 in {0.1, 0.2, 0.4, 0.7, 1.3} and tau in tau* + {-0.02, 0, 0.02} at each
  epsilon; sigma1 = sqrt(T / (6B)),
  K_t floored at 30;
* Private-kNN (``PrivateKNNClassifier``) as the Ind-KNN paper runs it: Poisson subsample, k nearest, Gaussian
  noisy argmax, no screening (every query answered); (sampling probability, k) from the paper's Table 1 ranges
  chosen on validation, and sigma_vote calibrated so that T answers are (epsilon, 1e-5)-DP by the RDP accountant;
  the reported epsilon is the classifier's own ``privacy_report`` after the run;
* non-private kNN: majority of the k nearest (cosine), k chosen on validation;
* test: T = 1,000 queries drawn from the 5,000 test queries by seed s, noise random_state = s, s = 0..4; the
  table reports the median accuracy over the 5 seeds [min, max];
* accuracy as the number of queries grows (the paper's Figure 1b) at epsilon = 1: T in {500, 1000, 2000, 3000}
  (sigma1 and Private-kNN's noise recalibrated for each T, Ind-KNN's (sigma2, tau) from the T = 1,000 tuning),
  Ind-KNN with and without prediction reuse, 3 seeds per point.

Run from the repository root: ``python -m benchmarks.bench_ind_knn_accuracy`` (``--quick`` for a smoke run).
Writes its section of ``benchmarks/results/ind_knn.md``.
"""

import argparse
import statistics
import sys
import time

import numpy as np
import torch

from benchmarks._common import load_average, markdown_table
from benchmarks.bench_ind_knn_speed import write_section
from dpledger.predict import datasets
from dpledger.predict.calibration import private_knn_noise
from dpledger.predict.ind_knn import IndKNNClassifier
from dpledger.predict.private_knn import PrivateKNNClassifier

DELTA = 1e-5
EPSILONS = (0.5, 1.0, 2.0)
NOTES = """Notes: both private methods stay well below non-private kNN with these features (pixels -> public PCA); the
paper's Fashion-MNIST features were ImageNet ResNet50 embeddings, which are not available offline here. Epsilons
are printed with 4 decimals; the script raises if any run's proven epsilon exceeds its target. Hyper-parameter
search runs the methods on the private set with public validation queries and is not accounted (the paper's
protocol), for both methods alike. The tuning grids are small (to keep the run near 10 minutes): a chosen value on
the edge of its grid (e.g. sigma2 = 1.3 at epsilon 0.5) means a wider grid might do better."""


def knn_majority(Xp, yp, Q, k, c):
    s = torch.from_numpy(Q) @ torch.from_numpy(Xp).T
    idx = torch.topk(s, k, dim=1).indices.numpy()
    votes = np.zeros((Q.shape[0], c))
    np.add.at(votes, (np.repeat(np.arange(Q.shape[0]), k), yp[idx].ravel()), 1.0)
    return votes.argmax(axis=1)


def kernel_vote(Xp, yp, Q, tau, c):
    """Non-private Ind-KNN: the kernel-weighted vote of every record with kappa >= tau (round 1 of tuning)."""
    s = (torch.from_numpy(Q) @ torch.from_numpy(Xp).T).numpy()
    w = np.where(s >= tau, s, 0.0)
    votes = np.stack([w[:, yp == j].sum(axis=1) for j in range(c)], axis=1)
    return votes.argmax(axis=1)


def ind_knn(split, Q, yq, *, epsilon, sigma2, tau, seed, reuse=False, c=10):
    clf = IndKNNClassifier(epsilon=epsilon, delta=DELTA, kernel="cosine", tau=tau, sigma_vote=sigma2, n_queries=len(Q),
                           reuse_predictions=reuse, n_classes=c, random_state=seed)
    out = clf.fit(split.X_private, split.y_private).predict(Q)
    rep = clf.privacy_report(DELTA)
    if rep.epsilon > epsilon:
        raise RuntimeError(f"Ind-KNN guarantee {rep.epsilon} above target {epsilon}")
    return float(np.mean(out == yq)), clf


_SIGMA_CACHE = {}


def pknn_sigma(epsilon, p, count):
    key = (epsilon, p, count)
    if key not in _SIGMA_CACHE:
        # no screening (threshold=None): every query answered, as the Ind-KNN paper runs Private-kNN
        _SIGMA_CACHE[key] = private_knn_noise(epsilon=epsilon, delta=DELTA, n_queries=count, sampling_probability=p,
                                              threshold=None, initial=(1.0, 100.0), rtol=1e-3)
    return _SIGMA_CACHE[key]


def private_knn(split, Q, yq, *, epsilon, p, k, seed, c=10):
    sigma = pknn_sigma(epsilon, p, len(Q))
    clf = PrivateKNNClassifier(k=k, sampling_probability=p, threshold=None, sigma_vote=sigma, metric="cosine",
                               n_classes=c, random_state=seed).fit(split.X_private, split.y_private)
    out = clf.predict(Q)
    eps = clf.privacy_report(DELTA).epsilon
    if eps > epsilon * (1 + 1e-9):
        raise RuntimeError(f"Private-kNN guarantee {eps} above target {epsilon}")
    return float(np.mean(out == yq)), eps


def med(values):
    values = list(values)
    m = statistics.median(values)
    return f"{100 * m:.1f}% [{100 * min(values):.1f}, {100 * max(values):.1f}]"


def evaluate(split, best_ind, best_pk, k_best, T, n_seeds, curve, c, log):
    """The test protocol shared by the accuracy benchmarks, on the query split with tuned hyper-parameters.

    For each epsilon and each of ``n_seeds`` query orders: Ind-KNN (with and without reuse), Private-kNN and
    non-private kNN on ``T`` queries, with each classifier's own proven epsilon; then accuracy against the number
    of queries (epsilon = 1, three seeds per point). Returns (test rows, verdict per epsilon, curve rows).
    """
    seeds = list(range(n_seeds))
    qsets = [np.random.default_rng(1000 + s).permutation(len(split.y_query)) for s in seeds]
    knn_acc = [np.mean(knn_majority(split.X_private, split.y_private, split.X_query[p[:T]], k_best, c)
                       == split.y_query[p[:T]]) for p in qsets]
    rows, verdict = [], []
    for eps in EPSILONS:
        s2, tau = best_ind[eps]
        p, k = best_pk[eps]
        ind, ind_r, pk, pk_eps, ind_eps, med_eps, retired = [], [], [], [], [], [], []
        for s, perm in zip(seeds, qsets):
            Q, yq = split.X_query[perm[:T]], split.y_query[perm[:T]]
            a, clf = ind_knn(split, Q, yq, epsilon=eps, sigma2=s2, tau=tau, seed=s, c=c)
            ind.append(a)
            ind_eps.append(clf.privacy_report(DELTA).epsilon)
            med_eps.append(float(clf.median_epsilon_history(DELTA)[-1]))
            retired.append(clf.n_retired_)
            ind_r.append(ind_knn(split, Q, yq, epsilon=eps, sigma2=s2, tau=tau, seed=s, reuse=True, c=c)[0])
            a, e = private_knn(split, Q, yq, epsilon=eps, p=p, k=k, seed=s, c=c)
            pk.append(a)
            pk_eps.append(e)
        verdict.append(statistics.median(ind) > statistics.median(pk))
        rows.append([f"{eps:g}", med(ind), med(ind_r), med(pk), med(knn_acc), f"{max(ind_eps):.4f}",
                     f"{max(pk_eps):.4f}", f"{statistics.median(med_eps):.4f}", f"{statistics.median(retired):.0f}"])
        log("test", rows[-1])
    curve_rows = []
    s2, tau = best_ind[1.0]
    p, k = best_pk[1.0]
    for Tq in curve:
        Tq = min(Tq, len(split.y_query))
        plain, reuse, pkc = [], [], []
        for s, perm in zip(seeds[:3], qsets):  # three seeds per point, to keep the run short
            Q, yq = split.X_query[perm[:Tq]], split.y_query[perm[:Tq]]
            plain.append(ind_knn(split, Q, yq, epsilon=1.0, sigma2=s2, tau=tau, seed=s, c=c)[0])
            reuse.append(ind_knn(split, Q, yq, epsilon=1.0, sigma2=s2, tau=tau, seed=s, reuse=True, c=c)[0])
            pkc.append(private_knn(split, Q, yq, epsilon=1.0, p=p, k=k, seed=s, c=c)[0])
        curve_rows.append([Tq, med(plain), med(reuse), med(pkc)])
        log("curve", curve_rows[-1])
    return rows, verdict, curve_rows


def result_tables(tuning_rows, rows, verdict, curve_rows, T):
    """Markdown lines shared by the accuracy reports: tuning, test accuracy, the paper's claim, the T curve."""
    holds = all(verdict)
    return [
        markdown_table(["epsilon", "Ind-KNN (sigma2, tau)", "Ind-KNN val.", "Private-kNN (p, k, sigma)",
                        "Private-kNN val."], tuning_rows),
        "",
        f"Test accuracy, T = {T} queries:",
        "",
        markdown_table(["epsilon", "Ind-KNN", "Ind-KNN + reuse", "Private-kNN", "non-private kNN",
                        "Ind-KNN proven epsilon (max over seeds)", "Private-kNN proven epsilon (max)",
                        "median individual epsilon after T (audit, Ind-KNN)", "records retired (Ind-KNN)"], rows),
        "",
        f"**\"Ind-KNN beats Private-kNN at every epsilon\" (median accuracy): {'holds' if holds else 'does NOT hold'} "
        f"here** ({', '.join(f'eps {e:g}: ' + ('yes' if v else 'no') for e, v in zip(EPSILONS, verdict))}).",
        "",
        "Accuracy as the number of queries T grows (epsilon = 1; the paper's Figure 1b; median over 3 seeds "
        "[min, max]); sigma1 and Private-kNN's noise are recalibrated for each T:",
        "",
        markdown_table(["T", "Ind-KNN", "Ind-KNN + reuse", "Private-kNN"], curve_rows),
    ]


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--queries", type=int, default=1000)
    ap.add_argument("--seeds", type=int, default=5)
    ap.add_argument("--curve", type=str, default="500,1000,2000,3000")
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--no-write", action="store_true")
    args = ap.parse_args(argv)
    if args.quick:
        args.queries, args.seeds, args.curve = 200, 2, "100,200"
    t_start = time.perf_counter()
    load_start = load_average()
    name = "fashion-mnist" if datasets.available("fashion-mnist") else "digits"
    split = datasets.load(name, features="pca")
    c = int(max(split.y_private.max(), split.y_query.max())) + 1
    T = min(args.queries, len(split.y_public))
    vperm = np.random.default_rng(0).permutation(len(split.y_public))[:T]
    Xv, yv = split.X_public[vperm], split.y_public[vperm]
    log = lambda *a: print(*a, file=sys.stderr, flush=True)  # noqa: E731

    # ---- non-private kNN and round 1 of Ind-KNN tuning (validation)
    ks = [k for k in (1, 5, 10, 20, 50, 100) if k <= len(split.y_private)]
    k_best = max(ks, key=lambda k: np.mean(knn_majority(split.X_private, split.y_private, Xv, k, c) == yv))
    taus = np.round(np.arange(0.5, 0.99, 0.02), 2)
    tau_acc = {t: np.mean(kernel_vote(split.X_private, split.y_private, Xv, t, c) == yv) for t in taus}
    tau_star = float(max(tau_acc, key=tau_acc.get))
    log("k", k_best, "tau*", tau_star)

    # ---- round 2: (sigma2, tau) per epsilon; Private-kNN (p, k) per epsilon
    sigma2s = (0.1, 0.2, 0.4, 0.7, 1.3)
    tau_grid = [round(t, 3) for t in (tau_star - 0.02, tau_star, tau_star + 0.02) if 0 < t <= 0.99]
    pk_grid = [(p, k) for p in (0.05, 0.1, 0.2) for k in (100, 300, 500) if k <= p * len(split.y_private) / 2]
    if not pk_grid:
        pk_grid = [(0.5, 20)]
    best_ind, best_pk, tuning_rows = {}, {}, []
    for eps in EPSILONS:
        scores = {(s2, t): ind_knn(split, Xv, yv, epsilon=eps, sigma2=s2, tau=t, seed=100)[0]
                  for s2 in sigma2s for t in tau_grid}
        best_ind[eps] = max(scores, key=scores.get)
        pscores = {pk: private_knn(split, Xv, yv, epsilon=eps, p=pk[0], k=pk[1], seed=100)[0] for pk in pk_grid}
        best_pk[eps] = max(pscores, key=pscores.get)
        tuning_rows.append([f"{eps:g}", f"sigma2 = {best_ind[eps][0]:g}, tau = {best_ind[eps][1]:g}",
                            f"{100 * scores[best_ind[eps]]:.1f}%",
                            f"p = {best_pk[eps][0]:g}, k = {best_pk[eps][1]}, sigma_vote = "
                            f"{pknn_sigma(eps, best_pk[eps][0], T):.3g}", f"{100 * pscores[best_pk[eps]]:.1f}%"])
        log("tuned", tuning_rows[-1])

    # ---- test: T queries per seed, then the curve
    rows, verdict, curve_rows = evaluate(split, best_ind, best_pk, k_best, T, args.seeds,
                                         [int(x) for x in args.curve.split(",")], c, log)
    given = argv or sys.argv[1:]
    command = "python -m benchmarks.bench_ind_knn_accuracy" + ("" if not given else " " + " ".join(given))
    text = "\n".join([
        "## Accuracy on real data (Fashion-MNIST): Ind-KNN vs Private-kNN vs non-private kNN",
        "",
        f"Command: `{command}`. Data: **{name}**"
        + ("" if name == "fashion-mnist" else " (Fashion-MNIST not installed: `apt-get install dataset-fashion-mnist`)")
        + f", {len(split.y_private)} private records; features: 64 PCA components fitted on the public split, rows "
        "unit-norm, cosine kernel/metric. Validation: "
        f"{T} public images; test: {T} of the {len(split.y_query)} query images per seed; median over "
        f"{args.seeds} seeds [min, max]; delta = {DELTA:g}. Load average at start: {load_start}; at end: "
        f"{load_average()}. Whole run {time.perf_counter() - t_start:.0f} s.",
        "",
        "Tuned on validation (protocol in the script's docstring; tuning is not accounted, as in the paper). "
        f"Non-private kNN: k = {k_best}; Ind-KNN round 1 (non-private kernel vote): tau* = {tau_star:g} "
        f"({100 * tau_acc[tau_star]:.1f}% on validation).",
        "",
        *result_tables(tuning_rows, rows, verdict, curve_rows, T),
        "",
        NOTES,
    ])
    print(text)
    if not args.no_write and not args.quick:
        write_section("accuracy", text)


if __name__ == "__main__":
    main()
