"""mpmath oracles for noisy screening (Private-kNN Thm 9) and Bernoulli-pair subsampling.

Independent of the library: mpmath only, at ``DPS`` digits. Sources: Private-kNN Thm 9 (restated as thesis
Thm 4.3.1): the RDP of noisy screening is the maximum over ordered pairs of neighbouring pluralities
``(t, t')``, ``|t - t'| = 1``, both in ``[lo, k]``, of the Renyi divergence of ``Bern(p_t)`` from
``Bern(p_t')`` with ``p_t = P[N(t, sigma^2) > T] = Phi((t - T)/sigma)``; Mironov 2017 Prop 5 (Bernoulli Renyi
divergence); thesis Thm 2.3.1 / 2.3.4 (Poisson subsampling, formulas restated below).
"""

import functools

import mpmath as mp

DPS = 50


def _pass_probabilities(t, threshold, sigma):
    """``(log p_t, log(1 - p_t))`` as mpf: the smaller tail directly, the larger one by ``log1p`` of the
    smaller, so that ``1 - p`` = 1 - 1e-127 keeps its 1e-127."""
    z = (mp.mpf(t) - mp.mpf(threshold)) / mp.mpf(sigma)
    small = mp.ncdf(-abs(z))
    log_small, log_large = mp.log(small), mp.log1p(-small)
    return (log_large, log_small) if z > 0 else (log_small, log_large)


def bernoulli_renyi(order, log_p, log_1mp, log_q, log_1mq):
    """``D_alpha(Bern(p) || Bern(q))`` from log-probabilities; order ``mp.inf`` gives
    ``max(log(p/q), log((1-p)/(1-q)))``.

    ``log(p^a q^(1-a) + (1-p)^a (1-q)^(1-a)) / (a - 1)`` is evaluated as ``log1p(S) / (a - 1)`` with
    ``S = p expm1((a-1) log(p/q)) + (1-p) expm1((a-1) log((1-p)/(1-q)))`` at twice ``DPS`` digits, so a
    divergence of 1e-119 is not lost to the 1 inside the logarithm.
    """
    with mp.workdps(2 * DPS):
        if order == mp.inf:
            return max(log_p - log_q, log_1mp - log_1mq)
        a = mp.mpf(order)
        s = mp.exp(log_p) * mp.expm1((a - 1) * (log_p - log_q)) + mp.exp(log_1mp) * mp.expm1(
            (a - 1) * (log_1mp - log_1mq)
        )
        return mp.log1p(s) / (a - 1)


@functools.cache
def screening_rdp(order, k, threshold, sigma, lo):
    """Brute force of Private-kNN Thm 9 over every plurality ``t`` in ``[lo, k - 1]`` and both orders of
    ``(t, t + 1)``. ``order`` is a float or ``float('inf')``; parameters are converted exactly."""
    with mp.workdps(DPS):
        order = mp.inf if order == float("inf") else mp.mpf(order)
        probs = {t: _pass_probabilities(t, threshold, sigma) for t in range(lo, k + 1)}
        best = mp.mpf(0)
        for t in range(lo, k):
            for x, y in ((t, t + 1), (t + 1, t)):
                best = max(best, bernoulli_renyi(order, *probs[x], *probs[y]))
        return best


def data_dependent_rdp(order, k, threshold, sigma, lo, t):
    """Both directions between plurality ``t`` and its in-range neighbours ``t +- 1``."""
    with mp.workdps(DPS):
        order = mp.inf if order == float("inf") else mp.mpf(order)
        best = mp.mpf(0)
        for u in (t - 1, t + 1):
            if lo <= u <= k:
                pt, pu = _pass_probabilities(t, threshold, sigma), _pass_probabilities(u, threshold, sigma)
                best = max(best, bernoulli_renyi(order, *pt, *pu), bernoulli_renyi(order, *pu, *pt))
        return best


@functools.cache
def subsampled_screening_pairwise_rdp(order, k, threshold, sigma, lo, gamma):
    """Max over ordered neighbouring pluralities (with the record ``t'``, without it ``t``) of both exact
    divergences between ``Bern((1 - g) p_t + g p_t')`` and ``Bern(p_t)`` (:func:`subsampled_bernoulli_rdp`);
    order inf as ``max |log-likelihood ratio|``."""
    with mp.workdps(DPS):
        probs = {t: _pass_probabilities(t, threshold, sigma) for t in range(lo, k + 1)}
        g = mp.mpf(gamma)
        best = mp.mpf(0)
        for t in range(lo, k):
            for with_x, without in ((t + 1, t), (t, t + 1)):
                if order == float("inf"):
                    with mp.workdps(2 * DPS):
                        lm = mp.log((1 - g) * mp.exp(probs[without][0]) + g * mp.exp(probs[with_x][0]))
                        l1m = mp.log((1 - g) * mp.exp(probs[without][1]) + g * mp.exp(probs[with_x][1]))
                        cand = max(abs(lm - probs[without][0]), abs(l1m - probs[without][1]))
                else:
                    cand = max(subsampled_bernoulli_rdp(order, gamma, *probs[with_x], *probs[without]))
                best = max(best, cand)
        return best


def pearson_vajda_term(order_l, p, q):
    """``E_Q[(P/Q - 1)^l]`` for Bernoulli P = Bern(p), Q = Bern(q): ``(p - q)^l (q^(1-l) - (1-q)^(1-l))``
    at odd ``l`` (the general expression is ``q ((p-q)/q)^l + (1-q) ((q-p)/(1-q))^l``)."""
    with mp.workdps(DPS):
        p, q, n = mp.mpf(p), mp.mpf(q), int(order_l)
        return q * ((p - q) / q) ** n + (1 - q) * ((q - p) / (1 - q)) ** n


def subsampled_bernoulli_rdp(order, gamma, log_p, log_1mp, log_q, log_1mq):
    """Exact Renyi divergences of a Poisson-subsampled Bernoulli pair at real ``order``, from log-probabilities:

    remove ``D_alpha((1-g) Q + g P || Q)`` and add ``D_alpha(Q || (1-g) Q + g P)``, with P = Bern(p) the
    output with the record and Q = Bern(q) without it. Returns ``(remove, add)``.
    """
    with mp.workdps(2 * DPS):
        g = mp.mpf(gamma)
        log_m = mp.log((1 - g) * mp.exp(log_q) + g * mp.exp(log_p))
        log_1mm = mp.log((1 - g) * mp.exp(log_1mq) + g * mp.exp(log_1mp))
        return (
            bernoulli_renyi(order, log_m, log_1mm, log_q, log_1mq),
            bernoulli_renyi(order, log_q, log_1mq, log_m, log_1mm),
        )


def tight_formula(order, gamma, log_moment):
    """Thesis Thm 2.3.4 at integer order: ``log{(1-g)^(a-1)(a g - g + 1) + sum_{l=2}^a C(a,l)(1-g)^(a-l) g^l
    exp(log_moment(l))} / (a - 1)`` with ``log_moment(l) = (l - 1) eps(l)``."""
    with mp.workdps(DPS):
        g, a = mp.mpf(gamma), int(order)
        total = (1 - g) ** (a - 1) * (a * g - g + 1)
        for l in range(2, a + 1):
            total += mp.binomial(a, l) * (1 - g) ** (a - l) * g**l * mp.exp(log_moment(l))
        return mp.log(total) / (a - 1)


def general_formula(order, gamma, log_moment):
    """Thesis Thm 2.3.1 at integer order: the terms ``l >= 3`` of :func:`tight_formula` multiplied by 3."""
    with mp.workdps(DPS):
        g, a = mp.mpf(gamma), int(order)
        total = (1 - g) ** (a - 1) * (a * g - g + 1)
        for l in range(2, a + 1):
            factor = 1 if l == 2 else 3
            total += factor * mp.binomial(a, l) * (1 - g) ** (a - l) * g**l * mp.exp(log_moment(l))
        return mp.log(total) / (a - 1)
