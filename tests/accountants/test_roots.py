"""Brent's method of accountants._roots against known roots (the Fourier searches use it, not scipy.optimize)."""

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from dpledger.accountants._roots import brentq


@given(st.floats(-50, 50), st.floats(0.01, 20), st.floats(0.01, 20), st.floats(0.05, 10))
def test_brent_finds_the_root_of_monotone_and_flat_functions(root, left, right, slope):
    for f in (lambda x: math.tanh(slope * (x - root)),  # flat far from the root
              lambda x: (x - root) ** 3 * slope,  # flat at the root
              lambda x: math.expm1(slope * (x - root))):
        x = brentq(f, root - left, root + right, xtol=1e-13, rtol=1e-12)
        assert abs(x - root) <= 1e-9 * (1 + abs(root))


def test_brent_returns_an_endpoint_root_and_refuses_a_bracket_without_a_sign_change():
    assert brentq(lambda x: x - 1.0, 1.0, 2.0) == 1.0 and brentq(lambda x: x - 2.0, 1.0, 2.0) == 2.0
    with pytest.raises(ValueError, match="different signs"):
        brentq(lambda x: x * x + 1.0, -1.0, 1.0)
