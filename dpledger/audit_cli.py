"""``dpledger audit``: empirical privacy audits of the predictors next to their proven guarantees.

Runs canary audits (:mod:`dpledger.predict.canaries`) of Ind-KNN, Private-kNN and a small DP-SGD model trained
with Opacus (through dpledger's Opacus adapter) on built-in data, and prints for each the proven upper bound on
epsilon, the empirical lower bound with its confidence (:func:`dpledger.predict.audit.audit_epsilon`, or the
one-run audit of :mod:`dpledger.predict.audit_one_run`), the Gaussian-DP reading of the same runs (a lower bound
on mu and, from it, an *estimate* of epsilon), the number of runs and the time. ``--plot`` draws the empirical
trade-off points and Gaussian curve against the proven trade-off curve. Imports of torch, Opacus and the
classifiers happen only when the command runs.
"""

from __future__ import annotations

import argparse
import math
import sys
import time
from collections.abc import Mapping
from typing import Any

from dpledger import _format

__all__ = ["add_parser", "run", "format_audit"]

PREDICTORS = ("ind-knn", "private-knn", "dp-sgd")
_DEFAULT_RUNS = 200
_DEFAULT_CANARIES = 1000


def add_parser(sub: argparse._SubParsersAction) -> None:
    """Add the ``audit`` sub-command to ``sub`` (an argparse sub-parsers object)."""
    p = sub.add_parser(
        "audit",
        help="empirical privacy audits: canary lower bounds next to the proven upper bounds",
        description="Audit Ind-KNN, Private-kNN and DP-SGD (Opacus, through dpledger's adapter) as an attacker "
        "would: run each on a neighbouring pair of data sets (with and without a canary record) many times and "
        "print the proven upper bound on epsilon next to a statistically valid LOWER bound from the runs. A lower "
        "bound far below the upper one says the accounting may be loose or the canary weak; above it, a bug.",
    )
    p.add_argument("--predictors", nargs="+", choices=PREDICTORS, default=None, metavar="NAME",
                   help="what to audit: ind-knn, private-knn, dp-sgd (default: all three; dp-sgd is skipped with a "
                   "note when Opacus is not installed)")
    p.add_argument("--runs", type=int, default=_DEFAULT_RUNS, metavar="N",
                   help=f"releases per data set and audit (default {_DEFAULT_RUNS}); a third chooses the test, the "
                   "rest give the bound; more runs give tighter lower bounds and take longer")
    p.add_argument("--all-designs", action="store_true",
                   help="audit every canary design of the kNN predictors (six for Ind-KNN, three for Private-kNN), "
                   "not only the only-neighbour canary")
    p.add_argument("--one-run", action="store_true",
                   help="also run the one-run audit of Ind-KNN (Steinke, Nasr & Jagielski 2023): --canaries canaries "
                   "in one fit, a tenth of them guessed")
    p.add_argument("--canaries", type=int, default=_DEFAULT_CANARIES, metavar="M",
                   help=f"canaries of the one-run audit (default {_DEFAULT_CANARIES})")
    p.add_argument("--epsilon", type=float, default=4.0,
                   help="Ind-KNN: every record's budget (default 4; small budgets are mostly tail privacy that few "
                   "runs cannot see)")
    p.add_argument("--delta", type=float, default=1e-5, help="delta of the guarantees and the audits (default 1e-5)")
    p.add_argument("--confidence", type=float, default=0.95, help="confidence of the lower bounds (default 0.95)")
    p.add_argument("--random-state", type=int, default=None, metavar="SEED",
                   help="seed of the audit (default: fresh entropy from the operating system)")
    p.add_argument("--plot", metavar="PATH",
                   help="write a PNG: each audit's empirical trade-off (Clopper-Pearson points, Gaussian curve) "
                   "against the proven trade-off curve")
    p.add_argument("--quiet", action="store_true", help="no progress bar on stderr (none either when stderr is not "
                   "a terminal)")
    p.add_argument("--json", action="store_true", help="print one JSON object")


def _check(args):
    if args.runs < 3:
        raise ValueError(f"--runs must be at least 3; got {args.runs}.")
    if args.canaries < 10:
        raise ValueError(f"--canaries must be at least 10; got {args.canaries}.")
    if not (args.epsilon > 0.0 and math.isfinite(args.epsilon)):
        raise ValueError(f"--epsilon must be a positive finite number; got {args.epsilon}.")
    if not 0.0 < args.delta < 1.0:
        raise ValueError(f"--delta must be in (0, 1); got {args.delta}.")
    if not 0.0 < args.confidence < 1.0:
        raise ValueError(f"--confidence must be in (0, 1); got {args.confidence}.")
    if args.random_state is not None and args.random_state < 0:
        raise ValueError(f"--random-state must be a non-negative integer; got {args.random_state}.")
    if args.plot is not None and not args.plot.lower().endswith(".png"):
        raise ValueError(f"--plot must name a .png file; got {args.plot}.")


def _opacus_available():
    import importlib.util

    return importlib.util.find_spec("opacus") is not None


def _designs(args, notes):
    """The (design, kind) pairs to audit, in order."""
    from dpledger.predict import canaries

    chosen = args.predictors or list(PREDICTORS)
    out = []
    if "ind-knn" in chosen:
        designs = canaries.ind_knn_designs(epsilon=args.epsilon, delta=args.delta)
        out += [(d, "black-box") for d in (designs if args.all_designs else designs[:1])]
        if args.one_run:
            out.append((canaries.ind_knn_one_run(canaries=args.canaries, epsilon=args.epsilon, delta=args.delta),
                        "one-run"))
    if "private-knn" in chosen:
        designs = canaries.private_knn_designs(delta=args.delta)
        out += [(d, "black-box") for d in (designs if args.all_designs else designs[:1])]
    if "dp-sgd" in chosen:
        if _opacus_available():
            out.append((canaries.dpsgd_canary(epochs=2, delta=args.delta), "black-box"))
        elif args.predictors:
            from dpledger.accountants.adapters._peers import require

            require("opacus", "auditing dp-sgd")  # raises MissingPeerError (exit code 1) with the pip command
        else:
            notes.append("dp-sgd skipped: Opacus is not installed (`pip install opacus`).")
    return out


class _Counted:
    """A release that reports its progress."""

    def __init__(self, release, progress, total):
        self.release, self.progress, self.total, self.done = release, progress, total, 0

    def __call__(self, data, rng):
        out = self.release(data, rng)
        self.done += 1
        self.progress(self.done, self.total)
        return out


def _audit_one(design, kind, args, seed, progress):
    from dpledger.predict.audit import audit_epsilon

    start = time.perf_counter()
    if kind == "one-run":
        guesses = max(1, design.canaries // 10)
        progress.set_label(f"{design.predictor}, one run of {design.canaries} canaries")
        progress(0, 1)
        r = design.audit(guesses_in=guesses, guesses_out=0, confidence=args.confidence, random_state=seed)
        progress(1, 1)
        row = {"predictor": design.predictor, "design": design.name, "audit": "one-run",
               "runs": 1, "canaries": r.canaries, "guesses": r.guesses, "correct": r.correct,
               "lower": r.lower, "gdp_mu_lower": None, "gdp_epsilon_estimate": None}
    else:
        progress.set_label(f"{design.predictor}: {design.name}")
        counted = _Counted(design.release, progress, 2 * args.runs)
        r = audit_epsilon(counted, design.dataset, design.neighbouring_dataset, runs=args.runs,
                          delta=design.delta, confidence=args.confidence, random_state=seed, score=design.score)
        row = {"predictor": design.predictor, "design": design.name, "audit": "black-box", "runs": args.runs,
               "lower": r.lower, "gdp_mu_lower": r.gdp_mu_lower, "gdp_epsilon_estimate": r.gdp_epsilon_estimate,
               "tpr_lower": r.tpr_lower, "fpr_upper": r.fpr_upper, "gdp_tpr_lower": r.gdp_tpr_lower,
               "gdp_fpr_upper": r.gdp_fpr_upper, "bound_runs": r.bound_runs, "holdout_runs": r.holdout_runs}
    row["proven_epsilon"] = design.proven_epsilon
    row["delta"] = design.delta
    row["seconds"] = time.perf_counter() - start
    progress.done()  # on a terminal: each audit's bar keeps its own line
    return row


def audit_result(args: argparse.Namespace, *, progress: Any) -> dict[str, Any]:
    """Run the audits of ``args`` (parsed by :func:`add_parser`) and return the result dict."""
    import numpy as np

    from dpledger.predict._common import seed_sequence

    _check(args)
    notes: list[str] = []
    designs = _designs(args, notes)
    seeds = seed_sequence(args.random_state, "dpledger audit").spawn(max(1, len(designs)))
    rows = [_audit_one(d, kind, args, np.random.default_rng(s), progress) for (d, kind), s in zip(designs, seeds)]
    progress.done()
    curves = [_proven_pairs(d) if kind == "black-box" else None for d, kind in designs]
    result = {
        "delta": args.delta,
        "confidence": args.confidence,
        "random_state": args.random_state,
        "labels": {
            "proven_epsilon": "proven upper bound (add-or-remove-one) of the predictor's accounting",
            "lower": f"statistical lower bound on epsilon, valid with probability {args.confidence}",
            "gdp_mu_lower": f"statistical lower bound on Gaussian-DP mu, valid with probability {args.confidence}",
            "gdp_epsilon_estimate": "estimate of epsilon assuming a Gaussian trade-off curve (not a bound)",
        },
        "audits": rows,
        "notes": notes,
    }
    if args.plot is not None:
        result["plot"] = _plot(rows, curves, args.plot)
    return result


_CURVE_DELTAS = (1e-12, 1e-10, 1e-8, 1e-6, 1e-5, 1e-4, 1e-3, 3e-3, 0.01, 0.03, 0.1, 0.2, 0.3, 0.5)


def _proven_pairs(design):
    """``(deltas, epsilons)``: the design's proven guarantee at several deltas (each pair a proven upper bound);
    only the design's own pair when it knows no other."""
    pairs = [(design.delta, design.proven_epsilon)]
    for d in _CURVE_DELTAS:
        try:
            pairs.append((d, design.epsilon_at(d)))
        except (ValueError, ArithmeticError):
            break
    return [p[0] for p in pairs], [p[1] for p in pairs]


def _proven_tradeoff(pairs, alphas):
    """Lower bound on the trade-off function from the proven (epsilon_i, delta_i) pairs:
    ``beta(a) >= max_i max(0, 1 - delta_i - e^eps_i a, e^-eps_i (1 - delta_i - a))`` (thesis Lemma 3.1.4 (2);
    :func:`dpledger.accountants.risk.tradeoff_lower_bound`, rounded down)."""
    from dpledger.accountants.risk import tradeoff_lower_bound

    return tradeoff_lower_bound(pairs[0], pairs[1], alphas)


def _plot(rows, curves, path):
    import matplotlib

    matplotlib.use("Agg")
    import numpy as np
    from matplotlib import pyplot as plt
    from scipy import stats

    shown = [(r, c) for r, c in zip(rows, curves) if r["audit"] == "black-box"]
    if not shown:
        raise ValueError("--plot draws black-box audits; none was run.")
    alphas = np.linspace(0.0, 1.0, 401)
    fig, axes = plt.subplots(1, len(shown), figsize=(4.2 * len(shown), 4.2), squeeze=False)
    for ax, (row, pairs) in zip(axes[0], shown):
        ax.plot(alphas, _proven_tradeoff(pairs, alphas), color="C0",
                label=f"proven (eps {_format.upper(row['proven_epsilon'], 4)} at delta {row['delta']:g}"
                + (f", and {len(pairs[0]) - 1} more deltas)" if len(pairs[0]) > 1 else ")"))
        mu = row["gdp_mu_lower"]
        if mu > 0:
            ax.plot(alphas, stats.norm.cdf(stats.norm.ppf(1 - alphas) - mu), color="C1", ls="--",
                    label=f"empirical: {mu:.3g}-GDP (mu lower bound)")
        ax.plot([row["gdp_fpr_upper"]], [1 - row["gdp_tpr_lower"]], "o", color="C1",
                label="Clopper-Pearson point (GDP test)")
        ax.plot([row["fpr_upper"]], [1 - row["tpr_lower"]], "s", color="C3",
                label=f"Clopper-Pearson point (epsilon test: >= {_format.lower(row['lower'], 3)})")
        ax.plot(alphas, 1 - alphas, color="0.7", lw=0.8)
        ax.set(xlim=(0, 1), ylim=(0, 1), xlabel="type I error (FPR)", ylabel="type II error (1 - TPR)",
               title=f"{row['predictor']}: {row['design']}\n{row['runs']} runs per data set")
        ax.legend(fontsize=7, loc="upper right")
    fig.suptitle("True trade-off lies below the points (with the stated confidence) and above the proven curve",
                 fontsize=9)
    fig.tight_layout()
    try:
        fig.savefig(path, dpi=110)
    except OSError as err:
        raise ValueError(f"cannot write --plot {path}: {err.strerror or err}.") from None
    finally:
        plt.close(fig)
    return path


def format_audit(result: Mapping[str, Any]) -> str:
    """The audits side by side: proven upper bound, empirical lower bound, GDP reading, runs, time."""
    conf = f"{100 * result['confidence']:g}%"
    lines = [f"empirical privacy audits at delta = {result['delta']:g} (add-or-remove-one; lower bounds at "
             f"{conf} confidence)",
             f"  {'predictor':<17} {'canary design':<24} {'proven eps':>11} {'lower eps':>10} {'GDP mu >=':>10} "
             f"{'eps est.':>9} {'runs':>6} {'time':>7}"]
    for r in result["audits"]:
        mu = "-" if r["gdp_mu_lower"] is None else _format.lower(r["gdp_mu_lower"], 4)
        est = "-" if r["gdp_epsilon_estimate"] is None else _format.nearest(r["gdp_epsilon_estimate"], 3)
        runs = str(r["runs"]) if r["audit"] == "black-box" else f"1 ({r['canaries']})"
        lines.append(f"  {r['predictor']:<17} {r['design'][:24]:<24} {_format.upper(r['proven_epsilon'], 5):>11} "
                     f"{_format.lower(r['lower'], 4):>10} {mu:>10} {est:>9} {runs:>6} {r['seconds']:>6.1f}s")
    lines.append("  proven eps: proven upper bound of the accounting. lower eps: statistical lower bound from the "
                 "runs (Clopper-Pearson).")
    lines.append("  GDP mu >=: lower bound on Gaussian-DP mu from the runs; eps est.: its epsilon, an estimate that "
                 "assumes a Gaussian trade-off.")
    lines.append("  runs: releases per data set (one-run: 1 run with that many canaries). A lower bound above the "
                 "proven one would mean a bug.")
    for r in result["audits"]:
        if r["lower"] > r["proven_epsilon"]:
            lines.append(f"  WARNING: {r['predictor']} ({r['design']}): the lower bound exceeds the proven upper "
                         "bound.")
    lines += [f"  note: {n}" for n in result["notes"]]
    if result.get("plot"):
        lines.append(f"  trade-off plot written to {result['plot']}")
    return "\n".join(lines)


def run(args: argparse.Namespace) -> int:
    """Run ``dpledger audit``; returns the exit code."""
    from dpledger._progress import Progress

    try:
        import torch

        threads = torch.get_num_threads()
        torch.set_num_threads(1)  # many tiny fits: one thread is several times faster than a pool
    except ImportError:  # pragma: no cover - torch is a dependency
        torch = None
    progress = Progress("audit", enabled=not args.quiet and sys.stderr.isatty())
    try:
        result = audit_result(args, progress=progress)
    finally:
        if torch is not None:
            torch.set_num_threads(threads)
    print(_format.to_json(result) if args.json else format_audit(result))
    return 0
