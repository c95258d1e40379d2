"""Invalid input is refused at the boundary with a message naming the parameter; mechanisms are immutable values."""

import dataclasses
from fractions import Fraction

import numpy as np
import pytest

from dpledger.mechanisms import (
    Composed,
    CustomRDPMechanism,
    DPLedgerError,
    GaussianMechanism,
    LaplaceMechanism,
    Mechanism,
    MissingCapabilityError,
    NumericalError,
    PoissonSubsampled,
    PureDPMechanism,
    RandomizedResponse,
    SearchRangeError,
    SelfComposed,
    ZCDPMechanism,
)

G = GaussianMechanism(sigma=1.0)
NAN, INF = float("nan"), float("inf")

# (constructor, keyword arguments, exception, pattern the message must match)
INVALID = [
    (GaussianMechanism, dict(sigma=NAN), ValueError, r"`sigma` of GaussianMechanism must be a number; got nan"),
    (GaussianMechanism, dict(sigma=INF), ValueError, r"`sigma` of GaussianMechanism must be finite"),
    (GaussianMechanism, dict(sigma=0.0), ValueError, r"`sigma` of GaussianMechanism must be positive; got 0.0"),
    (GaussianMechanism, dict(sigma=-1.0), ValueError, r"`sigma`.*positive; got -1.0"),
    (GaussianMechanism, dict(sigma="1.0"), TypeError, r"`sigma`.*real number; got str"),
    (GaussianMechanism, dict(sigma=True), TypeError, r"`sigma`.*real number; got bool"),
    (GaussianMechanism, dict(sigma=np.bool_(True)), TypeError, r"`sigma`"),
    (GaussianMechanism, dict(sigma=1 + 1j), TypeError, r"`sigma`.*complex"),
    (GaussianMechanism, dict(sigma=None), TypeError, r"`sigma`.*NoneType"),
    (GaussianMechanism, dict(sigma=[1.0]), TypeError, r"`sigma`"),
    (GaussianMechanism, dict(sigma=1.0, sensitivity=0.0), ValueError, r"`sensitivity` of GaussianMechanism"),
    (GaussianMechanism, dict(sigma=1.0, sensitivity=NAN), ValueError, r"`sensitivity`.*nan"),
    (LaplaceMechanism, dict(scale=-2.0), ValueError, r"`scale` of LaplaceMechanism must be positive"),
    (LaplaceMechanism, dict(scale=INF), ValueError, r"`scale`.*finite"),
    (LaplaceMechanism, dict(scale=1.0, sensitivity=-1.0), ValueError, r"`sensitivity` of LaplaceMechanism"),
    (LaplaceMechanism, dict(scale=1.0, sensitivity=False), TypeError, r"`sensitivity`.*bool"),
    (RandomizedResponse, dict(p=1.5), ValueError, r"`p` of RandomizedResponse must be in \[0, 1\]; got 1.5"),
    (RandomizedResponse, dict(p=-1e-12), ValueError, r"`p`.*\[0, 1\]"),
    (RandomizedResponse, dict(p=NAN), ValueError, r"`p`.*nan"),
    (RandomizedResponse, dict(p=True), TypeError, r"`p`.*bool"),
    (PureDPMechanism, dict(epsilon=-0.1), ValueError, r"`epsilon` of PureDPMechanism must be non-negative"),
    (PureDPMechanism, dict(epsilon=INF), ValueError, r"`epsilon`.*finite"),
    (PureDPMechanism, dict(epsilon=NAN), ValueError, r"`epsilon`.*nan"),
    (ZCDPMechanism, dict(rho=-1.0), ValueError, r"`rho` of ZCDPMechanism must be non-negative"),
    (ZCDPMechanism, dict(rho="0.1"), TypeError, r"`rho`"),
    (CustomRDPMechanism, dict(rdp_function=0.5), TypeError, r"`rdp_function` of CustomRDPMechanism must be callable"),
    (CustomRDPMechanism, dict(rdp_function=abs, name=3), TypeError, r"`name` of CustomRDPMechanism must be a str"),
    (PoissonSubsampled, dict(mechanism=G, sampling_probability=1.5), ValueError,
     r"`sampling_probability` of PoissonSubsampled must be in \[0, 1\]; got 1.5\."),
    (PoissonSubsampled, dict(mechanism=G, sampling_probability=-0.01), ValueError, r"`sampling_probability`"),
    (PoissonSubsampled, dict(mechanism=G, sampling_probability=NAN), ValueError, r"`sampling_probability`.*nan"),
    (PoissonSubsampled, dict(mechanism=G, sampling_probability=INF), ValueError, r"`sampling_probability`"),
    (PoissonSubsampled, dict(mechanism=G, sampling_probability=True), TypeError, r"`sampling_probability`.*bool"),
    (PoissonSubsampled, dict(mechanism=G, sampling_probability="0.1"), TypeError, r"`sampling_probability`"),
    (PoissonSubsampled, dict(mechanism="gaussian", sampling_probability=0.1), TypeError,
     r"`mechanism` of PoissonSubsampled must be a Mechanism; got str"),
    (SelfComposed, dict(mechanism=G, count=0), ValueError, r"`count` of SelfComposed must be at least 1; got 0"),
    (SelfComposed, dict(mechanism=G, count=-3), ValueError, r"`count`.*at least 1"),
    (SelfComposed, dict(mechanism=G, count=2.0), TypeError, r"`count` of SelfComposed must be an integer; got float"),
    (SelfComposed, dict(mechanism=G, count=True), TypeError, r"`count`.*bool"),
    (SelfComposed, dict(mechanism=None, count=2), TypeError, r"`mechanism` of SelfComposed"),
    (Composed, dict(mechanisms=[]), ValueError, r"`mechanisms` of Composed must not be empty"),
    (Composed, dict(mechanisms=[G, 1.0]), TypeError, r"`mechanisms` of Composed must hold Mechanism objects"),
    (Composed, dict(mechanisms=5), TypeError, r"`mechanisms` of Composed must be a sequence"),
]


@pytest.mark.parametrize("cls,kwargs,exc,match", INVALID,
                         ids=[f"{c.__name__}-{'-'.join(f'{k}={v!r}'[:24] for k, v in kw.items())}"
                              for c, kw, _, _ in INVALID])
def test_invalid_parameters_raise_with_a_message_naming_the_parameter(cls, kwargs, exc, match):
    with pytest.raises(exc, match=match):
        cls(**kwargs)


def test_numpy_and_fraction_numbers_are_accepted_and_stored_as_float():
    assert GaussianMechanism(sigma=np.float32(2.0)) == GaussianMechanism(sigma=2.0)
    assert type(GaussianMechanism(sigma=np.int64(3)).sigma) is float
    assert RandomizedResponse(p=Fraction(3, 4)).p == 0.75
    assert SelfComposed(G, count=np.int64(3)).count == 3 and type(SelfComposed(G, count=np.int64(3)).count) is int


@pytest.mark.parametrize("orders,exc,match", [
    (1.0, ValueError, r"`orders` of \w+ must be > 1 \(or inf\); got 1.0"),
    (0.5, ValueError, r"`orders`.*> 1"),
    (-np.inf, ValueError, r"`orders`.*> 1"),
    ([2.0, 1.0 - 1e-16], ValueError, r"`orders`.*> 1"),
    (np.nan, ValueError, r"`orders` of \w+ must be numbers; got nan"),
    ([2.0, np.nan], ValueError, r"`orders`.*nan"),
    ("2", TypeError, r"`orders` of \w+ must be real numbers; got str"),
    (b"2", TypeError, r"`orders`.*bytes"),
    # Formerly np.asarray(..., float64) parsed a list of str: rdp(['2', '3']) silently returned rdp([2.0, 3.0]).
    (["2", "3"], TypeError, r"`orders` of \w+ must be real numbers; got"),
    (True, TypeError, r"`orders`.*bool"),
    ([True, False], TypeError, r"`orders` of \w+ must be real numbers; got booleans\."),
    (np.array(["2", "3"]), TypeError, r"`orders` of \w+ must be real numbers; got"),
    (np.array([True, False]), TypeError, r"`orders` of \w+ must be real numbers; got booleans\."),
    (2 + 1j, TypeError, r"`orders`"),
    (object(), TypeError, r"`orders`"),
    ({"order": 2.0}, TypeError, r"`orders`"),
], ids=["one", "half", "-inf", "just-below-one", "nan", "nan-in-list", "str", "bytes", "str-list", "bool",
        "bool-list", "str-array", "bool-array", "complex", "object", "dict"])
@pytest.mark.parametrize("mechanism", [G, LaplaceMechanism(scale=1.0), PoissonSubsampled(G, sampling_probability=0.1),
                                       Composed([G]), CustomRDPMechanism(lambda a: a)],
                         ids=["gaussian", "laplace", "subsampled", "composed", "custom"])
def test_invalid_orders_raise_with_a_message_naming_orders(mechanism, orders, exc, match):
    with pytest.raises(exc, match=match):
        mechanism.rdp(orders)


def test_none_as_orders_is_refused():
    # Doubtful: None becomes nan inside numpy, so this is a ValueError "must be numbers; got nan", not a TypeError.
    with pytest.raises((TypeError, ValueError), match="`orders`"):
        G.rdp(None)


INSTANCES = [G, LaplaceMechanism(scale=2.0, sensitivity=0.5), RandomizedResponse(p=0.25), PureDPMechanism(epsilon=1.0),
             ZCDPMechanism(rho=0.5), CustomRDPMechanism(abs, name="abs"),
             PoissonSubsampled(G, sampling_probability=0.1),
             SelfComposed(G, count=3), Composed([G, LaplaceMechanism(scale=1.0)])]


@pytest.mark.parametrize("m", INSTANCES, ids=lambda m: type(m).__name__)
def test_mechanisms_are_frozen(m):
    field = dataclasses.fields(m)[0].name
    with pytest.raises(dataclasses.FrozenInstanceError):
        setattr(m, field, getattr(m, field))
    with pytest.raises((dataclasses.FrozenInstanceError, AttributeError, TypeError)):
        m.extra = 1
    with pytest.raises(dataclasses.FrozenInstanceError):
        delattr(m, field)


@pytest.mark.parametrize("m", INSTANCES, ids=lambda m: type(m).__name__)
def test_mechanisms_are_hashable_and_equal_by_value(m):
    twin = dataclasses.replace(m)
    assert twin == m and hash(twin) == hash(m) and twin is not m
    assert len({m, twin}) == 1
    assert not hasattr(m, "__dict__")  # slotted


def test_equality_compares_every_parameter_and_the_type():
    assert GaussianMechanism(sigma=1) == GaussianMechanism(sigma=1.0)
    assert GaussianMechanism(sigma=1.0) != GaussianMechanism(sigma=1.0, sensitivity=2.0)
    assert PoissonSubsampled(G, sampling_probability=0.1) != PoissonSubsampled(G, sampling_probability=0.2)
    assert PoissonSubsampled(G, sampling_probability=0.1) != PoissonSubsampled(GaussianMechanism(sigma=2.0),
                                                                              sampling_probability=0.1)
    assert SelfComposed(G, count=2) != Composed([G, G])
    assert PureDPMechanism(epsilon=1.0) != RandomizedResponse(p=1.0)


def test_error_hierarchy():
    assert issubclass(MissingCapabilityError, DPLedgerError) and issubclass(NumericalError, DPLedgerError)
    assert issubclass(SearchRangeError, ValueError)
    assert all(issubclass(type(m), Mechanism) for m in INSTANCES)
    with pytest.raises(MissingCapabilityError, match="GaussianMechanism"):
        G.pure_epsilon()
