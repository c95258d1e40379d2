"""From Renyi DP to (epsilon, delta)-DP: pointwise conversions and their optimisation over real orders.

For an (alpha, r)-RDP guarantee (``r`` upper-bounds both directions of the divergence, add-or-remove-one):

* classic (Mironov 2017, Prop 3; thesis (1.1), (1.2), where the thesis's ``eps(alpha - 1)`` is a typo for
  ``eps(alpha)``): ``epsilon = r + log(1/delta) / (alpha - 1)``, ``delta = exp((alpha - 1)(r - epsilon))``;
* improved (Balle et al. 2020, Thm 21; Canonne, Kamath & Steinke 2020, Prop 12)::

      epsilon = r + log(1 - 1/alpha) - (log(delta) + log(alpha)) / (alpha - 1)
      delta   = exp((alpha - 1)(r - epsilon) + (alpha - 1) log(1 - 1/alpha) - log(alpha))

* order inf (pure DP): ``(r_inf, 0)``-DP;
* total variation: ``delta(epsilon) <= delta(0) = TV <= sqrt(1 - exp(-KL)) <= sqrt(1 - exp(-r))`` at any order
  (Bretagnolle & Huber 1979; the Renyi divergence is non-decreasing in the order, so ``r >= KL``).

Every candidate is a valid upper bound; the optimisers return the smallest one found together with its order.
"""

import dataclasses
import enum

import numpy as np

__all__ = [
    "Conversion",
    "epsilon_candidates",
    "log_delta_candidates",
    "minimize_over_orders",
    "Optimum",
]


class Conversion(enum.Enum):
    """Which RDP to (epsilon, delta) conversion to use."""

    IMPROVED = "improved (Balle et al. 2020, Thm 21)"
    CLASSIC = "classic (Mironov 2017, Prop 3)"


def epsilon_candidates(orders, rdp, delta, conversion=Conversion.IMPROVED):
    """Epsilon at each order (finite orders only; order inf is handled by the caller).

    Negative candidates are valid (epsilon = 0 then holds) and are returned as they are.
    """
    a = np.asarray(orders, dtype=np.float64)
    r = np.asarray(rdp, dtype=np.float64)
    log_delta = np.log(delta)
    with np.errstate(invalid="ignore", divide="ignore"):
        if conversion is Conversion.CLASSIC:
            eps = r - log_delta / (a - 1.0)
        else:
            eps = r + np.log1p(-1.0 / a) - (log_delta + np.log(a)) / (a - 1.0)
    return np.where(np.isinf(r), np.inf, eps)


def log_delta_candidates(orders, rdp, epsilon, conversion=Conversion.IMPROVED):
    """log(delta) at each finite order for the given epsilon (may exceed 0, meaning no information)."""
    a = np.asarray(orders, dtype=np.float64)
    r = np.asarray(rdp, dtype=np.float64)
    with np.errstate(invalid="ignore", over="ignore"):
        if conversion is Conversion.CLASSIC:
            log_delta = (a - 1.0) * (r - epsilon)
        else:
            log_delta = (a - 1.0) * (r - epsilon + np.log1p(-1.0 / a)) - np.log(a)
    return np.where(np.isinf(r), np.inf, log_delta)


@dataclasses.dataclass(frozen=True)
class Optimum:
    """The best value of an objective over orders, and where it was attained."""

    value: float
    order: float


def minimize_over_orders(objective, grid_orders, grid_values, *, rounds=3, points=9, max_order=2.0**40):
    """Minimise ``objective(orders) -> values`` over real orders > 1, starting from values on a sorted grid.

    1. take the best grid order; if it is the largest grid order, extend the grid by doubling until the
       objective rises (or ``max_order``); if it is the smallest, approach 1 geometrically;
    2. zoom: ``rounds`` times, evaluate ``points`` evenly spaced orders strictly between the neighbours of
       the current best and keep the best.

    Every evaluated value is a valid bound, so the result is valid whatever the shape of the objective; the
    search only affects tightness.
    """
    orders = np.asarray(grid_orders, dtype=np.float64)
    values = np.asarray(grid_values, dtype=np.float64)
    best = int(np.argmin(values))
    # Extend upwards while the optimum sits at the top of what we have evaluated.
    while best == orders.size - 1 and np.isfinite(values[best]) and orders[-1] < max_order:
        new = np.unique(np.minimum(orders[-1] * 2.0 ** np.arange(1, 5), max_order))
        new = new[new > orders[-1]]
        if new.size == 0:
            break
        orders = np.concatenate((orders, new))
        values = np.concatenate((values, objective(new)))
        best = int(np.argmin(values))
    # Approach order 1 while the optimum sits at the bottom.
    while best == 0 and orders[0] - 1.0 > 1e-9:
        new = 1.0 + (orders[0] - 1.0) * 2.0 ** -np.arange(4, 0, -1)
        orders = np.concatenate((new, orders))
        values = np.concatenate((objective(new), values))
        best = int(np.argmin(values))
    if not np.isfinite(values[best]):
        return Optimum(float(values[best]), float(orders[best]))
    best_order, best_value = orders[best], values[best]
    lo = orders[max(best - 1, 0)]
    hi = orders[min(best + 1, orders.size - 1)]
    for _ in range(rounds):
        inner = np.linspace(lo, hi, points + 2)[1:-1]
        vals = objective(inner)
        k = int(np.argmin(vals))
        if vals[k] < best_value:
            best_order, best_value = inner[k], vals[k]
        grid = np.concatenate(([lo], inner, [hi]))
        pos = int(np.searchsorted(grid, best_order))
        lo, hi = grid[max(pos - 1, 0)], grid[min(pos + 1, grid.size - 1)]
    return Optimum(float(best_value), float(best_order))
