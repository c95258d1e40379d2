"""Exact output laws and Renyi divergences of the generalized SVT (thesis Algorithm 11, RESAMPLE = False) on a
fixed vector of query answers, by mpmath integration over the threshold noise; and an independent mpmath
evaluation of the chapter's bounds. Test-only (mpmath is never imported by the package)."""

import itertools

import mpmath as mp

DPS = 20


def _noise(kind, scale):
    """``(pdf, cdf)`` of N(0, scale^2) or Laplace(0, scale) as mpmath functions."""
    s = mp.mpf(scale)
    if kind == "gaussian":
        return (lambda x: mp.npdf(x, 0, s)), (lambda x: mp.ncdf(x, 0, s))
    if kind == "laplace":
        def cdf(x):
            return mp.mpf(1) / 2 * mp.exp(x / s) if x < 0 else 1 - mp.mpf(1) / 2 * mp.exp(-x / s)
        return (lambda x: mp.exp(-abs(x) / s) / (2 * s)), cdf
    raise ValueError(kind)


def outputs(k_max, cutoff):
    """Every output of Algorithm 11 with ``k_max`` queries: tuples of 0 (bot) / 1 (top), stopping at the
    ``cutoff``-th top or after ``k_max`` answers."""
    out = []
    for length in range(1, k_max + 1):
        for bits in itertools.product((0, 1), repeat=length):
            ones = sum(bits)
            if length < k_max and (ones != cutoff or bits[-1] != 1):
                continue
            if length == k_max and (ones > cutoff or (ones == cutoff and bits[-1] != 1)):
                continue
            out.append(bits)
    return out


def output_law(answers, threshold, rho, nu, cutoff):
    """``{output: probability}`` of Algorithm 11 on query answers ``answers`` (a fixed, non-adaptive vector whose
    length is k_max), margin ``threshold``, threshold noise ``rho = (kind, scale)``, query noise ``nu``."""
    with mp.workdps(DPS):
        p_rho, _ = _noise(*rho)
        _, f_nu = _noise(*nu)
        q = [mp.mpf(a) for a in answers]
        t = mp.mpf(threshold)
        kinks = sorted({mp.mpf(0)} | {qi - t for qi in q})
        points = [-mp.inf] + kinks + [mp.inf]
        law = {}
        for bits in outputs(len(q), cutoff):
            def integrand(z, bits=bits):
                val = p_rho(z)
                for qi, b in zip(q, bits):
                    below = f_nu(t + z - qi)  # P(q_i + nu_i < T + z)
                    val *= (1 - below) if b else below
                return val
            law[bits] = mp.quad(integrand, points)
        return law


def renyi(law_p, law_q, order):
    """``D_order(P || Q)`` of two output laws (mpmath)."""
    with mp.workdps(DPS):
        a = mp.mpf(order)
        total = mp.fsum(law_p[o] ** a * law_q[o] ** (1 - a) for o in law_p if law_p[o] > 0)
        return mp.log(total) / (a - 1)


# ---------------------------------------------------------------- the bounds, evaluated independently
def gaussian_rdp(order, sigma, sensitivity):
    return mp.mpf(order) * mp.mpf(sensitivity) ** 2 / (2 * mp.mpf(sigma) ** 2)


def laplace_rdp(order, scale, sensitivity):
    """Mironov 2017, Prop 6; ``inf`` order: ``sensitivity / scale``."""
    lam = mp.mpf(scale) / mp.mpf(sensitivity)
    if order == mp.inf:
        return 1 / lam
    a = mp.mpf(order)
    return mp.log(a / (2 * a - 1) * mp.exp((a - 1) / lam) + (a - 1) / (2 * a - 1) * mp.exp(-a / lam)) / (a - 1)


def noise_rdp(noise, order, sensitivity):
    kind, scale = noise
    if kind == "gaussian":
        return mp.inf if order == mp.inf else gaussian_rdp(order, scale, sensitivity)
    return laplace_rdp(order, scale, sensitivity)


def svt_bounds(order, rho, nu, cutoff, k_max, delta=1):
    """``{name: value}`` of every bound of thesis Ch. 7 that applies (mpmath, no envelope over orders)."""
    with mp.workdps(DPS):
        order = mp.inf if order == float("inf") else mp.mpf(order)
        er, en = noise_rdp(rho, order, delta), noise_rdp(nu, order, 2 * delta)
        out = {}
        if k_max is not None and order != mp.inf:
            if cutoff == 1:
                out["7.1"] = er + en + mp.log(1 + k_max) / (order - 1)
            else:
                count = sum(mp.binomial(k_max, k) for k in range(min(cutoff, k_max) + 1))
                out["7.2.7"] = er + cutoff * en + (1 + mp.log(count)) / (order - 1)
        en_inf = noise_rdp(nu, mp.inf, 2 * delta)
        if cutoff == 1 and en_inf != mp.inf:
            out["7.3"] = er + en_inf
        if rho[0] == nu[0] == "laplace":
            out["7.1.3"] = pure_dp_rdp(order, noise_rdp(rho, mp.inf, delta) + cutoff * en_inf)
        return out


def pure_dp_rdp(order, epsilon):
    """RDP of randomized response with ``p = e^eps / (1 + e^eps)`` (dominates every eps-DP pair; Kairouz, Oh &
    Viswanath 2015, Thm 2.4), capped at ``eps``."""
    eps = mp.mpf(epsilon)
    if order == mp.inf:
        return eps
    a = mp.mpf(order)
    p = mp.exp(eps) / (1 + mp.exp(eps))
    value = mp.log(p**a * (1 - p) ** (1 - a) + (1 - p) ** a * p ** (1 - a)) / (a - 1)
    return min(value, eps)


# ---------------------------------------------------------------- non-negative queries (Def 7.2.4, Prop 7.6.5)
def stopping_moment(sigma1, sigma2, margin, gamma, mean=0, k_max=None):
    """``E_{z ~ N(mean, sigma1^2)}[h(z)^gamma]`` with ``h(z) = sum_{j=0}^{k_max} Phi((margin + z) / sigma2)^j``
    (``1 / (1 - Phi)`` when ``k_max`` is None), by mpmath quadrature (the bound on ``E[K | rho = z]`` for
    queries in ``Q_+``)."""
    with mp.workdps(30):
        s1, s2, t, g, m = (mp.mpf(v) for v in (sigma1, sigma2, margin, gamma, mean))

        def h(z):
            cdf = mp.ncdf((t + z) / s2)
            if k_max is None:
                return 1 / mp.ncdf(-(t + z) / s2)
            return mp.fsum(cdf**j for j in range(k_max + 1))

        def integrand(z):
            return mp.npdf(z, m, s1) * h(z) ** g

        edges = [m + s1 * k for k in range(-40, 81, 4)]
        return mp.quad(integrand, [-mp.inf] + edges + [mp.inf])


def holder_bound(order, sigma1, sigma2, margin, gamma, delta=1, k_max=None):
    """Thesis (7.2) for Gaussian noises and the ``Q_+`` moment above (mpmath)."""
    with mp.workdps(30):
        a, g = mp.mpf(order), mp.mpf(gamma)
        g_star = g / (g - 1)
        return ((a - 1 / g_star) / (a - 1) * gaussian_rdp(g_star * a, sigma1, delta)
                + gaussian_rdp(a, sigma2, 2 * delta)
                + mp.log(stopping_moment(sigma1, sigma2, margin, gamma, 0, k_max)) / (g * (a - 1)))


def tilted_bound(order, sigma1, sigma2, margin, delta=1, k_max=None):
    """Thm 7.2.1's proof before Holder, Gaussian threshold noise (exact tilt to ``N(alpha Delta, sigma1^2)``)."""
    with mp.workdps(30):
        a = mp.mpf(order)
        return (gaussian_rdp(a, sigma1, delta) + gaussian_rdp(a, sigma2, 2 * delta)
                + mp.log(stopping_moment(sigma1, sigma2, margin, 1, a * delta, k_max)) / (a - 1))


def prop_7_2_5_printed(order, sigma1, sigma2, margin, delta=1):
    """Prop 7.2.5 as printed (gamma = 2, sigma2 >= sqrt(3) sigma1): ``alpha Delta^2 / sigma1^2 + 2 alpha
    Delta^2 / sigma2^2 + log(1 + 2 sqrt(3) pi (1 + 9 T^2 / sigma1^2) e^{T^2 / sigma1^2}) / (2 (alpha - 1))``.
    Not proven (see mechanisms.sparse_vector); kept for comparison only."""
    with mp.workdps(30):
        a, s1, s2, t, d = (mp.mpf(v) for v in (order, sigma1, sigma2, margin, delta))
        moment = 1 + 2 * mp.sqrt(3) * mp.pi * (1 + 9 * t**2 / s1**2) * mp.exp(t**2 / s1**2)
        return a * d**2 / s1**2 + 2 * a * d**2 / s2**2 + mp.log(moment) / (2 * (a - 1))
