"""One inversion plan, many epsilons: the contour's epsilon-free parts are computed once per plan
(``InversionPlan.contour``, ``contour_parts``) and reused by ``invert`` at every epsilon of a search, in real
arithmetic (the exponent's real part and a phasor per node, ``InversionPlan.phasors``, turned to epsilon by phases
formed a block at a time, ``_node_phases``).

Oracle: the Gaussian mechanism's exact privacy profile (closed form through Phi, mpmath), whose log MGF
``mu^2 s (1 + s) / 2`` is a closed form; each reuse of a plan must give the bounds a fresh plan gives, containing
the exact delta, on both contours (damping > 0 and in (-1, 0)).
"""

import dataclasses

import mpmath as mp
import numpy as np
import pytest

from dpledger.accountants.fourier_inversion import invert, make_plan


def _gaussian(mu):
    def log_mgf(s):
        s = np.asarray(s, dtype=np.complex128)
        return 0.5 * mu * mu * s * (1.0 + s)

    def log_mgf_sup(a, u):  # Re log M(a + iu) = mu^2 (a (1 + a) - u^2) / 2, largest at |u| = U
        return 0.5 * mu * mu * (a * (1.0 + a) - u * u)

    return log_mgf, log_mgf_sup


def _exact_delta(mu, eps):
    with mp.workdps(30):
        mu, eps = mp.mpf(mu), mp.mpf(eps)
        return float(mp.ncdf(-eps / mu + mu / 2) - mp.exp(eps) * mp.ncdf(-eps / mu - mu / 2))


@pytest.mark.parametrize("mu, plan_eps, kappa", [(0.5, 1.0, None), (2.0, 3.0, None), (1.0, 0.2, -0.4)])
def test_a_plan_reused_across_epsilons_gives_a_fresh_plans_bounds(mu, plan_eps, kappa):
    log_mgf, log_mgf_sup = _gaussian(mu)
    plan = make_plan(log_mgf, log_mgf_sup, plan_eps, 1e-12, kappa=kappa)
    s, base, weights, magnitude_weights, log_denominator = plan.contour
    nodes = plan.kappa + 1j * plan.step * np.arange(plan.terms + 1)
    np.testing.assert_array_equal(s, nodes)
    np.testing.assert_allclose(base, log_mgf(nodes) - np.log(nodes) - np.log1p(nodes), rtol=1e-14, atol=1e-13)
    np.testing.assert_allclose(np.exp(log_denominator), np.abs(nodes * (1.0 + nodes)), rtol=1e-13)
    assert weights[0] == 0.5 and np.all(weights[1:] == 1.0)
    np.testing.assert_allclose(magnitude_weights, weights * (8.0 + np.abs(plan.log_m_nodes)), rtol=1e-15)
    assert plan.contour is plan.contour and not base.flags.writeable
    base_re, base_im = plan.contour_parts
    np.testing.assert_array_equal(base_re + 1j * base_im, base)
    for eps in (0.0, plan_eps):  # the exponent's real part at epsilon is that of the complex base - s eps, exactly
        np.testing.assert_array_equal(base_re - plan.kappa * eps, (base - s * eps).real)
    re, im = plan.phasors  # the weighted moduli turned by the phase of base, formed once per plan
    weighted = plan.moduli[1]
    np.testing.assert_allclose(re + 1j * im, weighted * np.exp(1j * base_im), rtol=0, atol=4e-16 * weighted.max())
    for eps in (plan_eps * 0.8, plan_eps, plan_eps * 1.1, plan_eps * 0.95):
        reused, _ = invert(plan, eps)
        fresh, _ = invert(dataclasses.replace(plan), eps)  # a new plan object: its contour computed afresh
        assert reused == fresh
        exact = _exact_delta(mu, eps)
        assert reused.lower <= exact <= reused.upper
        assert reused.upper - reused.lower <= 1e-9 + 1e-6 * exact  # informative
