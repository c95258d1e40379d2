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

Mixed losses: a Poisson-subsampled Laplace is two atoms and a continuous part in each direction
(:meth:`mechanisms.base.Mechanism.loss_split`, :mod:`mechanisms.subsampled_laplace_cf`). Its atoms join ``D``; its
continuous part's profile prices the first-order products as a Laplace run's does; and the rest is formed as ``P (M'
- D' [- R_1'])`` with absolute errors (:func:`_mixed_rest_enclosure`), not through the ratio ``C / A``: its atoms'
transform vanishes on lines a plan's damping can meet (for ``g = 1/2``, at ``Re s = 0``). Where its continuous part
is nearly an atom (a large ``t`` with a small ``g``: the loss near ``l0`` spreads over about ``g e^-t``), the
truncation cannot reach a small delta and the privacy buckets answer.

Ledgers are passed compiled, as ``(mu2, e_values, counts, others)`` (``FourierAccountant._compile``).
"""

import functools
import math
import typing

import numpy as np

from dpledger.accountants._laplace_first_order import (
    ExactParts,
    FirstOrder,
    continuous_profile,
    second_order,
    second_order_sup_factor,
)
from dpledger.accountants.two_point_ledger import MAX_ATOMS, TwoPointLedger, enumerated_outcomes
from dpledger.mechanisms import _logmath, closed_form_enclosures
from dpledger.mechanisms.relations import Direction

__all__ = ["LaplaceSplit", "laplace_split", "two_point_lattice", "two_point_log_mgf", "two_point_log_mgf_enclosure",
           "two_point_loss"]

_U = _logmath.EPS / 2.0
_LOG_2 = math.log(2.0)


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
    #: Whether the whole law's inversion is tried first (:data:`WHOLE_FIRST_LOG_ATOM_MASS`), the split where it fails.
    whole_first: bool = False


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
#: Where a ledger with mixed losses (the subsampled Laplace) has atoms of mass below ``e^`` this, the whole law's
#: inversion is tried before the split (which answers where it fails): the atoms then no longer hold it back, and it
#: needs no enumeration at each epsilon (PS(Laplace(2), 0.001) x 1000, atom mass e^-209: 21 against 4 ms; x 100,
#: e^-21: 36 against 8 ms; with Laplace(10) x 100, e^-5, the whole law took 5.9 s where the split took 0.3 s). A
#: performance choice only: both paths are proven.
WHOLE_FIRST_LOG_ATOM_MASS = -15.0


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
    laplace, asymmetric, mixed = [], [], []
    for m, n in others:
        if m.laplace_loss_ratio() is not None:
            laplace.append((m.laplace_loss_ratio(), n))
            continue
        parts = m.loss_split()
        if parts is not None:  # two atoms and a continuous part, per direction (the subsampled Laplace)
            mixed.append((m, parts, n))
            continue
        atoms = m.loss_atoms()
        if atoms is None:
            return None
        if atoms["remove"][:2] != (0.0, 0.0):  # a zero loss adds nothing
            asymmetric.append((atoms, n))
    if not (laplace or mixed):
        return None
    ts = np.array([t for t, _ in laplace], dtype=np.float64)
    ns = np.array([n for _, n in laplace], dtype=np.float64)
    mixed_n = [n for _, _, n in mixed]
    keep = e_values > 0.0
    two_e, two_n = e_values[keep], counts[keep]
    runs = np.concatenate((two_n, ns, [n for _, n in asymmetric], mixed_n))
    if enumerated_outcomes(runs) > MAX_ATOMS:
        return None
    # the atoms' mass (the larger direction's, remove: its atoms' masses are the larger), against the whole law's
    log_atom_mass = float(np.sum(ns * np.log1p(np.exp(-ts)) - ns * np.log(2.0))) + sum(
        n * float(np.logaddexp(parts["remove"].atoms[2], parts["remove"].atoms[3])) for _, parts, n in mixed)
    if float(np.prod(runs + 1.0)) > MAX_ATOMS and log_atom_mass < SPLIT_MIN_LOG_ATOM_MASS:
        return None  # a tail group would be needed, and the atoms weigh too little to stop the whole law's inversion
    largest = np.concatenate((two_e, ts, [max(abs(a["remove"][0]), abs(a["remove"][1])) for a, _ in asymmetric],
                              [max(abs(p["remove"].atoms[0]), abs(p["remove"].atoms[1])) for _, p, _ in mixed]))
    min_damping = split_min_damping(largest, np.concatenate((two_n, ns, [n for _, n in asymmetric], mixed_n)))
    whole_first = bool(mixed) and log_atom_mass < WHOLE_FIRST_LOG_ATOM_MASS
    splits = []
    for direction in (Direction.REMOVE, Direction.ADD) if (asymmetric or mixed) else (Direction.REMOVE,):
        key = "remove" if direction is Direction.REMOVE else "add"
        groups = _SplitGroups(two_e, two_n, ts, ns, tuple((a[key], n) for a, n in asymmetric),
                              tuple((m, parts[key], n) for m, parts, n in mixed), direction)
        atoms = _atom_ledger(groups, ns)
        first = _first_order(groups)
        if groups.mixed:  # R = M - D in absolute terms (no ratio C / A: a mixed group's atoms can vanish)
            continuous_runs = float(ns.sum()) + sum(mixed_n)
            if first is None:  # the rest R, all of it inverted
                split = LaplaceSplit(atoms, functools.partial(_mixed_rest_enclosure, groups=groups),
                                     functools.partial(_mixed_rest_sup, groups=groups), min_damping)
            elif continuous_runs == 1.0:  # one continuous run: R is the first-order part alone, priced exactly
                split = LaplaceSplit(ExactParts(atoms, first), None, None, min_damping)
            else:  # R_1 priced exactly, R_2 inverted
                split = LaplaceSplit(ExactParts(atoms, first),
                                     functools.partial(_mixed_rest_enclosure, groups=groups, second=True),
                                     functools.partial(_mixed_rest_sup, groups=groups, second=True), min_damping)
            splits.append((direction, split._replace(whole_first=whole_first)))
        elif first is None:  # the rest R, all of it inverted
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


def _atom_ledger(groups, laplace_runs, enumerate_all=False, mixed_runs=None):
    """The all-atom part of one direction's ledger (:class:`TwoPointLedger`) with ``laplace_runs`` runs of each
    Laplace group: its two-point groups (randomized response's masses), the Laplace atoms ``+t`` (mass 1/2) and
    ``-t`` (mass ``e^-t / 2``), and the asymmetric atoms."""
    log_pos = -np.log1p(np.exp(-groups.two_e))
    return TwoPointLedger(
        np.concatenate((groups.two_e, groups.ts)),
        np.concatenate((groups.two_n, laplace_runs)),
        log_masses=list(zip(log_pos, log_pos - groups.two_e)) + [(-np.log(2.0), -t - np.log(2.0)) for t in groups.ts],
        atoms=groups.asymmetric + tuple((part.atoms, n) for (_, part, _), n in zip(
            groups.mixed, [n for _, _, n in groups.mixed] if mixed_runs is None else mixed_runs)),
        enumerate_all=enumerate_all,
    )


def _first_order(groups):
    """The :class:`accountants._laplace_first_order.FirstOrder` of one direction (its groups ``groups``), or None
    where some Laplace group's all-atom ledger with a run fewer has more than :data:`FIRST_ORDER_MAX_OUTCOMES`
    outcomes (:data:`FIRST_ORDER_MAX_OUTCOMES_ALONE` for a single Laplace run)."""
    parts = []
    runs = groups.ns.sum() + sum(n for _, _, n in groups.mixed)
    limit = FIRST_ORDER_MAX_OUTCOMES_ALONE if runs == 1.0 else FIRST_ORDER_MAX_OUTCOMES
    mixed_n = [n for _, _, n in groups.mixed]
    for i, (t, n) in enumerate(zip(groups.ts, groups.ns)):
        fewer = groups.ns.copy()
        fewer[i] -= 1.0
        sizes = np.concatenate((groups.two_n, fewer, [m for _, m in groups.asymmetric], mixed_n)) + 1.0
        if float(np.prod(sizes)) > limit:
            return None
        parts.append((functools.partial(continuous_profile, t=float(t)), float(n),
                      _atom_ledger(groups, fewer, enumerate_all=True)))
    for j, (_, part, n) in enumerate(groups.mixed):
        fewer_mixed = list(mixed_n)
        fewer_mixed[j] -= 1
        sizes = np.concatenate((groups.two_n, groups.ns, [m for _, m in groups.asymmetric], fewer_mixed)) + 1.0
        if float(np.prod(sizes)) > limit:
            return None
        parts.append((part.continuous_profile, float(n), _atom_ledger(groups, groups.ns, enumerate_all=True,
                                                                     mixed_runs=fewer_mixed)))
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
    (ratios ``ts``, ``ns`` runs), asymmetric two-point losses ``((l1, l0, log P1, log P0), n)`` and mixed losses
    ``(mechanism, LossSplit, n)`` (two atoms and a continuous part: :meth:`mechanisms.base.Mechanism.loss_split`)."""

    two_e: np.ndarray
    two_n: np.ndarray
    ts: np.ndarray
    ns: np.ndarray
    asymmetric: tuple
    mixed: tuple = ()
    direction: Direction = Direction.REMOVE


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
    z_arg, reflection = closed_form_enclosures.reflect(s, float(np.max(np.concatenate((ts, two_e)), initial=0.0)))
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


def _continuous_parts(flat, groups):
    """Per continuous group (Laplace, then mixed) of a direction: ``(n, F, A)``, each an enclosure ``(log X~, log
    E)`` at the nodes, ``F`` the group's whole transform
    (:func:`mechanisms.closed_form_enclosures.laplace_log_mgf_enclosure`, the mechanism's
    :meth:`~mechanisms.base.Mechanism.log_mgf_enclosure`) and ``A`` its atoms' (:func:`_atoms_enclosure`)."""
    parts = []
    for t, n in zip(groups.ts, groups.ns):
        parts.append((float(n), closed_form_enclosures.laplace_log_mgf_enclosure(flat, float(t)),
                      _atoms_enclosure(flat, (t, -t, -_LOG_2, -t - _LOG_2), exact_losses=True)))
    for mechanism, part, n in groups.mixed:
        parts.append((float(n), mechanism.log_mgf_enclosure(flat, groups.direction),
                      _atoms_enclosure(flat, part.atoms)))
    return parts


def _product(factors):
    """``(log X~, log E)`` of ``prod X_i^n_i`` from ``(n_i, (log X~_i, log E_i))``
    (:func:`mechanisms._logmath.log_product_error`)."""
    triples = [(n, v, e) for n, (v, e) in factors if n]
    if not triples:
        return 0.0, -np.inf
    return sum(n * v for n, v, _ in triples), _logmath.log_product_error(triples)


def _mixed_rest_enclosure(s, groups, second=False):
    """``(log R~, log E)`` of the rest of a direction with mixed losses (module docstring): ``R = P (M' - D')``, or
    with ``second`` its second-order part ``R_2 = P (M' - D' - R_1')``, ``R_1' = sum_i n_i C_i A_i^(n_i - 1) prod_(j !=
    i) A_j^n_j`` (the products with exactly one continuous run, priced exactly by :func:`_first_order`). ``P`` is the
    two-point and asymmetric atoms' product (:func:`_atoms_part` without the Laplace groups), ``M' = prod F_i^n_i``
    and ``D' = prod A_i^n_i`` over the Laplace and mixed groups (:func:`_continuous_parts`), ``C_i = F_i - A_i``.

    No ratio ``C / A`` is formed: a mixed group's atoms ``A(s) = P1 e^(s l1) + P0 e^(s l0)`` vanish where ``P1 e^(c
    l1) = P0 e^(c l0)`` and ``u (l1 - l0)`` is an odd multiple of ``pi``, at dampings a plan may choose (``c = 0`` for
    ``g = 1/2``). Each product's error is absolute (:func:`_product`), and so is the signed sum's
    (:func:`_log_signed_sum`); ``P`` times it is combined as :func:`_rest_enclosure` does. The absolute errors do not
    decay with the frequency as ``R`` does; the inversion weighs a node's error by ``1 / |s (1 + s)|``."""
    s = np.asarray(s, dtype=np.complex128)
    flat = s.reshape(-1)
    log_p, d_log_p = _atoms_part(flat, groups._replace(ts=np.zeros(0), ns=np.zeros(0)))[:2]
    parts = _continuous_parts(flat, groups)
    terms = [(1.0,) + _product([(n, f) for n, f, _ in parts]), (-1.0,) + _product([(n, a) for n, _, a in parts])]
    if second:
        for i, (n_i, f_i, a_i) in enumerate(parts):
            c_i = _log_signed_sum([(1.0,) + tuple(f_i), (-1.0,) + tuple(a_i)])
            # n_i as a factor: e^(fl(log n)) within 2u (1 + log n) of n
            log_n = (np.full(flat.shape, math.log(n_i)),
                     np.full(flat.shape, math.log(n_i * 2.0 * _U * (1.0 + math.log(n_i)) * 1.01)))
            others = [(n, a) for j, (n, _, a) in enumerate(parts) if j != i]
            factors = [(1.0, log_n), (1.0, c_i), (n_i - 1.0, a_i)] + others
            terms.append((-1.0,) + _product(factors))
    log_r, log_err_r = _log_signed_sum(terms)
    return _combined(log_p, d_log_p, log_r, log_err_r, s.shape)


def _atoms_enclosure(s, atoms, exact_losses=False):
    """:func:`mechanisms.closed_form_enclosures.atoms_log_mgf_enclosure` of two atoms ``(l1, l0, log P1, log P0)``,
    each value within ``u`` of its exact one (relative, :class:`mechanisms.base.LossSplit`; a Laplace group's losses
    ``+-t`` exact, its log-masses within ``u`` of ``-log 2`` and ``2u`` of ``-t - log 2``), doubled."""
    l1, l0, p1, p0 = atoms
    loss, log_mass = np.array([l1, l0], dtype=np.float64), np.array([p1, p0], dtype=np.float64)
    loss_err = np.zeros(2) if exact_losses else 2.0 * _U * np.abs(loss)
    return closed_form_enclosures.atoms_log_mgf_enclosure(s, log_mass, loss, 4.0 * _U * (np.abs(log_mass) + 1.0),
                                                         loss_err)


def _log_signed_sum(terms):
    """``(log d~, log E)`` for ``d = sum_k sigma_k X_k`` (``sigma_k = +-1``) from enclosures ``|X_k - e^(v_k)| <=
    e^(e_k)`` given as ``(sigma_k, v_k, e_k)``: with ``top`` the largest real part, ``d~ = sum_k sigma_k e^(v_k - top)``
    scaled back, whose error is the enclosures' plus its own rounding (each exponent ``v_k - top`` within ``u`` of its
    real part, each exponential ``2 eps``, the ``K - 1`` additions ``K u`` of the sum of the moduli), absolute:
    nothing is divided by ``|d|``."""
    res = [np.real(v) for _, v, _ in terms]
    top = res[0]
    for r in res[1:]:
        top = np.maximum(top, r)
    top = np.where(np.isfinite(top), top, 0.0)
    total, rounding, errors, moduli = 0.0, 0.0, 0.0, 0.0
    with np.errstate(under="ignore", divide="ignore", invalid="ignore", over="ignore"):
        for (sign, value, log_err), re in zip(terms, res):
            x = np.exp(value - top)
            total = total + sign * x
            rounding = rounding + np.abs(x) * (np.expm1(_U * np.abs(re - top) * 1.01) + 2.0 * _logmath.EPS)
            moduli = moduli + np.abs(x)
            errors = errors + np.exp(log_err - top)
        error = (errors + rounding + len(terms) * _U * moduli) * (1.0 + 4.0 * _logmath.EPS)
        log_d = np.log(total) + top
        log_err = np.log(error) + top
    return log_d, log_err + 4.0 * _logmath.EPS * (np.abs(log_err) + 1.0)


def _mixed_rest_sup(kappa, u_min, groups, second=False):
    """``|R| <= P(c) (prod (A_i(c) + S_i)^n_i - prod A_i(c)^n_i) = D(c) expm1(x)``, ``x = sum n_i log1p(rho_i)``,
    ``rho_i >= S_i / A_i(c)``, ``S_i >= sup_{|u| >= u_min} |C_i(c + iu)|`` (``|A_i(c + iu)| <= A_i(c)``; expand the
    product); with ``second``, ``|R_2| <= D(c) (e^x - 1 - x)`` (:func:`_second_sup`). For a Laplace group ``rho = 1 /
    |1 + 2c' + 2iu|`` (:func:`_rest_sup`), for a mixed group its ``continuous_sup`` over a lower bound on ``A_i(c)``
    (its enclosure's value less its error). ``D(c)`` is the upper end of the all-atom part's enclosure at ``c``; the
    rest is raised by a few ulps of its parts."""
    point = np.array([complex(kappa)])
    log_p, d_log_p = _atoms_part(point, groups._replace(ts=np.zeros(0), ns=np.zeros(0)))[:2]
    log_d_upper = float(np.real(log_p[0])) + float(d_log_p[0])
    c = kappa if kappa >= -0.5 else -1.0 - kappa
    x = float(groups.ns.sum()) * float(np.log1p(1.0 / np.hypot(1.0 + 2.0 * c, 2.0 * u_min)))
    for t, n in zip(groups.ts, groups.ns):
        value, log_err = _atoms_enclosure(point, (t, -t, -_LOG_2, -t - _LOG_2), exact_losses=True)
        log_d_upper += float(n) * float(closed_form_enclosures.upper_from_enclosure(value[0], log_err[0]))
    for _, part, n in groups.mixed:
        value, log_err = _atoms_enclosure(point, part.atoms)
        a_value = float(np.real(value[0]))
        log_d_upper += n * float(closed_form_enclosures.upper_from_enclosure(value[0], log_err[0]))
        # A(c) >= e^value - e^log_err (real c: A(c) > 0), in logs; lowered by a few ulps
        gap = float(log_err[0]) - a_value
        if not gap < -1.0:
            return math.inf
        log_a_low = a_value + math.log1p(-math.exp(gap)) - 8.0 * _logmath.EPS * (abs(a_value) + 1.0)
        log_rho = part.continuous_sup(kappa, u_min) - log_a_low
        x += n * float(np.log1p(math.exp(min(log_rho, 700.0))))
    x *= 1.0 + 8.0 * _U * (len(groups.mixed) + 2)
    log_rest = second_order_sup_factor(x) if second else float(_logmath.log_expm1(x))
    upper = log_d_upper + log_rest
    return upper + 8.0 * _logmath.EPS * (abs(upper) + abs(log_rest) + abs(x) + abs(log_d_upper) + 1.0)
