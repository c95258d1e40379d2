"""Speed of dpledger's RDP accountant and calibration, against dp_accounting and Opacus.

Three jobs, each timed end to end (a fresh accountant every call, so no cache of a previous call helps):

a. epsilon of a Poisson-subsampled Gaussian (q = 0.01, sigma = 1.1) composed 100,000 times;
b. a heterogeneous ledger of 200 distinct subsampled Gaussians (sigma = linspace(0.8, 3, 200), q = 0.01,
   10 steps each), then ``get_epsilon(1e-5)``;
c. calibrating the noise multiplier of DP-SGD (q = 256/60000, 14,062 steps, delta = 1e-5) for a target epsilon.

The epsilons (and sigmas) are checked too: dpledger must never be looser than a peer. Run alone with
``python -m benchmarks.bench_rdp_speed``.
"""


import numpy as np

from benchmarks._common import (
    Goal,
    Section,
    format_float,
    format_seconds,
    markdown_table,
    missing_peer_note,
    optional_import,
    quiet,
    render_sections,
    time_call,
)
from dpledger.accountants import RDPAccountant, calibrate_gaussian_sigma
from dpledger.mechanisms import GaussianMechanism, PoissonSubsampled

__all__ = ["run"]

DELTA = 1e-5

# (a) one mechanism, many steps
SINGLE_Q, SINGLE_SIGMA, SINGLE_STEPS = 0.01, 1.1, 100_000
SINGLE_GOAL_SECONDS = 0.020

# (b) heterogeneous ledger
LEDGER_SIGMAS = np.linspace(0.8, 3.0, 200)
LEDGER_Q, LEDGER_STEPS = 0.01, 10
LEDGER_GOAL_SPEEDUP = 10.0
LEDGER_WARMUP_SIZE = 5  # peers take many seconds here: warm them up on a 5-mechanism ledger

# (c) calibration
CALIB_Q, CALIB_STEPS = 256 / 60_000, 14_062
CALIB_TARGETS = (1.0, 3.0, 8.0)
CALIB_BRACKET = (0.3, 20.0)  # dp_accounting's search bracket for sigma


# ------------------------------------------------------------------------------------------------- jobs
def _dpledger_ledger(entries):
    """dpledger epsilon of ``entries = [(q, sigma, steps), ...]`` with a fresh accountant."""
    acc = RDPAccountant()
    for q, sigma, steps in entries:
        acc.compose(PoissonSubsampled(GaussianMechanism(sigma=float(sigma)), sampling_probability=q), count=steps)
    return acc.get_epsilon(DELTA)


def _dp_accounting_ledger(entries, dp_accounting):
    """dp_accounting ``RdpAccountant`` epsilon of the same ledger."""
    acc = dp_accounting.rdp.RdpAccountant()
    for q, sigma, steps in entries:
        acc.compose(dp_accounting.PoissonSampledDpEvent(q, dp_accounting.GaussianDpEvent(float(sigma))), steps)
    return float(acc.get_epsilon(DELTA))


def _opacus_ledger(entries, opacus_accountants):
    """Opacus ``RDPAccountant`` epsilon of the same ledger."""
    acc = opacus_accountants.RDPAccountant()
    acc.history = [(float(sigma), q, steps) for q, sigma, steps in entries]
    return float(acc.get_epsilon(delta=DELTA))


def _ledger_runners(peers):
    """``{name: f(entries)}`` for dpledger and every installed peer (peers silenced)."""
    runners = {"dpledger": _dpledger_ledger}
    if peers["dp_accounting"] is not None:
        runners["dp_accounting"] = lambda e: _silent(_dp_accounting_ledger, e, peers["dp_accounting"])
    if peers["opacus"] is not None:
        runners["Opacus"] = lambda e: _silent(_opacus_ledger, e, peers["opacus"])
    return runners


def _silent(fn, *args):
    with quiet():
        return fn(*args)


def _time_peer(fn, repeat, warmup=None):
    """``(Timing, None)`` or ``(None, error message)``: a failing peer is a result, not a crash."""
    try:
        return time_call(fn, repeat=repeat, warmup=warmup), None
    except Exception as exc:  # noqa: BLE001
        return None, f"{type(exc).__name__}: {exc}"


# ------------------------------------------------------------------------------------------------ tables
def _timing_table(timings, reference="dpledger"):
    """Rows: tool, epsilon, best, median (wall), median CPU, ratios of medians to dpledger's."""
    ref = timings[reference][0]
    rows = []
    for name, (timing, err) in timings.items():
        if timing is None:
            rows.append([name, f"failed: {err}", "-", "-", "-", "-", "-", "-"])
            continue
        ours = name == reference
        rows.append(
            [
                name,
                format_float(timing.result, 10),
                format_seconds(timing.best),
                format_seconds(timing.median),
                format_seconds(timing.cpu_median),
                timing.repeat,
                "1 (reference)" if ours else f"{timing.median / ref.median:.2f}x",
                "1 (reference)" if ours else f"{timing.cpu_median / ref.cpu_median:.2f}x",
            ]
        )
    headers = [
        "accountant",
        "epsilon",
        "best wall",
        "median wall",
        "median CPU",
        "timed runs",
        "its wall / dpledger wall (medians)",
        "its CPU / dpledger CPU (medians)",
    ]
    return markdown_table(headers, rows)


def _epsilon_flags(timings, job):
    """Flags where dpledger's epsilon exceeds a peer's."""
    ours = timings["dpledger"][0].result
    flags = []
    for name, (timing, err) in timings.items():
        if name == "dpledger":
            continue
        if timing is None:
            flags.append(f"{name} failed in {job}: {err}")
        elif ours > timing.result:
            flags.append(
                f"{job}: dpledger epsilon {ours:.10g} EXCEEDS {name} {timing.result:.10g} "
                f"(ratio {ours / timing.result:.6f})."
            )
    return flags


def _missing_notes(peers):
    return [missing_peer_note(name) for name, module in peers.items() if module is None]


# -------------------------------------------------------------------------------------------------- (a)
def bench_single(peers):
    """(a) Fresh accountant + compose 100,000 steps + get_epsilon: dpledger vs peers."""
    entries = [(SINGLE_Q, SINGLE_SIGMA, SINGLE_STEPS)]
    timings = {}
    for name, fn in _ledger_runners(peers).items():
        timings[name] = _time_peer(lambda fn=fn: fn(entries), repeat=20 if name == "dpledger" else 10)
    ours = timings["dpledger"][0]
    goals = [
        Goal(
            "(a) dpledger median wall time",
            f"< {SINGLE_GOAL_SECONDS * 1e3:.0f} ms",
            f"{format_seconds(ours.median)} (CPU {format_seconds(ours.cpu_median)})",
            ours.median < SINGLE_GOAL_SECONDS,
        )
    ]
    body = [
        f"Poisson-subsampled Gaussian, q = {SINGLE_Q}, sigma = {SINGLE_SIGMA}, composed {SINGLE_STEPS:,} times, "
        f"epsilon at delta = {DELTA:g}. Each timed call builds the mechanism and a fresh accountant, composes "
        "and converts; one warm-up call first.",
        "",
        _timing_table(timings),
    ] + ["", *_missing_notes(peers)]
    return Section(
        "RDP speed (a): one subsampled Gaussian composed 100,000 times",
        "\n".join(body),
        goals=tuple(goals),
        flags=tuple(_epsilon_flags(timings, "(a)")),
    )


# -------------------------------------------------------------------------------------------------- (b)
def bench_ledger(peers):
    """(b) 200 distinct subsampled Gaussians, 10 steps each, then get_epsilon: dpledger vs peers."""
    entries = [(LEDGER_Q, s, LEDGER_STEPS) for s in LEDGER_SIGMAS]
    small = entries[:LEDGER_WARMUP_SIZE]
    timings = {}
    for name, fn in _ledger_runners(peers).items():
        ours = name == "dpledger"
        timings[name] = _time_peer(
            lambda fn=fn: fn(entries), repeat=3 if ours else 1, warmup=None if ours else (lambda fn=fn: fn(small))
        )
    ours = timings["dpledger"][0]
    split = _dpledger_split(entries)
    goals = []
    dpa = timings.get("dp_accounting", (None, None))[0]
    if dpa is not None:
        speedup = dpa.median / ours.median
        cpu_speedup = dpa.cpu_median / ours.cpu_median
        goals.append(
            Goal(
                "(b) dpledger speed-up over dp_accounting RdpAccountant (median wall time)",
                f">= {LEDGER_GOAL_SPEEDUP:.0f}x",
                f"{speedup:.2f}x ({format_seconds(ours.median)} vs {format_seconds(dpa.median)}; "
                f"CPU time {cpu_speedup:.2f}x)",
                speedup >= LEDGER_GOAL_SPEEDUP,
            )
        )
    else:
        goals.append(
            Goal(
                "(b) dpledger speed-up over dp_accounting RdpAccountant (median wall time)",
                f">= {LEDGER_GOAL_SPEEDUP:.0f}x",
                "not measured: dp_accounting is not installed",
                False,
            )
        )
    body = [
        f"{len(entries)} distinct Poisson-subsampled Gaussians, sigma = linspace({LEDGER_SIGMAS[0]:g}, "
        f"{LEDGER_SIGMAS[-1]:g}, {len(entries)}), q = {LEDGER_Q}, {LEDGER_STEPS} steps each, then "
        f"get_epsilon({DELTA:g}). Each timed call builds a fresh accountant. dpledger: one warm-up and "
        f"{ours.repeat} timed runs; the peers take seconds, so they get one timed run after a warm-up on a "
        f"{LEDGER_WARMUP_SIZE}-mechanism ledger.",
        "",
        _timing_table(timings),
        "",
        f"dpledger split (best of 3): compose all {len(entries)} = {format_seconds(split[0])}, "
        f"get_epsilon = {format_seconds(split[1])}.",
    ] + ["", *_missing_notes(peers)]
    return Section(
        f"RDP speed (b): heterogeneous ledger of {len(entries)} subsampled Gaussians",
        "\n".join(body),
        goals=tuple(goals),
        flags=tuple(_epsilon_flags(timings, "(b)")),
    )


def _dpledger_split(entries, repeat=3):
    """Best wall ``(compose time, get_epsilon time)`` of dpledger on the ledger."""
    holder = {}

    def build():
        holder["acc"] = acc = RDPAccountant()
        for q, sigma, steps in entries:
            acc.compose(PoissonSubsampled(GaussianMechanism(sigma=float(sigma)), sampling_probability=q), count=steps)

    build_t = time_call(build, repeat=repeat).best
    query_t = time_call(lambda: holder["acc"].get_epsilon(DELTA), repeat=repeat).best
    return build_t, query_t


# -------------------------------------------------------------------------------------------------- (c)
def _calibrate_dpledger(target):
    return calibrate_gaussian_sigma(target, DELTA, sampling_probability=CALIB_Q, count=CALIB_STEPS)


def _calibrate_opacus(target, opacus_utils):
    return float(
        opacus_utils.get_noise_multiplier(
            target_epsilon=target, target_delta=DELTA, sample_rate=CALIB_Q, steps=CALIB_STEPS, accountant="rdp"
        )
    )


def _calibrate_dp_accounting(target, dp_accounting):
    def event(sigma):
        step = dp_accounting.PoissonSampledDpEvent(CALIB_Q, dp_accounting.GaussianDpEvent(sigma))
        return dp_accounting.SelfComposedDpEvent(step, CALIB_STEPS)

    return float(
        dp_accounting.calibrate_dp_mechanism(
            dp_accounting.rdp.RdpAccountant,
            event,
            target,
            DELTA,
            bracket_interval=dp_accounting.ExplicitBracketInterval(*CALIB_BRACKET),
        )
    )


def _dpledger_epsilon_at(sigma):
    mech = PoissonSubsampled(GaussianMechanism(sigma=sigma), sampling_probability=CALIB_Q)
    return RDPAccountant().compose(mech, count=CALIB_STEPS).get_epsilon(DELTA)


def bench_calibration(peers):
    """(c) Smallest sigma meeting a target epsilon: dpledger vs Opacus get_noise_multiplier vs dp_accounting."""
    opacus_utils = optional_import("opacus.accountants.utils") if peers["opacus"] is not None else None
    tools = {"dpledger": _calibrate_dpledger}
    if opacus_utils is not None:
        tools["Opacus get_noise_multiplier"] = lambda t: _silent(_calibrate_opacus, t, opacus_utils)
    if peers["dp_accounting"] is not None:
        tools["dp_accounting calibrate_dp_mechanism"] = lambda t: _silent(
            _calibrate_dp_accounting, t, peers["dp_accounting"]
        )
    rows, flags, goals = [], [], []
    for target in CALIB_TARGETS:
        results = {
            name: _time_peer(lambda fn=fn: fn(target), repeat=3 if name == "dpledger" else 2)
            for name, fn in tools.items()
        }
        ours = results["dpledger"][0]
        achieved = _dpledger_epsilon_at(ours.result)
        goals.append(
            Goal(
                f"(c) calibrated sigma meets eps <= {target:g} (dpledger's own bound)",
                f"eps <= {target:g}",
                f"eps = {achieved:.8g} at sigma = {ours.result:.8g}",
                achieved <= target,
            )
        )
        for name, (timing, err) in results.items():
            rows.append(_calibration_row(target, name, timing, err, ours))
            if name != "dpledger":
                flags += _calibration_flags(target, name, timing, err, ours)
    body = [
        f"DP-SGD with q = 256/60000, {CALIB_STEPS:,} steps, delta = {DELTA:g}: smallest sigma whose epsilon is at "
        "most the target. dpledger: `accountants.calibrate_gaussian_sigma` (default rtol 1e-6 on sigma; the result "
        "is always feasible). Opacus: `get_noise_multiplier` (RDP accountant, default epsilon_tolerance 0.01, "
        "returns a feasible sigma). dp_accounting: `calibrate_dp_mechanism` with `RdpAccountant` and bracket "
        f"{CALIB_BRACKET} (Brent's method; its answer may sit on either side of the target). One warm-up, then "
        "3 timed runs (dpledger) or 2 (peers). No speed goal was set for calibration: the timings are for "
        "information.",
        "",
        markdown_table(
            ["target eps", "tool", "sigma", "best wall", "median wall", "median CPU",
             "its wall / dpledger wall (medians)", "sigma / dpledger sigma"],
            rows,
        ),
    ] + ["", *_missing_notes(peers)]
    return Section(
        "Calibration (c): DP-SGD noise multiplier for a target epsilon",
        "\n".join(body),
        goals=tuple(goals),
        flags=tuple(flags),
    )


def _calibration_row(target, name, timing, err, ours):
    if timing is None:
        return [f"{target:g}", name, f"failed: {err}", "-", "-", "-", "-", "-"]
    return [
        f"{target:g}",
        name,
        format_float(timing.result, 8),
        format_seconds(timing.best),
        format_seconds(timing.median),
        format_seconds(timing.cpu_median),
        "1 (reference)" if name == "dpledger" else f"{timing.median / ours.median:.1f}x",
        f"{timing.result / ours.result:.6f}",
    ]


def _calibration_flags(target, name, timing, err, ours):
    if timing is None:
        return [f"{name} failed to calibrate for eps = {target:g}: {err}"]
    if ours.result > timing.result * (1 + 1e-6):
        return [
            f"(c) eps = {target:g}: dpledger needs MORE noise than {name} "
            f"(sigma {ours.result:.8g} > {timing.result:.8g})."
        ]
    if ours.median > timing.median:
        return [
            f"(c) eps = {target:g}: dpledger calibration is SLOWER than {name} "
            f"({format_seconds(ours.median)} vs {format_seconds(timing.median)})."
        ]
    return []


# ---------------------------------------------------------------------------------------------------- run
def run():
    """Run the three speed jobs.

    Returns
    -------
    list of Section
        Sections (a), (b) and (c), with their goals and flags.
    """
    peers = {
        "dp_accounting": optional_import("dp_accounting"),
        "opacus": optional_import("opacus.accountants"),
    }
    return [bench_single(peers), bench_ledger(peers), bench_calibration(peers)]


if __name__ == "__main__":
    print(render_sections(run()))
