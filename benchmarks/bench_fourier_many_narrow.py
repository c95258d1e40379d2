"""Many runs of a very narrow loss (sigma 0.45-0.58, q 1e-6 to 4e-5, thousands to tens of thousands of steps), off
issue 14's grid: the region where the characteristic-function accountant's inversion misses ``rtol`` and the
whole-range privacy buckets answer (``FourierAccountant`` path ``buckets+inversion``).

The cells are those a random sweep found slowest (sigma 0.45-1, q 1e-6 to 1e-3, 200 to 10^5 steps; 2026-11-30), and
the cell the sweep of the session before found (sigma 0.53, q 1.3e-5, 4,131 steps). For each, one fresh call of
each tool after a warm-up of the whole process (these calls take up to seconds; one call is enough to rank them):

* dpledger: ``FourierAccountant().compose(PoissonSubsampled(GaussianMechanism(sigma), q), steps)
  .epsilon_bounds(1e-5)``, its path (``_derived["path"]``), its proven interval and that interval's width relative
  to its upper end (the default ``rtol`` is 1e-6; the buckets' intervals are proven but not held to it);
* dp_accounting: ``PLDAccountant()`` (default discretisation, pessimistic) on the same ledger.

Run: ``python -m benchmarks.bench_fourier_many_narrow``. Prints a markdown section for benchmarks/RESULTS.md.
"""

import time
import warnings

from benchmarks._common import Section, machine_line, markdown_table, optional_import
from dpledger.accountants import FourierAccountant
from dpledger.mechanisms import GaussianMechanism, PoissonSubsampled

DELTA = 1e-5
#: (sigma, q, steps)
CELLS = ((0.53, 1.3e-5, 4131), (0.452, 6.13e-6, 2740), (0.524, 1.76e-6, 40668), (0.477, 5.93e-6, 22945),
         (0.561, 3.03e-6, 82952), (0.578, 8.69e-6, 7203), (0.529, 6.12e-6, 21195), (0.576, 1.54e-5, 69276),
         (0.464, 3.85e-5, 3473))


def dpledger_cell(sigma, q, steps):
    """``(bounds, path, wall seconds)`` of one fresh epsilon query."""
    start = time.perf_counter()
    acc = FourierAccountant().compose(PoissonSubsampled(GaussianMechanism(sigma=sigma), q), count=steps)
    bounds = acc.epsilon_bounds(DELTA)
    return bounds, acc._derived.get("path"), time.perf_counter() - start


def pld_cell(sigma, q, steps, dp_accounting):
    """``(epsilon, wall seconds)`` of dp_accounting's PLD (default discretisation) on the same ledger."""
    start = time.perf_counter()
    acc = dp_accounting.pld.PLDAccountant()
    acc.compose(dp_accounting.PoissonSampledDpEvent(q, dp_accounting.GaussianDpEvent(sigma)), steps)
    return acc.get_epsilon(DELTA), time.perf_counter() - start


def run():
    dp_accounting = optional_import("dp_accounting")
    dpledger_cell(0.6, 1e-4, 100)  # warm-up: imports, caches
    rows, slower, wide = [], 0, 0
    for sigma, q, steps in CELLS:
        bounds, path, seconds = dpledger_cell(sigma, q, steps)
        width = (bounds.upper - bounds.lower) / bounds.upper
        wide += width > 1e-6
        row = [sigma, q, f"{steps:,}", path, f"[{bounds.lower:.9g}, {bounds.upper:.9g}]", f"{width:.1e}",
               f"{seconds:.2f}"]
        if dp_accounting is not None:
            pld_eps, pld_seconds = pld_cell(sigma, q, steps, dp_accounting)
            slower += seconds > pld_seconds
            row += [f"{pld_eps:.6g}", f"{pld_seconds:.2f}", f"{seconds / pld_seconds:.2f}"]
        else:
            row += ["-"] * 3
        rows.append(row)
        print(*row, sep=" | ", flush=True)
    headers = ["sigma", "q", "steps", "dpledger path", "dpledger epsilon interval", "relative width",
               "dpledger s", "PLD default epsilon", "PLD s", "time ratio"]
    lines = [
        f"Command: `python -m benchmarks.bench_fourier_many_narrow`; epsilon at delta = {DELTA:g}; one fresh call of "
        "each tool per cell after a warm-up of the process.",
        "",
        f"{len(CELLS)} cells; dpledger slower than PLD's default in {slower}; intervals wider than the default rtol "
        f"(1e-6, relative) in {wide} (proven either way).",
        "",
        markdown_table(headers, rows),
        "",
        machine_line(),
    ]
    return Section("Fourier: many runs of a very narrow loss, against dp_accounting PLD", "\n".join(lines))


if __name__ == "__main__":
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        print(run().markdown())
