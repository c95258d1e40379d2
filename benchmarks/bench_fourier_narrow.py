"""The narrow cells of issue 14's grid (few runs of a small sampling probability, sigma 2 and 5), timed more
robustly than ``bench_fourier_grid``'s one call per cell: median wall and CPU time of ``REPEAT`` fresh calls each,
after one warm-up call of the same cell, for dpledger's ``FourierAccountant.epsilon_bounds`` and dp_accounting's
``PLDAccountant()`` (default discretisation) on the same ledger. Both tools keep their process-level caches
between the calls (imports, quadrature rules), so the times are those of a warm process.

A second section asks the same cells for delta (``delta_bounds`` against PLD's ``get_delta``) at an epsilon
chosen once per cell, untimed: dpledger's certified epsilon at ``DELTA`` rounded to three digits, so delta is near
``DELTA`` there.

Run: ``python -m benchmarks.bench_fourier_narrow``. Prints two markdown sections for benchmarks/RESULTS.md.
"""

import statistics
import warnings

from benchmarks._common import Section, machine_line, markdown_table, optional_import, time_call
from dpledger.accountants import FourierAccountant
from dpledger.mechanisms import GaussianMechanism, PoissonSubsampled

DELTA = 1e-5
REPEAT = 7
#: (steps, sigma, q): the cells the grid left slower than PLD at 1ba1383 or 41d6a88, and their neighbours.
CELLS = ((10, 2.0, 1e-4), (10, 2.0, 1e-3), (10, 5.0, 1e-4), (10, 5.0, 1e-3), (10, 5.0, 0.01), (100, 2.0, 1e-4),
         (100, 2.0, 1e-3), (100, 5.0, 1e-4), (100, 5.0, 1e-3), (100, 5.0, 0.01), (10_000, 2.0, 1e-4),
         (10_000, 2.0, 1e-3), (10_000, 5.0, 1e-4), (10_000, 5.0, 1e-3))


def dpledger_epsilon(steps, sigma, q):
    """dpledger's certified ``Bounds`` of epsilon at ``DELTA`` from a fresh accountant."""
    acc = FourierAccountant().compose(PoissonSubsampled(GaussianMechanism(sigma=sigma), q), count=steps)
    return acc.epsilon_bounds(DELTA)


def dpledger_delta(steps, sigma, q, epsilon):
    """dpledger's certified ``Bounds`` of delta at ``epsilon`` from a fresh accountant."""
    acc = FourierAccountant().compose(PoissonSubsampled(GaussianMechanism(sigma=sigma), q), count=steps)
    return acc.delta_bounds(epsilon)


def _pld(steps, sigma, q, dp_accounting):
    acc = dp_accounting.pld.PLDAccountant()
    acc.compose(dp_accounting.PoissonSampledDpEvent(q, dp_accounting.GaussianDpEvent(sigma)), steps)
    return acc


def pld_epsilon(steps, sigma, q, dp_accounting):
    """dp_accounting's PLD epsilon (default discretisation, pessimistic) from a fresh accountant."""
    return _pld(steps, sigma, q, dp_accounting).get_epsilon(DELTA)


def pld_delta(steps, sigma, q, epsilon, dp_accounting):
    """dp_accounting's PLD delta at ``epsilon`` (default discretisation, pessimistic) from a fresh accountant."""
    return _pld(steps, sigma, q, dp_accounting).get_delta(epsilon)


def run():
    return [_section("epsilon"), _section("delta")]


def _section(query):
    """The cells timed for one query: ``"epsilon"`` at ``DELTA`` or ``"delta"`` at an epsilon near the answer."""
    dp_accounting = optional_import("dp_accounting")
    rows, slower, slower_cpu = [], 0, 0
    for steps, sigma, q in CELLS:
        if query == "epsilon":
            arg, ours_call = DELTA, (lambda: dpledger_epsilon(steps, sigma, q))
            theirs_call = lambda: pld_epsilon(steps, sigma, q, dp_accounting)  # noqa: E731
        else:
            arg = float(f"{dpledger_epsilon(steps, sigma, q).upper:.3g}")
            ours_call = lambda: dpledger_delta(steps, sigma, q, arg)  # noqa: E731
            theirs_call = lambda: pld_delta(steps, sigma, q, arg, dp_accounting)  # noqa: E731
        ours = time_call(ours_call, repeat=REPEAT)
        wall, cpu = statistics.median(ours.runs), statistics.median(ours.cpu_runs)
        row = [steps, sigma, q] + ([] if query == "epsilon" else [f"{arg:g}"]) + [
            f"[{ours.result.lower:.7g}, {ours.result.upper:.7g}]", f"{wall * 1e3:.1f}", f"{cpu * 1e3:.1f}"]
        if dp_accounting is not None:
            theirs = time_call(theirs_call, repeat=REPEAT)
            p_wall, p_cpu = statistics.median(theirs.runs), statistics.median(theirs.cpu_runs)
            slower += wall > p_wall
            slower_cpu += cpu > p_cpu
            row += [f"{theirs.result:.6g}", f"{p_wall * 1e3:.1f}", f"{p_cpu * 1e3:.1f}", f"{wall / p_wall:.2f}",
                    f"{cpu / p_cpu:.2f}"]
        else:
            row += ["-"] * 5
        rows.append(row)
        print(*row, sep=" | ", flush=True)
    headers = ["steps", "sigma", "q"] + ([] if query == "epsilon" else ["epsilon"]) + [
        f"dpledger {query} interval", "dpledger ms (median wall)", "dpledger CPU ms (median)",
        f"PLD default {query}", "PLD ms (median wall)", "PLD CPU ms (median)", "wall ratio", "CPU ratio"]
    asked = (f"epsilon at delta = {DELTA:g}" if query == "epsilon" else
             f"delta at the epsilon shown (dpledger's epsilon at delta = {DELTA:g}, three digits)")
    lines = [
        f"Command: `python -m benchmarks.bench_fourier_narrow`; {asked}; {REPEAT} fresh calls of each "
        "tool per cell after one warm-up call of that cell (a warm process), medians.",
        "",
        f"{len(CELLS)} cells; dpledger slower than PLD's default in {slower} by median wall time, {slower_cpu} by "
        "median CPU time.",
        "",
        markdown_table(headers, rows),
        "",
        machine_line(),
    ]
    title = "Fourier grid, narrow cells: median of repeated fresh calls against dp_accounting PLD"
    return Section(title if query == "epsilon" else title + " (delta queries)", "\n".join(lines))


if __name__ == "__main__":
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for section in run():
            print()
            print(section.markdown())
