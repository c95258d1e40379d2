"""Test configuration: one hypothesis profile, deterministic, no deadlines (timings belong in benchmarks/)."""

import os

import pytest
from hypothesis import settings

settings.register_profile("ci", deadline=None, max_examples=40, derandomize=True, print_blob=True)
settings.register_profile("dev", deadline=None, max_examples=200)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))


def pytest_addoption(parser):
    parser.addoption("--soundness-long", action="store_true", default=False,
                     help="run the soundness harness (tests/soundness) with 25 times its example budget, and the "
                          "mpmath oracles marked long_oracle")


def pytest_configure(config):
    config.addinivalue_line("markers", "long_oracle: an mpmath oracle of half a minute or more; runs with "
                                       "--soundness-long")
    from tests.soundness import _cases  # the budget is read when test modules are imported, in any directory
    _cases.LONG = bool(config.getoption("--soundness-long", default=False))


def pytest_collection_modifyitems(config, items):
    if config.getoption("--soundness-long", default=False):
        return
    skip = pytest.mark.skip(reason="a long mpmath oracle: runs with --soundness-long")
    for item in items:
        if "long_oracle" in item.keywords:
            item.add_marker(skip)
