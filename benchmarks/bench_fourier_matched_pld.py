"""FourierAccountant against dp_accounting's PLD at matched accuracy (issue 14: "within 1e-6 relative of a fine
PLD", and what the grid's "slower than PLD at its default discretisation" costs in tightness).

For a few subsampled-Gaussian cells of the issue-14 grid (delta = 1e-5), dpledger's certified interval
(``FourierAccountant().epsilon_bounds``) and its wall time, next to ``PLDAccountant(value_discretization_interval=h)``
(pessimistic: an upper bound) for h = 1e-4 (the default), 1e-5 and 1e-6, each with its wall time and its relative
distance above dpledger's upper end. PLD at h = 1e-6 is skipped for 10^6 steps (its grid exhausted this machine's
memory). One fresh accountant per call, one call each, after a warm-up of both libraries.

Run: ``python -m benchmarks.bench_fourier_matched_pld`` (about two minutes). Prints a markdown section for
benchmarks/RESULTS.md.
"""

import time

from benchmarks._common import Section, machine_line, markdown_table, optional_import, quiet
from dpledger.accountants import FourierAccountant
from dpledger.mechanisms import GaussianMechanism, PoissonSubsampled

DELTA = 1e-5
#: (steps, sigma, q): grid cells where PLD's default grid was faster than dpledger, and long ledgers.
CELLS = ((10, 2.0, 1e-3), (100, 2.0, 1e-3), (100, 1.0, 1e-3), (10_000, 1.0, 1e-3), (10_000, 2.0, 0.01),
         (1_000_000, 1.0, 1e-3))
STEPS_H = (1e-4, 1e-5, 1e-6)
#: PLD at the finest grid is not run beyond this many steps (memory).
FINEST_MAX_STEPS = 100_000


def ours(steps, sigma, q):
    start = time.perf_counter()
    acc = FourierAccountant().compose(PoissonSubsampled(GaussianMechanism(sigma=sigma), q), count=steps)
    bounds = acc.epsilon_bounds(DELTA)
    return bounds, acc.bound_kind.value, time.perf_counter() - start


def pld(steps, sigma, q, h, dp_accounting):
    from dp_accounting.pld import pld_privacy_accountant

    start = time.perf_counter()
    acc = pld_privacy_accountant.PLDAccountant(value_discretization_interval=h)
    acc.compose(dp_accounting.PoissonSampledDpEvent(q, dp_accounting.GaussianDpEvent(sigma)), steps)
    return acc.get_epsilon(DELTA), time.perf_counter() - start


def run():
    quiet()
    dp_accounting = optional_import("dp_accounting")
    if dp_accounting is None:
        raise SystemExit("dp_accounting is needed: pip install -e '.[interop]'")
    ours(10, 1.0, 0.01), pld(10, 1.0, 0.01, 1e-4, dp_accounting)  # warm-up
    rows = []
    for steps, sigma, q in CELLS:
        bounds, label, seconds = ours(steps, sigma, q)
        row = [f"{steps:,}", sigma, q, label, f"[{bounds.lower:.10g}, {bounds.upper:.10g}]", f"{seconds:.3f}"]
        for h in STEPS_H:
            if h < 1e-5 and steps > FINEST_MAX_STEPS:
                row += ["not run (memory)", ""]
                continue
            eps, t = pld(steps, sigma, q, h, dp_accounting)
            row += [f"{eps:.10g} ({(eps - bounds.upper) / bounds.upper:+.1e})", f"{t:.2f}"]
        rows.append(row)
        print(*row, sep=" | ", flush=True)
    headers = ["steps", "sigma", "q", "dpledger label", "dpledger interval", "dpledger s"]
    for h in STEPS_H:
        headers += [f"PLD h={h:g} (rel. above our upper)", f"PLD h={h:g} s"]
    body = "\n".join([
        f"Command: `python -m benchmarks.bench_fourier_matched_pld`; delta = {DELTA:g}; one fresh call each.",
        "",
        markdown_table(headers, rows),
        "",
        machine_line(),
    ])
    return [Section("Fourier against PLD at matched accuracy (issue 14)", body)]


if __name__ == "__main__":
    for section in run():
        print()
        print(section.markdown())
