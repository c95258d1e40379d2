"""The sparse vector technique run on data (thesis Ch. 7, Algorithms 10, 11 and 12).

:class:`SparseVectorRunner` answers an adaptive stream of queries (callables on the private data) against a
threshold with the noise of a :class:`~dpledger.mechanisms.SparseVector` description:

* one **stage** is Algorithm 11 with RESAMPLE = False: one draw of the threshold noise, fresh query noise per
  query, at most ``mechanism.cutoff`` tops and at most ``mechanism.max_length`` answers; with both noises
  Laplace it is Algorithm 10 (RESAMPLE = False);
* ``stages > 1`` is Algorithm 12 (stage-wise SVT): when a stage ends a new one starts with a fresh threshold
  draw, up to ``stages`` stages (Algorithm 10 with RESAMPLE = True is ``cutoff=1`` and ``stages=c``).

Privacy: before the first answer of each stage is released, the stage's ``SparseVector`` is composed into the
``accountant`` (its RDP, thesis Thm 7.2.1 / 7.2.7 / Lemma 7.1.3, covers every answer the stage can give), so
nothing is released uncharged; the accountant composes the stages by RDP. The advanced-composition form of
Thms 7.2.9 / 7.2.10 (per-stage ``(epsilon', delta')``, optimal composition over the stages), which is smaller for
many stages, is :func:`dpledger.accountants.stagewise_svt.stagewise_svt_epsilon` ``(mechanism, stages, delta)``:
a guarantee fixed before the run (it covers every stage the runner may start). With ``mechanism.margin`` set
(non-negative queries), ``threshold`` must not exceed it. A query
whose value is not a finite real number (or is negative under ``nonnegative_queries``) is refused before
anything is charged or drawn. The caller promises that every query has sensitivity ``Delta`` (the noises'
``sensitivity``) under add-or-remove-one; that promise cannot be checked here.

Noise comes from ``numpy.random.Generator`` seeded by ``random_state`` (None: fresh OS entropy); numpy's
generator is not cryptographically secure.

Examples
--------
Reusable holdout (thesis Sec 7.3, "guess and check") and Private-kNN's data-dependent screening are both a loop
over :meth:`SparseVectorRunner.answer`; see :func:`guess_and_check` and the docstring of
:meth:`SparseVectorRunner.answer`.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Callable, Iterable
from typing import Any

import numpy as np

from dpledger.mechanisms import GaussianMechanism, LaplaceMechanism, SparseVector, _validate
from dpledger.predict._common import check_random_state

__all__ = ["SparseVectorRunner", "SparseVectorHalted", "guess_and_check"]

_OWNER = "SparseVectorRunner"


class SparseVectorHalted(RuntimeError):
    """The runner has used all its stages (its cut-off): it answers no more queries."""


def _draw(noise, rng):
    if isinstance(noise, GaussianMechanism):
        return float(rng.normal(0.0, noise.sigma))
    if isinstance(noise, LaplaceMechanism):
        return float(rng.laplace(0.0, noise.scale))
    raise TypeError(f"no sampler for {noise!r}")  # SparseVector admits only the two above


class SparseVectorRunner:
    """Sparse vector technique on private ``data`` (Algorithms 10-12); see the module docstring.

    Parameters
    ----------
    data : object
        The private data set; each query is called as ``query(data)``.
    mechanism : mechanisms.SparseVector
        One stage's noise, cut-off and maximum length.
    threshold : float
        The public threshold ``T``; a query is answered ``True`` (top) when ``q(data) + nu >= T + rho``.
    accountant : an accountant with ``compose(mechanism)`` (``accountants.RDPAccountant``)
        Charged with ``mechanism`` before the first release of every stage.
    stages : int, default 1
        Number of stages (Algorithm 12); the total cut-off is ``stages * mechanism.cutoff``.
    random_state : None, int, SeedSequence or Generator
    """

    def __init__(self, data: Any, *, mechanism: SparseVector, threshold: float, accountant: Any, stages: int = 1,
                 random_state: int | np.random.SeedSequence | np.random.Generator | None = None):
        if not isinstance(mechanism, SparseVector):
            raise TypeError(f"`mechanism` of {_OWNER} must be a SparseVector; got {type(mechanism).__name__}.")
        if not callable(getattr(accountant, "compose", None)):
            raise TypeError(f"`accountant` of {_OWNER} must have a compose(mechanism) method; got {accountant!r}.")
        self._threshold = _validate.real(threshold, "threshold", _OWNER)
        if mechanism.margin is not None and self._threshold > mechanism.margin:
            # the non-negative-query bounds grow with the threshold: charging a smaller margin would under-charge
            raise ValueError(
                f"`threshold` of {_OWNER} must be at most the `margin` of its SparseVector ({mechanism.margin}), "
                f"whose RDP bound assumes that threshold; got {self._threshold}."
            )
        self._stages = _validate.positive_int(stages, "stages", _OWNER)
        check_random_state(random_state, _OWNER)
        self._data = data
        self._mechanism = mechanism
        self._accountant = accountant
        self._rng = np.random.default_rng(random_state)  # None: fresh OS entropy
        self._stage = 0  # stages started
        self._noisy_threshold = None  # None: no stage running
        self._stage_tops = 0
        self._stage_answers = 0
        self._answers: list[bool] = []

    @property
    def mechanism(self) -> SparseVector:
        return self._mechanism

    @property
    def answers(self) -> tuple[bool, ...]:
        """Every released answer, in order (True = above the noisy threshold)."""
        return tuple(self._answers)

    @property
    def stages_started(self) -> int:
        """Stages charged so far (each composed ``mechanism`` once into the accountant)."""
        return self._stage

    @property
    def halted(self) -> bool:
        """Whether the cut-off is reached (the last stage ended): :meth:`answer` then raises."""
        return self._stage == self._stages and self._noisy_threshold is None

    def answer(self, query: Callable[[Any], float]) -> bool:
        """Answer one query: ``True`` if ``query(data) + nu >= threshold + rho`` (thesis Algorithm 11, line 4).

        Examples
        --------
        Private-kNN's data-dependent screening (thesis Ch. 5) as SVT: the query is the top vote count among a
        test point's ``k`` private neighbours (sensitivity 1 under add-or-remove-one; non-negative); a top
        means "the neighbours agree enough to answer", after which the caller releases a noisy argmax and
        charges it separately:

        >>> from dpledger.accountants import RDPAccountant
        >>> votes = {"a": [9, 1], "b": [5, 5], "c": [10, 0]}  # private vote counts of three test points
        >>> svt = SparseVector(threshold=GaussianMechanism(sigma=2.0), queries=GaussianMechanism(sigma=4.0),
        ...                    cutoff=2, max_length=10, nonnegative_queries=True)
        >>> acc = RDPAccountant()
        >>> runner = SparseVectorRunner(votes, mechanism=svt, threshold=8.0, accountant=acc, random_state=0)
        >>> screened = [runner.answer(lambda d, p=p: max(d[p])) for p in "abc"]
        >>> len(acc.ledger) == 1 and len(screened) == 3
        True

        Raises
        ------
        SparseVectorHalted
            If the cut-off was reached before this call.
        TypeError, ValueError
            If ``query`` is not callable or ``query(data)`` is not a finite real number (negative under
            ``nonnegative_queries``); nothing is charged, drawn or released.
        """
        if self.halted:
            raise SparseVectorHalted(
                f"{_OWNER} reached its cut-off ({self._stages} stage(s) of cut-off {self._mechanism.cutoff}); "
                "it answers no more queries."
            )
        if not callable(query):
            raise TypeError(f"`query` of {_OWNER}.answer must be callable; got {type(query).__name__}.")
        value = query(self._data)
        if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Real) or not math.isfinite(value):
            raise ValueError(f"query(data) in {_OWNER}.answer must be a finite real number; got {value!r}.")
        if self._mechanism.nonnegative_queries and value < 0:
            raise ValueError(
                f"query(data) in {_OWNER}.answer must be non-negative (nonnegative_queries=True); got {value}."
            )
        if self._noisy_threshold is None:  # start a stage: charge first, then draw its threshold noise
            self._accountant.compose(self._mechanism)
            self._stage += 1
            self._noisy_threshold = self._threshold + _draw(self._mechanism.threshold, self._rng)
            self._stage_tops = self._stage_answers = 0
        top = float(value) + _draw(self._mechanism.queries, self._rng) >= self._noisy_threshold
        self._stage_answers += 1
        self._stage_tops += int(top)
        max_length = self._mechanism.max_length
        if self._stage_tops >= self._mechanism.cutoff or (max_length is not None and self._stage_answers >= max_length):
            self._noisy_threshold = None  # the stage ends (Algorithm 11 aborts or its loop ends)
        self._answers.append(top)
        return top


def guess_and_check(holdout: Iterable[Any], statistics: Iterable[Callable[[Any], float]], guesses: Iterable[float], *,
                    mechanism: SparseVector, tolerance: float, answer_noise: GaussianMechanism, accountant: Any,
                    stages: int = 1, random_state: int | np.random.SeedSequence | np.random.Generator | None = None,
                    ) -> list[tuple[float, bool]]:
    """Reusable holdout (thesis Sec 7.3, "Private-Guess-and-Check") with :class:`SparseVectorRunner`.

    For each statistic ``phi`` (a callable giving a value in [0, 1] per holdout record) the analyst's guess
    ``g`` of the count ``sum_x phi(x)`` (e.g. computed on the training data) is checked with the SVT query
    ``|sum_x phi(x) - g|`` (sensitivity 1 under add-or-remove-one, non-negative) against ``tolerance``. Below
    the noisy threshold the guess is returned unchanged; above it the holdout count plus ``N(0,
    answer_noise.sigma^2)`` is returned, ``answer_noise`` (a GaussianMechanism, sensitivity 1) charged before.
    Stops (returns the answers so far) when the runner reaches its cut-off.

    Returns
    -------
    list of (float, bool)
        ``(answer, guess_failed)`` per statistic answered.
    """
    if not isinstance(answer_noise, GaussianMechanism) or answer_noise.sensitivity < 1.0:
        raise TypeError("`answer_noise` of guess_and_check must be a GaussianMechanism with sensitivity >= 1.")
    if mechanism.threshold.sensitivity < 1.0:
        raise ValueError("`mechanism` of guess_and_check must have sensitivity >= 1 (counting queries).")
    records = list(holdout)
    rng = np.random.default_rng(check_random_state(random_state, "guess_and_check"))
    runner = SparseVectorRunner(records, mechanism=mechanism, threshold=tolerance, accountant=accountant,
                                stages=stages, random_state=rng)
    out = []
    for phi, guess in zip(statistics, guesses):
        if runner.halted:
            break
        guess = _validate.real(guess, "guess", "guess_and_check")

        def gap(data, phi=phi, guess=guess):
            return abs(sum(min(max(float(phi(x)), 0.0), 1.0) for x in data) - guess)

        if runner.answer(gap):
            accountant.compose(answer_noise)  # charged before the count is released
            count = sum(min(max(float(phi(x)), 0.0), 1.0) for x in records)
            out.append((count + float(rng.normal(0.0, answer_noise.sigma)), True))
        else:
            out.append((guess, False))
    return out
