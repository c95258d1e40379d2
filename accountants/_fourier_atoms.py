"""Atoms of a composed privacy loss, enumerated exactly for :class:`accountants.FourierAccountant`.

Two-point losses: randomized response with ``0 < p < 1`` and pure ``E``-DP are dominated by the pair
(Bernoulli(p*), Bernoulli(1 - p*)), ``p* = 1 / (1 + e^-E)``, whose loss is ``+-E`` (Kairouz et al. 2015; the
closed form is in :mod:`mechanisms.privacy_loss`), so ``log M(s) = log(p* e^(sE) + (1 - p*) e^(-sE))`` and a
composition adds these (thesis Def 3.3.7, Prop 3.3.8). Their characteristic functions do not decay, so Fourier
inversion would need ~1/rtol nodes; a ledger of them alone (at most ``MAX_ATOMS`` composed outcomes) is
enumerated exactly instead (:func:`two_point_lattice`, :class:`accountants.fourier_inversion.TwoPointLedger`).

Laplace split: a Laplace loss (``t = sensitivity / scale``) is ``M = A + C``, atoms ``A`` at ``+-t`` and a
continuous part ``C`` (:func:`mechanisms.privacy_loss.laplace_split_log_mgf`). For a ledger of Laplace and two-point
losses only (no Gaussian), the all-atom part ``D = prod B_j^n_j prod A_i^n_i`` of the composed law is enumerated
exactly and only the rest ``R = M - D = D (prod (1 + C_i/A_i)^n_i - 1)`` is Fourier-inverted
(:func:`laplace_split`). ``R`` is a non-negative measure whose every term has a continuous factor, so ``|R| <=
D(c) ((1 + 1/|1 + 2s|)^N - 1) ~ N D(c) / |u|`` decays and the truncation error falls like 1/U^2, where the whole
characteristic function (atoms included) does not decay at all.

Ledgers are passed compiled, as ``(mu2, e_values, counts, others)`` (``FourierAccountant._compile``).
"""

import math
import typing

import numpy as np

from dpledger.accountants.fourier_inversion import MAX_ATOMS, TwoPointLedger
from dpledger.mechanisms import privacy_loss

__all__ = ["LaplaceSplit", "laplace_split", "two_point_lattice", "two_point_log_mgf", "two_point_loss"]


class LaplaceSplit(typing.NamedTuple):
    """A Laplace ledger split into its atoms and the rest (module docstring)."""

    #: The all-atom part ``D``, enumerated exactly.
    atoms: TwoPointLedger
    #: ``s -> log R(s)``, the log transform of the rest, at the Fourier nodes.
    node_log: typing.Callable
    #: ``(kappa, u_min) -> log sup_{|u| >= u_min} |R(kappa + iu)|``.
    sup: typing.Callable
    #: ``sum over runs of (E + 2)``, ``E`` each run's largest loss: the float rounding of the ledger's log MGF at a
    #: real tilt in ``[-1, 0]`` is within ``4u`` of it (each run's ``log`` of a sum of two or three positive terms,
    #: exponents of magnitude at most ``E``, then ``n`` times that). It grows with the runs; the inversion's
    #: per-node rounding model, ``(8 + |log M|) u``, does not (closed forms carry no rounding bound of their own yet).
    rounding_scale: float = math.inf


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


def two_point_lattice(compiled):
    """Exact enumeration (:class:`TwoPointLedger`) when the ledger has only two-point losses (randomized
    response, pure DP) with at most ``MAX_ATOMS`` composed outcomes; None otherwise."""
    mu2, e_values, counts, others = compiled
    if mu2 or others or not e_values.size:
        return None
    keep = e_values > 0.0
    if float(np.prod(counts[keep] + 1.0)) > MAX_ATOMS:
        return None
    return TwoPointLedger(e_values[keep], counts[keep])


def laplace_split(compiled):
    """For ledgers of Laplace and two-point losses only (no Gaussian): the :class:`LaplaceSplit` ``(atoms,
    node_log, sup)`` of the module docstring, where ``atoms`` enumerates ``D`` (``A_i`` the Laplace atoms) and
    ``node_log`` / ``sup`` give ``log R`` and a bound on ``|R|`` beyond a frequency. None if not applicable or if
    the atoms exceed ``MAX_ATOMS``."""
    mu2, e_values, counts, others = compiled
    if mu2 or not others or any(m.laplace_loss_ratio() is None for m, _ in others):
        return None
    ts = np.array([m.laplace_loss_ratio() for m, _ in others], dtype=np.float64)
    ns = np.array([n for _, n in others], dtype=np.float64)
    keep = e_values > 0.0
    if float(np.prod(counts[keep] + 1.0) * np.prod(ns + 1.0)) > MAX_ATOMS:
        return None
    log_pos = -np.log1p(np.exp(-e_values[keep]))
    atoms = TwoPointLedger(
        np.concatenate((e_values[keep], ts)),
        np.concatenate((counts[keep], ns)),
        log_masses=list(zip(log_pos, log_pos - e_values[keep])) + [(-np.log(2.0), -t - np.log(2.0)) for t in ts],
    )
    two_e, two_n = e_values[keep], counts[keep]

    def log_d_and_z(s):
        s = np.asarray(s, dtype=np.complex128)
        s = np.where(s.real < -0.5, -1.0 - s, s)  # every pair here is symmetric: M(s) = M(-1 - s)
        log_d = two_point_log_mgf(s, two_e, two_n) if two_e.size else np.zeros(s.shape, dtype=np.complex128)
        z = np.zeros(s.shape, dtype=np.complex128)
        with np.errstate(divide="ignore"):
            for t, n in zip(ts, ns):
                log_a, ratio = privacy_loss.laplace_split_log_mgf(s, t)
                log_d = log_d + n * log_a
                z = z + n * np.log1p(ratio)
        return log_d, z

    def node_log(s):
        log_d, z = log_d_and_z(s)
        with np.errstate(divide="ignore"):
            return log_d + np.log(np.expm1(z))

    total_n = float(ns.sum())

    def sup(kappa, u_min):
        log_d = float(np.real(log_d_and_z(np.array([complex(kappa)]))[0][0]))
        c = kappa if kappa >= -0.5 else -1.0 - kappa
        return log_d + float(np.log(np.expm1(total_n * np.log1p(1.0 / np.hypot(1.0 + 2.0 * c, 2.0 * u_min)))))

    rounding_scale = float(np.sum(counts[keep] * (e_values[keep] + 2.0)) + np.sum(ns * (ts + 2.0)))
    return LaplaceSplit(atoms, node_log, sup, rounding_scale)
