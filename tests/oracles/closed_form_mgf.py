"""mpmath oracles for the closed-form moment generating functions of dpledger's dominating pairs, many runs composed.

The values are mpmath's alone (the library is imported only to read a mechanism's float parameters, in
:func:`one_run`, and by :func:`main`). Each ``log_*`` function returns ``log M(s)`` (an ``mpc``, any branch: only
``exp(n log M)`` is used) of ONE run of the pair that the float code represents, its float parameters taken as exact
binary numbers (a float ``E`` is the loss of the pair, not a rounding of some decimal):

* Gaussian, ``L ~ N(mu2/2, mu2)``: ``log M(s) = mu2 s (s + 1) / 2``, ``mu2 = 1 / noise_multiplier^2`` exactly;
* two-point (randomized response, pure DP), loss ``+-E`` with ``p* = 1 / (1 + e^-E)``:
  ``M(s) = p* e^(sE) + (1 - p*) e^(-sE)``;
* Laplace with ``t = sensitivity / scale``: ``M(s) = A(s) + C(s)``, the atoms ``A(s) = (e^(-t(1+s)) + e^(st)) / 2``
  and, with ``w = t (1 + 2s)``, the continuous part ``C(s) = e^(st) t (1 - e^(-w)) / (2 w)`` (``t e^(st) / 2`` at
  ``w = 0``); the Laplace split's rest ``R = M - D`` with ``D`` the all-atom part;
* a discrete pair of log-masses ``(log p_i, log q_i)``: ``M(s) = sum_i p_i^(1 + s) q_i^(-s)``;
* Poisson subsampling (probability ``g``) of the two-point pair (thesis Thm 3.3.5(1)): with base masses ``1 - p*``
  at loss ``+E`` and ``p*`` at ``-E`` (under the pair's second law) and ``r_j = log(1 - g + g e^(l_j))``,
  ``F(z) = sum_j B_j e^(z r_j)``; remove: ``M(s) = F(1 + s)``, add: ``M(s) = F(-s)``.

:func:`compare` measures ``|M(s)^n - exp(log_m)|`` (the exact ``M`` to ``DPS`` digits, ``log_m`` a float result) in
log space, so ``M`` far below the float range (``e^-10^6``) and huge phases (``n Im log M ~ 10^10``) are exact too.

Running ``python -m tests.oracles.closed_form_mgf`` prints the worst ratios of the report (see :func:`main`).
"""

import math

import mpmath as mp
import numpy as np

DPS = 60
#: float64 machine epsilon (2^-52): the inversion's per-node rounding allowance is ``EPS (8 + |log M~|) |M~|``
#: (accountants/fourier_inversion.py, ``InversionPlan.contour``).
EPS = 2.0**-52


def mpc(z):
    """The complex float ``z`` as an exact ``mpc``."""
    z = complex(z)
    return mp.mpc(mp.mpf(z.real), mp.mpf(z.imag))


def log_gaussian(s, noise_multiplier):
    """``mu2 s (s + 1) / 2`` with ``mu2 = 1 / noise_multiplier^2`` (the float noise multiplier exact)."""
    with mp.workdps(DPS):
        mu2 = 1 / mp.mpf(float(noise_multiplier)) ** 2
        return mu2 * s * (s + 1) / 2


def log_two_point(s, e):
    """``log(p* e^(sE) + (1 - p*) e^(-sE))``, ``p* = 1 / (1 + e^-E)``, computed as
    ``log(e^(sE) + e^(-E - sE)) - log(1 + e^-E)``."""
    with mp.workdps(DPS):
        e = mp.mpf(float(e))
        total = mp.exp(s * e) + mp.exp(-e - s * e)
        return _log(total) - mp.log1p(mp.exp(-e))


def _log(z):
    return mp.mpf("-inf") if z == 0 else mp.log(z)


def laplace_parts(s, t):
    """``(A(s), C(s))`` of one Laplace run (module docstring)."""
    with mp.workdps(DPS):
        t = mp.mpf(float(t))
        w = t * (1 + 2 * s)
        ratio = mp.mpf(1) if w == 0 else -mp.expm1(-w) / w
        lead = mp.exp(s * t)
        return lead * (1 + mp.exp(-w)) / 2, lead * t * ratio / 2


def log_laplace(s, t):
    with mp.workdps(DPS):
        a, c = laplace_parts(s, t)
        return _log(a + c)


def log_discrete(s, log_p, log_q):
    """``log sum_i exp(lp_i + s (lp_i - lq_i))`` over the outcomes where both log-masses are finite."""
    with mp.workdps(DPS):
        total = mp.mpf(0)
        for lp, lq in zip(log_p, log_q):
            if math.isfinite(lp) and math.isfinite(lq):
                lp, lq = mp.mpf(float(lp)), mp.mpf(float(lq))
                total += mp.exp(lp + s * (lp - lq))
        return _log(total)


def log_subsampled_two_point(s, e, q, remove=True):
    """Remove ``log F(1 + s)``, add ``log F(-s)`` of the Poisson-subsampled two-point pair (module docstring)."""
    with mp.workdps(DPS):
        e, q = mp.mpf(float(e)), mp.mpf(float(q))
        p_star = 1 / (1 + mp.exp(-e))
        z = 1 + s if remove else -s
        total = mp.mpf(0)
        for mass, loss in ((1 - p_star, e), (p_star, -e)):
            r = mp.log(1 - q + q * mp.exp(loss))
            total += mass * mp.exp(z * r)
        return _log(total)


def log_laplace_rest(s, laplace_runs, two_point_runs=()):
    """``log R(s)``, ``R = M - D`` of a ledger of Laplace runs ``[(t, n), ...]`` and two-point runs ``[(E, n), ...]``:
    ``D = prod B_j^n_j prod A_i^n_i`` (the all-atom part), ``R = D (prod (1 + C_i / A_i)^n_i - 1)``, the last factor
    by ``expm1`` of ``sum n_i log(1 + C_i / A_i)`` (no cancellation)."""
    with mp.workdps(DPS):
        log_d = mp.mpc(0)
        z = mp.mpc(0)
        for e, n in two_point_runs:
            log_d += n * log_two_point(s, e)
        for t, n in laplace_runs:
            a, c = laplace_parts(s, t)
            log_d += n * _log(a)
            z += n * mp.log1p(c / a)
        return log_d + _log(mp.expm1(z))


def compare(log_exact, n, log_m, log_err):
    """``{"actual", "relative", "contract", "inversion"}``: ``log |M^n - exp(log_m)|`` (``M^n = exp(n log_exact)``),
    and the ratios of that error to ``|M^n|``, to the claimed bound ``exp(log_err)`` (``inf`` where the bound is 0
    and the error is not) and to the inversion's per-node allowance ``EPS (8 + |log_m|) |exp(log_m)|``, all as
    floats (ratios may overflow to ``inf``)."""
    with mp.workdps(DPS):
        if not math.isfinite(complex(log_m).real) and complex(log_m).real != -math.inf or math.isnan(
                complex(log_m).imag):
            # no value (+inf or NaN): no information, within a bound only if the bound is +inf too
            bounded = float(log_err) == math.inf
            return {"actual": math.inf, "relative": math.inf, "contract": 1.0 if bounded else math.inf,
                    "inversion": math.inf}
        b = mpc(log_m)
        a = n * log_exact
        if mp.isinf(a.real) and a.real < 0:  # M = 0 exactly
            log_actual = b.real
        else:
            d = b - a
            d = mp.mpc(d.real, d.imag - 2 * mp.pi * mp.nint(d.imag / (2 * mp.pi)))  # the phase modulo 2 pi
            gap = abs(mp.expm1(d))
            log_actual = a.real + mp.log(gap) if gap != 0 else mp.mpf("-inf")
        allowance = mp.mpf("-inf") if mp.isinf(b.real) else mp.log(EPS * (8 + abs(b))) + b.real

        def ratio(log_den):
            if log_actual == mp.mpf("-inf"):
                return 0.0
            if log_den == mp.mpf("-inf"):
                return math.inf
            x = log_actual - log_den
            return math.inf if x > 700 else float(mp.exp(x))

        return {
            "actual": float(log_actual),
            "relative": ratio(a.real),
            "contract": ratio(mp.mpf(float(log_err))),
            "inversion": ratio(allowance),
        }


def one_run(mechanism, s, remove=True, accountant=False):
    """``log M(s)`` of one run of ``mechanism`` as the code represents its pair: the parameters of its own
    ``_log_mgf`` (``accountant=False``: ``SelfComposed`` and ``Composed`` call it) or of
    ``FourierAccountant._compile`` (``accountant=True``: a two-point loss is then ``two_point_loss()``, rounded
    up, where randomized response's own closed form uses ``log(p) - log1p(-p)`` to nearest). ``s`` an ``mpc``."""
    from dpledger import mechanisms as m

    if isinstance(mechanism, m.GaussianMechanism):
        return log_gaussian(s, mechanism.noise_multiplier)
    if isinstance(mechanism, m.LaplaceMechanism):
        return log_laplace(s, mechanism.sensitivity / mechanism.scale)
    if isinstance(mechanism, (m.RandomizedResponse, m.PureDPMechanism)):
        return log_two_point(s, two_point_parameter(mechanism, accountant))
    if isinstance(mechanism, m.KaryRandomizedResponse):
        pair = mechanism._pair()
        return log_discrete(s, pair.log_p, pair.log_q)
    if isinstance(mechanism, m.DiscretePairMechanism):
        return log_discrete(s, mechanism.log_p, mechanism.log_q)
    if isinstance(mechanism, m.PoissonSubsampled):
        base = mechanism.mechanism
        if isinstance(base, (m.RandomizedResponse, m.PureDPMechanism)):
            return log_subsampled_two_point(s, two_point_parameter(base, False), mechanism.sampling_probability,
                                            remove)
    raise TypeError(f"no closed-form oracle for {mechanism!r}")


def two_point_parameter(mechanism, accountant):
    """The loss ``E`` of a two-point mechanism's pair as the code uses it (:func:`one_run`)."""
    from dpledger import mechanisms as m

    if accountant:
        return mechanism.two_point_loss()
    if isinstance(mechanism, m.RandomizedResponse):
        return abs(float(np.log(mechanism.p) - np.log1p(-mechanism.p)))
    return float(mechanism.epsilon)
