"""The body of the Poisson-subsampled Gaussian's remove-direction law: the law cut at a standardised output.

With ``g`` the sampling probability, ``mu = 1 / noise_multiplier``, ``X`` the base Gaussian's output standardised
(``N(0, 1)`` under the second distribution of the pair, density ``phi``) and ``B(x) = 1 - g + g e^(mu x - mu^2/2)``,
the remove direction of thesis Thm 3.3.5 is the pair ``(P, Q)`` with ``dP/dQ = B(X)`` and privacy loss ``L =
r(X) = log B(X)``; its moment generating function is ``M(s) = E_P[e^(s L)] = int phi B^(1 + s) = F(1 + s)``
(:mod:`mechanisms.subsampled_gaussian_cf`).

For a cut ``c`` the law splits as ``P = P_b + P_t``: ``P_b(A) = P(A, X <= c)`` (the body) and ``P_t`` the rest (the
tail), of mass ``p = int_c^inf phi B = (1 - g) Phi(-c) + g Phi(mu - c)``. Facts of the law (each exact):

* ``r`` increases strictly in ``x`` (``g > 0``, ``mu > 0``), so ``{X <= c} = {L <= r(c)}``: the body is the law
  of the loss restricted to losses at most ``r(c)``, and its transform is ``M_b(s) = E_P[e^(s L); X <= c] =
  F_b(1 + s)`` with ``F_b(z) = int_(-inf)^c phi(x) B(x)^z dx``.
* ``M_b(0) = F_b(1) = 1 - p``: the body is a sub-probability measure.
* At real ``s``, ``0 < M_b(s) <= M(s)`` (the integrand ``phi B^(1 + s)`` is positive), and ``M(s) - M_b(s) =
  E_P[e^(s L); X > c]``; for complex ``s``, ``|M_b(s)| <= M_b(Re s)``.
* For ``k`` independent runs, ``P^k = P_b^k + R`` where ``R`` (every product with at least one tail factor) is a
  positive measure of mass ``1 - (1 - p)^k <= k p``. A privacy profile ``delta(eps) = E_(P^k)[(1 - e^(eps -
  L_1 - ... - L_k))_+]`` integrates a function with values in ``[0, 1]``, so ``delta_b(eps) <= delta(eps) <=
  delta_b(eps) + 1 - (1 - p)^k``, ``delta_b`` the same expectation under ``P_b^k``, whose transform is ``M_b^k``
  (the expectation is linear in the measure; the accountant's inversion applies to it as to ``M^k``).

:class:`RemoveBody` holds the cut and offers the body's proven transform; the accountant chooses the cut
(:meth:`PoissonSubsampled.remove_body <mechanisms.subsampled.PoissonSubsampled.remove_body>`, which places it by
:func:`cut_for_tail_mass`) and charges the tail (:func:`log_tail_mass`, a proven upper bound on ``log p``).
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np
from numpy.typing import ArrayLike
from scipy import optimize, special

from dpledger.mechanisms import _body_series, _logmath, _tilts, _validate, subsampled
from dpledger.mechanisms.subsampled import PoissonSubsampled
from dpledger.mechanisms.subsampled_gaussian_cf import _U, _checked_cut, _slack

__all__ = ["CUT_MAX_SAMPLING", "RemoveBody", "cut_for_tail_mass", "log_tail_mass"]

#: Largest sampling probability for which :meth:`PoissonSubsampled.remove_body
#: <mechanisms.subsampled.PoissonSubsampled.remove_body>` offers a body: a performance choice, never a soundness one.
#: Below it the loss is narrow next to its lognormal upper tail, and cutting the tail moves the inversion's saddle
#: point far beyond the usual damping cap. Measured by ``python -m benchmarks.bench_fourier_cut`` on issue 14's
#: grid (benchmarks/RESULTS.md): cutting is faster in 31 of the 32 cells at q = 1e-4 and 1e-3 (down to 0.09x of the
#: whole law's time, one cell 1.02x) and lets inversion certify four cells the whole law left to the privacy
#: buckets; at q = 0.01 it is slower in 11-12 of 16 cells (up to 22-24x, at 10^6 steps).
CUT_MAX_SAMPLING = 2e-3


@dataclasses.dataclass(frozen=True, slots=True)
class RemoveBody:
    """The body ``P_b = P restricted to X <= cut`` of ``mechanism``'s remove-direction law (module docstring).

    ``mechanism`` must be a Poisson-subsampled Gaussian (a base with a proven subsampled enclosure and a Gaussian
    loss, ``0 < sampling_probability < 1``); ``cut`` a real number or ``+inf`` (then the body is the whole law).
    Every method returns proven bounds on the body's transform ``M_b(s) = F_b(1 + s)``, remove direction, at the
    exact ``1 + s`` (where its float is not exact, the bounds are widened as
    :class:`~mechanisms.subsampled.PoissonSubsampled` widens its own ``M``'s: :mod:`mechanisms._tilts`).

    Examples
    --------
    >>> from dpledger.mechanisms import GaussianMechanism, PoissonSubsampled
    >>> body = PoissonSubsampled(GaussianMechanism(sigma=2.0), sampling_probability=1e-4).remove_body(-40.0)
    >>> body.log_tail_mass <= -40.0
    True
    """

    mechanism: PoissonSubsampled
    cut: float

    def __post_init__(self):
        m = self.mechanism
        if not isinstance(m, PoissonSubsampled):
            raise TypeError(f"`mechanism` of RemoveBody must be a PoissonSubsampled; got {type(m).__name__}.")
        q = m.sampling_probability
        if not (0.0 < q < 1.0 and m.mechanism.has_subsampled_enclosure
                and m.mechanism.gaussian_loss_noise_multiplier() is not None):
            raise ValueError(
                f"`mechanism` of RemoveBody must subsample a Gaussian with a sampling probability in (0, 1); got "
                f"{m!r}.")
        cut = _validate.real(self.cut, "cut", "RemoveBody", allow_inf=True)
        if cut == -math.inf:
            raise ValueError("`cut` of RemoveBody must be a real number or +inf; got -inf.")
        object.__setattr__(self, "cut", cut)

    @property
    def _mu(self) -> float:
        return 1.0 / self.mechanism.mechanism.gaussian_loss_noise_multiplier()

    @property
    def log_tail_mass(self) -> float:
        """A proven upper bound on ``log p``, ``p = P(X > cut)`` the tail's mass
        (:func:`log_tail_mass`); ``-inf`` for ``cut = inf``."""
        return log_tail_mass(self.mechanism.sampling_probability, self._mu, self.cut)

    def log_mgf_enclosure(self, s: ArrayLike) -> tuple[np.ndarray, np.ndarray]:
        """``(value, log_err)`` with ``|M_b(s) - e^value| <= e^log_err`` at complex ``s`` of any shape.

        Grouped by real part (one enclosure of ``F_b(1 + Re s + iv)`` per real part, as
        :class:`~mechanisms.subsampled.PoissonSubsampled` groups ``M``); an array of real arguments goes through
        the batched real-axis enclosure (one shared layout).
        """
        arr = np.asarray(s, dtype=np.complex128)
        flat = arr.reshape(-1)
        if not np.isfinite(flat).all():
            raise ValueError(f"`s` of RemoveBody.log_mgf_enclosure must be finite; got {flat[~np.isfinite(flat)][0]}.")
        value, error = subsampled.tilted_enclosure(
            self.mechanism.mechanism, self.mechanism.sampling_probability, flat, cut=self.cut)
        return value.reshape(arr.shape), error.reshape(arr.shape)

    def log_mgf_upper(self, s: ArrayLike) -> np.ndarray:
        """Proven upper bounds on ``log M_b(s)`` at real ``s`` (any shape, batched). At ``s >= 0`` with a finite cut:
        the binomial sum of :mod:`mechanisms._body_series` (exact at integer tilts, the chord of the convex ``log
        M_b`` between them; a few hundred terms where the enclosure lays out panels near a steep cut at every
        tilt), at ``fl(1 + s)`` and, where that is not exact, also at its neighbour beyond ``1 + s``, the larger of
        the two (``log M_b`` is convex). Elsewhere the enclosure's value plus its error, ``log(e^value +
        e^log_err)``, raised by ``1e-12`` relative and absolute for its own rounding."""
        arr = np.asarray(s, dtype=np.float64)
        if not np.isfinite(arr).all():
            raise ValueError(f"`s` of RemoveBody.log_mgf_upper must be finite; got {arr[~np.isfinite(arr)][0]}.")
        if arr.size == 0:
            return np.zeros(arr.shape)
        base, q = self.mechanism.mechanism, self.mechanism.sampling_probability
        tilts, inverse = np.unique(arr.reshape(-1), return_inverse=True)
        upper = np.empty(tilts.shape)
        series = (tilts >= 0.0) & math.isfinite(self.cut)
        if series.any():
            # at the exact 1 + s, between fl(1 + s) and its neighbour, the convex log F_b is at most the larger
            z, offset = _tilts.two_sum(1.0, tilts[series])
            values = _body_series.log_body_upper(z, q, self._mu, self.cut)
            where, other = _tilts.convex_bracket(z, offset)
            if where.any():
                values[where] = np.maximum(values[where], _body_series.log_body_upper(other, q, self._mu, self.cut))
            upper[series] = values
        if (~series).any():
            values, errors = subsampled.tilted_enclosure(base, q, tilts[~series].astype(np.complex128), cut=self.cut)
            upper[~series] = _logmath.widen_up(np.logaddexp(values.real, errors), 1e-12, 1e-12)
        return upper[inverse].reshape(arr.shape)

    def log_mgf_sup(self, real_part: float, u_min: float) -> float:
        """A proven bound on ``sup_{|u| >= u_min} log |M_b(real_part + iu)|``
        (:func:`mechanisms.subsampled_gaussian_decay.log_f_sup` with the cut: the shifted contour plus its vertical
        side at the cut; the body's density jumps there, so the bound decays only like ``1 / u`` at large
        ``u``)."""
        real_part = _validate.real(real_part, "real_part", "RemoveBody.log_mgf_sup")
        u_min = _validate.nonnegative(u_min, "u_min", "RemoveBody.log_mgf_sup")
        return subsampled.tilted_sup(
            self.mechanism.mechanism, self.mechanism.sampling_probability, real_part, u_min, cut=self.cut)


def log_tail_mass(g: float, mu: float, cut: float) -> float:
    """A proven upper bound on ``log p``, ``p = int_cut^inf phi(x) B(x) dx``: the remove direction's mass beyond the
    cut (module docstring).

    ``phi(x) w(x) = phi(x - mu)``, so ``p = (1 - g) Phi(-cut) + g Phi(mu - cut)``, computed as a ``logaddexp`` of
    ``log1p(-g) + log_ndtr(-cut)`` and ``log g + log_ndtr(mu - cut)``. Each term is raised by its error:
    ``log_ndtr`` taken good to ``1e-13`` relative (scipy's is to a few ulps; the tests check it against mpmath);
    the rounding of ``mu - cut`` (``u`` of it) moves ``log Phi`` by at most ``u |x| (|x| + 1)``, since ``d log
    Phi(x) / dx = phi(x) / Phi(x) <= |x| + 1`` (for ``x < 0`` from the Mills-ratio bound ``Phi(-t) / phi(t) >=
    (sqrt(t^2 + 4) - t) / 2``, Birnbaum 1942; for ``x >= 0`` it is at most ``phi(0) / Phi(0) < 1``); ``log1p``,
    ``log`` and the sums add a few ``u`` of the magnitudes. The ``logaddexp`` is then widened by ``1e-12``
    relative and absolute (``_slack``), far above its own few roundings, and capped at 0 (``p <= 1``).
    ``cut = inf`` gives ``-inf`` (no tail).
    """
    g = _validate.open_unit_interval(g, "g", "log_tail_mass")
    mu = _validate.positive(mu, "mu", "log_tail_mass")
    cut = _checked_cut(cut)
    if cut == math.inf:
        return -math.inf
    log_keep, log_g = math.log1p(-g), math.log(g)
    arg = mu - cut
    l1, l2 = float(special.log_ndtr(-cut)), float(special.log_ndtr(arg))
    e1 = 1e-13 * abs(l1) + 2.0 * _U * (abs(log_keep) + abs(l1))
    e2 = 1e-13 * abs(l2) + _U * abs(arg) * (abs(arg) + 1.0) + 2.0 * _U * (abs(log_g) + abs(l2))
    value = float(np.logaddexp(log_keep + l1 + 2.0 * e1, log_g + l2 + 2.0 * e2))
    return min(_slack(value), 0.0)


def cut_for_tail_mass(g: float, mu: float, log_mass: float) -> float:
    """A cut with ``log_tail_mass(g, mu, cut) <= log_mass`` (``log_mass < 0``; ``-inf`` gives ``inf``).

    ``p`` decreases in the cut: the root of ``log_tail_mass(cut) = log_mass`` is bracketed by doubling and found by
    Brent's method to ``1e-12``; the cut returned is then checked with :func:`log_tail_mass` itself and moved up
    (doubling steps from ``1e-14`` relative) until the check passes, so the target holds for the float returned.
    """
    g = _validate.open_unit_interval(g, "g", "cut_for_tail_mass")
    mu = _validate.positive(mu, "mu", "cut_for_tail_mass")
    log_mass = _validate.real(log_mass, "log_mass", "cut_for_tail_mass", allow_inf=True)
    if not log_mass < 0.0:
        raise ValueError(f"`log_mass` of cut_for_tail_mass must be below 0 (a mass below 1); got {log_mass}.")
    if log_mass == -math.inf:
        return math.inf

    def excess(c):
        return log_tail_mass(g, mu, c) - log_mass

    lo, hi = -1.0, max(2.0 * mu, 1.0)
    while excess(lo) <= 0.0:  # p -> 1 as the cut -> -inf, and log_mass < 0
        lo *= 2.0
    while excess(hi) > 0.0:
        hi *= 2.0
    cut = float(optimize.brentq(excess, lo, hi, xtol=1e-12, rtol=1e-15))
    step = 1e-14 * max(abs(cut), 1.0)
    while excess(cut) > 0.0:
        cut += step
        step *= 2.0
    return cut
