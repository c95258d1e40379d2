"""Check that a PyTorch / Opacus data loader samples the way the accountant assumes (Poisson subsampling).

Opacus accounts every step as a Poisson-subsampled Gaussian at ``sample_rate``. The most frequent error in
practice is a loader that does something else: a plain shuffled loader (each epoch a random permutation cut into
fixed-size batches), a ``WeightedRandomSampler`` (some records drawn far more often than ``sample_rate``), fixed-size
batches with replacement, sequential batches, or gradient accumulation over several Poisson batches, after which a
record can appear in several micro-batches of one noisy step. :func:`inspect_data_loader` says which sampler a loader
uses and what the proven accounting is; :meth:`OpacusAccountant.check_data_loader
<accountants.adapters.OpacusAccountant.check_data_loader>` refuses (or warns loudly about) anything but Poisson.

torch and Opacus are imported only when a loader is inspected (a caller with a loader has torch already).
"""

from __future__ import annotations

import dataclasses
import enum
import math
from typing import Any

from dpledger.mechanisms import _validate
from dpledger.mechanisms.base import Mechanism
from dpledger.mechanisms.errors import DPLedgerError, DPLedgerWarning
from dpledger.mechanisms.gaussian import GaussianMechanism
from dpledger.mechanisms.subsampled import PoissonSubsampled

__all__ = ["SamplerKind", "SamplerReport", "SamplerMismatchError", "SamplerMismatchWarning", "inspect_data_loader",
           "accumulated_step_mechanism"]


class SamplerMismatchError(DPLedgerError):
    """The data loader's sampler is not the Poisson sampling the accountant assumes; the message says what to do."""


class SamplerMismatchWarning(DPLedgerWarning):
    """Loud warning: the sampler or the step structure is not what Opacus's accounting assumes."""


class SamplerKind(enum.Enum):
    POISSON = "Poisson sampling (each record kept independently with probability sample_rate)"
    SHUFFLED = "shuffled fixed-size batches (a random permutation per epoch, cut into batches)"
    WITH_REPLACEMENT = "fixed-size batches drawn uniformly with replacement"
    WEIGHTED = "weighted sampling with replacement (WeightedRandomSampler)"
    SEQUENTIAL = "sequential fixed batches (no sampling)"
    UNKNOWN = "a sampler dpledger cannot identify"


def accumulated_step_mechanism(
    noise_multiplier: float, sample_rate: float, accumulation_steps: int
) -> tuple[Mechanism, int]:
    """The proven per-update accounting when one noisy update sums ``k = accumulation_steps`` independent Poisson
    batches (each record clipped per micro-batch, so it can count up to k times) and adds ``N(0, (z C)^2)`` once.

    ``sum_i S_i + N(0, z^2 C^2)`` is a post-processing of the k releases ``S_i + N(0, z^2 C^2 / k)`` (the sum of k
    independent ``N(0, z^2 C^2 / k)`` is ``N(0, z^2 C^2)``), each a Poisson-subsampled Gaussian with noise multiplier
    ``z / sqrt(k)``: so k compositions of ``PoissonSubsampled(GaussianMechanism(sigma=z / sqrt(k)), sample_rate)``
    per update is an upper bound (add-or-remove-one). Opacus instead records one step at rate ``k * sample_rate`` with
    multiplier ``z``, which ignores that a record can be in several micro-batches.

    Returns
    -------
    (Mechanism, int)
        The mechanism and how many times to compose it per update.
    """
    z = _validate.positive(noise_multiplier, "noise_multiplier", "accumulated_step_mechanism")
    q = _validate.probability(sample_rate, "sample_rate", "accumulated_step_mechanism")
    k = _validate.integer(accumulation_steps, "accumulation_steps", "accumulated_step_mechanism", minimum=1)
    base = GaussianMechanism(sigma=z / math.sqrt(k))
    return (base if q == 1.0 else PoissonSubsampled(base, sampling_probability=q)), k


@dataclasses.dataclass(frozen=True)
class SamplerReport:
    """What :func:`inspect_data_loader` found.

    Attributes
    ----------
    kind : SamplerKind
    matches_poisson : bool
        True only for Poisson sampling with no gradient accumulation: the accounting Opacus does is then right.
    sample_rate : float or None
        The Poisson rate (Poisson loaders) or ``batch_size / dataset_size`` (fixed-size loaders).
    batch_size, dataset_size : int or None
    accumulation_steps : int
    message : str
        What is wrong (empty when ``matches_poisson``) and the accounting that is proven for this loader.
    """

    kind: SamplerKind
    matches_poisson: bool
    sample_rate: float | None
    batch_size: int | None
    dataset_size: int | None
    accumulation_steps: int
    message: str

    def mechanism(self, noise_multiplier: float) -> tuple[Mechanism, int]:
        """``(mechanism, count per update)``: the proven accounting of one noisy update of this loader, for a
        Poisson loader (with or without accumulation, :func:`accumulated_step_mechanism`).

        Raises
        ------
        SamplerMismatchError
            For the other samplers, with :attr:`message`: dpledger has no proven amplified upper bound for them.
        """
        if self.kind is not SamplerKind.POISSON:
            raise SamplerMismatchError(self.message)
        return accumulated_step_mechanism(noise_multiplier, self.sample_rate, self.accumulation_steps)


_FIX = ("Use Poisson sampling (Opacus: PrivacyEngine.make_private(..., poisson_sampling=True), or "
        "opacus.data_loader.DPDataLoader.from_data_loader(loader)); for large logical batches use "
        "opacus.utils.batch_memory_manager.BatchMemoryManager, which splits one Poisson batch into physical "
        "micro-batches without changing the accounting.")


def _poisson_sampler_classes():
    try:
        from opacus.utils import uniform_sampler
    except ImportError:
        return ()
    return tuple(getattr(uniform_sampler, name) for name in
                 ("UniformWithReplacementSampler", "DistributedUniformWithReplacementSampler")
                 if hasattr(uniform_sampler, name))


def inspect_data_loader(data_loader: Any, *, accumulation_steps: int = 1) -> SamplerReport:
    """Identify the sampler of a ``torch.utils.data.DataLoader`` and say whether Opacus's Poisson accounting holds.

    Parameters
    ----------
    data_loader : torch.utils.data.DataLoader
    accumulation_steps : int
        Loader batches summed into one noisy optimizer update (gradient accumulation); 1 = none.

    Returns
    -------
    SamplerReport
    """
    k = _validate.integer(accumulation_steps, "accumulation_steps", "inspect_data_loader", minimum=1)
    try:
        from torch.utils import data as tud
    except ImportError:  # pragma: no cover - a loader implies torch
        raise TypeError(
            "`data_loader` of inspect_data_loader must be a torch DataLoader; torch is not installed."
        ) from None
    if not isinstance(data_loader, tud.DataLoader):
        raise TypeError(f"`data_loader` of inspect_data_loader must be a torch DataLoader; got "
                        f"{type(data_loader).__name__}.")
    try:
        n = len(data_loader.dataset)
    except TypeError:
        n = None
    batch_sampler = data_loader.batch_sampler
    poisson = _poisson_sampler_classes()
    if poisson and isinstance(batch_sampler, poisson):
        q = float(batch_sampler.sample_rate)
        if k == 1:
            return SamplerReport(SamplerKind.POISSON, True, q, None, n, 1, "")
        return SamplerReport(
            SamplerKind.POISSON, False, q, None, n, k,
            f"gradient accumulation over {k} Poisson batches per update: a record can be in several micro-batches "
            f"of one noisy update, so the update is not one Poisson-subsampled Gaussian at rate {k} * {q:g} (what "
            f"Opacus records). Proven: {k} compositions per update of PoissonSubsampled(GaussianMechanism(sigma="
            f"z / sqrt({k})), {q:g}) (accumulated_step_mechanism; a post-processing argument). " + _FIX)
    sampler = getattr(batch_sampler, "sampler", data_loader.sampler)
    b = getattr(batch_sampler, "batch_size", None) or data_loader.batch_size
    rate = (b / n) if (b and n) else None
    if isinstance(sampler, tud.WeightedRandomSampler):
        w = [float(x) for x in sampler.weights]
        total = sum(w)
        factor = (max(w) / total * n) if (n and total > 0) else float("inf")
        return SamplerReport(
            SamplerKind.WEIGHTED, False, rate, b, n, k,
            f"WeightedRandomSampler: the heaviest record is drawn {factor:.6g} times as often as under uniform "
            f"sampling at batch_size / dataset_size = {rate}; Poisson accounting at that rate under-reports its "
            "privacy loss by about that factor in the sampling rate, and dpledger has no proven bound for "
            "record-dependent sampling rates. " + _FIX)
    if isinstance(sampler, tud.RandomSampler):
        if sampler.replacement:
            return SamplerReport(
                SamplerKind.WITH_REPLACEMENT, False, rate, b, n, k,
                f"RandomSampler(replacement=True): fixed-size batches of {b} drawn with replacement, not Poisson "
                "sampling; account for it with mechanisms.SampledWithReplacement (its batch mechanism under "
                "replace-one: sensitivity 2 C; a proven dominating pair for the Gaussian, composed by the "
                "characteristic-function accountant). " + _FIX)
        return SamplerReport(
            SamplerKind.SHUFFLED, False, rate, b, n, k,
            f"a shuffled loader: each epoch is a random permutation cut into batches of {b}, so the batches of an "
            "epoch are dependent and every record is used exactly once per epoch; Poisson accounting at "
            f"{rate} is not an upper bound for it (shuffling can be less private than Poisson sampling at the same "
            "rate), and no proven tight upper bound is known; dpledger reports only a lower bound "
            "(mechanisms.shuffled_epsilon_lower_bound). " + _FIX)
    if isinstance(sampler, tud.SequentialSampler):
        return SamplerReport(
            SamplerKind.SEQUENTIAL, False, rate, b, n, k,
            "a sequential loader: the batches are fixed, so there is no amplification by sampling at all; the "
            "proven accounting is the un-subsampled Gaussian once per epoch (not Poisson at batch_size / n). " + _FIX)
    return SamplerReport(
        SamplerKind.UNKNOWN, False, rate, b, n, k,
        f"the loader's sampler ({type(sampler).__name__}) is not one dpledger can identify, so the Poisson "
        "accounting cannot be verified. " + _FIX)
