"""Ready-made canary designs for auditing the private predictors with :func:`predict.audit.audit_epsilon`.

A design is a neighbouring pair of inputs (with and without one canary record, add-or-remove-one; for the
duplicated design two copies against one), a release (fit a FRESH predictor with the run's generator, answer the
design's queries, return a number computed from the answers: a post-processing of the transcript), and the
predictor's proven upper bound on epsilon at ``delta`` for that transcript. An audit's lower bound above the
proven upper bound means a bug; far below it, loose accounting or a weak canary.

Designs (issue 18 item 1):

* Ind-KNN (:func:`ind_knn_designs`): the canary is the only neighbour of the query
  (:func:`ind_knn_only_neighbour_canary`); exactly at the kernel threshold (``tau`` set to the canary's kernel
  value as the classifier computes it); its budget nearly spent (queried repeatedly, the count of its label
  released); added late with ``add()``; removed then re-added (its spend must survive: DESIGN.md rule 8);
  duplicated (two copies against one).
* Private-kNN (:func:`private_knn_designs`): only neighbour, nearly spent (several queries: the guarantee grows
  with them), duplicated. Private-kNN has no ``add()`` / ``remove()``.
* One run (:func:`ind_knn_one_run`): many canaries, each the only neighbour of its own query, for
  :func:`predict.audit_one_run.audit_one_run`.
* DP-SGD (:func:`dpsgd_canary`): a canary record in a feature no other record uses, a tiny Opacus model on
  scikit-learn's digits, the proven bound from dpledger's Opacus adapter.

The Ind-KNN designs use a loud canary (``min_count=1``, ``sigma_vote=0.05``, cosine kernel, ``tau=0.9``, one
count charge of a tenth of the budget), so that the audit has power.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from dpledger.mechanisms import _validate
from dpledger.predict.audit import AuditResult, audit_epsilon
from dpledger.predict.audit_one_run import OneRunAuditResult, audit_one_run
from dpledger.predict.ind_knn import IndKNNClassifier

__all__ = ["CanaryAudit", "CanaryDesign", "OneRunCanaries", "dpsgd_canary", "ind_knn_designs", "ind_knn_one_run",
           "ind_knn_only_neighbour_canary", "private_knn_designs"]

Seed = int | np.random.SeedSequence | np.random.Generator | None


class _Audited:
    """``audit()`` of a design: :func:`predict.audit.audit_epsilon` at the design's ``delta``."""

    def audit(self, *, runs: int, confidence: float = 0.95, random_state: Seed = None) -> AuditResult:
        """:func:`predict.audit.audit_epsilon` of this design at its ``delta`` (a statistical lower bound)."""
        return audit_epsilon(
            self.release, self.dataset, self.neighbouring_dataset, runs=runs, delta=self.delta,
            confidence=confidence, random_state=random_state, score=self.score,
        )

_OWNER = "ind_knn_only_neighbour_canary"


@dataclass(frozen=True)
class CanaryAudit(_Audited):
    """The Ind-KNN only-neighbour design: ``dataset`` holds the canary, ``neighbouring_dataset`` does not.

    Attributes
    ----------
    name : str
    dataset, neighbouring_dataset : tuple of (X, y) arrays
    query : numpy.ndarray
        The one query answered per run, shape ``(1, d)``.
    canary_label : int
    params : dict
        The classifier's parameters (``random_state`` excluded: each run gets its own generator).
    proven_epsilon, delta : float
        The classifier's proven (epsilon, delta) guarantee for every record, the canary included.
    """

    name: str
    dataset: tuple[np.ndarray, np.ndarray]
    neighbouring_dataset: tuple[np.ndarray, np.ndarray]
    query: np.ndarray
    canary_label: int
    params: dict[str, Any] = field(repr=False)
    proven_epsilon: float
    delta: float

    @property
    def predictor(self) -> str:
        """``"Ind-KNN"`` (the same attribute as :class:`CanaryDesign`'s)."""
        return "Ind-KNN"

    def epsilon_at(self, delta: float) -> float:
        """The classifier's proven epsilon (upper bound) at another ``delta``, from the same budget."""
        clf = IndKNNClassifier(**self.params, random_state=0).fit(*self.neighbouring_dataset)
        return float(clf.privacy_report(delta).epsilon)

    def release(self, data: tuple[np.ndarray, np.ndarray], rng: np.random.Generator) -> int:
        """Fit a fresh :class:`IndKNNClassifier` on ``data`` with generator ``rng``; return the query's label."""
        clf = IndKNNClassifier(**self.params, random_state=rng)
        return int(clf.fit(*data).predict(self.query)[0])

    def score(self, label: Any) -> float:
        """1 if the released label is the canary's, else 0 (the test statistic for any number of classes)."""
        return float(label == self.canary_label)


def _ind_settings(epsilon, delta, n_classes, params):
    """The loud Ind-KNN settings of the designs, ``params`` overriding; validated now, not in the first run."""
    from dpledger.accountants.individual_filter import budget_for

    budget = budget_for(epsilon, delta)
    settings = {"kernel": "cosine", "tau": 0.9, "sigma_vote": 0.05, "min_count": 1, "n_queries": 1,
                "sigma_count": float(np.sqrt(5.0 / budget))} | params
    settings |= {"epsilon": epsilon, "delta": delta, "n_classes": n_classes}
    IndKNNClassifier(**settings)._validate_params()
    return settings


def ind_knn_only_neighbour_canary(
    *,
    epsilon: float = 1.0,
    delta: float = 1e-5,
    n_classes: int = 2,
    n_background: int = 3,
    canary_label: int = 1,
    **params: Any,
) -> CanaryAudit:
    """An Ind-KNN canary that is the only neighbour of the query.

    Background records lie on the second axis with label 0 (cosine kernel 0 with the query, never selected); the
    canary lies on the first axis with ``canary_label`` and the query is the canary itself (kernel 1), so with the
    canary the query has exactly one selected record and without it none (the pure-noise answer). Defaults for
    the remaining classifier parameters make the canary's vote as loud as its budget allows: ``min_count=1``,
    ``sigma_vote=0.05``, ``tau=0.9``, ``n_queries=1`` and a count noise ``sigma_count = sqrt(5 / B)`` that charges
    a tenth of the budget ``B``; any of them can be overridden through ``params``.

    The proven guarantee is ``(epsilon, delta)`` for every record however many queries are answered (Ind-KNN
    Thm 3.2 with Feldman & Zrnic 2021, Cor 3.3; :meth:`IndKNNClassifier.privacy_report`).
    """
    epsilon = _validate.positive(epsilon, "epsilon", _OWNER)
    delta = _validate.open_unit_interval(delta, "delta", _OWNER)
    n_classes = _validate.integer(n_classes, "n_classes", _OWNER, minimum=2)
    n_background = _validate.integer(n_background, "n_background", _OWNER, minimum=1)
    canary_label = _validate.integer(canary_label, "canary_label", _OWNER, minimum=1)
    if canary_label >= n_classes:
        raise ValueError(f"`canary_label` of {_OWNER} must be in [1, n_classes - 1]; got {canary_label}.")
    if "random_state" in params:
        raise TypeError(f"`random_state` of {_OWNER} is not a classifier parameter here: pass it to `audit`.")
    settings = _ind_settings(epsilon, delta, n_classes, params)
    background = np.tile([0.0, 1.0], (n_background, 1)) + np.outer(np.arange(n_background), [0.01, 0.0])
    canary = np.array([[1.0, 0.0]])
    y_background = np.zeros(n_background, dtype=np.int64)
    return CanaryAudit(
        name="ind_knn_only_neighbour",
        dataset=(np.vstack([background, canary]), np.append(y_background, canary_label)),
        neighbouring_dataset=(background.reshape(n_background, 2), y_background),
        query=canary.copy(),
        canary_label=canary_label,
        params=settings,
        proven_epsilon=epsilon,
        delta=delta,
    )


@dataclass(frozen=True)
class CanaryDesign(_Audited):
    """A canary design for any predictor.

    Attributes
    ----------
    name, predictor : str
    dataset, neighbouring_dataset : object
        Passed to ``release``; ``dataset`` holds one more copy of the canary than ``neighbouring_dataset``.
    release : callable
        ``release(data, rng) -> float``: fit a fresh predictor seeded from ``rng``, answer the design's queries,
        return a number computed from the answers.
    proven_epsilon, delta : float
        The predictor's proven (epsilon, delta) guarantee, add-or-remove-one, for everything ``release`` sees.
    score : callable or None
        Passed to :func:`predict.audit.audit_epsilon` (None: the output is the score).
    proven_curve : callable or None
        ``delta -> epsilon``: the same proven guarantee at other deltas (for trade-off curves), when known.
    """

    name: str
    predictor: str
    dataset: Any
    neighbouring_dataset: Any
    release: Callable[[Any, np.random.Generator], Any] = field(repr=False)
    proven_epsilon: float
    delta: float
    score: Callable[[Any], float] | None = field(default=None, repr=False)
    proven_curve: Callable[[float], float] | None = field(default=None, repr=False)

    def epsilon_at(self, delta: float) -> float:
        """The proven epsilon (upper bound) at another ``delta`` (``proven_curve``); a ``ValueError`` without it."""
        if self.proven_curve is None:
            raise ValueError(f"the design {self.name!r} knows its proven epsilon only at delta = {self.delta}.")
        return float(self.proven_curve(delta))


# ------------------------------------------------------------------------------------------------- Ind-KNN
_QUERY = np.array([[1.0, 0.0]])


def _ind_background(n_background):
    """Records on the second axis (cosine kernel 0 with the query: never selected), label 0."""
    X = np.tile([0.0, 1.0], (n_background, 1)) + np.outer(np.arange(n_background), [0.01, 0.0])
    return X, np.zeros(n_background, dtype=np.int64)


def _with(background, canaries):
    X, y = background
    canaries = np.asarray(canaries, dtype=np.float64).reshape(-1, 2)
    return np.vstack([X, canaries]), np.append(y, np.ones(len(canaries), dtype=np.int64))


def _ind_count_release(settings, queries):
    """Fit Ind-KNN on the data, answer ``queries`` copies of the query; release how many got the canary's label."""
    def release(data, rng):
        clf = IndKNNClassifier(**settings, random_state=rng).fit(*data)
        return float(np.sum(clf.predict(np.repeat(_QUERY, queries, axis=0)) == 1))
    return release


def _kernel_value(canary, settings):
    """The canary's kernel value with the query as the classifier's exact search computes it."""
    from dpledger.predict.neighbours import ExactSearch

    pairs = ExactSearch(canary, kernel=settings["kernel"], nu=settings.get("nu")).pairs(_QUERY, tau=1e-6)
    return float(pairs.kappa[0])


def ind_knn_designs(*, epsilon: float = 4.0, delta: float = 1e-5, n_background: int = 3) -> list[CanaryAudit |
                                                                                                 CanaryDesign]:
    """The six Ind-KNN canary designs of issue 18, each with the classifier's proven ``(epsilon, delta)``.

    1. ``only neighbour``: :func:`ind_knn_only_neighbour_canary`.
    2. ``at kernel threshold``: the canary at cosine 0.9 to the query and ``tau`` equal to its kernel value as
       the classifier's search computes it (selected, but only just).
    3. ``nearly spent budget``: the canary is the only neighbour of 8 queries; its first vote clips to what is
       left of its budget and it retires; the number of canary labels among the 8 answers is released.
    4. ``added late with add()``: 3 queries on the background, then ``add()`` of the canary (or nothing), then
       one more query, whose answer is released (1 for the canary's label). ``dataset`` /
       ``neighbouring_dataset`` are the flags ``True`` / ``False``.
    5. ``removed then re-added``: fitted with the canary (or without), 2 queries, ``remove()`` and ``add()`` of the
       canary, 2 more queries. Its spend survives the removal (DESIGN.md rule 8), so the guarantee stays.
    6. ``duplicated records``: two copies of the canary against one.

    Ind-KNN's guarantee is per record from its budget alone (Ind-KNN Thm 3.2 with Feldman & Zrnic 2021, Cor 3.3;
    :meth:`IndKNNClassifier.privacy_report`), whatever the number of queries, additions and removals.
    """
    owner = "ind_knn_designs"
    epsilon = _validate.positive(epsilon, "epsilon", owner)
    delta = _validate.open_unit_interval(delta, "delta", owner)
    n_background = _validate.integer(n_background, "n_background", owner, minimum=1)
    settings = _ind_settings(epsilon, delta, 2, {})
    background = _ind_background(n_background)
    probe = IndKNNClassifier(**settings, random_state=0).fit(*background)
    proven = float(probe.privacy_report(delta).epsilon)

    def curve(d: float) -> float:
        return float(probe.privacy_report(d).epsilon)

    designs: list[CanaryAudit | CanaryDesign] = [ind_knn_only_neighbour_canary(epsilon=epsilon, delta=delta,
                                                                               n_background=n_background)]

    edge = np.array([[0.9, np.sqrt(1.0 - 0.81)]])
    at_tau = settings | {"tau": _kernel_value(edge, settings)}
    designs.append(CanaryDesign("at kernel threshold", "Ind-KNN", _with(background, edge), background,
                                _ind_count_release(at_tau, 1), proven, delta,
                                proven_curve=curve))
    designs.append(CanaryDesign("nearly spent budget", "Ind-KNN", _with(background, _QUERY), background,
                                _ind_count_release(settings, 8), proven, delta,
                                proven_curve=curve))

    def late(present, rng):
        clf = IndKNNClassifier(**settings, random_state=rng).fit(*background)
        clf.predict(np.repeat(_QUERY, 3, axis=0))  # answered before the canary exists (pure noise either way)
        if present:
            clf.add(_QUERY, np.ones(1, dtype=np.int64))
        return float(clf.predict(_QUERY)[0] == 1)

    designs.append(CanaryDesign("added late with add()", "Ind-KNN", True, False, late, proven, delta,
                                proven_curve=curve))

    def readded(present, rng):
        clf = IndKNNClassifier(**settings, random_state=rng).fit(*(_with(background, _QUERY) if present
                                                                  else background))
        out = int(np.sum(clf.predict(np.repeat(_QUERY, 2, axis=0)) == 1))
        if present:
            clf.remove([n_background])
            clf.add(_QUERY, np.ones(1, dtype=np.int64))
        return float(out + int(np.sum(clf.predict(np.repeat(_QUERY, 2, axis=0)) == 1)))

    designs.append(CanaryDesign("removed then re-added", "Ind-KNN", True, False, readded, proven, delta,
                                proven_curve=curve))
    designs.append(CanaryDesign("duplicated records", "Ind-KNN", _with(background, np.vstack([_QUERY, _QUERY])),
                                _with(background, _QUERY), _ind_count_release(settings, 1), proven, delta,
                                proven_curve=curve))
    return designs


# --------------------------------------------------------------------------------------------- Private-kNN
_ORIGIN = np.zeros((1, 2))
_FAR = np.array([[5.0, 0.0], [0.0, 5.0], [-5.0, 0.0], [0.0, -5.0]])  # label 0, far from the query (the origin)
_PKNN = {"k": 1, "sampling_probability": 0.5, "threshold": None, "sigma_vote": 1.0, "metric": "euclidean",
         "n_classes": 2}


def _pknn_data(canaries):
    canaries = np.asarray(canaries, dtype=np.float64).reshape(-1, 2)
    return (np.vstack([_FAR, canaries]),
            np.concatenate([np.zeros(len(_FAR), np.int64), np.ones(len(canaries), np.int64)]))


def private_knn_designs(*, delta: float = 1e-5) -> list[CanaryDesign]:
    """Private-kNN designs (``k = 1``, Poisson sampling probability 0.5, no screening, ``sigma_vote = 1``; the
    query at the origin, four label-0 records at distance 5, the canary, label 1, at the origin):
    ``only neighbour`` (one query), ``nearly spent budget`` (5 queries: the guarantee grows with them) and
    ``duplicated records`` (two copies against one). The release is the number of canary labels among the
    answers; ``proven_epsilon`` is :meth:`PrivateKNNClassifier.privacy_report` (RDP, a proven upper bound) after
    the design's queries (Private-kNN Sec 3, Thm 7 / 9)."""
    from dpledger.predict.private_knn import PrivateKNNClassifier

    delta = _validate.open_unit_interval(delta, "delta", "private_knn_designs")
    designs = []
    for name, canaries, neighbouring, queries in (("only neighbour", _ORIGIN, np.zeros((0, 2)), 1),
                                                  ("nearly spent budget", _ORIGIN, np.zeros((0, 2)), 5),
                                                  ("duplicated records", np.vstack([_ORIGIN, _ORIGIN]), _ORIGIN, 1)):
        def release(data, rng, queries=queries):
            clf = PrivateKNNClassifier(**_PKNN, random_state=rng).fit(*data)
            return float(np.sum(clf.predict(np.repeat(_ORIGIN, queries, axis=0)) == 1))

        probe = PrivateKNNClassifier(**_PKNN, random_state=0).fit(*_pknn_data(canaries))
        probe.predict(np.repeat(_ORIGIN, queries, axis=0))
        proven = float(probe.privacy_report(delta).epsilon)
        designs.append(CanaryDesign(name, "Private-kNN", _pknn_data(canaries), _pknn_data(neighbouring), release,
                                    proven, delta, proven_curve=lambda d, probe=probe: probe.privacy_report(d).epsilon))
    return designs


# ------------------------------------------------------------------------------------------------ one run
@dataclass(frozen=True)
class OneRunCanaries:
    """Canaries for :func:`predict.audit_one_run.audit_one_run`: ``release(included, rng)`` runs the predictor
    once on an input holding canary ``i`` exactly when ``included[i]`` and returns one score per canary;
    ``proven_epsilon`` at ``delta`` is the predictor's guarantee for every canary."""

    name: str
    predictor: str
    canaries: int
    release: Callable[[np.ndarray, np.random.Generator], np.ndarray] = field(repr=False)
    proven_epsilon: float
    delta: float

    def audit(self, *, guesses_in: int, guesses_out: int, confidence: float = 0.95,
              random_state: Seed = None) -> OneRunAuditResult:
        """:func:`predict.audit_one_run.audit_one_run` of these canaries at their ``delta``."""
        return audit_one_run(self.release, self.canaries, guesses_in=guesses_in, guesses_out=guesses_out,
                             delta=self.delta, confidence=confidence, random_state=random_state)


def ind_knn_one_run(*, canaries: int = 200, epsilon: float = 4.0, delta: float = 1e-5,
                    n_background: int = 3) -> OneRunCanaries:
    """Ind-KNN one-run canaries: canary ``i`` is the unit vector ``e_i`` in ``R^(canaries + 1)`` with label 1 and
    its own query ``e_i`` (cosine kernel 1 with its query, 0 with every other), the background on the last axis
    with label 0. One fit, one query per canary; canary ``i``'s score is 1 if its query got label 1. Each canary
    is the only neighbour of its query when included, and absent its query is answered with pure noise. The
    loud settings of :func:`ind_knn_only_neighbour_canary`; the guarantee is Ind-KNN's per-record one."""
    owner = "ind_knn_one_run"
    m = _validate.integer(canaries, "canaries", owner, minimum=1)
    epsilon = _validate.positive(epsilon, "epsilon", owner)
    delta = _validate.open_unit_interval(delta, "delta", owner)
    n_background = _validate.integer(n_background, "n_background", owner, minimum=1)
    settings = _ind_settings(epsilon, delta, 2, {"n_queries": m})
    eye = np.eye(m + 1)
    background = eye[[m] * n_background] + np.outer(np.arange(n_background), eye[0]) * 0.01

    def release(included, rng):
        X = np.vstack([background, eye[:m][included]])
        y = np.concatenate([np.zeros(n_background, np.int64), np.ones(int(included.sum()), np.int64)])
        clf = IndKNNClassifier(**settings, random_state=rng).fit(X, y)
        return (clf.predict(eye[:m]) == 1).astype(np.float64)

    probe = IndKNNClassifier(**settings, random_state=0).fit(background, np.zeros(n_background, np.int64))
    proven = float(probe.privacy_report(delta).epsilon)
    return OneRunCanaries("only neighbours, one run", "Ind-KNN", m, release, proven, delta)


# ------------------------------------------------------------------------------------------------- DP-SGD
def dpsgd_canary(*, noise_multiplier: float = 1.0, epochs: int = 5, n_records: int = 49, batch_size: int = 25,
                 learning_rate: float = 2.0, delta: float = 1e-5) -> CanaryDesign:
    """A DP-SGD canary: a linear softmax model on the first ``n_records`` of scikit-learn's digits (pixels / 16)
    trained with Opacus (``PrivacyEngine(accountant="dpledger_rdp")``, Poisson sampling, clipping norm 1, noise
    multiplier ``noise_multiplier``), with or without a canary record: pixel 0 (blank in every digit) set to 1,
    the rest 0, label 0. The weights start at zero and the run's generator seeds Opacus's sampler and noise.

    The released number is read off the trained model only: ``w . (e_0 - 1/10)`` where ``w`` is the change of
    the ten logits between the canary input and the zero input (the weights of pixel 0, which only the canary's
    clipped gradients and the noise ever move).

    ``proven_epsilon`` is dpledger's Opacus adapter's RDP bound for the steps taken (Opacus's sampling
    probability is ``1 / ceil(N / batch_size)``; ``n_records`` and ``batch_size`` are checked to give the same
    probability with and without the canary, and each run checks that its ledger matches).
    Needs Opacus (``pip install opacus``) and scikit-learn.
    """
    owner = "dpsgd_canary"
    z = _validate.positive(noise_multiplier, "noise_multiplier", owner)
    epochs = _validate.integer(epochs, "epochs", owner, minimum=1)
    n = _validate.integer(n_records, "n_records", owner, minimum=2)
    batch = _validate.integer(batch_size, "batch_size", owner, minimum=1)
    lr = _validate.positive(learning_rate, "learning_rate", owner)
    delta = _validate.open_unit_interval(delta, "delta", owner)
    if n > 1796:
        raise ValueError(f"`n_records` of {owner} must be at most 1796 (digits has 1,797 records); got {n}.")
    batches = -(-n // batch)
    if -(-(n + 1) // batch) != batches:
        raise ValueError(f"`n_records` and `batch_size` of {owner} must give Opacus the same sampling "
                         f"probability with and without the canary (ceil(N / B) equal for N and N + 1); got "
                         f"{n} and {batch}.")
    from dpledger.accountants.adapters import OpacusAccountant, register_opacus_accountants

    register_opacus_accountants()  # imports Opacus: a MissingPeerError naming the pip command without it
    from sklearn.datasets import load_digits

    X, y = load_digits(return_X_y=True)
    background = (X[:n] / 16.0, y[:n].astype(np.int64))
    canary = np.zeros((1, 64))
    canary[0, 0] = 1.0
    with_canary = (np.vstack([background[0], canary]), np.append(background[1], 0))
    q = 1.0 / batches
    ledger = OpacusAccountant()
    for _ in range(epochs * batches):
        ledger.step(noise_multiplier=z, sample_rate=q)
    proven = float(ledger.get_epsilon(delta))
    direction = np.full(10, -0.1)
    direction[0] += 1.0

    def release(data, rng):
        return _train_dpsgd(data, rng, z=z, epochs=epochs, batch=batch, lr=lr, expected=(z, q, epochs * batches),
                            probe=canary) @ direction

    return CanaryDesign("canary pixel", "DP-SGD (Opacus)", with_canary, background, release, proven, delta,
                        proven_curve=ledger.get_epsilon)


def _train_dpsgd(data, rng, *, z, epochs, batch, lr, expected, probe):
    import warnings

    import torch
    from opacus import PrivacyEngine

    seed = int(rng.integers(0, 2**62))
    X = torch.as_tensor(data[0], dtype=torch.float32)
    y = torch.as_tensor(data[1])
    loader = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(X, y), batch_size=batch,
                                         generator=torch.Generator().manual_seed(seed))
    model = torch.nn.Linear(64, 10)
    torch.nn.init.zeros_(model.weight)
    torch.nn.init.zeros_(model.bias)
    optimizer = torch.optim.SGD(model.parameters(), lr=lr)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # Opacus's notices (secure RNG, hooks)
        engine = PrivacyEngine(accountant="dpledger_rdp")
        model, optimizer, loader = engine.make_private(
            module=model, optimizer=optimizer, data_loader=loader, noise_multiplier=z, max_grad_norm=1.0,
            poisson_sampling=True, noise_generator=torch.Generator().manual_seed(seed + 1),
        )
        for _ in range(epochs):
            for xb, yb in loader:
                optimizer.zero_grad()
                if len(xb):
                    torch.nn.functional.cross_entropy(model(xb), yb).backward()
                optimizer.step()  # an empty Poisson batch still takes a noisy step
    history = [tuple(h) for h in engine.accountant.history]
    if history != [expected]:
        raise RuntimeError(f"dpsgd_canary: Opacus's ledger {history} differs from the audited one {[expected]}.")
    with torch.no_grad():
        out = model(torch.as_tensor(probe, dtype=torch.float32)) - model(torch.zeros_like(torch.as_tensor(
            probe, dtype=torch.float32)))
    return out.numpy()[0].astype(np.float64)
