"""Where cutting the remove direction's upper tail pays (``mechanisms.subsampled_body.CUT_MAX_SAMPLING``).

For the subsampled-Gaussian cells of issue 14's grid with q in {1e-4, 1e-3, 0.01} (delta = 1e-5), the wall time of
``FourierAccountant().compose(PoissonSubsampled(GaussianMechanism(sigma), q), steps).epsilon_bounds(1e-5)`` with
the threshold set so that nothing is cut (0) and so that every one of these cells is cut (0.02), the best of two
fresh calls each after a warm-up, and whether the two proven intervals meet (they must: both are proven). The
library's default (2e-3) takes the cut column for q <= 1e-3 and the whole-law column for q = 0.01.

A performance choice only: any threshold gives proven bounds.

Run: ``python -m benchmarks.bench_fourier_cut`` (about a minute). Prints a markdown section for
benchmarks/RESULTS.md.
"""

import time

from benchmarks._common import Section, machine_line, markdown_table
from dpledger.accountants import FourierAccountant
from dpledger.mechanisms import GaussianMechanism, PoissonSubsampled, subsampled_body

DELTA = 1e-5
QS = (1e-4, 1e-3, 0.01)
SIGMAS = (0.6, 1.0, 2.0, 5.0)
STEPS = (10, 100, 10_000, 1_000_000)
#: Thresholds compared: nothing cut, everything here cut.
NEVER, ALWAYS = 0.0, 0.02


def timed(q, sigma, steps, threshold):
    """``(best wall seconds of two fresh calls, Bounds, path)`` with ``CUT_MAX_SAMPLING = threshold``."""
    saved = subsampled_body.CUT_MAX_SAMPLING
    subsampled_body.CUT_MAX_SAMPLING = threshold
    try:
        best, bounds, path = float("inf"), None, None
        for _ in range(2):
            acc = FourierAccountant().compose(PoissonSubsampled(GaussianMechanism(sigma=sigma), q), count=steps)
            start = time.perf_counter()
            bounds = acc.epsilon_bounds(DELTA)
            best = min(best, time.perf_counter() - start)
            path = acc._derived.get("path")
        return best, bounds, path
    finally:
        subsampled_body.CUT_MAX_SAMPLING = saved


def run():
    """One :class:`benchmarks._common.Section` (what ``python -m benchmarks.run_all`` collects); a flag if two proven
    intervals of the same cell do not meet."""
    for threshold in (NEVER, ALWAYS):  # warm-up of both paths
        timed(0.01, 1.1, 10, threshold)
        timed(1e-4, 2.0, 10, threshold)
    rows, faster, slower, disjoint = [], {}, {}, []
    for q in QS:
        for sigma in SIGMAS:
            for steps in STEPS:
                t_whole, b_whole, p_whole = timed(q, sigma, steps, NEVER)
                t_cut, b_cut, p_cut = timed(q, sigma, steps, ALWAYS)
                if max(b_whole.lower, b_cut.lower) > min(b_whole.upper, b_cut.upper):
                    disjoint.append((steps, sigma, q))
                ratio = t_cut / t_whole
                (faster if ratio < 1 else slower).setdefault(q, []).append(ratio)
                rows.append([f"{steps:,}", f"{sigma:g}", f"{q:g}", f"{1e3 * t_whole:.1f} ({p_whole})",
                             f"{1e3 * t_cut:.1f} ({p_cut})", f"{ratio:.2f}",
                             f"[{b_cut.lower:.10g}, {b_cut.upper:.10g}]"])
    lines = ["Command: `python -m benchmarks.bench_fourier_cut`; delta = 1e-05; best wall time of two fresh "
             "`epsilon_bounds` calls with nothing cut (threshold 0) and with every cell below cut (threshold 0.02); "
             "the library's default, 2e-3, takes the cut for q <= 1e-3 and the whole law for q = 0.01.", "",
             markdown_table(["steps", "sigma", "q", "whole law ms (path)", "cut ms (path)", "cut / whole",
                             "cut interval"], rows), ""]
    for q in QS:
        f, s_ = faster.get(q, []), slower.get(q, [])
        lines.append(f"q = {q:g}: cut faster in {len(f)} of {len(f) + len(s_)} cells"
                     + (f" (ratios {min(f):.2f}-{max(f):.2f})" if f else "")
                     + (f", slower in {len(s_)} (ratios {min(s_):.2f}-{max(s_):.2f})" if s_ else "") + ".")
    lines += ["", "Intervals that do not meet (a bug if any): "
              + (", ".join(f"{c}" for c in disjoint) if disjoint else "none") + ".", "",
              machine_line()]
    flags = tuple(f"cut and whole-law intervals do not meet at (steps, sigma, q) = {c}" for c in disjoint)
    return [Section("Fourier: where cutting the remove direction's tail pays (CUT_MAX_SAMPLING)",
                    "\n".join(lines), flags=flags)]


if __name__ == "__main__":
    for section in run():
        print(section.markdown())
