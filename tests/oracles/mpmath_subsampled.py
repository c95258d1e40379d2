"""mpmath oracles for the RDP of Poisson-subsampled mechanisms (add/remove relation).

Independent of the library: mpmath only (``dps`` >= 50 digits, unbounded exponent
range), plus numpy to place quadrature breakpoints.  Sources: Zhu & Wang 2019,
"Poisson subsampled Renyi differential privacy" = Ch. 2 of Y. Zhu's thesis
(``/work/shared/papers/004_...txt``): Thm 2.3.1 (general upper bound), Thm 2.3.2
(lower bound), Thm 2.3.4 (tight under the Pearson-Vajda condition; Prop 2.3.6:
Gaussian, Laplace); base RDP: Mironov 2017, Table II (thesis Sec 2.4); integrals:
Mironov, Talwar & Zhang 2019, A = E_{mu0}[(mu/mu0)^alpha], B = E_mu[(mu0/mu)^alpha].

Notation: q = gamma sampling probability, mu0 base output law, mu1 with the extra
record, mu = (1-q) mu0 + q mu1, r = mu1/mu0, u = q (r-1) = mu/mu0 - 1.
``log_moment(l)`` returns (l-1) eps(l) of the base mechanism as an mpf.  Floats
are converted exactly (binary value): pass str or mpf for decimal parameters.
Since E_{mu0}[u] = 0: A - 1 = E_{mu0}[h_alpha(u)], B - 1 = E_{mu0}[h_{1-alpha}(u)],
h_b(u) = (1+u)^b - 1 - b u >= 0, evaluated with extra digits for small u; the
result log1p(.)/(alpha-1) keeps full relative accuracy even at q = 1e-9.

Verified when written (and reported back):
* forward integral == ``tight_bound`` at integer alpha to all 50 digits for sigma,
  b in [0.1, 100], q in [1e-9, 1], alpha <= 256; Gauss-Legendre and tanh-sinh
  agree to 1e-50 at fractional alpha in both directions.
* reverse <= forward in all 1078 Gaussian/Laplace cases tried (real alpha in
  [1.001, 255.5]) and for binary randomized response; equal at q = 1.
* dp_accounting 0.6.0 ``_compute_log_a_frac`` sums |binomial| terms, an upper
  bound at fractional alpha: q = 0.01, sigma = 2.5, 50 steps, alpha = 1.5 gives
  6.70580e-4 there; exact is 6.50071e-4 (as TF Privacy and Opacus).
* ``general_bound`` at gamma = 1 is eps(alpha) + log(3)/(alpha-1) (Thm 2.3.1's
  factor 3 does not vanish without subsampling).

Speed: ``tight_bound`` ~5 ms at alpha = 32, ~40 ms at 256, ~2 s at 10^4 (slow).
Integrals are slow: 0.1-1 s a call, +1-2 s on the first call of a process
(Gauss-Legendre nodes); cost grows with alpha / sigma.
"""

import mpmath as mp
import numpy as np

DPS = 50
PIECE = 6  # Gaussian: quadrature pieces are at most PIECE * sigma wide


def _mpf(x):
    return x if isinstance(x, mp.mpf) else mp.mpf(x)


def _check_q(q):
    if not 0 <= q <= 1:
        raise ValueError(f"sampling probability must be in [0, 1]; got {q}.")


def _binomial_sums(alpha, g, log_moment):
    """(sum_{l>=2} c_l expm1(m_l), sum_{l>=3} c_l e^{m_l}), c_l = C(alpha,l) (1-g)^(alpha-l) g^l."""
    s2, s3 = [], []
    for l in range(2, alpha + 1):  # c_l = c_{l-1} (alpha-l+1)/l g/(1-g)
        if g == 1:
            c = mp.mpf(1 if l == alpha else 0)  # only l = alpha survives (avoids 0 * inf)
        elif l == 2:
            c = mp.binomial(alpha, 2) * (1 - g) ** (alpha - 2) * g**2
        else:
            c = c * (alpha - l + 1) / l * g / (1 - g)
        if c == 0:
            continue
        m = log_moment(l)
        s2.append(c * mp.expm1(m))
        if l >= 3:
            s3.append(c * mp.exp(m))
    return mp.fsum(s2), mp.fsum(s3)


def _bound(alpha, gamma, log_moment, dps, factor3):
    if int(alpha) != alpha or alpha < 2:
        raise ValueError(f"`alpha` must be an integer >= 2; got {alpha}.")
    with mp.workdps(dps + 10):
        g = _mpf(gamma)
        _check_q(g)
        if g == 0:
            return mp.mpf(0)
        s2, s3 = _binomial_sums(int(alpha), g, log_moment)
        out = mp.log1p(s2 + 2 * s3 if factor3 else s2) / (int(alpha) - 1)
    return +out


def tight_bound(alpha, gamma, log_moment, dps=DPS):
    """RDP of the Poisson-subsampled mechanism at integer alpha (thesis Thm 2.3.2 = Thm 2.3.4).

    eps(alpha) = 1/(alpha-1) log{ (1-g)^(alpha-1) (alpha g - g + 1)
                 + sum_{l=2}^{alpha} C(alpha,l) (1-g)^(alpha-l) g^l exp((l-1) eps(l)) },
    evaluated as log1p(sum_{l>=2} C(alpha,l)(1-g)^(alpha-l) g^l expm1((l-1) eps(l))) / (alpha-1)
    (identical, as the binomial weights sum to 1; no cancellation).

    Parameters
    ----------
    alpha : int
        Order >= 2.
    gamma : float, str or mpmath.mpf
        Sampling probability in [0, 1].
    log_moment : callable
        ``l -> (l-1) eps_M(l)`` of the base mechanism (mpf at the current precision).
    dps : int, optional
        Decimal digits (default 50).

    Returns
    -------
    mpmath.mpf
        A lower bound for any mechanism with this base RDP curve; exact (so also
        an upper bound) under Thm 2.3.4's condition: Gaussian, Laplace (Prop 2.3.6),
        binary randomized response (E_Q[(P/Q-1)^l] = (2p-1)^l ((1-p)^(1-l) - p^(1-l)) >= 0).
    """
    return _bound(alpha, gamma, log_moment, dps, factor3=False)


def general_bound(alpha, gamma, log_moment, dps=DPS):
    """Upper bound for any mechanism at integer alpha >= 2 (thesis Thm 2.3.1).

    eps(alpha) <= 1/(alpha-1) log{ (1-g)^(alpha-1) (alpha g - g + 1) + C(alpha,2) g^2 (1-g)^(alpha-2) e^{eps(2)}
                  + 3 sum_{l=3}^{alpha} C(alpha,l) (1-g)^(alpha-l) g^l e^{(l-1) eps(l)} },
    evaluated as log1p(sum_{l>=2} c_l expm1(m_l) + 2 sum_{l>=3} c_l e^{m_l}) / (alpha-1).
    Parameters as in :func:`tight_bound`; returns an upper bound (mpf).
    """
    return _bound(alpha, gamma, log_moment, dps, factor3=True)


def gaussian_log_moment(sigma, sensitivity=1):
    """Return ``l -> (l-1) eps(l) = l (l-1) sensitivity^2 / (2 sigma^2)`` (Mironov 2017)."""
    return lambda l: l * (_mpf(l) - 1) * _mpf(sensitivity) ** 2 / (2 * _mpf(sigma) ** 2)


def laplace_log_moment(b):
    """Return ``l -> (l-1) eps(l)`` of Laplace(scale b), sensitivity 1 (Mironov 2017), real l >= 1.

    (l-1) eps(l) = log( l/(2l-1) exp((l-1)/b) + (l-1)/(2l-1) exp(-l/b) ).
    """
    def log_moment(l):
        l, bb = _mpf(l), _mpf(b)
        return mp.log(l / (2 * l - 1) * mp.exp((l - 1) / bb) + (l - 1) / (2 * l - 1) * mp.exp(-l / bb))
    return log_moment


def randomized_response_log_moment(p):
    """Return ``l -> (l-1) eps(l) = log(p^l (1-p)^(1-l) + (1-p)^l p^(1-l))`` (Mironov 2017)."""
    def log_moment(l):
        l, pp = _mpf(l), _mpf(p)
        if pp in (0, 1):
            return mp.inf if l > 1 else mp.mpf(0)
        return mp.log(pp**l * (1 - pp) ** (1 - l) + (1 - pp) ** l * pp ** (1 - l))
    return log_moment


def base_rdp(alpha, log_moment, dps=DPS):
    """Base-mechanism RDP ``log_moment(alpha) / (alpha - 1)`` at real alpha > 1 (mpf)."""
    with mp.workdps(dps):
        alpha = _mpf(alpha)
        return log_moment(alpha) / (alpha - 1)


def _h(q, log_r, beta, dps):
    """h_beta(u) = (1+u)^beta - 1 - beta u at u = q expm1(log_r), with extra digits for the cancellation.

    1 + u is formed as 1 + u for |u| < 1/2 (exact at the raised precision) and as
    (1-q) + q r otherwise (no cancellation when r -> 0 and q -> 1).
    """
    u = q * mp.expm1(log_r)
    if u == 0:
        return mp.mpf(0)
    extra = 15 + int(0.61 * max(0, -mp.mag(u)) + 0.31 * max(0, -mp.mag(beta)) + 0.31 * max(0, -mp.mag(beta - 1)))
    with mp.workdps(dps + extra):
        onep = 1 + u if abs(u) < 0.5 else (1 - q) + q * mp.exp(log_r)
        v = mp.power(onep, beta) - 1 - beta * u
    return max(v, mp.mpf(0))


def _log_h_float(t, q, beta):
    """Rough float64 log h_beta(q expm1(t)), only used to place breakpoints."""
    with np.errstate(all="ignore"):
        u = q * np.expm1(np.minimum(t, 30))
        l1 = np.where(t > 30, t + np.log(q) + np.log1p((1 - q) * np.exp(-t) / q),  # log(1 + u)
                      np.where(u > -0.5, np.log1p(u), np.logaddexp(np.log1p(-q), np.log(q) + t)))
        big = beta * l1
        sign = np.where(l1 > 30, np.sign(beta), np.sign(1 + beta * u))  # of 1 + beta u
        log_b = np.where(l1 > 30, np.log(abs(beta)) + l1, np.log(np.abs(1 + beta * u)))
        exact = np.where(sign > 0, big + np.log1p(-np.exp(log_b - big)), np.logaddexp(big, log_b))
        out = np.where(np.abs(u) < 1e-3, np.log(abs(beta * (beta - 1)) / 2) + 2 * np.log(np.abs(u)), exact)
    return np.where(np.isnan(out), -np.inf, out)


def _rdp_from_integral(alpha, q, make_f, make_points, reverse, dps, return_error):
    """log1p(int mu0 h_beta(u)) / (alpha-1), beta = alpha or 1 - alpha (reverse).

    mp.quad stops on an *absolute* error 2^-prec, so f is scaled by exp(-log_scale)
    (~ 1 / max f).  Gauss-Legendre on finite pieces, tanh-sinh on the two infinite ones.
    """
    with mp.workdps(dps + 10):
        alpha, q = _mpf(alpha), _mpf(q)
        if not alpha > 1:
            raise ValueError(f"`alpha` must be a real number > 1; got {alpha}.")
        _check_q(q)
        if q == 0:
            return (mp.mpf(0), mp.mpf(0)) if return_error else mp.mpf(0)
        f = make_f(1 - alpha if reverse else alpha)
        points, log_scale = make_points(1 - alpha if reverse else alpha, f)
        scale = mp.exp(log_scale)
        vals, errs = [], []
        for a, b in zip(points[:-1], points[1:]):
            method = "tanh-sinh" if mp.isinf(a) or mp.isinf(b) else "gauss-legendre"
            v, e = mp.quad(lambda x: f(x) / scale, [a, b], error=True, method=method, maxdegree=8)
            vals.append(v)
            errs.append(e)
        val, err = mp.fsum(vals) * scale, mp.fsum(errs) * scale
        out, out_err = mp.log1p(val) / (alpha - 1), err / (1 + val) / (alpha - 1)
        if not out_err <= mp.mpf(10) ** (25 - dps) * out:  # never return a silently poor value
            raise ArithmeticError(f"quadrature error {mp.nstr(out_err, 3)} too large for RDP "
                                  f"{mp.nstr(out, 10)} (alpha={alpha}, q={q}, reverse={reverse}).")
    return (+out, +out_err) if return_error else +out


def subsampled_gaussian_rdp_integral(alpha, q, sigma, dps=DPS, return_error=False):
    """RDP of the Poisson-subsampled Gaussian, D_alpha(mu || mu0), by direct quadrature.

    mu0 = N(0, sigma^2), mu = (1-q) N(0, sigma^2) + q N(1, sigma^2) (sensitivity 1);
    returns log(A_alpha)/(alpha-1), A_alpha = E_{mu0}[(mu/mu0)^alpha].

    Parameters
    ----------
    alpha, q, sigma : float, str or mpmath.mpf
        Real order > 1; sampling probability in [0, 1]; noise multiplier > 0
        (verified for 0.1 <= sigma <= 100).
    dps : int, optional
        Decimal digits (default 50).
    return_error : bool, optional
        Also return the quadrature error estimate, propagated to the RDP value.

    Returns
    -------
    mpmath.mpf or (mpmath.mpf, mpmath.mpf)
        The exact RDP in this direction, the larger one (module notes).
    """
    return _gaussian(alpha, q, sigma, False, dps, return_error)


def subsampled_gaussian_rdp_integral_reverse(alpha, q, sigma, dps=DPS, return_error=False):
    """Reverse direction D_alpha(mu0 || mu) = log(B_alpha)/(alpha-1), B_alpha = E_mu[(mu0/mu)^alpha].

    Parameters and returns as :func:`subsampled_gaussian_rdp_integral`.
    """
    return _gaussian(alpha, q, sigma, True, dps, return_error)


def _gaussian(alpha, q, sigma, reverse, dps, return_error):
    with mp.workdps(dps + 10):
        s, qq = _mpf(sigma), _mpf(q)
        if not s > 0:
            raise ValueError(f"`sigma` must be > 0; got {sigma}.")
        norm = 1 / (s * mp.sqrt(2 * mp.pi))

    def make_f(beta):
        return lambda x: norm * mp.exp(-x * x / (2 * s**2)) * _h(qq, (2 * x - 1) / (2 * s**2), beta, mp.mp.dps)

    def make_points(beta, f):
        # Lobes of width ~sigma lie in [min(0, beta), max(2, beta)]: scan log f in
        # float64 on a sigma/4 grid, keep runs within 140 of the maximum, cut them
        # into pieces <= PIECE sigma.  1 + u vanishes at distance pi sigma^2 above
        # the crossing z0 ((1-q) = q r): refine geometrically toward z0.
        b, sf, s2 = float(beta), float(s), float(s) ** 2
        lo, hi = min(0.0, b) - 20 * sf - 1, max(2.0, b) + 20 * sf + 1
        x = np.linspace(lo, hi, int(np.ceil((hi - lo) / (sf / 4))) + 1)
        logf = -x * x / (2 * s2) + _log_h_float((2 * x - 1) / (2 * s2), float(qq), b)
        pts = [mp.mpf(0), mp.mpf(0.5), mp.mpf(1)]
        if qq < 1:
            z0 = s**2 * mp.log((1 - qq) / qq) + mp.mpf(0.5)
            pts += [z0 + sg * mp.pi * s**2 * 2**k for k in range(-1, 40)
                    if 2**k * mp.pi * s**2 < PIECE * s for sg in (-1, 0, 1)]
        idx = np.flatnonzero(logf > np.max(logf) - 140)
        for run in np.split(idx, np.flatnonzero(np.diff(idx) > 1) + 1):
            a, c = x[max(run[0] - 1, 0)], x[min(run[-1] + 1, len(x) - 1)]
            pts += [mp.mpf(v) for v in np.linspace(a, c, max(1, int(np.ceil((c - a) / (PIECE * sf)))) + 1)]
        pts = sorted(set(p for p in pts if lo < p < hi))
        with mp.workdps(20):
            top = max(mp.log(v) for v in (f(p) for p in pts) if v > 0)
        return [-mp.inf] + pts + [mp.inf], top

    return _rdp_from_integral(alpha, q, make_f, make_points, reverse, dps, return_error)


def subsampled_laplace_rdp_integral(alpha, q, b, dps=DPS, return_error=False):
    """RDP of the Poisson-subsampled Laplace mechanism, D_alpha(mu || mu0), by direct quadrature.

    mu0 = Laplace(0, b), mu = (1-q) Laplace(0, b) + q Laplace(1, b) (sensitivity 1).
    r = exp((|x| - |x-1|)/b) is constant outside [0, 1]; split at the kinks 0, 1,
    at 1/2, geometrically toward 0 and 1 (boundary layers ~ b / (2|beta|)) and
    around the crossing (1-q) = q r.  Parameters and returns as
    :func:`subsampled_gaussian_rdp_integral`, with ``b`` the Laplace scale > 0
    (verified for 0.1 <= b <= 100); equals :func:`tight_bound` with
    :func:`laplace_log_moment` at integer alpha.
    """
    return _laplace(alpha, q, b, False, dps, return_error)


def subsampled_laplace_rdp_integral_reverse(alpha, q, b, dps=DPS, return_error=False):
    """Reverse direction D_alpha(mu0 || mu) of :func:`subsampled_laplace_rdp_integral`."""
    return _laplace(alpha, q, b, True, dps, return_error)


def _laplace(alpha, q, b, reverse, dps, return_error):
    with mp.workdps(dps + 10):
        bb, qq = _mpf(b), _mpf(q)
        if not bb > 0:
            raise ValueError(f"`b` must be > 0; got {b}.")

    def make_f(beta):
        return lambda x: mp.exp(-abs(x) / bb) / (2 * bb) * _h(qq, (abs(x) - abs(x - 1)) / bb, beta, mp.mp.dps)

    def make_points(beta, f):
        width = bb / (4 * abs(beta) + 4)
        j = 0 if width >= 0.25 else int(mp.ceil(mp.log(mp.mpf(0.25) / width, 2)))
        pts = {mp.mpf(0), mp.mpf(0.5), mp.mpf(1)}
        pts.update(mp.mpf(0.5) / 2**k for k in range(1, j + 2))
        pts.update(1 - mp.mpf(0.5) / 2**k for k in range(1, j + 2))
        if qq < 1:  # 1 + u vanishes at distance pi b / 2 above the crossing xc
            xc, d = mp.mpf(0.5) + bb / 2 * mp.log((1 - qq) / qq), mp.pi * bb / 2
            pts.update(x for x in [xc] + [xc + sg * d * 2**k for k in range(-1, 6) for sg in (-1, 1)]
                       if 0 < x < 1)
        pts.update(p for k in range(5) for p in (-bb * 4**k, 1 + bb * 4**k))  # exp(-|x|/b) tails
        pts = sorted(pts)
        with mp.workdps(20):  # the integrand is largest at 0, 1/2 or 1
            top = max(mp.log(v) for v in (f(x) for x in pts) if v > 0)
        return [-mp.inf] + pts + [mp.inf], top

    return _rdp_from_integral(alpha, q, make_f, make_points, reverse, dps, return_error)


def subsampled_randomized_response_rdp_exact(alpha, q, p, reverse=False, dps=DPS):
    """Exact RDP of Poisson-subsampled binary randomized response (two-point sums).

    mu0 = (1-p, p), mu1 = (p, 1-p) (the true bit is reported with probability p),
    mu = (1-q) mu0 + q mu1; forward D_alpha(mu || mu0), reverse D_alpha(mu0 || mu),
    real alpha > 1.  Forward equals :func:`tight_bound` with
    :func:`randomized_response_log_moment` at integer alpha.  Returns an mpf.
    """
    with mp.workdps(dps + 10):
        alpha, q, p = _mpf(alpha), _mpf(q), _mpf(p)
        _check_q(q)
        if not (alpha > 1 and 0 < p < 1):
            raise ValueError(f"need alpha > 1 and 0 < p < 1; got {alpha}, {p}.")
        beta = 1 - alpha if reverse else alpha
        s = mp.fsum(m0 * _h(q, mp.log(m1 / m0), beta, mp.mp.dps) for m0, m1 in ((1 - p, p), (p, 1 - p)))
        out = mp.log1p(s) / (alpha - 1)
    return +out
