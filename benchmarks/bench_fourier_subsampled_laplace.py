"""Poisson-subsampled Laplace ledgers: ``FourierAccountant`` against dp_accounting's PLD accountant, cell by cell.

Cells: ``PoissonSubsampled(Laplace(scale), q) x n`` for scale in ``SCALES``, q in ``QS`` and n in ``RUNS``; epsilon at
delta = ``DELTA`` and delta at 0.9 times dpledger's epsilon (three digits). The characteristic-function accountant
splits each direction into the atoms (enumerated) and the rest, whose products with one continuous run are priced in
closed form and whose remainder is inverted with a proven enclosure (mechanisms/subsampled_laplace_cf.py). Before, these
ledgers went to the privacy buckets: their interval is shown for the epsilon queries ("buckets", the previous path,
measured here by withdrawing the enclosure). Each tool: ``REPEAT`` fresh calls after one warm-up call (a warm
process), medians of wall time; their ratio in the last column (below 1: dpledger faster). dp_accounting's PLD at its
default discretisation (1e-4, pessimistic: an upper bound).

Run: ``python -m benchmarks.bench_fourier_subsampled_laplace``. Prints a markdown section for benchmarks/RESULTS.md.
"""

import statistics
import time
import warnings

from benchmarks._common import Section, machine_line, markdown_table, optional_import, time_call
from dpledger.accountants import FourierAccountant
from dpledger.mechanisms import LaplaceMechanism, PoissonSubsampled

DELTA = 1e-5
REPEAT = 3
SCALES = (0.5, 2.0, 10.0)
QS = (0.001, 0.01, 0.1, 0.5)
RUNS = (1, 10, 100, 1000)


class _Unenclosed(LaplaceMechanism):
    """The previous path: no proven subsampled characteristic function, so the privacy buckets answer."""

    has_subsampled_enclosure = False

    def subsampled_loss_split(self, sampling_probability):
        return None


def _ours(scale, q, n, query, arg, base=LaplaceMechanism):
    acc = FourierAccountant().compose(PoissonSubsampled(base(scale=scale), q), n)
    return acc.epsilon_bounds(arg) if query == "epsilon" else acc.delta_bounds(arg)


def _theirs(scale, q, n, query, arg, dp_accounting):
    acc = dp_accounting.pld.PLDAccountant()
    acc.compose(dp_accounting.PoissonSampledDpEvent(q, dp_accounting.LaplaceDpEvent(scale)), n)
    return acc.get_epsilon(arg) if query == "epsilon" else acc.get_delta(arg)


def run():
    dp_accounting = optional_import("dp_accounting")
    rows, slower, total, ours_sum, theirs_sum = [], 0, 0, 0.0, 0.0
    for scale in SCALES:
        for q in QS:
            for n in RUNS:
                label = f"PS(Laplace({scale:g}), {q:g}) x {n}"
                eps = _ours(scale, q, n, "epsilon", DELTA).upper
                for query in ("epsilon", "delta"):
                    arg = DELTA if query == "epsilon" else float(f"{0.9 * eps:.3g}")
                    ours = time_call(lambda: _ours(scale, q, n, query, arg), repeat=REPEAT)
                    wall = statistics.median(ours.runs)
                    before = "-"
                    if query == "epsilon":
                        start = time.perf_counter()
                        b = _ours(scale, q, n, query, arg, base=_Unenclosed)
                        before = f"[{b.lower:.6g}, {b.upper:.6g}] ({time.perf_counter() - start:.2f} s)"
                    row = [label, query, f"{arg:g}", f"[{ours.result.lower:.8g}, {ours.result.upper:.8g}]",
                           f"{wall * 1e3:.1f}", before]
                    if dp_accounting is not None:
                        theirs = time_call(lambda: _theirs(scale, q, n, query, arg, dp_accounting), repeat=REPEAT)
                        p_wall = statistics.median(theirs.runs)
                        slower += wall > p_wall
                        total += 1
                        ours_sum, theirs_sum = ours_sum + wall, theirs_sum + p_wall
                        row += [f"{theirs.result:.8g}", f"{p_wall * 1e3:.1f}", f"{wall / p_wall:.3f}"]
                    else:
                        row += ["-"] * 3
                    rows.append(row)
                    print(*row, sep=" | ", flush=True)
    headers = ["ledger", "query", "at", "dpledger interval", "dpledger ms (median)", "buckets (previous path)",
               "PLD default", "PLD ms (median)", "ratio"]
    lines = [
        f"Command: `python -m benchmarks.bench_fourier_subsampled_laplace`; epsilon at delta = {DELTA:g}, delta at "
        f"0.9 times dpledger's epsilon there (three digits); {REPEAT} fresh calls of each tool per cell after one "
        "warm-up call, medians; the previous path (privacy buckets) once per epsilon query.",
        "",
        f"{total} queries; dpledger slower than PLD's default in {slower} by median wall time; summed medians "
        f"{ours_sum:.2f} s against PLD's {theirs_sum:.2f} s.",
        "",
        markdown_table(headers, rows),
        "",
        machine_line(),
    ]
    return Section("Fourier: Poisson-subsampled Laplace against dp_accounting PLD", "\n".join(lines))


if __name__ == "__main__":
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        print()
        print(run().markdown())
