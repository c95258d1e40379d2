"""A composition described on the command line or in a JSON file, turned into mechanisms.

A composition is a list of entries. Each entry names a mechanism kind, its noise parameters, an optional Poisson
sampling probability and a count (how many times it runs). The same content has two spellings:

flags
    ``--mechanism KIND`` starts a new entry; the options after it (``--sigma``, ``--scale``, ``--p``,
    ``--rho``, ``--pure-epsilon``, ``--sensitivity``, ``--sampling-probability``, ``--count``) belong to it.
    Options written before the first ``--mechanism`` belong to the first entry.
JSON
    ``{"mechanisms": [{"mechanism": "gaussian", "sigma": 1.1, "sampling_probability": 0.01, "count": 10000},
    ...]}`` (or just the list). Keys are the option names with ``_`` (``-`` is accepted too).

Every mechanism built here is a :class:`mechanisms.Mechanism` whose curves are stated for the add-or-remove-one
relation.

Examples
--------
>>> entries = entries_from_json('{"mechanisms": [{"mechanism": "gaussian", "sigma": 1.1, '
...                             '"sampling_probability": 0.01, "count": 10000}]}')
>>> entries[0].describe()
'10000 x gaussian(sigma=1.1, sensitivity=1), Poisson-subsampled with probability 0.01'
>>> type(entries[0].build()).__name__
'PoissonSubsampled'
"""

from __future__ import annotations

import dataclasses
import fractions
import json
import math
import numbers
from collections.abc import Iterable
from typing import Any

from dpledger.mechanisms import (
    GaussianMechanism,
    LaplaceMechanism,
    PoissonSubsampled,
    PureDPMechanism,
    RandomAllocation,
    RandomizedResponse,
    SampledWithoutReplacement,
    SampledWithReplacement,
    SparseVector,
    ZCDPMechanism,
)
from dpledger.mechanisms.base import Mechanism
from dpledger.mechanisms.noisy_aggregation import NoisyArgmax
from dpledger.mechanisms.noisy_screening import NoisyScreening, subsampled_screening

__all__ = ["Kind", "KINDS", "Entry", "SpecError", "entries_from_items", "entries_from_json", "COMMON"]


class SpecError(ValueError):
    """A composition description that cannot be turned into mechanisms; the message says what to change."""


@dataclasses.dataclass(frozen=True)
class Kind:
    """A mechanism kind the command line knows.

    ``noise`` names the parameter ``dpledger calibrate`` searches; ``more_private`` says whether larger values
    of it are more private (noise scales) or less (a retention probability, a privacy parameter);
    ``domain`` is its open admissible interval and ``initial`` the starting bracket of the search.
    """

    name: str
    factory: object
    required: tuple
    optional: dict
    noise: str
    more_private: bool
    domain: tuple
    initial: tuple
    help: str
    integers: tuple = ()
    subsample: object = None  # (mechanism, q) -> Mechanism; default PoissonSubsampled

    def params(self) -> tuple[str, ...]:
        return self.required + tuple(self.optional)


def _gaussian_svt(*, sigma_threshold, sigma_queries, max_length, cutoff, sensitivity):
    """:class:`mechanisms.SparseVector` with Gaussian noises (``sensitivity`` is that of every query)."""
    return SparseVector(threshold=GaussianMechanism(sigma=sigma_threshold, sensitivity=sensitivity),
                        queries=GaussianMechanism(sigma=sigma_queries, sensitivity=sensitivity),
                        cutoff=cutoff, max_length=max_length)


def _gaussian_svt_margin(*, sigma_threshold, sigma_queries, margin, sensitivity):
    """:class:`mechanisms.SparseVector` with Gaussian noises on non-negative queries below a public ``margin``
    (the threshold the runner uses is at most it), cut-off 1 and no length cap."""
    return SparseVector(threshold=GaussianMechanism(sigma=sigma_threshold, sensitivity=sensitivity),
                        queries=GaussianMechanism(sigma=sigma_queries, sensitivity=sensitivity),
                        nonnegative_queries=True, margin=margin)


def _laplace_svt(*, scale_threshold, scale_queries, cutoff, sensitivity):
    """:class:`mechanisms.SparseVector` with Laplace noises and no length cap."""
    return SparseVector(threshold=LaplaceMechanism(scale=scale_threshold, sensitivity=sensitivity),
                        queries=LaplaceMechanism(scale=scale_queries, sensitivity=sensitivity), cutoff=cutoff)


KINDS = {
    k.name: k
    for k in (
        Kind(
            "gaussian", GaussianMechanism, ("sigma",), {"sensitivity": 1.0}, "sigma", True, (0.0, math.inf),
            (0.5, 2.0), "Gaussian noise of standard deviation sigma on an L2-sensitivity query (Mironov 2017, Prop 7)",
        ),
        Kind(
            "laplace", LaplaceMechanism, ("scale",), {"sensitivity": 1.0}, "scale", True, (0.0, math.inf),
            (0.5, 2.0), "Laplace noise of scale b on an L1-sensitivity query (Mironov 2017, Prop 6)",
        ),
        Kind(
            "randomized-response", RandomizedResponse, ("p",), {}, "p", False, (0.5, 1.0), (0.51, 0.75),
            "binary randomized response: the true bit with probability p (Mironov 2017, Prop 5)",
        ),
        Kind(
            "pure-dp", PureDPMechanism, ("pure_epsilon",), {}, "pure_epsilon", False, (0.0, math.inf), (0.1, 1.0),
            "any mechanism known to be pure_epsilon-DP (Kairouz, Oh & Viswanath 2015, Thm 2.4)",
        ),
        Kind(
            "zcdp", ZCDPMechanism, ("rho",), {}, "rho", False, (0.0, math.inf), (0.01, 0.1),
            "any mechanism known to be rho-zCDP (Bun & Steinke 2016, Def 1.1); RDP accountant only",
        ),
        Kind(
            "noisy-argmax", NoisyArgmax, ("sigma",), {}, "sigma", True, (0.0, math.inf), (0.5, 2.0),
            "Gaussian report-noisy-max of a k-NN vote histogram, L2 sensitivity sqrt(2) (Private-kNN Sec 3)",
        ),
        Kind(
            "noisy-screening", NoisyScreening, ("k", "threshold", "sigma", "num_classes"), {}, "sigma", True,
            (0.0, math.inf), (0.5, 2.0),
            "Private-kNN screening: is the noisy plurality of k votes above the threshold (Private-kNN Thm 9); "
            "subsampled by the minimum of thesis Thm 2.3.1 and the subsampled Gaussian",
            integers=("k", "num_classes"),
            subsample=subsampled_screening,
        ),
        Kind(
            "gaussian-svt", _gaussian_svt, ("sigma_threshold", "sigma_queries", "max_length"),
            {"cutoff": 1, "sensitivity": 1.0}, "sigma_threshold", True, (0.0, math.inf), (0.5, 2.0),
            "sparse vector technique with Gaussian threshold/query noise, at most max_length queries and cutoff "
            "tops (thesis Thm 7.2.1 / 7.2.7)",
            integers=("max_length", "cutoff"),
        ),
        Kind(
            "gaussian-svt-margin", _gaussian_svt_margin, ("sigma_threshold", "sigma_queries", "margin"),
            {"sensitivity": 1.0}, "sigma_threshold", True, (0.0, math.inf), (0.5, 2.0),
            "sparse vector technique with Gaussian noise on non-negative queries below a public threshold "
            "margin, cut-off 1, no length cap (thesis Thm 7.2.1 with the stopping-time moment bound, (7.2))",
        ),
        Kind(
            "laplace-svt", _laplace_svt, ("scale_threshold", "scale_queries"), {"cutoff": 1, "sensitivity": 1.0},
            "scale_threshold", True, (0.0, math.inf), (0.5, 2.0),
            "sparse vector technique with Laplace threshold/query noise, unbounded length (thesis Thm 7.2.1 (7.3), "
            "Lemma 7.1.3)",
            integers=("cutoff",),
        ),
    )
}

#: Parameters every entry takes, with their defaults.
COMMON = {"sampling_probability": 1.0, "count": 1}
#: The DP-SGD spelling of sampling_probability and count: q = batch_size / dataset_size and
#: count = ceil(epochs * dataset_size / batch_size) (rounded up: a partial last epoch counts as a step).
TRAINING = ("epochs", "batch_size", "dataset_size")
#: How the batches are drawn (``--sampler``): the default ``poisson`` is Poisson subsampling at ``sampling_probability``
#: (or ``batch_size / dataset_size``); ``without-replacement`` is a fixed-size batch of ``batch_size`` records drawn
#: uniformly without replacement from ``dataset_size`` (:class:`mechanisms.SampledWithoutReplacement`,
#: add-or-remove-one, thesis Thm 3.3.5(2)), whose mechanism is described under replace-one of a batch record,
#: so its sensitivity must be given explicitly. ``random-allocation`` uses every record in exactly one of
#: ``ceil(dataset_size / batch_size)`` steps per epoch (:class:`mechanisms.RandomAllocation`; ``count`` = epochs).
#: ``with-replacement`` (:class:`mechanisms.SampledWithReplacement`) has a proven dominating pair for the Gaussian
#: (both accountants) and an RDP bound only for other bases, and needs ``sensitivity`` like
#: ``without-replacement``.
SAMPLERS = ("poisson", "without-replacement", "with-replacement", "random-allocation")
_FIXED_SIZE = ("without-replacement", "with-replacement")
#: Top-level keys of a ``dpledger ... --json`` report, besides "mechanisms": such a report reads back as a spec.
REPORT_KEYS = {"command", "quantity", "delta", "epsilon", "relation", "results", "best_upper_bound", "target",
               "calibrated", "accountant"}


def parse_number(text: str | float) -> float:
    """A command-line number: a float (``1e4``, ``0.01``) or a fraction ``a/b`` (``256/60000``)."""
    if isinstance(text, str) and "/" in text:
        top, _, bottom = text.partition("/")
        try:
            value = fractions.Fraction(top.strip()) / fractions.Fraction(bottom.strip())
        except (ValueError, ZeroDivisionError):
            raise ValueError(f"not a number or fraction: {text!r}") from None
        return float(value)
    return float(text)


def parse_integer(text: str | float) -> int:
    """A command-line integer, also in float spelling (``1e4``, ``14062.0``); fractions are refused."""
    value = float(text)
    if not value.is_integer():
        raise ValueError(f"not an integer: {text!r}")
    return int(value)
_ARGUMENT_NAMES = {"pure_epsilon": "epsilon"}  # parameter -> keyword of the mechanism class


def flag(param: str) -> str:
    """The command-line spelling of a parameter: ``sampling_probability`` -> ``--sampling-probability``."""
    return "--" + param.replace("_", "-")


@dataclasses.dataclass(frozen=True)
class Entry:
    """One line of a composition: ``count`` runs of a (possibly Poisson-subsampled) mechanism."""

    kind: Kind
    params: dict
    sampling_probability: float = 1.0
    count: int = 1
    sampler: str = "poisson"
    batch_size: int | None = None
    dataset_size: int | None = None

    def build(self, **override: float) -> Mechanism:
        """The :class:`mechanisms.Mechanism` of one run (``override`` replaces noise parameters)."""
        values = {**self.kind.optional, **self.params, **override}
        missing = [p for p in self.kind.required if values.get(p) is None]
        if missing:
            raise SpecError(f"mechanism {self.kind.name} needs {', '.join(flag(p) for p in missing)}.")
        base = self.kind.factory(**{_ARGUMENT_NAMES.get(k, k): v for k, v in values.items()})
        if self.sampler in _FIXED_SIZE:
            combinator = SampledWithoutReplacement if self.sampler == "without-replacement" else SampledWithReplacement
            return combinator(base, batch_size=self.batch_size, dataset_size=self.dataset_size)
        if self.sampler == "random-allocation":
            return RandomAllocation(base, steps=math.ceil(self.dataset_size / self.batch_size))
        if self.sampling_probability == 1.0:
            return base
        if self.kind.subsample is not None:
            return self.kind.subsample(base, self.sampling_probability)
        return PoissonSubsampled(base, sampling_probability=self.sampling_probability)

    def describe(self) -> str:
        """One human line, e.g. ``10000 x gaussian(sigma=1.1, sensitivity=1), Poisson-subsampled ...``."""
        values = {**self.kind.optional, **self.params}
        inside = ", ".join(f"{k}={'?' if values.get(k) is None else f'{values[k]:g}'}" for k in self.kind.params())
        text = f"{self.count} x {self.kind.name}({inside})"
        if self.sampler in _FIXED_SIZE:
            how = self.sampler.replace("-", " ")
            return text + (f", on batches of {self.batch_size} drawn {how} from {self.dataset_size} "
                           "records (sensitivity under replace-one of a batch record)")
        if self.sampler == "random-allocation":
            steps = math.ceil(self.dataset_size / self.batch_size)
            return text.replace(f"{self.count} x ", f"{self.count} epochs x ", 1) + (
                f", random allocation: each of {self.dataset_size} records in exactly 1 of {steps} steps per epoch")
        if self.sampling_probability != 1.0:
            text += f", Poisson-subsampled with probability {self.sampling_probability:g}"
        return text

    def to_json(self) -> dict[str, Any]:
        """The entry in the JSON spelling (``entries_from_json`` reads it back)."""
        out = {"mechanism": self.kind.name}
        out.update({k: v for k, v in {**self.kind.optional, **self.params}.items() if v is not None})
        if self.sampler != "poisson":
            out.update(sampler=self.sampler, batch_size=self.batch_size, dataset_size=self.dataset_size)
        else:
            out["sampling_probability"] = self.sampling_probability
        out["count"] = self.count
        return out


def _key(param):
    return f'"{param}"'


def _number(value, where, name):
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise SpecError(f"{name} of {where} must be a number; got {value!r}.")
    x = float(value)
    if math.isnan(x):
        raise SpecError(f"{name} of {where} must be a number; got nan.")
    return x


def _count(value, where, name):
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        if isinstance(value, float) and value.is_integer():
            value = int(value)
        else:
            raise SpecError(f"{name} of {where} must be a positive integer; got {value!r}.")
    if value < 1:
        raise SpecError(f"{name} of {where} must be a positive integer; got {value}.")
    return int(value)


def _integer(value, where, name):
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise SpecError(f"{name} of {where} must be an integer; got {value!r}.")
    return int(value)


def _entry(kind_name, items, where, *, allow_missing_noise=False, spell=flag):
    """Build an :class:`Entry` from ``(param, value)`` pairs, checking every name and value.

    ``spell`` writes a parameter's name in messages (``--sigma`` for flags, ``"sigma"`` for JSON).
    """
    if not isinstance(kind_name, str) or kind_name not in KINDS:
        raise SpecError(f"{spell('mechanism')} of {where} must be one of {', '.join(KINDS)}; got {kind_name!r}.")
    kind = KINDS[kind_name]
    where = f"{where} ({kind.name})"
    params, common, seen = {}, {}, set()
    for param, value in items:
        if param in seen:
            raise SpecError(
                f"{spell(param)} is given twice for {where}; each {spell('mechanism')} starts a new entry."
            )
        seen.add(param)
        if isinstance(value, str) and param in ("count", "sampling_probability", *TRAINING):
            try:  # JSON may spell them as strings ("256/60000", "1e4")
                value = (parse_number if param in ("sampling_probability", "epochs") else parse_integer)(value)
            except ValueError:
                raise SpecError(f"{spell(param)} of {where} must be a number; got {value!r}.") from None
        if param == "sampler":
            if value not in SAMPLERS:
                raise SpecError(f"{spell(param)} of {where} must be one of {', '.join(SAMPLERS)}; got {value!r}.")
            common["sampler"] = value
        elif param == "count":
            common["count"] = _count(value, where, spell(param))
        elif param == "sampling_probability":
            common["sampling_probability"] = _number(value, where, spell(param))
        elif param in TRAINING:
            common[param] = (_number if param == "epochs" else _count)(value, where, spell(param))
        elif param in kind.integers:
            params[param] = _integer(value, where, spell(param))
        elif param in kind.params():
            params[param] = _number(value, where, spell(param))
        else:
            allowed = ", ".join(spell(p) for p in kind.params() + tuple(COMMON) + TRAINING + ("sampler",))
            raise SpecError(f"{spell(param)} does not apply to {where}; its options are {allowed}.")
    missing = [p for p in kind.required if p not in params]
    if missing and not (allow_missing_noise and missing == [kind.noise]):
        raise SpecError(f"{where} needs {', '.join(spell(p) for p in missing)}.")
    entry = Entry(kind, params, **_training(common, where, spell, kind, params))
    if not missing:
        entry.build()  # validate the values now (the mechanisms raise ValueError with the message shape)
    elif entry.sampling_probability != 1.0 or len(kind.required) > 1:
        entry.build(**{kind.noise: kind.initial[1]})  # validate everything but the noise to calibrate
    return entry


def _training(common, where, spell, kind=None, params=None):
    """Resolve the DP-SGD spelling (:data:`TRAINING`) into ``sampling_probability`` and ``count`` (and, for
    ``--sampler without-replacement``, keep the batch and data set sizes)."""
    sampler = common.get("sampler", "poisson")
    epochs, batch, size = (common.pop(p, None) for p in TRAINING)
    if sampler == "random-allocation":
        if batch is None or size is None or batch > size:
            raise SpecError(f"{spell('sampler')} random-allocation of {where} needs {spell('batch_size')} at most "
                            f"{spell('dataset_size')} (ceil(dataset_size / batch_size) steps per epoch).")
        if "sampling_probability" in common:
            raise SpecError(f"{spell('sampler')} random-allocation of {where} takes no "
                            f"{spell('sampling_probability')}.")
        if epochs is not None:
            if "count" in common:
                raise SpecError(f"give {where} either {spell('count')} or {spell('epochs')}, not both.")
            if not (epochs >= 1 and float(epochs).is_integer()):
                raise SpecError(f"{spell('epochs')} of {where} must be a whole number of epochs with "
                                f"random-allocation; got {epochs!r}.")
            common["count"] = int(epochs)
        common.update(batch_size=batch, dataset_size=size)
        return common
    if sampler in _FIXED_SIZE:
        if batch is None or size is None:
            raise SpecError(f"{spell('sampler')} {sampler} of {where} needs {spell('batch_size')} and "
                            f"{spell('dataset_size')}.")
        if kind is not None and "sensitivity" in kind.optional and "sensitivity" not in (params or {}):
            raise SpecError(
                f"{spell('sampler')} {sampler} of {where} needs {spell('sensitivity')} given explicitly: "
                "the sensitivity when one record of the fixed-size batch is replaced (for a sum of gradients "
                "clipped to norm C it is 2 C, twice the add-or-remove sensitivity Poisson sampling uses)."
            )
        common["batch_size"], common["dataset_size"] = batch, size
    if batch is None and size is None:
        if epochs is not None:
            raise SpecError(f"{spell('epochs')} of {where} needs {spell('batch_size')} and {spell('dataset_size')}.")
        return common
    if batch is None or size is None:
        raise SpecError(f"{where} needs both {spell('batch_size')} and {spell('dataset_size')} (q = batch / size).")
    if batch > size:
        raise SpecError(f"{spell('batch_size')} of {where} must be at most {spell('dataset_size')}; "
                        f"got {batch} > {size}.")
    if "sampling_probability" in common:
        raise SpecError(f"give {where} either {spell('sampling_probability')} or {spell('batch_size')} and "
                        f"{spell('dataset_size')}, not both.")
    common["sampling_probability"] = float(fractions.Fraction(batch, size))
    if sampler in _FIXED_SIZE:
        common["sampling_probability"] = 1.0  # the sampler carries the rate (batch_size / dataset_size)
    if epochs is not None:
        if not epochs > 0 or math.isinf(epochs):
            raise SpecError(f"{spell('epochs')} of {where} must be a positive number; got {epochs!r}.")
        if "count" in common:
            raise SpecError(f"give {where} either {spell('count')} or {spell('epochs')}, not both.")
        common["count"] = math.ceil(fractions.Fraction(epochs) * size / batch)
    return common


def entries_from_items(items: Iterable[tuple[str, str | float]], *, allow_missing_noise: bool = False) -> list[Entry]:
    """Group ``(param, value)`` pairs in command-line order into entries.

    ``("mechanism", kind)`` starts a new entry; pairs before the first one belong to the first entry.
    With ``allow_missing_noise`` (``dpledger calibrate``) an entry may omit its noise parameter.
    """
    groups, leading = [], []
    for param, value in items:
        if param == "mechanism":
            groups.append([value, list(leading) if not groups else []])
            leading = []
        elif groups:
            groups[-1][1].append((param, value))
        else:
            leading.append((param, value))
    if not groups:
        raise SpecError(
            "no mechanism given: describe the composition with --mechanism KIND (one per entry, followed by its "
            f"options; kinds: {', '.join(KINDS)}) or with --spec FILE.json."
        )
    return [
        _entry(kind, pairs, f"mechanism #{i}", allow_missing_noise=allow_missing_noise)
        for i, (kind, pairs) in enumerate(groups, start=1)
    ]


def entries_from_json(text: str, *, source: str = "the JSON spec", allow_missing_noise: bool = False) -> list[Entry]:
    """Entries from the JSON spelling: ``{"mechanisms": [{...}, ...]}`` or a bare list of entry objects."""
    try:
        data = json.loads(text)
    except json.JSONDecodeError as err:
        raise SpecError(f"{source} is not valid JSON: {err}.") from None
    if isinstance(data, dict):
        extra = set(data) - {"mechanisms"}
        if "command" in data:  # a dpledger --json report: its "mechanisms" are the spec, the rest the report
            extra -= REPORT_KEYS
        if extra:
            raise SpecError(f"{source} may only have the key \"mechanisms\"; got also {sorted(extra)}.")
        data = data.get("mechanisms")
    if not isinstance(data, list) or not data:
        raise SpecError(
            f"{source} must be a non-empty list of mechanisms, or an object {{\"mechanisms\": [...]}}; "
            f"e.g. {{\"mechanisms\": [{{\"mechanism\": \"gaussian\", \"sigma\": 1.1, \"count\": 100}}]}}."
        )
    entries = []
    for i, item in enumerate(data, start=1):
        where = f"mechanism #{i} of {source}"
        if not isinstance(item, dict):
            raise SpecError(f"{where} must be an object; got {item!r}.")
        item = {str(k).replace("-", "_"): v for k, v in item.items()}
        if "mechanism" not in item:
            raise SpecError(f"{where} has no \"mechanism\" key (one of {', '.join(KINDS)}).")
        kind = item.pop("mechanism")
        entries.append(
            _entry(kind, list(item.items()), where, allow_missing_noise=allow_missing_noise, spell=_key)
        )
    return entries
