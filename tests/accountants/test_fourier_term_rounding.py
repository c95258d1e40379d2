"""The per-term rounding allowance of Fourier inversion covers each term's float error at every node.

Each term of the trapezoidal sum is ``exp(log M(s) - s epsilon - log s - log(1 + s))``; :func:`invert` forms it as
the plan's phasor ``w e^(base - peak0)`` times ``e^(-i k step eps)``, whose phases come a block at a time
(:func:`accountants.fourier_inversion._node_phases`). The phase's float error grows with the frequency, so on a
slowly decaying characteristic function (few runs of a small sampling probability need tens of thousands of nodes)
a high-frequency term's error exceeds the ``8 + |log M|`` ulps once charged; the allowance is ``8 + |log M| + 2 |s|
|epsilon|`` (:attr:`accountants.fourier_inversion.InversionPlan.contour`). Each term's real part is checked against
200-bit arithmetic from the same float inputs, within that allowance.
"""

import mpmath as mp
import numpy as np

from dpledger.accountants import FourierAccountant
from dpledger.accountants.fourier_inversion import _node_phases, make_plan
from dpledger.mechanisms import GaussianMechanism, PoissonSubsampled

EPS = np.finfo(np.float64).eps


def test_each_terms_real_part_is_within_the_charged_allowance():
    """``Re p_k e^(-i k phi)`` against ``w_k e^(t_k - peak0)`` in 200-bit arithmetic (``t_k = log M - s eps - log s -
    log(1 + s)`` from the stored floats), at nodes across a long contour and at three epsilons: within ``(8 + |log
    M| + 2 |s| eps) u`` of the term's modulus (the per-term allowance, before the sum's ``1 + log2 K`` factor)."""
    ledger = FourierAccountant().compose(PoissonSubsampled(GaussianMechanism(0.6), 1e-4), 10_000)
    _, lm, sup = ledger._directions()[0]
    plan = make_plan(lm, sup, 0.2747830328, 1e-14, max_terms=1 << 20, kappa=5.0, max_damping=50.0)
    s = plan.contour[0]
    peak0, weighted = plan.moduli[:2]
    re, im = plan.phasors
    nodes = np.unique(np.linspace(0, plan.terms, 200).astype(int))
    worst = former = 0.0
    for epsilon in (0.01, 0.2747830328, 3.0):
        cos, sin = _node_phases(re.size, plan.step * epsilon)
        computed = re * cos + im * sin
        with mp.workprec(200):
            for k in nodes:
                sk = mp.mpc(float(s[k].real), float(s[k].imag))
                lm_k = complex(plan.log_m_nodes[k])
                t = mp.mpc(lm_k.real, lm_k.imag) - sk * mp.mpf(epsilon) - mp.log(sk) - mp.log(1 + sk)
                weight = 0.5 if k == 0 else 1.0
                exact = weight * mp.exp(t.real - mp.mpf(peak0) + plan.kappa * mp.mpf(epsilon)) * mp.cos(t.imag)
                modulus = weight * mp.exp(t.real - mp.mpf(peak0) + plan.kappa * mp.mpf(epsilon))
                allowance = EPS * (8.0 + abs(lm_k) + 2.0 * abs(complex(s[k])) * epsilon) * float(modulus)
                error = abs(float(computed[k]) - float(exact))
                assert error <= allowance, (k, epsilon, error, allowance)
                worst = max(worst, error / allowance)
                former = max(former, error / (EPS * (8.0 + abs(lm_k)) * float(modulus)))
    assert worst > 1e-3  # the check compares values that differ, not a term with itself
    # the former allowance (8 + |log M| ulps) is exceeded at some high-frequency node: the 2 |s| eps term is needed
    assert former > 1.0
    # and the plan's weights carry exactly that allowance
    np.testing.assert_allclose(plan.frequency_weights, 2.0 * plan.contour[2] * np.abs(s), rtol=0, atol=0)


def test_node_phases_match_direct_cosines():
    """The block-wise phases against ``cos`` and ``sin`` of ``k phi`` computed directly, for counts that do and do
    not fill their last block, within ``(|k phi| + 8) u``."""
    for count, phi in ((1, 0.3), (255, 1.7), (256, 1e-3), (1000, 2.5), (70_001, 1.04 * 0.0104)):
        cos, sin = _node_phases(count, phi)
        assert cos.shape == sin.shape == (count,)
        k = np.arange(count)
        with mp.workprec(120):
            picks = np.unique(np.linspace(0, count - 1, 50).astype(int))
            for i in picks:
                exact = mp.mpf(int(k[i])) * mp.mpf(phi)
                bound = EPS * (abs(float(exact)) + 8.0)
                assert abs(cos[i] - float(mp.cos(exact))) <= bound
                assert abs(sin[i] - float(mp.sin(exact))) <= bound
