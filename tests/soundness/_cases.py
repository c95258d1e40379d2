"""Shared pieces of the soundness harness: the example budget and the per-family case counter."""

import collections

from hypothesis import HealthCheck, settings

#: Set by ``--soundness-long`` (tests/soundness/conftest.py).
LONG = False
#: Cases checked per family in this session.
COUNTS = collections.Counter()


def budget(n):
    """Hypothesis settings with ``n`` examples (25 n in the long mode), no deadline."""
    return settings(max_examples=n * (25 if LONG else 1), deadline=None,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])


def record(family):
    COUNTS[family] += 1
