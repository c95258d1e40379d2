"""Empirical privacy audits (issue 18 item 1): lower bounds from :func:`predict.audit.audit_epsilon` next to the
known or proven epsilon, printed as markdown.

1. Validity and power on mechanisms with known epsilon: randomized response (epsilon 1, delta 0) and the Gaussian
   mechanism (sigma 0.5, sensitivity 1, epsilon 1 at its analytic delta), 50 seeds each at 3,000 and 20,000 runs:
   how many seeds' lower bounds exceed the true epsilon, and the lower bounds' median and range.
2. The Ind-KNN only-neighbour canary (:func:`predict.canaries.ind_knn_only_neighbour_canary`, epsilon 1, delta
   1e-5): the lower bound next to the proven epsilon, honest and with the published code's no-neighbour bug.
3. Every canary design (:mod:`predict.canaries`: six Ind-KNN at budget epsilon 4, three Private-kNN, the Opacus
   DP-SGD canary) at more runs: proven upper bound, empirical lower bound, the GDP mu lower bound and its epsilon
   estimate, time.
4. The one-run audit (:mod:`predict.audit_one_run`): randomized response with known epsilon over 20 seeds, and
   Ind-KNN's one-run canaries at 1,000 and 5,000 canaries.

Run with ``python -m benchmarks.bench_audit`` (sections 3-4 alone: ``python -m benchmarks.bench_audit designs``).
"""

import math
import time

import numpy as np

from dpledger.mechanisms.gaussian import analytic_gaussian_delta_bounds
from dpledger.predict.audit import audit_epsilon
from dpledger.predict.canaries import ind_knn_only_neighbour_canary
from dpledger.predict.neighbours import unit_rows


def _rr(bit, rng, size, keep=math.e / (1 + math.e)):
    return np.where(rng.random(size) < keep, bit, 1 - bit)


def _gauss(x, rng, size):
    return x + 0.5 * rng.standard_normal(size)


def known_epsilon():
    delta_gauss, _ = analytic_gaussian_delta_bounds(2.0, 1.0)
    print("| mechanism | true epsilon | delta | runs | seeds | exceed | median lower | min | max | time / audit |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for name, release, delta in (("randomized response", _rr, 0.0), ("Gaussian sigma 0.5", _gauss, delta_gauss)):
        for runs in (3000, 20_000):
            start = time.perf_counter()
            lows = [audit_epsilon(release, 1, 0, runs=runs, delta=delta, random_state=s, batch=True).lower
                    for s in range(50)]
            per = (time.perf_counter() - start) / 50
            print(f"| {name} | 1 | {delta:.4g} | {runs} | 50 | {sum(v > 1.0 for v in lows)} | "
                  f"{np.median(lows):.4f} | {min(lows):.4f} | {max(lows):.4f} | {per:.3f} s |")


def canary(runs=3000):
    design = ind_knn_only_neighbour_canary(epsilon=1.0, delta=1e-5)
    q = unit_rows(design.query.astype(np.float64))[0]

    def buggy(data, rng):
        if not np.any(unit_rows(np.asarray(data[0], dtype=np.float64)) @ q >= design.params["tau"]):
            return 0
        return design.release(data, rng)

    print()
    print("| design | proven epsilon (upper) | delta | runs | empirical lower (95%) | time |")
    print("|---|---|---|---|---|---|")
    for name, release in (("Ind-KNN only neighbour", design.release), ("same, no-neighbour bug", buggy)):
        start = time.perf_counter()
        r = audit_epsilon(release, design.dataset, design.neighbouring_dataset, runs=runs, delta=design.delta,
                          random_state=0, score=design.score)
        print(f"| {name} | {design.proven_epsilon} | {design.delta} | {runs} | {r.lower:.4f} | "
              f"{time.perf_counter() - start:.1f} s |")


def designs(runs=1000, dpsgd_runs=500):
    import importlib.util

    import torch

    from dpledger.predict.canaries import dpsgd_canary, ind_knn_designs, private_knn_designs

    torch.set_num_threads(1)  # many tiny fits: one thread is fastest
    todo = ind_knn_designs(epsilon=4.0) + private_knn_designs()
    if importlib.util.find_spec("opacus") is not None:
        todo.append(dpsgd_canary(epochs=2))
    print()
    print("| predictor | design | proven epsilon (upper) | runs | empirical lower (95%) | GDP mu lower (95%) | "
          "epsilon estimate from GDP | time |")
    print("|---|---|---|---|---|---|---|---|")
    for d in todo:
        n = dpsgd_runs if d.predictor.startswith("DP-SGD") else runs
        start = time.perf_counter()
        r = d.audit(runs=n, random_state=0)
        print(f"| {d.predictor} | {d.name} | {d.proven_epsilon:.4f} | {n} | {r.lower:.4f} | {r.gdp_mu_lower:.4f} | "
              f"{r.gdp_epsilon_estimate:.3f} | {time.perf_counter() - start:.1f} s |")


def one_run():
    import torch

    from dpledger.predict.audit_one_run import audit_one_run
    from dpledger.predict.canaries import ind_knn_one_run

    torch.set_num_threads(1)
    print()
    print("| release | true / proven epsilon | delta | canaries | guesses | seeds | exceed | median lower | max lower "
          "| time / audit |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    eps = 2.0
    keep = math.exp(eps) / (1 + math.exp(eps))

    def rr(included, rng):
        return (included ^ (rng.random(included.size) >= keep)) + 1e-3 * rng.random(included.size)

    for m, g in ((1000, 100), (10_000, 1000)):
        start = time.perf_counter()
        lows = [audit_one_run(rr, m, guesses_in=g // 2, guesses_out=g // 2, delta=0.0, random_state=s).lower
                for s in range(20)]
        per = (time.perf_counter() - start) / 20
        print(f"| randomized response (each canary's bit) | {eps} (true) | 0 | {m} | {g} | 20 | "
              f"{sum(v > eps for v in lows)} | {np.median(lows):.4f} | {max(lows):.4f} | {per:.3f} s |")
    for m in (1000, 5000):
        canaries = ind_knn_one_run(canaries=m, epsilon=4.0)
        start = time.perf_counter()
        lows = [canaries.audit(guesses_in=m // 10, guesses_out=0, random_state=s).lower for s in range(5)]
        per = (time.perf_counter() - start) / 5
        print(f"| Ind-KNN one-run canaries | {canaries.proven_epsilon:.4f} (proven) | {canaries.delta} | {m} | "
              f"{m // 10} | 5 | {sum(v > canaries.proven_epsilon for v in lows)} | {np.median(lows):.4f} | "
              f"{max(lows):.4f} | {per:.2f} s |")


if __name__ == "__main__":
    import sys

    if sys.argv[1:] != ["designs"]:
        known_epsilon()
        canary()
    designs()
    one_run()
