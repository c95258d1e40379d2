"""The privacy buckets' lower measure (accountants/lowered_dots.py) against Jensen's pairs, and against the upper
measure, on the windowed path's grids: the proven delta interval of one grid at a fixed epsilon, grid by grid.

Ledger: sigma 0.6, q 1e-4 x 10 (the corner of issue 14's grid), at epsilon 0.0103907716 (about its epsilon at
delta 1e-5), each grid ``WindowedLedger._pass`` over a window of +-1e-4 relative around it with tilt 590 (the tilt
the path picks there). For each grid step: the upper delta (connect-the-dots), the lower delta with the lowered dots
and with Jensen's pairs (``privacy_buckets._lower_measure`` switched to the pairs alone), and each lower end's
distance below the upper end relative to it (the interval's width). The exact delta lies between the tightest proven
ends of all rows. Also: how many of the lowered dots' calls returned ``None`` (fell back to the pairs).

Run: ``python -m benchmarks.bench_lower_measure``. Prints a markdown section for benchmarks/RESULTS.md.
"""

from benchmarks._common import Section, machine_line, markdown_table, render_sections
from dpledger.accountants import lowered_dots as ld
from dpledger.accountants import privacy_buckets as pb
from dpledger.accountants import windowed_buckets as wb

SIGMA, Q, RUNS = 0.6, 1e-4, 10
EPSILON = 0.0103907716
THETA = 590.0
STEPS = (16, 18, 20, 22)


def _lower_with(measure):
    """The lower measure's function for one run, counting the lowered dots' refusals."""
    refused = [0]

    def pairs(b, edges):
        return pb._jensen_pairs(b, edges)

    def lowered(b, edges):
        low = ld.lowered_dots(b, edges)
        if low is None:
            refused[0] += 1
            return pb._jensen_pairs(b, edges)
        return low

    return (lowered if measure == "lowered dots" else pairs), refused


def run():
    ledger = wb.WindowedLedger([(1 / SIGMA, Q, RUNS)])
    rows, original = [], wb._lower_measure
    try:
        for k in STEPS:
            h = 2.0**-k
            cells = {}
            for measure in ("lowered dots", "Jensen's pairs"):
                wb._lower_measure, refused = _lower_with(measure)
                lower, upper, _ = ledger._pass(EPSILON * (1 - 1e-4), EPSILON * (1 + 1e-4), h, THETA)
                cells[measure] = (lower(EPSILON), upper(EPSILON), refused[0])
            up = cells["lowered dots"][1]
            rows.append([f"2^-{k}", f"{up:.13e}"] + [
                item for measure in ("lowered dots", "Jensen's pairs")
                for item in (f"{cells[measure][0]:.13e}", f"{(up - cells[measure][0]) / up:.2e}")
            ] + [cells["lowered dots"][2]])
    finally:
        wb._lower_measure = original
    headers = ["grid step", "upper delta", "lower delta, lowered dots", "width, lowered dots", "lower delta, pairs",
               "width, pairs", "lowered dots refused"]
    body = "\n".join([
        "Command: `python -m benchmarks.bench_lower_measure`; sigma 0.6, q 1e-4 x 10, delta's proven interval at "
        f"epsilon {EPSILON} on one grid of the windowed path (tilt {THETA:g}); width = (upper - lower) / upper.",
        "",
        markdown_table(headers, rows),
        "",
        machine_line(),
    ])
    return [Section("Privacy buckets: the lower measure, lowered dots against Jensen's pairs", body)]


if __name__ == "__main__":
    print(render_sections(run()))
