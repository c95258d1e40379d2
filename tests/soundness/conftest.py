"""The soundness harness's budget and its case counts (issue 12 item 5).

``--soundness-long`` (declared and read in tests/conftest.py) multiplies every example budget by 25; with the
environment variable ``DPLEDGER_SOUNDNESS_COUNTS=path.json`` the cases checked per family are written there at the end
of the session (``benchmarks/bench_soundness.py`` uses it for benchmarks/RESULTS.md).
"""

import json
import os

import pytest

from tests.soundness import _cases


@pytest.fixture(scope="session", autouse=True)
def _write_counts():
    yield
    path = os.environ.get("DPLEDGER_SOUNDNESS_COUNTS")
    if path:
        with open(path, "w") as f:
            json.dump(dict(sorted(_cases.COUNTS.items())), f, indent=1)
