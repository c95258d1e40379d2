"""The privacy figures of the Private-kNN paper (Zhu, Yu, Chandraker, Wang, CVPR 2020), recomputed (issue 4).

For every epsilon the paper reports (Figure 5, Tables 1-3) this script computes

* the paper's own method with the conventions that reproduce it (found by trying the candidates below and by
  reading the authors' published scripts, github.com/jeremy43/Private_kNN ``privacy_analysis/analysis.py``,
  ``digit_pytorch/knn.py``, ``face_attribute/knn_attribute.py``, which use autodp's ``anaRDPacct``): the
  classic RDP conversion ``eps + log(1/delta)/(alpha - 1)`` minimised over real orders (integer orders for
  subsampled mechanisms, where autodp's chord makes the optimum an integer), and for subsampled screening
  the tight subsampling formula (thesis Thm 2.3.4) applied to the screening curve. Where that formula is not
  proven (screening), the number is labelled "paper's method (unproven)";
* dpledger's proven epsilon for the same setting: ``RDPAccountant`` with the classic and the improved
  conversion, screening as :func:`mechanisms.noisy_screening.subsampled_screening` (the minimum of thesis
  Thm 2.3.1 and the subsampled Gaussian it post-processes), aggregation as ``PoissonSubsampled(NoisyArgmax)``
  on a fresh subsample (as the paper says; DESIGN.md rule 6), multi-label votes as ``TauClippedVotes``;
* where useful, the characteristic-function accountant on the dominating subsampled Gaussian (an estimate:
  its subsampled characteristic function is computed by quadrature with an estimated, not proven, error).

Writes ``benchmarks/results/private_knn_figures.md``. Run with ``python -m benchmarks.bench_private_knn_figures``
from the repository root (about a minute; the autodp cross-check adds about 30 s when autodp is installed).
"""

import math
import pathlib
import sys
import time

import numpy as np
from scipy import optimize

from benchmarks._common import load_average, markdown_table, optional_import
from dpledger.accountants import FourierAccountant, RDPAccountant
from dpledger.mechanisms import GaussianMechanism, PoissonSubsampled, subsampled_rdp
from dpledger.mechanisms.noisy_aggregation import NoisyArgmax, TauClippedVotes
from dpledger.mechanisms.noisy_screening import NoisyScreening, subsampled_screening

ROOT = pathlib.Path(__file__).resolve().parents[1]

OUT = ROOT / "benchmarks" / "results" / "private_knn_figures.md"
INTEGER_ORDERS = np.arange(2.0, 1025.0)


# ------------------------------------------------------------------------------------ the paper's conventions
def classic_integer(total_rdp, delta):
    """``min over integer alpha in [2, 1024] of total_rdp(alpha) + log(1/delta)/(alpha - 1)`` (classic)."""
    values = np.asarray(total_rdp(INTEGER_ORDERS)) + math.log(1.0 / delta) / (INTEGER_ORDERS - 1.0)
    return float(values.min())


def classic_real(total_rdp, delta):
    """The same over real orders in (1, 4096]: a grid, then a bounded scalar search around its minimum."""
    grid = np.exp(np.linspace(np.log(1e-3), np.log(4095.0), 4000)) + 1.0
    values = np.asarray(total_rdp(grid)) + math.log(1.0 / delta) / (grid - 1.0)
    i = int(np.argmin(values))
    lo, hi = grid[max(i - 1, 0)], grid[min(i + 1, grid.size - 1)]
    res = optimize.minimize_scalar(
        lambda a: float(total_rdp(np.array([a]))[0]) + math.log(1.0 / delta) / (a - 1.0),
        bounds=(lo, hi), method="bounded", options={"xatol": 1e-10},
    )
    return float(min(res.fun, values[i]))


def paper_subsampled_screening_rdp(screening, q):
    """Thesis Thm 2.3.4's formula on the screening curve at integer orders: the paper's method, NOT proven for
    screening (the Pearson-Vajda condition fails for some screening pairs)."""
    return lambda orders: np.minimum(subsampled_rdp.tight_bound(orders, q, screening.rdp), screening.rdp(orders))


def subsampled_gaussian_rdp(sigma, sensitivity, q):
    return PoissonSubsampled(GaussianMechanism(sigma=sigma, sensitivity=sensitivity), sampling_probability=q).rdp


def proven(ledger, delta):
    """dpledger's proven epsilons (classic, improved) for a list of (mechanism, count)."""
    out = []
    for conversion in ("classic", "improved"):
        acc = RDPAccountant(conversion=conversion)
        for mechanism, count in ledger:
            acc.compose(mechanism, count=count)
        out.append(acc.get_epsilon(delta))
    return tuple(out)


def fourier_estimate(ledger, delta):
    fa = FourierAccountant()
    for mechanism, count in ledger:
        fa.compose(mechanism, count=count)
    return fa.get_epsilon(delta)


def truncated(value, digits):
    return math.floor(value * 10**digits) / 10**digits


def f(x, digits=4):
    return "-" if x is None else f"{x:.{digits}f}"


# ------------------------------------------------------------------------------------------------ Figure 5
def figure5():
    delta, q, n, sigma = 1e-5, 0.25, 8192, 85.0
    screening = NoisyScreening(k=300, threshold=210, sigma=sigma, num_classes=10)
    sub = subsampled_screening(screening, q)
    rows, values = [], {}

    gauss = classic_real(lambda a: n * GaussianMechanism(sigma=sigma).rdp(a), delta)
    values["gaussian"] = gauss
    p_gauss = proven([(GaussianMechanism(sigma=sigma), n)], delta)
    rows.append(["Gaussian mechanism (PATE), no subsampling", "5.67", f(gauss), "yes (truncated)",
                 f(p_gauss[0]), f(p_gauss[1]), "-"])

    sg = classic_integer(lambda a: n * subsampled_gaussian_rdp(sigma, 1.0, q)(a), delta)
    values["subsampled_gaussian"] = sg
    p_sg = proven([(sub.dominating_gaussian, n)], delta)
    four_sg = fourier_estimate([(sub.dominating_gaussian, n)], delta)
    rows.append(["Poisson-subsampled Gaussian", "1.313", f(sg), "yes", f(p_sg[0]), f(p_sg[1]), f(four_sg)])

    di = classic_real(lambda a: n * screening.rdp(a), delta)
    values["screening"] = di
    p_di = proven([(screening, n)], delta)
    rows.append(["data-independent screening (Thm 9), no subsampling", "4.43", f(di), "yes (truncated)",
                 f(p_di[0]), f(p_di[1]), "-"])

    rows.append(["data-dependent screening, no subsampling", "3.83", "not recomputable", "-",
                 "not a guarantee", "not a guarantee", "-"])

    ss = classic_integer(lambda a: n * paper_subsampled_screening_rdp(screening, q)(a), delta)
    values["subsampled_screening_paper"] = ss
    p_ss = proven([(sub, n)], delta)
    values["subsampled_screening_proven"] = p_ss
    values["subsampled_screening_fourier"] = four_sg
    rows.append(["Poisson-subsampled data-independent screening", "1.04",
                 f"{f(ss)} (paper's method, unproven)", "yes (truncated); proven here", f(p_ss[0]), f(p_ss[1]),
                 f"{f(four_sg)} (dominating Gaussian)"])

    general = classic_integer(lambda a: n * subsampled_rdp.general_bound(a, q, screening.rdp), delta)
    values["general_only"] = general
    p_general = proven([(PoissonSubsampled(screening, sampling_probability=q), n)], delta)
    rows.append(["(subsampled screening by thesis Thm 2.3.1 alone; proven columns capped by no subsampling)",
                 "-", f(general), "-", f(p_general[0]), f(p_general[1]), "-"])
    return rows, values


# ------------------------------------------------------------------------------------------------ Table 1, 2
TABLE1 = [
    # name, k, T, sigma1, sigma2, q, screened, answered, delta, paper
    ("CIFAR-10 (Table 1)", 300, 210, 85.0, 20.0, 0.2, 18000, 3877, 1e-5, 2.92),
    ("MNIST (Table 1)", 300, 180, 75.0, 25.0, 0.15, 1000, 735, 1e-5, 0.47),
    ("SVHN (Table 1; Table 2 total)", 800, 480, 200.0, 60.0, 0.03, 6000, 2939, 1e-6, 0.49),
    ("SVHN, Table 2 iteration 1", 800, 480, 200.0, 60.0, 0.03, 3000, 1022, 1e-6, 0.49),
]


def table1():
    rows, values = [], {}
    for name, k, t, s1, s2, q, m, msel, delta, paper in TABLE1:
        screening = NoisyScreening(k=k, threshold=t, sigma=s1, num_classes=10)
        agg_paper = subsampled_gaussian_rdp(s2, math.sqrt(2.0), q)  # autodp RDP_inde_pate_gaussian: alpha/sigma^2
        paper_method = classic_integer(
            lambda a: m * paper_subsampled_screening_rdp(screening, q)(a) + msel * agg_paper(a), delta)
        code_method = classic_integer(
            lambda a: m * subsampled_gaussian_rdp(s1, 1.0, q)(a) + msel * agg_paper(a), delta)
        agg_floor = classic_integer(lambda a: msel * subsampled_gaussian_rdp(s2, 1.0, q)(a), delta)
        ledger = [(subsampled_screening(screening, q), m),
                  (PoissonSubsampled(NoisyArgmax(sigma=s2), sampling_probability=q), msel)]
        ours = proven(ledger, delta)
        values[name] = dict(paper=paper_method, code=code_method, floor=agg_floor, proven=ours)
        rows.append([name, f"{paper:.2f}", f"{f(paper_method)} (unproven)", f(code_method), f(agg_floor),
                     "no", f(ours[0]), f(ours[1])])
    return rows, values


# ------------------------------------------------------------------------------------------------ Table 3
TABLE3 = [
    # name, k, sigma, q, queries, delta, paper
    ("CelebA", 800, 50.0, 0.05, 800, 1e-6, 1.24),
    ("CelebA", 800, 100.0, 0.10, 800, 1e-6, 1.20),
    ("Market1501", 300, 100.0, 0.05, 1200, 1e-5, 0.67),
    ("Market1501", 300, 100.0, 0.10, 1200, 1e-5, 1.38),
]
TAU = 10.0


def implied_sensitivity(sigma, q, n, delta, target):
    """The L2 sensitivity at which the subsampled Gaussian (classic, integer orders) gives ``target``."""
    g = lambda s: classic_integer(lambda a: n * subsampled_gaussian_rdp(sigma, s, q)(a), delta) - target  # noqa
    return optimize.brentq(g, 0.5, 50.0, xtol=1e-6)


def table3():
    rows, values = [], {}
    for name, _k, sigma, q, n, delta, paper in TABLE3:
        # the authors' code: RDP_inde_pate_gaussian(sigma = int(sigma / tau)) = alpha / int(sigma/tau)^2
        code_sens = math.sqrt(2.0) * sigma / int(sigma / TAU)
        code = classic_integer(lambda a: n * subsampled_gaussian_rdp(sigma, code_sens, q)(a), delta)
        implied = implied_sensitivity(sigma, q, n, delta, paper)
        at8 = classic_integer(lambda a: n * subsampled_gaussian_rdp(sigma, 8.0, q)(a), delta)
        ours = proven([(PoissonSubsampled(TauClippedVotes(sigma=sigma, tau=TAU), sampling_probability=q), n)], delta)
        key = f"{name} sigma={sigma:g} q={q:g}"
        values[key] = dict(code=code, implied=implied, at8=at8, proven=ours)
        rows.append([key, f"{paper:.2f}", f(code), f"{implied:.2f}", f(at8), f(ours[0]), f(ours[1])])
    return rows, values


# ------------------------------------------------------------------------------------------------ autodp check
def autodp_check():
    """autodp's anaRDPacct (the authors' accountant) on Figure 5, with dpledger's exact screening curve."""
    rdp_acct = optional_import("autodp.rdp_acct")
    if rdp_acct is None:
        return None
    screening = NoisyScreening(k=300, threshold=210, sigma=85.0, num_classes=10)

    def curve(x):
        return float(screening.rdp(max(float(x), 1.0 + 1e-9)))

    def gaussian(x):
        return 0.5 / 85.0**2 * x

    out = {}
    for name, func, how in [("Gaussian", gaussian, "plain"), ("subsampled Gaussian", gaussian, "sub"),
                            ("screening", curve, "plain"), ("subsampled screening", curve, "sub")]:
        acct = rdp_acct.anaRDPacct()
        if how == "plain":
            acct.compose_mechanism(func, coeff=8192)
        else:
            acct.compose_poisson_subsampled_mechanisms(func, 0.25, coeff=8192)
        out[name] = acct.get_eps(1e-5)
    return out


def main():
    start = time.time()
    load = load_average()
    f5_rows, f5 = figure5()
    t1_rows, t1 = table1()
    t3_rows, t3 = table3()
    check = autodp_check()
    lines = [
        "# Private-kNN privacy figures, recomputed",
        "",
        "Generated by `python -m benchmarks.bench_private_knn_figures` (issue 4). "
        f"Load average at start: {load}; run time {time.time() - start:.0f} s. Every epsilon is at the delta the "
        "paper states (CIFAR-10 and Market1501 1e-5, CelebA 1e-6; MNIST 1e-5 as in the authors' "
        "`mnist_config.py`; SVHN 1e-6 as in PATE's SVHN setting, the paper does not say).",
        "",
        "## Conventions that reproduce the paper",
        "",
        "* delta = 1e-5 (Figure 5; `privacy_analysis/analysis.py` of the authors' repository).",
        "* Classic conversion `epsilon = min_alpha eps(alpha) + log(1/delta)/(alpha - 1)` (the paper's Lemma 3; "
        "autodp `anaRDPacct.get_eps`), over real orders; for subsampled mechanisms over integer orders (autodp "
        "interpolates the cumulant linearly between integers, so its optimum is at an integer).",
        "* Subsampling: the tight formula (thesis Thm 2.3.4; autodp `compose_poisson_subsampled_mechanisms`) for "
        "both the Gaussian and the screening curve. For screening this formula is NOT proven: the Pearson-Vajda "
        "condition fails for Bernoulli pairs that do not straddle 1/2 (l = 3, p = 0.2, q = 0.3), so every "
        "number that relies on it is labelled \"paper's method (unproven)\". (We searched small screening "
        "settings with mpmath and found no pair whose subsampled divergence exceeds the formula, so the bound is "
        "unproven, not shown false; for the Figure 5 setting dpledger's own proof gives a slightly smaller "
        "value, see below.)",
        "* The paper's two-decimal figures are truncations of these values (5.676 -> 5.67, 4.437 -> 4.43, "
        "1.042 -> 1.04), the three-decimal 1.313 a rounding of 1.3132.",
        "* Proven columns: dpledger `RDPAccountant` (optimised over real orders), screening as "
        "`subsampled_screening` (pointwise minimum of the joint-quasi-convexity bound over the neighbouring "
        "Bernoulli pairs and the tight subsampled Gaussian with sensitivity 1, which screening post-processes; "
        "thesis Thm 2.3.1 is never below the former), aggregation as "
        "`PoissonSubsampled(NoisyArgmax(sigma2))` (sensitivity sqrt 2) on a fresh subsample.",
        "",
        "## Figure 5 (8192 queries, gamma = 0.25, sigma1 = 85, T = 210, k = 300, c = 10, delta = 1e-5)",
        "",
        markdown_table(
            ["curve", "paper", "recomputed (paper's method)", "reproduced", "proven, classic", "proven, improved",
             "Fourier estimate"],
            f5_rows,
        ),
        "",
        "Not recomputable: the data-dependent curve (3.83) needs the per-query vote counts of the authors' CIFAR-10 "
        "HOG k-NN (`knn_num_neighbor_300_figure_knn_voting.npy`, not published); it is in any case a "
        "data-dependent loss, not a differential-privacy guarantee (DESIGN.md rule 7).",
        "",
        "The paper's 1.04 rests on a formula that is not proven for screening, but the figure itself is "
        "right: dpledger proves it by another route. Poisson subsampling makes the two outputs mixtures, over "
        "the subsample S of the other records, of the Bernoulli pairs (Bern((1-g) p_t + g p_t'), Bern(p_t)) with "
        "neighbouring pluralities t, t' (the same weights on both sides), and the Renyi divergence is jointly "
        "quasi-convex (van Erven & Harremoes 2014, Thm 13); so the subsampled RDP is at most the largest exact "
        "divergence of these Bernoulli pairs, in both directions (`SubsampledScreening.pairwise_rdp`). At the "
        f"classic conversion this gives {f(f5['subsampled_screening_proven'][0])}, at most the paper's "
        f"{f(f5['subsampled_screening_paper'])}; with the improved conversion "
        f"{f(f5['subsampled_screening_proven'][1])}. The characteristic-function accountant on the dominating "
        "subsampled Gaussian (an estimate: its quadrature error is estimated, not proven) gives "
        f"{f(f5['subsampled_screening_fourier'])}, above that. Thm 2.3.1 alone is very loose at gamma = 0.25 "
        f"({f5['general_only']:.2f}, worse than no subsampling: its factor 3 on the terms l >= 3 leaves "
        "log(1 + 2 P[Binomial(alpha, gamma) >= 3]) / (alpha - 1) even as the base curve tends to 0).",
        "",
    ]
    if check is not None:
        lines += [
            "Cross-check with autodp 0.2.3.1 `anaRDPacct` (the authors' accountant) fed dpledger's exact Thm 9 "
            "curve: " + ", ".join(f"{k} {v:.4f}" for k, v in check.items()) + ".",
            "",
        ]
    lines += [
        "## Table 1 and Table 2 (screening and aggregation; not reproduced)",
        "",
        markdown_table(
            ["setting", "paper", "paper's method (tight formula on screening)",
             "authors' code (screening as subsampled Gaussian)", "aggregation alone, sensitivity 1",
             "reproduced", "proven, classic", "proven, improved"],
            t1_rows,
        ),
        "",
        "None of the Table 1 epsilons follows from the stated parameters under any data-independent convention "
        "tried (sensitivity 1, sqrt 2 or 2 for the aggregation, delta 1e-5 or 1e-6, screening by the tight "
        "formula or as a subsampled Gaussian). For CIFAR-10 and MNIST the paper's value is below the cost of the "
        "answered queries alone even with the most favourable aggregation sensitivity 1 (column 5), so it "
        "cannot come from a data-independent analysis of the stated parameters: the authors' "
        "`mnist_config.py` sets `data_dependent_rdp = True` (PATE-style data-dependent aggregation, which is "
        "not a guarantee), and their `knn.py` hard-codes a sampling ratio of 0.05 and draws a fixed-size sample "
        "with replacement. For SVHN the stated parameters give less than the paper's 0.49. "
        "LNMAX / GNMAX rows are PATE's published data-dependent figures and Noisy SGD's epsilon = 4 is Abadi et "
        "al.'s; neither can be recomputed from this paper.",
        "",
        "## Table 3 (multi-label, tau = 10, no screening; matched only by an implied sensitivity of about 8)",
        "",
        markdown_table(
            ["setting", "paper", "authors' code (alpha / int(sigma/tau)^2)", "implied L2 sensitivity",
             "subsampled Gaussian, sensitivity 8", "proven (Thm 13), classic", "proven (Thm 13), improved"],
            t3_rows,
        ),
        "",
        "All four 'ours' epsilons of Table 3 are matched within 0.03 by a Poisson-subsampled Gaussian with L2 "
        "sensitivity 8 at the stated delta (implied sensitivities 7.84-8.02: one convention nearly explains all "
        "four rows, but the 2% spread exceeds what two-decimal rounding allows, so this is an approximate "
        "match, not a reproduction); neither the "
        "paper's Thm 13 (alpha tau / sigma^2, sensitivity sqrt(2 tau) = 4.47) nor the authors' code "
        "(alpha / int(sigma / tau)^2, sensitivity sqrt 2 tau = 14.1) gives them, and we found no convention "
        "that yields 8. Our proven values use `TauClippedVotes(sigma, tau=10)`: clipped multi-hot votes have "
        "entries in [0, 1] and L1 norm <= tau, so the L2 sensitivity is sqrt(2 tau min(1, tau)) = 4.47 "
        "(the paper's Thm 13, valid at every real order); they are smaller than the paper's figures. GNMAX rows "
        "are PATE's data-dependent figures (teacher votes unpublished): not recomputable. The appendix C values "
        "(0.2416, 0.116, 1.72) lack their parameters: not recomputable.",
        "",
    ]
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text("\n".join(lines))
    sys.stdout.write("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
