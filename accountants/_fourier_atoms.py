"""Atoms of a composed privacy loss, enumerated exactly for :class:`accountants.FourierAccountant`.

Two-point losses: randomized response with ``0 < p < 1`` and pure ``E``-DP are dominated by the pair
(Bernoulli(p*), Bernoulli(1 - p*)), ``p* = 1 / (1 + e^-E)``, whose loss is ``+-E`` (Kairouz et al. 2015; the
closed form is in :mod:`mechanisms.privacy_loss`), so ``log M(s) = log(p* e^(sE) + (1 - p*) e^(-sE))`` and a
composition adds these (thesis Def 3.3.7, Prop 3.3.8). Their characteristic functions do not decay, so Fourier
inversion would need ~1/rtol nodes; a ledger of them alone (at most ``MAX_ATOMS`` composed outcomes besides the
group of most runs, :func:`accountants.two_point_ledger.enumerated_outcomes`) is enumerated exactly instead
(:func:`two_point_lattice`, :class:`accountants.two_point_ledger.TwoPointLedger`).

Laplace split: a Laplace loss (``t = sensitivity / scale``) is ``M = A + C``, atoms ``A`` at ``+-t`` and a
continuous part ``C`` (:func:`mechanisms.closed_form_enclosures.laplace_split_enclosure`). For a ledger of Laplace
and two-point losses only (no Gaussian), the all-atom part ``D = prod B_j^n_j prod A_i^n_i`` of the composed law is
enumerated exactly and only the rest ``R = M - D = D (prod (1 + C_i/A_i)^n_i - 1)`` is Fourier-inverted
(:func:`laplace_split`). ``R`` is a non-negative measure whose every term has a continuous factor, so ``|R| <=
D(c) ((1 + 1/|1 + 2s|)^N - 1) ~ N D(c) / |u|`` decays and the truncation error falls like 1/U^2, where the whole
characteristic function (atoms included) does not decay at all. Its terms with exactly one continuous factor are
priced in closed form where the all-atom ledgers with one run fewer can be enumerated, and only the products with two
or more continuous factors, decaying like ``1/|s|^2``, are inverted (:mod:`accountants._laplace_first_order`; with a
single Laplace run nothing is). Poisson-subsampled two-point losses (their atoms
differ between the directions, :meth:`mechanisms.base.Mechanism.loss_atoms`) join ``D`` too, so such a ledger has one
split per direction and delta is the larger of the two (thesis Thm 3.3.5).

Ledgers are passed compiled, as ``(mu2, e_values, counts, others)`` (``FourierAccountant._compile``).
"""

import functools
import math
import typing

import numpy as np

from dpledger.accountants._laplace_first_order import ExactParts, FirstOrder, second_order, second_order_sup_factor
from dpledger.accountants.two_point_ledger import MAX_ATOMS, TwoPointLedger, enumerated_outcomes
from dpledger.mechanisms import _logmath, closed_form_enclosures
from dpledger.mechanisms.relations import Direction

__all__ = ["LaplaceSplit", "laplace_split", "two_point_lattice", "two_point_log_mgf", "two_point_log_mgf_enclosure",
           "two_point_loss"]

_U = _logmath.EPS / 2.0


class LaplaceSplit(typing.NamedTuple):
    """A Laplace ledger split into its atoms and the rest (module docstring)."""

    #: The all-atom part ``D``, enumerated exactly, with the first-order part where that is priced exactly
    #: (:class:`accountants._laplace_first_order.ExactParts`); anything with ``delta_bounds(epsilon)``.
    atoms: TwoPointLedger
    #: ``s -> (log R~(s), log E(s))`` at the Fourier nodes, ``|R - e^(log R~)| <= E`` (float rounding bounded); R is
    #: the whole rest, or its second-order part where ``atoms`` holds the first-order part too
    #: (:mod:`accountants._laplace_first_order`); None where nothing is left to invert (a single Laplace run).
    node_enclosure: typing.Callable | None
    #: ``(kappa, u_min) -> log sup_{|u| >= u_min} |R(kappa + iu)|`` (None with ``node_enclosure``).
    sup: typing.Callable | None
    #: Smallest damping of its plans (:func:`split_min_damping`).
    min_damping: float = 0.25


def two_point_loss(mechanism):
    """``E`` (a float at or above the exact value) if the mechanism is dominated by the pair (Bernoulli(p*),
    Bernoulli(1 - p*)) with loss ``+-E`` (:meth:`~mechanisms.base.Mechanism.two_point_loss`: randomized response
    with 0 < p < 1, pure DP), else None. Rounding ``E`` up keeps the pair dominating; randomized response's
    ``log(p) - log1p(-p)`` to nearest could be below the exact loss (relative 3e-8 near p = 1/2)."""
    return mechanism.two_point_loss()


def two_point_log_mgf(s, e_values, counts, block=1 << 20):
    """``sum_j n_j log(p*_j e^(s E_j) + (1 - p*_j) e^(-s E_j))`` (``privacy_loss.bernoulli_log_mgf`` for many
    ``E_j`` at once, in blocks of at most ``block`` matrix entries)."""
    s = np.asarray(s, dtype=np.complex128)
    flat = s.reshape(-1)
    flat = np.where(flat.real < -0.5, -1.0 - flat, flat)  # symmetric pair: M(s) = M(-1 - s)
    log_p = -np.log1p(np.exp(-e_values))
    out = np.empty(flat.shape, dtype=np.complex128)
    rows = max(1, block // max(e_values.size, 1))
    for start in range(0, flat.size, rows):
        z = flat[start : start + rows, None]
        terms = log_p + z * e_values + np.log1p(np.exp(-e_values - 2.0 * z * e_values))
        # numpy's own loops (einsum), not a multithreaded BLAS that wakes its idle threads for every product
        out[start : start + rows] = np.einsum("ij,j->i", terms, counts)
    return out.reshape(s.shape)


def two_point_log_mgf_enclosure(s, e_values, counts, block=1 << 19):
    """``(log M~, log E)`` of :func:`two_point_log_mgf`'s sum, ``|M - e^(log M~)| <= E``: each group's per-run log
    within :func:`mechanisms.closed_form_enclosures.bernoulli_terms`'s bound (the same float operations), times its
    count, plus the sum's rounding (``(J + 1) u`` of ``sum_j n_j |log m_j|`` for ``J`` groups: the products and the
    einsum's additions), then :func:`mechanisms.closed_form_enclosures.log_error_from_log`."""
    s = np.asarray(s, dtype=np.complex128)
    flat, reflection = closed_form_enclosures.reflect(s.reshape(-1), float(np.max(e_values)))
    value = np.empty(flat.shape, dtype=np.complex128)
    bound = np.empty(flat.shape, dtype=np.float64)
    rows = max(1, block // max(e_values.size, 1))
    for start in range(0, flat.size, rows):
        terms, errors = closed_form_enclosures.bernoulli_terms(flat[start : start + rows, None], e_values[None, :])
        value[start : start + rows] = np.einsum("ij,j->i", terms, counts)
        bound[start : start + rows] = (np.einsum("ij,j->i", errors, counts)
                                       + (e_values.size + 1) * _U * np.einsum("ij,j->i", np.abs(terms), counts))
    # the float sum of the reflection's shift over the runs: counts times each, rounded up with the rest
    bound = (bound + reflection * float(np.sum(counts))) * (1.0 + 8.0 * _U)
    return value.reshape(s.shape), closed_form_enclosures.log_error_from_log(value, bound).reshape(s.shape)


def two_point_lattice(compiled):
    """Exact enumeration (:class:`TwoPointLedger`) when the ledger has only two-point losses (randomized
    response, pure DP) with at most ``MAX_ATOMS`` composed outcomes; None otherwise."""
    mu2, e_values, counts, others = compiled
    if mu2 or others or not e_values.size:
        return None
    keep = e_values > 0.0
    if enumerated_outcomes(counts[keep]) > MAX_ATOMS:
        return None
    return TwoPointLedger(e_values[keep], counts[keep])


#: Where the atoms could be enumerated only through a tail group (more than MAX_ATOMS composed outcomes), the split is
#: made only if the all-atom part's mass, ``prod ((1 + e^-t_i) / 2)^n_i``, is above ``e^`` this: below, the whole
#: law's inversion is not held back by atoms that do not decay, and is faster (Laplace x 9 + x 1,825 + pure DP
#: x 1,259: 7 ms whole, 50 ms split; Laplace x 352 + RR x 1,298 + pure DP x 282, atom mass e^-37: 8 against 250 ms;
#: randomized response x 661 + Laplace x 2 + subsampled RR x 3,869, atom mass 0.49: 1.2 s split, 12.9 s through the
#: privacy buckets). A performance choice only: both paths are proven.
SPLIT_MIN_LOG_ATOM_MASS = -25.0


def laplace_split(compiled):
    """For ledgers of Laplace losses with two-point ones (randomized response, pure DP, and their Poisson-subsampled
    versions, whose two atoms differ between the directions), no Gaussian: ``((direction, LaplaceSplit), ...)``, the
    :class:`LaplaceSplit` ``(atoms, node_enclosure, sup)`` of the module docstring for each direction whose law
    differs (the remove direction alone when every pair is symmetric), where ``atoms`` enumerates ``D`` (``A_i`` the
    Laplace atoms) and ``node_enclosure`` / ``sup`` give ``log R`` (with its rounding bounded) and a bound on
    ``|R|`` beyond a frequency. None if not applicable or if the atoms exceed ``MAX_ATOMS``."""
    mu2, e_values, counts, others = compiled
    if mu2 or not others:
        return None
    laplace, asymmetric = [], []
    for m, n in others:
        if m.laplace_loss_ratio() is not None:
            laplace.append((m.laplace_loss_ratio(), n))
            continue
        atoms = m.loss_atoms()
        if atoms is None:
            return None
        if atoms["remove"][:2] != (0.0, 0.0):  # a zero loss adds nothing
            asymmetric.append((atoms, n))
    if not laplace:
        return None
    ts = np.array([t for t, _ in laplace], dtype=np.float64)
    ns = np.array([n for _, n in laplace], dtype=np.float64)
    keep = e_values > 0.0
    two_e, two_n = e_values[keep], counts[keep]
    runs = np.concatenate((two_n, ns, [n for _, n in asymmetric]))
    if enumerated_outcomes(runs) > MAX_ATOMS:
        return None
    if float(np.prod(runs + 1.0)) > MAX_ATOMS and float(np.sum(ns * np.log1p(np.exp(-ts)) - ns * np.log(2.0))) < (
            SPLIT_MIN_LOG_ATOM_MASS):
        return None  # a tail group would be needed, and the atoms weigh too little to stop the whole law's inversion
    largest = np.concatenate((two_e, ts, [max(abs(a["remove"][0]), abs(a["remove"][1])) for a, _ in asymmetric]))
    min_damping = split_min_damping(largest, np.concatenate((two_n, ns, [n for _, n in asymmetric])))
    splits = []
    for direction in (Direction.REMOVE, Direction.ADD) if asymmetric else (Direction.REMOVE,):
        key = "remove" if direction is Direction.REMOVE else "add"
        groups = _SplitGroups(two_e, two_n, ts, ns, tuple((a[key], n) for a, n in asymmetric))
        atoms = _atom_ledger(groups, ns)
        first = _first_order(groups)
        if first is None:  # the rest R, all of it inverted
            splits.append((direction, LaplaceSplit(atoms, functools.partial(_rest_enclosure, groups=groups),
                                                   functools.partial(_rest_sup, groups=groups), min_damping)))
        elif ns.sum() == 1.0:  # one Laplace run: R is the first-order part alone, priced exactly
            splits.append((direction, LaplaceSplit(ExactParts(atoms, first), None, None, min_damping)))
        else:  # R_1 priced exactly, R_2 inverted
            splits.append((direction, LaplaceSplit(ExactParts(atoms, first),
                                                   functools.partial(_second_enclosure, groups=groups),
                                                   functools.partial(_second_sup, groups=groups), min_damping)))
    return tuple(splits)


#: Most outcomes of one Laplace group's all-atom ledger with a run fewer for which the first-order part is priced
#: exactly (:mod:`accountants._laplace_first_order`; each evaluation enumerates them), where a second-order rest is
#: inverted too: a performance choice. Beyond, the whole rest is inverted as before: the enumeration costs more than
#: the nodes it saves (pure DP x 749 + Laplace x 22 + x 16, 280,000 outcomes: 547 ms against 230; Laplace x 4 +
#: x 125 + subsampled pure DP x 71, 45,000: 54 against 28 ms; Laplace x 25, 25 outcomes: 6 against 43 ms).
FIRST_ORDER_MAX_OUTCOMES = 1 << 13
#: The same limit for a single Laplace run, whose first-order part is all that is left: no inversion at all (pure DP
#: x 5,932 + subsampled RR x 45 + Laplace x 1, 273,000 outcomes: 0.56 s against 2.3 s).
FIRST_ORDER_MAX_OUTCOMES_ALONE = 1 << 19


def _atom_ledger(groups, laplace_runs, enumerate_all=False):
    """The all-atom part of one direction's ledger (:class:`TwoPointLedger`) with ``laplace_runs`` runs of each
    Laplace group: its two-point groups (randomized response's masses), the Laplace atoms ``+t`` (mass 1/2) and
    ``-t`` (mass ``e^-t / 2``), and the asymmetric atoms."""
    log_pos = -np.log1p(np.exp(-groups.two_e))
    return TwoPointLedger(
        np.concatenate((groups.two_e, groups.ts)),
        np.concatenate((groups.two_n, laplace_runs)),
        log_masses=list(zip(log_pos, log_pos - groups.two_e)) + [(-np.log(2.0), -t - np.log(2.0)) for t in groups.ts],
        atoms=groups.asymmetric,
        enumerate_all=enumerate_all,
    )


def _first_order(groups):
    """The :class:`accountants._laplace_first_order.FirstOrder` of one direction (its groups ``groups``), or None
    where some Laplace group's all-atom ledger with a run fewer has more than :data:`FIRST_ORDER_MAX_OUTCOMES`
    outcomes (:data:`FIRST_ORDER_MAX_OUTCOMES_ALONE` for a single Laplace run)."""
    parts = []
    limit = FIRST_ORDER_MAX_OUTCOMES_ALONE if groups.ns.sum() == 1.0 else FIRST_ORDER_MAX_OUTCOMES
    for i, (t, n) in enumerate(zip(groups.ts, groups.ns)):
        fewer = groups.ns.copy()
        fewer[i] -= 1.0
        sizes = np.concatenate((groups.two_n, fewer, [m for _, m in groups.asymmetric])) + 1.0
        if float(np.prod(sizes)) > limit:
            return None
        parts.append((float(t), float(n), _atom_ledger(groups, fewer, enumerate_all=True)))
    return FirstOrder(parts)


def _second_enclosure(s, groups):
    """``(log R_2~, log E)`` of the second-order rest ``R_2 = D (e^Z - 1 - W)``
    (:func:`accountants._laplace_first_order.second_order`), combined with ``D``'s enclosure as
    :func:`_rest_enclosure` combines ``e^Z - 1``'s."""
    s = np.asarray(s, dtype=np.complex128)
    flat = s.reshape(-1)
    log_d, d_log_d, z, d_z, ratios = _atoms_part(flat, groups)
    log_f, log_err_f = second_order(z, d_z, ratios)
    return _combined(log_d, d_log_d, log_f, log_err_f, s.shape)


def _second_sup(kappa, u_min, groups):
    """``|R_2| <= D(c) ((1 + rho)^N - 1 - N rho) <= D(c) (e^x - 1 - x)``, ``x = N log(1 + rho)``, ``rho = 1 / |1 +
    2c' + 2iu|`` (:func:`_rest_sup`'s bound on each ``|C_i| / A_i(c)``; the expansion of ``prod (A_i + C_i)^n_i``
    keeps the products with two or more continuous factors, and ``N rho >= x``), ``D(c)`` the upper end of its
    enclosure, the rest raised by a few ulps of its parts."""
    log_d, d_log_d = _atoms_part(np.array([complex(kappa)]), groups)[:2]
    c = kappa if kappa >= -0.5 else -1.0 - kappa
    x = float(groups.ns.sum()) * float(np.log1p(1.0 / np.hypot(1.0 + 2.0 * c, 2.0 * u_min))) * (1.0 + 4.0 * _U)
    log_rest = second_order_sup_factor(x)
    upper = float(np.real(log_d[0])) + float(d_log_d[0]) + log_rest
    return upper + 8.0 * _logmath.EPS * (abs(upper) + abs(log_rest) + abs(x) + 1.0)


class _SplitGroups(typing.NamedTuple):
    """One direction's groups: symmetric two-point losses ``+-E`` (``two_e``, ``two_n`` runs), Laplace losses
    (ratios ``ts``, ``ns`` runs) and asymmetric two-point losses ``((l1, l0, log P1, log P0), n)``."""

    two_e: np.ndarray
    two_n: np.ndarray
    ts: np.ndarray
    ns: np.ndarray
    asymmetric: tuple


def _rest_sup(kappa, u_min, groups):
    """``|R| <= D(c) ((1 + 1 / |1 + 2c' + 2iu|)^N - 1)`` (module docstring; ``c'`` the Laplace parts' reflected
    damping), ``D(c)`` the upper end of its enclosure, the rest raised by a few ulps of its parts."""
    log_d, d_log_d = _atoms_part(np.array([complex(kappa)]), groups)[:2]
    c = kappa if kappa >= -0.5 else -1.0 - kappa
    z = float(groups.ns.sum()) * np.log1p(1.0 / np.hypot(1.0 + 2.0 * c, 2.0 * u_min))
    log_rest = float(_logmath.log_expm1(z))
    upper = float(np.real(log_d[0])) + float(d_log_d[0]) + log_rest
    return upper + 8.0 * _logmath.EPS * (abs(upper) + abs(log_rest) + abs(z) + 1.0) + 4.0 * _logmath.EPS * z


def split_min_damping(losses, counts):
    """Smallest damping of a split ledger's plans: ``min(0.25, 2 / sqrt(sum_j n_j E_j^2))``, ``E_j`` each run's
    largest loss (the sum bounds the composed loss's variance ``sd^2``).

    Any damping > 0 is valid; near 0 the period, at least ``-log(tolerance) / kappa``, grows without bound, so it is
    floored. Above the Chernoff best ``kappa*`` the terms grow by about ``e^(sd^2 (kappa - kappa*)^2 / 2)``, at most
    ``e^2`` at this floor; below it the period grows. A tail event lies some standard deviations ``z`` beyond the
    mean, ``kappa* ~ z / sd``, where the plan needs about ``sqrt(-2 log tol) (-log tol) / (2 pi z)`` nodes whatever
    the runs. A fixed floor of 0.02 sat far above the best of 10^6 runs (Laplace scale 1: 0.007 at delta 1e-5), where
    the terms, ``e^30`` above delta, left the float rounding (1e-8 of each term at 10^6 runs) far above rtol; 0.25
    above that of Laplace x 10^4 (scale 2, delta 1e-8: 0.12); 0.02 for 25 runs (delta 0.5, scale 1.66: 246 ms)
    doubled the nodes of 0.25 (123 ms)."""
    variance = float(np.sum(np.asarray(counts) * np.asarray(losses) ** 2))
    return min(0.25, 2.0 / math.sqrt(variance)) if variance > 0.0 else 0.25


def _atoms_part(s, groups):
    """``(log D~, bound on |log D - log D~|, Z~, bound on |Z - Z~|, ratios)`` at the nodes, ``D = prod B_j^n_j prod
    A_i^n_i`` and ``Z = sum_i n_i log(1 + r_i)``, ``r_i = C_i / A_i``, so that ``R = D (e^Z - 1)``; ``ratios`` holds
    ``(n_i, r_i~, bound on |r_i - r_i~|)`` per Laplace group: the symmetric two-point groups'
    (:func:`mechanisms.closed_form_enclosures.bernoulli_terms`), the asymmetric ones'
    (:func:`mechanisms.closed_form_enclosures.atoms_log_mgf_enclosure`, its absolute error ``E`` over ``|m~|``
    doubled: :func:`~mechanisms.closed_form_enclosures.log_of_perturbed`; their atoms within ``4 eps`` relative,
    :func:`mechanisms.two_point.subsampled_loss_atoms`) and each Laplace group's
    (:func:`mechanisms.closed_form_enclosures.laplace_split_enclosure`, ``log1p`` of its ratio within
    :func:`~mechanisms.closed_form_enclosures.log_rounding_at` plus ``2 dr / |1 + r|``) per-run bounds times the runs,
    and the sums' rounding (``u`` of each partial sum's magnitude per addition, ``u`` per product). The symmetric
    parts are evaluated at ``-1 - s`` where ``Re s < -1/2`` (:func:`~mechanisms.closed_form_enclosures.reflect`), the
    asymmetric ones at ``s``."""
    two_e, two_n, ts, ns = groups.two_e, groups.two_n, groups.ts, groups.ns
    z_arg, reflection = closed_form_enclosures.reflect(s, float(np.max(np.concatenate((ts, two_e)))))
    runs = float(ns.sum() + two_n.sum())
    if two_e.size:
        terms, errors = closed_form_enclosures.bernoulli_terms(z_arg[:, None], two_e[None, :])
        log_d = np.einsum("ij,j->i", terms, two_n)
        d_log_d = np.einsum("ij,j->i", errors, two_n) + (two_e.size + 1) * _U * np.einsum("ij,j->i", np.abs(terms),
                                                                                          two_n)
    else:
        log_d, d_log_d = np.zeros(s.shape, dtype=np.complex128), np.zeros(s.shape)
    for (l1, l0, log_p1, log_p0), n in groups.asymmetric:
        log_mass, loss = np.array([log_p1, log_p0]), np.array([l1, l0])
        value, log_err = closed_form_enclosures.atoms_log_mgf_enclosure(
            s, log_mass, loss, 4.0 * _logmath.EPS * (np.abs(log_mass) + 1.0), 4.0 * _logmath.EPS * np.abs(loss))
        with np.errstate(over="ignore"):
            d_value = closed_form_enclosures.log_of_perturbed(np.exp(np.real(value)), np.exp(log_err))
        log_d = log_d + n * value
        d_log_d = d_log_d + n * d_value + 2.0 * _U * (np.abs(n * value) + np.abs(log_d))
    z = np.zeros(s.shape, dtype=np.complex128)
    d_z = np.zeros(s.shape)
    ratios = []
    with np.errstate(divide="ignore"):
        for t, n in zip(ts, ns):
            log_a, d_log_a, ratio, d_ratio = closed_form_enclosures.laplace_split_enclosure(z_arg, t)
            # C / A at the reflected argument (the Laplace pair is symmetric); no bound where reflecting was inexact
            ratios.append((float(n), ratio, np.where(reflection > 0.0, np.inf, d_ratio)))
            log1p = np.log1p(ratio)
            d_log1p = (closed_form_enclosures.log_rounding_at(log1p)
                       + closed_form_enclosures.log_of_perturbed(1.0 + ratio, d_ratio))
            log_d = log_d + n * log_a
            z = z + n * log1p
            d_log_d = d_log_d + n * d_log_a + 2.0 * _U * (np.abs(n * log_a) + np.abs(log_d))
            d_z = d_z + n * d_log1p + 2.0 * _U * (np.abs(n * log1p) + np.abs(z))
    d_log_d = (d_log_d + runs * reflection) * (1.0 + 8.0 * _U)
    d_z = (d_z + float(ns.sum()) * reflection) * (1.0 + 8.0 * _U)
    return log_d, d_log_d, z, d_z, ratios


def _rest_enclosure(s, groups):
    """``(log R~, log E)`` of the rest ``R = D (e^Z - 1)`` (:func:`_atoms_part`), ``log R~ = log D~ + log(e^Z~ - 1)~``
    (:func:`mechanisms.closed_form_enclosures.log_expm1_enclosure`, ``|(e^Z - 1) - e^L~| <= e^(log E_L)``).

    With ``D = D~ e^d`` (``|d| <= dD``) and the final sum within ``th = u |log R~|``: ``|R - e^(log R~)| <= |D~|
    (e^dD e^(log E_L) + |e^L~| (expm1(dD) + expm1(th)))``, formed in logs and raised by a few ulps of its parts."""
    s = np.asarray(s, dtype=np.complex128)
    flat = s.reshape(-1)
    log_d, d_log_d, z, d_z, _ = _atoms_part(flat, groups)
    log_e1, log_err_e1 = closed_form_enclosures.log_expm1_enclosure(z, d_z)
    return _combined(log_d, d_log_d, log_e1, log_err_e1, s.shape)


def _combined(log_d, d_log_d, log_f, log_err_f, shape):
    """``(log D~ + log F~, log E)`` for the product ``D F`` with ``D = D~ e^d`` (``|d| <= d_log_d``) and ``|F -
    e^(log F~)| <= e^(log_err_f)``, the final sum within ``th = u |log D~ + log F~|``: ``|D F - e^(value)| <= |D~|
    (e^dD e^(log_err_f) + |e^(log F~)| (expm1(dD) + expm1(th)))``, formed in logs and raised by a few ulps of its
    parts."""
    value = log_d + log_f
    theta = 1.5 * _U * np.abs(value)
    with np.errstate(divide="ignore", invalid="ignore"):
        relative = np.real(log_f) + np.log(np.expm1(d_log_d) + np.expm1(theta))
        inner = np.logaddexp(d_log_d + log_err_f, relative)
        log_err = np.real(log_d) + inner + 4.0 * _logmath.EPS * (np.abs(np.real(log_d)) + np.abs(inner) + 1.0)
    return value.reshape(shape), log_err.reshape(shape)
