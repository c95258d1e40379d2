"""mpmath oracles for the RDP of Poisson-subsampled mechanisms (add/remove relation).

Independent of the library code; uses only :mod:`mpmath` (working precision
``dps`` >= 50 decimal digits, arbitrary exponent range, so nothing overflows).

Sources
-------
* Zhu & Wang 2019, "Poisson subsampled Renyi differential privacy" (ICML), as
  Ch. 2 of Y. Zhu's thesis (``/work/shared/papers/004_...txt``): Thm 2.3.1
  (general upper bound), Thm 2.3.2 (lower bound), Thm 2.3.4 (tight under the
  Pearson-Vajda condition, which Prop 2.3.6 proves for Gaussian and Laplace).
* Mironov 2017, "Renyi differential privacy", Table II: base RDP of Gaussian,
  Laplace and randomized response (restated in thesis Sec 2.4).
* Mironov, Talwar & Zhang 2019, "Renyi DP of the sampled Gaussian mechanism":
  A_alpha = E_{mu0}[(mu/mu0)^alpha] and B_alpha = E_{mu}[(mu0/mu)^alpha].

Notation: gamma (= q) is the sampling probability, mu0 the base output
distribution without the extra record, mu1 with it, mu = (1-q) mu0 + q mu1,
r = mu1/mu0, u = q (r - 1), so mu/mu0 = 1 + u.  ``log_moment(l)`` returns
(l-1) * eps(l) of the base mechanism as an mpf.  Floats are converted exactly
(their binary value), so pass strings or mpf for decimal parameters.

Numerical form of the integrals: since E_{mu0}[u] = 0 and mu/mu0 = 1 + u,
A - 1 = E_{mu0}[h_alpha(u)] and, because E_mu[(mu0/mu)^a] = E_{mu0}[(1+u)^(1-a)],
B - 1 = E_{mu0}[h_{1-alpha}(u)] with h_b(u) = (1+u)^b - 1 - b u >= 0 (convexity,
b > 1 or b < 0).  Integrating h (evaluated with extra digits where u is small)
and returning log1p(.) / (alpha - 1) keeps full relative accuracy even for
q = 1e-9, where the RDP is ~1e-18 and A - 1 would be lost in A.

Observed (verified when this file was written; see the report):
* Forward integral == ``tight_bound`` at integer alpha to < 1e-20 relative over
  sigma in [0.1, 100], q in [1e-9, 1], b in [0.1, 100], alpha up to 256.
* The reverse direction B never exceeded the forward A on a grid of real
  alpha in (1, 256] (also fractional alpha, where Thm 2.3.4 says nothing) for
  both Gaussian and Laplace; at q = 1 they are equal (symmetric pair).
* dp_accounting 0.6.0 ``_compute_log_a_frac`` adds |binomial| terms (an upper
  bound, not the exact A at fractional alpha): e.g. q = 0.01, sigma = 2.5, 50
  steps, alpha = 1.5 gives 6.70580e-4 there, while the integral here gives
  6.50070e-4 (the value TF Privacy / older dp_accounting asserted).
* ``general_bound`` at gamma = 1 is eps(alpha) + log(3)/(alpha-1), not eps(alpha):
  the factor 3 of Thm 2.3.1 does not vanish without subsampling.

Speed: ``tight_bound``/``general_bound`` ~1-5 ms for alpha <= 256.  The
integrals take 0.1-1 s (slow: they scan the integrand to place breakpoints; cost
grows like alpha / sigma for the Gaussian and log(alpha / b) for Laplace).
"""

import mpmath as mp

DPS = 50


def _mpf(x):
    return x if isinstance(x, mp.mpf) else mp.mpf(x)


def _int_alpha(alpha):
    if int(alpha) != alpha or alpha < 2:
        raise ValueError(f"`alpha` must be an integer >= 2; got {alpha}.")
    return int(alpha)


def _check_gamma(gamma):
    if not 0 <= gamma <= 1:
        raise ValueError(f"`gamma` must be in [0, 1]; got {gamma}.")


def _binomial_sums(alpha, gamma, log_moment):
    """Return (sum_{l>=2} c_l expm1(m_l), sum_{l>=3} c_l exp(m_l)), c_l = C(a,l)(1-g)^(a-l) g^l."""
    s_tight, s_three = [], []
    for l in range(2, alpha + 1):
        c = mp.binomial(alpha, l) * (1 - gamma) ** (alpha - l) * gamma**l
        if c == 0:
            continue  # gamma = 1 and l < alpha (avoids 0 * inf)
        m = log_moment(l)
        s_tight.append(c * mp.expm1(m))
        if l >= 3:
            s_three.append(c * mp.exp(m))
    return mp.fsum(s_tight), mp.fsum(s_three)


def tight_bound(alpha, gamma, log_moment, dps=DPS):
    """Exact RDP of the Poisson-subsampled mechanism at integer alpha (thesis Thm 2.3.2 = Thm 2.3.4).

    eps(alpha) = 1/(alpha-1) log{ (1-g)^(alpha-1) (alpha g - g + 1)
                 + sum_{l=2}^{alpha} C(alpha,l) (1-g)^(alpha-l) g^l exp((l-1) eps(l)) },
    evaluated as log1p(sum_{l>=2} C(alpha,l)(1-g)^(alpha-l) g^l expm1((l-1)eps(l))) / (alpha-1),
    an identity since the binomial weights sum to 1 (no cancellation).

    Parameters
    ----------
    alpha : int
        RDP order, >= 2.
    gamma : float, str or mpmath.mpf
        Sampling probability in [0, 1].
    log_moment : callable
        ``l -> (l-1) * eps_M(l)`` of the base mechanism as an mpf at the current precision.
    dps : int, optional
        Decimal digits (default 50).

    Returns
    -------
    mpmath.mpf
        A lower bound for every mechanism with this base RDP curve, and the exact
        RDP (an upper bound too) when the base mechanism meets Thm 2.3.4's condition
        (Gaussian, Laplace by Prop 2.3.6; binary randomized response as well,
        since E_Q[(P/Q-1)^l] = (2p-1)^l ((1-p)^(1-l) - p^(1-l)) >= 0 for odd l).
    """
    alpha = _int_alpha(alpha)
    with mp.workdps(dps + 10):
        gamma = _mpf(gamma)
        _check_gamma(gamma)
        s, _ = _binomial_sums(alpha, gamma, log_moment)
        out = mp.log1p(s) / (alpha - 1)
    return +out


def general_bound(alpha, gamma, log_moment, dps=DPS):
    """General upper bound for any mechanism (thesis Thm 2.3.1), integer alpha >= 2.

    eps(alpha) <= 1/(alpha-1) log{ (1-g)^(alpha-1)(alpha g - g + 1) + C(alpha,2) g^2 (1-g)^(alpha-2) e^{eps(2)}
                  + 3 sum_{l=3}^{alpha} C(alpha,l)(1-g)^(alpha-l) g^l e^{(l-1)eps(l)} },
    evaluated as log1p(sum_{l>=2} c_l expm1(m_l) + 2 sum_{l>=3} c_l e^{m_l}) / (alpha-1).

    Parameters and return value as in :func:`tight_bound` (an upper bound).
    """
    alpha = _int_alpha(alpha)
    with mp.workdps(dps + 10):
        gamma = _mpf(gamma)
        _check_gamma(gamma)
        s, s3 = _binomial_sums(alpha, gamma, log_moment)
        out = mp.log1p(s + 2 * s3) / (alpha - 1)
    return +out


def gaussian_log_moment(sigma, sensitivity=1):
    """Return l -> (l-1) eps(l) = l (l-1) s^2 / (2 sigma^2) (Mironov 2017, Table II)."""
    def log_moment(l):
        return l * (_mpf(l) - 1) * _mpf(sensitivity) ** 2 / (2 * _mpf(sigma) ** 2)
    return log_moment


def laplace_log_moment(b):
    """Return l -> (l-1) eps(l) for Laplace(scale b), sensitivity 1 (Mironov 2017, Table II).

    (l-1) eps(l) = log( l/(2l-1) exp((l-1)/b) + (l-1)/(2l-1) exp(-l/b) ), real l >= 1.
    """
    def log_moment(l):
        l, bb = _mpf(l), _mpf(b)
        return mp.log(l / (2 * l - 1) * mp.exp((l - 1) / bb) + (l - 1) / (2 * l - 1) * mp.exp(-l / bb))
    return log_moment


def randomized_response_log_moment(p):
    """Return l -> (l-1) eps(l) = log(p^l (1-p)^(1-l) + (1-p)^l p^(1-l)) (Mironov 2017, Table II)."""
    def log_moment(l):
        l, pp = _mpf(l), _mpf(p)
        if pp in (0, 1):
            return mp.inf if l > 1 else mp.mpf(0)
        return mp.log(pp**l * (1 - pp) ** (1 - l) + (1 - pp) ** l * pp ** (1 - l))
    return log_moment


def base_rdp(alpha, log_moment, dps=DPS):
    """eps(alpha) = log_moment(alpha) / (alpha - 1) of the base mechanism, real alpha > 1."""
    with mp.workdps(dps):
        alpha = _mpf(alpha)
        return log_moment(alpha) / (alpha - 1)


def _h(u, beta, dps):
    """h_beta(u) = (1+u)^beta - 1 - beta u, with enough extra digits to absorb the cancellation."""
    if u == 0:
        return mp.mpf(0)
    extra = 15 + int(0.61 * max(0, -mp.mag(u)) + 0.31 * max(0, -mp.mag(beta)) + 0.31 * max(0, -mp.mag(beta - 1)))
    with mp.workdps(dps + extra):
        v = mp.power(1 + u, beta) - 1 - beta * u
    return max(v, mp.mpf(0))


def _integrate(f, points, dps):
    """Sum of tanh-sinh quadratures of f over consecutive points; returns (value, error estimate)."""
    total, err = [], []
    for a, b in zip(points[:-1], points[1:]):
        v, e = mp.quad(f, [a, b], error=True, maxdegree=10)
        total.append(v)
        err.append(e)
    return mp.fsum(total), mp.fsum(err)


def _rdp_from_integral(alpha, q, f_of_beta, points_of_beta, reverse, dps, return_error):
    with mp.workdps(dps + 10):
        alpha, q = _mpf(alpha), _mpf(q)
        if not alpha > 1:
            raise ValueError(f"`alpha` must be > 1 (real); got {alpha}.")
        _check_gamma(q)
        if q == 0:
            return (mp.mpf(0), mp.mpf(0)) if return_error else mp.mpf(0)
        beta = 1 - alpha if reverse else alpha
        val, err = _integrate(f_of_beta(beta), points_of_beta(beta), dps + 10)
        out, out_err = mp.log1p(val) / (alpha - 1), err / (1 + val) / (alpha - 1)
    return (+out, +out_err) if return_error else +out


def subsampled_gaussian_rdp_integral(alpha, q, sigma, dps=DPS, return_error=False):
    """RDP of the Poisson-subsampled Gaussian, D_alpha(mu || mu0), by direct quadrature.

    mu0 = N(0, sigma^2), mu = (1-q) N(0, sigma^2) + q N(1, sigma^2) (sensitivity 1);
    returns log(A_alpha) / (alpha-1) with A_alpha = E_{mu0}[(mu/mu0)^alpha] (Mironov,
    Talwar & Zhang 2019), computed as log1p(E_{mu0}[h_alpha(u)]) / (alpha-1).

    Parameters
    ----------
    alpha : float, str or mpmath.mpf
        Real order > 1.
    q : float, str or mpmath.mpf
        Sampling probability in [0, 1].
    sigma : float, str or mpmath.mpf
        Noise multiplier (> 0); tested for 0.1 <= sigma <= 100.
    dps : int, optional
        Decimal digits (default 50).
    return_error : bool, optional
        Also return quadrature's error estimate propagated to the RDP value.

    Returns
    -------
    mpmath.mpf or (mpmath.mpf, mpmath.mpf)
        The exact RDP in this direction (the larger one, see module notes).
    """
    return _gaussian(alpha, q, sigma, False, dps, return_error)


def subsampled_gaussian_rdp_integral_reverse(alpha, q, sigma, dps=DPS, return_error=False):
    """Reverse direction D_alpha(mu0 || mu) = log(B_alpha)/(alpha-1), B_alpha = E_mu[(mu0/mu)^alpha].

    Same parameters as :func:`subsampled_gaussian_rdp_integral`.
    """
    return _gaussian(alpha, q, sigma, True, dps, return_error)


def _gaussian(alpha, q, sigma, reverse, dps, return_error):
    with mp.workdps(dps + 10):
        s, qq, aa = _mpf(sigma), _mpf(q), _mpf(alpha)
        if not s > 0:
            raise ValueError(f"`sigma` must be > 0; got {sigma}.")
        norm = 1 / (s * mp.sqrt(2 * mp.pi))

    def f_of_beta(beta):
        def f(x):
            u = qq * mp.expm1((2 * x - 1) / (2 * s**2))
            return norm * mp.exp(-x * x / (2 * s**2)) * _h(u, beta, mp.mp.dps)
        return f

    def points_of_beta(beta):
        # Mass sits in Gaussian-shaped lobes of width sigma centred between
        # min(0, beta) and max(2, beta); scan log f on a sigma/2 grid (20 digits)
        # and keep every 4th grid point (spacing 2 sigma) where log f > max - 130.
        with mp.workdps(20):
            lo = min(0, int(mp.floor(beta))) - 20 * s - 1
            hi = max(2, int(mp.ceil(beta))) + 20 * s + 1
            n = int(mp.ceil((hi - lo) / (s / 2)))
            grid = [lo + (hi - lo) * i / n for i in range(n + 1)]
            f = f_of_beta(beta)
            logs = [mp.log(v) if v > 0 else -mp.inf for v in (f(x) for x in grid)]
        top = max(logs)
        keep = [grid[i] for i in range(0, n + 1, 4)
                if max(logs[max(0, i - 4):i + 5]) > top - 130]
        must = [mp.mpf(0), mp.mpf(0.5), mp.mpf(1), aa, 1 - aa]
        if qq < 1:
            must.append(s**2 * mp.log((1 - qq) / qq) + mp.mpf(0.5))  # crossing (1-q) = q r
        pts = sorted(set(p for p in must + keep if lo < p < hi))
        return [-mp.inf] + pts + [mp.inf]

    return _rdp_from_integral(alpha, q, f_of_beta, points_of_beta, reverse, dps, return_error)


def subsampled_laplace_rdp_integral(alpha, q, b, dps=DPS, return_error=False):
    """RDP of the Poisson-subsampled Laplace mechanism, D_alpha(mu || mu0), by direct quadrature.

    mu0 = Laplace(0, b), mu = (1-q) Laplace(0, b) + q Laplace(1, b) (sensitivity 1).
    r = mu1/mu0 = exp((|x| - |x-1|)/b) is constant outside [0, 1]; the integral is
    split at the kinks 0 and 1, at the zero x = 1/2 of h, and geometrically toward
    them (boundary layers of width ~ b / (2 alpha)).

    Parameters
    ----------
    alpha : float, str or mpmath.mpf
        Real order > 1.
    q : float, str or mpmath.mpf
        Sampling probability in [0, 1].
    b : float, str or mpmath.mpf
        Laplace scale (> 0); tested for 0.1 <= b <= 100.
    dps, return_error
        As in :func:`subsampled_gaussian_rdp_integral`.

    Returns
    -------
    mpmath.mpf or (mpmath.mpf, mpmath.mpf)
        Exact RDP in this direction; equals :func:`tight_bound` with
        :func:`laplace_log_moment` at integer alpha.
    """
    return _laplace(alpha, q, b, False, dps, return_error)


def subsampled_laplace_rdp_integral_reverse(alpha, q, b, dps=DPS, return_error=False):
    """Reverse direction D_alpha(mu0 || mu) for the subsampled Laplace mechanism (see above)."""
    return _laplace(alpha, q, b, True, dps, return_error)


def _laplace(alpha, q, b, reverse, dps, return_error):
    with mp.workdps(dps + 10):
        bb, qq, aa = _mpf(b), _mpf(q), _mpf(alpha)
        if not bb > 0:
            raise ValueError(f"`b` must be > 0; got {b}.")

    def f_of_beta(beta):
        def f(x):
            t = (abs(x) - abs(x - 1)) / bb
            return mp.exp(-abs(x) / bb) / (2 * bb) * _h(qq * mp.expm1(t), beta, mp.mp.dps)
        return f

    def points_of_beta(beta):
        width = bb / (4 * max(abs(beta), 1) + 4)
        j = 0 if width >= 0.25 else int(mp.ceil(mp.log(mp.mpf(0.25) / width, 2)))
        offs = [mp.mpf(0.5) / 2**k for k in range(1, j + 2)]
        pts = {mp.mpf(0), mp.mpf(0.5), mp.mpf(1)}
        for a in (0, 0.5, 1):
            pts.update(a + o for o in offs if 0 < a + o < 1)
            pts.update(a - o for o in offs if 0 < a - o < 1)
        return [-mp.inf] + sorted(pts) + [mp.inf]

    return _rdp_from_integral(alpha, q, f_of_beta, points_of_beta, reverse, dps, return_error)


def subsampled_randomized_response_rdp_exact(alpha, q, p, reverse=False, dps=DPS):
    """Exact RDP of Poisson-subsampled binary randomized response (two-point sums, no quadrature).

    mu0 = (1-p, p), mu1 = (p, 1-p) (report the true bit with probability p),
    mu = (1-q) mu0 + q mu1; forward D_alpha(mu || mu0), reverse D_alpha(mu0 || mu).
    Real alpha > 1.  Equals :func:`tight_bound` with
    :func:`randomized_response_log_moment` at integer alpha (forward).
    """
    with mp.workdps(dps + 10):
        alpha, q, p = _mpf(alpha), _mpf(q), _mpf(p)
        _check_gamma(q)
        if not (alpha > 1 and 0 < p < 1):
            raise ValueError(f"need alpha > 1 and 0 < p < 1; got {alpha}, {p}.")
        beta = 1 - alpha if reverse else alpha
        mu0, mu1 = (1 - p, p), (p, 1 - p)
        s = mp.fsum(m0 * _h(q * (m1 / m0 - 1), beta, mp.mp.dps) for m0, m1 in zip(mu0, mu1))
        out = mp.log1p(s) / (alpha - 1)
    return +out
