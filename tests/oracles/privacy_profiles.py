"""High-precision oracles for exact privacy profiles ``delta(epsilon)`` and log moment generating functions.

A *test oracle*: independent of the library code in ``mechanisms/`` and ``accountants/``; mpmath only (numpy
is not used). Every profile is the hockey-stick divergence of a dominating pair (P, Q) written as an
expectation over the privacy loss ``L = log(p/q)`` under P (thesis Lemma 3.1.4; Balle et al. 2018)::

    delta(epsilon) = sum_o (P(o) - e^epsilon Q(o))_+ = E_P[(1 - e^(epsilon - L))_+],

valid for every real epsilon (negative ones are used inside compositions). Composition adds independent losses
(thesis Thm 3.3.4). What each function computes, and how:

* :func:`discrete_profile` -- losses with finitely many values (randomized response, pure DP, subsampled
  randomized response): exact enumeration of the composed loss (binomial counts per two-point pair).
* :func:`gaussian_mixture_profile` -- Gaussians composed with discrete losses: exact sum over the discrete
  outcomes of Gaussian profiles, ``delta = sum_k w_k delta_G(epsilon - c_k)`` (Balle & Wang 2018, Thm 8 for
  ``delta_G``, from :mod:`tests.oracles.analytic_gaussian`).
* :func:`laplace_profile` -- compositions of a few Laplace mechanisms, in closed form: each Laplace loss is
  ``-t`` w.p. ``e^-t / 2``, ``+t`` w.p. ``1/2`` and has density ``e^((l - t)/2) / 4`` on (-t, t); a sum of the
  continuous parts has density ``e^(l/2)`` times a sum of uniform densities (a spline with exact
  antiderivatives), so every term is integrated exactly.
* :func:`subsampled_gaussian_profile` -- the Poisson-subsampled Gaussian (sensitivity 1) at count 1 in closed
  form (the likelihood ratio is monotone) and at count 2 by one mpmath integral over the first output of the
  closed form; remove pair ``((1-q) N(0,s^2) + q N(1,s^2), N(0,s^2))``, add pair
  ``(N(0,s^2), (1-q) N(0,s^2) + q N(1,s^2))``, delta = the larger of the two (thesis Thm 3.3.5).
* :func:`laplace_log_mgf`, :func:`gaussian_log_mgf`, :func:`subsampled_log_mgf` -- ``E_P[e^(sL)]`` for complex
  ``s`` by mpmath quadrature over the *output space* (densities written out directly, not from the privacy
  loss distribution), so they check closed forms and the library's quadrature alike.

Self-checks (exact values by hand: one Laplace has ``delta(eps) = 1 - e^((eps - t)/2)`` on [0, t]; pure DP
composed twice at eps = E has delta = p*^2 (1 - e^-E), p* = e^E / (1 + e^E)):

>>> import mpmath as mp
>>> float(laplace_profile(0.3, [1.0]) - (1 - mp.exp((0.3 - 1.0) / 2)))
0.0
>>> x = float(discrete_profile(1.0, [(rr_pair(1.0), 2)]))
>>> abs(x - (mp.e / (1 + mp.e)) ** 2 * (1 - mp.exp(-1))) < 1e-40
True
"""

import functools
import itertools

import mpmath as mp

from tests.oracles.analytic_gaussian import gaussian_delta

DPS = 50

__all__ = [
    "DPS",
    "rr_pair",
    "pure_dp_pair",
    "subsampled_rr_pairs",
    "discrete_loss",
    "discrete_profile",
    "gaussian_mixture_profile",
    "laplace_profile",
    "subsampled_gaussian_profile",
    "subsampled_gaussian_delta_direction",
    "gaussian_log_mgf",
    "laplace_log_mgf",
    "subsampled_log_mgf",
]


def _mpf(x):
    return x if isinstance(x, mp.mpf) else mp.mpf(x)


# --------------------------------------------------------------------------- discrete pairs
def rr_pair(epsilon):
    """Randomized response pair at loss ``+-epsilon``: outcomes as ``(P-mass, Q-mass)`` with
    ``P = (p*, 1 - p*)``, ``Q = (1 - p*, p*)``, ``p* = e^eps / (1 + e^eps)`` (Kairouz et al. 2015)."""
    e = _mpf(epsilon)
    p = 1 / (1 + mp.exp(-e))
    return ((p, 1 - p), (1 - p, p))


def pure_dp_pair(epsilon):
    """Same as :func:`rr_pair`: randomized response dominates every epsilon-DP mechanism."""
    return rr_pair(epsilon)


def rr_pair_from_p(p):
    """Randomized response reporting the true bit with probability ``p``: ((p, 1-p), (1-p, p))."""
    p = _mpf(p)
    return ((p, 1 - p), (1 - p, p))


def subsampled_rr_pairs(p, q):
    """Poisson-subsampled randomized response (report the bit w.p. ``p``, sampling probability ``q``).

    With A = (p, 1 - p) (with the record) and B = (1 - p, p) (without) the pairs of thesis Thm 3.3.5 are
    remove ``((1-q) B + q A, B)`` and add ``(B, (1-q) B + q A)``. Returns ``(remove, add)``.
    """
    p, q = _mpf(p), _mpf(q)
    a, b = (p, 1 - p), (1 - p, p)
    mix = tuple((1 - q) * bi + q * ai for ai, bi in zip(a, b))
    remove = tuple(zip(mix, b))
    add = tuple(zip(b, mix))
    return remove, add


def discrete_loss(groups, dps=DPS):
    """The composed privacy-loss distribution of ``groups = [(pair, count), ...]`` as ``[(loss, P-prob)]``.

    ``pair`` is a tuple of outcomes ``(P-mass, Q-mass)``, each with both masses > 0. Enumerates the multinomial
    counts of each group exactly (two-outcome pairs: the binomial count of the first outcome).
    """
    with mp.workdps(dps):
        dist = [(mp.mpf(0), mp.mpf(1))]
        for pair, count in groups:
            outcomes = [(_mpf(a), _mpf(b)) for a, b in pair]
            losses = [mp.log(a / b) for a, b in outcomes]
            group = []
            for ks in _compositions(count, len(outcomes)):
                coef = mp.factorial(count)
                prob = mp.mpf(1)
                loss = mp.mpf(0)
                for k, (a, _), l in zip(ks, outcomes, losses):
                    coef /= mp.factorial(k)
                    prob *= a**k
                    loss += k * l
                group.append((loss, coef * prob))
            dist = [(l1 + l2, p1 * p2) for l1, p1 in dist for l2, p2 in group]
        return dist


def _compositions(n, parts):
    if parts == 1:
        yield (n,)
        return
    for k in range(n + 1):
        for rest in _compositions(n - k, parts - 1):
            yield (k,) + rest


def discrete_profile(epsilon, groups, dps=DPS):
    """Exact ``delta(epsilon) = sum_l P(L = l) (1 - e^(epsilon - l))_+`` of a composition of discrete pairs.

    Parameters
    ----------
    epsilon : float, str or mpf
        Any real number.
    groups : list of (pair, count)
        ``pair`` as returned by :func:`rr_pair` / :func:`subsampled_rr_pairs`; ``count`` >= 0.

    Returns
    -------
    mpmath.mpf
        The exact delta of this pair (one direction; randomized response is symmetric).
    """
    with mp.workdps(dps + 20):
        eps = _mpf(epsilon)
        total = mp.fsum(p * -mp.expm1(eps - l) for l, p in discrete_loss(groups, dps + 20) if l > eps)
    with mp.workdps(dps):
        return +total


def gaussian_mixture_profile(epsilon, mu, groups, dps=DPS):
    """Exact delta of a Gaussian pair with parameter ``mu`` composed with discrete pairs ``groups``.

    ``delta = sum_k P(L_d = c_k) delta_G(epsilon - c_k; mu)``, ``delta_G`` the Gaussian profile of Balle & Wang
    2018 Thm 8 at any real epsilon; ``mu = sqrt(sum_i mu_i^2)`` for several Gaussians. Symmetric pairs, so
    one direction is the add-or-remove-one profile.
    """
    with mp.workdps(dps + 20):
        eps, mu = _mpf(epsilon), _mpf(mu)
        total = mp.fsum(p * gaussian_delta(eps - c, mu, dps + 20) for c, p in discrete_loss(groups, dps + 20))
    with mp.workdps(dps):
        return +total


# --------------------------------------------------------------------------- Laplace compositions
def _exp_poly_integral(lam, b, k, lo, hi):
    """``int_lo^hi e^(lam l) (l - b)^k dl`` exactly (repeated integration by parts), ``lam != 0``."""

    def antiderivative(x):
        return mp.exp(lam * x) * mp.fsum(
            (-1) ** j * mp.factorial(k) / mp.factorial(k - j) * (x - b) ** (k - j) / lam ** (j + 1)
            for j in range(k + 1)
        )

    return antiderivative(hi) - antiderivative(lo)


def _continuous_part(c, ts):
    """``int (1 - e^(c - l))_+ e^(l/2) h(l) dl`` with ``h`` the density of a sum of U(-t_i, t_i), i in ts.

    ``h(l) = sum_J (-1)^|J| (l + T - W_J)_+^(m-1) / ((m-1)! prod w_i)``, ``w_i = 2 t_i``, ``T = sum t_i``,
    ``W_J = sum_{j in J} w_j``; each term is integrated exactly over ``[max(c, W_J - T), T]``.
    """
    m = len(ts)
    total_t = mp.fsum(ts)
    widths = [2 * t for t in ts]
    norm = mp.factorial(m - 1) * mp.fprod(widths)
    terms = []
    for size in range(m + 1):
        for subset in itertools.combinations(range(m), size):
            start = mp.fsum(widths[j] for j in subset) - total_t  # where the truncated power switches on
            lo = max(c, start)
            if lo >= total_t:
                continue
            # (e^(l/2) - e^c e^(-l/2)) (l - start)^(m-1) over [lo, T]
            value = _exp_poly_integral(mp.mpf(0.5), start, m - 1, lo, total_t) - mp.exp(c) * _exp_poly_integral(
                mp.mpf(-0.5), start, m - 1, lo, total_t
            )
            terms.append((-1) ** size * value)
    return mp.fsum(terms) / norm


def laplace_profile(epsilon, ts, dps=DPS):
    """Exact delta(epsilon) of Laplace mechanisms composed, ``ts = [sensitivity_i / scale_i, ...]`` (1-4 runs).

    Each run's loss under P: ``-t`` w.p. ``e^-t / 2``, ``+t`` w.p. ``1/2``, density ``e^((l - t)/2) / 4`` on
    (-t, t) (derived from Laplace(D, b) vs Laplace(0, b) with ``t = D / b``). Enumerates which runs fall on an
    atom (3^n cases) and integrates the rest exactly (:func:`_continuous_part`). The pair is symmetric, so this
    is the add-or-remove-one profile.
    """
    if not 1 <= len(ts) <= 4:
        raise ValueError(f"laplace_profile handles 1 to 4 runs; got {len(ts)}.")
    with mp.workdps(2 * dps):
        eps = _mpf(epsilon)
        ts = [_mpf(t) for t in ts]
        total = []
        for kinds in itertools.product((-1, 0, 1), repeat=len(ts)):
            weight, shift, cont = mp.mpf(1), mp.mpf(0), []
            for kind, t in zip(kinds, ts):
                if kind == -1:
                    weight *= mp.exp(-t) / 2
                    shift -= t
                elif kind == 1:
                    weight /= 2
                    shift += t
                else:
                    weight *= t * mp.exp(-t / 2) / 2  # e^((l - t)/2)/4 = e^(l/2) * (t e^(-t/2)/2) * 1/(2t)
                    cont.append(t)
            c = eps - shift
            if cont:
                total.append(weight * _continuous_part(c, cont))
            elif shift > eps:
                total.append(weight * -mp.expm1(c))
        out = mp.fsum(total)
    with mp.workdps(dps):
        return +out


# --------------------------------------------------------------------------- subsampled Gaussian
def _normal_cdf(x):
    return mp.ncdf(x)


def _one_step(e, q, s, direction):
    """``E_A[(1 - e^(e - r))_+] = int (a - e^e b)_+`` for one subsampled-Gaussian pair (A, B), any real e.

    remove: A = (1-q) N(0,s^2) + q N(1,s^2), B = N(0,s^2); A/B = 1 - q + q exp((2x - 1)/(2 s^2)) increases, so
    the set {A/B > e^e} is x > x* with x* = s^2 log((e^e - 1 + q)/q) + 1/2 (all x when e^e <= 1 - q).
    add: A = N(0,s^2), B = the mixture; A/B decreases and {A/B > e^e} is x < x** with
    x** = s^2 log((e^(-e) - 1 + q)/q) + 1/2 (empty when e^(-e) <= 1 - q).
    """
    if direction == "remove":
        excess = mp.exp(e) - 1 + q
        if excess <= 0:
            return -mp.expm1(e)
        x = s**2 * mp.log(excess / q) + mp.mpf(0.5)
        tail0, tail1 = _normal_cdf(-x / s), _normal_cdf(-(x - 1) / s)
        return (1 - q) * tail0 + q * tail1 - mp.exp(e) * tail0
    excess = mp.exp(-e) - 1 + q
    if excess <= 0:
        return mp.mpf(0)
    x = s**2 * mp.log(excess / q) + mp.mpf(0.5)
    head0, head1 = _normal_cdf(x / s), _normal_cdf((x - 1) / s)
    return head0 - mp.exp(e) * ((1 - q) * head0 + q * head1)


def subsampled_gaussian_delta_direction(epsilon, q, sigma, count, direction, dps=30):
    """Exact delta(epsilon) of one direction (``"remove"`` or ``"add"``) of the Poisson-subsampled Gaussian
    (sensitivity 1, noise ``sigma``, sampling probability ``q``) composed ``count`` = 1 or 2 times.

    Count 1 is the closed form of :func:`_one_step`. Count 2 conditions on the first output x:
    ``delta = int a(x) one_step(epsilon - r(x)) dx``, ``r = log(a/b)``, by mpmath quadrature (tanh-sinh on
    pieces one sigma wide around the bulk of ``a``).
    """
    if direction not in ("remove", "add"):
        raise ValueError(f"`direction` must be 'remove' or 'add'; got {direction!r}.")
    if count not in (1, 2):
        raise ValueError(f"`count` must be 1 or 2; got {count}.")
    with mp.workdps(dps + 10):
        eps, q, s = _mpf(epsilon), _mpf(q), _mpf(sigma)
        if count == 1:
            out = _one_step(eps, q, s, direction)
        else:
            norm = 1 / (s * mp.sqrt(2 * mp.pi))

            def n0(x):
                return norm * mp.exp(-x * x / (2 * s * s))

            def log_ratio_mix(x):  # log(mix / N0)
                return mp.log(1 - q + q * mp.exp((2 * x - 1) / (2 * s * s)))

            if direction == "remove":

                def integrand(x):
                    mix = (1 - q) * n0(x) + q * n0(x - 1)
                    return mix * _one_step(eps - log_ratio_mix(x), q, s, direction)
            else:

                def integrand(x):
                    return n0(x) * _one_step(eps + log_ratio_mix(x), q, s, direction)

            # one_step switches form where its excess e^(+-e) - 1 + q crosses zero: a break point there.
            pts = [mp.mpf(0), mp.mpf(1)]
            target = mp.exp(eps) / (1 - q) if direction == "remove" else mp.exp(-eps) / (1 - q)
            if q < 1 and target - 1 + q > 0:
                pts.append(s**2 * mp.log((target - 1 + q) / q) + mp.mpf(0.5))
            span = 12 * s + 2
            pts += [-span + k * s for k in range(int(mp.ceil(2 * span / s)) + 1)]
            pts = sorted(set(x for x in pts if -span <= x <= span))
            out = mp.quad(integrand, [-mp.inf] + pts + [mp.inf], method="gauss-legendre")
    with mp.workdps(dps):
        return +max(out, mp.mpf(0))


def subsampled_gaussian_profile(epsilon, q, sigma, count, dps=30):
    """Add-or-remove-one delta: the larger of the remove and add directions (thesis Thm 3.3.5)."""
    return max(subsampled_gaussian_delta_direction(epsilon, q, sigma, count, d, dps) for d in ("remove", "add"))


# --------------------------------------------------------------------------- log MGFs over the output space
def _oscillation_points(lo, hi, width, r, u):
    """Break points in [lo, hi]: every ``width`` and, for frequency ``u``, where ``u r(x)`` advances by pi."""
    pts = [lo + k * width for k in range(int(mp.ceil((hi - lo) / width)) + 1)]
    if u:
        out = [pts[0]]
        for a, b in zip(pts[:-1], pts[1:]):
            pieces = int(mp.ceil(abs(u) * abs(r(b) - r(a)) / mp.pi)) + 1
            out += [a + (b - a) * j / pieces for j in range(1, pieces + 1)]
        pts = out
    return pts


def gaussian_log_mgf(s, sensitivity, sigma, direction="remove", dps=30):
    """``log E_P[(p/q)^s]`` for P = N(D, sigma^2), Q = N(0, sigma^2) (``remove``), or ``log E_Q[(q/p)^s]``
    (``add``), by quadrature over the output (complex ``s``; principal-branch log of the value)."""
    with mp.workdps(dps):
        s, d, sg = mp.mpc(s), _mpf(sensitivity), _mpf(sigma)
        norm = 1 / (sg * mp.sqrt(2 * mp.pi))

        def dens(x, m):
            return norm * mp.exp(-((x - m) ** 2) / (2 * sg * sg))

        if direction == "remove":
            f = lambda x: dens(x, d) * mp.exp(s * (d * x - d * d / 2) / sg**2)  # noqa: E731
        else:
            f = lambda x: dens(x, 0) * mp.exp(-s * (d * x - d * d / 2) / sg**2)  # noqa: E731
        centre = s.real * d if direction == "remove" else -s.real * d
        lo, hi = min(0, centre, d) - 30 * sg, max(0, centre, d) + d + 30 * sg
        pts = _oscillation_points(lo, hi, sg, lambda x: d * x / sg**2, s.imag)
        return mp.log(mp.quad(f, pts))


def laplace_log_mgf(s, sensitivity, scale, direction="remove", dps=30):
    """``log E_P[(p/q)^s]`` for P = Laplace(D, b), Q = Laplace(0, b) (``remove``) or ``log E_Q[(q/p)^s]``
    (``add``), integrating the densities over the real line with breaks at 0 and D (complex ``s``)."""
    with mp.workdps(dps):
        s, d, b = mp.mpc(s), _mpf(sensitivity), _mpf(scale)

        def dens(x, m):
            return mp.exp(-abs(x - m) / b) / (2 * b)

        def loss(x):  # log(p/q)
            return (abs(x) - abs(x - d)) / b

        if direction == "remove":
            f = lambda x: dens(x, d) * mp.exp(s * loss(x))  # noqa: E731
        else:
            f = lambda x: dens(x, 0) * mp.exp(-s * loss(x))  # noqa: E731
        inner = _oscillation_points(mp.mpf(0), d, d / 8, loss, s.imag)
        return mp.log(mp.quad(f, [-mp.inf, -40 * b, -b] + inner + [d + b, d + 40 * b, mp.inf]))


@functools.lru_cache(maxsize=None)
def subsampled_log_mgf(s, q, base, parameter, direction="remove", dps=30):
    """``log E_P[e^(sL)]`` of a Poisson-subsampled pair (thesis Thm 3.3.5), sensitivity 1, complex ``s``.

    ``base`` is ``"gaussian"`` (``parameter`` = sigma; A = N(1, sigma^2), B = N(0, sigma^2)) or
    ``"laplace"`` (``parameter`` = scale; A = Laplace(1, b), B = Laplace(0, b)). With the mixture
    ``C = (1-q) B + q A``: remove is the pair (C, B), ``E_C[(C/B)^s] = int B (C/B)^(1+s)``; add is the pair
    (B, C), ``E_B[(B/C)^s] = int B (C/B)^(-s)``. Integrated over the output with break points every sigma / 4
    (or b / 8) and wherever ``Im(s) log(C/B)`` turns by pi.
    """
    with mp.workdps(dps):
        s, q, par = mp.mpc(s), _mpf(q), _mpf(parameter)
        z = 1 + s if direction == "remove" else -s
        if base == "gaussian":
            norm = 1 / (par * mp.sqrt(2 * mp.pi))

            def b_dens(x):
                return norm * mp.exp(-x * x / (2 * par * par))

            def r(x):  # log(C/B)
                return mp.log(1 - q + q * mp.exp((2 * x - 1) / (2 * par * par)))

            centre = z.real  # b(x) e^(z r) ~ exp(-x^2/2s^2 + Re(z) x / s^2) for large x
            lo, hi = min(0, centre) - 30 * par - 1, max(1, centre) + 30 * par + 1
            pts = _oscillation_points(lo, hi, par / 4, r, z.imag)
            value = mp.quad(lambda x: b_dens(x) * mp.exp(z * r(x)), pts)
            return mp.log(value)
        if base == "laplace":

            def b_dens(x):
                return mp.exp(-abs(x) / par) / (2 * par)

            def r(x):
                return mp.log(1 - q + q * mp.exp((abs(x) - abs(x - 1)) / par))

            inner = _oscillation_points(mp.mpf(0), mp.mpf(1), par / 8 if par < 8 else mp.mpf(1), r, z.imag)
            pts = [-mp.inf, -40 * par, -par] + inner + [1 + par, 1 + 40 * par, mp.inf]
            value = mp.quad(lambda x: b_dens(x) * mp.exp(z * r(x)), pts)
            return mp.log(value)
        raise ValueError(f"`base` must be 'gaussian' or 'laplace'; got {base!r}.")
