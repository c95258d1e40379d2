"""Tightness and speed of dpledger's ``FourierAccountant`` (issue 3), against dp_accounting's PLD accountant and
prv_accountant.

Tightness (delta = 1e-5):

* three DP-SGD settings (Poisson-subsampled Gaussian): dpledger's certified ``epsilon_bounds`` (lower, estimate,
  upper) against dp_accounting's PLD at a fine discretisation (pessimistic, an upper bound) and prv_accountant's
  (lower, estimate, upper); dpledger's ``RDPAccountant`` for reference;
* an un-subsampled Gaussian composition against the analytic Gaussian mechanism (Balle & Wang 2018) from the
  mpmath oracle ``tests/oracles/analytic_gaussian.py``.

Speed (each timed call builds a fresh accountant, composes and converts; CPU time beside wall time):

a. one subsampled Gaussian (q = 0.01, sigma = 1.1) at 10,000 and 100,000 steps, against dp_accounting's
   ``PLDAccountant`` at its default discretisation;
b. a ledger of 200 distinct Gaussians and 50 distinct randomized responses, then ``get_epsilon(1e-5)``;
c. 200 distinct subsampled Gaussians (q = 0.01, 10 steps each).

Run alone with ``python -m benchmarks.bench_fourier`` (or name sections: ``dpsgd gaussian single mixed
subsampled``).
"""

import importlib.util
import math
import pathlib
import sys
import time

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
from dpledger.accountants import RDPAccountant
from dpledger.accountants.fourier_accountant import FourierAccountant
from dpledger.mechanisms import GaussianMechanism, PoissonSubsampled, RandomizedResponse

__all__ = ["run"]

DELTA = 1e-5
ORACLE_PATH = pathlib.Path(__file__).resolve().parents[1] / "tests" / "oracles" / "analytic_gaussian.py"

# --------------------------------------------------------------------------------------------- tightness
#: (label, q, sigma, steps) at delta = DELTA.
DPSGD_SETTINGS = (
    ("q=0.01, sigma=1.1, 10k steps", 0.01, 1.1, 10_000),
    ("MNIST: q=256/60000, sigma=1.1, 14062 steps", 256 / 60_000, 1.1, 14_062),
    ("q=0.001, sigma=0.8, 100k steps", 0.001, 0.8, 100_000),
)
#: dp_accounting's pessimistic PLD (upper bound) at this interval: 5x finer than its default 1e-4. At 1e-5 it
#: took 10-20 s per setting here (its epsilons moved by at most 2.3e-6 relative from 2e-5's); 2e-5 keeps the whole
#: benchmark within the runtime budget.
FINE_INTERVAL = 2e-5
#: prv_accountant's accuracy: epsilon within +-PRV_EPS_ERROR, delta within delta * PRV_DELTA_ERROR_FRACTION.
PRV_EPS_ERROR = 0.01
PRV_DELTA_ERROR_FRACTION = 1e-3
#: Goal: dpledger's epsilon within this relative distance of dp_accounting's fine PLD and of prv's estimate.
TIGHT_RTOL = 0.005

#: Un-subsampled Gaussian composition (sigma, steps) and the deltas checked; 1e-10 is the published check.
GAUSS_SIGMA, GAUSS_STEPS = 30.0, 240
GAUSS_DELTAS = (1e-3, 1e-5, 1e-10, 1e-12)
GAUSS_PUBLISHED = (1e-10, 3.207781)
#: Goal of issue 3's tests: Fourier epsilon equal to the analytic Gaussian to this relative accuracy.
GAUSS_RTOL = 1e-6

# ------------------------------------------------------------------------------------------------- speed
SINGLE_Q, SINGLE_SIGMA = 0.01, 1.1
SINGLE_STEPS = (10_000, 100_000)
#: "Nearly independent of the step count": time at 100,000 steps at most this multiple of the time at 10,000.
STEP_INDEPENDENCE_RATIO = 1.5

LEDGER_GAUSS_SIGMAS = np.linspace(5.0, 50.0, 200)
LEDGER_RR_PS = np.linspace(0.505, 0.55, 50)
LEDGER_GOAL_SECONDS = 0.050
#: dp_accounting is first run on a 1/PROBE_FRACTION sub-ledger; the full ledger only if that extrapolates
#: (linearly) to at most PEER_CAP_SECONDS.
PROBE_FRACTION = 10
PEER_CAP_SECONDS = 60.0

SUBSAMPLED_SIGMAS = np.linspace(0.8, 3.0, 200)
SUBSAMPLED_Q, SUBSAMPLED_STEPS = 0.01, 10
#: Issue 14 asks 20x (issue 3 had asked 5x, as an estimate).
SUBSAMPLED_GOAL_SPEEDUP = 20.0
#: Warm-up of (c) (imports, first-call costs): the extreme sigmas with many steps, under a second for each tool.
#: A ledger of few mechanisms at 10 steps is no warm-up for dpledger: one sigma = 0.8 mechanism alone took 3 min.
SUBSAMPLED_WARMUP = ((0.8, 1_000), (3.0, 1_000))


# -------------------------------------------------------------------------------------------------- helpers
def _peers():
    return {"dp_accounting": optional_import("dp_accounting"), "prv_accountant": optional_import("prv_accountant")}


def _pld_module():
    return optional_import("dp_accounting.pld.privacy_loss_distribution")


def _call(fn, *args):
    """``(value, None)`` or ``(None, error message)``; peers are silenced and a failure is a result."""
    try:
        with quiet():
            return fn(*args), None
    except Exception as exc:  # noqa: BLE001
        return None, f"{type(exc).__name__}: {exc}"


def _timed(fn, *args):
    """``(value, wall seconds, error)`` of one silenced call."""
    start = time.perf_counter()
    value, err = _call(fn, *args)
    return value, time.perf_counter() - start, err


def _time_peer(fn, repeat, warmup=None):
    try:
        with quiet():
            return time_call(fn, repeat=repeat, warmup=warmup), None
    except Exception as exc:  # noqa: BLE001
        return None, f"{type(exc).__name__}: {exc}"


def _rel(a, b):
    return a / b - 1.0


def _fmt_bounds(b, digits=8):
    return f"{b[1]:.{digits}g} [{b[0]:.{digits}g}, {b[2]:.{digits}g}]"


def _subsampled(q, sigma):
    return PoissonSubsampled(GaussianMechanism(sigma=float(sigma)), sampling_probability=q)


def _load_oracle():
    if not ORACLE_PATH.is_file():
        return None
    try:
        spec = importlib.util.spec_from_file_location("_bench_fourier_analytic_gaussian", ORACLE_PATH)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        module.gaussian_epsilon_float, module.composed_mu  # noqa: B018 - check the API is there
        return module
    except Exception:  # noqa: BLE001
        return None


# ----------------------------------------------------------------------------------- tightness: DP-SGD
def _dpledger_bounds(q, sigma, steps, delta=DELTA):
    return tuple(FourierAccountant().compose(_subsampled(q, sigma), count=steps).epsilon_bounds(delta))


def _dpledger_rdp(q, sigma, steps, delta=DELTA):
    return RDPAccountant().compose(_subsampled(q, sigma), count=steps).get_epsilon(delta)


def _pld_pessimistic(q, sigma, steps, dp_accounting, interval=FINE_INTERVAL):
    acc = dp_accounting.pld.PLDAccountant(value_discretization_interval=interval)
    acc.compose(dp_accounting.PoissonSampledDpEvent(q, dp_accounting.GaussianDpEvent(sigma)), steps)
    return float(acc.get_epsilon(DELTA))


def _prv(q, sigma, steps, prv_accountant):
    acc = prv_accountant.PRVAccountant(
        prvs=prv_accountant.PoissonSubsampledGaussianMechanism(noise_multiplier=sigma, sampling_probability=q),
        max_self_compositions=steps,
        eps_error=PRV_EPS_ERROR,
        delta_error=DELTA * PRV_DELTA_ERROR_FRACTION,
    )
    return tuple(float(x) for x in acc.compute_epsilon(delta=DELTA, num_self_compositions=[steps]))


def _measure_dpsgd(setting, peers):
    label, q, sigma, steps = setting
    row = {"label": label, "errors": []}
    row["ours"], row["t_ours"], err = _timed(_dpledger_bounds, q, sigma, steps)
    if err:
        row["errors"].append(f"dpledger FourierAccountant failed on {label}: {err}")
    row["rdp"], _, err = _timed(_dpledger_rdp, q, sigma, steps)
    jobs = []
    if peers["dp_accounting"] is not None:
        jobs.append(("pess", _pld_pessimistic, (q, sigma, steps, peers["dp_accounting"])))
    if peers["prv_accountant"] is not None:
        jobs.append(("prv", _prv, (q, sigma, steps, peers["prv_accountant"])))
    for key in ("pess", "prv"):
        row[key], row["t_" + key] = None, None
    for key, fn, args in jobs:
        row[key], row["t_" + key], err = _timed(fn, *args)
        if err:
            row["errors"].append(f"{key} peer failed on {label}: {err}")
    return row


def _dpsgd_flags(row):
    flags = list(row["errors"])
    ours = row["ours"]
    if ours is None:
        return flags
    lower, _, upper = ours
    label = row["label"]
    if row["prv"] is not None:
        if upper < row["prv"][0]:
            flags.append(f"{label}: dpledger upper {upper:.10g} is BELOW prv_accountant's lower {row['prv'][0]:.10g}.")
        if lower > row["prv"][2]:
            flags.append(f"{label}: dpledger lower {lower:.10g} is ABOVE prv_accountant's upper {row['prv'][2]:.10g}.")
    if row["pess"] is not None and lower > row["pess"]:
        flags.append(
            f"{label}: dpledger's certified lower {lower:.10g} is ABOVE dp_accounting's pessimistic (upper-bound) "
            f"PLD {row['pess']:.10g}: the two cannot both hold."
        )
    if row["rdp"] is not None and upper > row["rdp"]:
        flags.append(f"{label}: dpledger Fourier upper {upper:.10g} EXCEEDS its own RDP epsilon {row['rdp']:.10g}.")
    return flags


def _dpsgd_goals(rows):
    done = [r for r in rows if r["ours"] is not None]
    goals = []
    for key, name in (("pess", f"dp_accounting PLD (interval {FINE_INTERVAL:g})"), ("prv", "prv_accountant estimate")):
        pairs = [(r["ours"][2], r[key] if key == "pess" else r[key][1]) for r in done if r[key] is not None]
        worst = max((abs(_rel(a, b)) for a, b in pairs), default=None)
        goals.append(
            Goal(
                f"Fourier epsilon (upper) within {TIGHT_RTOL:.1%} of {name}",
                f"all {len(DPSGD_SETTINGS)} DP-SGD settings",
                "not measured (peer missing or failed)" if worst is None else
                f"{sum(abs(_rel(a, b)) <= TIGHT_RTOL for a, b in pairs)} of {len(pairs)}; largest |ratio - 1| = "
                f"{worst:.2e}",
                worst is not None and len(pairs) == len(DPSGD_SETTINGS) and worst <= TIGHT_RTOL,
            )
        )
    checks = []
    for r in done:
        if r["prv"] is not None:
            checks.append(r["ours"][2] >= r["prv"][0])
    goals.append(
        Goal(
            "Fourier upper >= prv_accountant's lower bound",
            "every setting",
            f"{sum(checks)} of {len(checks)} comparisons",
            bool(checks) and all(checks) and len(done) == len(rows),
        )
    )
    return goals


def _dpsgd_table(rows):
    headers = [
        "setting",
        "dpledger Fourier estimate [lower, upper]",
        f"dp_accounting PLD pessimistic, interval {FINE_INTERVAL:g}",
        "prv estimate [lower, upper]",
        "Fourier upper / PLD pessimistic - 1",
        "Fourier upper / prv estimate - 1",
        "Fourier upper - Fourier lower",
        "dpledger RDP eps",
        "time: Fourier / PLD / prv",
    ]
    body = []
    for r in rows:
        ours = r["ours"]
        up = None if ours is None else ours[2]
        body.append(
            [
                r["label"],
                "failed" if ours is None else _fmt_bounds(ours, 10),
                format_float(r["pess"], 10),
                "-" if r["prv"] is None else _fmt_bounds(r["prv"], 7),
                "-" if up is None or r["pess"] is None else f"{_rel(up, r['pess']):+.2e}",
                "-" if up is None or r["prv"] is None else f"{_rel(up, r['prv'][1]):+.2e}",
                "-" if ours is None else f"{ours[2] - ours[0]:.2e}",
                format_float(r["rdp"], 8),
                " / ".join(format_seconds(r[k]) for k in ("t_ours", "t_pess", "t_prv")),
            ]
        )
    return markdown_table(headers, body)


def bench_dpsgd(peers):
    rows = [_measure_dpsgd(s, peers) for s in DPSGD_SETTINGS]
    notes = [
        f"Epsilon at delta = {DELTA:g}, add-or-remove-one, Poisson-subsampled Gaussian. dpledger: "
        "`FourierAccountant().compose(mech, count=steps).epsilon_bounds(delta)` (default rtol 1e-6); "
        "`get_epsilon` returns the upper value. dp_accounting pessimistic: `PLDAccountant("
        f"value_discretization_interval={FINE_INTERVAL:g})` (an upper bound; its default interval is 1e-4). "
        "dp_accounting's PLDAccountant has no lower bound; its optimistic PLD (`from_gaussian_mechanism(..., "
        "pessimistic_estimate=False)`, privacy buckets) is left out here because it rounds every step's loss down, "
        "so over thousands of steps it is low by about steps x interval / 2 (at interval 1e-4: 4.69, 1.68 and 0 "
        "on these three settings), which makes it a vacuous check; prv_accountant's lower value is the lower bound "
        f"used. prv_accountant: `PRVAccountant(eps_error={PRV_EPS_ERROR}, delta_error="
        f"{PRV_DELTA_ERROR_FRACTION:g} * delta).compute_epsilon` (lower, estimate, upper). dpledger RDP: "
        "`RDPAccountant`, for reference. Times are single cold runs (wall).",
    ]
    for name, module in peers.items():
        if module is None:
            notes += ["", missing_peer_note(name)]
    flags = [f for r in rows for f in _dpsgd_flags(r)]
    return Section(
        "Fourier tightness: DP-SGD settings against PLD and PRV accountants",
        _dpsgd_table(rows) + "\n\n" + "\n".join(notes),
        goals=tuple(_dpsgd_goals(rows)),
        flags=tuple(flags),
    )


# ---------------------------------------------------------------------------- tightness: exact Gaussian
def bench_gaussian():
    oracle = _load_oracle()
    rows, flags, within, inside = [], [], [], []
    for delta in GAUSS_DELTAS:
        bounds, t, err = _timed(
            lambda d: tuple(FourierAccountant().compose(GaussianMechanism(sigma=GAUSS_SIGMA), GAUSS_STEPS)
                            .epsilon_bounds(d)), delta
        )
        rdp = RDPAccountant().compose(GaussianMechanism(sigma=GAUSS_SIGMA), GAUSS_STEPS).get_epsilon(delta)
        exact = None
        if oracle is not None:
            exact, oerr = _call(
                lambda d: float(oracle.gaussian_epsilon_float(d, oracle.composed_mu(GAUSS_SIGMA, count=GAUSS_STEPS))),
                delta,
            )
            if oerr:
                flags.append(f"the analytic Gaussian oracle failed at delta={delta:g}: {oerr}")
        if err:
            flags.append(f"dpledger FourierAccountant failed on sigma={GAUSS_SIGMA:g} x {GAUSS_STEPS}, "
                         f"delta={delta:g}: {err}")
        if bounds is not None and exact is not None:
            rel = _rel(bounds[2], exact)
            within.append(abs(rel) <= GAUSS_RTOL)
            inside.append(bounds[0] <= exact <= bounds[2])
            if exact > bounds[2]:
                flags.append(f"Gaussian sigma={GAUSS_SIGMA:g} x {GAUSS_STEPS}, delta={delta:g}: dpledger upper "
                             f"{bounds[2]:.12g} is BELOW the exact epsilon {exact:.12g} (privacy bug).")
            elif exact < bounds[0]:
                flags.append(f"Gaussian sigma={GAUSS_SIGMA:g} x {GAUSS_STEPS}, delta={delta:g}: dpledger's certified "
                             f"lower {bounds[0]:.12g} is ABOVE the exact epsilon {exact:.12g}.")
        rows.append(
            [
                f"{delta:g}",
                "failed" if bounds is None else _fmt_bounds(bounds, 12),
                format_float(exact, 12),
                "-" if bounds is None or exact is None else f"{_rel(bounds[2], exact):+.2e}",
                "-" if bounds is None or exact is None else f"{bounds[2] - exact:+.2e} / {bounds[0] - exact:+.2e}",
                format_float(rdp, 8),
                format_seconds(t),
            ]
        )
    published_delta, published_eps = GAUSS_PUBLISHED
    ours_pub = FourierAccountant().compose(GaussianMechanism(sigma=GAUSS_SIGMA), GAUSS_STEPS).get_epsilon(
        published_delta)
    goals = (
        Goal(
            f"Fourier epsilon = analytic Gaussian to {GAUSS_RTOL:g} relative",
            f"sigma {GAUSS_SIGMA:g} x {GAUSS_STEPS}, {len(GAUSS_DELTAS)} deltas",
            f"{sum(within)} of {len(within)}",
            bool(within) and all(within) and len(within) == len(GAUSS_DELTAS),
        ),
        Goal(
            "exact epsilon inside the certified [lower, upper]",
            f"{len(GAUSS_DELTAS)} deltas",
            f"{sum(inside)} of {len(inside)}",
            bool(inside) and all(inside) and len(inside) == len(GAUSS_DELTAS),
        ),
        Goal(
            "published check (round to 6 decimals)",
            f"{published_eps} at delta {published_delta:g}",
            f"{ours_pub:.6f}",
            round(ours_pub, 6) == published_eps,
        ),
    )
    body = [
        f"Gaussian mechanism sigma = {GAUSS_SIGMA:g} (sensitivity 1) composed {GAUSS_STEPS} times, no subsampling; "
        "`exact` is the analytic Gaussian mechanism (Balle & Wang 2018) of the composition, mu = sqrt(k) / sigma, "
        "from the mpmath oracle `tests/oracles/analytic_gaussian.py`.",
        "",
        markdown_table(
            ["delta", "dpledger Fourier estimate [lower, upper]", "exact eps", "upper / exact - 1",
             "upper - exact / lower - exact", "dpledger RDP eps", "Fourier time"],
            rows,
        ),
    ]
    if oracle is None:
        body += ["", "_The mpmath oracle was not usable, so no exact values._"]
    return Section("Fourier tightness: un-subsampled Gaussian against the exact value", "\n".join(body),
                   goals=goals, flags=tuple(flags))


# ------------------------------------------------------------------------------------------ speed tables
def _timing_row(name, timing, err, ref, extra=()):
    if timing is None:
        return [name, f"failed: {err}", "-", "-", "-", "-", "-", "-", *["-" for _ in extra]]
    ours = timing is ref
    return [
        name,
        format_float(timing.result if not isinstance(timing.result, tuple) else timing.result[2], 10),
        format_seconds(timing.best),
        format_seconds(timing.median),
        format_seconds(timing.cpu_median),
        timing.repeat,
        "1 (reference)" if ours else f"{timing.median / ref.median:.2f}x",
        "1 (reference)" if ours else f"{timing.cpu_median / ref.cpu_median:.2f}x",
        *extra,
    ]


TIMING_HEADERS = [
    "accountant",
    "epsilon",
    "best wall",
    "median wall",
    "median CPU",
    "timed runs",
    "its wall / dpledger wall (medians)",
    "its CPU / dpledger CPU (medians)",
]


# ------------------------------------------------------------------------------------------- speed (a)
def _fourier_single(steps):
    return FourierAccountant().compose(_subsampled(SINGLE_Q, SINGLE_SIGMA), count=steps).get_epsilon(DELTA)


def _pld_single(steps, dp_accounting):
    acc = dp_accounting.pld.PLDAccountant()  # default value_discretization_interval (1e-4)
    acc.compose(dp_accounting.PoissonSampledDpEvent(SINGLE_Q, dp_accounting.GaussianDpEvent(SINGLE_SIGMA)), steps)
    return float(acc.get_epsilon(DELTA))


def bench_single(peers):
    dpa = peers["dp_accounting"]
    results = {}
    for steps in SINGLE_STEPS:
        ours = _time_peer(lambda s=steps: _fourier_single(s), repeat=5)
        theirs = _time_peer(lambda s=steps: _pld_single(s, dpa), repeat=3) if dpa is not None else (None, "missing")
        results[steps] = (ours, theirs)
    rows, goals, flags = [], [], []
    for steps, ((ours, oerr), (theirs, terr)) in results.items():
        if ours is None:
            flags.append(f"(a) dpledger failed at {steps:,} steps: {oerr}")
            continue
        rows.append([f"{steps:,}", *_timing_row("dpledger Fourier", ours, None, ours)])
        if dpa is not None:
            rows.append([f"{steps:,}", *_timing_row("dp_accounting PLDAccountant (default 1e-4)", theirs, terr, ours)])
        ok = theirs is not None and ours.median <= theirs.median
        goals.append(
            Goal(
                f"(a) {steps:,} steps: dpledger no slower than dp_accounting PLD (median wall)",
                "ratio <= 1",
                "not measured" if theirs is None else
                f"{ours.median / theirs.median:.2f} ({format_seconds(ours.median)} vs "
                f"{format_seconds(theirs.median)}; CPU {ours.cpu_median / theirs.cpu_median:.2f})",
                ok,
            )
        )
        if theirs is not None and abs(_rel(ours.result, theirs.result)) > TIGHT_RTOL:
            flags.append(f"(a) {steps:,} steps: dpledger epsilon {ours.result:.10g} differs from dp_accounting's "
                         f"{theirs.result:.10g} by more than {TIGHT_RTOL:.1%}.")
    lo, hi = (results[s][0][0] for s in SINGLE_STEPS)
    if lo is not None and hi is not None:
        ratio = hi.median / lo.median
        goals.append(
            Goal(
                "(a) dpledger nearly independent of the step count",
                f"time({SINGLE_STEPS[1]:,}) / time({SINGLE_STEPS[0]:,}) <= {STEP_INDEPENDENCE_RATIO:g}",
                f"{ratio:.2f} (median wall; CPU {hi.cpu_median / lo.cpu_median:.2f})",
                ratio <= STEP_INDEPENDENCE_RATIO,
            )
        )
    body = [
        f"Poisson-subsampled Gaussian, q = {SINGLE_Q}, sigma = {SINGLE_SIGMA}, epsilon at delta = {DELTA:g}. Each "
        "timed call builds a fresh accountant, composes `steps` times and converts. dpledger: 5 timed runs, "
        "dp_accounting: 3, after one warm-up each. The epsilon column is each tool's upper value.",
        "",
        markdown_table(["steps", *TIMING_HEADERS], rows),
    ]
    if dpa is None:
        body += ["", missing_peer_note("dp_accounting")]
    return Section("Fourier speed (a): one subsampled Gaussian at 10,000 and 100,000 steps", "\n".join(body),
                   goals=tuple(goals), flags=tuple(flags))


# ------------------------------------------------------------------------------------------- speed (b)
def _fourier_ledger(sigmas, ps, holder=None):
    acc = FourierAccountant()
    start = time.perf_counter()
    for s in sigmas:
        acc.compose(GaussianMechanism(sigma=float(s)))
    for p in ps:
        acc.compose(RandomizedResponse(p=float(p)))
    mid = time.perf_counter()
    eps = acc.get_epsilon(DELTA)
    if holder is not None:
        holder.append((mid - start, time.perf_counter() - mid))
    return eps


def _pld_ledger(sigmas, ps, pld, common, pessimistic=True):
    """dp_accounting PLD of the same ledger, composed as its PLDAccountant does (default interval 1e-4).

    dp_accounting's ``RandomizedResponseDpEvent`` is refused under add-or-remove-one, so each randomized response
    enters as the PLD of its pair (Bernoulli(p), Bernoulli(1 - p)): ``from_privacy_parameters(eps, 0)`` with
    ``eps = log(p / (1 - p))`` is exactly that pair (pessimistic); ``from_randomized_response(2 (1 - p), 2)``
    is the same pair and also has an optimistic version.
    """
    out = pld.identity(pessimistic_estimate=pessimistic)
    for s in sigmas:
        out = out.compose(pld.from_gaussian_mechanism(float(s), pessimistic_estimate=pessimistic,
                                                      use_connect_dots=pessimistic))
    for p in ps:
        if pessimistic:
            rr = pld.from_privacy_parameters(common.DifferentialPrivacyParameters(math.log(p / (1 - p)), 0.0))
        else:
            rr = pld.from_randomized_response(2.0 * (1.0 - float(p)), 2, pessimistic_estimate=False)
        out = out.compose(rr)
    return float(out.get_epsilon_for_delta(DELTA))


def bench_mixed_ledger(peers):
    pld = _pld_module()
    common = optional_import("dp_accounting.pld.common")
    sigmas, ps = LEDGER_GAUSS_SIGMAS, LEDGER_RR_PS
    n = len(sigmas) + len(ps)
    holder = []
    ours, oerr = _time_peer(lambda: _fourier_ledger(sigmas, ps, holder), repeat=10)
    flags, goals, notes = [], [], []
    if ours is None:
        flags.append(f"(b) dpledger failed: {oerr}")
        return Section("Fourier speed (b): 200 Gaussians + 50 randomized responses", f"dpledger failed: {oerr}",
                       flags=tuple(flags))
    split = (min(c for c, _ in holder), min(q for _, q in holder))
    rows = [_timing_row("dpledger Fourier", ours, None, ours)]
    goals.append(
        Goal(
            "(b) dpledger ledger of 200 Gaussians + 50 RR: fresh accountant + compose + get_epsilon",
            f"< {LEDGER_GOAL_SECONDS * 1e3:.0f} ms",
            f"{format_seconds(ours.median)} median wall (CPU {format_seconds(ours.cpu_median)}; best "
            f"{format_seconds(ours.best)}; get_epsilon alone {format_seconds(split[1])} best)",
            ours.median < LEDGER_GOAL_SECONDS,
        )
    )
    rdp = RDPAccountant()
    for s in sigmas:
        rdp.compose(GaussianMechanism(sigma=float(s)))
    for p in ps:
        rdp.compose(RandomizedResponse(p=float(p)))
    rdp_eps = rdp.get_epsilon(DELTA)
    theirs_row = None
    opt = None
    if pld is not None and common is not None:
        k = max(len(sigmas) // PROBE_FRACTION, 1)
        kr = max(len(ps) // PROBE_FRACTION, 1)
        probe, probe_t, perr = _timed(_pld_ledger, sigmas[:k], ps[:kr], pld, common)
        predicted = probe_t * n / (k + kr)
        if perr:
            flags.append(f"(b) dp_accounting PLD failed on the probe ledger: {perr}")
        elif predicted <= PEER_CAP_SECONDS:
            # The probe served as the warm-up; one timed run of the full ledger.
            theirs, terr = _time_peer(lambda: _pld_ledger(sigmas, ps, pld, common), repeat=1, warmup=lambda: None)
            theirs_row = _timing_row("dp_accounting PLD (default 1e-4)", theirs, terr, ours)
            if theirs is not None:
                notes.append(
                    f"dpledger speed-up over dp_accounting PLD (no target set): {theirs.median / ours.median:.0f}x "
                    f"wall ({format_seconds(ours.median)} vs {format_seconds(theirs.median)}), "
                    f"{theirs.cpu_median / ours.cpu_median:.0f}x CPU."
                )
                if abs(_rel(ours.result, theirs.result)) > TIGHT_RTOL:
                    flags.append(f"(b) dpledger epsilon {ours.result:.10g} differs from dp_accounting's "
                                 f"{theirs.result:.10g} by more than {TIGHT_RTOL:.1%}.")
            opt, opt_t, operr = _timed(_pld_ledger, sigmas, ps, pld, common, False)
            if operr:
                flags.append(f"(b) dp_accounting optimistic PLD failed: {operr}")
            elif ours.result < opt:
                flags.append(f"(b) dpledger upper {ours.result:.10g} is BELOW dp_accounting's optimistic "
                             f"(lower-bound) PLD {opt:.10g}.")
        else:
            theirs_row = ["dp_accounting PLD (default 1e-4)", "not run in full", "-", "-", "-", "-",
                          f"~{predicted / ours.median:.0f}x (extrapolated)", "-"]
            notes.append(
                f"dp_accounting took {format_seconds(probe_t)} on a {k + kr}-mechanism sub-ledger (epsilon "
                f"{probe:.8g}); linear extrapolation to {n} mechanisms gives {format_seconds(predicted)}, above "
                f"the {PEER_CAP_SECONDS:.0f} s cap, so the full ledger was NOT run and its time is an "
                "EXTRAPOLATION."
            )
        notes.insert(
            0,
            f"dp_accounting probe: {k} Gaussians + {kr} RR ({k + kr} mechanisms, also its warm-up) took "
            f"{format_seconds(probe_t)} wall; linear extrapolation to {n}: {format_seconds(predicted)}.",
        )
    else:
        notes.append(missing_peer_note("dp_accounting"))
    if theirs_row is not None:
        rows.append(theirs_row)
    body = [
        f"Ledger of {len(sigmas)} distinct Gaussian mechanisms (sigma = linspace({sigmas[0]:g}, {sigmas[-1]:g}, "
        f"{len(sigmas)}), sensitivity 1) and {len(ps)} distinct binary randomized responses (p = linspace("
        f"{ps[0]:g}, {ps[-1]:g}, {len(ps)})), one run each, then get_epsilon({DELTA:g}). dpledger: fresh "
        "`FourierAccountant`, 250 `compose` calls and `get_epsilon`; one warm-up and 10 timed runs. "
        "dp_accounting: its `PLDAccountant` refuses `RandomizedResponseDpEvent` under add-or-remove-one, so the "
        "ledger is built with its `privacy_loss_distribution` API exactly as the accountant composes (identity, "
        "then `compose` of `from_gaussian_mechanism` per Gaussian, and of `from_privacy_parameters(eps = "
        "log(p/(1-p)), delta = 0)` per RR, which is the same Bernoulli(p) vs Bernoulli(1-p) pair); default "
        "interval 1e-4, pessimistic; one timed run.",
        "",
        markdown_table(TIMING_HEADERS, rows),
        "",
        f"dpledger split (best of the timed runs): compose all {n} = {format_seconds(split[0])}, get_epsilon = "
        f"{format_seconds(split[1])}. dpledger RDPAccountant epsilon on the same ledger: {rdp_eps:.8g}."
        + ("" if opt is None else f" dp_accounting optimistic PLD (lower bound, 1e-4, untimed): {opt:.10g}."),
    ]
    for note in notes:
        body += ["", note]
    return Section(f"Fourier speed (b): ledger of {len(sigmas)} Gaussians + {len(ps)} randomized responses",
                   "\n".join(body), goals=tuple(goals), flags=tuple(flags))


# ------------------------------------------------------------------------------------------- speed (c)
def _fourier_subsampled(sigmas, holder=None, steps=None):
    acc = FourierAccountant()
    start = time.perf_counter()
    for i, s in enumerate(sigmas):
        acc.compose(_subsampled(SUBSAMPLED_Q, s), count=SUBSAMPLED_STEPS if steps is None else steps[i])
    mid = time.perf_counter()
    bounds = tuple(acc.epsilon_bounds(DELTA))
    if holder is not None:
        holder.append((mid - start, time.perf_counter() - mid))
    return bounds


def _pld_subsampled(sigmas, dp_accounting, steps=None):
    acc = dp_accounting.pld.PLDAccountant()  # default interval 1e-4
    for i, s in enumerate(sigmas):
        acc.compose(dp_accounting.PoissonSampledDpEvent(SUBSAMPLED_Q, dp_accounting.GaussianDpEvent(float(s))),
                    SUBSAMPLED_STEPS if steps is None else steps[i])
    return float(acc.get_epsilon(DELTA))


def bench_subsampled_ledger(peers):
    dpa = peers["dp_accounting"]
    sigmas = SUBSAMPLED_SIGMAS
    small, small_steps = (list(x) for x in zip(*SUBSAMPLED_WARMUP))
    holder = []
    ours, oerr = _time_peer(lambda: _fourier_subsampled(sigmas, holder), repeat=1,
                            warmup=lambda: _fourier_subsampled(small, steps=small_steps))
    flags, goals = [], []
    if ours is None:
        return Section("Fourier speed (c): 200 subsampled Gaussians", f"dpledger failed: {oerr}",
                       flags=(f"(c) dpledger failed: {oerr}",))
    rows = [_timing_row("dpledger Fourier", ours, None, ours)]
    rdp = RDPAccountant()
    for s in sigmas:
        rdp.compose(_subsampled(SUBSAMPLED_Q, s), count=SUBSAMPLED_STEPS)
    rdp_eps = rdp.get_epsilon(DELTA)
    if ours.result[2] > rdp_eps:
        flags.append(f"(c) dpledger Fourier upper {ours.result[2]:.10g} EXCEEDS its RDP epsilon {rdp_eps:.10g}.")
    if dpa is not None:
        theirs, terr = _time_peer(lambda: _pld_subsampled(sigmas, dpa), repeat=1,
                                  warmup=lambda: _pld_subsampled(small, dpa, steps=small_steps))
        rows.append(_timing_row("dp_accounting PLDAccountant (default 1e-4)", theirs, terr, ours))
        if theirs is None:
            flags.append(f"(c) dp_accounting failed: {terr}")
        speedup = None if theirs is None else theirs.median / ours.median
        goals.append(
            Goal(
                "(c) dpledger speed-up over dp_accounting PLD, 200 subsampled Gaussians (wall)",
                f">= {SUBSAMPLED_GOAL_SPEEDUP:g}x",
                "not measured" if theirs is None else
                f"{speedup:.2f}x ({format_seconds(ours.median)} vs {format_seconds(theirs.median)}; CPU "
                f"{theirs.cpu_median / ours.cpu_median:.2f}x)",
                speedup is not None and speedup >= SUBSAMPLED_GOAL_SPEEDUP,
            )
        )
        if theirs is not None and abs(_rel(ours.result[2], theirs.result)) > TIGHT_RTOL:
            flags.append(f"(c) dpledger epsilon {ours.result[2]:.10g} differs from dp_accounting's "
                         f"{theirs.result:.10g} by more than {TIGHT_RTOL:.1%}.")
    else:
        goals.append(Goal("(c) dpledger speed-up over dp_accounting PLD", f">= {SUBSAMPLED_GOAL_SPEEDUP:g}x",
                          "not measured: dp_accounting is not installed", False))
    compose_t, query_t = holder[-1]
    body = [
        f"{len(sigmas)} distinct Poisson-subsampled Gaussians, sigma = linspace({sigmas[0]:g}, {sigmas[-1]:g}, "
        f"{len(sigmas)}), q = {SUBSAMPLED_Q}, {SUBSAMPLED_STEPS} steps each, then epsilon at {DELTA:g}. Each tool: "
        "one warm-up on a ledger of " + " and ".join(f"sigma {s:g} x {n:,} steps" for s, n in SUBSAMPLED_WARMUP)
        + ", then ONE timed run of the full ledger (each "
        "takes a minute or more here, and the whole benchmark must stay within minutes). dp_accounting: "
        "`PLDAccountant()` (default interval 1e-4).",
        "",
        markdown_table(TIMING_HEADERS, rows),
        "",
        f"dpledger: epsilon_bounds {_fmt_bounds(ours.result, 10)}; split of the timed run: compose all "
        f"{len(sigmas)} = {format_seconds(compose_t)}, epsilon_bounds = {format_seconds(query_t)}. dpledger "
        f"RDPAccountant epsilon on the same ledger: {rdp_eps:.8g}.",
    ]
    if dpa is None:
        body += ["", missing_peer_note("dp_accounting")]
    return Section(f"Fourier speed (c): ledger of {len(sigmas)} distinct subsampled Gaussians", "\n".join(body),
                   goals=tuple(goals), flags=tuple(flags))


# ---------------------------------------------------------------------------------------------------- run
def run():
    """Tightness (DP-SGD settings, exact Gaussian) and speed (a, b, c) of the FourierAccountant.

    Returns
    -------
    list of Section
    """
    peers = _peers()
    return [
        bench_dpsgd(peers),
        bench_gaussian(),
        bench_single(peers),
        bench_mixed_ledger(peers),
        bench_subsampled_ledger(peers),
    ]


SECTIONS = {
    "dpsgd": bench_dpsgd,
    "gaussian": lambda peers: bench_gaussian(),
    "single": bench_single,
    "mixed": bench_mixed_ledger,
    "subsampled": bench_subsampled_ledger,
}

if __name__ == "__main__":
    # python -m benchmarks.bench_fourier [dpsgd gaussian single mixed subsampled]  (default: all)
    names = sys.argv[1:] or list(SECTIONS)
    unknown = [n for n in names if n not in SECTIONS]
    if unknown:
        raise SystemExit(f"unknown sections {unknown}; choose from {list(SECTIONS)}")
    _peers_found = _peers()
    print(render_sections([SECTIONS[n](_peers_found) for n in names]))
