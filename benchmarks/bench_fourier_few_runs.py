"""Few runs of little noise and a small sampling probability (issue 14, item 2): the corner where the
characteristic function barely decays and Fourier inversion cannot reach ``rtol`` with ``max_terms`` nodes. Two runs
whose loss is too narrow for the window take the exact second run (``accountants.two_runs``, path ``two runs``);
two to ten (up to fifty of the narrowest, ``accountants.windowed_buckets.faster_than_inversion``) privacy buckets
on a window around epsilon (``accountants.windowed_buckets``, path ``windowed``); the others, inversion. Each
query once, in this warm process:

* dpledger: ``FourierAccountant().compose(PoissonSubsampled(GaussianMechanism(sigma), q), runs)``, a fresh
  accountant per query; ``epsilon_bounds(1e-5)``, then ``delta_bounds`` at that upper epsilon on another fresh
  accountant; the interval, its width relative to its upper end, the path the report names (``two runs``,
  ``windowed``, ``inversion``, ``buckets`` or ``buckets+inversion``) and the wall and CPU time;
* dp_accounting's ``PLDAccountant()`` (default discretisation, pessimistic) on the same ledger, same queries, its
  wall time.

Run: ``python -m benchmarks.bench_fourier_few_runs``. Prints a markdown section for benchmarks/RESULTS.md.
``python -m benchmarks.bench_fourier_few_runs crossover`` instead times the windowed path against the other paths
where they cross over (:func:`crossover`).
"""

import time
import warnings

from benchmarks._common import Section, machine_line, markdown_table, optional_import, render_sections
from dpledger.accountants import FourierAccountant
from dpledger.accountants.two_runs import TwoRunLedger
from dpledger.mechanisms import GaussianMechanism, PoissonSubsampled

DELTA = 1e-5
#: (sigma, q, runs): the corner, and cells next to it that inversion reaches with three runs or more.
CELLS = ((0.6, 1e-4, 2), (0.6, 1e-4, 3), (0.6, 1e-4, 4), (0.6, 1e-4, 6), (0.5, 3e-4, 2), (0.6, 1e-3, 2), (0.6, 1e-3, 3),
         (0.6, 1e-3, 4), (1.0, 1e-3, 2), (1.0, 1e-3, 3), (0.5, 1e-5, 2))


def _ledger(sigma, q, runs):
    return FourierAccountant().compose(PoissonSubsampled(GaussianMechanism(sigma=sigma), q), count=runs)


def _path(acc):
    """The path the report names: ``two runs`` (accountants.two_runs), ``windowed`` (accountants.windowed_buckets),
    else the inversion or buckets path."""
    few = acc._derived.get("few_runs")
    if few is not None:
        return "two runs" if isinstance(few, TwoRunLedger) else "windowed"
    return acc._derived.get("path", "")


def _timed(call):
    start, cpu = time.perf_counter(), time.process_time()
    result = call()
    return result, time.perf_counter() - start, time.process_time() - cpu


def _pld(sigma, q, runs, dp_accounting):
    acc = dp_accounting.pld.PLDAccountant()
    acc.compose(dp_accounting.PoissonSampledDpEvent(q, dp_accounting.GaussianDpEvent(sigma)), runs)
    return acc


def run():
    dp_accounting = optional_import("dp_accounting")
    rows = []
    for sigma, q, runs in CELLS:
        eps_acc = _ledger(sigma, q, runs)
        eps, eps_wall, eps_cpu = _timed(lambda: eps_acc.epsilon_bounds(DELTA))
        delta_acc = _ledger(sigma, q, runs)
        delta, delta_wall, delta_cpu = _timed(lambda: delta_acc.delta_bounds(eps.upper))
        row = [sigma, q, runs, f"[{eps.lower:.8g}, {eps.upper:.8g}]", f"{(eps.upper - eps.lower) / eps.upper:.1e}",
               _path(eps_acc), f"{eps_wall:.3f}", f"{eps_cpu:.3f}",
               f"[{delta.lower:.7g}, {delta.upper:.7g}]", _path(delta_acc), f"{delta_wall:.3f}",
               f"{delta_cpu:.3f}"]
        if dp_accounting is not None:
            pld_eps, pld_eps_wall, _ = _timed(lambda: _pld(sigma, q, runs, dp_accounting).get_epsilon(DELTA))
            pld_delta, pld_delta_wall, _ = _timed(lambda: _pld(sigma, q, runs, dp_accounting).get_delta(eps.upper))
            row += [f"{pld_eps:.8g}", f"{pld_eps_wall:.2f}", f"{pld_delta:.7g}", f"{pld_delta_wall:.2f}"]
        else:
            row += ["-"] * 4
        rows.append(row)
        print(*row, sep=" | ", flush=True)
    headers = ["sigma", "q", "runs", "dpledger epsilon interval", "relative width", "epsilon path", "epsilon s",
               "epsilon CPU s", "dpledger delta interval at its upper epsilon", "delta path", "delta s",
               "delta CPU s", "PLD default epsilon", "PLD epsilon s", "PLD default delta", "PLD delta s"]
    body = "\n".join([
        f"Command: `python -m benchmarks.bench_fourier_few_runs`; epsilon at delta = {DELTA:g}, then delta at "
        "dpledger's upper epsilon; one fresh accountant per query, each query once (warm process).",
        "",
        markdown_table(headers, rows),
        "",
        machine_line(),
    ])
    return [Section("Fourier: few runs of little noise and a small sampling probability", body)]


#: (sigma, q, runs, delta): where the windowed path and the other paths cross over (accountants.windowed_buckets.
#: faster_than_inversion), and two small deltas.
CROSSOVER = ((0.6, 1e-4, 4, 1e-5), (0.6, 1e-4, 10, 1e-5), (0.6, 1e-4, 30, 1e-5), (0.6, 1e-4, 50, 1e-5),
             (0.6, 3e-4, 10, 1e-5), (0.6, 3e-4, 50, 1e-5), (0.5, 3e-4, 10, 1e-5), (0.5, 3e-4, 20, 1e-5),
             (0.6, 1e-3, 5, 1e-5), (0.6, 1e-3, 10, 1e-5), (0.6, 1e-3, 30, 1e-5), (0.6, 1e-3, 50, 1e-5),
             (1.0, 1e-3, 5, 1e-5), (1.0, 1e-3, 10, 1e-5), (1.0, 1e-3, 20, 1e-5), (0.6, 0.01, 10, 1e-5),
             (0.6, 0.01, 20, 1e-5), (0.5, 0.01, 10, 1e-5), (1.0, 1e-4, 5, 1e-5), (1.0, 1e-4, 10, 1e-5),
             (0.7, 1e-4, 10, 1e-5), (0.6, 1e-4, 3, 1e-8), (0.6, 1e-3, 3, 1e-8))
#: Fresh calls timed on each side of a crossover cell (their median is reported).
REPEATS = 3


def _median_timed(make):
    """``make()`` returns a fresh call; the first result and the median wall time of :data:`REPEATS` fresh calls."""
    timings = [_timed(make()) for _ in range(REPEATS)]
    return timings[0][0], sorted(t[1] for t in timings)[REPEATS // 2]


def crossover():
    """Epsilon of each CROSSOVER cell by the windowed path alone (``WindowedLedger.epsilon_bounds`` at rtol 1e-6) and
    by the accountant with the few-run path switched off (inversion, buckets), each the median wall time of
    :data:`REPEATS` fresh objects, and the path the accountant routes the ledger to."""
    from dpledger.accountants.two_runs import narrowness
    from dpledger.accountants.windowed_buckets import WindowedLedger

    rows = []
    for sigma, q, runs, delta in CROSSOVER:
        (lo, hi), w_wall = _median_timed(
            lambda: lambda: WindowedLedger([(1 / sigma, q, runs)]).epsilon_bounds(delta, 1e-6))

        def other_paths():
            other = _ledger(sigma, q, runs)
            other._few_runs = lambda: None  # the other paths only
            return lambda: other.epsilon_bounds(delta)

        o, o_wall = _median_timed(other_paths)
        routed = _ledger(sigma, q, runs)
        routed._few_runs()
        row = [sigma, q, runs, f"{delta:g}", f"{narrowness(1 / sigma, q):.0f}", f"[{lo:.10g}, {hi:.10g}]",
               f"{(hi - lo) / hi:.1e}", f"{w_wall:.3f}", f"[{o.lower:.10g}, {o.upper:.10g}]",
               f"{(o.upper - o.lower) / o.upper:.1e}", f"{o_wall:.3f}", _path(routed) or "other paths"]
        rows.append(row)
        print(*row, sep=" | ", flush=True)
    headers = ["sigma", "q", "runs", "delta", "narrowness", "windowed epsilon interval", "relative width",
               "windowed s", "other paths' interval", "relative width", "other paths s", "routed to"]
    body = "\n".join([
        "Command: `python -m benchmarks.bench_fourier_few_runs crossover`; epsilon by the windowed path alone and by "
        "the accountant with the few-run path off, each the median wall time of three queries on fresh objects (warm "
        "process).",
        "",
        markdown_table(headers, rows),
        "",
        machine_line(),
    ])
    return [Section("Fourier: few runs, windowed path against the other paths", body)]


if __name__ == "__main__":
    import sys

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        sections = crossover() if sys.argv[1:] == ["crossover"] else run()
    print()
    print(render_sections(sections))
