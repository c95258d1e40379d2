"""Tightness of dpledger's RDP accountant on DP-SGD settings, against peers and exact values.

For each setting (Poisson sampling probability ``q``, noise multiplier ``sigma``, number of steps, ``delta``) it
reports epsilon from

* dpledger ``RDPAccountant`` (an upper bound);
* dp_accounting ``RdpAccountant`` and Opacus ``RDPAccountant`` (RDP upper bounds, integer and a few fractional
  orders, classic or improved conversion);
* the exact value where one is known: without subsampling, ``k`` Gaussian steps are one Gaussian mechanism with
  ``mu = sqrt(k) / sigma``, whose exact epsilon(delta) follows from the analytic Gaussian mechanism of Balle &
  Wang 2018 (Thm 8), ``delta = Phi(mu/2 - eps/mu) - e^eps Phi(-mu/2 - eps/mu)``;
* prv_accountant (Gopi, Lee & Wutschitz 2021), an *estimate* of the tight (optimal) epsilon with an error band,
  shown as an informative reference: any RDP bound is expected to lie above it.

A case where dpledger's epsilon exceeds a peer's, or lies below an exact value or below prv's lower end, is
flagged. Run alone with ``python -m benchmarks.bench_rdp_tightness``.
"""

import dataclasses
import importlib.util
import math
import pathlib
import time

from scipy import optimize, special

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
)
from dpledger.accountants import RDPAccountant
from dpledger.mechanisms import GaussianMechanism, PoissonSubsampled

__all__ = ["SETTINGS", "Setting", "run"]

ORACLES = pathlib.Path(__file__).resolve().parents[1] / "tests" / "oracles"
ORACLE_PATH = ORACLES / "analytic_gaussian.py"
SUBSAMPLED_ORACLE_PATH = ORACLES / "mpmath_subsampled.py"
#: A dpledger / prv-estimate ratio above this gets a note explaining the gap.
LARGE_GAP = 1.5

#: prv_accountant's accuracy: epsilon within +-PRV_EPS_ERROR, delta within delta * PRV_DELTA_ERROR_FRACTION.
PRV_EPS_ERROR = 0.01
PRV_DELTA_ERROR_FRACTION = 1e-3


@dataclasses.dataclass(frozen=True)
class Setting:
    """A DP-SGD run: ``steps`` Poisson-subsampled Gaussian steps (``q = 1`` means no subsampling)."""

    label: str
    q: float
    sigma: float
    steps: int
    delta: float = 1e-5

    @property
    def subsampled(self):
        """Whether the setting uses Poisson subsampling."""
        return self.q < 1.0


SETTINGS = (
    Setting("q=0.01, sigma=1.1, 10k steps", 0.01, 1.1, 10_000),
    Setting("MNIST: q=256/60000, sigma=1.1, 14062 steps", 256 / 60_000, 1.1, 14_062),
    Setting("q=0.001, sigma=0.8, 100k steps", 0.001, 0.8, 100_000),
    Setting("q=0.04, sigma=1.5, 2250 steps", 0.04, 1.5, 2_250),
    Setting("q=0.1, sigma=2, 1000 steps", 0.1, 2.0, 1_000),
    Setting("q=0.01, sigma=0.7, 1000 steps", 0.01, 0.7, 1_000),
    Setting("q=0.5, sigma=1, 50 steps", 0.5, 1.0, 50),
    Setting("q=1e-4, sigma=0.6, 100k steps, delta=1e-6", 1e-4, 0.6, 100_000, 1e-6),
    Setting("no subsampling: sigma=30, 240 steps, delta=1e-10", 1.0, 30.0, 240, 1e-10),
    Setting("no subsampling: sigma=5, 100 steps", 1.0, 5.0, 100),
)


# -------------------------------------------------------------------------------------------- accountants
def dpledger_epsilon(setting):
    """dpledger's epsilon (upper bound) and the report behind it."""
    mech = GaussianMechanism(sigma=setting.sigma)
    if setting.subsampled:
        mech = PoissonSubsampled(mech, sampling_probability=setting.q)
    return RDPAccountant().compose(mech, count=setting.steps).epsilon_report(setting.delta)


def dp_accounting_epsilon(setting, dp_accounting):
    """dp_accounting ``RdpAccountant`` epsilon (default orders)."""
    event = dp_accounting.GaussianDpEvent(setting.sigma)
    if setting.subsampled:
        event = dp_accounting.PoissonSampledDpEvent(setting.q, event)
    acc = dp_accounting.rdp.RdpAccountant()
    acc.compose(event, setting.steps)
    return float(acc.get_epsilon(setting.delta))


def opacus_epsilon(setting, opacus_accountants):
    """Opacus ``RDPAccountant`` epsilon (default orders)."""
    acc = opacus_accountants.RDPAccountant()
    acc.history = [(setting.sigma, setting.q, setting.steps)]
    return float(acc.get_epsilon(delta=setting.delta))


def prv_epsilon(setting, prv_accountant):
    """prv_accountant's ``(lower, estimate, upper)`` epsilon (an estimate of the optimal epsilon)."""
    if setting.subsampled:
        prv = prv_accountant.PoissonSubsampledGaussianMechanism(
            noise_multiplier=setting.sigma, sampling_probability=setting.q
        )
    else:
        prv = prv_accountant.GaussianMechanism(noise_multiplier=setting.sigma)
    acc = prv_accountant.PRVAccountant(
        prvs=prv,
        max_self_compositions=setting.steps,
        eps_error=PRV_EPS_ERROR,
        delta_error=setting.delta * PRV_DELTA_ERROR_FRACTION,
    )
    return tuple(float(x) for x in acc.compute_epsilon(delta=setting.delta, num_self_compositions=[setting.steps]))


# ---------------------------------------------------------------------------------- exact Gaussian epsilon
def analytic_gaussian_delta(epsilon, mu):
    """Exact delta(epsilon) of the Gaussian mechanism with ``mu = sensitivity / sigma`` (Balle & Wang 2018)."""
    a = mu / 2.0 - epsilon / mu
    b = -mu / 2.0 - epsilon / mu
    return float(special.ndtr(a) - math.exp(epsilon + special.log_ndtr(b)))


def analytic_gaussian_epsilon(delta, mu):
    """Exact epsilon(delta) of the Gaussian mechanism by bracketing and Brent's method (scipy, float64).

    Returns the upper end of the final bracket (the conservative side), accurate to about 1e-12 relative.
    """
    if analytic_gaussian_delta(0.0, mu) <= delta:
        return 0.0
    lo, hi = 0.0, 1.0
    while analytic_gaussian_delta(hi, mu) > delta:
        lo, hi = hi, 2.0 * hi
    return float(optimize.brentq(lambda e: analytic_gaussian_delta(e, mu) - delta, lo, hi, xtol=1e-14, rtol=1e-13))


def _load_module(path, name, attributes):
    """Load a test oracle from ``path`` (tests are not a package to import), or None if it is not usable."""
    if not path.is_file():
        return None
    try:
        spec = importlib.util.spec_from_file_location(name, path)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        for attribute in attributes:
            getattr(module, attribute)
        return module
    except Exception:  # noqa: BLE001 - the oracles are being written by others; fall back or skip
        return None


def _load_oracle():
    """The project's mpmath oracle ``tests/oracles/analytic_gaussian.py``, or None if it is not usable."""
    return _load_module(ORACLE_PATH, "_bench_analytic_gaussian_oracle", ("gaussian_epsilon_float", "composed_mu"))


def _load_subsampled_oracle():
    """The project's mpmath integral oracle of the subsampled Gaussian's RDP, or None if it is not usable."""
    return _load_module(
        SUBSAMPLED_ORACLE_PATH,
        "_bench_mpmath_subsampled_oracle",
        ("subsampled_gaussian_rdp_integral", "subsampled_gaussian_rdp_integral_reverse"),
    )


def rdp_excess_at_order(setting, order, oracle):
    """Relative excess of dpledger's per-step RDP over the exact one at the order its epsilon used.

    The exact value is the larger of the two directions of the Renyi divergence of the subsampled Gaussian pair,
    integrated with mpmath (``tests/oracles/mpmath_subsampled.py``). A negative excess means dpledger's RDP at
    that order is below the exact value, i.e. not an upper bound.

    Returns
    -------
    float or None
        ``dpledger / exact - 1``; None for un-subsampled settings, order inf, or a missing oracle.
    """
    if oracle is None or not setting.subsampled or order is None or not math.isfinite(order):
        return None
    mech = PoissonSubsampled(GaussianMechanism(sigma=setting.sigma), sampling_probability=setting.q)
    ours = float(mech.rdp(order))
    exact = max(
        float(oracle.subsampled_gaussian_rdp_integral(order, setting.q, setting.sigma, dps=30)),
        float(oracle.subsampled_gaussian_rdp_integral_reverse(order, setting.q, setting.sigma, dps=30)),
    )
    return ours / exact - 1.0


def exact_epsilon(setting, oracle):
    """Exact epsilon of an un-subsampled Gaussian composition, and which implementation gave it.

    Returns
    -------
    (float, float or None, str) or None
        ``(value, scipy value, source)``; None for subsampled settings (no exact value known here). The value is
        the mpmath oracle's when it is usable, otherwise the local scipy one.
    """
    if setting.subsampled:
        return None
    mu = math.sqrt(setting.steps) / setting.sigma
    local = analytic_gaussian_epsilon(setting.delta, mu)
    if oracle is not None:
        try:
            mu_exact = oracle.composed_mu(setting.sigma, setting.steps)
            value = float(oracle.gaussian_epsilon_float(setting.delta, mu_exact))
            return value, local, "mpmath oracle"
        except Exception:  # noqa: BLE001
            pass
    return local, local, "scipy"


# ------------------------------------------------------------------------------------------------ the table
def _call_peer(fn, *args):
    """``(value, error message)`` of a peer call, silenced; a failing peer gives ``(None, message)``."""
    try:
        with quiet():
            return fn(*args), None
    except Exception as exc:  # noqa: BLE001 - a peer failing is a result, not a crash
        return None, f"{type(exc).__name__}: {exc}"


def _ratio(a, b):
    if a is None or b is None or b == 0:
        return "-"
    return f"{a / b:.5f}"


def _measure(setting, peers, oracle, subsampled_oracle):
    """All epsilons of one setting, as a dict."""
    start = time.perf_counter()
    report = dpledger_epsilon(setting)
    row = {"setting": setting, "dpledger": report.epsilon, "order": report.order, "method": report.method}
    row["dpledger_time"] = time.perf_counter() - start
    row["errors"] = []
    for key, fn, module in (
        ("dp_accounting", dp_accounting_epsilon, peers["dp_accounting"]),
        ("opacus", opacus_epsilon, peers["opacus"]),
    ):
        row[key] = None
        if module is not None:
            row[key], err = _call_peer(fn, setting, module)
            if err:
                row["errors"].append(f"{key} failed on {setting.label}: {err}")
    row["rdp_excess"], err = _call_peer(rdp_excess_at_order, setting, report.order, subsampled_oracle)
    if err:
        row["errors"].append(f"the mpmath subsampled-RDP oracle failed on {setting.label}: {err}")
    exact = exact_epsilon(setting, oracle)
    row["exact"], row["exact_scipy"], row["exact_source"] = exact if exact else (None, None, None)
    row["prv"], row["prv_time"] = None, 0.0
    if peers["prv_accountant"] is not None:
        start = time.perf_counter()
        row["prv"], err = _call_peer(prv_epsilon, setting, peers["prv_accountant"])
        row["prv_time"] = time.perf_counter() - start
        if err:
            row["errors"].append(f"prv_accountant failed on {setting.label}: {err}")
    return row


def _flags(row):
    """Loud problems of one row: dpledger looser than an RDP peer, or below an exact value or prv's lower end."""
    flags = list(row["errors"])
    ours, label = row["dpledger"], row["setting"].label
    for peer in ("dp_accounting", "opacus"):
        theirs = row[peer]
        if theirs is not None and ours > theirs:
            flags.append(
                f"dpledger epsilon {ours:.9g} EXCEEDS {peer} {theirs:.9g} on {label} "
                f"(ratio {ours / theirs:.6f}, +{ours - theirs:.3g})."
            )
    if row["exact"] is not None and ours < row["exact"]:
        flags.append(
            f"dpledger epsilon {ours:.9g} is BELOW the exact value {row['exact']:.9g} on {label}: "
            "not an upper bound (privacy bug)."
        )
    if row["rdp_excess"] is not None and row["rdp_excess"] < 0:
        flags.append(
            f"dpledger's per-step RDP at order {row['order']:.6g} is BELOW the mpmath integral on {label} "
            f"(relative {row['rdp_excess']:.3g}): not an upper bound (privacy bug)."
        )
    if row["prv"] is not None and ours < row["prv"][0]:
        flags.append(
            f"dpledger epsilon {ours:.9g} is BELOW prv_accountant's lower end {row['prv'][0]:.9g} on {label}: "
            "suspicious for an upper bound, check it."
        )
    if row["exact"] is not None and row["exact_scipy"] is not None:
        rel = abs(row["exact"] - row["exact_scipy"]) / max(row["exact"], 1e-300)
        if rel > 1e-8:
            flags.append(
                f"the mpmath oracle ({row['exact']:.12g}) and the scipy analytic Gaussian "
                f"({row['exact_scipy']:.12g}) disagree on {label} (relative {rel:.2g})."
            )
    return flags


def _table(rows):
    headers = [
        "setting",
        "delta",
        "dpledger eps",
        "dp_accounting eps",
        "Opacus eps",
        "exact eps",
        "prv estimate [low, up]",
        "dpledger / dp_accounting",
        "dpledger / Opacus",
        "dpledger / exact",
        "dpledger / prv estimate",
        "order used",
        "per-step RDP at that order / exact - 1",
    ]
    body = []
    for r in rows:
        prv = r["prv"]
        prv_cell = "-" if prv is None else f"{prv[1]:.4f} [{prv[0]:.4f}, {prv[2]:.4f}]"
        body.append(
            [
                r["setting"].label,
                f"{r['setting'].delta:g}",
                format_float(r["dpledger"], 7),
                format_float(r["dp_accounting"], 7),
                format_float(r["opacus"], 7),
                format_float(r["exact"], 7),
                prv_cell,
                _ratio(r["dpledger"], r["dp_accounting"]),
                _ratio(r["dpledger"], r["opacus"]),
                _ratio(r["dpledger"], r["exact"]),
                _ratio(r["dpledger"], None if prv is None else prv[1]),
                format_float(r["order"], 5),
                "-" if r["rdp_excess"] is None else f"{r['rdp_excess']:.2e}",
            ]
        )
    return markdown_table(headers, body)


def _load_peers():
    return {
        "dp_accounting": optional_import("dp_accounting"),
        "opacus": optional_import("opacus.accountants"),
        "prv_accountant": optional_import("prv_accountant"),
    }


def run():
    """Measure every setting and return the tightness section.

    Returns
    -------
    list of Section
        One section: the table of epsilons and ratios, notes, and a flag per problem found.
    """
    peers = _load_peers()
    oracle = _load_oracle()
    subsampled_oracle = _load_subsampled_oracle()
    rows = [_measure(s, peers, oracle, subsampled_oracle) for s in SETTINGS]
    flags = [f for r in rows for f in _flags(r)]
    sources = sorted({r["exact_source"] for r in rows if r["exact_source"]})
    notes = [
        "Epsilon at the given delta (add-or-remove-one). Ratios below 1 mean dpledger reports a smaller "
        "(tighter) upper bound. dp_accounting and Opacus are RDP upper bounds with their default order grids; "
        "`exact` is the analytic Gaussian mechanism (Balle & Wang 2018) for un-subsampled compositions "
        f"(computed with: {', '.join(sources) or 'none'}; the scipy root finder agrees with it to 1e-8 "
        "relative unless flagged below). "
        f"`prv estimate` is prv_accountant's estimate of the optimal epsilon (eps_error {PRV_EPS_ERROR}, "
        f"delta_error {PRV_DELTA_ERROR_FRACTION:g} * delta) with its error band: an ESTIMATE used as an "
        "informative tight reference, not a certified value. Any RDP bound is expected above it; the gap is "
        "the price of RDP accounting, not a bug. The last column checks soundness at the optimum: dpledger's "
        "per-step RDP at the order its epsilon used, against the mpmath integral of the exact Renyi divergence "
        "(larger direction) from `tests/oracles/mpmath_subsampled.py`; it must be >= 0 (tiny positive values "
        "are dpledger's deliberate rounding up).",
        "",
        f"dpledger time for all settings: {format_seconds(sum(r['dpledger_time'] for r in rows))} "
        f"(single runs, cold); prv_accountant time: {format_seconds(sum(r['prv_time'] for r in rows))}.",
    ]
    for name, module in peers.items():
        if module is None:
            notes += ["", missing_peer_note(name)]
    if oracle is None:
        notes += ["", f"_The mpmath oracle {ORACLE_PATH.name} was not usable; exact values come from scipy._"]
    if subsampled_oracle is None:
        notes += ["", f"_The mpmath oracle {SUBSAMPLED_ORACLE_PATH.name} was not usable; the RDP check is skipped._"]
    notes += _gap_notes(rows)
    worst = max(
        (r["dpledger"] / r[p] for r in rows for p in ("dp_accounting", "opacus") if r[p]),
        default=None,
    )
    if worst is not None:
        notes += ["", f"Largest dpledger / RDP-peer ratio: {worst:.6f} (at most 1 means never looser)."]
    if not flags:
        notes += ["", "No flags: among the comparisons available, dpledger is never above an RDP peer, never below "
                      "an exact value or prv_accountant's lower end, and its RDP at the order used is never below "
                      "the mpmath integral."]
    return [
        Section(
            title="RDP tightness: epsilon of DP-SGD settings",
            body=_table(rows) + "\n\n" + "\n".join(notes),
            goals=_goals(rows),
            flags=tuple(flags),
        )
    ]


def _gap_notes(rows):
    """Explain rows where dpledger is far above prv's estimate; the RDP peers tell whose looseness it is."""
    notes = []
    for r in rows:
        if r["prv"] is None or r["prv"][1] <= 0 or r["dpledger"] / r["prv"][1] <= LARGE_GAP:
            continue
        setting = r["setting"]
        peers = [r[p] for p in ("dp_accounting", "opacus") if r[p] is not None]
        shared = bool(peers) and all(r["dpledger"] / p > 1 / LARGE_GAP for p in peers)
        if shared:
            why = (
                ", and the RDP peers are as far off: this is the known looseness of RDP accounting when each "
                f"record is sampled only a few times (q x steps = {setting.q * setting.steps:g}) with little "
                "noise, not a dpledger defect. A PLD/PRV accountant is the tool for this regime."
            )
        else:
            why = "; the RDP peers are much closer or missing: CHECK dpledger."
        ratio = r["dpledger"] / r["prv"][1]
        notes += ["", f"Large gap on {setting.label}: dpledger is {ratio:.2f}x prv's estimate{why}"]
    return notes


def _goals(rows):
    """Never looser than an RDP peer; never below an exact value (soundness)."""
    goals = []
    for peer, name in (("dp_accounting", "dp_accounting"), ("opacus", "Opacus")):
        pairs = [(r["dpledger"], r[peer]) for r in rows if r[peer] is not None]
        if pairs:
            worse = sum(ours > theirs for ours, theirs in pairs)
            goals.append(
                Goal(
                    f"dpledger eps <= {name} eps",
                    "every setting",
                    f"{len(pairs) - worse} of {len(pairs)} settings",
                    worse == 0,
                )
            )
    exact = [(r["dpledger"], r["exact"]) for r in rows if r["exact"] is not None]
    below = sum(ours < value for ours, value in exact)
    goals.append(
        Goal("dpledger eps >= exact eps (soundness)", "every setting with an exact value",
             f"{len(exact) - below} of {len(exact)} settings", below == 0)
    )
    checked = [r["rdp_excess"] for r in rows if r["rdp_excess"] is not None]
    if checked:
        under = sum(x < 0 for x in checked)
        goals.append(
            Goal("dpledger RDP at the order used >= mpmath integral (soundness)", "every subsampled setting",
                 f"{len(checked) - under} of {len(checked)} settings", under == 0)
        )
    return tuple(goals)


if __name__ == "__main__":
    print(render_sections(run()))
