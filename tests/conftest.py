"""Test configuration: one hypothesis profile, deterministic, no deadlines (timings belong in benchmarks/)."""

import os

from hypothesis import settings

settings.register_profile("ci", deadline=None, max_examples=40, derandomize=True, print_blob=True)
settings.register_profile("dev", deadline=None, max_examples=200)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))


def pytest_addoption(parser):
    parser.addoption("--soundness-long", action="store_true", default=False,
                     help="run the soundness harness (tests/soundness) with 25 times its example budget")
