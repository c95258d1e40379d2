"""Private linear regression with generalized PTR (thesis Sec 6.4.5, Example 6.4.8) and the chapter's baselines.

Data: rows with ``||x|| <= x_bound`` and ``|y| <= y_bound`` (public bounds; the caller scales and clips with
public constants). Neighbouring relation: add or remove one record.

:func:`ops_ptr` is thesis Example 6.4.8 for one proposal ``lambda``: the test privately releases a lower bound of
``lambda_min(X^T X)`` (sensitivity ``x_bound^2``, Weyl) and an upper bound of ``||X^T y||`` (sensitivity
``x_bound y_bound``), each by the Laplace mechanism with ``test_epsilon / 2`` and failure probability
``false_positive_rate / 2`` (:func:`predict.ptr.laplace_statistic_bound`'s shift); since
``||theta*_lambda|| <= ||X^T y|| / (lambda + lambda_min)``, these give an upper bound of the Lipschitz constant
``L`` of thesis Thm 6.4.7 (the thesis defers its release to the full paper; this is the bound used here). It then
takes the largest ``gamma`` whose Thm 6.4.7 epsilon at the released bounds is at most ``epsilon``
(:func:`accountants.ops_regression.ops_largest_gamma`) and samples OPS with ``(lambda, gamma)``; if no ``gamma``
fits, it releases nothing. Guarantee: thesis Thm 6.4.6, ``(epsilon + test_epsilon, delta + false_positive_rate)``.
:func:`ops_ptr_select` is thesis Algorithm 8 over a grid of ``lambda`` (Thm 6.4.5), scored on public
validation data.

Baselines (thesis Sec 6.4.5): :func:`output_perturbation` (ridge solution plus Gaussian noise calibrated to its
global sensitivity, Chaudhuri et al. 2011) and :func:`ops_data_independent` (OPS with the data-independent bounds
``lambda_min >= 0`` and ``||theta*|| <= sqrt(n) y_bound / (2 sqrt(lambda))``). Both treat the record count ``n``
as public, as the chapter's experiments do. :func:`baseline_select` chooses a baseline's ``lambda`` the way
OPS-PTR does: thesis Algorithm 8 (Thm 6.4.5) on the validation score, each call the baseline's own ``(eps*, delta*)``-DP
release (a test that always passes and costs nothing: the baseline's guarantee holds for every data set).

:func:`adaops` is the chapter's third baseline, AdaOPS (Wang 2018b; thesis Sec 6.4.5: "run OPS with
``(lambda, gamma)`` chosen adaptively according to the dataset ... by minimizing an upper bound of the
data-dependent empirical risk"), stated through generalized PTR: the test releases the same two Laplace bounds
as Example 6.4.8 (``lambda_min`` lower, ``||X^T y||`` upper; ``epsilon / 4`` each, as Wang's ``eps/4 + eps/4 +
eps/2`` split), then, as post-processing of those releases only, picks ``lambda`` on a public grid minimising
``lambda R^2 + d / gamma(lambda)`` (``R`` a public guess of ``||theta*||``, 1 as in Wang's code; ``d / gamma``
bounds the expected excess empirical risk ``tr(X^T X (gamma (X^T X + lambda I))^{-1})`` of the posterior
sample, and ``lambda R^2`` the ridge bias), with ``gamma(lambda)`` the largest that Thm 6.4.7 allows at the
released bounds within ``epsilon / 2``. Guarantee: thesis Thm 6.4.6, ``(epsilon / 2 + epsilon / 2, delta / 2 +
delta / 2)``. Departure from Wang 2018b: Wang releases ``log L`` with noise scaled to the local sensitivity
``log(1 + x_bound^2 / (lambda + lambda_min))`` at the released ``lambda_min`` (and a Gaussian ``lambda_min``);
here ``L`` comes from the global-sensitivity bound of ``||X^T y||``, so that the test is an ordinary
``epsilon / 2``-DP release and Thm 6.4.6 applies without a further argument.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np
from numpy.typing import ArrayLike

from dpledger.accountants.calibration import calibrate_gaussian_sigma
from dpledger.accountants.ops_regression import ops_epsilon, ops_largest_gamma
from dpledger.accountants.ptr import PTRGuarantee
from dpledger.mechanisms import _validate
from dpledger.predict.ptr import (
    PrivateTest,
    PrivateUpperBound,
    PTRResult,
    RandomState,
    SelectionResult,
    _generator,
    generalized_ptr,
    ptr_select,
)

__all__ = ["ops_ptr", "ops_ptr_select", "ops_sample", "output_perturbation", "ops_data_independent", "ridge",
           "adaops", "baseline_select"]


def _data(X, y, x_bound, y_bound, owner):
    X = np.asarray(X, dtype=np.float64)
    y = np.asarray(y, dtype=np.float64).reshape(-1)
    if X.ndim != 2 or X.shape[0] != y.shape[0] or X.shape[0] == 0:
        raise ValueError(f"`X` and `y` of {owner} must be (n, d) and (n,) with n >= 1; got {X.shape}, {y.shape}.")
    if not (np.all(np.isfinite(X)) and np.all(np.isfinite(y))):
        raise ValueError(f"`X` and `y` of {owner} must be finite.")
    if np.max(np.linalg.norm(X, axis=1)) > x_bound * (1 + 1e-12) or np.max(np.abs(y)) > y_bound * (1 + 1e-12):
        raise ValueError(f"rows of `X` must have norm <= x_bound and `y` must be in [-y_bound, y_bound] ({owner}).")
    return X, y


def ridge(X: ArrayLike, y: ArrayLike, lam: float) -> np.ndarray:
    """``theta*_lambda = (X^T X + lambda I)^{-1} X^T y`` (not private)."""
    X, y = np.asarray(X, dtype=np.float64), np.asarray(y, dtype=np.float64)
    return np.linalg.solve(X.T @ X + lam * np.eye(X.shape[1]), X.T @ y)


def ops_sample(X: ArrayLike, y: ArrayLike, lam: float, gamma: float, rng: np.random.Generator) -> np.ndarray:
    """One posterior sample ``theta ~ N(theta*_lambda, (gamma (X^T X + lambda I))^{-1})`` (thesis Example 6.4.4)."""
    A = X.T @ X + lam * np.eye(X.shape[1])
    mean = np.linalg.solve(A, X.T @ y)
    chol = np.linalg.cholesky(A * gamma)
    return mean + np.linalg.solve(chol.T, rng.standard_normal(X.shape[1]))


def _shift(sensitivity, epsilon, failure):
    return float(np.nextafter(sensitivity * math.log(1.0 / (2.0 * failure)) / epsilon, np.inf))


def _ptr_parts(lam, epsilon, test_epsilon, delta, false_positive_rate, x_bound, y_bound, owner):
    """The test and mechanism of Example 6.4.8 for one ``lambda``, sharing the calibrated ``gamma``."""
    lam = _validate.positive(lam, "lam", owner)
    eps_t = _validate.positive(test_epsilon, "test_epsilon", owner)
    fp = _validate.real(false_positive_rate, "false_positive_rate", owner)
    if not 0.0 < fp < 0.5:
        raise ValueError(f"`false_positive_rate` of {owner} must be in (0, 1/2); got {fp}.")
    state = {}
    s_min, s_xty = x_bound**2, x_bound * y_bound
    shift_min, shift_xty = _shift(s_min, eps_t / 2, fp / 2), _shift(s_xty, eps_t / 2, fp / 2)

    def release(data, rng):
        X, y = data
        lam_min = float(np.linalg.eigvalsh(X.T @ X)[0])
        lower = max(lam_min - shift_min + float(rng.laplace(0.0, 2.0 * s_min / eps_t)), 0.0)
        xty = float(np.linalg.norm(X.T @ y))
        upper = max(xty + shift_xty + float(rng.laplace(0.0, 2.0 * s_xty / eps_t)), 0.0)
        lam_star = lam + lower
        lipschitz = x_bound * (x_bound * upper / lam_star + y_bound)
        gamma = ops_largest_gamma(epsilon, lam_star, lipschitz, delta, x_bound)
        state["gamma"] = gamma
        if gamma is None or gamma <= 0:
            return math.inf
        return ops_epsilon(gamma, lam_star, lipschitz, delta, x_bound)

    def mechanism(data, rng):
        return ops_sample(data[0], data[1], lam, state["gamma"], rng)

    test = PrivateUpperBound(release=release, epsilon=eps_t, delta=0.0, failure_probability=fp,
                             name="Laplace bounds of lambda_min and ||X^T y|| (Example 6.4.8)")
    return test, mechanism


def ops_ptr(X: ArrayLike, y: ArrayLike, lam: float, *, epsilon: float, test_epsilon: float, delta: float,
            false_positive_rate: float, x_bound: float = 1.0, y_bound: float = 1.0, accountant: Any = None,
            random_state: RandomState = None) -> PTRResult:
    """Thesis Example 6.4.8 for one proposal ``lambda``; a :class:`~predict.ptr.PTRResult` whose ``output`` is
    ``theta`` (or ``None``) and whose guarantee is thesis Thm 6.4.6's ``(epsilon + test_epsilon,
    delta + false_positive_rate)``."""
    owner = "ops_ptr"
    X, y = _data(X, y, x_bound, y_bound, owner)
    test, mechanism = _ptr_parts(lam, epsilon, test_epsilon, delta, false_positive_rate, x_bound, y_bound, owner)
    return generalized_ptr((X, y), mechanism, epsilon=epsilon, delta=delta, test=test, accountant=accountant,
                           random_state=random_state)


def _selection_budget(epsilon, delta, k, tau, owner):
    """Thesis Sec 6.4.5's settings of Algorithm 8: ``tau = 0.05 / k`` (unless given), ``delta_2 = delta / 2``, and
    the per-call ``(eps*, delta*)`` whose Thm 6.4.5 guarantee is at most ``(epsilon, delta)`` (a hair below)."""
    from dpledger.accountants.ptr import hyperparameter_selection_cutoff

    tau = 0.05 / k if tau is None else tau
    delta_2 = delta / 2.0
    cutoff = hyperparameter_selection_cutoff(tau, delta_2)
    root = (delta - delta_2) / cutoff * (1 - 1e-9)  # sqrt(2 delta*)
    delta_star = root * root / 2.0
    eps_star = (epsilon - 3.0 * root) / 3.0 * (1 - 1e-9)
    if eps_star <= 0:
        raise ValueError(f"`epsilon` of {owner} is too small for the selection's overhead.")
    return tau, delta_2, eps_star, delta_star


def ops_ptr_select(X: ArrayLike, y: ArrayLike, lams: Sequence[float], X_val: ArrayLike, y_val: ArrayLike, *,
                   epsilon: float, delta: float, tau: float | None = None, x_bound: float = 1.0,
                   y_bound: float = 1.0, accountant: Any = None, random_state: RandomState = None) -> SelectionResult:
    """Thesis Algorithm 8 with Example 6.4.8 over ``lams``, with the thesis's settings (Sec 6.4.5): ``tau =
    0.05 / k``, ``delta_2 = delta / 2``, the per-call ``(eps*, delta*)`` chosen so that Thm 6.4.5's guarantee is
    the target ``(epsilon, delta)``, ``epsilon_call = test_epsilon = eps* / 2``, ``delta_call = delta' = delta* / 2``
    (the Laplace test has ``delta_hat = 0``). Score: minus the mean squared error on ``(X_val, y_val)`` (public
    data). Returns a :class:`~predict.ptr.SelectionResult` whose guarantee is at most ``(epsilon, delta)``."""
    owner = "ops_ptr_select"
    X, y = _data(X, y, x_bound, y_bound, owner)
    lams = [float(v) for v in lams]
    epsilon = _validate.positive(epsilon, "epsilon", owner)
    delta = _validate.open_unit_interval(delta, "delta", owner)
    tau, delta_2, eps_star, delta_star = _selection_budget(epsilon, delta, len(lams), tau, owner)
    half_eps, half_delta = eps_star / 2.0, delta_star / 2.0
    parts = {lam: _ptr_parts(lam, half_eps, half_eps, half_delta, half_delta, x_bound, y_bound, owner)
             for lam in lams}
    X_val, y_val = np.asarray(X_val, dtype=np.float64), np.asarray(y_val, dtype=np.float64)
    res = ptr_select((X, y), lams, mechanism_for=lambda lam: parts[lam][1], test_for=lambda lam: parts[lam][0],
                     score=lambda theta: -float(np.mean((X_val @ theta - y_val) ** 2)), epsilon=half_eps,
                     delta=half_delta, tau=tau, delta_2=delta_2, accountant=accountant, random_state=random_state)
    return res


def _theta_bound(n, lam, y_bound):
    # ||theta*|| <= ||y|| max_i s_i / (s_i^2 + lambda) <= sqrt(n) y_bound / (2 sqrt(lambda)); n + 1 covers a neighbour
    return math.sqrt(n + 1) * y_bound / (2.0 * math.sqrt(lam))


def output_perturbation(X: ArrayLike, y: ArrayLike, lam: float, *, epsilon: float, delta: float, x_bound: float = 1.0,
                        y_bound: float = 1.0, random_state: RandomState = None) -> tuple[np.ndarray, PTRGuarantee]:
    """``(theta, guarantee)``: ridge plus Gaussian noise (Chaudhuri et al. 2011 style output perturbation).

    Sensitivity of ``theta*_lambda`` under adding or removing a record: at most ``L / lambda`` with
    ``L = x_bound (x_bound Theta + y_bound)`` and ``Theta`` the data-independent bound of ``||theta*||`` (``n``
    public); the noise is :func:`accountants.calibration.calibrate_gaussian_sigma` for ``(epsilon, delta)``."""
    owner = "output_perturbation"
    X, y = _data(X, y, x_bound, y_bound, owner)
    sens = x_bound * (x_bound * _theta_bound(X.shape[0], lam, y_bound) + y_bound) / lam
    sigma = calibrate_gaussian_sigma(epsilon, delta, sensitivity=sens)
    rng = _generator(random_state, owner)
    theta = ridge(X, y, lam) + rng.normal(0.0, sigma, size=X.shape[1])
    return theta, PTRGuarantee(epsilon=float(epsilon), delta=float(delta), theorem="Gaussian mechanism (analytic)")


def ops_data_independent(X: ArrayLike, y: ArrayLike, lam: float, *, epsilon: float, delta: float,
                         x_bound: float = 1.0, y_bound: float = 1.0,
                         random_state: RandomState = None) -> tuple[np.ndarray, PTRGuarantee]:
    """``(theta, guarantee)``: OPS with ``gamma`` calibrated by thesis Thm 6.4.7 at the data-independent bounds
    ``lambda_min >= 0`` and ``||theta*|| <= Theta`` (``n`` public): an ``(epsilon, delta)``-DP guarantee for every
    data set. ``theta`` is ``None`` if no ``gamma > 0`` fits."""
    owner = "ops_data_independent"
    X, y = _data(X, y, x_bound, y_bound, owner)
    lipschitz = x_bound * (x_bound * _theta_bound(X.shape[0], lam, y_bound) + y_bound)
    gamma = ops_largest_gamma(epsilon, lam, lipschitz, delta, x_bound)
    rng = _generator(random_state, owner)
    theta = None if not gamma else ops_sample(X, y, lam, gamma, rng)
    return theta, PTRGuarantee(epsilon=float(epsilon), delta=float(delta), theorem="thesis Thm 6.4.7 (worst case)")


def baseline_select(X: ArrayLike, y: ArrayLike, lams: Sequence[float], X_val: ArrayLike, y_val: ArrayLike, *,
                    method: str, epsilon: float, delta: float, tau: float | None = None, x_bound: float = 1.0,
                    y_bound: float = 1.0, accountant: Any = None,
                    random_state: RandomState = None) -> SelectionResult:
    """A baseline (``method`` ``"outpert"``: :func:`output_perturbation`, ``"ops"``: :func:`ops_data_independent`)
    with its ``lambda`` chosen privately exactly as :func:`ops_ptr_select` chooses OPS-PTR's: thesis Algorithm 8
    with the settings of Sec 6.4.5, scored by minus the validation MSE (a ``theta`` of ``None`` scores
    ``-inf``).

    Each call releases the baseline at the per-call ``(eps*, delta*)``; the baseline is ``(eps*, delta*)``-DP on
    every data set, so the call is Algorithm 7 with a test that always passes at no cost and false-positive
    rate 0 (thesis Thm 6.4.3 gives ``(eps*, delta*)``), and the total is thesis Thm 6.4.5's, at most
    ``(epsilon, delta)``.
    """
    owner = "baseline_select"
    X, y = _data(X, y, x_bound, y_bound, owner)
    if method not in ("outpert", "ops"):
        raise ValueError(f"`method` of {owner} must be 'outpert' or 'ops'; got {method!r}.")
    lams = [_validate.positive(float(v), "lams", owner) for v in lams]
    epsilon = _validate.positive(epsilon, "epsilon", owner)
    delta = _validate.open_unit_interval(delta, "delta", owner)
    tau, delta_2, eps_star, delta_star = _selection_budget(epsilon, delta, len(lams), tau, owner)
    release = output_perturbation if method == "outpert" else ops_data_independent

    def mechanism_for(lam):
        def run(data, rng):
            return release(data[0], data[1], lam, epsilon=eps_star, delta=delta_star, x_bound=x_bound,
                           y_bound=y_bound, random_state=rng)[0]
        return run

    free = PrivateTest(run=lambda data, rng: True, epsilon=0.0, delta=0.0, false_positive_rate=0.0,
                       name="none (the baseline is DP on every data set)")
    X_val, y_val = np.asarray(X_val, dtype=np.float64), np.asarray(y_val, dtype=np.float64)

    def score(theta):
        return -math.inf if theta is None else -float(np.mean((X_val @ theta - y_val) ** 2))

    return ptr_select((X, y), lams, mechanism_for=mechanism_for, test_for=lambda lam: free, score=score,
                      epsilon=eps_star, delta=delta_star, tau=tau, delta_2=delta_2, accountant=accountant,
                      random_state=random_state)


#: AdaOPS's default public grid of ``lambda``.
ADAOPS_GRID = tuple(float(v) for v in np.logspace(-2, 6, 161))


def _adaops_choice(lam_min_lower, xty_upper, epsilon, delta, d, grid, theta_norm, x_bound, y_bound):
    """Post-processing of the released bounds: ``(lambda, gamma, lam_star, L)`` minimising
    ``lambda R^2 + d / gamma`` over ``grid`` (``None`` if no ``lambda`` admits a ``gamma > 0``)."""
    best = None
    for lam in grid:
        lam_star = lam + lam_min_lower
        lipschitz = x_bound * (x_bound * xty_upper / lam_star + y_bound)
        gamma = ops_largest_gamma(epsilon, lam_star, lipschitz, delta, x_bound)
        if gamma is None or not gamma > 0:
            continue
        objective = lam * theta_norm**2 + d / gamma
        if best is None or objective < best[0]:
            best = (objective, lam, gamma, lam_star, lipschitz)
    return None if best is None else best[1:]


def adaops(X: ArrayLike, y: ArrayLike, *, epsilon: float, delta: float, x_bound: float = 1.0, y_bound: float = 1.0,
           lams: Sequence[float] = ADAOPS_GRID, theta_norm: float = 1.0, accountant: Any = None,
           random_state: RandomState = None) -> PTRResult:
    """AdaOPS (Wang 2018b; thesis Sec 6.4.5's adaptive baseline) run as generalized PTR (thesis Algorithm 7).

    The test releases ``lambda_min^P = lambda_min(X^T X) - shift + Lap(4 x_bound^2 / epsilon)`` (floored at 0)
    and ``||X^T y||^P = ||X^T y|| + shift + Lap(4 x_bound y_bound / epsilon)``, each ``epsilon / 4``-DP and a
    valid bound with probability ``1 - delta / 4``; from them alone it picks ``(lambda, gamma)`` (see the module
    docstring) and returns thesis Thm 6.4.7's epsilon at the released bounds, ``eps^P <= epsilon / 2`` by the
    choice of ``gamma``. Since ``lambda`` is a function of the releases, the proposal is part of the test's
    output, and for every fixed release Thm 6.4.7 at the released bounds bounds the data-dependent DP of
    posterior sampling with the chosen ``(lambda, gamma)`` whenever both bounds hold (thesis Thm 6.4.6's
    event, probability ``1 - delta / 2``). Returns a :class:`~predict.ptr.PTRResult` whose ``output`` is
    ``theta`` (``None`` if no ``lambda`` on the grid admits a ``gamma > 0``) and whose guarantee is thesis
    Thm 6.4.6's ``(epsilon, delta)`` (``epsilon / 2 + epsilon / 2``, ``delta / 2 + delta / 2``).

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> X = rng.normal(size=(2000, 3)); X /= np.linalg.norm(X, axis=1, keepdims=True)
    >>> r = adaops(X, np.clip(X @ [0.5, -0.5, 0.2], -1, 1), epsilon=1.0, delta=1e-6, random_state=0)
    >>> r.released, r.guarantee.theorem, round(r.guarantee.epsilon, 12), bool(r.test_release <= 0.5)
    (True, 'thesis Thm 6.4.6', 1.0, True)
    """
    owner = "adaops"
    X, y = _data(X, y, x_bound, y_bound, owner)
    epsilon = _validate.positive(epsilon, "epsilon", owner)
    delta = _validate.open_unit_interval(delta, "delta", owner)
    theta_norm = _validate.nonnegative(theta_norm, "theta_norm", owner)
    grid = [_validate.positive(float(v), "lams", owner) for v in lams]
    if not grid:
        raise ValueError(f"`lams` of {owner} must not be empty.")
    eps_q, fp_q = epsilon / 4.0, delta / 4.0
    s_min, s_xty = x_bound**2, x_bound * y_bound
    shift_min, shift_xty = _shift(s_min, eps_q, fp_q), _shift(s_xty, eps_q, fp_q)
    d = X.shape[1]
    state: dict[str, Any] = {}

    def release(data, rng):
        Xd, yd = data
        lam_min = float(np.linalg.eigvalsh(Xd.T @ Xd)[0])
        lower = max(lam_min - shift_min + float(rng.laplace(0.0, s_min / eps_q)), 0.0)
        upper = max(float(np.linalg.norm(Xd.T @ yd)) + shift_xty + float(rng.laplace(0.0, s_xty / eps_q)), 0.0)
        choice = _adaops_choice(lower, upper, epsilon / 2.0, delta / 2.0, d, grid, theta_norm, x_bound, y_bound)
        state["choice"] = choice
        if choice is None:
            return math.inf
        lam, gamma, lam_star, lipschitz = choice
        return ops_epsilon(gamma, lam_star, lipschitz, delta / 2.0, x_bound)

    def mechanism(data, rng):
        lam, gamma = state["choice"][:2]
        return ops_sample(data[0], data[1], lam, gamma, rng)

    test = PrivateUpperBound(release=release, epsilon=epsilon / 2.0, delta=0.0, failure_probability=delta / 2.0,
                             name="AdaOPS: Laplace bounds of lambda_min and ||X^T y||, lambda chosen from them")
    return generalized_ptr((X, y), mechanism, epsilon=epsilon / 2.0, delta=delta / 2.0, test=test,
                           accountant=accountant, random_state=random_state)
