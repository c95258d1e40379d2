"""mpmath oracles for the closed-form moment generating functions of dpledger's dominating pairs, many runs composed.

The values are mpmath's alone (the library is imported only to read a mechanism's float parameters, in
:func:`one_run`, and by :func:`main`). Each ``log_*`` function returns ``log M(s)`` (an ``mpc``, any branch: only
``exp(n log M)`` is used) of ONE run of the pair that the float code represents, its float parameters taken as exact
binary numbers (a float ``E`` is the loss of the pair, not a rounding of some decimal):

* Gaussian, ``L ~ N(mu^2/2, mu^2)``: ``log M(s) = mu^2 s (s + 1) / 2``;
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

:func:`one_run` maps a mechanism to the pair its enclosure documents (rounded-up losses, the exact Gaussian ratio).

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


def log_gaussian(s, mu):
    """``mu^2 s (s + 1) / 2`` (``mu`` a float or an ``mpf``, taken exactly)."""
    with mp.workdps(DPS):
        mu = mp.mpf(mu)
        return mu * mu * s * (s + 1) / 2


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


def log_laplace_rest(s, laplace_runs, two_point_runs=(), second_order=False):
    """``log R(s)``, ``R = M - D`` of a ledger of Laplace runs ``[(t, n), ...]`` and two-point runs ``[(E, n), ...]``:
    ``D = prod B_j^n_j prod A_i^n_i`` (the all-atom part), ``R = D (prod (1 + C_i / A_i)^n_i - 1)``, the last factor
    by ``expm1`` of ``sum n_i log(1 + C_i / A_i)`` (no cancellation). ``second_order``: ``R_2 = R - D sum n_i r_i``
    (``r_i = C_i / A_i``), the products with two or more continuous Laplace factors
    (:mod:`accountants._laplace_first_order`; at 50 digits no cancellation to fear)."""
    with mp.workdps(DPS):
        log_d = mp.mpc(0)
        z, w = mp.mpc(0), mp.mpc(0)
        for e, n in two_point_runs:
            log_d += n * log_two_point(s, e)
        for t, n in laplace_runs:
            a, c = laplace_parts(s, t)
            log_d += n * _log(a)
            z += n * mp.log1p(c / a)
            w += n * c / a
        return log_d + _log(mp.expm1(z) - (w if second_order else 0))


def log_laplace_second_order(s, laplace_runs, two_point_runs=()):
    """:func:`log_laplace_rest` of the second-order part ``R_2``."""
    return log_laplace_rest(s, laplace_runs, two_point_runs, second_order=True)


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


def one_run(mechanism, s, remove=True):
    """``log M(s)`` of one run of ``mechanism``'s dominating pair as the code documents it (``s`` an ``mpc``):

    * Gaussian: ``mu2 = (sensitivity / sigma)^2`` exactly (the enclosures allow for ``1 / noise_multiplier`` and the
      accountant's ``sum n / noise^2``);
    * Laplace: ``t = laplace_loss_ratio()``, ``sensitivity / scale`` rounded up (a larger shift dominates);
    * randomized response: ``E = two_point_loss()``, ``|log(p / (1 - p))|`` rounded up (a larger loss dominates);
      pure DP: ``E = epsilon``; their Poisson-subsampled pairs with that ``E``;
    * k-ary randomized response: the exact three-point pair of its float ``noise_parameter`` and ``num_buckets``
      (:func:`log_kary`), not the pair of its rounded log-masses;
    * a discrete pair: its stored log-masses, normalised exactly (:func:`log_discrete_normalised`)."""
    from dpledger import mechanisms as m

    if isinstance(mechanism, m.GaussianMechanism):
        with mp.workdps(DPS):
            return log_gaussian(s, mp.mpf(float(mechanism.sensitivity)) / mp.mpf(float(mechanism.sigma)))
    if isinstance(mechanism, m.LaplaceMechanism):
        return log_laplace(s, mechanism.laplace_loss_ratio())
    if isinstance(mechanism, (m.RandomizedResponse, m.PureDPMechanism)):
        return log_two_point(s, two_point_parameter(mechanism))
    if isinstance(mechanism, m.KaryRandomizedResponse):
        return log_kary(s, mechanism.noise_parameter, mechanism.num_buckets)
    if isinstance(mechanism, m.DiscretePairMechanism):
        return log_discrete_normalised(s, mechanism.log_p, mechanism.log_q)
    if isinstance(mechanism, m.PoissonSubsampled):
        base = mechanism.mechanism
        if isinstance(base, (m.RandomizedResponse, m.PureDPMechanism)):
            return log_subsampled_two_point(s, two_point_parameter(base), mechanism.sampling_probability, remove)
    raise TypeError(f"no closed-form oracle for {mechanism!r}")


def two_point_parameter(mechanism):
    """The loss ``E`` of a two-point mechanism's dominating pair as the code prices it (:func:`one_run`)."""
    return float(mechanism.two_point_loss())


def log_discrete_normalised(s, log_p, log_q):
    """:func:`log_discrete` of the pair ``exp(log_p) / sum exp(log_p)``, ``exp(log_q) / sum exp(log_q)`` (exactly)."""
    with mp.workdps(DPS):
        keep = [(mp.mpf(float(a)), mp.mpf(float(b))) for a, b in zip(log_p, log_q)
                if math.isfinite(a) and math.isfinite(b)]
        shift_p = mp.log(mp.fsum(mp.exp(a) for a, _ in keep))
        shift_q = mp.log(mp.fsum(mp.exp(b) for _, b in keep))
        return _log(mp.fsum(mp.exp((a - shift_p) + s * ((a - shift_p) - (b - shift_q))) for a, b in keep))


def log_kary(s, noise_parameter, num_buckets):
    """k-ary randomized response (dp_accounting's): ``a = 1 - p + p / k``, ``b = p / k``, the pair ``(a, b, (k - 2) b)``
    against ``(b, a, (k - 2) b)`` (the ``k - 2`` outcomes where they agree merged), exactly from the float ``p``."""
    with mp.workdps(DPS):
        p, k = mp.mpf(float(noise_parameter)), int(num_buckets)
        a, b = 1 - p + p / k, p / k
        # the merged outcome has loss 0: its term is its mass whatever s is
        return _log(a * (a / b) ** s + b * (b / a) ** s + (k - 2) * b)


# ---------------------------------------------------------------- the report (not a test)
REPORT_KAPPAS = (0.25, 0.5, 1.0, 2.0, 5.0, -0.25, -0.75, -0.5, (1.0 + 1e-3) - 1.0)
REPORT_RUNS = (1, 10, 100, 10**3, 10**4, 10**5, 10**6)


def _frequencies(top, count=60, seed=0):
    rng = np.random.default_rng(seed)
    return np.unique(np.concatenate(([0.0], top * np.geomspace(1e-9, 1.0, count), rng.uniform(0.0, top, count))))


def _worst(rows, result, point):
    for key in ("relative", "inversion", "contract"):
        if result[key] >= rows.get(key, (-1.0, None))[0]:
            rows[key] = (result[key], complex(point))


def _line(name, rows):
    parts = [f"{key} {rows[key][0]:.3g} at s = {rows[key][1]:.6g}" for key in ("inversion", "relative") if key in rows]
    contract = rows.get("contract", (math.nan,))[0]
    return f"{name:44s} " + "; ".join(parts) + f"; contract {contract:.3g}"


def scan_self_composed(mechanism, top, kappas=REPORT_KAPPAS, runs=REPORT_RUNS, direction=None):
    """``{n: {ratio: (worst, s)}}`` of ``SelfComposed(mechanism, n).log_mgf_enclosure`` over the report's points
    (``top(n)``: the highest frequency)."""
    from dpledger.mechanisms import Direction, SelfComposed

    direction = Direction.REMOVE if direction is None else direction
    out = {}
    cache = {}
    for n in runs:
        rows = out.setdefault(n, {})
        for kappa in kappas:
            s = kappa + 1j * _frequencies(top(n), seed=n)
            log_m, log_err = SelfComposed(mechanism, count=n).log_mgf_enclosure(s, direction)
            for point, value, error in zip(s, log_m, log_err):
                key = complex(point)
                if key not in cache:
                    cache[key] = one_run(mechanism, mpc(point), remove=direction is Direction.REMOVE)
                _worst(rows, compare(cache[key], n, value, error), point)
    return out


def scan_plan_nodes(entries, epsilons):
    """``{ratio: (worst, s)}`` of ``FourierAccountant._log_mgf_enclosure`` at every node its plans evaluate for
    ``get_delta`` at each of ``epsilons`` (the nodes as the accountant chose them)."""
    from dpledger.accountants import FourierAccountant

    acct = FourierAccountant()
    for m, n in entries:
        acct.compose(m, n)
    seen = []
    enclosure = acct._log_mgf_enclosure

    def spy(s, direction, bodies=None):
        value = enclosure(s, direction, bodies)
        if np.size(s) > 16:
            seen.append((np.array(s).reshape(-1), value))
        return value

    acct._log_mgf_enclosure = spy
    epsilon_of = []
    for epsilon in epsilons:
        start = len(seen)
        acct.get_delta(epsilon=float(epsilon))
        epsilon_of += [float(epsilon)] * (len(seen) - start)
    rows, plan_worst = {}, (0.0, None)
    for (s, (log_m, log_err)), epsilon in zip(seen, epsilon_of):
        actual, allowed = [], []
        for point, value, error in zip(s, np.ravel(log_m), np.ravel(log_err)):
            with mp.workdps(DPS):
                exact = mp.fsum(n * one_run(m, mpc(point)) for m, n in entries)
            result = compare(exact, 1, value, error)
            _worst(rows, result, point)
            # the node's weight in the contour sum, e^(-kappa eps) (common to a plan) aside
            log_weight = math.log(abs(complex(point))) + math.log(abs(1.0 + complex(point)))
            actual.append(result["actual"] - log_weight)
            allowed.append(math.log(EPS * (8.0 + abs(complex(value)) + 2.0 * abs(complex(point)) * epsilon))
                           + complex(value).real - log_weight)
        # the inversion's rounding term: sum_k w_k EPS (8 + |log M_k| + 2 |s_k| eps) |e^(t_k)| (1 + log2 K)
        total_actual = float(mp.fsum(mp.exp(mp.mpf(a)) for a in actual))
        total_allowed = float(mp.fsum(mp.exp(mp.mpf(a)) for a in allowed)) * (1.0 + math.log2(s.size))
        if total_actual / total_allowed > plan_worst[0]:
            plan_worst = (total_actual / total_allowed, (complex(s[0]).real, s.size, epsilon))
    return rows, sum(s.size for s, _ in seen), plan_worst


def scan_split(scale, n, p=0.6, m=0, kappas=(0.25, 0.5, 1.0, 2.0, 5.0, -0.25, -0.75)):
    """``{ratio: (worst, s)}`` of the Laplace split's rest (``node_enclosure``) for Laplace(scale) x n
    (+ RR(p) x m), and the number of points where its value is not finite."""
    from dpledger.accountants import FourierAccountant
    from dpledger.accountants._fourier_atoms import laplace_split
    from dpledger.mechanisms import LaplaceMechanism, RandomizedResponse

    acct = FourierAccountant().compose(LaplaceMechanism(scale=scale), n)
    if m:
        acct.compose(RandomizedResponse(p=p), m)
    ((_, split),) = laplace_split(acct._compile())  # symmetric losses: one direction
    lap = [(LaplaceMechanism(scale=scale).laplace_loss_ratio(), n)]  # t rounded up, as the split prices it
    two = [(RandomizedResponse(p=p).two_point_loss(), m)] if m else []
    rows, bad = {}, 0
    for kappa in kappas:
        s = kappa + 1j * _frequencies(1e4 * scale)
        with np.errstate(all="ignore"):
            log_r, log_e = split.node_enclosure(s)
        for point, value, error in zip(s, log_r, np.broadcast_to(log_e, s.shape)):
            if not np.isfinite(value):
                bad += 1
                continue
            _worst(rows, compare(log_laplace_rest(mpc(point), lap, two), 1, value, error), point)
    return rows, bad


def main():
    """Print the report's worst ratios: per closed form and ``n`` over the report's points, at the accountant's plan
    nodes, and for the Laplace split's rest."""
    from dpledger.mechanisms import (
        Direction,
        DiscretePairMechanism,
        GaussianMechanism,
        KaryRandomizedResponse,
        LaplaceMechanism,
        MissingCapabilityError,
        PoissonSubsampled,
        PureDPMechanism,
        RandomizedResponse,
    )

    def atoms(scale):
        return lambda n: 1e4 / scale

    def gauss(noise):
        return lambda n: math.sqrt(600.0 * math.log(10.0)) * noise / math.sqrt(n)

    rr6 = RandomizedResponse(p=0.6).two_point_loss()
    cases = [
        ("Gaussian(sigma=1.1)", GaussianMechanism(sigma=1.1), gauss(1.1), None),
        ("Gaussian(sigma=10, sensitivity=3)", GaussianMechanism(sigma=10.0, sensitivity=3.0), gauss(10 / 3), None),
        ("Laplace(scale=1)", LaplaceMechanism(scale=1.0), atoms(1.0), None),
        ("Laplace(scale=3)", LaplaceMechanism(scale=3.0), atoms(1 / 3), None),
        ("RR(0.6)", RandomizedResponse(p=0.6), atoms(rr6), None),
        ("RR(0.5005)", RandomizedResponse(p=0.5005), atoms(0.002), None),
        ("PureDP(1e-3)", PureDPMechanism(epsilon=1e-3), atoms(1e-3), None),
        ("PureDP(5)", PureDPMechanism(epsilon=5.0), atoms(5.0), None),
        ("KaryRR(0.5, 4)", KaryRandomizedResponse(noise_parameter=0.5, num_buckets=4), atoms(math.log(5)), None),
        ("Discrete(.75/.25)", DiscretePairMechanism(np.log([0.75, 0.25]), np.log([0.25, 0.75])),
         atoms(math.log(3)), None),
        ("PS(RR(0.6), 0.01) remove", PoissonSubsampled(RandomizedResponse(p=0.6), sampling_probability=0.01),
         atoms(math.log1p(0.01 * 0.5)), Direction.REMOVE),
        ("PS(RR(0.6), 0.01) add", PoissonSubsampled(RandomizedResponse(p=0.6), sampling_probability=0.01),
         atoms(math.log1p(0.01 * 0.5)), Direction.ADD),
        ("PS(PureDP(1), 0.1) remove", PoissonSubsampled(PureDPMechanism(epsilon=1.0), sampling_probability=0.1),
         atoms(math.log1p(0.1 * math.expm1(1.0))), Direction.REMOVE),
        ("PS(Laplace(1), 0.1)", PoissonSubsampled(LaplaceMechanism(scale=1.0), sampling_probability=0.1),
         atoms(1.0), None),
    ]
    print("SelfComposed(m, n).log_mgf_enclosure: worst ratio of |M^n - exp(log_m)| to the inversion's per-node "
          "allowance eps (8 + |log_m|) |exp(log_m)| and to |M^n|, and to the claimed exp(log_err)")
    for name, mechanism, top, direction in cases:
        try:
            rows = scan_self_composed(mechanism, top, direction=direction)
        except MissingCapabilityError as exc:
            print(f"{name}: skipped ({exc})")
            continue
        for n, row in rows.items():
            print(_line(f"{name} x {n}", row), flush=True)
    g = GaussianMechanism(sigma=1.1)
    e6 = RandomizedResponse(p=0.6).two_point_loss()
    print("FourierAccountant._log_mgf_enclosure at every node of the plans of get_delta(mean + k sd), k = 2, 4, 6 "
          "(trapezoid end weights 1/2 ignored)")
    for n in (10**3, 10**4, 10**5):
        mu2 = 10 / 1.21
        mean, sd = mu2 / 2 + n * 0.2 * e6, math.sqrt(mu2 + n * e6 * e6 * 0.96)
        rows, count, plan = scan_plan_nodes([(g, 10), (RandomizedResponse(p=0.6), n)],
                                            [mean + k * sd for k in (2, 4, 6)])
        print(_line(f"Gaussian x 10 + RR(0.6) x {n} ({count} nodes)", rows), flush=True)
        print(f"    worst plan: sum of node errors / the inversion's rounding term {plan[0]:.3g} (kappa, nodes, "
              f"epsilon = {plan[1]})", flush=True)
    print("Laplace split's rest R = M - D (node_enclosure)")
    for scale, n, m in ((2.0, 1, 0), (2.0, 100, 0), (2.0, 10**3, 0), (2.0, 10**4, 0), (1.0, 10**3, 100),
                        (0.5, 10**3, 0)):
        rows, bad = scan_split(scale, n, m=m)
        print(_line(f"Laplace({scale}) x {n} + RR(0.6) x {m} (non-finite: {bad})", rows), flush=True)


if __name__ == "__main__":
    main()
