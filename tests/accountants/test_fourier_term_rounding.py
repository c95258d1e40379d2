"""The per-term rounding allowance of Fourier inversion covers the exponent's float error at every node.

Each term of the trapezoidal sum is ``exp(log M(s) - s epsilon - log s - log(1 + s))``; :func:`invert` evaluates
its exponent as ``(Re base - kappa eps) + i (Im base - Im(s) eps)`` from parts computed once per plan. The float
error of ``Im(s) eps`` grows with the frequency, so on a slowly decaying characteristic function (few runs of a
small sampling probability need tens of thousands of nodes) a high-frequency term's exponent error exceeds the
``8 + |log M|`` ulps once charged; the allowance is now ``8 + |log M| + 2 |s| |epsilon|``
(:attr:`accountants.fourier_inversion.InversionPlan.contour`).
"""

import mpmath as mp
import numpy as np

from dpledger.accountants import FourierAccountant
from dpledger.accountants.fourier_inversion import make_plan
from dpledger.mechanisms import GaussianMechanism, PoissonSubsampled

EPS = np.finfo(np.float64).eps


def _exponent_errors(plan, epsilon, nodes):
    """``(|computed exponent - exact|, |log M|, |s|)`` at ``nodes``, the exact one in 200-bit arithmetic from the
    same float inputs (``s`` and ``log M(s)`` as stored in the plan)."""
    s = plan.contour[0]
    base_re, base_im, im_s = plan.contour_parts
    out = []
    with mp.workprec(200):
        for k in nodes:
            sk = mp.mpc(float(s[k].real), float(s[k].imag))
            lm = complex(plan.log_m_nodes[k])
            exact = mp.mpc(lm.real, lm.imag) - sk * mp.mpf(epsilon) - mp.log(sk) - mp.log(1 + sk)
            computed = mp.mpc(float(base_re[k] - plan.kappa * epsilon), float(base_im[k] - im_s[k] * epsilon))
            out.append((float(abs(computed - exact)), abs(lm), abs(complex(s[k]))))
    return out


def test_each_terms_exponent_error_is_within_the_charged_allowance():
    ledger = FourierAccountant().compose(PoissonSubsampled(GaussianMechanism(0.6), 1e-4), 10_000)
    _, lm, sup = ledger._directions()[0]
    epsilon = 0.2747830328
    plan = make_plan(lm, sup, epsilon, 1e-14, max_terms=1 << 20, kappa=5.0, max_damping=50.0)
    assert plan.terms >= 8192  # a slowly decaying characteristic function: many high frequencies
    nodes = np.unique(np.linspace(0, plan.terms, 300).astype(int))
    errors = _exponent_errors(plan, epsilon, nodes)
    charged = [EPS * (8.0 + log_m + 2.0 * mod_s * epsilon) for _, log_m, mod_s in errors]
    assert all(err <= c for (err, _, _), c in zip(errors, charged))
    # the former allowance (8 + |log M| ulps) is exceeded at some high-frequency node: the new term is needed
    assert max(err / (EPS * (8.0 + log_m)) for err, log_m, _ in errors) > 1.0
    # and the plan's weights carry exactly that allowance
    weights = plan.contour[2]
    np.testing.assert_allclose(plan.frequency_weights, 2.0 * weights * np.abs(plan.contour[0]), rtol=0, atol=0)
