"""Laplace and two-point ledgers: ``FourierAccountant`` against dp_accounting's PLD accountant, cell by cell.

Cells: Laplace(scale) x n for scale in {0.5, 1, 5} and n in {1, 5, 25, 100, 1000}, epsilon at delta = ``DELTA`` and
delta at 0.9 times dpledger's epsilon (three digits); and ledgers of two-point losses with many runs (randomized
response, pure DP: the enumeration with a tail group, accountants/two_point_ledger.py; for PLD as pure epsilon-DP
events, the same dominating pair). Each tool: ``REPEAT`` fresh
calls after one warm-up call of the cell (a warm process), medians of wall time; their ratio in the last column
(below 1: dpledger faster). dp_accounting's PLD at its default discretisation (1e-4, pessimistic: an upper bound);
its value is shown next to dpledger's certified interval.

Run: ``python -m benchmarks.bench_fourier_laplace``. Prints a markdown section for benchmarks/RESULTS.md.
"""

import statistics
import warnings

from benchmarks._common import Section, machine_line, markdown_table, optional_import, time_call
from dpledger.accountants import FourierAccountant
from dpledger.mechanisms import LaplaceMechanism, PureDPMechanism, RandomizedResponse

DELTA = 1e-5
REPEAT = 5
SCALES = (0.5, 1.0, 5.0)
RUNS = (1, 5, 25, 100, 1000)


def _pure(epsilon):
    """dp_accounting's PLD of a two-point loss ``+-epsilon``: pure epsilon-DP, whose tight dominating pair is that
    two-point pair (Kairouz et al. 2015; its ``RandomizedResponseDpEvent`` is not supported under add-or-remove)."""
    def make(d):
        from dp_accounting.pld import common, privacy_loss_distribution

        return privacy_loss_distribution.from_privacy_parameters(common.DifferentialPrivacyParameters(epsilon, 0.0))
    make.loss = epsilon
    return make


#: PLD is not run where its grid (the composed loss range over its default discretisation 1e-4) would exceed this
#: many points: randomized response x 300,000 was killed for memory (24 GiB) at its default discretisation.
PLD_MAX_POINTS = 5e7


def _two_point_ledgers():
    """``(label, [(mechanism, runs), ...], [(dp_accounting event factory, runs), ...])``."""
    rr = [RandomizedResponse(p=0.6), RandomizedResponse(p=0.929826758567122),
          RandomizedResponse(p=0.8118133129419176)]
    pure = [PureDPMechanism(epsilon=0.3587506889175372), PureDPMechanism(epsilon=0.10696187563600257)]
    return [
        ("RR(0.6) x 300,000", [(rr[0], 300_000)], [(_pure(rr[0].two_point_loss()), 300_000)]),
        ("RR(0.93) x 4,711 + RR(0.81) x 1,666", [(rr[1], 4711), (rr[2], 1666)],
         [(_pure(rr[1].two_point_loss()), 4711), (_pure(rr[2].two_point_loss()), 1666)]),
        ("pure DP(0.36) x 5,161 + pure DP(0.11) x 291", [(pure[0], 5161), (pure[1], 291)],
         [(_pure(pure[0].epsilon), 5161), (_pure(pure[1].epsilon), 291)]),
        ("pure DP(0.11) x 2,000 + RR(0.7) x 500", [(pure[1], 2000), (RandomizedResponse(p=0.7), 500)],
         [(_pure(pure[1].epsilon), 2000), (_pure(RandomizedResponse(p=0.7).two_point_loss()), 500)]),
    ]


def _ours(entries, query, arg):
    acc = FourierAccountant()
    for mechanism, runs in entries:
        acc.compose(mechanism, runs)
    return acc.epsilon_bounds(arg) if query == "epsilon" else acc.delta_bounds(arg)


def _theirs(events, query, arg, dp_accounting):
    if hasattr(events[0][0], "loss"):  # two-point losses: PLDs composed directly
        total = None
        for make, runs in events:
            part = make(dp_accounting).self_compose(runs)
            total = part if total is None else total.compose(part)
        return total.get_epsilon_for_delta(arg) if query == "epsilon" else total.get_delta_for_epsilon(arg)
    acc = dp_accounting.pld.PLDAccountant()
    for make, runs in events:
        acc.compose(make(dp_accounting), runs)
    return acc.get_epsilon(arg) if query == "epsilon" else acc.get_delta(arg)


def _pld_points(events):
    """The composed loss range of two-point events over PLD's default discretisation (0 for the others)."""
    return sum(2.0 * make.loss * runs for make, runs in events if hasattr(make, "loss")) / 1e-4


def _cells():
    for scale in SCALES:
        for n in RUNS:
            yield (f"Laplace({scale:g}) x {n}", [(LaplaceMechanism(scale=scale), n)],
                   [(lambda d, scale=scale: d.LaplaceDpEvent(scale), n)])
    yield from _two_point_ledgers()


def run():
    dp_accounting = optional_import("dp_accounting")
    rows, slower, total = [], 0, 0
    for label, entries, events in _cells():
        for query in ("epsilon", "delta"):
            arg = DELTA if query == "epsilon" else float(f"{0.9 * _ours(entries, 'epsilon', DELTA).upper:.3g}")
            ours = time_call(lambda: _ours(entries, query, arg), repeat=REPEAT)
            wall = statistics.median(ours.runs)
            row = [label, query, f"{arg:g}", f"[{ours.result.lower:.8g}, {ours.result.upper:.8g}]",
                   f"{wall * 1e3:.1f}"]
            if dp_accounting is not None and _pld_points(events) > PLD_MAX_POINTS:
                row += [f"not run ({_pld_points(events):.2g} grid points)", "-", "-"]
            elif dp_accounting is not None:
                theirs = time_call(lambda: _theirs(events, query, arg, dp_accounting), repeat=REPEAT)
                p_wall = statistics.median(theirs.runs)
                slower += wall > p_wall
                total += 1
                row += [f"{theirs.result:.8g}", f"{p_wall * 1e3:.1f}", f"{wall / p_wall:.3f}"]
            else:
                row += ["-"] * 3
            rows.append(row)
            print(*row, sep=" | ", flush=True)
    headers = ["ledger", "query", "at", "dpledger interval", "dpledger ms (median)", "PLD default",
               "PLD ms (median)", "ratio"]
    lines = [
        f"Command: `python -m benchmarks.bench_fourier_laplace`; epsilon at delta = {DELTA:g}, delta at 0.9 times "
        f"dpledger's epsilon there (three digits); {REPEAT} fresh calls of each tool per cell after one warm-up call, "
        "medians. Two-point losses go to PLD as pure epsilon-DP events (the same dominating pair).",
        "",
        f"{total} queries; dpledger slower than PLD's default in {slower} by median wall time.",
        "",
        markdown_table(headers, rows),
        "",
        machine_line(),
    ]
    return Section("Fourier: Laplace and two-point ledgers against dp_accounting PLD", "\n".join(lines))


if __name__ == "__main__":
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        print()
        print(run().markdown())
