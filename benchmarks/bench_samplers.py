"""Accounting for the sampler that was actually used (issue 19): tightness and speed, printed as markdown.

1. Fixed-size batches without replacement, replace-one: dpledger's ``SampledWithoutReplacement.replace_one_rdp``
   (Wang-Balle-Kasiviswanathan Thm 9 for any base, and for a Gaussian base the minimum with their Thm 27,
   computed in exact interval arithmetic), converted by dpledger's RDP conversion, against
   dp_accounting's ``RdpAccountant(REPLACE_ONE)`` for the same ``SampledWithoutReplacementDpEvent`` (WBK19 Thm 27,
   Gaussian only). Also dpledger's add-or-remove-one value (thesis Thm 3.3.5(2), Fourier accountant), which is a
   different relation and shown for reference.
2. Random allocation (one of t steps per epoch, Gaussian noise 1.1, delta 1e-5): dpledger's proven RDP upper bound,
   the Fourier accountant's proven interval (privacy buckets of ``AllocationPair``, timed as the first query of a
   fresh process) and a proven lower bound, against Poisson sampling at rate 1/t (both accountants) and the
   published interval.
3. Fixed-size batches with replacement (Gaussian): the Jensen RDP bound (before), the RDP of the proven dominating
   pair, the Fourier accountant's proven interval (privacy buckets of ``WithReplacementPair``), dp_accounting's
   PLD of the same pair (an estimate; peer), and sampling without replacement for reference.

Run with ``python -m benchmarks.bench_samplers``.
"""

import time

import numpy as np

from dpledger.accountants import FourierAccountant, RDPAccountant
from dpledger.mechanisms import (
    CustomRDPMechanism,
    GaussianMechanism,
    PoissonSubsampled,
    RandomAllocation,
    SampledWithoutReplacement,
    SampledWithReplacement,
)
from dpledger.mechanisms.fixed_size_sampling import replace_one_rdp

DELTA = 1e-5


def _dp_accounting_wor(sigma, b, n, steps):
    try:
        import dp_accounting
    except ImportError:
        return None
    ev = dp_accounting.dp_event
    acc = dp_accounting.rdp.RdpAccountant(neighboring_relation=dp_accounting.NeighboringRelation.REPLACE_ONE)
    acc.compose(ev.SelfComposedDpEvent(ev.SampledWithoutReplacementDpEvent(n, b, ev.GaussianDpEvent(sigma)), steps))
    return acc.get_epsilon(DELTA)


def without_replacement():
    rows = ["| sigma | b / n | steps | dpledger replace-one (WBK19 Thm 9 and Thm 27) | time | Thm 9 only "
            "| dp_accounting replace-one (Thm 27) | ratio | dpledger add-or-remove (Thm 3.3.5(2), Fourier) |",
            "|---|---|---|---|---|---|---|---|---|"]
    for sigma, b, n, steps in [(1.1, 256, 60_000, 14_063), (1.1, 100, 10_000, 1000), (2.0, 1000, 50_000, 5000),
                               (0.8, 64, 1000, 500), (4.0, 512, 60_000, 2000), (8.0, 600, 60_000, 3000),
                               (3.0, 5000, 50_000, 500), (10.0, 2000, 10_000, 200), (1.5, 2500, 50_000, 1000),
                               (0.6, 200, 100_000, 5000), (6.0, 64, 1000, 1000), (20.0, 5000, 10_000, 100)]:
        m = SampledWithoutReplacement(GaussianMechanism(sigma=sigma), batch_size=b, dataset_size=n)
        start = time.perf_counter()
        curve = CustomRDPMechanism(m.replace_one_rdp, name="replace-one WBK19 Thm 9 / Thm 27")
        ours = RDPAccountant().compose(curve, count=steps).get_epsilon(DELTA)
        elapsed = time.perf_counter() - start
        thm9 = CustomRDPMechanism(lambda a, g=sigma, q=b / n: replace_one_rdp(a, q, GaussianMechanism(sigma=g).rdp),
                                  name="replace-one WBK19 Thm 9")
        only9 = RDPAccountant().compose(thm9, count=steps).get_epsilon(DELTA)
        theirs = _dp_accounting_wor(sigma, b, n, steps)
        add_remove = FourierAccountant().compose(m, count=steps).get_epsilon(DELTA)
        ratio = "n/a" if theirs is None else f"{ours / theirs:.6f}"
        rows.append(f"| {sigma} | {b}/{n} | {steps} | {ours:.4f} | {elapsed:.2f} s | {only9:.4f} | "
                    f"{'not installed' if theirs is None else f'{theirs:.4f}'} | {ratio} | {add_remove:.4f} |")
    return "\n".join(rows)


_FRESH_FOURIER = """
import json, sys, time
from dpledger.accountants import FourierAccountant
from dpledger.mechanisms import GaussianMechanism, RandomAllocation
t, epochs, delta = int(sys.argv[1]), int(sys.argv[2]), float(sys.argv[3])
start, cpu = time.perf_counter(), time.process_time()
acc = FourierAccountant().compose(RandomAllocation(GaussianMechanism(sigma=1.1), steps=t), count=epochs)
b = acc.epsilon_bounds(delta)
print(json.dumps([b.lower, b.upper, time.perf_counter() - start, time.process_time() - cpu]))
"""


def _fresh_fourier(t, epochs):
    """The Fourier accountant's interval and the wall and CPU times of its first query in a fresh process (nothing
    cached; one BLAS / OpenMP thread, so that idle threads spinning on a shared machine are not counted)."""
    import json
    import os
    import subprocess
    import sys

    env = dict(os.environ, OPENBLAS_NUM_THREADS="1", OMP_NUM_THREADS="1", MKL_NUM_THREADS="1")
    out = subprocess.run([sys.executable, "-c", _FRESH_FOURIER, str(t), str(epochs), str(DELTA)],
                         capture_output=True, text=True, check=True, env=env)
    return json.loads(out.stdout)


def random_allocation():
    rows = ["| steps t | epochs | dpledger RDP upper (proven) | time | Fourier / privacy buckets of AllocationPair "
            "[lower, upper] (proven) | time (fresh process: wall, CPU) | lower (test) | Poisson 1/t RDP "
            "| Poisson 1/t Fourier | published |",
            "|---|---|---|---|---|---|---|---|---|---|"]
    for t, epochs, published in [(10, 10, "[5.11, 5.20]"), (100, 100, "-")]:
        lo, hi, pld_time, pld_cpu = _fresh_fourier(t, epochs)
        start = time.perf_counter()
        m = RandomAllocation(GaussianMechanism(sigma=1.1), steps=t)
        upper = RDPAccountant().compose(m, count=epochs).get_epsilon(DELTA)
        elapsed = time.perf_counter() - start
        lower = m.epsilon_lower_bound(DELTA, epochs=epochs)
        poisson = PoissonSubsampled(GaussianMechanism(sigma=1.1), sampling_probability=1.0 / t)
        p_rdp = RDPAccountant().compose(poisson, count=t * epochs).get_epsilon(DELTA)
        p_fourier = FourierAccountant().compose(poisson, count=t * epochs).get_epsilon(DELTA)
        rows.append(f"| {t} | {epochs} | {upper:.4f} | {elapsed:.2f} s | [{lo:.4f}, {hi:.4f}] | "
                    f"{pld_time:.2f} s, {pld_cpu:.2f} s | {lower:.4f} | {p_rdp:.4f} | {p_fourier:.4f} | {published} |")
    return "\n".join(rows)


def _dp_accounting_mixture(sigma, b, n, steps, top=6):
    """dp_accounting's PLD of the same dominating pair (``MixtureGaussianPrivacyLoss``, pessimistic, connect-the-
    dots, discretisation 1e-4), the weights ``Bin(b, 1/n)`` for ``k <= top`` renormalised: a peer estimate."""
    from dp_accounting.pld import privacy_loss_distribution as pldm
    from scipy import stats

    w = stats.binom.pmf(np.arange(top + 1), b, 1.0 / n)
    w = w / w.sum()
    start = time.perf_counter()
    pld = pldm.from_mixture_gaussian_mechanism(sigma, [2.0 * k for k in range(top + 1)], list(w),
                                               value_discretization_interval=1e-4)
    eps = pld.self_compose(steps).get_epsilon_for_delta(DELTA)
    return eps, time.perf_counter() - start


def with_replacement():
    rows = ["| sigma / sensitivity | b / n | steps | Jensen RDP (before) | RDP (new, proven) | Fourier / privacy "
            "buckets of WithReplacementPair, upper (proven) | time | dp_accounting PLD of the same pair "
            "(estimate) | time | without replacement (RDP) | without replacement (Fourier) |",
            "|---|---|---|---|---|---|---|---|---|---|---|"]
    for sigma, b, n, steps in [(4.0, 10, 1000, 100), (1.1, 256, 60_000, 1000), (1.1, 256, 60_000, 14_063),
                               (8.0, 256, 60_000, 1000)]:
        g = GaussianMechanism(sigma=sigma, sensitivity=2.0)
        m = SampledWithReplacement(g, batch_size=b, dataset_size=n)
        core, tau = m.approximate()
        jensen = RDPAccountant().compose(CustomRDPMechanism(core._jensen_rdp, name="Jensen"), count=steps)
        jensen_eps = jensen.get_epsilon(DELTA - steps * tau * (1 + 1e-9))  # tau <= 1e-15 charged per step
        wr = RDPAccountant().compose(m, count=steps).get_epsilon(DELTA)
        start = time.perf_counter()
        pld = FourierAccountant().compose(m, count=steps).epsilon_bounds(DELTA)
        pld_time = time.perf_counter() - start
        peer, peer_time = _dp_accounting_mixture(sigma, b, n, steps)
        w = SampledWithoutReplacement(g, batch_size=b, dataset_size=n)
        wor = RDPAccountant().compose(w, count=steps).get_epsilon(DELTA)
        wor_f = FourierAccountant().compose(w, count=steps).get_epsilon(DELTA)
        rows.append(f"| {sigma} / 2 | {b}/{n} | {steps} | {jensen_eps:.4f} | {wr:.4f} | "
                    f"{pld.upper:.4f} | {pld_time:.2f} s | {peer:.4f} | {peer_time:.2f} s | "
                    f"{wor:.4f} | {wor_f:.4f} |")
    return "\n".join(rows)


def main():
    np.seterr(all="ignore")
    print(f"epsilon at delta = {DELTA}\n")
    print("### Fixed-size batches without replacement (Gaussian, noise multiplier sigma)\n")
    print(without_replacement())
    print("\n### Random allocation, one of t steps per epoch, sigma 1.1\n")
    print(random_allocation())
    print("\n### Fixed-size batches with replacement\n")
    print(with_replacement())


if __name__ == "__main__":
    main()
